"""Tests for scopetool._feedback: model-facing rejection messages that never echo input values."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Annotated, Any, Literal
from uuid import UUID

import jiter
import jsonschema_rs
import pytest
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from pydantic_core import PydanticCustomError, PydanticKnownError, SchemaValidator
from pydantic_core import core_schema as cs

from scopetool._feedback import (
    MAX_DESCRIBED,
    MAX_PROBLEMS,
    describe_facts,
    describe_schema_errors,
    format_rejection,
    pydantic_facts,
)


def describe_pydantic_error(error: ValidationError, document: Any, schema: dict[str, Any]) -> list[str]:
    """The lines a rejection of `error` reads, as `Contract` composes them: the facts, then their description."""
    details = error.errors(include_url=False, include_context=True, include_input=False)
    return describe_facts(pydantic_facts(details, document)[0], schema)[0]


SECRET = "sk-SECRET-9f8e7d"
STRICT = ConfigDict(extra="forbid", strict=True)


def pydantic_problems(model: Any, raw: bytes) -> list[str]:
    """Validate `raw` with a TypeAdapter and describe the resulting ValidationError."""
    adapter = TypeAdapter(model)
    with pytest.raises(ValidationError) as caught:
        adapter.validate_json(raw)
    return describe_pydantic_error(caught.value, _parsed(raw), adapter.json_schema())


def core_problems(validator: SchemaValidator, raw: bytes, schema: dict[str, Any]) -> list[str]:
    """Validate `raw` with a pydantic-core SchemaValidator and describe the error."""
    with pytest.raises(ValidationError) as caught:
        validator.validate_json(raw)
    return describe_pydantic_error(caught.value, _parsed(raw), schema)


def _parsed(raw: bytes) -> Any:
    """The document as admission hands it to the describer: parsed, or None when it does not parse."""
    try:
        return jiter.from_json(raw)
    except ValueError:
        return None


def schema_problems(schema: dict[str, Any], instance: Any) -> list[str]:
    """Validate `instance` with a jsonschema-rs validator (formats asserted) and describe the errors."""
    validator = jsonschema_rs.validator_for(schema, validate_formats=True)
    return describe_schema_errors(validator.iter_errors(instance), schema)


def assert_no_secret(lines: list[str]) -> None:
    """Assert that no problem line carries the secret or a recognisable piece of it."""
    assert lines
    for line in lines:
        assert SECRET not in line
        assert "SECRET" not in line


# --------------------------------------------------------------------------------------------------
# format_rejection


def test_format_rejection_single_problem() -> None:
    """One problem: singular header naming the tool, then one bullet."""
    assert format_rejection("add", ["$.a: missing required field"]) == (
        "invalid arguments for tool 'add' (1 problem):\n- $.a: missing required field"
    )


def test_format_rejection_several_problems() -> None:
    """Several problems: plural header and one bullet each, in order."""
    text = format_rejection("search", ["first", "second", "third"])
    assert text == "invalid arguments for tool 'search' (3 problems):\n- first\n- second\n- third"


def test_format_rejection_deduplicates() -> None:
    """Repeated problems are shown once and counted once, keeping first-seen order."""
    text = format_rejection("t", ["b", "a", "b", "a", "c"])
    assert text == "invalid arguments for tool 't' (3 problems):\n- b\n- a\n- c"


def test_format_rejection_at_most_eight() -> None:
    """At most MAX_PROBLEMS bullets are shown, then '... and N more'."""
    problems = [f"problem {i}" for i in range(11)]
    lines = format_rejection("t", problems).split("\n")
    assert MAX_PROBLEMS == 8
    assert lines[0] == "invalid arguments for tool 't' (11 problems):"
    assert lines[1:9] == [f"- problem {i}" for i in range(8)]
    assert lines[9] == "- ... and 3 more"
    assert len(lines) == 10


def test_format_rejection_exactly_eight_has_no_more_line() -> None:
    """With exactly eight problems there is no '... and N more' line."""
    text = format_rejection("t", [f"p{i}" for i in range(8)])
    assert "more" not in text
    assert text.count("\n- ") == 8


def test_format_rejection_dedupe_before_limit() -> None:
    """Duplicates do not use up the eight slots or inflate the remainder."""
    problems = [f"p{i}" for i in range(9)] * 3
    text = format_rejection("t", problems)
    assert "(9 problems)" in text
    assert text.endswith("- ... and 1 more")


def test_format_rejection_clips_long_lines() -> None:
    """A problem longer than 240 characters is clipped to 240 ending with an ellipsis."""
    text = format_rejection("t", ["x" * 500, "y" * 240])
    bullets = text.split("\n")[1:]
    assert bullets[0] == "- " + "x" * 239 + "\u2026"
    assert bullets[1] == "- " + "y" * 240


def test_format_rejection_quotes_tool_name() -> None:
    """The tool name appears in quotes (repr)."""
    assert format_rejection("mcp__read-1", ["p"]).startswith("invalid arguments for tool 'mcp__read-1' (1 problem)")


# --------------------------------------------------------------------------------------------------
# describe_pydantic_error: paths and kinds


class Item(BaseModel):
    model_config = STRICT
    name: str
    qty: int


class Order(BaseModel):
    model_config = STRICT
    items: list[Item]
    note: str = ""


def test_pydantic_nested_path_and_got_string() -> None:
    """A type error deep in a list of objects names $.items[2].qty and the JSON kind that was sent."""
    raw = b'{"items":[{"name":"a","qty":1},{"name":"b","qty":2},{"name":"c","qty":"%s"}]}' % SECRET.encode()
    assert pydantic_problems(Order, raw) == ["$.items[2].qty: Input should be a valid integer (got a string)"]


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (b"1.5", "a number with a fraction or exponent"),
        (b"1e0", "a number with a fraction or exponent"),
        (b"true", "a boolean"),
        (b"null", "null"),
        (b"[1]", "an array"),
        (b'{"n":1}', "an object"),
    ],
)
def test_pydantic_got_kind(value: bytes, kind: str) -> None:
    """Type errors say which JSON kind arrived instead."""
    raw = b'{"items":[{"name":"a","qty":' + value + b"}]}"
    assert pydantic_problems(Order, raw) == [f"$.items[0].qty: Input should be a valid integer (got {kind})"]


def test_pydantic_list_type_got_object() -> None:
    """An object where an array was expected is reported at the array's path."""
    assert pydantic_problems(Order, b'{"items":{}}') == ["$.items: Input should be a valid array (got an object)"]


def test_pydantic_missing_fields() -> None:
    """Missing fields name the path of the absent member, nested or at the top."""
    assert pydantic_problems(Order, b'{"items":[{"name":"a"}]}') == ["$.items[0].qty: missing required field"]
    assert pydantic_problems(Order, b"{}") == ["$.items: missing required field"]


def test_pydantic_unknown_field_suggests_from_schema() -> None:
    """An unknown member gets the closest schema member name as a suggestion."""
    assert pydantic_problems(Order, b'{"items":[],"notes":"x"}') == ["$.notes: unknown field; did you mean 'note'?"]


def test_pydantic_unknown_nested_field_suggests_through_ref() -> None:
    """Suggestions for nested objects are found through $defs/$ref in the schema."""
    raw = b'{"items":[{"name":"a","qty":1,"qtty":2}]}'
    assert pydantic_problems(Order, raw) == ["$.items[0].qtty: unknown field; did you mean 'qty'?"]


def test_pydantic_unknown_field_without_close_match_lists_names() -> None:
    """With no close match and few members, the allowed names are listed."""
    lines = pydantic_problems(Order, b'{"items":[],"zzzzzz":1}')
    assert lines == ["$.zzzzzz: unknown field; expected one of 'items', 'note'"]


def test_pydantic_unknown_field_many_members_no_list() -> None:
    """With more than twelve members and no close match, no list is dumped."""
    fields = {f"field_{i:02d}": (int, 0) for i in range(13)}
    from pydantic import create_model

    model = create_model("Wide", __config__=STRICT, **fields)  # type: ignore[call-overload]
    assert pydantic_problems(model, b'{"qqqqqq":1}') == ["$.qqqqqq: unknown field"]


def test_pydantic_non_identifier_key_rendered_quoted() -> None:
    """A member name that is not an identifier is rendered in bracket notation."""
    lines = pydantic_problems(Order, b'{"items":[],"bad key":1}')
    assert lines[0].startswith('$["bad key"]: unknown field')


def test_pydantic_long_key_clipped_in_path() -> None:
    """A very long member name is clipped in the rendered path."""
    key = "k" * 100
    lines = pydantic_problems(dict[str, int], b'{"%s":"x"}' % key.encode())
    assert len(lines) == 1
    assert key not in lines[0]
    assert lines[0].startswith('$["' + "k" * 47 + '\\u2026"]')


def test_pydantic_top_level_type() -> None:
    """A wrong top-level kind is reported at $."""
    assert pydantic_problems(Order, b"[]") == ["$: Input should be an object (got an array)"]


def test_pydantic_several_problems_in_order() -> None:
    """Each error becomes one line, in pydantic's order."""
    lines = pydantic_problems(Order, b'{"items":[{"name":1,"qty":"q"}],"extra":1}')
    assert lines == [
        "$.items[0].name: Input should be a valid string (got an integer)",
        "$.items[0].qty: Input should be a valid integer (got a string)",
        "$.extra: unknown field; expected one of 'items', 'note'",
    ]


def test_pydantic_with_core_schema_validator() -> None:
    """Errors from a bare pydantic-core SchemaValidator are described the same way."""
    validator = SchemaValidator(
        cs.typed_dict_schema(
            {
                "count": cs.typed_dict_field(cs.int_schema(strict=True)),
                "label": cs.typed_dict_field(cs.str_schema(strict=True), required=False),
            },
            extra_behavior="forbid",
        )
    )
    schema = {"type": "object", "properties": {"count": {"type": "integer"}, "label": {"type": "string"}}}
    assert core_problems(validator, b'{"count":"1","lable":"x"}', schema) == [
        "$.count: Input should be a valid integer (got a string)",
        "$.lable: unknown field; did you mean 'label'?",
    ]
    assert core_problems(validator, b'{"label":"x"}', schema) == ["$.count: missing required field"]


def test_pydantic_raw_not_json_falls_back_to_locations() -> None:
    """Without a parsed document, paths come straight from pydantic's locations, without 'got'."""
    adapter = TypeAdapter(Order)
    with pytest.raises(ValidationError) as caught:
        adapter.validate_json(b'{"items":[{"name":"a","qty":"x"}]}')
    assert describe_pydantic_error(caught.value, None, adapter.json_schema()) == [
        "$.items[0].qty: Input should be a valid integer"
    ]


# --------------------------------------------------------------------------------------------------
# describe_pydantic_error: union-choice labels


class Cat(BaseModel):
    model_config = STRICT
    kind: Literal["cat"]
    meow: int


class Dog(BaseModel):
    model_config = STRICT
    kind: Literal["dog"]
    bark: int


class Pet(BaseModel):
    model_config = STRICT
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


class Ids(BaseModel):
    model_config = STRICT
    v: int | list[int]


def test_pydantic_union_labels_dropped_for_scalar() -> None:
    """Union-choice labels such as 'int' and 'list[int]' are not path steps; the branches make one line."""
    lines = pydantic_problems(Ids, b'{"v":"x"}')
    assert lines == ["$.v: Input should be a valid integer or a valid array (got a string)"]


def test_pydantic_core_union_custom_labels_dropped() -> None:
    """Custom union labels from a core schema are not path steps either."""
    validator = SchemaValidator(
        cs.typed_dict_schema(
            {
                "v": cs.typed_dict_field(
                    cs.union_schema(
                        [(cs.int_schema(strict=True), "num"), (cs.list_schema(cs.int_schema(strict=True)), "nums")]
                    )
                )
            },
            extra_behavior="forbid",
        )
    )
    lines = core_problems(validator, b'{"v":true}', {"type": "object", "properties": {"v": {}}})
    assert lines == ["$.v: Input should be a valid integer or a valid array (got a boolean)"]


def test_pydantic_core_union_labels_dropped_for_object_value() -> None:
    """Union labels are dropped even when the rejected value is an object."""
    validator = SchemaValidator(
        cs.typed_dict_schema(
            {
                "v": cs.typed_dict_field(
                    cs.union_schema(
                        [(cs.int_schema(strict=True), "num"), (cs.list_schema(cs.int_schema(strict=True)), "nums")]
                    )
                )
            },
            extra_behavior="forbid",
        )
    )
    lines = core_problems(validator, b'{"v":{"a":1}}', {"type": "object", "properties": {"v": {}}})
    assert lines == ["$.v: Input should be a valid integer or a valid array (got an object)"]


def test_pydantic_union_label_then_array_index() -> None:
    """An error inside the list choice of a union names the element: $.v[1]."""
    lines = pydantic_problems(Ids, b'{"v":[1,"%s"]}' % SECRET.encode())
    assert any(line.startswith("$.v[1]: ") for line in lines), lines


def test_pydantic_tagged_union_inner_error_path() -> None:
    """An error inside a tagged-union choice names the member's real path ($.pet.meow)."""
    assert pydantic_problems(Pet, b'{"pet":{"kind":"cat","meow":"x"}}') == [
        "$.pet.meow: Input should be a valid integer (got a string)"
    ]


def test_pydantic_tagged_union_missing_field_path() -> None:
    """A missing field inside a tagged-union choice is named by its real path."""
    assert pydantic_problems(Pet, b'{"pet":{"kind":"cat"}}') == ["$.pet.meow: missing required field"]


def test_pydantic_tagged_union_unknown_field_suggestion() -> None:
    """An unknown member inside a tagged-union choice is named and gets a suggestion."""
    assert pydantic_problems(Pet, b'{"pet":{"kind":"dog","bark":1,"barkk":2}}') == [
        "$.pet.barkk: unknown field; did you mean 'bark'?"
    ]


# --------------------------------------------------------------------------------------------------
# describe_pydantic_error: never echo values


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Sensitive(BaseModel):
    model_config = STRICT
    code: Annotated[str, Field(pattern=r"^[0-9]+$")] = "0"
    mode: Literal["fast", "slow"] = "fast"
    color: Color = Color.RED
    short: Annotated[str, Field(max_length=3)] = ""
    ident: UUID | None = None
    when: dt.date | None = None
    count: int = 0
    flag: bool = False


@pytest.mark.parametrize("member", ["code", "mode", "color", "short", "ident", "when", "count", "flag"])
def test_pydantic_never_echoes_secret_values(member: str) -> None:
    """Pattern, literal, enum, length, UUID, date and type errors do not repeat the rejected string."""
    raw = b'{"%s":"%s"}' % (member.encode(), SECRET.encode())
    lines = pydantic_problems(Sensitive, raw)
    assert len(lines) == 1
    assert lines[0].startswith(f"$.{member}: ")
    assert_no_secret(lines)


def test_pydantic_union_tag_error_never_echoes_tag() -> None:
    """An invalid discriminator tag gets a fixed message that does not repeat the tag."""
    lines = pydantic_problems(Pet, b'{"pet":{"kind":"%s"}}' % SECRET.encode())
    assert lines == ["$.pet: this tag is not one of the allowed values"]


def test_pydantic_all_problems_value_free_at_once() -> None:
    """A document full of secrets yields only value-free lines."""
    raw = (
        b'{"code":"%(s)s","mode":"%(s)s","color":"%(s)s","short":"%(s)s","ident":"%(s)s",'
        b'"when":"%(s)s","count":"%(s)s","flag":"%(s)s"}' % {b"s": SECRET.encode()}
    )
    lines = pydantic_problems(Sensitive, raw)
    assert len(lines) == 8
    assert_no_secret(lines)


class Token(BaseModel):
    model_config = STRICT
    token: str
    pin: int = 0

    @field_validator("token")
    @classmethod
    def revoked(cls, value: str) -> str:
        """Reject every token, carelessly quoting it."""
        raise ValueError(f"token {value} is revoked")

    @field_validator("pin")
    @classmethod
    def wrong(cls, value: int) -> int:
        """Reject every pin, carelessly quoting it."""
        raise ValueError(f"pin {value} is wrong")


def test_pydantic_validator_message_quoting_string_input_is_replaced() -> None:
    """A validator message that quotes the string input is replaced by a neutral text."""
    lines = pydantic_problems(Token, b'{"token":"%s"}' % SECRET.encode())
    assert lines == ["$.token: the value is not valid here"]


def test_pydantic_validator_message_quoting_number_input_is_replaced() -> None:
    """A validator message that quotes a numeric input (a PIN) does not reach the model."""
    lines = pydantic_problems(Token, b'{"token":"x","pin":987654321}')
    assert not any("987654321" in line for line in lines), lines


def test_pydantic_validator_message_is_never_shown() -> None:
    """A ValueError's text is not pydantic's own description: even one that quotes nothing is replaced."""

    class Even(BaseModel):
        model_config = STRICT
        n: int

        @field_validator("n")
        @classmethod
        def even(cls, value: int) -> int:
            """Require an even number."""
            if value % 2:
                raise ValueError("n must be even")
            return value

    assert pydantic_problems(Even, b'{"n":3}') == ["$.n: the value is not valid here"]


# --------------------------------------------------------------------------------------------------
# describe_schema_errors (jsonschema-rs)


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 5},
        "count": {"type": "integer", "minimum": 1},
        "color": {"enum": ["red", "blue"]},
        "fixed": {"const": "yes"},
        "code": {"type": "string", "pattern": "^[0-9]+$"},
        "when": {"type": "string", "format": "date-time"},
        "pick": {"oneOf": [{"type": "integer"}, {"type": "string", "minLength": 100}]},
        "nested": {"$ref": "#/$defs/Inner"},
        "list": {"type": "array", "items": {"$ref": "#/$defs/Inner"}},
    },
    "required": ["name"],
    "additionalProperties": False,
    "$defs": {
        "Inner": {
            "type": "object",
            "properties": {"alpha": {"type": "integer"}, "beta": {"type": "string"}},
            "additionalProperties": False,
        }
    },
}


def test_schema_required() -> None:
    """A missing required member is named by its path."""
    assert schema_problems(SCHEMA, {}) == ["$.name: missing required field"]


def test_schema_additional_properties_with_suggestion() -> None:
    """An unknown member gets a 'did you mean' from the schema's properties."""
    assert schema_problems(SCHEMA, {"name": "a", "nmae": SECRET}) == ["$.nmae: unknown field; did you mean 'name'?"]


def test_schema_additional_properties_nested_through_ref() -> None:
    """Suggestions for nested and array-item objects resolve $ref."""
    lines = schema_problems(SCHEMA, {"name": "a", "nested": {"alpah": 1}, "list": [{"alpha": 1}, {"bta": SECRET}]})
    assert lines == [
        "$.nested.alpah: unknown field; did you mean 'alpha'?",
        "$.list[1].bta: unknown field; did you mean 'beta'?",
    ]


def test_schema_additional_properties_lists_names_without_close_match() -> None:
    """With no close match the few allowed names are listed."""
    assert schema_problems(SCHEMA, {"name": "a", "nested": {"zzzz": 1}}) == [
        "$.nested.zzzz: unknown field; expected one of 'alpha', 'beta'"
    ]


def test_schema_unevaluated_properties() -> None:
    """unevaluatedProperties is treated like additionalProperties."""
    schema = {"type": "object", "properties": {"alpha": {"type": "integer"}}, "unevaluatedProperties": False}
    assert schema_problems(schema, {"alpah": 1}) == ["$.alpah: unknown field; did you mean 'alpha'?"]


def test_schema_type() -> None:
    """Type errors name the expected types only."""
    assert schema_problems(SCHEMA, {"name": "a", "count": SECRET}) == ["$.count: expected integer (got a string)"]
    assert schema_problems(SCHEMA, []) == ["$: expected object (got an array)"]
    assert schema_problems({"type": ["string", "null"]}, 5) == ["$: expected null or string (got an integer)"]


def test_schema_type_with_array_index_path() -> None:
    """Paths through arrays use [index]."""
    assert schema_problems(SCHEMA, {"name": "a", "list": [{}, {"alpha": SECRET}]}) == [
        "$.list[1].alpha: expected integer (got a string)"
    ]


def test_schema_enum_and_const() -> None:
    """enum and const list the allowed values from the schema, never the instance."""
    assert schema_problems(SCHEMA, {"name": "a", "color": SECRET}) == ['$.color: expected one of ["red", "blue"]']
    assert schema_problems(SCHEMA, {"name": "a", "fixed": SECRET}) == ['$.fixed: expected one of ["yes"]']


def test_schema_limits() -> None:
    """Limit keywords name the keyword and the schema's limit."""
    assert schema_problems(SCHEMA, {"name": SECRET}) == ["$.name: must satisfy maxLength 5"]
    assert schema_problems(SCHEMA, {"name": "a", "count": 0}) == ["$.count: must satisfy minimum 1"]


def test_schema_pattern_and_format() -> None:
    """pattern and format name the schema's pattern or format."""
    assert schema_problems(SCHEMA, {"name": "a", "code": SECRET}) == ['$.code: must match pattern "^[0-9]+$"']
    assert schema_problems(SCHEMA, {"name": "a", "when": SECRET}) == ['$.when: must match format "date-time"']


def test_schema_one_of() -> None:
    """A oneOf that no branch satisfies reports its clearest branch problem, without the instance."""
    assert schema_problems(SCHEMA, {"name": "a", "pick": SECRET}) == ["$.pick: must satisfy minLength 100"]
    assert schema_problems(SCHEMA, {"name": "a", "pick": [1]}) == ["$.pick: expected integer or string (got an array)"]


def test_schema_one_of_matching_twice_is_named() -> None:
    """A oneOf that two branches satisfy has no branch problem to show: the rule itself is named."""
    schema = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert schema_problems(schema, 1) == ["$: does not satisfy the schema's 'oneOf' rule"]


def test_schema_non_identifier_member_path() -> None:
    """A member name that is not an identifier is bracket-quoted."""
    assert schema_problems(SCHEMA, {"name": "a", "a b": 1})[0].startswith('$["a b"]: unknown field')


def test_schema_never_echoes_instance_values() -> None:
    """A document full of secrets produces one value-free line per problem."""
    instance = {
        "name": SECRET,
        "count": SECRET,
        "color": SECRET,
        "fixed": SECRET,
        "code": SECRET,
        "when": SECRET,
        "pick": SECRET,
        "nested": {"alpha": SECRET},
        "list": [{"beta": 1}],
    }
    lines = schema_problems(SCHEMA, instance)
    assert len(lines) == 9
    assert_no_secret(lines)


def test_schema_no_errors_no_lines() -> None:
    """A valid instance gives no problems."""
    assert schema_problems(SCHEMA, {"name": "ok", "count": 2, "when": "2024-01-02T03:04:05Z"}) == []


# --------------------------------------------------------------------------------------------------
# One problem per path, repeated problems over items on one line, null for an optional field


class Options(BaseModel):
    model_config = STRICT
    x: int
    mod: float = 1.0
    mode: Literal["fast", "slow"] | None = None
    v: int | str = 0
    m: int | list[int] = 0
    tags: list[str] = []


OPTIONS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "x": {"type": "number"},
        "mod": {"type": "number"},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "v": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "rows": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    },
    "required": ["x"],
    "additionalProperties": False,
}


def test_null_for_an_optional_field_says_it_may_be_left_out() -> None:
    """null sent for an optional, non-nullable member says it got null and that leaving it out is allowed."""
    hint = "(got null; leaving the field out is allowed)"
    assert pydantic_problems(Options, b'{"x":1,"mod":null}') == [f"$.mod: Input should be a valid number {hint}"]
    assert schema_problems(OPTIONS, {"x": 1, "mod": None}) == [f"$.mod: expected number {hint}"]


def test_null_for_a_required_field_only_says_it_got_null() -> None:
    """A required member cannot be left out, so null there is reported without the hint."""
    assert pydantic_problems(Options, b'{"x":null}') == ["$.x: Input should be a valid integer (got null)"]
    assert pydantic_problems(Options, b'{"x":1,"tags":[null]}') == [
        "$.tags[0]: Input should be a valid string (got null)"
    ]
    assert schema_problems(OPTIONS, {"x": None}) == ["$.x: expected number (got null)"]


def test_a_union_of_types_gives_one_line_naming_every_branch() -> None:
    """A value no branch of a type union accepts is one line at its path, naming each expected type."""
    assert pydantic_problems(Options, b'{"x":1,"v":[1]}') == [
        "$.v: Input should be a valid integer or a valid string (got an array)"
    ]
    assert schema_problems(OPTIONS, {"x": 1, "v": [1]}) == ["$.v: expected integer or string (got an array)"]


def test_an_enum_beside_a_type_or_null_gives_only_the_allowed_values() -> None:
    """A bad enum value is one line: the allowed values, not a second line for the type or for null."""
    assert pydantic_problems(Options, b'{"x":1,"mode":"medium"}') == ["$.mode: Input should be 'fast' or 'slow'"]
    assert schema_problems(OPTIONS, {"x": 1, "mode": 5}) == ['$.mode: expected one of ["fast", "slow"]']


def test_a_union_branch_that_went_deeper_says_what_is_wrong_inside() -> None:
    """For int | list[int], a list with a bad item reports the item, not that the list is not an integer."""
    assert pydantic_problems(Options, b'{"x":1,"m":[1,"a"]}') == [
        "$.m[1]: Input should be a valid integer (got a string)"
    ]


class Feline(BaseModel):
    model_config = STRICT
    kind: Literal["cat"]
    lives: int


class Canine(BaseModel):
    model_config = STRICT
    kind: Literal["dog"]
    good: bool


class Animal(BaseModel):
    model_config = STRICT
    pet: Feline | Canine


def test_a_union_of_models_reports_the_closest_branch_only() -> None:
    """Of a smart union of models, the branch with the fewest problems is reported, not the other's noise."""
    lines = pydantic_problems(Animal, b'{"pet":{"kind":"cat","lives":"%s"}}' % SECRET.encode())
    assert lines == ["$.pet.lives: Input should be a valid integer (got a string)"]


def test_repeated_item_problems_collapse_into_one_line_with_the_indices() -> None:
    """The same problem in several array items is one line listing the indices; others stay apart."""
    assert pydantic_problems(Options, b'{"x":1,"tags":[1,2,"a",3,true]}') == [
        "$.tags[0, 1, 3]: Input should be a valid string (got an integer)",
        "$.tags[4]: Input should be a valid string (got a boolean)",
    ]
    assert schema_problems(OPTIONS, {"x": 1, "rows": [{"n": "a"}, {"n": 1}, {"n": "b"}]}) == [
        "$.rows[0, 2].n: expected integer (got a string)"
    ]


def test_many_repeated_item_problems_name_the_first_indices_and_the_count() -> None:
    """A problem repeated over many items lists the first indices and how many items have it."""
    lines = schema_problems(OPTIONS, {"x": 1, "tags": list(range(40))})
    assert lines == ["$.tags[0, 1, 2, 3, 4, 5, … (40 items)]: expected string (got an integer)"]


# --------------------------------------------------------------------------------------------------
# Only pydantic's own descriptions reach the model


def test_a_value_error_in_another_case_or_spacing_is_not_shown() -> None:
    """A validator's text that echoes the input altered (upper case, spaced out) never reaches the model."""

    class Key(BaseModel):
        model_config = STRICT
        key: str

        @field_validator("key")
        @classmethod
        def refuse(cls, value: str) -> str:
            """Quote the input, disguised."""
            raise ValueError(f"{value.upper()} / {' '.join(value)} / {value[::-1]}")

    lines = pydantic_problems(Key, b'{"key":"%s"}' % SECRET.encode())
    assert lines == ["$.key: the value is not valid here"]
    assert not any(SECRET.upper() in line or "S E C" in line for line in lines)


def test_a_custom_error_template_filled_from_the_input_is_not_shown() -> None:
    """PydanticCustomError text, its own type or a known type's name, is a validator's: never shown."""

    def custom(value: str) -> str:
        raise PydanticCustomError("bad_key", "key {key} is revoked", {"key": value})

    def disguised(value: str) -> str:
        raise PydanticCustomError("int_type", "Input should be {key}", {"key": value})

    def unfilled(value: str) -> str:
        raise PydanticCustomError("literal_error", f"Input should be {value}")

    def bare(value: str) -> str:
        raise PydanticCustomError("greater_than", f"Input should be greater than {value}")

    for rule in (custom, disguised, unfilled, bare):
        adapter: Any = Annotated[str, AfterValidator(rule)]
        lines = pydantic_problems(dict[str, adapter], b'{"k":"%s"}' % SECRET.encode())
        assert lines == ["$.k: the value is not valid here"]


def test_a_known_error_with_input_in_its_context_gets_a_fixed_text() -> None:
    """A known error whose context carries input-derived text (a parser's remark) gets a fixed text."""

    def known(value: str) -> str:
        raise PydanticKnownError("uuid_parsing", {"error": value})

    lines = pydantic_problems(dict[str, Annotated[str, AfterValidator(known)]], b'{"k":"%s"}' % SECRET.encode())
    assert lines == ["$.k: expected a UUID"]


def test_scopetools_own_custom_errors_keep_their_words() -> None:
    """The schema-filled custom errors scopetool's exact schema raises (unique items) are shown as they are."""
    from scopetool import InputDecoder

    decoder: InputDecoder[Any] = InputDecoder(TypeAdapter(set[int]).core_schema)
    with pytest.raises(ValidationError) as caught:
        decoder(b"[1,1]")
    assert describe_pydantic_error(caught.value, [1, 1], {}) == ["$: Items should be unique"]


def test_pydantics_own_custom_errors_keep_their_words() -> None:
    """pydantic's own fixed custom errors (an IP address type) are its descriptions: they are shown."""
    from ipaddress import IPv4Address

    assert pydantic_problems(dict[str, IPv4Address], b'{"ip":"%s"}' % SECRET.encode()) == [
        "$.ip: Input is not a valid IPv4 address"
    ]


def test_at_most_max_described_details_are_read() -> None:
    """Past MAX_DESCRIBED details the rest are not read."""
    details = [{"type": "missing", "loc": (f"f{i}",), "msg": "Field required"} for i in range(MAX_DESCRIBED + 5)]
    facts, plain = pydantic_facts(details, {})
    assert plain and [fact[3] for fact in facts] == [(f"f{i}",) for i in range(MAX_DESCRIBED)]
