"""For any bytes or JSON, `prepare` admits or raises InvalidInvocationError; what it admits fits the schema."""

from __future__ import annotations

import json
import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scopetool import Contract, InvalidInvocationError, Invocation
from scopetool._rejection import MAX_REJECTION_CHARS

from ._agreement import explain
from ._corpus import all_bindings
from ._support import (
    RELIABLE,
    encodings,
    enforces_formats,
    from_schema,
    json_objects,
    json_token_soup,
    json_values,
    message_of,
    near_misses,
    prepare,
    schema_allows,
)

BINDINGS = all_bindings()
CONTRACTS = [BINDINGS[name].contract for name in sorted(BINDINGS)]
contracts = st.sampled_from(CONTRACTS)
MANY = settings(RELIABLE, max_examples=500)
SLOWEST_ADMISSION_S = 1.0
"""A single admission of a small document taking longer than this counts as a hang."""


def _check(contract: Contract, arguments: str | bytes) -> Invocation | None:
    """Prepare once and check every property of the outcome; the invocation when admitted."""
    started = time.perf_counter()
    outcome = prepare(contract, arguments)  # anything but InvalidInvocationError propagates and fails
    assert time.perf_counter() - started < SLOWEST_ADMISSION_S
    if isinstance(outcome, InvalidInvocationError):
        message = message_of(outcome)
        assert message.startswith(f"invalid arguments for tool {contract.name!r}") or "\n" not in message
        assert 0 < len(message) <= MAX_REJECTION_CHARS
        return None
    assert outcome.contract is contract
    value = json.loads(outcome.arguments)  # the standard library reads every admitted document
    assert isinstance(value, dict)
    if not schema_allows(contract, value, formats=enforces_formats(contract)):
        known = explain(contract, value, False, True)
        assert known is not None, f"{contract.name} admitted {outcome.arguments!r}, which its schema forbids"
    return outcome


@MANY
@given(contract=contracts, data=st.binary(max_size=64))
def test_arbitrary_bytes(contract: Contract, data: bytes) -> None:
    """Arbitrary bytes are admitted or rejected with a model-facing message, nothing else."""
    admitted = _check(contract, data)
    if admitted is not None and admitted.arguments != data:
        assert admitted.arguments == b"{}"
        assert data.decode("utf-8").isspace() or not data, "only blank arguments may be read as {}"


@MANY
@given(contract=contracts, data=st.text(max_size=48))
def test_arbitrary_text(contract: Contract, data: str) -> None:
    """Arbitrary text, lone surrogates included, is admitted or rejected, nothing else."""
    _check(contract, data)


@MANY
@given(contract=contracts, data=json_token_soup.flatmap(encodings))
def test_near_json_token_soup(contract: Contract, data: str | bytes) -> None:
    """Near-JSON built from the tokens parsers disagree on is admitted or rejected, nothing else."""
    _check(contract, data)


@MANY
@given(contract=contracts, value=json_values, ascii_only=st.booleans())
def test_arbitrary_json_values(contract: Contract, value: Any, ascii_only: bool) -> None:
    """Arbitrary JSON documents: only objects can be admitted, and only what the schema allows."""
    admitted = _check(contract, json.dumps(value, ensure_ascii=ascii_only))
    if admitted is not None:
        assert isinstance(value, dict)


@MANY
@given(contract=contracts, value=json_objects, data=st.data())
def test_arbitrary_json_objects_in_every_encoding(
    contract: Contract, value: dict[str, Any], data: st.DataObject
) -> None:
    """A JSON object as str, UTF-8, UTF-8 with a BOM or UTF-16: only str and plain UTF-8 can be admitted."""
    text = json.dumps(value, ensure_ascii=False)
    arguments = data.draw(encodings(text))
    admitted = _check(contract, arguments)
    if admitted is not None:
        assert admitted.arguments == text.encode("utf-8")


@MANY
@given(contract=contracts, data=st.data())
def test_schema_shaped_documents(contract: Contract, data: st.DataObject) -> None:
    """Documents shaped by the schema, and their near misses, are admitted only when the schema allows them."""
    schema = contract.definition().input_schema
    value = data.draw(from_schema(schema) | near_misses(from_schema(schema)))
    _check(contract, json.dumps(value, ensure_ascii=data.draw(st.booleans())))


@MANY
@given(contract=contracts, data=st.one_of(json_token_soup, st.text(max_size=32), json_objects.map(json.dumps)))
def test_str_and_utf8_bytes_get_the_same_verdict(contract: Contract, data: str) -> None:
    """The same document as str and as UTF-8 bytes is admitted or rejected alike, with the same message."""
    try:
        encoded = data.encode("utf-8")
    except UnicodeEncodeError:
        outcome = prepare(contract, data)
        assert isinstance(outcome, InvalidInvocationError), "a lone surrogate in str arguments was admitted"
        return
    as_text, as_bytes = prepare(contract, data), prepare(contract, encoded)
    assert isinstance(as_text, Invocation) == isinstance(as_bytes, Invocation)
    if isinstance(as_text, Invocation) and isinstance(as_bytes, Invocation):
        assert as_text.arguments == as_bytes.arguments
    elif isinstance(as_text, InvalidInvocationError) and isinstance(as_bytes, InvalidInvocationError):
        assert message_of(as_text) == message_of(as_bytes)
