"""Tests for Contract.validate_result: the frozen output contract applied to live or recovered results."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from scopetool import (
    Contract,
    Definition,
    InputRequest,
    InvalidOutputError,
    MediaBlock,
    Output,
    Request,
    Result,
    TextBlock,
    bind,
    tool,
)


class Invoice(BaseModel):
    """A structured tool output."""

    number: int
    total_cents: int
    lines: list[str]


@tool
async def count() -> int:
    """Count something."""
    return 3


@tool
async def tally(words: list[str]) -> dict[str, int]:
    """Count each word."""
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts


@tool
async def invoice(number: int) -> Invoice:
    """Build an invoice."""
    return Invoice(number=number, total_cents=1999, lines=["a", "b"])


@tool
async def echo(value: int) -> int:
    """Return value."""
    return value


@tool
async def weight(value: float) -> float:
    """Return value."""
    return value


def request_for_input() -> InputRequest:
    """A small input request."""
    return InputRequest(prompt="Approve?", response_schema={"type": "boolean"}, continuation_state={"step": 1})


def contract_with(output_schema: Any) -> Contract:
    """A contract whose definition declares `output_schema`."""
    return Contract(Definition(name="raw", input_schema={"type": "object"}, output_schema=output_schema))


def run(tool_: Any, arguments: str = "{}") -> Result:
    """Call `tool_` once through its binding, synchronously."""
    binding = bind(tool_)
    result: Result = asyncio.run(
        binding.call(binding.contract.prepare(Request(name=binding.name, arguments=arguments)))
    )
    return result


# --------------------------------------------------------------------------------------------------
# A tool's own results pass


@pytest.mark.parametrize(
    ("tool_", "arguments"),
    [(count, "{}"), (tally, '{"words": ["a", "b", "a"]}'), (tally, '{"words": []}'), (invoice, '{"number": 7}')],
    ids=["int", "dict", "empty-dict", "model"],
)
async def test_own_results_pass(tool_: Any, arguments: str) -> None:
    """Each tool's encoded result satisfies its own frozen output contract."""
    binding = bind(tool_)
    assert binding.definition().output_schema is not None
    result = await binding.call(binding.contract.prepare(Request(name=binding.name, arguments=arguments)))
    assert result.output.details is not None
    binding.contract.validate_result(result)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=-(2**100), max_value=2**100))
def test_own_integer_results_pass(value: int) -> None:
    """Any integer (big ones included) a ``-> int`` tool returns passes its own contract."""
    result = run(echo, f'{{"value": {value}}}')
    assert result.output.details == str(value).encode()
    bind(echo).contract.validate_result(result)


@settings(max_examples=40, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_own_finite_float_results_pass(value: float) -> None:
    """Any finite float a ``-> float`` tool returns passes its own contract."""
    result = run(weight, f'{{"value": {value!r}}}')
    bind(weight).contract.validate_result(result)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
async def test_non_finite_float_never_yields_result_breaking_own_contract(value: float) -> None:
    """A ``-> float`` tool returning a non-finite float either fails to encode or yields a valid result."""

    @tool
    async def measure() -> float:
        """Measure."""
        return value

    binding = bind(measure)
    invocation = binding.contract.prepare(Request(name="measure"))
    try:
        result = await binding.call(invocation)
    except InvalidOutputError:
        return
    binding.contract.validate_result(result)


def test_recovered_result_passes() -> None:
    """A result rebuilt from persisted details bytes passes like the live one."""
    live = run(invoice, '{"number": 1}')
    assert live.output.details is not None
    recovered = Result(output=Output.from_json(live.output.details))
    bind(invoice).contract.validate_result(recovered)


def test_result_with_content_and_valid_details_passes() -> None:
    """Model-visible content beside valid details does not matter to the output schema."""
    result = Result(output=Output(content=(TextBlock("three"),), details=b"3"))
    bind(count).contract.validate_result(result)


# --------------------------------------------------------------------------------------------------
# Wrong or missing details


@pytest.mark.parametrize("details", ['"3"', "3.5", "null", "true", "[3]", '{"n": 3}'])
def test_wrong_type_details_rejected(details: str) -> None:
    """Details of the wrong JSON type break a ``-> int`` contract."""
    with pytest.raises(InvalidOutputError, match="count"):
        bind(count).contract.validate_result(Result(output=Output.from_json(details)))


@pytest.mark.parametrize("details", ['{"a": "x"}', '{"a": 1.5}', '{"a": null}', "[]", '"a"'])
def test_wrong_dict_details_rejected(details: str) -> None:
    """A ``-> dict[str, int]`` contract rejects non-integer values and non-objects."""
    with pytest.raises(InvalidOutputError):
        bind(tally).contract.validate_result(Result(output=Output.from_json(details)))


@pytest.mark.parametrize(
    "details",
    [
        '{"number": 1, "total_cents": 2}',
        '{"total_cents": 2, "lines": []}',
        "{}",
        '{"number": "1", "total_cents": 2, "lines": []}',
        '{"number": 1, "total_cents": 2, "lines": [1]}',
    ],
    ids=["missing-lines", "missing-number", "empty", "wrong-number-type", "wrong-line-type"],
)
def test_wrong_model_details_rejected(details: str) -> None:
    """A model contract rejects missing required members and wrongly typed members."""
    with pytest.raises(InvalidOutputError):
        bind(invoice).contract.validate_result(Result(output=Output.from_json(details)))


@pytest.mark.parametrize(
    "output",
    [Output(), Output.from_text("3"), Output(content=(MediaBlock(mime_type="image/png", data=b"\x89PNG"),))],
    ids=["empty", "text", "media"],
)
def test_missing_details_rejected(output: Output) -> None:
    """A contract with an output schema needs details, whatever the content."""
    with pytest.raises(InvalidOutputError, match="details"):
        bind(count).contract.validate_result(Result(output=output))


def test_default_result_rejected_when_schema_declared() -> None:
    """The empty default Result has no details, so it breaks a declared output schema."""
    with pytest.raises(InvalidOutputError):
        bind(invoice).contract.validate_result(Result())


def test_hand_written_schema_enforced() -> None:
    """A raw definition's output schema is enforced as written (required, types, no extra members)."""
    contract = contract_with(
        {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
            "additionalProperties": False,
        }
    )
    contract.validate_result(Result(output=Output.from_json('{"ok": true}')))
    for bad in ('{"ok": 1}', "{}", '{"ok": true, "extra": 1}'):
        with pytest.raises(InvalidOutputError):
            contract.validate_result(Result(output=Output.from_json(bad)))


def test_boolean_output_schemas() -> None:
    """A false output schema rejects every details; a true one accepts any details."""
    with pytest.raises(InvalidOutputError):
        contract_with(False).validate_result(Result(output=Output.from_json("1")))
    contract_with(True).validate_result(Result(output=Output.from_json('{"any": ["thing"]}')))


def test_big_integer_details_checked_exactly() -> None:
    """A big integer beyond 64 bits is an integer, and a maximum is checked exactly."""
    contract = contract_with({"type": "integer", "maximum": 2**70})
    contract.validate_result(Result(output=Output.from_json(str(2**70))))
    with pytest.raises(InvalidOutputError):
        contract.validate_result(Result(output=Output.from_json(str(2**70 + 1))))


# --------------------------------------------------------------------------------------------------
# Input requests


@pytest.mark.parametrize("tool_", [count, tally, invoice, echo], ids=["int", "dict", "model", "echo"])
def test_input_request_passes_any_contract(tool_: Any) -> None:
    """A result that asks for input has no output yet, so any output schema accepts it."""
    bind(tool_).contract.validate_result(Result(input_request=request_for_input()))


def test_input_request_passes_false_schema() -> None:
    """Even a schema that rejects everything accepts a pending input request."""
    contract_with(False).validate_result(Result(input_request=request_for_input()))


@pytest.mark.parametrize(
    "output",
    [Output.from_text("partial"), Output.from_json("3"), Output(content=(TextBlock("x"),), details=b"{}")],
    ids=["text", "details", "both"],
)
def test_input_request_with_output_rejected_at_construction(output: Output) -> None:
    """A Result cannot both complete with output and wait for input."""
    with pytest.raises(InvalidOutputError):
        Result(output=output, input_request=request_for_input())


def test_input_request_with_empty_output_allowed() -> None:
    """An explicitly empty output beside an input request is the same as none."""
    result = Result(output=Output(), input_request=request_for_input())
    assert result.input_request == request_for_input()


# --------------------------------------------------------------------------------------------------
# Tools without an output schema


@tool
async def say() -> str:
    """Say something."""
    return "hi"


@tool
async def anything() -> Any:
    """Return anything."""
    return {"x": 1}


@tool
async def nothing() -> None:
    """Return nothing."""


@tool
async def raw_output() -> Output:
    """Return an Output."""
    return Output.from_text("raw")


@pytest.mark.parametrize("tool_", [say, anything, nothing, raw_output], ids=["str", "any", "none", "output"])
@pytest.mark.parametrize(
    "result",
    [
        Result(),
        Result(output=Output.from_text("free text")),
        Result(output=Output.from_json('{"whatever": [1, "two"]}')),
        Result(output=Output.from_json('"a string"')),
        Result(output=Output(content=(MediaBlock(mime_type="image/png", uri="https://example.com/a.png"),))),
        Result(input_request=InputRequest(prompt="p", response_schema=True)),
    ],
    ids=["empty", "text", "object", "string", "media", "input-request"],
)
def test_no_output_schema_accepts_any_result(tool_: Any, result: Result) -> None:
    """A tool that declares no output schema accepts every Result."""
    contract = bind(tool_).contract
    assert contract.definition().output_schema is None
    contract.validate_result(result)


def test_raw_definition_without_output_schema_accepts_any_result() -> None:
    """A hand-written definition without output_schema accepts every Result."""
    contract_with(None).validate_result(Result(output=Output.from_json("[1, 2, 3]")))


# --------------------------------------------------------------------------------------------------
# Not a Result


@pytest.mark.parametrize(
    "value",
    [None, Output.from_json("3"), 3, "3", b"3", {"output": {"details": 3}}],
    ids=["none", "output", "int", "str", "bytes", "dict"],
)
@pytest.mark.parametrize("tool_", [count, say], ids=["with-schema", "without-schema"])
def test_non_result_rejected(tool_: Any, value: Any) -> None:
    """Anything but a Result breaks the contract, with or without an output schema."""
    with pytest.raises(InvalidOutputError, match="Result"):
        bind(tool_).contract.validate_result(value)
