"""`Contract.prepare`, the trust boundary: check order, every bad input, what is admitted, decode-once."""

import contextlib
import gc
import math
import pickle
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import pytest
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError, PydanticKnownError

from scopetool import (
    MAX_INPUT_BYTES,
    Admission,
    Binding,
    Definition,
    IdempotencyKey,
    InputRejection,
    InputRequest,
    InputValidationError,
    InvalidInvocationError,
    Invocation,
    Output,
    Request,
    Result,
    Signature,
    _explain,
    bind,
    classify_input_rejection,
    tool,
)
from scopetool._feedback import MAX_DESCRIBED

SECRET = "s3cr3t-MARKER-91b7"
"""Planted in rejected values: no rejection message may repeat it."""

# ---------------------------------------------------------------------------------------------------
# The subjects: three tools that accept the same JSON shape, built three ways.


class Address(BaseModel):
    """A nested model that would silently drop unknown members on its own."""

    model_config = ConfigDict(extra="ignore")
    street: str
    zip: int


class Payload(BaseModel):
    """A model that would keep unknown members on its own; the contract must close it anyway."""

    model_config = ConfigDict(extra="allow")
    name: str
    count: int
    ratio: float = 0.0
    flag: bool = False
    address: Address | None = None
    friends: list[Address] = []
    tags: dict[str, int] = {}
    blob: Any = None


_ADDRESS_SCHEMA = {
    "type": "object",
    "properties": {"street": {"type": "string"}, "zip": {"type": "integer"}},
    "required": ["street", "zip"],
    "additionalProperties": False,
}
RAW_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "address": {"$ref": "#/$defs/Address"},
        "friends": {"type": "array", "items": {"$ref": "#/$defs/Address"}},
        "tags": {"type": "object", "additionalProperties": {"type": "integer"}},
        "blob": {},
    },
    "required": ["name", "count"],
    "additionalProperties": False,
    "$defs": {"Address": _ADDRESS_SCHEMA},
}


class RawTool:
    """A raw-schema tool (a remote proxy, say) that counts how often each of its methods runs."""

    def __init__(
        self,
        schema: dict[str, Any] = RAW_SCHEMA,
        hook: Callable[[bytes], Any] | None = None,
        name: str = "subject",
    ) -> None:
        self.schema = schema
        self.hook = hook
        self.name = name
        self.calls: list[bytes] = []
        self.definition_calls = 0
        self.declarations = 0

    def definition(self) -> Definition:
        self.definition_calls += 1
        return Definition(name=self.name, description="A hand-written schema.", input_schema=self.schema)

    def input_validator(self) -> Callable[[bytes], Any] | None:
        self.declarations += 1
        return self.hook

    async def call(self, invocation: Invocation, /) -> Result:
        self.calls.append(invocation.arguments)
        return Result(output=Output.from_text("ok"))


@dataclass
class Subject:
    kind: str
    binding: Binding
    calls: list[Any] = field(default_factory=list)


def make_subject(kind: str) -> Subject:
    calls: list[Any] = []
    if kind == "kwargs":

        @tool(name="subject")
        def subject(  # noqa: PLR0917 - a tool with many parameters is the subject
            name: str,
            count: int,
            ratio: float = 0.0,
            flag: bool = False,
            address: Address | None = None,
            friends: list[Address] | None = None,
            tags: dict[str, int] | None = None,
            blob: Any = None,
        ) -> str:
            """A tool whose parameters become the input object."""
            calls.append(name)
            return "ok"

        return Subject(kind, bind(subject), calls)
    if kind == "model":

        @tool(name="subject")
        def subject_model(payload: Payload) -> str:
            """A tool whose single model parameter is the input object."""
            calls.append(payload)
            return "ok"

        return Subject(kind, bind(subject_model), calls)
    raw = RawTool()
    return Subject(kind, bind(raw), raw.calls)


KINDS = ["kwargs", "model", "raw"]


@pytest.fixture(params=KINDS)
def subject(request: pytest.FixtureRequest) -> Subject:
    return make_subject(request.param)


def prepare(binding: Binding, arguments: str | bytes, admission: Admission | None = None) -> Invocation:
    request = Request(name=binding.name, arguments=arguments)
    if admission is None:
        return binding.contract.prepare(request)
    return binding.contract.prepare(request, admission)


def reject(binding: Binding, arguments: str | bytes) -> tuple[InvalidInvocationError, InputRejection]:
    """Prepare `arguments`, expect a classifiable rejection that repeats no planted secret."""
    with pytest.raises(InvalidInvocationError) as info:
        prepare(binding, arguments)
    rejection = classify_input_rejection(info.value)
    assert rejection is not None, f"no InputRejection behind {info.value!r}"
    assert SECRET not in rejection.message
    assert SECRET not in str(info.value)
    assert rejection.message in str(info.value)
    return info.value, rejection


GOOD = '{"name":"ada","count":1}'


# ---------------------------------------------------------------------------------------------------
# 1. Name identity comes first.


@pytest.mark.parametrize(
    "arguments",
    [b"\xff\xfe not json", "[" * (MAX_INPUT_BYTES + 1), '{"count":NaN,"count":1}', "", 12],
    ids=["invalid-utf8", "oversize", "nan-and-duplicate", "blank", "not-str-or-bytes"],
)
def test_wrong_name_is_rejected_before_the_arguments_are_looked_at(subject: Subject, arguments: Any) -> None:
    """A wrong name is reported even when the arguments are oversized, invalid or of the wrong type."""
    with pytest.raises(InvalidInvocationError) as info:
        subject.binding.contract.prepare(Request(name="other", arguments=arguments))
    text = str(info.value)
    assert "does not match bound tool 'subject'" in text
    assert "limit" not in text and "JSON" not in text and "str or bytes" not in text


@pytest.mark.parametrize(
    "name", ["Subject", "SUBJECT", "subject ", " subject", "subjec", "subject\x00", "\u0455ubject"]
)
def test_name_must_match_exactly_and_case_sensitively(subject: Subject, name: str) -> None:
    """Only the exact bound name is admitted: no case folding, trimming or look-alike characters."""
    with pytest.raises(InvalidInvocationError, match="does not match bound tool"):
        subject.binding.contract.prepare(Request(name=name, arguments=GOOD))
    assert subject.binding.contract.prepare(Request(name="subject", arguments=GOOD)).name == "subject"


def test_non_string_name_is_rejected(subject: Subject) -> None:
    """A name that is not a string never matches."""
    with pytest.raises(InvalidInvocationError, match="does not match"):
        subject.binding.contract.prepare(Request(name=None, arguments=GOOD))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# 2. Size: over MAX_INPUT_BYTES is rejected before any parsing.


def _document_of_size(size: int, filler: str = "x") -> str:
    """A valid subject document of exactly `size` UTF-8 bytes, its name mostly `filler`."""
    head, tail = '{"count":1,"name":"', '"}'
    room = size - len(head) - len(tail)
    width = len(filler.encode())
    document = head + "x" * (room % width) + filler * (room // width) + tail
    assert len(document.encode()) == size
    return document


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_oversize_is_rejected_before_parsing(subject: Subject, as_bytes: bool) -> None:
    """Over-limit garbage is reported as too big, not as bad JSON: it was never parsed."""
    garbage = "[" * (MAX_INPUT_BYTES + 1)
    _, rejection = reject(subject.binding, garbage.encode() if as_bytes else garbage)
    assert f"the limit is {MAX_INPUT_BYTES} bytes" in rejection.message
    assert "JSON" not in rejection.message


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_one_byte_over_the_limit_is_rejected_even_when_valid(subject: Subject, as_bytes: bool) -> None:
    """A valid document of MAX_INPUT_BYTES + 1 bytes is rejected for its size."""
    document = _document_of_size(MAX_INPUT_BYTES + 1)
    _, rejection = reject(subject.binding, document.encode() if as_bytes else document)
    assert f"the limit is {MAX_INPUT_BYTES} bytes" in rejection.message


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_exactly_max_input_bytes_of_valid_json_is_admitted(subject: Subject, as_bytes: bool) -> None:
    """A valid document of exactly MAX_INPUT_BYTES bytes is admitted unchanged."""
    document = _document_of_size(MAX_INPUT_BYTES)
    invocation = prepare(subject.binding, document.encode() if as_bytes else document)
    assert len(invocation.arguments) == MAX_INPUT_BYTES
    assert invocation.arguments == document.encode()


def test_str_is_measured_in_utf8_bytes_not_characters(subject: Subject) -> None:
    """A str whose UTF-8 encoding exceeds the cap is rejected although its len() does not."""
    document = _document_of_size(MAX_INPUT_BYTES + 2, filler="\u00e9")
    assert len(document) < MAX_INPUT_BYTES < len(document.encode())
    _, rejection = reject(subject.binding, document)
    assert f"the limit is {MAX_INPUT_BYTES} bytes" in rejection.message


def test_multibyte_str_of_exactly_max_bytes_is_admitted(subject: Subject) -> None:
    """A str of two-byte characters that encodes to exactly MAX_INPUT_BYTES is admitted."""
    document = _document_of_size(MAX_INPUT_BYTES, filler="\u00e9")
    assert len(document.encode()) == MAX_INPUT_BYTES
    assert prepare(subject.binding, document).arguments == document.encode()


def test_whitespace_over_the_limit_is_oversize_not_blank(subject: Subject) -> None:
    """Size is checked before blank normalisation: a megabyte of spaces is not ``{}``."""
    _, rejection = reject(subject.binding, b" " * (MAX_INPUT_BYTES + 1))
    assert "limit" in rejection.message
    assert "missing" not in rejection.message


# ---------------------------------------------------------------------------------------------------
# 3. Blank arguments mean {}.


class Options(BaseModel):
    """Every member optional, so ``{}`` is valid."""

    limit: int = 10


def make_optional_subject(kind: str) -> Binding:
    if kind == "kwargs":

        @tool(name="optional")
        def optional(limit: int = 10) -> str:
            """Everything optional."""
            return str(limit)

        return bind(optional)
    if kind == "model":

        @tool(name="optional")
        def optional_model(options: Options) -> str:
            """Everything optional, as a model."""
            return str(options.limit)

        return bind(optional_model)
    schema = {"type": "object", "properties": {"limit": {"type": "integer"}}, "additionalProperties": False}
    return bind(RawTool(schema, name="optional"))


BLANKS = ["", b"", "   ", b"  ", "\n\t", b"\r\n\t ", "\u00a0", "\u0085", "\u2028\u3000", "\u00a0".encode()]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("blank", BLANKS, ids=repr)
def test_blank_arguments_are_admitted_as_an_empty_object(kind: str, blank: str | bytes) -> None:
    """Empty or Unicode-white-space-only arguments are admitted as exactly ``{}``."""
    invocation = prepare(make_optional_subject(kind), blank)
    assert invocation.arguments == b"{}"


@pytest.mark.parametrize("blank", ["", "  \n", "\u00a0"], ids=repr)
def test_blank_arguments_then_meet_the_schema(subject: Subject, blank: str) -> None:
    """A blank call to a tool with required members is reported as missing fields, not as bad JSON."""
    _, rejection = reject(subject.binding, blank)
    assert "$.name: missing required field" in rejection.message
    assert "$.count: missing required field" in rejection.message


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("not_blank", ["\x1c", "\x1f", " \x1d ", "\u200b", b"\x1e"], ids=repr)
def test_ascii_separators_are_not_blank(kind: str, not_blank: str | bytes) -> None:
    """U+001C..U+001F (which str.strip() removes) and U+200B are not white space: they are bad JSON."""
    _, rejection = reject(make_optional_subject(kind), not_blank)
    assert "not valid JSON" in rejection.message


# ---------------------------------------------------------------------------------------------------
# 4. RFC 7493 (I-JSON), for every kind of tool.

S = SECRET
IJSON_CASES: list[tuple[str, str | bytes, str]] = [
    # duplicate member names, at every depth and in every kind of position
    ("dup-top", f'{{"name":"{S}","count":1,"count":1}}', "same member name twice"),
    ("dup-top-different-values", f'{{"name":"{S}","count":1,"count":2}}', "same member name twice"),
    (
        "dup-nested",
        f'{{"name":"{S}","count":1,"address":{{"street":"{S}","zip":1,"zip":1}}}}',
        "same member name twice",
    ),
    (
        "dup-in-array-of-objects",
        f'{{"name":"a","count":1,"friends":[{{"street":"s","zip":1}},{{"street":"{S}","street":"{S}","zip":2}}]}}',
        "same member name twice",
    ),
    ("dup-escaped-key", f'{{"\\u006eame":"{S}","name":"{S}","count":1}}', "same member name twice"),
    ("dup-escaped-both", '{"name":"a","\\u0063ount":1,"\\u0063\\u006funt":1}', "same member name twice"),
    ("dup-in-dict", f'{{"name":"{S}","count":1,"tags":{{"t":1,"t":1}}}}', "same member name twice"),
    ("dup-escaped-in-dict", '{"name":"a","count":1,"tags":{"\\u0061":1,"a":2}}', "same member name twice"),
    ("dup-in-any", f'{{"name":"a","count":1,"blob":{{"k":"{S}","k":"{S}"}}}}', "same member name twice"),
    ("dup-deep-in-any", '{"name":"a","count":1,"blob":[1,{"x":{"y":[{"z":1,"z":1}]}}]}', "same member name twice"),
    ("dup-escaped-in-any", '{"name":"a","count":1,"blob":{"\\u00e9":1,"\u00e9":2}}', "same member name twice"),
    # invalid escapes and invalid UTF-8
    ("lone-high-surrogate", '{"name":"\\ud800","count":1}', "invalid escape"),
    ("lone-low-surrogate", '{"name":"\\udc00x","count":1}', "invalid escape"),
    ("reversed-surrogates", '{"name":"\\udc00\\ud800","count":1}', "invalid escape"),
    ("surrogate-in-key", '{"name":"a","count":1,"tags":{"\\ud83d":1}}', "invalid escape"),
    ("invalid-utf8-byte", b'{"name":"\xff","count":1}', "invalid UTF-8"),
    ("truncated-utf8-sequence", b'{"name":"\xc3","count":1}', "invalid UTF-8"),
    ("utf8-encoded-surrogate", b'{"name":"\xed\xa0\x80","count":1}', "invalid UTF-8"),
    ("overlong-utf8", b'{"name":"\xc0\xaf","count":1}', "invalid UTF-8"),
    # exactly one document
    ("trailing-object", f'{{"name":"{S}","count":1}} {{}}', "more after the JSON document"),
    ("trailing-garbage", f'{{"name":"{S}","count":1}} x', "more after the JSON document"),
    ("trailing-brace", '{"name":"a","count":1}}', "more after the JSON document"),
    ("trailing-comma", '{"name":"a","count":1},', "more after the JSON document"),
    # the top level is an object
    ("top-array", "[]", "must be a JSON object, not an array"),
    ("top-number", "1", "must be a JSON object, not a number"),
    ("top-string", f'"{S}"', "must be a JSON object, not a string"),
    ("top-null", "null", "must be a JSON object, not null"),
    ("top-true", "true", "must be a JSON object, not a boolean"),
    ("top-array-of-object", '[{"name":"a","count":1}]', "must be a JSON object, not an array"),
    # NaN and Infinity in integer, number and unconstrained positions
    ("nan-int", f'{{"name":"{S}","count":NaN}}', "NaN and Infinity are not JSON numbers"),
    ("inf-int", f'{{"name":"{S}","count":Infinity}}', "NaN and Infinity are not JSON numbers"),
    ("neg-inf-int", f'{{"name":"{S}","count":-Infinity}}', "NaN and Infinity are not JSON numbers"),
    ("nan-float", '{"name":"a","count":1,"ratio":NaN}', "NaN and Infinity are not JSON numbers"),
    ("inf-float", '{"name":"a","count":1,"ratio":Infinity}', "NaN and Infinity are not JSON numbers"),
    ("neg-inf-float", '{"name":"a","count":1,"ratio":-Infinity}', "NaN and Infinity are not JSON numbers"),
    ("nan-any", '{"name":"a","count":1,"blob":NaN}', "NaN and Infinity are not JSON numbers"),
    ("inf-deep-in-any", '{"name":"a","count":1,"blob":{"x":[1,Infinity]}}', "NaN and Infinity are not JSON numbers"),
    ("neg-inf-any", '{"name":"a","count":1,"blob":[-Infinity]}', "NaN and Infinity are not JSON numbers"),
    ("nan-in-dict-value", '{"name":"a","count":1,"tags":{"t":NaN}}', "NaN and Infinity are not JSON numbers"),
    # truncated output
    ("truncated-after-value", f'{{"name":"{S}","count":1', "looks truncated"),
    ("truncated-in-string", f'{{"name":"{S}', "looks truncated"),
    ("truncated-in-nested", f'{{"name":"{S}","count":1,"friends":[{{"street":"{S}"', "looks truncated"),
    ("truncated-after-colon", '{"name":', "looks truncated"),
    ("truncated-open-brace", "{", "looks truncated"),
]


@pytest.mark.parametrize(("arguments", "expected"), [c[1:] for c in IJSON_CASES], ids=[c[0] for c in IJSON_CASES])
def test_ijson_violations_are_rejected_with_model_facing_feedback(
    subject: Subject, arguments: str | bytes, expected: str
) -> None:
    """Every RFC 7493 violation is an InvalidInvocationError with a classifiable, secret-free rejection."""
    _, rejection = reject(subject.binding, arguments)
    assert expected in rejection.message
    assert rejection.message.startswith("invalid arguments for tool 'subject'")


@pytest.mark.parametrize(
    "arguments",
    ['{"name":"a","count":1}', '{"name":"a","count":1,"tags":{"a":1},"blob":{"a":{"a":1}}}'],
    ids=["flat", "same-name-at-different-levels"],
)
def test_same_name_in_different_objects_is_not_a_duplicate(subject: Subject, arguments: str) -> None:
    """Only a repeated name within one object is a duplicate."""
    assert prepare(subject.binding, arguments).arguments == arguments.encode()


def test_duplicate_rejection_says_where(subject: Subject) -> None:
    """A duplicate member's rejection gives its position, since the value itself may not be echoed."""
    _, rejection = reject(subject.binding, '{"name":"a","count":1,"count":1}')
    assert "(line 1, column" in rejection.message


def test_truncation_is_flagged_only_for_truncated_documents(subject: Subject) -> None:
    """A document cut off mid-way says it looks truncated; a complete but wrong one does not."""
    _, cut = reject(subject.binding, '{"name":"a","count":1,"friends":[')
    _, complete = reject(subject.binding, '{"name":"a","count":1,"friends":[}')
    assert "looks truncated" in cut.message
    assert "truncated" not in complete.message


@pytest.mark.parametrize(
    ("arguments", "expected", "absent"),
    [
        ('{"name":"a","count":"x","count":"y"}', "same member name twice", "valid integer"),
        ('{"name":"a","count":1,"count":"x"}', "same member name twice", "valid integer"),
        ('{"name":7,"cuont":NaN}', "NaN and Infinity", "unknown field"),
        ('{"count":1} {"name":1}', "more after the JSON document", "missing"),
        ('{"name":"\\ud800","count":"x"}', "invalid escape", "integer"),
        ('{"name":"a","count":"x","friends":[{"zip":1,"zip":1}]}', "same member name twice", "missing"),
    ],
    ids=["dup-and-wrong-type", "dup-whose-last-is-wrong", "nan-and-unknown", "trailing-and-missing",
         "surrogate-and-wrong-type", "nested-dup-and-wrong-type"],
)  # fmt: skip
def test_ijson_problems_are_reported_before_schema_problems(
    subject: Subject, arguments: str, expected: str, absent: str
) -> None:
    """When a document breaks both I-JSON and the schema, the I-JSON problem alone is reported."""
    _, rejection = reject(subject.binding, arguments)
    assert expected in rejection.message
    assert absent not in rejection.message
    assert "(1 problem)" in rejection.message


# ---------------------------------------------------------------------------------------------------
# 5. The schema, strictly: no coercion, closed objects, required members.

COERCIONS = [
    ("str-for-int", f'{{"name":"a","count":"{S}"}}', "$.count", KINDS),
    ("numeric-str-for-int", '{"name":"a","count":"1"}', "$.count", KINDS),
    ("true-for-int", '{"name":"a","count":true}', "$.count", KINDS),
    ("false-for-int", '{"name":"a","count":false}', "$.count", KINDS),
    ("float-for-int", '{"name":"a","count":1.0}', "$.count", ["kwargs", "model"]),
    ("exponent-for-int", '{"name":"a","count":1e0}', "$.count", ["kwargs", "model"]),
    ("fraction-for-int", '{"name":"a","count":987654321.5}', "$.count", KINDS),
    ("null-for-int", '{"name":"a","count":null}', "$.count", KINDS),
    ("int-for-str", '{"name":1,"count":1}', "$.name", KINDS),
    ("object-for-str", f'{{"name":{{"v":"{S}"}},"count":1}}', "$.name", KINDS),
    ("str-true-for-bool", '{"name":"a","count":1,"flag":"true"}', "$.flag", KINDS),
    ("int-for-bool", '{"name":"a","count":1,"flag":1}', "$.flag", KINDS),
    ("str-for-float", '{"name":"a","count":1,"ratio":"1.5"}', "$.ratio", KINDS),
    ("str-in-nested-int", f'{{"name":"a","count":1,"address":{{"street":"s","zip":"{S}"}}}}', "$.address.zip", KINDS),
    (
        "str-in-list-of-models",
        f'{{"name":"a","count":1,"friends":[{{"street":"s","zip":1}},{{"street":"s","zip":"{S}"}}]}}',
        "$.friends[1].zip",
        KINDS,
    ),
    ("str-in-dict-value", f'{{"name":"a","count":1,"tags":{{"t":"{S}"}}}}', "$.tags.t", KINDS),
    ("array-for-object", '{"name":"a","count":1,"address":[1]}', "$.address", KINDS),
]
COERCION_PARAMS = [
    pytest.param(kind, arguments, path, id=f"{case}-{kind}")
    for case, arguments, path, kinds in COERCIONS
    for kind in kinds
]


@pytest.mark.parametrize(("kind", "arguments", "path"), COERCION_PARAMS)
def test_values_are_never_coerced(kind: str, arguments: str, path: str) -> None:
    """A value of the wrong JSON type is rejected at its JSON path, without echoing the value."""
    _, rejection = reject(make_subject(kind).binding, arguments)
    assert f"{path}: " in rejection.message
    assert "987654321" not in rejection.message


@pytest.mark.parametrize("kind", ["kwargs", "model"])
def test_typed_rejections_say_what_was_expected_and_what_came(kind: str) -> None:
    """A typed tool's type error names the expected type and the JSON kind it got, not the value."""
    _, rejection = reject(make_subject(kind).binding, '{"name":"a","count":1.0}')
    assert "$.count: Input should be a valid integer (got a number with a fraction or exponent)" in rejection.message


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        (f'{{"name":"a","count":1,"cuont":"{S}"}}', "$.cuont: unknown field; did you mean 'count'?"),
        (f'{{"name":"a","count":1,"address":{{"street":"s","zip":1,"zipp":"{S}"}}}}', "$.address.zipp: unknown field"),
        (
            f'{{"name":"a","count":1,"friends":[{{"street":"s","zip":1,"extra":"{S}"}}]}}',
            "$.friends[0].extra: unknown field",
        ),
        ('{"Name":"a","name":"a","count":1}', "$.Name: unknown field; did you mean 'name'?"),
    ],
    ids=["top-level", "nested-model", "model-in-list", "case-differs"],
)
def test_unknown_members_are_rejected_at_every_level(subject: Subject, arguments: str, line: str) -> None:
    """Unknown members are rejected at the top and inside nested objects, with the nearest valid name."""
    _, rejection = reject(subject.binding, arguments)
    assert line in rejection.message


def test_user_model_extra_settings_do_not_open_the_contract() -> None:
    """A model with extra="allow" and a nested model with extra="ignore" still admit no unknown members."""
    binding = make_subject("model").binding
    _, top = reject(binding, f'{{"name":"a","count":1,"bonus":"{S}"}}')
    _, nested = reject(binding, f'{{"name":"a","count":1,"address":{{"street":"s","zip":1,"bonus":"{S}"}}}}')
    assert "$.bonus: unknown field" in top.message
    assert "$.address.bonus: unknown field" in nested.message
    assert Payload.model_validate({"name": "a", "count": 1, "bonus": 1}).model_extra == {"bonus": 1}


@pytest.mark.parametrize(
    ("arguments", "lines"),
    [
        ('{"name":"a"}', ["$.count: missing required field"]),
        ('{"count":1}', ["$.name: missing required field"]),
        ('{"name":"a","count":1,"address":{"street":"s"}}', ["$.address.zip: missing required field"]),
        ('{"name":"a","count":1,"friends":[{}]}', ["$.friends[0].street: missing", "$.friends[0].zip: missing"]),
    ],
    ids=["top-int", "top-str", "nested", "in-list"],
)
def test_missing_members_are_named(subject: Subject, arguments: str, lines: list[str]) -> None:
    """Each missing required member is named by its JSON path."""
    _, rejection = reject(subject.binding, arguments)
    for line in lines:
        assert line in rejection.message


def test_many_problems_are_listed_and_bounded(subject: Subject) -> None:
    """Several problems are all listed (up to a bound), each on its own line."""
    members = ",".join(f'"extra{i}":"{S}"' for i in range(20))
    _, rejection = reject(subject.binding, "{" + members + "}")
    assert "$.name: missing required field" in rejection.message
    assert rejection.message.count("\n- ") <= 9
    assert len(rejection.message) < 4000


# ---------------------------------------------------------------------------------------------------
# 6. The validation hook runs last; its failures are classified.


class Guarded(BaseModel):
    """A model whose field validator is the tool's own admission rule."""

    count: int
    note: str

    @field_validator("note")
    @classmethod
    def _check(cls, value: str) -> str:
        return _rule(value)


def _rule(value: str) -> str:
    if value == "reject":
        raise InputRejection("note must be a greeting")
    if value.startswith("value"):
        raise ValueError("note must not start with value")
    if value == "boom":
        raise RuntimeError(f"validator defect holding {SECRET}")
    return value


def make_guarded(kind: str) -> Binding:
    if kind == "model":

        @tool(name="guarded")
        def guarded_model(payload: Guarded) -> str:
            """Guarded, as a model."""
            return payload.note

        return bind(guarded_model)

    @tool(name="guarded")
    def guarded(count: int, note: Annotated[str, AfterValidator(_rule)]) -> str:
        """Guarded, as parameters."""
        return note

    return bind(guarded)


@pytest.mark.parametrize("kind", ["kwargs", "model"])
def test_input_rejection_from_a_validator_is_the_exact_public_message(kind: str) -> None:
    """A pydantic validator raising InputRejection("text") gives exactly "text" to the model."""
    error, rejection = reject(make_guarded(kind), '{"count":1,"note":"reject"}')
    assert rejection.message == "note must be a greeting"
    assert str(error).endswith("note must be a greeting")


@pytest.mark.parametrize("kind", ["kwargs", "model"])
def test_value_error_from_a_validator_is_reported_at_its_path_without_its_text(kind: str) -> None:
    """A ValueError in a validator is reported like a schema problem, at its path, but its text is never shown."""
    _, rejection = reject(make_guarded(kind), '{"count":1,"note":"value-1"}')
    assert "$.note: the value is not valid here" in rejection.message
    assert "must not start" not in rejection.message


@pytest.mark.parametrize("kind", ["kwargs", "model"])
def test_other_exceptions_from_a_validator_are_contained_defects(kind: str) -> None:
    """Any other exception is an InputValidationError cause: nothing classifiable, nothing of it shown."""
    with pytest.raises(InvalidInvocationError) as info:
        prepare(make_guarded(kind), '{"count":1,"note":"boom"}')
    error = info.value
    assert isinstance(error.__cause__, InputValidationError)
    assert isinstance(error.__cause__.cause, RuntimeError)
    assert classify_input_rejection(error) is None
    assert SECRET not in str(error)
    assert SECRET not in str(error.__cause__)


@pytest.mark.parametrize("kind", ["kwargs", "model"])
def test_ijson_problems_are_reported_before_the_validator_rule(kind: str) -> None:
    """A duplicate member is reported even when the validator would also reject or break."""
    for note in ("reject", "boom", "value-x"):
        _, rejection = reject(make_guarded(kind), f'{{"count":1,"note":"{note}","count":1}}')
        assert "same member name twice" in rejection.message


class AfterHook(BaseModel):
    """A model-level rule, which pydantic runs only once every field is valid."""

    count: int
    note: str

    @model_validator(mode="after")
    def _rule(self) -> "AfterHook":
        AFTER_HOOK_RUNS.append(self.note)
        raise InputRejection("the note and the count disagree")


AFTER_HOOK_RUNS: list[str] = []


def test_schema_problems_are_reported_before_the_model_rule() -> None:
    """The model-level rule is skipped when the schema already failed; its message appears only after."""
    AFTER_HOOK_RUNS.clear()

    @tool
    def after_hook(payload: AfterHook) -> str:
        """After hook."""
        return "ok"

    binding = bind(after_hook)
    _, schema = reject(binding, '{"count":"x","note":"n"}')
    assert "$.count: Input should be a valid integer" in schema.message
    assert AFTER_HOOK_RUNS == []
    _, rule = reject(binding, '{"count":1,"note":"n"}')
    assert rule.message == "the note and the count disagree"
    assert AFTER_HOOK_RUNS == ["n"]


@pytest.mark.parametrize("kind", ["kwargs", "model"])
@pytest.mark.parametrize("note", ["reject", "boom"])
def test_schema_problem_in_one_field_wins_over_a_field_validator_of_another(kind: str, note: str) -> None:
    """A wrong-typed field is reported even when another field's validator rejects or breaks."""
    _, rejection = reject(make_guarded(kind), f'{{"count":"x","note":"{note}"}}')
    line = next(line for line in rejection.message.splitlines() if line.startswith("- $.count:"))
    assert "integer" in line


def test_raw_tool_hook_runs_after_the_schema_and_its_rejection_is_public() -> None:
    """A raw tool's validator sees only schema-valid bytes; its InputRejection message is exact."""
    seen: list[bytes] = []

    def hook(raw: bytes) -> str:
        seen.append(raw)
        if b"reject" in raw:
            raise InputRejection("that name is taken")
        if b"boom" in raw:
            raise KeyError(SECRET)
        return "decoded"

    binding = bind(RawTool(hook=hook))
    reject(binding, '{"name":"reject","count":"x"}')
    reject(binding, '{"name":"reject","count":1,"count":1}')
    assert seen == []
    _, rejection = reject(binding, '{"name":"reject","count":1}')
    assert rejection.message == "that name is taken"
    with pytest.raises(InvalidInvocationError) as info:
        prepare(binding, '{"name":"boom","count":1}')
    assert isinstance(info.value.__cause__, InputValidationError)
    assert classify_input_rejection(info.value) is None
    assert SECRET not in str(info.value)
    assert prepare(binding, '{"name":"fine","count":1}').arguments == b'{"name":"fine","count":1}'
    assert seen == [b'{"name":"reject","count":1}', b'{"name":"boom","count":1}', b'{"name":"fine","count":1}']


# ---------------------------------------------------------------------------------------------------
# 7. Lone surrogates inside a Python str.


@pytest.mark.parametrize("arguments", ['{"name":"\ud800","count":1}', '{"name":"a","count":1,"tags":{"\udfff":1}}'])
def test_raw_lone_surrogate_characters_in_a_str_are_rejected(subject: Subject, arguments: str) -> None:
    """A str holding a lone surrogate character (not an escape) is not admitted."""
    with pytest.raises(InvalidInvocationError, match="lone surrogate"):
        prepare(subject.binding, arguments)


def test_raw_lone_surrogate_rejection_is_classifiable(subject: Subject) -> None:
    """The lone-surrogate rejection carries an InputRejection, like every other bad-JSON rejection."""
    _, rejection = reject(subject.binding, '{"name":"\ud800","count":1}')
    assert "lone surrogate" in rejection.message


# ---------------------------------------------------------------------------------------------------
# 8. What is admitted.


@pytest.mark.parametrize(
    "arguments",
    [
        '{"name":"ada","count":1}',
        ' \n{"count":1 , "name":"ada"}\t ',
        '{"name":"\\u00e9\\n","count":10}',
        '{"name":"caf\u00e9 \U0001f600","count":1,"blob":{"b":1,"a":[1.50,2e0]}}',
    ],
    ids=["plain", "whitespace-and-order", "escapes", "non-ascii"],
)
def test_str_arguments_are_kept_exactly_as_utf8_bytes(subject: Subject, arguments: str) -> None:
    """Admitted str arguments are the same text, encoded as UTF-8: no trimming, reordering or re-escaping."""
    invocation = prepare(subject.binding, arguments)
    assert invocation.arguments == arguments.encode("utf-8")
    assert type(invocation.arguments) is bytes


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview], ids=["bytes", "bytearray", "memoryview"])
def test_bytes_like_arguments_are_kept_exactly(subject: Subject, wrap: Callable[[bytes], Any]) -> None:
    """Bytes-like arguments are admitted and handed back as identical bytes."""
    raw = b'{"count":1,"name":"ada"} '
    invocation = subject.binding.contract.prepare(Request(name="subject", arguments=wrap(raw)))
    assert invocation.arguments == raw
    assert type(invocation.arguments) is bytes


def test_invocation_holds_the_admission_and_the_exact_contract(subject: Subject) -> None:
    """The invocation carries the driver's key and continuation, and the contract that admitted it."""
    continuation = InputRequest(prompt="ok?", response_schema={"type": "boolean"}).continuation(True)
    admission = Admission(idempotency_key=IdempotencyKey("call-1"), continuation=continuation)
    invocation = prepare(subject.binding, GOOD, admission)
    assert invocation.idempotency_key == "call-1"
    assert invocation.continuation is continuation
    assert invocation.contract is subject.binding.contract
    assert invocation.name == "subject"
    assert invocation.definition == subject.binding.definition()
    bare = prepare(subject.binding, GOOD)
    assert bare.idempotency_key is None
    assert bare.continuation is None


def test_each_prepare_mints_a_new_invocation(subject: Subject) -> None:
    """Two admissions of the same request are distinct invocations."""
    assert prepare(subject.binding, GOOD) is not prepare(subject.binding, GOOD)


def test_invocation_cannot_be_constructed_directly() -> None:
    """Only Contract.prepare mints an Invocation."""
    with pytest.raises(TypeError):
        Invocation()


@pytest.mark.parametrize(
    ("request_", "admission"),
    [
        ({"name": "subject", "arguments": GOOD}, Admission()),
        (("subject", GOOD), Admission()),
        ("subject", Admission()),
        (Request(name="subject", arguments=GOOD), {"idempotency_key": "k"}),
        (Request(name="subject", arguments=GOOD), None),
    ],
    ids=["dict-request", "tuple-request", "str-request", "dict-admission", "none-admission"],
)
def test_wrong_request_or_admission_types_are_rejected(subject: Subject, request_: Any, admission: Any) -> None:
    """prepare accepts only a Request and an Admission."""
    with pytest.raises(InvalidInvocationError, match="expected a"):
        subject.binding.contract.prepare(request_, admission)


@pytest.mark.parametrize("arguments", [12, None, ["{}"], {"name": "a"}, 1.5])
def test_arguments_of_the_wrong_type_are_rejected(subject: Subject, arguments: Any) -> None:
    """Arguments that are neither str nor bytes-like are rejected, not stringified."""
    with pytest.raises(InvalidInvocationError, match="must be str or bytes"):
        subject.binding.contract.prepare(Request(name="subject", arguments=arguments))


@pytest.mark.parametrize(
    "kwargs", [{"idempotency_key": 5}, {"idempotency_key": b"k"}, {"continuation": "state"}, {"continuation": {}}]
)
def test_admission_fields_of_the_wrong_type_raise_type_error(kwargs: dict[str, Any]) -> None:
    """An Admission holds only a str key and a Continuation."""
    with pytest.raises(TypeError):
        Admission(**kwargs)


# ---------------------------------------------------------------------------------------------------
# 9. Nothing executes on rejection; prepare never re-reads the definition.

BAD_INPUTS: list[str | bytes] = (
    [c[1] for c in IJSON_CASES]
    + [c[1] for c in COERCIONS if c[3] is KINDS]
    + [
        "[" * (MAX_INPUT_BYTES + 1),
        '{"name":"a","count":1,"nope":1}',
        '{"name":"a"}',
        "\x1c",
        '{"name":"\ud800","count":1}',
    ]
)


async def test_nothing_executes_on_rejection(subject: Subject) -> None:
    """No rejected input reaches the tool; an admitted one does, through the binding."""
    for arguments in BAD_INPUTS:
        with pytest.raises(InvalidInvocationError):
            prepare(subject.binding, arguments)
    assert subject.calls == []
    result = await subject.binding.call(prepare(subject.binding, GOOD))
    assert result.output is not None and result.output.text() == "ok"
    assert len(subject.calls) == 1


def test_prepare_never_reads_the_definition_again() -> None:
    """bind reads definition() and the validator declaration once; admissions and rejections read neither."""
    raw = RawTool(hook=lambda raw: None)
    binding = bind(raw)
    assert (raw.definition_calls, raw.declarations) == (1, 1)
    for _ in range(5):
        prepare(binding, GOOD)
        with pytest.raises(InvalidInvocationError):
            prepare(binding, '{"name":1}')
    binding.definition()
    assert (raw.definition_calls, raw.declarations) == (1, 1)
    assert raw.calls == []


def test_later_changes_to_the_tool_do_not_change_the_contract() -> None:
    """The schema frozen at bind is enforced even after the tool would describe itself differently."""
    raw = RawTool()
    binding = bind(raw)
    raw.schema = {"type": "object", "properties": {"other": {"type": "string"}}, "additionalProperties": False}
    assert prepare(binding, GOOD).arguments == GOOD.encode()
    _, rejection = reject(binding, '{"other":"x"}')
    assert "$.other: unknown field" in rejection.message


# ---------------------------------------------------------------------------------------------------
# 10. Decode once: the admitted value goes to the first call; later calls decode afresh.

VALIDATIONS: list[list[int]] = []


def _counted(value: list[int]) -> list[int]:
    VALIDATIONS.append(list(value))
    return value


class Batch(BaseModel):
    """A model whose list field is counted each time it is validated."""

    items: Annotated[list[int], AfterValidator(_counted)]


def test_signature_decode_reuses_the_admitted_value_once() -> None:
    """Signature.decode hands out the value decoded at admission once, then decodes afresh."""
    VALIDATIONS.clear()
    signature = Signature(Batch, str)

    class BatchTool:
        def definition(self) -> Definition:
            return signature.definition("batch")

        def input_validator(self) -> Any:
            return signature.input_validator()

        async def call(self, invocation: Invocation, /) -> Result:
            return Result(output=signature.encode("ok"))

    binding = bind(BatchTool())
    invocation = prepare(binding, '{"items":[1,2]}')
    assert len(VALIDATIONS) == 1
    first = signature.decode(invocation)
    assert len(VALIDATIONS) == 1
    first.items.append(99)
    second = signature.decode(invocation)
    assert len(VALIDATIONS) == 2
    assert second is not first
    assert second.items == [1, 2]
    assert signature.decode(invocation).items == [1, 2]


async def test_tool_calls_of_one_invocation_do_not_see_each_others_mutations() -> None:
    """The first call gets the admitted list; mutating it does not change what the second call gets."""
    VALIDATIONS.clear()
    seen: list[list[int]] = []

    @tool
    def collect(items: Annotated[list[int], AfterValidator(_counted)], batch: Batch | None = None) -> str:
        """Record the arguments, then mutate them."""
        seen.append(list(items) + (batch.items if batch else []))
        items.append(99)
        if batch:
            batch.items.clear()
        return "ok"

    binding = bind(collect)
    invocation = prepare(binding, '{"items":[1,2],"batch":{"items":[3]}}')
    assert len(VALIDATIONS) == 2
    await binding.call(invocation)
    assert len(VALIDATIONS) == 2
    await binding.call(invocation)
    assert len(VALIDATIONS) == 4
    assert seen == [[1, 2, 3], [1, 2, 3]]


async def test_field_defaults_are_fresh_for_each_call() -> None:
    """A mutable Field default filled at call time is a fresh copy: one call's mutation is not seen by the next."""
    seen: list[list[int]] = []

    @tool
    def fill(items: list[int] = Field(default=[1])) -> str:  # noqa: B008 - pydantic's idiom
        """Mutate the default."""
        seen.append(list(items))
        items.append(2)
        return "ok"

    binding = bind(fill)
    invocation = prepare(binding, "{}")
    await binding.call(invocation)
    await binding.call(invocation)
    await binding.call(prepare(binding, ""))
    assert seen == [[1], [1], [1]]


# ---------------------------------------------------------------------------------------------------
# 11. Numbers that overflow to infinity.


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1.7976931348623159e308"])
def test_float_parameter_rejects_overflow_to_infinity(number: str) -> None:
    """A float parameter rejects a literal that only a non-finite float could hold."""

    @tool
    def scale(x: float, factors: list[float] | None = None) -> str:
        """Scale."""
        return str(x)

    binding = bind(scale)
    _, rejection = reject(binding, f'{{"x":{number}}}')
    assert "$.x:" in rejection.message and "finite" in rejection.message
    _, nested = reject(binding, f'{{"x":1,"factors":[1,{number}]}}')
    assert "$.factors[1]:" in nested.message
    assert prepare(binding, '{"x":1.7976931348623157e308}').arguments.startswith(b'{"x"')


class Measured(BaseModel):
    """A plain model with a float field."""

    x: float


class Wrapper(BaseModel):
    """A model holding a model with a float field."""

    inner: Measured


@pytest.mark.parametrize(
    ("model", "arguments"),
    [(Measured, '{"x":1e400}'), (Wrapper, '{"inner":{"x":-1e400}}')],
    ids=["model-parameter", "nested-model"],
)
def test_model_float_field_rejects_overflow_to_infinity(model: type[BaseModel], arguments: str) -> None:
    """A float field of a model input rejects 1e400, as a float parameter does."""

    @tool
    def measure(value: model) -> str:  # type: ignore[valid-type]
        """Measure."""
        return "ok"

    reject(bind(measure), arguments)


async def test_any_parameter_rejects_overflow_to_infinity() -> None:
    """An Any parameter never hands the tool an infinite float."""
    seen: list[Any] = []

    @tool
    def keep(blob: Any) -> str:
        """Keep."""
        seen.append(blob)
        return "ok"

    binding = bind(keep)
    try:
        invocation = prepare(binding, '{"blob":[1e400]}')
    except InvalidInvocationError:
        return
    await binding.call(invocation)
    assert math.isfinite(seen[0][0])


# ---------------------------------------------------------------------------------------------------
# 12. Feedback paths through unions, and recursive models.


class Cat(BaseModel):
    """One union choice."""

    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    """Another union choice."""

    kind: Literal["dog"]
    good: bool


class Pet(BaseModel):
    """A discriminated union member."""

    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


class Either(BaseModel):
    """A plain (smart) union of two models."""

    pet: Cat | Dog


def test_bad_discriminator_tag_is_not_echoed() -> None:
    """An unknown discriminator tag is reported at its member without repeating the tag."""

    @tool
    def adopt(pet: Pet) -> str:
        """Adopt."""
        return "ok"

    _, rejection = reject(bind(adopt), f'{{"pet":{{"kind":"{S}","lives":1}}}}')
    assert "$.pet" in rejection.message


@pytest.mark.parametrize(("model", "path"), [(Pet, "$.pet.lives"), (Either, "$.pet.lives")], ids=["tagged", "smart"])
def test_union_member_errors_name_the_json_path(model: type[BaseModel], path: str) -> None:
    """A wrong-typed member inside a union choice is reported at its JSON path, not at a choice label."""

    @tool
    def adopt(pet: model) -> str:  # type: ignore[valid-type]
        """Adopt."""
        return "ok"

    _, rejection = reject(bind(adopt), f'{{"pet":{{"kind":"cat","lives":"{S}"}}}}')
    assert f"{path}: Input should be a valid integer" in rejection.message
    assert "$.pet.cat" not in rejection.message and "$.pet.Cat" not in rejection.message


class Node(BaseModel):
    """A recursive model."""

    value: int
    children: list["Node"] = []


def test_recursive_model_as_a_parameter_is_enforced_at_every_depth() -> None:
    """A recursive model below the top level is closed and strict at every depth."""

    @tool
    def walk(root: Node, depth: int = 0) -> str:
        """Walk."""
        return "ok"

    binding = bind(walk)
    good = '{"root":{"value":1,"children":[{"value":2,"children":[{"value":3}]}]}}'
    assert prepare(binding, good).arguments == good.encode()
    _, unknown = reject(binding, '{"root":{"value":1,"children":[{"value":2,"children":[{"value":3,"x":1}]}]}}')
    assert "$.root.children[0].children[0].x: unknown field" in unknown.message
    _, dup = reject(binding, '{"root":{"value":1,"children":[{"value":2,"children":[{"value":3,"value":3}]}]}}')
    assert "same member name twice" in dup.message


def test_recursive_model_can_be_the_single_input_model() -> None:
    """A recursive model used as the one parameter is the input object itself."""

    @tool
    def walk(root: Node) -> str:
        """Walk."""
        return "ok"

    assert prepare(bind(walk), '{"value":1,"children":[{"value":2}]}').arguments.startswith(b'{"value"')


# ---------------------------------------------------------------------------------------------------
# Rejections are explained when first read: the same message, cause and classification as ever.

REJECTED = {
    "schema": '{"name":1,"count":"' + SECRET + '"}',
    "unknown member": '{"name":"a","count":1,"colour":"' + SECRET + '"}',
    "duplicate after a schema failure": '{"name":1,"name":"' + SECRET + '","count":1}',
    "nested unknown member": '{"name":"a","count":1,"address":{"street":"s","zip":1,"x":"' + SECRET + '"}}',
    "truncated": '{"name":"a","count":"' + SECRET,
    "lone surrogate": '{"name":"\ud800' + SECRET + '","count":1}',
}


FIRST_READS: dict[str, Callable[[InvalidInvocationError], object]] = {
    "str": str,
    "classify": classify_input_rejection,
    "repr": repr,
    "traceback": traceback.format_exception,
}


@pytest.mark.parametrize("kind", ["kwargs", "model"])
@pytest.mark.parametrize("case", sorted(REJECTED))
def test_a_rejection_reads_the_same_whatever_is_read_first(kind: str, case: str) -> None:
    """The message and rejection of a refused call do not depend on what is read first, nor on the call."""
    binding = make_subject(kind).binding
    seen = set()
    for read_first in FIRST_READS.values():
        with pytest.raises(InvalidInvocationError) as info:
            prepare(binding, REJECTED[case])
        read_first(info.value)
        rejection = classify_input_rejection(info.value)
        assert rejection is not None
        assert rejection is info.value.__cause__
        text, message = str(info.value), rejection.message
        assert SECRET not in text and SECRET not in message
        assert text == message
        seen.add((text, message))
    assert len(seen) == 1


def test_a_validators_own_rejection_is_the_one_classified() -> None:
    """The InputRejection a validator raised is the very object the settled error carries."""
    raised: list[InputRejection] = []

    def rule(value: str) -> str:
        raised.append(InputRejection("note must be a greeting"))
        raise raised[-1]

    @tool(name="guarded")
    def guarded(count: int, note: Annotated[str, AfterValidator(rule)]) -> str:
        """Guarded."""
        return note

    with pytest.raises(InvalidInvocationError) as info:
        prepare(bind(guarded), '{"count":1,"note":"hi"}')
    assert classify_input_rejection(info.value) is raised[0]


def test_a_rejection_pickles_and_prints_with_its_message() -> None:
    """A refused call's error pickles with its message and prints its rejection as the direct cause."""
    with pytest.raises(InvalidInvocationError) as info:
        prepare(make_subject("kwargs").binding, REJECTED["schema"])
    restored = pickle.loads(pickle.dumps(info.value))
    assert str(restored) == str(info.value)
    printed = "".join(traceback.format_exception(info.value))
    assert "InputRejection: invalid arguments for tool 'subject'" in printed
    assert SECRET not in printed


def test_rejections_leave_no_cyclic_garbage() -> None:
    """A refused call leaves nothing for the garbage collector: its error and failure free on release."""
    contract = make_subject("kwargs").binding.contract
    request = Request(name="subject", arguments=REJECTED["schema"])
    gc.collect()
    gc.disable()
    try:
        for _ in range(50):
            with contextlib.suppress(InvalidInvocationError):
                contract.prepare(request)
        found = gc.collect()
    finally:
        gc.enable()
    assert found == 0


# -- what reaches the model: only InputRejection text and pydantic's own descriptions


def _asserting(value: str) -> str:
    assert value.islower(), f"the key {value} must be lower case"  # a validator's own check: a defect when it fails
    return value


@pytest.mark.parametrize("kind", ["kwargs", "model"])
def test_a_failed_assertion_in_a_validator_is_a_contained_defect(kind: str) -> None:
    """An AssertionError ("Assertion failed, ...") is the validator's defect: contained, its text never shown."""
    if kind == "model":

        class Keyed(BaseModel):
            key: Annotated[str, AfterValidator(_asserting)]

        @tool(name="keyed")
        def keyed_model(payload: Keyed) -> str:
            """Keyed, as a model."""
            return payload.key

        binding = bind(keyed_model)
    else:

        @tool(name="keyed")
        def keyed(key: Annotated[str, AfterValidator(_asserting)]) -> str:
            """Keyed, as parameters."""
            return key

        binding = bind(keyed)
    with pytest.raises(InvalidInvocationError) as info:
        prepare(binding, f'{{"key":"{SECRET.upper()}"}}')
    error = info.value
    assert classify_input_rejection(error) is None
    assert isinstance(error.__cause__, InputValidationError)
    assert isinstance(error.__cause__.cause, AssertionError)
    for text in (str(error), repr(error), str(error.__cause__)):
        assert SECRET.upper() not in text
        assert "Assertion failed" not in text


@pytest.mark.parametrize(
    "carried",
    [lambda value: f"bad {value}", lambda value: InputRejection(f"bad {value}")],
    ids=["its own text", "a rejection"],
)
def test_an_assertion_error_raised_as_a_known_pydantic_error_is_a_defect(carried: Callable[[str], object]) -> None:
    """pydantic's known "assertion_error", holding the validator's own text or even an InputRejection, is
    contained like an assertion: the validator's defect, not the input's rule."""

    def asserting(value: str) -> str:
        raise PydanticKnownError("assertion_error", {"error": carried(value)})

    @tool(name="keyed")
    def keyed(key: Annotated[str, AfterValidator(asserting)]) -> str:
        """Keyed."""
        return key

    with pytest.raises(InvalidInvocationError) as info:
        prepare(bind(keyed), f'{{"key":"{SECRET}"}}')
    assert classify_input_rejection(info.value) is None
    assert isinstance(info.value.__cause__, InputValidationError)
    assert SECRET not in str(info.value)


def test_a_defect_past_the_first_bad_item_leaves_the_first_problem_reported() -> None:
    """Looking again for every bad item may reach a defective validator: the first problem is reported."""

    def strict_word(value: str) -> str:
        if value == "boom":
            raise RuntimeError(f"validator defect holding {SECRET}")
        return value

    @tool(name="words")
    def words(words: list[Annotated[str, AfterValidator(strict_word)]]) -> str:
        """Words."""
        return " ".join(words)

    _, rejection = reject(bind(words), '{"words":[1,"boom"]}')
    assert rejection.message.endswith("- $.words[0]: Input should be a valid string (got an integer)")


def test_a_failed_assertion_beside_a_schema_problem_reports_the_schema_problem() -> None:
    """The schema comes first: with a wrong-typed member elsewhere, the model is told of that, not the defect."""

    @tool(name="keyed")
    def keyed(key: Annotated[str, AfterValidator(_asserting)], count: int) -> str:
        """Keyed."""
        return key

    _, rejection = reject(bind(keyed), f'{{"key":"{SECRET.upper()}","count":"1"}}')
    assert "$.count: expected integer (got a string)" in rejection.message
    assert "key" not in rejection.message.split("\n", 1)[1]


def test_a_huge_exponent_in_a_hand_written_schema_shows_no_internal_error() -> None:
    """A number Decimal cannot hold (exponent past its range) is reported without the parser's internal text."""
    schema = {"type": "object", "properties": {"x": {"type": "number", "multipleOf": 0.1}}}
    _, rejection = reject(bind(RawTool(schema)), '{"x": -1e99999999999999999999}')
    assert rejection.message.endswith("- a number is out of range (line 1, column 30)")
    assert "InvalidOperation" not in rejection.message
    assert "Internal" not in rejection.message


# -- the work a rejection can cause


@tool(name="tagged")
def _tagged(tags: list[str], scores: dict[str, int] | None = None) -> str:
    """Tagged."""
    return ",".join(tags)


def _wrong_items(count: int) -> bytes:
    return b'{"tags":[' + b",".join([b"1"] * count) + b"]}"


def test_the_admitting_validator_stops_at_the_first_bad_item() -> None:
    """An array or a map of wrong items costs one pydantic error, not one per item (pydantic's fail_fast)."""
    decoder = _tagged.input_validator()
    with pytest.raises(ValidationError) as caught:
        decoder(_wrong_items(10_000))
    assert caught.value.error_count() == 1
    with pytest.raises(ValidationError) as caught:
        decoder(b'{"tags":[],"scores":{' + b",".join(b'"k%d":"x"' % i for i in range(100)) + b"}}")
    assert caught.value.error_count() == 1
    assert decoder(b'{"tags":["a","b"],"scores":{"a":1}}') == {"tags": ["a", "b"], "scores": {"a": 1}}


def test_a_small_document_still_reports_every_bad_item() -> None:
    """Under 16 KiB every bad item is looked for again, so the repeated problem is one line with its indices."""
    _, rejection = reject(bind(_tagged), b'{"tags":[1,"a",2,3]}')
    assert rejection.message == (
        "invalid arguments for tool 'tagged' (1 problem):\n"
        "- $.tags[0, 2, 3]: Input should be a valid string (got an integer)"
    )


def test_a_large_document_of_bad_items_is_described_from_the_first_and_says_there_may_be_more() -> None:
    """1 MiB of one-byte wrong items gives one line and "possibly more", from one pydantic error."""
    _, rejection = reject(bind(_tagged), _wrong_items((MAX_INPUT_BYTES - 12) // 2))
    assert rejection.message == (
        "invalid arguments for tool 'tagged' (at least 1 problem):\n"
        "- $.tags[0]: Input should be a valid string (got an integer)\n"
        "- ... and possibly more"
    )


class _Basket(BaseModel):
    """A model input: its own (prebuilt) validator runs, which does not stop at the first bad item."""

    items: list[int]


def test_more_errors_than_are_read_are_described_by_the_advertised_schema() -> None:
    """Past MAX_DESCRIBED pydantic errors none is materialized: the JSON Schema describes the first ones."""

    @tool(name="basket")
    def basket(basket: _Basket) -> str:
        """Basket."""
        return "ok"

    count = MAX_DESCRIBED + 1
    _, rejection = reject(bind(basket), b'{"items":[' + b",".join([b'""'] * count) + b"]}")
    assert rejection.message == (  # the schema's errors are read up to the same bound
        "invalid arguments for tool 'basket' (at least 1 problem):\n"
        f"- $.items[0, 1, 2, 3, 4, 5, … ({MAX_DESCRIBED} items)]: expected integer (got a string)\n"
        "- ... and possibly more"
    )


def test_more_errors_than_are_read_that_the_schema_cannot_see_are_counted() -> None:
    """When only validators failed, past MAX_DESCRIBED errors the model is told how many values are not valid."""

    def odd(value: int) -> int:
        if value % 2 == 0:
            raise ValueError(f"{value} is even")
        return value

    class Odds(BaseModel):
        items: list[Annotated[int, AfterValidator(odd)]]

    @tool(name="odds")
    def odds(odds: Odds) -> str:
        """Odds."""
        return "ok"

    count = MAX_DESCRIBED + 1
    _, rejection = reject(bind(odds), b'{"items":[' + b",".join([b"2"] * count) + b"]}")
    assert rejection.message == (
        f"invalid arguments for tool 'odds' (at least 1 problem):\n- {count} values are not valid here\n"
        "- ... and possibly more"
    )


# ---------------------------------------------------------------------------------------------------
# Rejection messages kept for reuse


@tool(name="pair")
def pair(a: int, b: int, note: str | None = None) -> int:
    """Pair."""
    return a + b


# Pairs of arguments with the same problems (the message is kept after the first) and arguments whose
# problems differ only in what was sent or whether it was sent (the message differs).
REUSED = [
    b'{"a": 1}',
    b'{"a": 2}',
    b'{"a": "1", "b": 2}',
    b'{"a": "2", "b": 3}',
    b'{"a": [1], "b": 2}',
    b'{"a": null, "b": 2}',
    b'{"a": 1, "b": 2, "c": 3}',
    b'{"a": 1, "b": 2, "d": 3}',
    b'{"a": 1, "b": 2, "note": 5}',
    b'{"a": 1, "b": 2, "note": null, "x": 1}',
    b'{"b": "1"}',
    b'{"a": 1, "a": 2}',
]


def test_a_kept_message_is_the_one_a_fresh_contract_writes() -> None:
    """Rejections with the problems of earlier ones get the message a contract that never saw them writes."""
    warm = bind(pair)
    for arguments in REUSED * 2:
        _, kept = reject(warm, arguments)
        _, fresh = reject(bind(pair), arguments)
        assert kept.message == fresh.message
    assert len(warm.contract._explainer._messages) == 9  # pyright: ignore[reportPrivateUsage] - one per distinct problem list
    _, wrong = reject(warm, b'{"a": [1], "b": 2}')
    assert wrong.message.endswith("- $.a: Input should be a valid integer (got an array)")


def test_a_message_in_a_validators_own_words_is_not_kept() -> None:
    """A problem pydantic does not word from the schema (a custom error) is described again each time."""

    def checked(value: str) -> str:
        raise PydanticCustomError("not_ok", f"{value} is not ok")

    @tool(name="custom")
    def custom(key: Annotated[str, AfterValidator(checked)]) -> str:
        """Custom."""
        return key

    binding = bind(custom)
    for _ in range(2):
        _, rejection = reject(binding, f'{{"key":"{SECRET}"}}')
        assert rejection.message.endswith("(1 problem):\n- $.key: the value is not valid here")
    assert binding.contract._explainer._messages == {}  # pyright: ignore[reportPrivateUsage]


def test_the_kept_messages_are_bounded() -> None:
    """Past its bound, a contract starts its kept messages again; every message stays right."""
    binding = bind(pair)
    size = _explain._MEMO_SIZE  # pyright: ignore[reportPrivateUsage]
    for index in range(size + 3):
        _, rejection = reject(binding, f'{{"a": 1, "b": 2, "zz{index}": 1}}')
        assert rejection.message.startswith(f"invalid arguments for tool 'pair' (1 problem):\n- $.zz{index}: unknown")
    assert len(binding.contract._explainer._messages) == 3  # pyright: ignore[reportPrivateUsage]
