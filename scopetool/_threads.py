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
in the middle of a tool). Unlike it, the pool is not the loop's default executor: a loop's
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
from typing import Any, Final, TypeAlias

__all__ = ["run_sync"]

_Job: TypeAlias = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", contextvars.Context, Callable[..., Any], Any]

MAX_THREADS: Final = min(32, (os.cpu_count() or 1) + 4)
"""The most worker threads the pool starts (the default executor's bound)."""


class _Pool:
    """The worker threads and their queue; `pending` counts the calls queued or running."""

    __slots__ = ("idle", "jobs", "lock", "pending", "settled", "threads")

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.settled = threading.Condition(self.lock)
        self.idle = 0
        self.pending = 0
        self.threads = 0


_pool = _Pool()


def run_sync(fn: Callable[..., Any], kwargs: dict[str, Any]) -> asyncio.Future[Any]:
    """Run ``fn(**kwargs)`` on a worker thread in a copy of the caller's context; await the future for its outcome.

    Called from a coroutine (it needs the running loop). The function's exception, `BaseException`s
    included, is the future's (a `StopIteration`, which a future cannot hold, as the cause of a
    `RuntimeError`); cancelling the future before the call starts means it never starts.
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
    pool.jobs.put((loop, future, contextvars.copy_context(), fn, kwargs))
    if start:
        threading.Thread(target=_work, args=(pool,), name="scopetool-sync-tool", daemon=True).start()
    return future


def _work(pool: _Pool) -> None:
    """A worker: run each queued call, hand its outcome to its loop, and wait for the next."""
    jobs = pool.jobs
    while True:
        loop, future, context, fn, kwargs = jobs.get()
        settle: Callable[..., None] | None = None
        outcome: Any = None
        if not future.cancelled():  # a read of its state; a call cancelled in the queue never starts
            try:
                outcome, settle = context.run(fn, **kwargs), _done
            except BaseException as error:  # noqa: BLE001 - every outcome goes back to the awaiting task
                outcome, settle = error, _fail
        del context, fn, kwargs  # nothing of a call outlives it in an idle thread
        # Idle before the outcome is handed back, so the call the loop makes next finds this thread.
        with pool.lock:
            pool.pending -= 1
            pool.idle += 1
            if not pool.pending:
                pool.settled.notify_all()
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
