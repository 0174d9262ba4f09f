"""`scopetool._threads.run_sync`: sync tools run off the event loop in the caller's context, as `asyncio.to_thread`."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from scopetool import Request, _threads, bind, tool
from scopetool._threads import MAX_THREADS, run_sync

ROOT = Path(__file__).resolve().parents[1]
WHO: contextvars.ContextVar[str] = contextvars.ContextVar("WHO", default="nobody")


def _settle() -> None:
    """Wait until the pool has no call queued or running."""
    with _threads._pool.lock:
        assert _threads._pool.settled.wait_for(lambda: not _threads._pool.pending, timeout=10)


async def test_the_call_runs_on_a_worker_thread_in_a_copy_of_the_callers_context() -> None:
    """The function sees the caller's context variables; what it sets stays in its copy; the loop's thread is free."""
    loop_thread = threading.get_ident()
    WHO.set("caller")

    def look() -> tuple[str, int]:
        seen = WHO.get()
        WHO.set("tool")
        return seen, threading.get_ident()

    seen, thread = await run_sync(look, {})
    assert seen == "caller"
    assert thread != loop_thread
    assert WHO.get() == "caller"


async def test_keyword_arguments_reach_the_function_and_its_value_comes_back() -> None:
    """``fn(**kwargs)``: the value is the future's result."""
    assert await run_sync(lambda a, b: a * 10 + b, {"a": 4, "b": 2}) == 42


@pytest.mark.parametrize("error", [ValueError("bad"), KeyboardInterrupt(), SystemExit(3)])
async def test_what_the_function_raises_is_raised_in_the_awaiting_coroutine(error: BaseException) -> None:
    """Every exception, BaseExceptions included, is the awaiting coroutine's, the same object."""

    def fail() -> None:
        raise error

    with pytest.raises(type(error)) as caught:
        await run_sync(fail, {})
    assert caught.value is error


async def test_a_stop_iteration_comes_back_as_the_cause_of_a_runtime_error() -> None:
    """A future cannot hold StopIteration (asyncio.to_thread's call hangs on it): the call fails, naming it."""
    stop = StopIteration("done")

    def stop_now() -> None:
        raise stop

    with pytest.raises(RuntimeError, match="StopIteration") as caught:
        await asyncio.wait_for(run_sync(stop_now, {}), 10)
    assert caught.value.__cause__ is stop


async def test_calls_run_concurrently() -> None:
    """Four calls that wait for each other at a barrier all finish: they run on four threads at once."""
    barrier = threading.Barrier(4, timeout=10)
    idents = await asyncio.gather(*(run_sync(lambda: (barrier.wait(), threading.get_ident())[1], {}) for _ in range(4)))
    assert len(set(idents)) == 4


async def test_threads_are_reused_and_bounded() -> None:
    """A hundred calls one after another start no thread beyond the pool's bound, and reuse the idle ones."""
    await run_sync(threading.get_ident, {})
    _settle()
    before = _threads._pool.threads
    idents = {await run_sync(threading.get_ident, {}) for _ in range(100)}
    assert _threads._pool.threads == before <= MAX_THREADS
    assert len(idents) <= before


async def test_a_call_cancelled_in_the_queue_never_runs() -> None:
    """With every worker busy, a queued call that is cancelled is dropped unrun when a worker frees up."""
    release = threading.Event()
    busy = [asyncio.ensure_future(run_sync(release.wait, {"timeout": 10})) for _ in range(MAX_THREADS)]
    ran = threading.Event()
    queued = asyncio.ensure_future(run_sync(ran.set, {}))
    await asyncio.sleep(0.05)
    queued.cancel()
    release.set()
    assert all(await asyncio.gather(*busy))
    _settle()
    assert not ran.is_set()


async def test_a_call_cancelled_while_it_runs_finishes_and_its_outcome_is_dropped() -> None:
    """The function runs to its end in its thread; the cancelled future keeps its cancellation."""
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def work() -> str:
        started.set()
        release.wait(10)
        finished.set()
        return "late"

    future = asyncio.ensure_future(run_sync(work, {}))
    await asyncio.to_thread(started.wait, 10)
    future.cancel()
    release.set()
    _settle()
    await asyncio.sleep(0)  # the hand-back runs on the loop, and finds the future cancelled
    assert finished.is_set()
    assert future.cancelled()


def test_a_call_whose_loop_closed_meanwhile_is_dropped_quietly() -> None:
    """The worker finds the loop closed when it hands the outcome back: no error in the thread, the pool goes on."""
    release = threading.Event()
    errors: list[Any] = []
    previous = threading.excepthook
    threading.excepthook = errors.append
    try:
        loop = asyncio.new_event_loop()
        waiting: list[Any] = []

        async def start() -> None:
            waiting.append(run_sync(release.wait, {"timeout": 10}))
            waiting[0].send(None)  # the call is queued; its coroutine is left waiting on its future

        loop.run_until_complete(start())
        loop.close()
        release.set()
        _settle()
        waiting[0].close()
    finally:
        threading.excepthook = previous
    assert errors == []
    assert asyncio.run(_call(lambda: "still works")) == "still works"


async def _call(fn: Any) -> Any:
    return await run_sync(fn, {})


def test_a_forked_child_starts_with_an_empty_pool() -> None:
    """After a fork the parent's threads are gone: the child's pool starts from none and runs calls."""
    parent = _threads._pool
    try:
        _threads._after_fork()
        assert _threads._pool is not parent
        assert (_threads._pool.threads, _threads._pool.pending, _threads._pool.idle) == (0, 0, 0)
        assert asyncio.run(_call(lambda: 7)) == 7
    finally:
        _threads._pool = parent


def test_the_interpreter_waits_at_exit_for_a_sync_tool_still_running(tmp_path: Path) -> None:
    """A sync tool whose call timed out still finishes before the process ends: its file is written."""
    done = tmp_path / "done.txt"
    script = f"""
import asyncio, time
from pathlib import Path
from scopetool import Request, bind, tool

@tool
def slow() -> str:
    \"\"\"Take a while, then leave a mark.\"\"\"
    time.sleep(0.5)
    Path({str(done)!r}).write_text("written")
    return "ok"

binding = bind(slow)

async def main() -> None:
    try:
        await asyncio.wait_for(binding.call(binding.contract.prepare(Request(name="slow"))), 0.05)
    except TimeoutError:
        print("timed out")

asyncio.run(main())
"""
    started = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=ROOT, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "timed out"
    assert done.read_text() == "written"
    assert time.monotonic() - started >= 0.5


async def test_a_sync_func_runs_through_the_pool() -> None:
    """A sync `@tool` runs on a pool thread in the caller's context (the binding's call goes through run_sync)."""
    WHO.set("driver")

    @tool
    def where() -> str:
        """Say which thread and whose context."""
        return f"{threading.current_thread().name}:{WHO.get()}"

    binding = bind(where)
    result = await binding.call(binding.contract.prepare(Request(name="where")))
    assert result.output.text() == "scopetool-sync-tool:driver"


async def test_an_error_of_a_call_cancelled_while_it_runs_is_dropped() -> None:
    """A function that raises after its call was cancelled: the future stays cancelled, nothing is logged."""
    started, release = threading.Event(), threading.Event()

    def fail_late() -> None:
        started.set()
        release.wait(10)
        raise ValueError("too late")

    future = asyncio.ensure_future(run_sync(fail_late, {}))
    await asyncio.to_thread(started.wait, 10)
    future.cancel()
    release.set()
    _settle()
    await asyncio.sleep(0)
    assert future.cancelled()


def test_the_exit_hook_returns_once_nothing_is_pending() -> None:
    """With no call queued or running, the hook the interpreter runs at exit returns at once."""
    _settle()
    _threads._wait_at_exit()
    assert _threads._pool.pending == 0


async def test_calls_cancelled_while_they_hang_give_their_workers_places_to_new_ones() -> None:
    """Every worker hung in a call whose caller left: a new call still runs at once; the hung ones are counted."""
    release = threading.Event()
    started = threading.Semaphore(0)

    def hang() -> None:
        started.release()
        release.wait(10)

    hung = [asyncio.ensure_future(run_sync(hang, {})) for _ in range(MAX_THREADS)]
    for _ in range(MAX_THREADS):
        assert await asyncio.to_thread(started.acquire, True, 10)
    for future in hung:
        future.cancel()
    await asyncio.sleep(0)  # each awaiting task sees its cancellation on the loop
    try:
        assert _threads.abandoned_calls() == MAX_THREADS
        assert await asyncio.wait_for(run_sync(lambda: "prompt", {}), 2) == "prompt"
    finally:
        release.set()
        _settle()
    assert _threads.abandoned_calls() == 0


async def test_past_the_bound_a_cancelled_call_keeps_its_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """With MAX_ABANDONED threads abandoned, the next call cancelled while it runs is not replaced."""
    monkeypatch.setattr(_threads, "MAX_ABANDONED", 1)
    release = threading.Event()
    started = threading.Semaphore(0)

    def hang() -> None:
        started.release()
        release.wait(10)

    first, second = asyncio.ensure_future(run_sync(hang, {})), asyncio.ensure_future(run_sync(hang, {}))
    for _ in range(2):
        assert await asyncio.to_thread(started.acquire, True, 10)
    threads = _threads._pool.threads
    first.cancel()
    second.cancel()
    await asyncio.sleep(0)
    try:
        assert _threads.abandoned_calls() == 1
        assert _threads._pool.threads == threads
    finally:
        release.set()
        _settle()
