"""Tests for scopetool._progress: Progress, report_progress and progress_reporter."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from scopetool import (
    Func,
    InvalidProgressError,
    Progress,
    Request,
    Result,
    ScopetoolError,
    bind,
    progress_reporter,
    report_progress,
    tool,
)


class Recorder:
    """A reporter that records each report and the thread it arrived on."""

    def __init__(self) -> None:
        self.reports: list[Progress] = []
        self.threads: list[int] = []

    def __call__(self, progress: Progress, /) -> None:
        self.reports.append(progress)
        self.threads.append(threading.get_ident())


async def run(func: Func[..., Any], arguments: str = "{}") -> Result:
    """Bind `func`, admit `arguments` and call it."""
    binding = bind(func)
    return await binding.call(binding.contract.prepare(Request(name=func.name, arguments=arguments)))


# --------------------------------------------------------------------------------------------------
# Progress


def test_progress_defaults() -> None:
    """Progress(completed) has total 0 (unbounded) and an empty message."""
    progress = Progress(3)
    assert (progress.completed, progress.total, progress.message) == (3, 0, "")


@pytest.mark.parametrize(
    ("completed", "total"),
    [(0, 0), (0.5, 1), (1, 1), (10, 10.0), (1e300, 0), (7, 0), (0, 5)],
    ids=["zero", "fraction", "done", "int-float", "huge-unbounded", "unbounded", "not-started"],
)
def test_valid_progress(completed: float, total: float) -> None:
    """Finite non-negative numbers with completed <= total (or total 0) are accepted."""
    progress = Progress(completed, total, "working")
    assert progress.completed == completed
    assert progress.total == total
    assert progress.message == "working"


def test_total_zero_means_unbounded() -> None:
    """With total 0 any finite completed value is valid, however large."""
    assert Progress(completed=10**6, total=0).completed == 10**6


@pytest.mark.parametrize(
    "value",
    [
        -1,
        -0.001,
        float("nan"),
        float("inf"),
        float("-inf"),
        True,
        False,
        "1",
        None,
        [1],
        1j,
        Decimal(1),
        Fraction(1, 2),
    ],
    ids=[
        "-1",
        "small-negative",
        "nan",
        "inf",
        "-inf",
        "true",
        "false",
        "str",
        "none",
        "list",
        "complex",
        "decimal",
        "frac",
    ],
)
@pytest.mark.parametrize("field", ["completed", "total"])
def test_invalid_numbers_rejected(value: Any, field: str) -> None:
    """Negative, NaN, infinite, boolean and non-number completed/total values are refused."""
    kwargs: dict[str, Any] = {"completed": 0, "total": 0, field: value}
    with pytest.raises(InvalidProgressError):
        Progress(**kwargs)


@pytest.mark.parametrize(("completed", "total"), [(2, 1), (1.5, 1), (100, 99.99)])
def test_completed_beyond_total_rejected(completed: float, total: float) -> None:
    """When a total is set, completed may not exceed it."""
    with pytest.raises(InvalidProgressError, match="exceeds"):
        Progress(completed, total)


@pytest.mark.parametrize("message", [None, 1, b"bytes", ["m"]], ids=["none", "int", "bytes", "list"])
def test_message_must_be_str(message: Any) -> None:
    """A message that is not a str is refused."""
    with pytest.raises(InvalidProgressError, match="message"):
        Progress(1, 2, message)


def test_progress_is_frozen_and_comparable() -> None:
    """Progress values are immutable and compare by value."""
    progress = Progress(1, 2, "half")
    with pytest.raises(dataclasses.FrozenInstanceError):
        progress.completed = 2  # type: ignore[misc]
    assert progress == Progress(1, 2, "half")
    assert progress != Progress(1, 2, "other")
    assert hash(progress) == hash(Progress(1, 2, "half"))


def test_invalid_progress_error_hierarchy() -> None:
    """InvalidProgressError is a ScopetoolError and a ValueError."""
    assert issubclass(InvalidProgressError, ScopetoolError)
    assert issubclass(InvalidProgressError, ValueError)


# --------------------------------------------------------------------------------------------------
# report_progress and progress_reporter


def test_report_without_reporter_is_a_no_op() -> None:
    """With no reporter installed, report_progress does nothing and returns None."""
    assert report_progress(Progress(1)) is None


@pytest.mark.parametrize("value", [None, 1, 0.5, {"completed": 1}, "50%"], ids=["none", "int", "float", "dict", "str"])
def test_report_progress_needs_a_progress(value: Any) -> None:
    """report_progress refuses anything but a Progress, with or without a reporter installed."""
    with pytest.raises(InvalidProgressError):
        report_progress(value)
    recorder = Recorder()
    with progress_reporter(recorder), pytest.raises(InvalidProgressError):
        report_progress(value)
    assert recorder.reports == []


def test_reporter_installed_inside_block_and_restored_after() -> None:
    """Reports inside the block reach the reporter; after the block they are dropped again."""
    recorder = Recorder()
    report_progress(Progress(0))
    with progress_reporter(recorder):
        report_progress(Progress(1, 3, "one"))
        report_progress(Progress(2, 3, "two"))
    report_progress(Progress(3, 3, "after"))
    assert recorder.reports == [Progress(1, 3, "one"), Progress(2, 3, "two")]


def test_nested_blocks_and_none_removes() -> None:
    """The innermost block wins; None removes the reporter; each exit restores the outer one."""
    outer, inner = Recorder(), Recorder()
    with progress_reporter(outer):
        report_progress(Progress(1, message="outer-1"))
        with progress_reporter(inner):
            report_progress(Progress(2, message="inner"))
            with progress_reporter(None):
                report_progress(Progress(3, message="nobody"))
            report_progress(Progress(4, message="inner-again"))
        report_progress(Progress(5, message="outer-2"))
    report_progress(Progress(6, message="none"))
    assert [p.message for p in outer.reports] == ["outer-1", "outer-2"]
    assert [p.message for p in inner.reports] == ["inner", "inner-again"]


def test_reporter_restored_when_block_raises() -> None:
    """An exception leaving the block still restores the previous reporter."""
    outer, inner = Recorder(), Recorder()
    with progress_reporter(outer):
        with pytest.raises(RuntimeError), progress_reporter(inner):
            raise RuntimeError("boom")
        report_progress(Progress(1))
    assert len(outer.reports) == 1
    assert inner.reports == []


@pytest.mark.parametrize("reporter", [1, "reporter", object(), Progress(1)], ids=["int", "str", "object", "progress"])
def test_non_callable_reporter_rejected(reporter: Any) -> None:
    """A reporter that is not callable is refused and nothing is installed."""
    recorder = Recorder()
    with progress_reporter(recorder):
        with pytest.raises(InvalidProgressError), progress_reporter(reporter):
            pass
        report_progress(Progress(1))
    assert len(recorder.reports) == 1


def test_reporter_is_called_synchronously_in_the_reporting_thread() -> None:
    """Outside any tool, the reporter runs in the caller's thread before report_progress returns."""
    recorder = Recorder()
    with progress_reporter(recorder):
        report_progress(Progress(1))
        assert len(recorder.reports) == 1
    assert recorder.threads == [threading.get_ident()]


# --------------------------------------------------------------------------------------------------
# From tools


@tool
async def async_steps(steps: int) -> str:
    """Report each step from an async tool."""
    for step in range(1, steps + 1):
        report_progress(Progress(step, steps, f"step {step}"))
        await asyncio.sleep(0)
    return "done"


@tool
def sync_steps(steps: int) -> str:
    """Report each step from a sync tool (it runs in a worker thread)."""
    for step in range(1, steps + 1):
        report_progress(Progress(step, steps, f"step {step}"))
    return "done"


async def test_async_tool_reports_reach_the_reporter() -> None:
    """Progress reported by an async tool reaches the installed reporter, in order."""
    recorder = Recorder()
    with progress_reporter(recorder):
        result = await run(async_steps, '{"steps": 3}')
    assert result.output.text() == "done"
    assert [(p.completed, p.total, p.message) for p in recorder.reports] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]


async def test_sync_tool_reports_from_a_worker_thread() -> None:
    """Progress reported by a sync tool reaches the reporter from a thread other than the event loop's."""
    recorder = Recorder()
    loop_thread = threading.get_ident()
    with progress_reporter(recorder):
        result = await run(sync_steps, '{"steps": 2}')
    assert result.output.text() == "done"
    assert [p.message for p in recorder.reports] == ["step 1", "step 2"]
    assert len(recorder.threads) == 2
    assert all(thread != loop_thread for thread in recorder.threads)


async def test_tool_called_outside_a_block_reports_to_nobody() -> None:
    """A tool called after the block has left reports to no reporter and still completes."""
    recorder = Recorder()
    with progress_reporter(recorder):
        pass
    assert (await run(sync_steps, '{"steps": 2}')).output.text() == "done"
    assert (await run(async_steps, '{"steps": 2}')).output.text() == "done"
    assert recorder.reports == []


@pytest.mark.parametrize("func", [async_steps, sync_steps], ids=["async", "sync"])
async def test_raising_reporter_does_not_change_the_outcome(
    func: Func[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A reporter that raises is logged on the "scopetool" logger; the call still returns its result."""
    calls: list[Progress] = []

    def broken(progress: Progress) -> None:
        calls.append(progress)
        raise RuntimeError("reporter exploded")

    caplog.set_level(logging.ERROR, logger="scopetool")
    with progress_reporter(broken):
        result = await run(func, '{"steps": 2}')
    assert result.output.text() == "done"
    assert len(calls) == 2  # the reporter stays installed after it raised
    records = [r for r in caplog.records if r.name == "scopetool"]
    assert len(records) == 2
    assert all(r.levelno == logging.ERROR for r in records)
    assert all(r.exc_info is not None and isinstance(r.exc_info[1], RuntimeError) for r in records)


def test_raising_reporter_outside_a_tool_is_contained(caplog: pytest.LogCaptureFixture) -> None:
    """A direct report_progress call does not propagate the reporter's error."""

    def broken(progress: Progress) -> None:
        raise ValueError("bad reporter")

    caplog.set_level(logging.ERROR, logger="scopetool")
    with progress_reporter(broken):
        assert report_progress(Progress(1)) is None
    assert any(r.name == "scopetool" and "reporter" in r.getMessage() for r in caplog.records)


async def test_concurrent_calls_get_only_their_own_reports() -> None:
    """Calls running concurrently in separate tasks, each with its own reporter, never see each other's reports."""
    both_started = asyncio.Barrier(2)
    seen_threads: set[int] = set()

    @tool
    async def tagged(tag: str) -> str:
        """Report interleaved with another call."""
        report_progress(Progress(1, 3, tag))
        await both_started.wait()
        for step in (2, 3):
            report_progress(Progress(step, 3, tag))
            await asyncio.sleep(0)
        return tag

    @tool
    def tagged_sync(tag: str) -> str:
        """Report from a worker thread, concurrently with another call."""
        seen_threads.add(threading.get_ident())
        for step in (1, 2, 3):
            report_progress(Progress(step, 3, tag))
        return tag

    async def one(func: Func[..., Any], tag: str, recorder: Recorder) -> str | None:
        with progress_reporter(recorder):
            result = await run(func, f'{{"tag": "{tag}"}}')
        return result.output.text()

    recorders = {name: Recorder() for name in ("a", "b", "c", "d")}
    outcomes = await asyncio.gather(
        one(tagged, "a", recorders["a"]),
        one(tagged, "b", recorders["b"]),
        one(tagged_sync, "c", recorders["c"]),
        one(tagged_sync, "d", recorders["d"]),
    )
    assert outcomes == ["a", "b", "c", "d"]
    for name, recorder in recorders.items():
        assert [p.message for p in recorder.reports] == [name] * 3
        assert [p.completed for p in recorder.reports] == [1, 2, 3]
    report_progress(Progress(9))  # the test's own context never had a reporter
    assert sum(len(r.reports) for r in recorders.values()) == 12


async def test_reporter_in_a_task_does_not_leak_to_the_parent() -> None:
    """A reporter installed inside a child task is not visible to the parent task."""
    recorder = Recorder()

    async def child() -> None:
        with progress_reporter(recorder):
            report_progress(Progress(1, message="child"))
            await asyncio.sleep(0)

    task = asyncio.create_task(child())
    await asyncio.sleep(0)
    report_progress(Progress(2, message="parent"))
    await task
    assert [p.message for p in recorder.reports] == ["child"]
