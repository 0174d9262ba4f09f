"""Tests for Effect.SAFE calls: an ordinary error is a definite FAILED outcome unless the call was cancelled."""

from __future__ import annotations

import asyncio
import threading
import traceback
from typing import Any

import pytest

from scopetool import (
    CallError,
    Definition,
    Effect,
    Failure,
    FailureKind,
    InputRejection,
    Invocation,
    Output,
    Request,
    Result,
    bind,
    classify_failure,
    tool,
)

SECRET = "api-key-sk-live-93f0a1"


class Boom(Exception):
    """A tool's ordinary error."""


def run_call(binding: Any, arguments: str = "{}") -> Any:
    """The coroutine of one call of `binding` with `arguments`."""
    return binding.call(binding.contract.prepare(Request(name=binding.name, arguments=arguments)))


class RawTool:
    """A hand-written tool whose call raises the given error."""

    def __init__(self, error: BaseException, effect: Effect | None = Effect.SAFE, name: str = "raw") -> None:
        self.error = error
        self.effect = effect
        self.name = name
        self.calls = 0

    def definition(self) -> Definition:
        return Definition(name=self.name, input_schema={"type": "object"}, effect=self.effect)

    async def call(self, invocation: Invocation) -> Result:
        self.calls += 1
        raise self.error


# --------------------------------------------------------------------------------------------------
# Ordinary errors become definite failures


async def test_sync_safe_tool_error_is_failed_failure() -> None:
    """A sync safe tool's ordinary error becomes a FAILED Failure with a generic public output."""
    raised: list[BaseException] = []

    @tool(effect=Effect.SAFE)
    def lookup(key: str) -> str:
        """Look a key up."""
        error = Boom(f"backend said {SECRET} for {key}")
        raised.append(error)
        raise error

    with pytest.raises(Failure) as caught:
        await run_call(bind(lookup), '{"key": "k"}')
    failure = caught.value
    assert classify_failure(failure) is failure
    assert failure.kind is FailureKind.FAILED
    assert failure.output.text() == 'error: tool "lookup" failed'
    assert failure.cause is raised[0]


async def test_async_safe_tool_error_is_failed_failure() -> None:
    """An async safe tool's error becomes the same definite outcome."""

    @tool(name="read-config", effect=Effect.SAFE)
    async def read_config() -> str:
        """Read the configuration."""
        raise KeyError(SECRET)

    with pytest.raises(Failure) as caught:
        await run_call(bind(read_config))
    assert caught.value.kind is FailureKind.FAILED
    assert caught.value.output.text() == 'error: tool "read-config" failed'
    assert isinstance(caught.value.cause, KeyError)


async def test_safe_failure_hides_the_secret() -> None:
    """The error's secret is in neither the Failure's str, repr, output nor its rendered traceback."""
    tool_ = RawTool(Boom(f"connect failed: {SECRET}"))
    with pytest.raises(Failure) as caught:
        await run_call(bind(tool_))
    failure = caught.value
    assert SECRET not in str(failure)
    assert SECRET not in repr(failure)
    assert SECRET not in (failure.output.text() or "")
    assert failure.output.details is None
    assert failure.__cause__ is None
    assert failure.__context__ is None
    assert SECRET not in "".join(traceback.format_exception(failure))
    assert SECRET in str(failure.cause)


async def test_raw_safe_tool_error_is_failure() -> None:
    """Any bound tool declaring Effect.SAFE gets definite failures, not only @tool functions."""
    error = Boom("x")
    tool_ = RawTool(error, name="probe")
    with pytest.raises(Failure) as caught:
        await run_call(bind(tool_))
    assert caught.value.cause is error
    assert caught.value.output.text() == 'error: tool "probe" failed'
    assert tool_.calls == 1


async def test_safe_call_error_wrapping_plain_error_becomes_failure() -> None:
    """A CallError around an ordinary error is still an ordinary error: the Failure keeps it as the cause."""
    call_error = CallError(Boom("x"), evidence="read 3 rows")
    with pytest.raises(Failure) as caught:
        await run_call(bind(RawTool(call_error)))
    assert caught.value.cause is call_error
    assert caught.value.output.text() == 'error: tool "raw" failed'


async def test_safe_tool_ambiguous_group_becomes_new_failure() -> None:
    """A group of two independent Failures establishes no outcome, so the safe call fails definitely."""
    group = ExceptionGroup("two", [Failure(kind=FailureKind.REJECTED), Failure(kind=FailureKind.REJECTED)])
    with pytest.raises(Failure) as caught:
        await run_call(bind(RawTool(group)))
    assert caught.value.kind is FailureKind.FAILED
    assert caught.value.cause is group


async def test_safe_tool_input_rejection_in_body_becomes_failure() -> None:
    """An InputRejection raised at execution time (not admission) is an ordinary error of the call."""
    rejection = InputRejection("too late to reject")
    with pytest.raises(Failure) as caught:
        await run_call(bind(RawTool(rejection)))
    assert caught.value.kind is FailureKind.FAILED
    assert caught.value.cause is rejection


async def test_concurrent_safe_failures_keep_their_own_causes() -> None:
    """Concurrent failing safe calls each get a Failure whose cause is their own error."""

    @tool(effect=Effect.SAFE)
    async def check(n: int) -> int:
        """Check n."""
        await asyncio.sleep(0)
        raise Boom(str(n))

    binding = bind(check)
    outcomes = await asyncio.gather(*(run_call(binding, f'{{"n": {n}}}') for n in range(50)), return_exceptions=True)
    assert all(isinstance(outcome, Failure) for outcome in outcomes)
    assert [str(outcome.cause) for outcome in outcomes] == [str(n) for n in range(50)]  # type: ignore[union-attr]


async def test_safe_tool_success_is_untouched() -> None:
    """A safe tool that succeeds returns its result unchanged."""

    @tool(effect=Effect.SAFE)
    def double(n: int) -> int:
        """Double n."""
        return 2 * n

    result = await run_call(bind(double), '{"n": 21}')
    assert result.output.details == b"42"


# --------------------------------------------------------------------------------------------------
# A tool's own Failure is kept


@pytest.mark.parametrize("kind", list(FailureKind))
async def test_safe_tool_own_failure_is_kept(kind: FailureKind) -> None:
    """A safe tool's own Failure passes unchanged (REJECTED stays REJECTED, its output stays)."""
    own = Failure(kind=kind, output="quota exhausted, try tomorrow", cause=Boom("quota"))
    with pytest.raises(Failure) as caught:
        await run_call(bind(RawTool(own)))
    assert caught.value is own
    assert caught.value.kind is kind
    assert caught.value.output.text() == "quota exhausted, try tomorrow"


async def test_safe_tool_wrapped_failure_is_kept() -> None:
    """A Failure behind transparent wrapping is the outcome; the wrapper passes through unchanged."""
    own = Failure(kind=FailureKind.REJECTED, output="not yours")
    wrapper = CallError(own, evidence="looked at 1 record")
    with pytest.raises(CallError) as caught:
        await run_call(bind(RawTool(wrapper)))
    assert caught.value is wrapper
    assert classify_failure(caught.value) is own


async def test_safe_func_own_failure_is_kept() -> None:
    """A @tool function raising its own REJECTED Failure keeps it."""

    @tool(effect=Effect.SAFE)
    def guarded_read(path: str) -> str:
        """Read a file."""
        raise Failure(kind=FailureKind.REJECTED, output=f"{path} is outside the sandbox")

    with pytest.raises(Failure) as caught:
        await run_call(bind(guarded_read), '{"path": "/etc/shadow"}')
    assert caught.value.kind is FailureKind.REJECTED
    assert caught.value.output.text() == "/etc/shadow is outside the sandbox"


# --------------------------------------------------------------------------------------------------
# Cancellation is not an outcome


async def test_cancelled_async_safe_call_is_cancellation() -> None:
    """Cancelling a safe call propagates CancelledError, never a Failure."""
    started = asyncio.Event()

    @tool(effect=Effect.SAFE)
    async def wait() -> str:
        """Wait."""
        started.set()
        await asyncio.sleep(30)
        return "done"

    task = asyncio.create_task(run_call(bind(wait)))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def test_cancelled_sync_safe_call_is_cancellation() -> None:
    """Cancelling a safe call running in a worker thread propagates CancelledError."""
    started, release = threading.Event(), threading.Event()

    @tool(effect=Effect.SAFE)
    def block() -> str:
        """Block until released."""
        started.set()
        release.wait(5)
        raise Boom("after release")

    task = asyncio.create_task(run_call(bind(block)))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    try:
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        release.set()


async def test_safe_tool_raising_cancelled_error_is_cancellation() -> None:
    """A CancelledError raised by a safe tool is not turned into a Failure."""
    with pytest.raises(asyncio.CancelledError):
        await run_call(bind(RawTool(asyncio.CancelledError())))


async def test_error_raised_during_cancellation_is_not_a_failure() -> None:
    """A safe call that was cancelled and then raised an ordinary error establishes no definite outcome."""
    started = asyncio.Event()

    @tool(effect=Effect.SAFE)
    async def cleanup() -> str:
        """Fail while being cancelled."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise Boom("cleanup failed") from None
        return "done"  # pragma: no cover

    task = asyncio.create_task(run_call(bind(cleanup)))
    await started.wait()
    task.cancel()
    with pytest.raises(BaseException) as caught:
        await task
    assert classify_failure(caught.value) is None


# --------------------------------------------------------------------------------------------------
# Tools without the SAFE promise: errors pass through unchanged


@pytest.mark.parametrize("effect", [Effect.IDEMPOTENT, None], ids=["idempotent", "none"])
async def test_non_safe_raw_tool_error_passes_through(effect: Effect | None) -> None:
    """Without Effect.SAFE the tool's own error object reaches the caller unchanged."""
    error = Boom(SECRET)
    with pytest.raises(Boom) as caught:
        await run_call(bind(RawTool(error, effect=effect)))
    assert caught.value is error
    assert not isinstance(caught.value, Failure)
    assert classify_failure(caught.value) is None


@pytest.mark.parametrize("effect", [Effect.IDEMPOTENT, None], ids=["idempotent", "none"])
async def test_non_safe_func_error_passes_through(effect: Effect | None) -> None:
    """A @tool function without the SAFE promise raises its own error."""
    raised: list[BaseException] = []

    @tool(effect=effect)
    def write(n: int) -> int:
        """Write n."""
        error = Boom(f"wrote {n} then crashed")
        raised.append(error)
        raise error

    with pytest.raises(Boom) as caught:
        await run_call(bind(write), '{"n": 3}')
    assert caught.value is raised[0]
    assert classify_failure(caught.value) is None


async def test_non_safe_call_error_passes_through() -> None:
    """A CallError with evidence from a non-safe tool is not made an outcome."""
    call_error = CallError(Boom("x"), evidence=Output.from_text("charged card"))
    with pytest.raises(CallError) as caught:
        await run_call(bind(RawTool(call_error, effect=Effect.IDEMPOTENT)))
    assert caught.value is call_error
    assert caught.value.evidence.text() == "charged card"
    assert classify_failure(caught.value) is None


# --------------------------------------------------------------------------------------------------
# Effect semantics as data


@pytest.mark.parametrize("effect", list(Effect))
def test_every_effect_is_replayable(effect: Effect) -> None:
    """Both promises allow a driver to run the same logical call again."""
    assert effect.replayable is True


def test_effect_values_and_lookup() -> None:
    """Effects are the seed's wire strings and round-trip through their values."""
    assert Effect.SAFE.value == "safe"
    assert Effect.IDEMPOTENT.value == "idempotent"
    assert Effect("safe") is Effect.SAFE
    assert Effect("idempotent") is Effect.IDEMPOTENT
    assert set(Effect) == {Effect.SAFE, Effect.IDEMPOTENT}


def test_effect_survives_the_definition() -> None:
    """A tool's effect is carried by its definition and its JSON."""
    tool_ = RawTool(Boom("x"))
    definition = bind(tool_).definition()
    assert definition.effect is Effect.SAFE
    assert definition.effect.replayable
    assert Definition.from_json(definition.to_json()).effect is Effect.SAFE
