"""The JSON records backends store: what a result message needs, and nothing private."""

from __future__ import annotations

import asyncio
import json

import pytest

from scopetool import (
    Admission,
    Definition,
    Failure,
    FailureKind,
    InputRequest,
    Invocation,
    MediaBlock,
    Output,
    Registry,
    Request,
    Result,
    TextBlock,
    tool,
)
from scopetool.driver._records import (
    decode_outcome,
    error_record,
    interrupted_record,
    is_input,
    lost_record,
    record_request,
    run_invocation,
    run_request,
)
from scopetool.providers import ToolCall, UnknownToolError, mcp


@tool
def show() -> Output:
    """Return every kind of block, and details."""
    return Output(
        content=(
            TextBlock("look"),
            MediaBlock(mime_type="image/png", data=b"\x89PNG\x00"),
            MediaBlock(mime_type="image/png", uri="https://example.com/a.png"),
            MediaBlock(mime_type="application/pdf", reference="file-7"),
        ),
        details=b'{"n": 1.50,  "z": [] }',
    )


async def test_a_result_survives_json_exactly() -> None:
    """Text, inline, linked and referenced media and the exact details bytes come back unchanged."""
    binding = Registry(show).resolve("show")
    assert binding is not None
    record = await run_invocation(binding, binding.contract.prepare(Request(name="show")))
    stored = json.loads(json.dumps(record))
    outcome = decode_outcome(stored)
    assert isinstance(outcome, Result)
    assert outcome.output == (await binding.call(binding.contract.prepare(Request(name="show")))).output
    assert stored["output"]["details"] == '{"n": 1.50,  "z": [] }'


def test_errors_keep_kind_and_public_output_only() -> None:
    """A rejection stays a rejection, other errors fail; the record holds no exception text."""
    rejected = error_record("t", Failure(kind=FailureKind.REJECTED, output="no", cause=ValueError("private")))
    failed = error_record("t", KeyError("private"))
    unknown = error_record("t", UnknownToolError("t"))
    assert "private" not in json.dumps([rejected, failed, unknown])
    outcome = decode_outcome(rejected)
    assert isinstance(outcome, Failure) and outcome.kind is FailureKind.REJECTED and outcome.output.text() == "no"
    assert decode_outcome(failed).kind is FailureKind.FAILED
    assert mcp.result_message(ToolCall(id="1", request=Request(name="t")), decode_outcome(unknown))["content"][0][
        "text"
    ] == ('error: tool "t" is not available')


def test_interrupted_and_lost_calls_are_failures_with_generic_texts() -> None:
    """Neither claims anything about what the tool did."""
    assert decode_outcome(interrupted_record("t")).output.text() == (
        'error: tool "t" was interrupted; its outcome is unknown'
    )
    assert decode_outcome(lost_record("t")).output.text() == 'error: tool "t" failed'


async def test_input_requests_are_stored_as_their_json() -> None:
    """An input request record rebuilds the same request; it is not a finished outcome."""
    request = InputRequest(prompt={"q": "ok?"}, response_schema={"type": "boolean"}, continuation_state=[1])

    class Ask:
        def definition(self) -> Definition:
            return Definition(name="ask", input_schema={"type": "object"})

        async def call(self, invocation: Invocation) -> Result:
            return Result(input_request=request)

    binding = Registry(Ask()).resolve("ask")
    assert binding is not None
    record = await run_invocation(binding, binding.contract.prepare(Request(name="ask")))
    assert is_input(record) and record_request(record) == request
    with pytest.raises(ValueError, match="kind"):
        decode_outcome(record)


async def test_a_request_for_a_missing_tool_or_bad_arguments_is_an_error_record() -> None:
    """Recovery after the registry changed records an error instead of failing."""
    missing = await run_request(None, "gone", "{}", Admission())
    assert decode_outcome(missing).output.text() == 'error: tool "gone" is not available'
    binding = Registry(show).resolve("show")
    rejected = await run_request(binding, "show", '{"x": 1}', Admission())
    assert "unknown field" in (decode_outcome(rejected).output.text() or "")


@pytest.mark.parametrize(
    "raised", [KeyboardInterrupt("secret"), SystemExit(3), asyncio.CancelledError("secret")], ids=type
)
async def test_a_tool_raising_past_exception_is_an_error_record(raised: BaseException) -> None:
    """A tool's own KeyboardInterrupt, SystemExit or uninvited CancelledError is recorded as its failure."""

    @tool
    def hostile() -> str:
        """Raise something that is not an Exception."""
        raise raised

    binding = Registry(hostile).resolve("hostile")
    record = await run_request(binding, "hostile", "{}", Admission())
    assert decode_outcome(record).output.text() == 'error: tool "hostile" failed'
    assert "secret" not in json.dumps(record)


async def test_the_awaiting_tasks_cancellation_still_propagates() -> None:
    """Cancelling the task that runs the call cancels the call: it has no outcome."""

    @tool
    async def slow() -> str:
        """Sleep a long time."""
        await asyncio.sleep(60)
        return "done"

    binding = Registry(slow).resolve("slow")
    task = asyncio.ensure_future(run_request(binding, "slow", "{}", Admission()))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_call_coroutine_closed_mid_call_closes() -> None:
    """Closing the coroutine of a running call (GeneratorExit) is no outcome: the coroutine closes."""

    @tool
    async def slow() -> str:
        """Sleep a long time."""
        await asyncio.sleep(60)
        return "done"

    call = run_request(Registry(slow).resolve("slow"), "slow", "{}", Admission())
    call.send(None)  # runs up to the tool's sleep
    call.close()  # a swallowed GeneratorExit would be a RuntimeError here
    with pytest.raises(RuntimeError, match="cannot reuse already awaited coroutine"):
        call.send(None)
