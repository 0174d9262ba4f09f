"""Durability on a real Temporal dev server: workers killed mid-call and mid-wait, and three workers on one queue.

Each worker is a real process (``_temporal_worker.py``) polling one task queue; this process drives the
calls as a client. The tools' effect log and counter are files, so what the tests check is what the
tools did, across every process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from _temporal_worker import backend, registry
from temporalio.client import Client

from scopetool import Request
from scopetool.driver import CallStatus, Driver, Turn
from scopetool.providers import ToolCall, outcome_output

WORKER = Path(__file__).with_name("_temporal_worker.py")
PATIENCE = 60.0  # seconds before a stuck step fails the test (a guard, not a measurement)


class Workers:
    """Starts worker processes on one task queue and one effect log, and kills what it started."""

    def __init__(self, target: str, folder: Path) -> None:
        self.target = target
        self.log = folder / "effects.log"
        self.queue = f"durability-{uuid.uuid4().hex[:8]}"
        self.run_id = f"run-{uuid.uuid4().hex[:8]}"  # the server (and its key secret) outlives the test
        self.started: list[subprocess.Popen[str]] = []

    def spawn(self, name: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, str(WORKER), self.target, str(self.log), self.queue, name],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started.append(process)
        return process

    async def ready(self, *names: str) -> list[subprocess.Popen[str]]:
        """Start workers and wait until each one polls the queue."""
        processes = [self.spawn(name) for name in names]
        await self.wait_for(lambda lines: {f"ready {name}" for name in names} <= set(lines), *processes)
        return processes

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []

    def effects(self) -> list[str]:
        return [line for line in self.lines() if not line.startswith("ready")]

    async def wait_for(self, predicate: Callable[[list[str]], bool], *alive: subprocess.Popen[str]) -> None:
        """Poll the effect log until `predicate(lines)` holds (the workers named must stay alive meanwhile)."""
        deadline = time.monotonic() + PATIENCE
        while not predicate(self.lines()):
            for process in alive:
                assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, f"gave up waiting; the log holds {self.lines()}"
            await asyncio.sleep(0.02)

    @staticmethod
    def kill(process: subprocess.Popen[str]) -> None:
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=PATIENCE)

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                self.kill(process)


@pytest.fixture
async def workers(temporal_target: str, tmp_path: Path) -> AsyncIterator[Workers]:
    started = Workers(temporal_target, tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


async def driver(workers: Workers) -> Driver:
    """A driver in this process (a client: no worker), as a fresh connection to the server."""
    tools = registry(workers.log)
    return Driver(tools, backend(tools, await Client.connect(workers.target), workers.queue))


def call(call_id: str, name: str, arguments: str = "{}") -> ToolCall:
    return ToolCall(id=call_id, request=Request(name=name, arguments=arguments))


def texts(turn: Turn) -> list[str]:
    result: list[str] = []
    for item in turn.results:
        assert item.outcome is not None
        output, error = outcome_output(item.call.name, item.outcome)
        result.append(("error: " if error else "") + (output.text() or ""))
    return result


async def test_a_worker_killed_mid_call_recovers_each_call_by_its_promise(workers: Workers) -> None:
    """SIGKILL mid-count, then mid-charge: the count is not run again (once, outcome unknown), the charge is retried."""
    turn = [call("n", "count"), call("c", "charge", '{"cents": 5}')]
    workers.log.with_suffix(".hold").touch()
    (first,) = await workers.ready("worker-1")
    running = asyncio.create_task(asyncio.wait_for((await driver(workers)).run(workers.run_id, turn), PATIENCE))

    await workers.wait_for(lambda lines: any(line.startswith("count 1") for line in lines), first)
    workers.kill(first)
    (second,) = await workers.ready("worker-2")  # the count's attempt is lost, then the charge runs here
    await workers.wait_for(lambda lines: any(line.startswith("charge ") for line in lines), second)
    workers.kill(second)
    workers.log.with_suffix(".hold").unlink()
    await workers.ready("worker-3")  # the charge's lost attempt is retried here

    results = await running
    assert texts(results) == ['error: error: tool "count" was interrupted; its outcome is unknown', "charged 5"]
    key = results.results[1].key
    assert workers.effects() == ["count 1 worker-1", f"attempt {key}", f"charge {key}", f"attempt {key}"]
    assert workers.log.with_suffix(".count").read_text() == "1"
    again = await (await driver(workers)).run(workers.run_id, turn)  # a replay runs nothing
    assert texts(again) == texts(results)
    assert workers.log.with_suffix(".count").read_text() == "1"


async def test_a_worker_killed_while_an_approval_waits_runs_the_tool_once_with_the_answer(workers: Workers) -> None:
    """SIGKILL while an approval waits: a new worker takes the answer (once), and the tool runs exactly once."""
    turn = [call("r", "remove", '{"path": "/srv/old"}'), call("n", "count")]
    (first,) = await workers.ready("worker-1")
    waiting = await asyncio.wait_for((await driver(workers)).run(workers.run_id, turn), PATIENCE)
    assert [r.status for r in waiting.results] == [CallStatus.WAITING, CallStatus.HELD]
    assert waiting.results[0].request is not None and "Remove /srv/old?" in waiting.results[0].request.prompt
    workers.kill(first)
    assert workers.effects() == []  # nothing ran before the answer

    await workers.ready("worker-2")
    answering = await driver(workers)  # another client: a restarted process
    key = waiting.results[0].key
    assert await asyncio.wait_for(answering.answer(key, True), PATIENCE)
    assert not await asyncio.wait_for(answering.answer(key, False), PATIENCE)  # a duplicate answer is refused
    results = await asyncio.wait_for(answering.run(workers.run_id, turn), PATIENCE)
    assert texts(results) == ["removed /srv/old", "1"]
    assert workers.effects() == [f"removed /srv/old {key}", "count 1 worker-2"]


async def test_three_workers_on_one_queue_run_each_call_once(workers: Workers) -> None:
    """Three workers poll one queue while two clients drive the same turn at once: every call runs once."""
    await workers.ready("worker-1", "worker-2", "worker-3")
    turn = [call(f"c{i}", "charge", f'{{"cents": {i}}}') for i in range(3)] + [call("n", "count")]
    drivers = [await driver(workers), await driver(workers)]
    first, second = await asyncio.wait_for(
        asyncio.gather(*(one.run(workers.run_id, turn) for one in drivers)), PATIENCE
    )
    assert texts(first) == texts(second) == [f"charged {i}" for i in range(3)] + ["1"]
    keys = [r.key for r in first.results[:3]]
    effects: list[Any] = workers.effects()
    assert sorted(line for line in effects if not line.startswith("count")) == sorted(
        [f"attempt {k}" for k in keys] + [f"charge {k}" for k in keys]
    )
    assert [line.rsplit(" ", 1)[0] for line in effects if line.startswith("count")] == ["count 1"]
    assert workers.log.with_suffix(".count").read_text() == "1"
