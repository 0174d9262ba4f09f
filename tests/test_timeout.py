"""Tests for timeouts: declared, bound and registry-wide; the effect decides the outcome; sync functions abandoned."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import scopetool._timeout as timeout_module
from scopetool import (
    Admission,
    Binding,
    CallContext,
    Caller,
    Definition,
    Effect,
    Failure,
    FailureKind,
    InvalidToolError,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    ToolTimeoutError,
    bind,
    classify_failure,
    overrunning_calls,
    tool,
)
from scopetool.providers import outcome_output

LIMIT = 0.05
RAN: list[str] = []
"""What the tools did (cleared per test)."""
GATE = threading.Event()
"""Sync tools wait on it; each test sets it at its end, so no abandoned thread outlives the test."""


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    RAN.clear()
    GATE.clear()
    yield
    GATE.set()
    wait_until(lambda: not set(overrunning_calls()) & {"sync_read_slowly", "sync_write_slowly"})


def wait_until(condition: Any) -> None:
    """Wait (a while at most) for another thread to make `condition()` true."""
    for _ in range(2000):
        if condition():
            return
        time.sleep(0.005)
    raise AssertionError("the condition never held")


def outcome(binding: Binding, arguments: str = "{}") -> Result | BaseException:
    """Run one call; its result or the error it raised."""
    invocation = binding.contract.prepare(Request(name=binding.name, arguments=arguments))
    try:
        return asyncio.run(binding.call(invocation))
    except Exception as error:
        return error


def shown(binding: Binding, result: Result | BaseException) -> str:
    text = outcome_output(binding.name, result)[0].text()
    assert text is not None
    return text


@tool(effect=Effect.SAFE, timeout=LIMIT)
async def read_slowly() -> str:
    """Read, more slowly than the timeout allows."""
    try:
        await asyncio.Event().wait()
    finally:
        RAN.append("read cancelled")
    return "read"


@tool(timeout=LIMIT)
async def write_slowly() -> str:
    """Write (no promise), more slowly than the timeout allows."""
    RAN.append("write started")
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        RAN.append("write cancelled")
        raise
    return "written"


@tool(effect=Effect.SAFE, timeout=LIMIT)
def sync_read_slowly() -> str:
    """Read in a sync function that outlives the timeout."""
    GATE.wait(10)
    RAN.append("sync read returned")
    return "read"


@tool(timeout=LIMIT)
def sync_write_slowly() -> str:
    """Write (no promise) in a sync function that outlives the timeout."""
    GATE.wait(10)
    RAN.append("sync write returned")
    return "written"


@tool(effect=Effect.IDEMPOTENT, timeout=LIMIT)
async def charge_slowly() -> str:
    """Charge under a key, more slowly than the timeout allows."""
    await asyncio.Event().wait()
    return "charged"


def test_a_safe_tool_that_timed_out_definitely_failed() -> None:
    """A SAFE call past its timeout is cancelled and is a FAILED Failure; the timeout is its private cause."""
    binding = bind(read_slowly)
    failure = outcome(binding)
    assert isinstance(failure, Failure)
    assert failure.kind is FailureKind.FAILED
    assert shown(binding, failure) == 'error: tool "read_slowly" timed out'
    assert isinstance(failure.cause, ToolTimeoutError)
    assert (failure.cause.name, failure.cause.timeout) == ("read_slowly", LIMIT)
    assert failure.cause.elapsed > 0
    assert failure.__cause__ is None and failure.__context__ is None
    assert RAN == ["read cancelled"]
    assert binding.timeout == LIMIT


@pytest.mark.parametrize("function", [write_slowly, charge_slowly], ids=["no promise", "idempotent"])
def test_a_tool_without_the_safe_promise_that_timed_out_has_an_unknown_outcome(function: Any) -> None:
    """Any other call past its timeout raises ToolTimeoutError: no Failure, a fixed text, nothing private shown."""
    binding = bind(function)
    error = outcome(binding)
    assert isinstance(error, ToolTimeoutError)
    assert isinstance(error, TimeoutError)
    assert classify_failure(error) is None
    assert error.__cause__ is None and error.__suppress_context__
    text = shown(binding, error)
    assert text == f'error: tool "{binding.name}" timed out; its outcome is unknown'
    assert str(LIMIT) not in text


def test_an_async_tool_past_its_timeout_is_cancelled() -> None:
    """The coroutine is cancelled at its await: it sees CancelledError and does not go on."""
    outcome(bind(write_slowly))
    assert RAN == ["write started", "write cancelled"]


@pytest.mark.parametrize(
    ("function", "kind"),
    [(sync_read_slowly, Failure), (sync_write_slowly, ToolTimeoutError)],
    ids=["safe", "no promise"],
)
def test_a_sync_tool_past_its_timeout_runs_on_and_its_result_is_discarded(
    function: Any, kind: type[BaseException], caplog: pytest.LogCaptureFixture
) -> None:
    """The call ends at the timeout; the thread runs to completion, counted and logged, and its result is dropped."""
    caplog.set_level(logging.WARNING, logger="scopetool.timeouts")
    binding = bind(function)
    ended = outcome(binding)
    assert isinstance(ended, kind)
    assert RAN == []  # the function still runs
    assert overrunning_calls().get(binding.name) == 1  # (other tests' tools may still be listed)
    GATE.set()
    wait_until(lambda: binding.name not in overrunning_calls())
    assert [f"sync {'read' if kind is Failure else 'write'} returned"] == RAN
    messages = [record.getMessage() for record in caplog.records]
    assert any("cannot be stopped" in message and "1 of this tool's now" in message for message in messages)
    assert any("abandoned sync function returned" in message and "discarded" in message for message in messages)


def test_a_tool_with_too_many_abandoned_threads_is_not_started() -> None:
    """Past MAX_OVERRUNNING abandoned threads of a tool, its next call definitely fails without running."""
    binding = bind(sync_write_slowly)

    async def many() -> list[BaseException]:
        invocation = binding.contract.prepare(Request(name=binding.name))
        calls = [binding.call(invocation) for _ in range(timeout_module.MAX_OVERRUNNING)]
        return list(await asyncio.gather(*calls, return_exceptions=True))

    assert all(isinstance(error, ToolTimeoutError) for error in asyncio.run(many()))
    assert overrunning_calls().get(binding.name) == timeout_module.MAX_OVERRUNNING
    refused = outcome(binding)
    assert isinstance(refused, Failure)
    assert refused.kind is FailureKind.FAILED
    assert isinstance(refused.cause, timeout_module.OverrunningError)
    assert shown(binding, refused) == (
        'error: tool "sync_write_slowly" was not run: earlier calls of it are still running past their timeout'
    )
    GATE.set()
    wait_until(lambda: binding.name not in overrunning_calls())
    assert RAN == ["sync write returned"] * timeout_module.MAX_OVERRUNNING  # the refused call never ran


def test_a_sync_tool_under_a_timeout_keeps_its_context_and_its_errors() -> None:
    """In its own thread a sync function sees the caller's context variables, and its error is the outcome."""
    label: contextvars.ContextVar[str] = contextvars.ContextVar("label")

    @tool(timeout=5)
    def labelled(fail: bool) -> str:
        """Return the caller's label, or fail."""
        if fail:
            raise LookupError("no label")
        return label.get()

    binding = bind(labelled)

    async def call(arguments: str) -> Result:
        label.set("caller's")
        return await binding.call(binding.contract.prepare(Request(name="labelled", arguments=arguments)))

    assert asyncio.run(call('{"fail": false}')).output.text() == "caller's"
    with pytest.raises(LookupError, match="no label"):
        asyncio.run(call('{"fail": true}'))


def test_a_call_that_ends_in_time_is_unchanged() -> None:
    """Under a timeout it did not reach, a call returns its result; a SAFE one's own error stays a plain FAILED."""

    @tool(effect=Effect.SAFE, timeout=5)
    async def quick(fail: bool) -> str:
        """Answer at once."""
        if fail:
            raise TimeoutError("the tool's own timeout, not scopetool's")
        return "quick"

    binding = bind(quick)
    result = outcome(binding, '{"fail": false}')
    assert isinstance(result, Result)
    assert result.output.text() == "quick"
    failure = outcome(binding, '{"fail": true}')
    assert isinstance(failure, Failure)
    assert isinstance(failure.cause, TimeoutError) and not isinstance(failure.cause, ToolTimeoutError)
    assert shown(binding, failure) == 'error: tool "quick" failed'


def test_a_tools_own_timeout_error_is_not_scopetools() -> None:
    """A tool with no promise that raises TimeoutError itself raises it as it is, under a timeout it did not reach."""

    @tool(timeout=5)
    async def own() -> str:
        """Raise the tool's own TimeoutError."""
        raise TimeoutError("upstream")

    error = outcome(bind(own))
    assert type(error) is TimeoutError


def test_cancelling_a_timed_call_is_a_cancellation_not_a_timeout() -> None:
    """A caller's cancellation of a call under a timeout propagates as CancelledError."""
    binding = bind(write_slowly, timeout=5)

    async def cancel() -> None:
        task = asyncio.ensure_future(binding.call(binding.contract.prepare(Request(name=binding.name))))
        while not RAN:
            await asyncio.sleep(0)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancel())


class Lookup:
    """A class-based SAFE tool that declares a timeout and never answers."""

    def __init__(self, declared: Any = LIMIT) -> None:
        self.declared = declared

    def definition(self) -> Definition:
        return Definition(name="lookup", description="Look up.", input_schema={"type": "object"}, effect=Effect.SAFE)

    def call_timeout(self) -> Any:
        if isinstance(self.declared, Exception):
            raise self.declared
        return self.declared

    async def call(self, invocation: Invocation) -> Result:
        await asyncio.Event().wait()
        return Result(output=Output.from_text("found"))


def test_where_a_timeout_comes_from() -> None:
    """bind's timeout wins over the tool's declaration, which wins over the registry's default."""
    assert bind(Lookup()).timeout == LIMIT
    assert bind(Lookup(None)).timeout is None
    assert bind(Lookup(), timeout=2).timeout == 2.0
    assert bind(read_slowly, timeout=3).timeout == 3.0

    @tool
    def plain() -> str:
        """No timeout declared."""
        return "plain"

    assert plain.call_timeout() is None
    assert bind(plain).timeout is None
    registry = Registry(plain, Lookup(), bind(write_slowly, timeout=4), timeout=7)
    assert registry.timeout == 7.0
    assert [(b.name, b.timeout) for b in registry] == [("lookup", LIMIT), ("plain", 7.0), ("write_slowly", 4.0)]
    assert Registry(plain).timeout is None
    failure = outcome(bind(Lookup()))
    assert isinstance(failure, Failure)
    assert failure.output.text() == 'error: tool "lookup" timed out'


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), True, "1"])
def test_a_timeout_must_be_a_positive_number_of_seconds(bad: Any) -> None:
    """Every way to give a timeout refuses one that is not a positive finite number, naming where."""
    with pytest.raises(InvalidToolError, match=r"^bind: a timeout is a positive finite number"):
        bind(read_slowly, timeout=bad)
    with pytest.raises(InvalidToolError, match=r"cannot|@tool .*a timeout is a positive"):
        tool(timeout=bad)(lambda: None)
    with pytest.raises(InvalidToolError, match=r"^Registry: a timeout"):
        Registry(timeout=bad)
    with pytest.raises(InvalidToolError, match=r"Lookup.call_timeout\(\): a timeout"):
        bind(Lookup(bad))


def test_a_failing_timeout_declaration_is_a_tool_error() -> None:
    """A call_timeout() that raises makes the tool unbindable, like a failing validator declaration."""
    with pytest.raises(InvalidToolError, match="timeout: the declaration raised KeyError"):
        bind(Lookup(KeyError("x")))


def test_a_middleware_sees_the_timed_out_outcome() -> None:
    """The timeout bounds the tool inside the middlewares: a middleware receives the Failure."""
    seen: list[str] = []

    async def record(invocation: Invocation, call_next: Caller) -> Result:
        try:
            return await call_next(invocation)
        except Failure as failure:
            seen.append(failure.output.text() or "")
            raise

    assert isinstance(outcome(bind(read_slowly, record)), Failure)
    assert seen == ['error: tool "read_slowly" timed out']


def test_no_timeout_leaves_the_call_path_as_it_was() -> None:
    """Without a timeout the binding awaits the tool's own call: no timing layer is in the way."""

    @tool
    def untimed() -> str:
        """No timeout."""
        return "x"

    binding = bind(untimed)
    assert binding.timeout is None
    assert binding._direct == untimed.call  # pyright: ignore[reportPrivateUsage]
    assert bind(untimed, timeout=1)._direct != untimed.call  # pyright: ignore[reportPrivateUsage]


def test_a_sync_function_that_returned_just_as_its_call_ended_did_not_overrun() -> None:
    """Cancelled after its function returned (its outcome not yet delivered): nothing is counted, nothing is set."""

    async def race() -> None:
        loop = asyncio.get_running_loop()
        work = timeout_module._Work(loop, loop.create_future(), lambda: "late", {}, "racer")  # pyright: ignore[reportPrivateUsage]
        work.run()  # the function returns; its outcome is on its way to the loop
        work.future.cancel()  # the call ends first
        work.abandon()
        await asyncio.sleep(0)  # the outcome arrives at a cancelled future
        assert "racer" not in overrunning_calls()
        assert work.future.cancelled()

    asyncio.run(race())


def test_a_timeout_error_survives_pickling() -> None:
    """ToolTimeoutError pickles with its name, timeout and elapsed time (a process pool can hand it back)."""
    import pickle

    copy = pickle.loads(pickle.dumps(ToolTimeoutError("ship", 0.05, 0.06)))
    assert (type(copy), copy.name, copy.timeout, copy.elapsed, str(copy)) == (
        ToolTimeoutError,
        "ship",
        0.05,
        0.06,
        "tool 'ship' timed out after 0.060 s (its timeout is 0.05 s)",
    )


def test_timed_sync_calls_reuse_a_waiting_thread() -> None:
    """A timed sync call runs off the loop's thread, in a thread a finished timed call left waiting."""

    @tool(timeout=5)
    def where() -> int:
        """The thread this runs in."""
        return threading.get_ident()

    binding = bind(where)
    first = outcome(binding)
    assert isinstance(first, Result) and first.output.text() != str(threading.get_ident())
    wait_until(lambda: timeout_module._idle)  # pyright: ignore[reportPrivateUsage]
    existing = {str(t.ident) for t in threading.enumerate() if t.name == "scopetool timed tool"}
    assert first.output.text() in existing
    second = outcome(binding)
    assert isinstance(second, Result) and second.output.text() in existing  # no thread was started for it


@tool(effect=Effect.SAFE, timeout=LIMIT)
def sync_read_slowly_in_context(ctx: CallContext) -> str:
    """Read, taking a call context, in a sync function that outlives the timeout."""
    assert ctx.tool_name == "sync_read_slowly_in_context"
    GATE.wait(10)
    RAN.append("context read returned")
    return "read"


@tool(approval=True, timeout=LIMIT)
async def delete_slowly() -> str:
    """Delete once approved, more slowly than the timeout allows."""
    await asyncio.Event().wait()
    return "deleted"


def test_a_tool_taking_a_context_is_timed_in_a_thread_of_its_own() -> None:
    """A sync tool with a CallContext is abandoned at its timeout like any other: a SAFE one definitely failed."""
    binding = bind(sync_read_slowly_in_context)
    failure = outcome(binding)
    assert isinstance(failure, Failure)
    assert failure.kind is FailureKind.FAILED
    assert overrunning_calls().get(binding.name) == 1
    GATE.set()
    wait_until(lambda: binding.name not in overrunning_calls())
    assert RAN == ["context read returned"]


def test_an_approval_waits_outside_the_timeout_and_the_approved_call_is_timed() -> None:
    """Asking for approval ends the call in time; the approved call that then outlives its timeout is unknown."""
    binding = bind(delete_slowly)
    asked = outcome(binding)
    assert isinstance(asked, Result)
    assert asked.input_request is not None
    continuation = asked.input_request.continuation(True)
    invocation = binding.contract.prepare(
        Request(name=binding.name, arguments="{}"), Admission(continuation=continuation)
    )
    with pytest.raises(ToolTimeoutError):
        asyncio.run(binding.call(invocation))
