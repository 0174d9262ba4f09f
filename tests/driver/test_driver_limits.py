"""Timeouts and retry budgets under the driver, in memory and on DBOS with SQLite."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from driver_support import database_url

from scopetool import Effect, Failure, FailureKind, Registry, Request, overrunning_calls, tool
from scopetool.driver import CallStatus, Driver, MemoryBackend, RetryBudgetExceededError, Turn
from scopetool.providers import ToolCall, UnknownToolError, openai_chat

LIMIT = 0.05
STARTS: list[str] = []
"""Every start of a tool's body, across tests (each test uses fresh run ids)."""
GATE = threading.Event()
"""The sync tools wait on it; set at the end of each test so no abandoned thread outlives it."""


@tool(effect=Effect.SAFE, timeout=LIMIT)
async def slow_read(label: str) -> str:
    """Read, too slowly."""
    STARTS.append(f"read {label}")
    await asyncio.Event().wait()
    return "read"


@tool(timeout=LIMIT)
async def slow_write(label: str) -> str:
    """Write with no promise, too slowly."""
    STARTS.append(f"write {label}")
    await asyncio.Event().wait()
    return "written"


@tool(effect=Effect.SAFE, timeout=LIMIT)
def slow_sync_read(label: str) -> str:
    """Read in a sync function, too slowly."""
    STARTS.append(f"sync read {label}")
    GATE.wait(10)
    return "read"


@tool(timeout=LIMIT)
def slow_sync_write(label: str) -> str:
    """Write in a sync function with no promise, too slowly."""
    STARTS.append(f"sync write {label}")
    GATE.wait(10)
    return "written"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


REGISTRY = Registry(slow_read, slow_write, slow_sync_read, slow_sync_write, add)
TIMED = ["slow_read", "slow_write", "slow_sync_read", "slow_sync_write"]
SHOWN = {
    "slow_read": 'error: tool "slow_read" timed out',
    "slow_sync_read": 'error: tool "slow_sync_read" timed out',
    "slow_write": 'error: tool "slow_write" timed out; its outcome is unknown',
    "slow_sync_write": 'error: tool "slow_sync_write" timed out; its outcome is unknown',
}


@pytest.fixture(autouse=True)
def _release() -> Iterator[None]:
    GATE.clear()
    yield
    GATE.set()
    for _ in range(2000):
        if not overrunning_calls():
            break
        time.sleep(0.005)


@pytest.fixture(scope="module", params=["memory", "dbos-sqlite"])
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Driver]:
    """A driver with a retry budget of 2, on each backend."""
    if request.param == "memory":
        yield Driver(REGISTRY, MemoryBackend(), retry_budget=2)
        return
    dbos = pytest.importorskip("scopetool.driver.dbos")
    url = database_url("sqlite", tmp_path_factory.mktemp("limits"), request)
    with dbos.DbosBackend(REGISTRY, url, executor_id="limits", poll_interval=0.05) as backend:
        yield Driver(REGISTRY, backend, retry_budget=2)


def calls(*specs: tuple[str, Any], first: int = 0) -> list[ToolCall]:
    """Calls with ids c0, c1, ... of (tool, arguments) pairs."""
    return [
        ToolCall(id=f"c{first + i}", request=Request(name=name, arguments=json.dumps(arguments)))
        for i, (name, arguments) in enumerate(specs)
    ]


def texts(turn: Turn) -> list[str]:
    return [m["content"] for m in turn.messages(openai_chat)]


async def test_timed_out_calls_end_by_their_effect_and_never_run_again(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    """SAFE calls past their timeout failed, others have an unknown outcome; driving the turn again runs none."""
    caplog.set_level(logging.WARNING)
    run = uuid.uuid4().hex
    turn_calls = calls(*[(name, {"label": run}) for name in TIMED])
    first = await driver.run(run, turn_calls)
    assert [r.status for r in first.results] == [CallStatus.DONE] * 4
    assert texts(first) == [SHOWN[name] for name in TIMED]
    for result in first.results:
        assert isinstance(result.outcome, Failure)  # stored outcomes come back as Failures of what was shown
    timed_out = [
        r.getMessage()
        for r in caplog.records
        if r.name == "scopetool.timeouts" and " timed out after " in r.getMessage()
    ]
    assert len(timed_out) == 4
    assert not [r for r in caplog.records if r.name == "scopetool.driver"]  # logged once, by the timeout
    again = await driver.run(run, turn_calls)
    assert texts(again) == texts(first)
    assert sorted(s for s in STARTS if s.endswith(run)) == sorted(
        f"{kind} {run}" for kind in ("read", "write", "sync read", "sync write")
    )


async def test_a_retry_budget_ends_a_run_of_rejected_calls(driver: Driver) -> None:
    """Past the budget, a rejected call gets a final text; the same turn driven again counts nothing twice."""
    run = uuid.uuid4().hex
    bad = {"a": "two", "b": 3}
    answers: list[tuple[CallStatus, str]] = []
    for attempt in range(4):
        turn = await driver.run(run, calls(("add", bad), first=attempt))
        answers.append((turn.results[0].status, texts(turn)[0]))
    assert [status for status, _ in answers] == [CallStatus.DONE, CallStatus.DONE] + [CallStatus.EXHAUSTED] * 2
    assert answers[0][1].startswith("invalid arguments for tool 'add'")
    final = 'error: tool "add" was not run: too many rejected calls of it in this run; do not call it again'
    assert [text for _, text in answers[2:]] == [final, final]
    replayed = await driver.run(run, calls(("add", bad), first=1))  # the second attempt, driven again
    assert replayed.results[0].status is CallStatus.DONE
    assert replayed.complete
    fixed = await driver.run(run, calls(("add", {"a": 2, "b": 3}), first=9))
    assert texts(fixed) == ["5"]  # an admitted call still runs
    exhausted = (await driver.run(run, calls(("add", bad), first=5))).results[0]
    assert isinstance(exhausted.outcome, Failure)
    assert exhausted.outcome.kind is FailureKind.REJECTED
    cause = exhausted.outcome.cause
    assert isinstance(cause, RetryBudgetExceededError)
    assert (cause.name, cause.attempt, cause.budget) == ("add", 5, 2)
    other_run = await driver.run(uuid.uuid4().hex, calls(("add", bad)))
    assert other_run.results[0].status is CallStatus.DONE  # each run has its own budget


async def test_unknown_tools_are_counted_by_name(driver: Driver) -> None:
    """Calls of a tool that does not exist spend that name's budget, not another tool's."""
    run = uuid.uuid4().hex
    turn = await driver.run(run, calls(("nope", {}), ("nope", {}), ("nope", {}), ("add", {})))
    assert [r.status for r in turn.results] == [CallStatus.DONE, CallStatus.DONE, CallStatus.EXHAUSTED, CallStatus.DONE]
    assert isinstance(turn.results[0].outcome, UnknownToolError)
    final = 'error: tool "nope" was not run: too many rejected calls of it in this run; do not call it again'
    assert texts(turn)[2] == final


async def test_without_a_budget_every_rejection_is_a_retry_prompt() -> None:
    """A driver without a retry budget answers every rejected call with its rejection."""
    plain = Driver(REGISTRY)
    run = uuid.uuid4().hex
    turn = await plain.run(run, calls(*[("add", {"a": "x"})] * 5))
    assert {r.status for r in turn.results} == {CallStatus.DONE}
    assert all(text.startswith("invalid arguments") for text in texts(turn))


async def test_a_budget_of_zero_answers_the_first_rejection_with_the_final_text() -> None:
    """retry_budget=0: no retry prompt at all."""
    turn = await Driver(REGISTRY, retry_budget=0).run("r", calls(("add", {})))
    assert turn.results[0].status is CallStatus.EXHAUSTED


def test_a_retry_budget_must_be_a_count() -> None:
    """A budget that is not a non-negative int is refused."""
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="retry_budget must be a non-negative int or None"):
            Driver(REGISTRY, retry_budget=bad)  # type: ignore[arg-type]


async def test_a_driver_forgets_the_least_recently_driven_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past KEPT_RUNS runs, the oldest run's counts are dropped: its budget starts again."""
    from scopetool.driver import _driver as driver_module

    monkeypatch.setattr(driver_module, "KEPT_RUNS", 2)
    budgeted = Driver(REGISTRY, retry_budget=1)
    for run in ("a", "b", "a", "c"):  # "b" is the least recently driven when "c" arrives
        await budgeted.run(run, calls(("add", {})))
    assert (await budgeted.run("a", calls(("add", {}), first=1))).results[0].status is CallStatus.EXHAUSTED
    assert (await budgeted.run("b", calls(("add", {}), first=1))).results[0].status is CallStatus.DONE
