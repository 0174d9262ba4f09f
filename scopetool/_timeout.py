"""Timeouts of tool calls: the effect decides the outcome; a sync function past its timeout is abandoned.

A call that outlives its timeout is cancelled (an async function at its next ``await``). What it came
to depends on what the tool promised: a SAFE call changed nothing, so it definitely `FAILED`; any other
call may have done part of its work, so its outcome is unknown and it raises `ToolTimeoutError`, an
ordinary error that no driver runs again on its own. The model is told one fixed text either way; the
timeout and the elapsed time are the private cause.

A sync function cannot be stopped: under a timeout it runs in a thread of its own (never a worker of
the event loop's shared pool; a few such threads are kept for the next calls), and past the timeout
that thread is abandoned. It runs to completion,
its result or error is discarded, and it is logged (on the ``scopetool.timeouts`` logger) when it is
abandoned and when it finally returns; `overrunning_calls` counts those still running. A tool with
`MAX_OVERRUNNING` abandoned threads still running is not started again until one returns: such a
call `FAILED` definitely, since it never ran.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final, final

from ._definition import Effect
from ._errors import InvalidToolError, ScopetoolError
from ._outcome import Failure, FailureKind
from ._output import Output

if TYPE_CHECKING:
    import asyncio
    import logging
    import queue

    from ._contract import Invocation
    from ._output import Result

__all__ = [
    "MAX_OVERRUNNING",
    "TIMED_OUT",
    "TIMED_OUT_UNKNOWN",
    "UNDER_TIMEOUT",
    "ToolTimeoutError",
    "check_timeout",
    "overrunning_calls",
    "run_in_own_thread",
    "timed",
]


def _logger() -> logging.Logger:
    """The ``scopetool.timeouts`` logger: logging loads when a timeout first has something to tell."""
    import logging  # noqa: PLC0415 - a tool that never overruns its timeout needs no logging

    return logging.getLogger("scopetool.timeouts")


TIMED_OUT: Final = 'error: tool "{name}" timed out'
"""What the model is shown for a SAFE call that timed out (a definite `FAILED` outcome)."""
TIMED_OUT_UNKNOWN: Final = 'error: tool "{name}" timed out; its outcome is unknown'
"""What the model is shown for any other call that timed out (`ToolTimeoutError`: the outcome is unknown)."""
NOT_STARTED: Final = 'error: tool "{name}" was not run: earlier calls of it are still running past their timeout'
"""What the model is shown for a call refused because `MAX_OVERRUNNING` abandoned threads of its tool still run."""

MAX_OVERRUNNING: Final = 8
"""Abandoned threads of one tool's sync function that may still run before its next call is refused."""


class ToolTimeoutError(ScopetoolError, TimeoutError):
    """A call ran past its timeout and was cancelled; its outcome is unknown.

    For a SAFE tool it is instead the private cause of a definite `FAILED` Failure. The model is shown
    only a fixed text; `timeout` and `elapsed` are for the host.
    """

    def __init__(self, name: str, timeout: float, elapsed: float) -> None:
        super().__init__(f"tool {name!r} timed out after {elapsed:.3f} s (its timeout is {timeout:g} s)")
        self.name: Final = name
        """The tool's name."""
        self.timeout: Final = timeout
        """The timeout in seconds."""
        self.elapsed: Final = elapsed
        """Seconds from the call's start to its cancellation."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (ToolTimeoutError, (self.name, self.timeout, self.elapsed))


class OverrunningError(ScopetoolError, RuntimeError):
    """The private cause of a call refused because its tool's abandoned threads reached `MAX_OVERRUNNING`."""


UNDER_TIMEOUT: Final[contextvars.ContextVar[bool]] = contextvars.ContextVar("scopetool_under_timeout", default=False)
"""True while a call runs under a timeout: a sync `@tool` function then runs in a thread of its own."""
_lock: Final = threading.Lock()
_overrunning: Final[dict[str, int]] = {}


def overrunning_calls() -> dict[str, int]:
    """How many abandoned sync tool functions still run past their call's timeout, by tool name.

    Each runs to completion in its own thread; its result is discarded. A tool that reaches
    `MAX_OVERRUNNING` is not started again until one of them returns.
    """
    with _lock:
        return dict(_overrunning)


def check_timeout(timeout: object, where: str) -> float | None:
    """`timeout` as seconds (a positive finite number) or None.

    Raises:
        InvalidToolError: it is neither.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
        raise InvalidToolError(f"{where}: a timeout is a positive finite number of seconds or None, not {timeout!r}")
    return float(timeout)


def timed(
    call: Callable[[Invocation], Awaitable[Result]], seconds: float, name: str, effect: Effect | None
) -> Callable[[Invocation], Coroutine[Any, Any, Result]]:
    """`call` under a timeout of `seconds`: past it, the call is cancelled and its effect decides the outcome."""
    import asyncio  # noqa: PLC0415 - a timed call runs in an event loop, which loaded it

    safe = effect is Effect.SAFE
    public = Output.from_text(TIMED_OUT.format(name=name))

    async def timed_call(invocation: Invocation, /) -> Result:
        token = UNDER_TIMEOUT.set(True)
        started = time.monotonic()
        scope = asyncio.timeout(seconds)
        try:
            async with scope:
                return await call(invocation)
        except TimeoutError:
            if not scope.expired():
                raise  # the tool's own TimeoutError, not this timeout
            error = ToolTimeoutError(name, seconds, time.monotonic() - started)
            _logger().warning("%s; %s", error, "it definitely failed" if safe else "its outcome is unknown")
            if safe:
                raise Failure(kind=FailureKind.FAILED, output=public, cause=error) from None
            raise error from None
        finally:
            UNDER_TIMEOUT.reset(token)

    return timed_call


async def run_in_own_thread(function: Callable[..., Any], kwargs: dict[str, Any], name: str) -> Any:
    """Run a sync tool function in a thread of its own and await what it returns; on cancellation, abandon it.

    The thread is an idle one of an earlier timed call, or a new one: either way it runs nothing else
    until this function returns. An abandoned function runs to completion; what it returns or raises is
    discarded and logged.
    """
    import asyncio  # noqa: PLC0415 - loaded by the running loop

    with _lock:
        busy = _overrunning.get(name, 0) >= MAX_OVERRUNNING
        thread = None if busy or not _idle else _idle.pop()
    if busy:
        cause = OverrunningError(f"tool {name!r} has {MAX_OVERRUNNING} abandoned calls still running")
        raise Failure(kind=FailureKind.FAILED, output=NOT_STARTED.format(name=name), cause=cause)
    loop = asyncio.get_running_loop()
    work = _Work(loop, loop.create_future(), function, kwargs, name)
    (thread or _Thread()).jobs.put(work)
    try:
        return await work.future
    except asyncio.CancelledError:
        work.abandon()
        raise


IDLE_THREADS: Final = 4
"""Threads of finished timed calls kept waiting for the next one (a thread starts only when none waits)."""

_idle: Final[list[_Thread]] = []
"""The waiting threads (under `_lock`)."""


@final
class _Thread:
    """A daemon thread that runs timed sync calls one at a time, then waits for the next or ends."""

    __slots__ = ("jobs",)

    def __init__(self) -> None:
        import queue  # noqa: PLC0415 - only a timed sync call starts a thread of its own

        self.jobs: Final[queue.SimpleQueue[_Work]] = queue.SimpleQueue()
        threading.Thread(target=self.serve, name="scopetool timed tool", daemon=True).start()

    def serve(self) -> None:
        while True:
            self.jobs.get().run()
            with _lock:
                if len(_idle) >= IDLE_THREADS:
                    return
                _idle.append(self)


os.register_at_fork(after_in_child=_idle.clear)  # a forked child has none of its parent's threads


@final
class _Work:
    """One sync function running in its own thread, and whether its awaiting call abandoned it."""

    __slots__ = ("abandoned", "context", "done", "function", "future", "kwargs", "loop", "name", "since")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        function: Callable[..., Any],
        kwargs: dict[str, Any],
        name: str,
    ) -> None:
        self.loop = loop
        self.future = future
        self.function = function
        self.kwargs = kwargs
        self.name = name
        self.context = contextvars.copy_context()
        self.done = False
        self.abandoned = False
        self.since = 0.0

    def run(self) -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = self.context.run(self.function, **self.kwargs)
        except BaseException as caught:  # noqa: BLE001 - handed to the awaiting call, or discarded
            error = caught
        with _lock:
            self.done = True
            abandoned = self.abandoned
            if abandoned:
                left = _overrunning[self.name] - 1
                if left:
                    _overrunning[self.name] = left
                else:
                    del _overrunning[self.name]
        if abandoned:
            ended = f"raised {type(error).__name__}" if error is not None else "returned"
            _logger().warning(
                "tool %r: its abandoned sync function %s %.3f s after its call ended; that was discarded",
                self.name,
                ended,
                time.monotonic() - self.since,
            )
            return
        with contextlib.suppress(RuntimeError):  # the loop closed between the call's end and here
            self.loop.call_soon_threadsafe(self.settle, value, error)

    def settle(self, value: Any, error: BaseException | None) -> None:
        if self.future.done():
            return  # cancelled after the function returned: nothing overran, the outcome is dropped
        if error is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(value)

    def abandon(self) -> None:
        with _lock:
            if self.done:
                return
            self.abandoned = True
            self.since = time.monotonic()
            running = _overrunning[self.name] = _overrunning.get(self.name, 0) + 1
        _logger().warning(
            "tool %r: its sync function cannot be stopped; it runs on in its thread and its result will be "
            "discarded (%d of this tool's now)",
            self.name,
            running,
        )
