"""Tests for scopetool._input: InputRequest, Continuation and the input-request flow end to end."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

from scopetool import (
    MAX_INPUT_BYTES,
    Admission,
    Continuation,
    Definition,
    IdempotencyKey,
    InputDecoder,
    InputRequest,
    InvalidInputRequestError,
    InvalidOutputError,
    Invocation,
    Output,
    Request,
    Result,
    ScopetoolError,
    Signature,
    bind,
)
from scopetool import _schema as schema_module

BIG = 123456789012345678901234567890
SECRET = "hunter2-SECRET-value"


def request(**overrides: Any) -> InputRequest:
    """A small valid input request; keyword arguments replace its parts."""
    parts: dict[str, Any] = {
        "prompt": "Approve the write?",
        "response_schema": {"type": "boolean"},
        "continuation_state": {"record": "draft"},
    }
    parts.update(overrides)
    return InputRequest(**parts)


# --------------------------------------------------------------------------------------------------
# Construction: JSON values given as Python data


def test_values_are_kept_as_given() -> None:
    """Prompt, schema and state read back as the JSON values they were built from."""
    req = InputRequest(
        prompt={"text": "Approve?", "items": [1, "two", None, True]},
        response_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
        continuation_state=["a", {"b": False}],
    )
    assert req.prompt == {"text": "Approve?", "items": [1, "two", None, True]}
    assert req.response_schema == {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    assert req.continuation_state == ["a", {"b": False}]


def test_continuation_state_defaults_to_null() -> None:
    """Without a continuation_state the state is JSON null."""
    req = InputRequest(prompt="p", response_schema=True)
    assert req.continuation_state is None
    assert req.continuation(1).state is None


@pytest.mark.parametrize("value", [None, "", {}, []], ids=["null", "empty-string", "empty-object", "empty-array"])
def test_empty_like_values_are_valid(value: Any) -> None:
    """null, "", {} and [] are valid prompts, states and answers."""
    req = InputRequest(prompt=value, response_schema={}, continuation_state=value)
    continuation = req.continuation(value)
    assert req.prompt == value
    assert continuation.state == value
    assert continuation.response == value


@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        frozenset({"a"}),
        object(),
        b"bytes",
        (1, 2),
        float("nan"),
        float("inf"),
        float("-inf"),
        {1: "non-str key"},
        {("a",): 1},
        {"nested": [{"deep": float("nan")}]},
        {"nested": {2: 1}},
        [object()],
        "\ud800",
        {"\udc00": 1},
    ],
    ids=[
        "set",
        "frozenset",
        "object",
        "bytes",
        "tuple",
        "nan",
        "inf",
        "-inf",
        "int-key",
        "tuple-key",
        "nested-nan",
        "nested-int-key",
        "nested-object",
        "lone-surrogate",
        "lone-surrogate-key",
    ],
)
@pytest.mark.parametrize("part", ["prompt", "continuation_state", "response"])
def test_non_json_values_rejected(value: Any, part: str) -> None:
    """A value that is not JSON (sets, objects, NaN, non-str keys, lone surrogates) is refused."""
    with pytest.raises(InvalidInputRequestError):
        if part == "response":
            request(response_schema=True).continuation(value)
        else:
            request(**{part: value})


@pytest.mark.parametrize(
    "schema",
    [{"enum": {1, 2}}, {"const": float("nan")}, {1: True}, {"type": object()}],
    ids=["set", "nan", "int-key", "object"],
)
def test_non_json_schema_rejected(schema: Any) -> None:
    """A response schema holding non-JSON values is refused."""
    with pytest.raises(InvalidInputRequestError):
        request(response_schema=schema)


def test_invalid_input_request_error_hierarchy() -> None:
    """InvalidInputRequestError is a ScopetoolError and a ValueError."""
    assert issubclass(InvalidInputRequestError, ScopetoolError)
    assert issubclass(InvalidInputRequestError, ValueError)


# -- size limits


@pytest.mark.parametrize("part", ["prompt", "continuation_state"])
def test_string_value_at_the_limit_is_admitted(part: str) -> None:
    """A value whose encoding is exactly MAX_INPUT_BYTES (quotes included) is admitted."""
    value = "x" * (MAX_INPUT_BYTES - 2)
    req = request(**{part: value})
    assert getattr(req, part) == value


@pytest.mark.parametrize("part", ["prompt", "continuation_state"])
def test_string_value_one_byte_over_the_limit_is_rejected(part: str) -> None:
    """A value whose encoding is MAX_INPUT_BYTES + 1 bytes is refused."""
    with pytest.raises(InvalidInputRequestError, match="exceeds"):
        request(**{part: "x" * (MAX_INPUT_BYTES - 1)})


def test_limit_counts_utf8_bytes_not_characters() -> None:
    """The limit is on encoded UTF-8 bytes: two-byte characters count twice."""
    fits = "é" * (MAX_INPUT_BYTES // 2 - 1)  # 2 * (N/2 - 1) + 2 quotes == N bytes
    assert request(prompt=fits).prompt == fits
    with pytest.raises(InvalidInputRequestError):
        request(prompt="é" * (MAX_INPUT_BYTES // 2))  # N + 2 bytes, though only N/2 characters


def test_schema_at_the_limit_is_admitted_and_over_rejected() -> None:
    """A response schema of exactly MAX_INPUT_BYTES encoded is admitted; one byte more is refused."""
    pad = MAX_INPUT_BYTES - len('{"description":""}')
    req = request(response_schema={"description": "x" * pad})
    assert len(req.response_schema["description"]) == pad
    with pytest.raises(InvalidInputRequestError, match="response_schema"):
        request(response_schema={"description": "x" * (pad + 1)})


def test_answer_at_the_limit_is_admitted_and_over_rejected() -> None:
    """An answer of exactly MAX_INPUT_BYTES encoded is admitted; one byte more is refused."""
    req = request(response_schema={"type": "string"})
    assert req.continuation("x" * (MAX_INPUT_BYTES - 2)).response == "x" * (MAX_INPUT_BYTES - 2)
    with pytest.raises(InvalidInputRequestError, match="exceeds"):
        req.continuation("x" * (MAX_INPUT_BYTES - 1))


# -- exact integers


def test_big_integer_state_round_trips_exactly() -> None:
    """A state integer beyond 64 bits comes back exactly, as an int."""
    continuation = request(continuation_state=BIG).continuation(True)
    assert continuation.state == BIG
    assert type(continuation.state) is int
    assert continuation.state_json == b"123456789012345678901234567890"


def test_big_integers_survive_nested_in_prompt_and_state() -> None:
    """Integers beyond double precision stay exact wherever they are nested."""
    req = request(prompt={"n": [BIG, -BIG]}, continuation_state={"ids": [9007199254740993]})
    assert req.prompt == {"n": [BIG, -BIG]}
    assert req.continuation(False).state == {"ids": [9007199254740993]}


def test_float_state_is_encoded_as_given() -> None:
    """A float kept in the state is stored with its shortest exact JSON spelling."""
    req = request(continuation_state={"ratio": 0.5, "cents": 1250, "tiny": 1e-7})
    assert req.continuation(True).state_json == b'{"cents":1250,"ratio":0.5,"tiny":1e-07}'
    assert float(req.continuation(True).state["ratio"]) == 0.5


def test_float_state_equals_the_stored_float() -> None:
    """A float in the continuation state reads back equal to the float the tool stored."""
    req = request(continuation_state={"ratio": 0.5})
    assert req.continuation_state == {"ratio": 0.5}
    assert req.continuation(True).state["ratio"] * 2 == 1.0


def test_to_dict_with_floats_is_json_ready() -> None:
    """to_dict() of a request holding floats can be encoded by json.dumps."""
    req = request(prompt={"amount": 12.5}, response_schema={"maximum": 1.5}, continuation_state=[0.25])
    assert json.loads(json.dumps(req.to_dict())) == {
        "prompt": {"amount": 12.5},
        "response_schema": {"maximum": 1.5},
        "continuation_state": [0.25],
    }


# --------------------------------------------------------------------------------------------------
# The response schema


def test_boolean_schemas_are_accepted() -> None:
    """`true` accepts any answer and `false` none."""
    assert request(response_schema=True).continuation({"any": ["thing"]}).response == {"any": ["thing"]}
    with pytest.raises(InvalidInputRequestError):
        request(response_schema=False).continuation(None)


@pytest.mark.parametrize("schema", [[], "string", 1, None, 1.5], ids=["array", "str", "int", "none", "float"])
def test_schema_must_be_object_or_boolean(schema: Any) -> None:
    """A schema that is neither an object nor a boolean is refused."""
    with pytest.raises(InvalidInputRequestError, match="JSON Schema"):
        request(response_schema=schema)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "nope"},
        {"minLength": -1},
        {"required": "ok"},
        {"properties": {"a": 5}},
        {"enum": "not-an-array"},
        {"$ref": "#/$defs/missing"},
    ],
    ids=["bad-type", "negative-minLength", "required-str", "property-not-schema", "enum-str", "dangling-ref"],
)
def test_invalid_schema_rejected(schema: dict[str, Any]) -> None:
    """A schema that breaks the metaschema, or has an unresolved local $ref, is refused."""
    with pytest.raises(InvalidInputRequestError, match="not a valid JSON Schema"):
        request(response_schema=schema)


def test_remote_ref_rejected() -> None:
    """A $ref to a remote URL is refused rather than fetched."""
    with pytest.raises(InvalidInputRequestError, match="not a valid JSON Schema"):
        request(response_schema={"$ref": "https://example.com/s.json"})


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server serving a valid schema; yields its URL and the paths it was asked for."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = b'{"type": "boolean"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/s.json", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_remote_ref_is_never_fetched(schema_server: tuple[str, list[str]]) -> None:
    """A $ref to a reachable server holding a valid schema is refused without any request reaching it."""
    url, hits = schema_server
    with pytest.raises(InvalidInputRequestError):
        request(response_schema={"$ref": url})
    with pytest.raises(InvalidInputRequestError):
        request(response_schema={"properties": {"a": {"$ref": url}}})
    assert hits == []


def test_file_ref_is_not_loaded(tmp_path: Path) -> None:
    """A $ref to an existing local file holding a valid schema is refused."""
    target = tmp_path / "s.json"
    target.write_text('{"type": "boolean"}')
    with pytest.raises(InvalidInputRequestError):
        request(response_schema={"$ref": target.as_uri()})


def test_local_defs_ref_works() -> None:
    """A $ref into the schema's own $defs resolves and is enforced."""
    req = request(
        response_schema={
            "$defs": {"choice": {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}},
            "$ref": "#/$defs/choice",
        }
    )
    assert req.continuation({"ok": True}).response == {"ok": True}
    with pytest.raises(InvalidInputRequestError):
        req.continuation({"ok": "yes"})
    with pytest.raises(InvalidInputRequestError):
        req.continuation({})


def test_formats_are_asserted() -> None:
    """`format` is enforced, not just an annotation."""
    req = request(response_schema={"type": "string", "format": "date"})
    assert req.continuation("2024-02-29").response == "2024-02-29"
    with pytest.raises(InvalidInputRequestError):
        req.continuation("yesterday")


def test_schema_is_snapshotted() -> None:
    """Changing the dict a request was built from changes neither its schema nor its validation."""
    schema: dict[str, Any] = {"type": "boolean"}
    state: dict[str, Any] = {"items": [1]}
    req = InputRequest(prompt="p", response_schema=schema, continuation_state=state)
    schema["type"] = "string"
    state["items"].append(2)
    assert req.response_schema == {"type": "boolean"}
    assert req.continuation_state == {"items": [1]}
    assert req.continuation(True).response is True
    with pytest.raises(InvalidInputRequestError):
        req.continuation("text")


def test_accessors_hand_out_fresh_copies() -> None:
    """Mutating what prompt, response_schema and continuation_state return changes nothing."""
    req = request(prompt={"a": [1]}, response_schema={"type": "object"}, continuation_state={"s": [1]})
    req.prompt["a"].append(2)
    req.response_schema["type"] = "string"
    req.continuation_state["s"].append(2)
    assert req.prompt == {"a": [1]}
    assert req.response_schema == {"type": "object"}
    assert req.continuation_state == {"s": [1]}


# --------------------------------------------------------------------------------------------------
# InputRequest.continuation: validating the answer


OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["approved"],
    "properties": {"approved": {"type": "boolean"}, "reason": {"enum": ["budget", "risk"]}},
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "answer",
    [
        "yes",
        1,
        None,
        [True],
        {"approved": "true"},
        {},
        {"reason": "budget"},
        {"approved": True, "reason": "other"},
        {"approved": True, "extra": 1},
    ],
    ids=[
        "string",
        "integer",
        "null",
        "array",
        "member-wrong-type",
        "empty-object",
        "missing-required",
        "enum-violation",
        "unknown-member",
    ],
)
def test_answer_breaking_the_schema_is_rejected(answer: Any) -> None:
    """An answer of the wrong type, missing a required member or outside an enum is refused."""
    with pytest.raises(InvalidInputRequestError, match="does not satisfy the response schema"):
        request(response_schema=OBJECT_SCHEMA).continuation(answer)


def test_answer_satisfying_the_schema_is_accepted() -> None:
    """An answer that satisfies the schema becomes the continuation's response."""
    continuation = request(response_schema=OBJECT_SCHEMA).continuation({"approved": False, "reason": "risk"})
    assert continuation.response == {"approved": False, "reason": "risk"}
    assert continuation.state == {"record": "draft"}


def test_rejection_names_the_problem() -> None:
    """The rejection names the missing member and the expected type, so a driver can explain it."""
    req = request(response_schema=OBJECT_SCHEMA)
    with pytest.raises(InvalidInputRequestError, match=r"\$\.approved: missing required field"):
        req.continuation({})
    with pytest.raises(InvalidInputRequestError, match=r"\$\.approved: expected boolean"):
        req.continuation({"approved": 1})


@pytest.mark.parametrize(
    ("schema", "answer"),
    [
        ({"type": "boolean"}, SECRET),
        ({"type": "object", "required": ["ok"]}, {"note": SECRET}),
        ({"enum": ["yes", "no"]}, SECRET),
        ({"const": "yes"}, SECRET),
        ({"type": "string", "pattern": "^[0-9]+$"}, SECRET),
        ({"type": "string", "maxLength": 3}, SECRET),
        ({"type": "string", "format": "email"}, SECRET),
        ({"not": {"type": "string"}}, SECRET),
        ({"type": "object", "properties": {"a": {"type": "integer"}}}, {"a": SECRET}),
        ({"type": "object", "properties": {}, "additionalProperties": False}, {"x": SECRET}),
        ({"type": "array", "items": {"type": "integer"}}, ["ok", SECRET]),
        ({"oneOf": [{"type": "integer"}, {"type": "boolean"}]}, SECRET),
    ],
    ids=[
        "type",
        "required",
        "enum",
        "const",
        "pattern",
        "maxLength",
        "format",
        "not",
        "nested-type",
        "additional-value",
        "items",
        "oneOf",
    ],
)
@pytest.mark.parametrize("given_as", ["python", "json"])
def test_rejection_never_echoes_the_answer(schema: dict[str, Any], answer: Any, given_as: str) -> None:
    """The rejection message (and the exception's text) never contains the rejected answer's strings."""
    req = request(response_schema=schema)
    with pytest.raises(InvalidInputRequestError) as caught:
        if given_as == "python":
            req.continuation(answer)
        else:
            req.continuation_from_json(json.dumps(answer))
    assert SECRET not in str(caught.value)
    assert SECRET not in repr(caught.value)
    assert caught.value.__cause__ is None


def test_exact_big_integer_const_from_python() -> None:
    """Under {"const": 9007199254740993} the Python answer 9007199254740993 passes and ...992 fails."""
    req = request(response_schema={"const": 9007199254740993})
    assert req.continuation(9007199254740993).response == 9007199254740993
    with pytest.raises(InvalidInputRequestError):
        req.continuation(9007199254740992)


def test_beyond_64_bit_integers_compare_exactly() -> None:
    """Integers beyond 64 bits are validated exactly against const and maximum."""
    req = request(response_schema={"const": BIG})
    assert req.continuation(BIG).response == BIG
    with pytest.raises(InvalidInputRequestError):
        req.continuation(BIG + 1)
    bounded = request(response_schema={"maximum": BIG})
    assert bounded.continuation_from_json(str(BIG)).response == BIG
    with pytest.raises(InvalidInputRequestError):
        bounded.continuation_from_json(str(BIG + 1))


def test_fractional_notation_numbers_compare_exactly() -> None:
    """A number written as 9007199254740993.0 is validated by its exact value, not a rounded double."""
    req = request(response_schema={"maximum": 9007199254740992})
    with pytest.raises(InvalidInputRequestError):
        req.continuation_from_json("9007199254740993.0")


# --------------------------------------------------------------------------------------------------
# Continuation: frozen state and response


def test_continuation_snapshots_the_answer() -> None:
    """Changing the answer object after continuation() does not change the continuation."""
    answer: dict[str, Any] = {"approved": True, "notes": ["a"]}
    continuation = request(response_schema=True).continuation(answer)
    answer["approved"] = False
    answer["notes"].append("b")
    assert continuation.response == {"approved": True, "notes": ["a"]}


def test_continuation_hands_out_fresh_copies() -> None:
    """Each read of state and response is a fresh copy; mutating one changes nothing."""
    continuation = request(response_schema=True, continuation_state={"s": [1]}).continuation({"r": [2]})
    first_state, first_response = continuation.state, continuation.response
    assert first_state is not continuation.state
    assert first_response is not continuation.response
    first_state["s"].append(99)
    first_state["new"] = True
    first_response["r"].clear()
    assert continuation.state == {"s": [1]}
    assert continuation.response == {"r": [2]}


def test_continuation_attributes_cannot_be_replaced() -> None:
    """A continuation's state and response cannot be reassigned."""
    continuation = request().continuation(True)
    with pytest.raises(AttributeError):
        continuation.state = {"forged": True}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        continuation.response = False  # type: ignore[misc]
    assert continuation.response is True


def test_continuation_json_is_canonical() -> None:
    """state_json and response_json are compact, with members sorted."""
    continuation = request(response_schema=True, continuation_state={"b": 1, "a": [2, "é"]}).continuation(
        {"z": None, "y": True}
    )
    assert continuation.state_json == '{"a":[2,"é"],"b":1}'.encode()
    assert continuation.response_json == b'{"y":true,"z":null}'


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"state": b"null", "response": b"true"}, {"state": b"null", "response": b"true", "_token": object()}],
    ids=["no-arguments", "bytes", "forged-token"],
)
def test_continuation_cannot_be_constructed_directly(kwargs: dict[str, Any]) -> None:
    """Only InputRequest.continuation makes a Continuation."""
    with pytest.raises(TypeError):
        Continuation(**kwargs)


def test_continuation_equality_and_hash() -> None:
    """Continuations with the same state and response are equal and hash alike; others differ."""
    req = request(response_schema=True)
    a, b = req.continuation({"x": 1, "y": 2}), req.continuation({"y": 2, "x": 1})
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != req.continuation({"x": 1})
    assert a != request(response_schema=True, continuation_state="other").continuation({"x": 1, "y": 2})
    assert a != object()
    assert (a == "not a continuation") is False


def test_python_and_json_answers_give_equal_continuations() -> None:
    """The same answer as Python data or as (non-canonical) JSON text gives an equal continuation."""
    req = request(response_schema={"type": "object"})
    assert req.continuation({"b": [1, True], "a": "x"}) == req.continuation_from_json(' { "a" : "x", "b": [1,true] } ')


def test_continuation_repr_hides_values() -> None:
    """A continuation's repr shows sizes, not the state or answer."""
    continuation = request(response_schema=True, continuation_state=SECRET).continuation(SECRET)
    assert SECRET not in repr(continuation)
    assert "bytes" in repr(continuation)


# --------------------------------------------------------------------------------------------------
# continuation_from_json: the answer as raw JSON text


@pytest.mark.parametrize(
    "raw",
    [
        '{"a": 1, "a": 2}',
        '{"outer": {"b": 1, "b": 1}}',
        '[{"k": 1, "k": 2}]',
        '{"a": 1, "\\u0061": 2}',
        "1 2",
        "{} {}",
        '"a" x',
        "true,",
        "NaN",
        "Infinity",
        "-Infinity",
        "[1, NaN]",
        "1e400",
        '"\\ud800"',
        '"\\udc00"',
        '"a\\ud800b"',
        '{"\\ud800": 1}',
        '"\ud800"',
        b'"\xff"',
        b"\xef\xbb\xbftrue",
        "",
        "   ",
        "[1,]",
        "{'a': 1}",
    ],
    ids=[
        "duplicate-keys",
        "nested-duplicate",
        "duplicate-in-array",
        "escaped-duplicate",
        "trailing-value",
        "two-objects",
        "trailing-garbage",
        "trailing-comma",
        "nan",
        "infinity",
        "-infinity",
        "nested-nan",
        "overflow",
        "lone-high-surrogate-escape",
        "lone-low-surrogate-escape",
        "embedded-lone-surrogate",
        "lone-surrogate-key",
        "raw-lone-surrogate",
        "invalid-utf8",
        "bom",
        "empty",
        "blank",
        "array-trailing-comma",
        "single-quotes",
    ],
)
def test_continuation_from_json_rejects_non_i_json(raw: str | bytes) -> None:
    """Raw answers must be one strict RFC 7493 document."""
    with pytest.raises(InvalidInputRequestError):
        request(response_schema=True).continuation_from_json(raw)


def test_continuation_from_json_accepts_bytes_str_and_surrounding_space() -> None:
    """Valid JSON as str or bytes, with white space around it and a surrogate pair escape, is accepted."""
    req = request(response_schema={"type": "string"})
    assert req.continuation_from_json(' "\\ud83d\\ude00" ').response == "\U0001f600"
    assert req.continuation_from_json('"é"'.encode()).response == "é"


def test_continuation_from_json_size_limit() -> None:
    """A raw answer of MAX_INPUT_BYTES is admitted; one byte more (even of white space) is refused."""
    req = request(response_schema=True)
    at_limit = '"' + "x" * (MAX_INPUT_BYTES - 2) + '"'
    assert len(req.continuation_from_json(at_limit).response) == MAX_INPUT_BYTES - 2
    with pytest.raises(InvalidInputRequestError, match="exceeds"):
        req.continuation_from_json('"' + "x" * (MAX_INPUT_BYTES - 1) + '"')
    with pytest.raises(InvalidInputRequestError, match="exceeds"):
        req.continuation_from_json(" " * MAX_INPUT_BYTES + "1")


def test_continuation_from_json_exact_big_integers() -> None:
    """Under {"const": 9007199254740993}, 9007199254740993 is accepted and 9007199254740992 rejected."""
    req = request(response_schema={"const": 9007199254740993})
    continuation = req.continuation_from_json("9007199254740993")
    assert continuation.response == 9007199254740993
    assert continuation.response_json == b"9007199254740993"
    with pytest.raises(InvalidInputRequestError):
        req.continuation_from_json("9007199254740992")


def test_continuation_from_json_validates_against_schema() -> None:
    """A well-formed raw answer that breaks the schema is refused."""
    req = request(response_schema=OBJECT_SCHEMA)
    with pytest.raises(InvalidInputRequestError, match="does not satisfy"):
        req.continuation_from_json('{"approved": "yes"}')
    assert req.continuation_from_json('{"approved": true}').response == {"approved": True}


# --------------------------------------------------------------------------------------------------
# JSON round trip: to_json / from_json / to_dict


def full_request() -> InputRequest:
    """A request using every part, with a big integer and a non-ASCII string."""
    return InputRequest(
        prompt={"text": "Send 12.50 to ACME-7?", "lang": "fr-é"},
        response_schema=OBJECT_SCHEMA,
        continuation_state={"to": "ACME-7", "cents": 1250, "nonce": BIG},
    )


def test_to_json_is_canonical() -> None:
    """to_json is one compact document with sorted members and exact integers."""
    data = full_request().to_json()
    assert isinstance(data, bytes)
    assert data.startswith(b'{"continuation_state":{"cents":1250,"nonce":123456789012345678901234567890,"to":"ACME-7"}')
    assert b" " not in data.replace(b"Send 12.50 to ACME-7?", b"")
    assert list(json.loads(data)) == ["continuation_state", "prompt", "response_schema"]


def test_json_round_trip() -> None:
    """from_json(to_json()) gives an equal request with the same hash and the same bytes."""
    original = full_request()
    restored = InputRequest.from_json(original.to_json())
    assert restored == original
    assert hash(restored) == hash(original)
    assert restored.to_json() == original.to_json()
    assert restored.continuation_state["nonce"] == BIG
    assert InputRequest.from_json(original.to_json().decode()) == original


def test_round_tripped_request_validates_like_the_original() -> None:
    """A restored request enforces the same schema and mints equal continuations."""
    original = full_request()
    restored = InputRequest.from_json(original.to_json())
    assert restored.continuation({"approved": True}) == original.continuation({"approved": True})
    with pytest.raises(InvalidInputRequestError):
        restored.continuation({"approved": "yes"})


def test_from_json_accepts_non_canonical_text() -> None:
    """Whitespace and member order do not matter to from_json; the result is canonical."""
    raw = (
        ' {"response_schema": {"type":"boolean"}, "prompt" : "Approve the write?",\n'
        ' "continuation_state": {"record": "draft"}} '
    )
    assert InputRequest.from_json(raw) == request()
    assert InputRequest.from_json(raw).to_json() == request().to_json()


def test_from_json_without_state_means_null() -> None:
    """A persisted request without continuation_state has a null state."""
    req = InputRequest.from_json('{"prompt": "p", "response_schema": true}')
    assert req.continuation_state is None
    assert req == InputRequest(prompt="p", response_schema=True, continuation_state=None)


@pytest.mark.parametrize(
    "raw",
    [
        '{"prompt": "p", "response_schema": true, "continuation_state": null, "extra": 1}',
        '{"prompt": "p", "response_schema": true, "Prompt": "q"}',
        '{"response_schema": true, "continuation_state": 1}',
        '{"prompt": "p", "continuation_state": 1}',
        "{}",
        "[]",
        '"prompt"',
        "null",
        "42",
        "true",
    ],
    ids=[
        "unknown-member",
        "case-variant-member",
        "missing-prompt",
        "missing-schema",
        "empty-object",
        "array",
        "string",
        "null",
        "number",
        "boolean",
    ],
)
def test_from_json_rejects_wrong_shapes(raw: str) -> None:
    """Unknown members, missing prompt or response_schema, and non-object documents are refused."""
    with pytest.raises(InvalidInputRequestError):
        InputRequest.from_json(raw)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "{",
        '{"prompt": "p", "response_schema": true',
        '{"prompt": "p", "prompt": "q", "response_schema": true}',
        '{"prompt": "p", "response_schema": true} {}',
        '{"prompt": NaN, "response_schema": true}',
        '{"prompt": "\\ud800", "response_schema": true}',
        b'{"prompt": "\xff", "response_schema": true}',
    ],
    ids=["empty", "open-brace", "truncated", "duplicate", "trailing", "nan", "lone-surrogate", "invalid-utf8"],
)
def test_from_json_rejects_invalid_json(raw: str | bytes) -> None:
    """Text that is not one strict JSON document is refused."""
    with pytest.raises(InvalidInputRequestError):
        InputRequest.from_json(raw)


def test_from_json_rejects_invalid_schema_and_oversize() -> None:
    """from_json re-runs construction: invalid schemas and oversize documents are refused."""
    with pytest.raises(InvalidInputRequestError, match="not a valid JSON Schema"):
        InputRequest.from_json('{"prompt": "p", "response_schema": {"type": "nope"}}')
    with pytest.raises(InvalidInputRequestError, match="JSON Schema"):
        InputRequest.from_json('{"prompt": "p", "response_schema": []}')
    with pytest.raises(InvalidInputRequestError, match="exceeds"):
        InputRequest.from_json('{"prompt": "' + "x" * MAX_INPUT_BYTES + '", "response_schema": true}')


def test_to_dict_has_exactly_three_keys() -> None:
    """to_dict holds exactly prompt, response_schema and continuation_state, as fresh copies."""
    req = full_request()
    first = req.to_dict()
    assert set(first) == {"prompt", "response_schema", "continuation_state"}
    assert first["prompt"] == req.prompt
    assert first["response_schema"] == OBJECT_SCHEMA
    assert first["continuation_state"]["nonce"] == BIG
    first["continuation_state"]["cents"] = 0
    assert req.to_dict()["continuation_state"]["cents"] == 1250


def test_request_equality_and_hash() -> None:
    """Requests are equal exactly when prompt, schema and state are; equal requests hash alike."""
    assert request() == request()
    assert hash(request()) == hash(request())
    assert request() != request(prompt="other")
    assert request() != request(response_schema={"type": "string"})
    assert request() != request(continuation_state=None)
    assert request() != request().to_json()
    assert len({request(), request(), request(prompt="x")}) == 2


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(prompt=JSON_VALUES, state=JSON_VALUES, answer=JSON_VALUES)
def test_round_trip_property(prompt: Any, state: Any, answer: Any) -> None:
    """Any JSON value (without floats) survives construction, continuation and the JSON round trip."""
    req = InputRequest(prompt=prompt, response_schema=True, continuation_state=state)
    restored = InputRequest.from_json(req.to_json())
    assert restored == req
    assert restored.prompt == prompt
    continuation = restored.continuation(answer)
    assert continuation.state == state
    assert continuation.response == answer
    assert continuation == req.continuation_from_json(json.dumps(answer))


# --------------------------------------------------------------------------------------------------
# End to end: a Tool returns an input request, then resumes with the continuation


class Write(BaseModel):
    """Write a record after a person approves it."""

    record: str


APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["approved"],
    "properties": {"approved": {"type": "boolean"}},
    "additionalProperties": False,
}


class ApprovalTool:
    """A Tool around a Signature that asks before writing and resumes from its continuation."""

    signature = Signature(Write, str)

    def __init__(self) -> None:
        self.writes: list[str] = []
        self.seen: list[Any] = []

    def definition(self) -> Definition:
        return self.signature.definition("write_record", "Write a record once approved.")

    def input_validator(self) -> InputDecoder[Write]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        value = self.signature.decode(invocation)
        continuation = invocation.continuation
        if continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt=f"Write {value.record}?",
                    response_schema=APPROVAL_SCHEMA,
                    continuation_state={"record": value.record, "version": BIG},
                )
            )
        state, answer = continuation.state, continuation.response
        self.seen.append((state, answer))
        if not answer["approved"]:
            return Result(output=self.signature.encode("declined"))
        self.writes.append(state["record"])
        return Result(output=self.signature.encode(f"wrote {state['record']} v{state['version']}"))


async def test_tool_asks_then_resumes_with_the_continuation() -> None:
    """The first call requests input; the persisted, answered request resumes the same call to completion."""
    tool = ApprovalTool()
    binding = bind(tool)
    call = Request(name="write_record", arguments='{"record": "draft"}')
    key = IdempotencyKey("run-1/call-1")

    first = await binding.call(binding.contract.prepare(call, Admission(idempotency_key=key)))
    assert first.input_request is not None
    assert first.output == Output()
    assert tool.writes == []
    binding.contract.validate_result(first)
    assert first.input_request.prompt == "Write draft?"

    persisted = first.input_request.to_json()
    pending = InputRequest.from_json(persisted)
    continuation = pending.continuation({"approved": True})

    invocation = binding.contract.prepare(call, Admission(idempotency_key=key, continuation=continuation))
    assert invocation.continuation is continuation
    assert invocation.idempotency_key == key
    resumed = await binding.call(invocation)
    binding.contract.validate_result(resumed)
    assert resumed.input_request is None
    assert resumed.output.text() == f"wrote draft v{BIG}"
    assert tool.writes == ["draft"]
    assert tool.seen == [({"record": "draft", "version": BIG}, {"approved": True})]


async def test_tool_resumed_with_a_refusal_does_not_write() -> None:
    """A continuation carrying a refusal completes the call without the external effect."""
    tool = ApprovalTool()
    binding = bind(tool)
    call = Request(name="write_record", arguments='{"record": "draft"}')
    first = await binding.call(binding.contract.prepare(call))
    assert first.input_request is not None
    continuation = first.input_request.continuation_from_json('{"approved": false}')
    resumed = await binding.call(binding.contract.prepare(call, Admission(continuation=continuation)))
    assert resumed.output.text() == "declined"
    assert tool.writes == []


async def test_invalid_answer_never_reaches_the_tool() -> None:
    """An answer breaking the request's schema is refused before any continuation exists."""
    tool = ApprovalTool()
    binding = bind(tool)
    first = await binding.call(binding.contract.prepare(Request(name="write_record", arguments='{"record": "r"}')))
    assert first.input_request is not None
    with pytest.raises(InvalidInputRequestError):
        first.input_request.continuation({"approved": "yes", "note": SECRET})
    assert tool.seen == []


async def test_first_attempt_has_no_continuation() -> None:
    """An invocation prepared without a continuation reports None."""
    binding = bind(ApprovalTool())
    invocation = binding.contract.prepare(Request(name="write_record", arguments='{"record": "r"}'))
    assert invocation.continuation is None


@pytest.mark.parametrize(
    "value",
    [{"state": None, "response": True}, b'{"approved": true}', "continuation", True, request()],
    ids=["dict", "bytes", "str", "bool", "input-request"],
)
def test_admission_rejects_non_continuations(value: Any) -> None:
    """Admission(continuation=...) accepts only a Continuation (or None)."""
    with pytest.raises(TypeError):
        Admission(continuation=value)


def test_admission_accepts_a_continuation_and_none() -> None:
    """Admission keeps a real Continuation, and None means a new call."""
    continuation = request().continuation(True)
    assert Admission(continuation=continuation).continuation is continuation
    assert Admission().continuation is None


def test_input_request_result_carries_no_output() -> None:
    """A Result with an input request cannot also carry output."""
    with pytest.raises(InvalidOutputError):
        Result(output=Output.from_text("partial"), input_request=request())
    assert Result(input_request=request()).output == Output()


# -- compile_schema: a plain schema is compiled at its first use, any other at once

_PLAIN_TYPES = st.sampled_from(["array", "boolean", "integer", "null", "number", "object", "string"])


def _plain_schemas() -> st.SearchStrategy[Any]:
    """Schemas of the keywords `compile_schema` defers, with values as the metaschema wants them."""
    numbers = st.integers(-(2**60), 2**60) | st.floats(allow_nan=False, allow_infinity=False)
    counts = st.integers(0, 2**40)
    leaves = st.fixed_dictionaries(
        {},
        optional={
            "type": _PLAIN_TYPES | st.lists(_PLAIN_TYPES, min_size=1, unique=True),
            "title": st.text(max_size=5),
            "description": st.text(max_size=5),
            "minimum": numbers,
            "exclusiveMaximum": numbers,
            "maxLength": counts,
            "minItems": counts,
            "default": st.none() | st.booleans() | st.integers() | st.text(max_size=3) | numbers,
        },
    )

    def nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.fixed_dictionaries(
            {},
            optional={
                "type": _PLAIN_TYPES,
                "properties": st.dictionaries(st.text(max_size=3), inner, max_size=3),
                "required": st.lists(st.text(max_size=3), unique=True, max_size=3),
                "additionalProperties": inner,
                "items": inner,
                "anyOf": st.lists(inner, min_size=1, max_size=3),
            },
        )

    return st.recursive(leaves | st.booleans(), nested, max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(schema=_plain_schemas(), instance=st.none() | st.integers() | st.text(max_size=3) | st.lists(st.integers()))
def test_a_deferred_schema_always_compiles_and_validates_as_jsonschema_rs(schema: Any, instance: Any) -> None:
    """Every schema `compile_schema` leaves for first use compiles under jsonschema-rs, and judges alike."""
    import jsonschema_rs

    validator = schema_module.compile_schema(schema, "schema", InvalidInputRequestError)
    assert isinstance(validator, schema_module._CompiledOnFirstUse)  # pyright: ignore[reportPrivateUsage]
    direct = jsonschema_rs.validator_for(schema, validate_formats=True, offline=True)
    assert validator.is_valid(instance) == direct.is_valid(instance)
    assert len(list(validator.iter_errors(instance))) == len(list(direct.iter_errors(instance)))


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "intger"},
        {"type": ["integer", "integer"]},
        {"type": []},
        {"minimum": "1"},
        {"minLength": -1},
        {"maxItems": True},
        {"required": ["a", "a"]},
        {"required": "a"},
        {"properties": {"a": {"type": 1}}},
        {"items": {"anyOf": []}},
        {"pattern": "("},
        {"properties": {"a": {"$ref": "https://example.com/schema.json"}}},
        {"title": 3},
        {"type": "number", "maximum": float("inf")},
        {"items": "integer"},
        {"properties": [{"type": "integer"}]},
        {"required": [1]},
    ],
)
def test_an_invalid_schema_is_still_refused_at_once(schema: dict[str, Any]) -> None:
    """A schema with a keyword or value outside the plain ones is compiled at once, and refused there."""
    with pytest.raises(InvalidInputRequestError, match="not a valid JSON Schema"):
        schema_module.compile_schema(schema, "schema", InvalidInputRequestError)


@pytest.mark.parametrize(
    ("schema", "deferred"),
    [
        ({"type": "string", "format": "date"}, False),
        ({"$defs": {}, "type": "object"}, False),
        ({"type": "number", "default": 1.5}, True),
        ({"type": "number", "default": [1]}, False),
        ({"enum": [1, 2]}, False),
        ({"items": {"items": {"items": {}}}}, True),
    ],
)
def test_only_plain_keywords_are_deferred(schema: dict[str, Any], deferred: bool) -> None:
    """Formats, definitions, enums and non-JSON or non-finite values are compiled at once."""
    validator = schema_module.compile_schema(schema, "schema", InvalidInputRequestError)
    assert isinstance(validator, schema_module._CompiledOnFirstUse) is deferred  # pyright: ignore[reportPrivateUsage]


def test_an_eager_compile_defers_nothing() -> None:
    """`eager=True` compiles even a plain schema now (hand-written admission reads it on every call)."""
    validator = schema_module.compile_schema({"type": "integer"}, "schema", InvalidInputRequestError, eager=True)
    assert not isinstance(validator, schema_module._CompiledOnFirstUse)  # pyright: ignore[reportPrivateUsage]
    assert validator.is_valid(1) and not validator.is_valid("1")


def test_a_hand_written_plain_schema_is_compiled_when_bound() -> None:
    """Binding a tool with a hand-written schema compiles it then, plain or not: admission reads it each call."""
    code = (
        "import sys\n"
        "from scopetool import Definition, Output, Result, bind\n"
        "class Raw:\n"
        "    def definition(self):\n"
        "        return Definition(name='raw', description='d', input_schema={'type': 'object'})\n"
        "    async def call(self, invocation):\n"
        "        return Result(output=Output.from_text('x'))\n"
        "bind(Raw())\n"
        "print('jsonschema_rs' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True"]


def test_a_too_deep_schema_is_compiled_at_once() -> None:
    """A schema nested deeper than the plain walk goes is compiled at once, not walked further."""
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(40):
        schema = {"items": schema}
    validator = schema_module.compile_schema(schema, "schema", InvalidInputRequestError)
    assert not isinstance(validator, schema_module._CompiledOnFirstUse)  # pyright: ignore[reportPrivateUsage]
    assert validator.is_valid([[1]])


def test_pydantic_output_schemas_of_plain_types_are_deferred() -> None:
    """The output schemas pydantic writes for scalars, lists, optionals and flat models wait for first use."""

    class Point(BaseModel):
        x: int
        y: float = 0.0
        label: str | None = None

    for declared in (int, float, bool, list[int], dict[str, int], int | None, Point):
        schema = TypeAdapter(declared).json_schema(mode="serialization")
        validator = schema_module.compile_schema(schema, "output schema", InvalidOutputError)
        assert isinstance(validator, schema_module._CompiledOnFirstUse), declared  # pyright: ignore[reportPrivateUsage]
