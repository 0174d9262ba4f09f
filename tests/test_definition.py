"""Tests for scopetool._definition: Definition and Effect."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from scopetool import Definition, Effect, InvalidDefinitionError, ScopetoolError
from scopetool._definition import NAME_PATTERN

OBJECT = {"type": "object"}
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}


def make(**overrides: Any) -> Definition:
    """Build a definition with sensible defaults."""
    kwargs: dict[str, Any] = {"name": "add", "input_schema": SCHEMA}
    kwargs.update(overrides)
    return Definition(**kwargs)


# --------------------------------------------------------------------------------------------------
# names


@pytest.mark.parametrize("name", ["read", "mcp__read-1", "1_lookup", "a" * 64, "A", "-", "_", "Z9-_z"])
def test_valid_names(name: str) -> None:
    """Names of 1-64 ASCII letters, digits, '_' and '-' are accepted and kept."""
    assert make(name=name).name == name


@pytest.mark.parametrize(
    "name",
    ["a" * 65, "bad name", ".bad", "", "a.b", "a/b", "read\n", "\nread", "caf\u00e9", "\u0661", "a:b", " read"],
)
def test_invalid_names(name: str) -> None:
    """Names outside ^[A-Za-z0-9_-]{1,64}$ are rejected, including non-ASCII digits and trailing newlines."""
    with pytest.raises(InvalidDefinitionError):
        make(name=name)


@pytest.mark.parametrize("name", [None, 1, b"read", ["read"]])
def test_non_str_name_rejected(name: object) -> None:
    """A name that is not a str is an InvalidDefinitionError, not a TypeError."""
    with pytest.raises(InvalidDefinitionError):
        make(name=name)


def test_name_pattern_constant() -> None:
    """NAME_PATTERN fully matches the documented examples and nothing longer than 64."""
    assert NAME_PATTERN.fullmatch("mcp__read-1")
    assert not NAME_PATTERN.fullmatch("a" * 65)


def test_invalid_definition_error_hierarchy() -> None:
    """InvalidDefinitionError is both a ScopetoolError and a ValueError."""
    with pytest.raises(ScopetoolError):
        make(name="bad name")
    with pytest.raises(ValueError):
        make(name="bad name")


# --------------------------------------------------------------------------------------------------
# input schema


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"properties": {}},
        {"type": ["object"]},
        {"type": "array"},
        {"type": "Object"},
        {"type": None},
        '{"properties":{}}',
        '{"type":["object"]}',
        '{"type":"array"}',
        "null",
        "[]",
        "true",
        "false",
        '"object"',
        True,
        False,
    ],
)
def test_input_schema_must_be_object_typed_object(schema: object) -> None:
    """The input schema must be a JSON object whose "type" member is exactly "object"."""
    with pytest.raises(InvalidDefinitionError):
        make(input_schema=schema)


@pytest.mark.parametrize(
    "schema",
    [
        "{",
        "",
        "   ",
        '{"type":"object"} {}',
        '{"type":"object"}x',
        '{"type":"object","type":"object"}',
        '{"type":"object","\\u0074ype":"object"}',
        '{"type":"object","properties":{"a":{},"a":{}}}',
        b'{"type":"object","d":"\xff"}',
        '{"type":"object","d":"\\ud800"}',
        '{"type":"object","m":NaN}',
        b'\xef\xbb\xbf{"type":"object"}',
    ],
)
def test_input_schema_text_must_be_one_rfc7493_document(schema: str | bytes) -> None:
    """Invalid JSON text, duplicate keys (even via escapes), bad UTF-8, lone surrogates and NaN are rejected."""
    with pytest.raises(InvalidDefinitionError):
        make(input_schema=schema)


@pytest.mark.parametrize("schema", [None, [], ["type", "object"], 5, 1.5, object()])
def test_input_schema_wrong_python_type(schema: object) -> None:
    """An input schema that is neither a dict nor JSON text is rejected."""
    with pytest.raises(InvalidDefinitionError):
        make(input_schema=schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "x": float("nan")},
        {"type": "object", "x": float("inf")},
        {"type": "object", "x": (1, 2)},
        {"type": "object", "x": {1, 2}},
        {"type": "object", "x": b"raw"},
        {"type": "object", "d": "\ud800"},
    ],
)
def test_input_schema_dict_must_hold_json_values(schema: dict[str, Any]) -> None:
    """A dict schema holding non-JSON values (NaN, tuple, set, bytes, lone surrogate) is rejected."""
    with pytest.raises(InvalidDefinitionError):
        make(input_schema=schema)


def test_input_schema_dict_with_non_str_key_rejected() -> None:
    """A dict schema with a non-str key is rejected with InvalidDefinitionError."""
    with pytest.raises(InvalidDefinitionError):
        make(input_schema={"type": "object", 1: "x"})


@pytest.mark.parametrize(
    "schema",
    [
        SCHEMA,
        '{"required":["a"],"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}',
        b'{ "type" : "object" , "properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]}',
        bytearray(b'{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]}'),
        memoryview(
            b'\n{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]}\n'
        ),
    ],
    ids=["dict", "str", "bytes", "bytearray", "memoryview"],
)
def test_input_schema_accepts_dict_str_bytes_with_same_canonical_bytes(schema: object) -> None:
    """dict, str and bytes forms of one schema give identical canonical bytes and equal definitions."""
    d = make(input_schema=schema)
    assert d.input_schema_json == (
        b'{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"],"type":"object"}'
    )
    assert d == make()


def test_docstring_example_canonical_bytes() -> None:
    """The class docstring example prints the canonical schema."""
    d = Definition(name="add", input_schema={"type": "object", "properties": {"a": {"type": "integer"}}})
    assert d.input_schema_json.decode() == '{"properties":{"a":{"type":"integer"}},"type":"object"}'


def test_input_schema_numbers_kept_verbatim_from_text() -> None:
    """Numbers in JSON-text schemas keep their spelling in the canonical bytes."""
    d = make(
        input_schema='{"type":"object","properties":{"n":{"maximum":1.50,"minimum":1e2,'
        '"multipleOf":123456789012345678901234567890}}}'
    )
    assert d.input_schema_json == (
        b'{"properties":{"n":{"maximum":1.50,"minimum":1e2,"multipleOf":123456789012345678901234567890}},'
        b'"type":"object"}'
    )


def test_input_schema_non_ascii_raw_and_utf16_sorted() -> None:
    """Canonical schema bytes keep non-ASCII raw and sort members by UTF-16 code units."""
    d = make(input_schema={"type": "object", "properties": {"\uffff": {}, "\U0001f600": {}, "<&>": {}}})
    assert d.input_schema_json == '{"properties":{"<&>":{},"\U0001f600":{},"\uffff":{}},"type":"object"}'.encode()


# --------------------------------------------------------------------------------------------------
# output schema, description, effect


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "integer"}, b'{"type":"integer"}'),
        ('{"type":"array","items":{}}', b'{"items":{},"type":"array"}'),
        (b'{"minimum":0.50}', b'{"minimum":0.50}'),
        (True, b"true"),
        (False, b"false"),
        ("true", b"true"),
    ],
)
def test_output_schema_accepts_object_or_boolean(schema: object, expected: bytes) -> None:
    """The output schema may be any object schema or a boolean schema, stored canonically."""
    d = make(output_schema=schema)
    assert d.output_schema_json == expected


@pytest.mark.parametrize("schema", ["[]", "1", '"x"', "null", "{", '{"a":1,"a":2}', 3, [], 1.5])
def test_output_schema_rejects_non_schemas(schema: object) -> None:
    """Output schemas that are not an object or boolean, or not valid JSON, are rejected."""
    with pytest.raises(InvalidDefinitionError):
        make(output_schema=schema)


def test_output_schema_absent_is_none() -> None:
    """Without an output schema both accessors return None."""
    d = make()
    assert d.output_schema is None
    assert d.output_schema_json is None


def test_output_schema_need_not_be_object_typed() -> None:
    """Unlike the input schema, the output schema has no "type":"object" rule."""
    assert make(output_schema={"type": "string"}).output_schema == {"type": "string"}


def test_description_default_and_non_str() -> None:
    """The description defaults to "" and must be a str."""
    assert make().description == ""
    assert make(description="Add numbers.").description == "Add numbers."
    with pytest.raises(InvalidDefinitionError):
        make(description=None)
    with pytest.raises(InvalidDefinitionError):
        make(description=b"bytes")


@pytest.mark.parametrize("effect", ["safe", "idempotent", "", 1, True])
def test_bad_effect_rejected(effect: object) -> None:
    """The effect must be an Effect member or None; its string value is not enough."""
    with pytest.raises(InvalidDefinitionError):
        make(effect=effect)


def test_effect_values_and_replayable() -> None:
    """Effect has exactly SAFE='safe' and IDEMPOTENT='idempotent', both replayable."""
    assert Effect.SAFE.value == "safe"
    assert Effect.IDEMPOTENT.value == "idempotent"
    assert {member.value for member in Effect} == {"safe", "idempotent"}
    assert Effect("safe") is Effect.SAFE
    assert Effect.SAFE == "safe"
    assert Effect.SAFE.replayable is True
    assert Effect.IDEMPOTENT.replayable is True


def test_effect_unknown_value() -> None:
    """An unknown effect string is not an Effect."""
    with pytest.raises(ValueError):
        Effect("unsafe")


@pytest.mark.parametrize("effect", [None, Effect.SAFE, Effect.IDEMPOTENT])
def test_effect_stored(effect: Effect | None) -> None:
    """The given effect (or None) is what the definition reports."""
    assert make(effect=effect).effect is effect


# --------------------------------------------------------------------------------------------------
# detachment


def test_constructor_detaches_from_caller_dict() -> None:
    """Mutating the dict passed in does not change the definition."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    d = make(input_schema=schema)
    before = d.input_schema_json
    schema["properties"]["a"]["type"] = "string"
    schema["type"] = "array"
    assert d.input_schema_json == before
    assert d.input_schema["properties"]["a"]["type"] == "integer"


def test_constructor_detaches_from_bytearray() -> None:
    """Mutating a bytearray passed in does not change the definition."""
    raw = bytearray(b'{"type":"object"}')
    d = make(input_schema=raw)
    raw[9:15] = b"array "
    assert d.input_schema_json == b'{"type":"object"}'


def test_input_schema_accessor_returns_fresh_copies() -> None:
    """Each input_schema access is a new dict; mutating it never changes the definition."""
    d = make()
    first = d.input_schema
    first["type"] = "array"
    first["properties"]["a"]["type"] = "null"
    second = d.input_schema
    assert second is not first
    assert second == SCHEMA
    assert d == make()


def test_output_schema_accessor_returns_fresh_copies() -> None:
    """Each output_schema access is a new object; mutating it never changes the definition."""
    d = make(output_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    got = d.output_schema
    assert isinstance(got, dict)
    got["properties"]["x"] = {"type": "string"}
    assert d.output_schema == {"type": "object", "properties": {"x": {"type": "integer"}}}


def test_to_dict_returns_detached_data() -> None:
    """Mutating to_dict() output, including nested schemas, never changes the definition."""
    d = make(description="desc", output_schema={"type": "integer"}, effect=Effect.SAFE)
    data = d.to_dict()
    data["name"] = "other"
    data["input_schema"]["properties"].clear()
    data["output_schema"]["type"] = "string"
    assert d.to_dict() == {
        "name": "add",
        "description": "desc",
        "input_schema": SCHEMA,
        "output_schema": {"type": "integer"},
        "effect": "safe",
    }


def test_schema_json_is_immutable_bytes() -> None:
    """The canonical accessors return bytes, which cannot be mutated in place."""
    d = make(output_schema=True)
    assert type(d.input_schema_json) is bytes
    assert type(d.output_schema_json) is bytes


def test_definition_attributes_are_read_only() -> None:
    """Definition has no writable public attributes."""
    d = make()
    with pytest.raises(AttributeError):
        d.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        d.extra = 1  # type: ignore[attr-defined]
    assert d.name == "add"


# --------------------------------------------------------------------------------------------------
# to_dict / to_json / from_dict / from_json


def test_to_dict_omits_empty_optional_members() -> None:
    """Without description, output schema and effect, to_dict has only name and input_schema, in that order."""
    assert list(make().to_dict()) == ["name", "input_schema"]


def test_to_dict_member_order_with_everything() -> None:
    """to_dict lists name, description, input_schema, output_schema, effect."""
    d = make(description="x", output_schema=True, effect=Effect.IDEMPOTENT)
    assert list(d.to_dict()) == ["name", "description", "input_schema", "output_schema", "effect"]
    assert d.to_dict()["output_schema"] is True
    assert d.to_dict()["effect"] == "idempotent"


def test_to_json_is_canonical() -> None:
    """to_json is one canonical document with schema numbers kept as written."""
    d = make(
        input_schema='{"type":"object","properties":{"n":{"maximum":1.50}}}',
        description="<b>&",
        output_schema='{"minimum":1e2}',
        effect=Effect.SAFE,
    )
    assert d.to_json() == (
        b'{"description":"<b>&","effect":"safe","input_schema":{"properties":{"n":{"maximum":1.50}},'
        b'"type":"object"},"name":"add","output_schema":{"minimum":1e2}}'
    )


@pytest.mark.parametrize(
    "d",
    [
        make(),
        make(description="Add two numbers."),
        make(output_schema={"type": "integer"}, effect=Effect.SAFE),
        make(output_schema=False, effect=Effect.IDEMPOTENT),
        make(input_schema='{"type":"object","properties":{"n":{"maximum":1.50,"minimum":-1e-3}}}'),
        make(input_schema='{"type":"object","const":123456789012345678901234567890}'),
    ],
)
def test_to_json_from_json_round_trip(d: Definition) -> None:
    """from_json(to_json()) rebuilds an equal definition with identical bytes (str and bytes input)."""
    again = Definition.from_json(d.to_json())
    assert again == d
    assert again.input_schema_json == d.input_schema_json
    assert again.output_schema_json == d.output_schema_json
    assert Definition.from_json(d.to_json().decode()) == d


@pytest.mark.parametrize(
    "d",
    [make(), make(description="x", output_schema={"type": "integer"}, effect=Effect.SAFE), make(output_schema=True)],
)
def test_to_dict_from_dict_round_trip(d: Definition) -> None:
    """from_dict(to_dict()) rebuilds an equal definition."""
    assert Definition.from_dict(d.to_dict()) == d


@pytest.mark.parametrize(
    ("schema", "spelled"),
    [('{"type":"object","maximum":1.50}', b"1.5"), ('{"type":"object","maximum":1e2}', b"100.0")],
)
def test_to_dict_keeps_values_and_to_json_keeps_spelling(schema: str, spelled: bytes) -> None:
    """to_dict is a Python view (float values, Python spelling); to_json keeps the literals byte for byte."""
    d = make(input_schema=schema)
    again = Definition.from_dict(d.to_dict())
    assert again.to_dict() == d.to_dict()
    assert spelled in again.input_schema_json
    assert Definition.from_json(d.to_json()) == d
    assert Definition.from_json(d.to_json()).input_schema_json == d.input_schema_json


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1" + "0" * 400 + ".0"])
def test_schema_numbers_beyond_a_double_are_rejected(number: str) -> None:
    """A schema number that overflows a double (RFC 7493) is refused at construction."""
    with pytest.raises(InvalidDefinitionError, match="finite"):
        make(input_schema=f'{{"type":"object","maximum":{number}}}')


@pytest.mark.parametrize("member", ["extra", "inputSchema", "Name", "id"])
def test_from_dict_rejects_unknown_members(member: str) -> None:
    """from_dict refuses any member it does not know."""
    data = make().to_dict()
    data[member] = "x"
    with pytest.raises(InvalidDefinitionError, match=member):
        Definition.from_dict(data)


@pytest.mark.parametrize("data", [{"name": "x"}, {"input_schema": OBJECT}, {}])
def test_from_dict_requires_name_and_input_schema(data: dict[str, Any]) -> None:
    """from_dict needs both name and input_schema."""
    with pytest.raises(InvalidDefinitionError):
        Definition.from_dict(data)


@pytest.mark.parametrize("data", [[], "x", None, 1])
def test_from_dict_requires_a_dict(data: object) -> None:
    """from_dict refuses anything that is not a dict."""
    with pytest.raises(InvalidDefinitionError):
        Definition.from_dict(data)  # type: ignore[arg-type]


@pytest.mark.parametrize("effect", ["unsafe", "SAFE", "", 1, ["safe"]])
def test_from_dict_rejects_bad_effect(effect: object) -> None:
    """from_dict refuses effects other than 'safe' and 'idempotent'."""
    with pytest.raises(InvalidDefinitionError):
        Definition.from_dict({"name": "x", "input_schema": OBJECT, "effect": effect})


def test_from_dict_parses_effect_strings() -> None:
    """from_dict turns effect strings into Effect members."""
    assert Definition.from_dict({"name": "x", "input_schema": OBJECT, "effect": "idempotent"}).effect is (
        Effect.IDEMPOTENT
    )


def test_from_dict_validates_like_the_constructor() -> None:
    """from_dict applies the name and schema rules."""
    with pytest.raises(InvalidDefinitionError):
        Definition.from_dict({"name": "bad name", "input_schema": OBJECT})
    with pytest.raises(InvalidDefinitionError):
        Definition.from_dict({"name": "x", "input_schema": {"type": "array"}})


@pytest.mark.parametrize(
    "raw",
    [
        '{"name":"x","input_schema":{"type":"object"},"name":"y"}',
        '{"name":"x","input_schema":{"type":"object"}} {}',
        '{"name":"x","input_schema":{"type":"object"},"extra":1}',
        '{"name":"x","input_schema":{"type":"object"},"effect":"unsafe"}',
        "[]",
        "nope",
        "",
        b"\xff",
        '"\ud800"',
        '{"name":"x","input_schema":{"type":"object","m":NaN}}',
    ],
)
def test_from_json_rejects_bad_documents(raw: str | bytes) -> None:
    """from_json refuses non-RFC 7493 text, non-objects, unknown members and bad effects."""
    with pytest.raises(InvalidDefinitionError):
        Definition.from_json(raw)


# --------------------------------------------------------------------------------------------------
# equality, hashing, repr, pickling


def test_equality_and_hash() -> None:
    """Definitions are equal (and hash equal) exactly when every member is equal."""
    a = make(description="d", effect=Effect.SAFE)
    b = make(description="d", effect=Effect.SAFE)
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != make(description="e", effect=Effect.SAFE)
    assert a != make(description="d", effect=Effect.IDEMPOTENT)
    assert a != make(description="d")
    assert a != make(name="sub", description="d", effect=Effect.SAFE)
    assert a != make(description="d", effect=Effect.SAFE, output_schema=True)
    assert a != make(description="d", effect=Effect.SAFE, input_schema=OBJECT)


def test_equality_with_other_types() -> None:
    """A definition never equals a non-definition such as its dict form."""
    d = make()
    assert d != d.to_dict()
    assert d != d.to_json()
    assert (d == "add") is False


def test_repr_names_tool_and_effect() -> None:
    """repr shows the name and, when set, the effect name."""
    assert repr(make()) == "Definition(name='add')"
    assert repr(make(effect=Effect.SAFE)) == "Definition(name='add', effect=SAFE)"


@pytest.mark.parametrize(
    "d",
    [
        make(),
        make(description="desc", output_schema='{"minimum":1.50}', effect=Effect.IDEMPOTENT),
        make(input_schema='{"type":"object","maximum":1e300,"minimum":-0.0}'),
    ],
)
def test_pickle_round_trip(d: Definition) -> None:
    """Pickling preserves every member, including schema number spelling."""
    again = pickle.loads(pickle.dumps(d))
    assert isinstance(again, Definition)
    assert again == d
    assert again.input_schema_json == d.input_schema_json
    assert again.output_schema_json == d.output_schema_json
    assert again.effect is d.effect


def test_copy_and_deepcopy() -> None:
    """copy and deepcopy give equal definitions."""
    d = make(description="x", effect=Effect.SAFE)
    assert copy.copy(d) == d
    assert copy.deepcopy(d) == d
