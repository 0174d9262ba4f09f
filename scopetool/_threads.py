"""Sync tools off the event loop: a reused pool of worker threads with the least work per call.

``asyncio.to_thread`` makes, per call, a `concurrent.futures.Future` (a condition variable and its
lock), a work item, an executor submission that may start a thread, an asyncio future chained to the
first, and two cross-thread callbacks. `run_sync` keeps what makes it correct and drops the rest: the
caller's context is copied and the function runs in it on a worker thread, so the event loop never
runs user code; the worker hands the outcome back with one ``call_soon_threadsafe``. The pool is one
per process, started lazily, and holds at most the default executor's number of threads
(``min(32, os.cpu_count() + 4)``); a call that finds them all busy waits in the queue, as it would
there.

As with ``asyncio.to_thread``: a call cancelled before its worker picks it up never runs; one
cancelled while it runs finishes in its thread and its outcome is dropped; the interpreter waits at
exit for the calls still queued or running (here from an ``atexit`` hook, so a process does not end
in the middle of a tool). A thread cannot be stopped, so a call cancelled while it runs (its client
went away, its server is stopping) is abandoned: its thread no longer counts as one of the pool's,
a new worker takes its place, and it ends when its function returns. Without that, a few calls that
hang and whose callers left would hold every worker, and every other sync tool of the process would
wait behind them. Abandoned threads are counted (`abandoned_calls`, and a warning on the
``scopetool.threads`` logger) and bounded: past `MAX_ABANDONED` of them, a cancelled call keeps its
worker until it returns, so a process never holds more than ``MAX_THREADS + MAX_ABANDONED`` of these
threads. Unlike ``asyncio.to_thread``'s, the pool is not the loop's default executor: a loop's
``set_default_executor`` does not apply to sync tools, and ``asyncio.run`` returns without waiting
for a cancelled call that is still running.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, Final, final

__all__ = ["MAX_ABANDONED", "MAX_THREADS", "abandoned_calls", "run_sync"]

MAX_THREADS: Final = min(32, (os.cpu_count() or 1) + 4)
"""The most worker threads the pool starts (the default executor's bound)."""
MAX_ABANDONED: Final = 64
"""The most threads of cancelled calls still running that the pool replaces with new workers.

Each is a thread blocked in a function that will not return soon (a few tens of KiB of memory each,
its stack aside); 64 of them let a server keep answering through many calls whose clients left,
while a process still cannot be driven to thousands of threads by calls that hang.
"""


class _Pool:
    """The worker threads and their queue; `pending` counts the calls queued or running."""

    __slots__ = ("abandoned", "idle", "jobs", "lock", "pending", "settled", "threads")

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.settled = threading.Condition(self.lock)
        self.idle = 0
        self.pending = 0
        self.threads = 0
        self.abandoned = 0


_pool = _Pool()


@final
class _Call:
    """One call for a worker, and whether a worker runs it and whether its caller abandoned it."""

    __slots__ = ("abandoned", "context", "fn", "future", "kwargs", "loop", "running")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        fn: Callable[..., Any],
        kwargs: dict[str, Any],
    ) -> None:
        self.loop = loop
        self.future = future
        self.context = contextvars.copy_context()
        self.fn = fn
        self.kwargs = kwargs
        self.running = False
        self.abandoned = False


def _abandon(pool: _Pool, call: _Call) -> None:
    """A call cancelled while it runs gives its worker's place to a new one (up to `MAX_ABANDONED` of them)."""
    with pool.lock:
        if not call.running or pool.abandoned >= MAX_ABANDONED:
            return
        call.abandoned = True
        pool.abandoned += 1
        pool.idle += 1  # the replacement, started below, waits for the next call
        abandoned = pool.abandoned
    threading.Thread(target=_work, args=(pool,), name="scopetool-sync-tool", daemon=True).start()
    import logging  # noqa: PLC0415 - only an abandoned call has something to log

    logging.getLogger("scopetool.threads").warning(
        "a sync tool's call was cancelled while it runs; its thread runs on until the function returns, "
        "outside the pool (%d such threads now, at most %d are replaced)",
        abandoned,
        MAX_ABANDONED,
    )


def abandoned_calls() -> int:
    """How many sync calls cancelled while they ran still run in threads the pool has replaced."""
    with _pool.lock:
        return _pool.abandoned


async def run_sync(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Run ``fn(**kwargs)`` on a worker thread in a copy of the caller's context: its value.

    Awaited from a coroutine (it needs the running loop). The function's exception, `BaseException`s
    included, is raised here (a `StopIteration`, which a future cannot hold, as the cause of a
    `RuntimeError`); cancelling the awaiting task before the call starts means it never starts, and
    while it runs abandons its thread (see the module). The cancellation is seen here, where it
    arrives, so a call that is not cancelled pays for no callback.
    """
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    pool = _pool
    with pool.lock:
        pool.pending += 1
        if pool.idle:
            pool.idle -= 1
            start = False
        else:
            start = pool.threads < MAX_THREADS
            pool.threads += start
    call = _Call(loop, future, fn, kwargs)
    pool.jobs.put(call)
    if start:
        threading.Thread(target=_work, args=(pool,), name="scopetool-sync-tool", daemon=True).start()
    try:
        return await future
    except asyncio.CancelledError:
        if future.cancelled():  # the awaiting task's cancellation reached the future, not the function's own
            _abandon(pool, call)
        raise


def _work(pool: _Pool) -> None:
    """A worker: run each queued call, hand its outcome to its loop, and wait for the next.

    A worker whose call was abandoned ends with it: a new worker has taken its place.
    """
    jobs = pool.jobs
    while True:
        call = jobs.get()
        future = call.future
        settle: Callable[..., None] | None = None
        outcome: Any = None
        with pool.lock:
            # a read of its state; a call cancelled in the queue never starts
            call.running = not future.cancelled()
        if call.running:
            try:
                outcome, settle = call.context.run(call.fn, **call.kwargs), _done
            except BaseException as error:  # noqa: BLE001 - every outcome goes back to the awaiting task
                outcome, settle = error, _fail
        loop = call.loop
        # Idle before the outcome is handed back, so the call the loop makes next finds this thread.
        with pool.lock:
            abandoned = call.abandoned
            call.running = False
            pool.pending -= 1
            if abandoned:
                pool.abandoned -= 1
            else:
                pool.idle += 1
            if not pool.pending:
                pool.settled.notify_all()
        del call  # nothing of a call outlives it in an idle thread
        if abandoned:
            return
        if settle is not None:
            _hand_back(loop, settle, future, outcome)
        del loop, future, outcome, settle


def _hand_back(loop: asyncio.AbstractEventLoop, settle: Callable[..., None], *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the loop was closed meanwhile: nobody awaits the outcome any more
        loop.call_soon_threadsafe(settle, *args)


def _done(future: asyncio.Future[Any], value: Any) -> None:
    if not future.cancelled():
        future.set_result(value)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.cancelled():
        if isinstance(error, StopIteration):  # a future refuses it (asyncio.to_thread's call hangs on it)
            wrapped = RuntimeError("the sync tool raised StopIteration")
            wrapped.__cause__ = error
            error = wrapped
        future.set_exception(error)


@atexit.register
def _wait_at_exit() -> None:
    """At interpreter exit, wait for the calls still queued or running, as the default executor's exit does."""
    with _pool.lock:
        _pool.settled.wait_for(lambda: not _pool.pending)


def _after_fork() -> None:
    """A forked child has none of its parent's threads: it starts with a new, empty pool."""
    global _pool  # noqa: PLW0603 - the one pool of the process
    _pool = _Pool()


os.register_at_fork(after_in_child=_after_fork)
