"""Durability across processes: SIGKILL mid-call and mid-wait, restarts, and two workers on one database.

Each worker is a real process (``_worker.py``) driving calls on DBOS; the tools' effect log is a file,
so what the tests check is what the tools did, across every process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from driver_support import DATABASES, database_url

WORKER = Path(__file__).with_name("_worker.py")
PATIENCE = 120.0  # seconds before a stuck worker fails the test (a guard, not a measurement)


class Workers:
    """Starts worker processes on one database and one effect log, and kills what it started."""

    def __init__(self, url: str, folder: Path) -> None:
        self.url = url
        self.log = folder / "effects.log"
        self.started: list[subprocess.Popen[str]] = []

    def spawn(self, *args: str, executor: str = "local") -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, str(WORKER), self.url, str(self.log), executor, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started.append(process)
        return process

    def finish(self, process: subprocess.Popen[str]) -> Any:
        out, err = process.communicate(timeout=PATIENCE)
        assert process.returncode == 0, err
        return json.loads(out.splitlines()[-1])

    def run(self, run_id: str, calls: list[dict[str, str]], executor: str = "local") -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.finish(self.spawn("run", run_id, json.dumps(calls), executor=executor))
        return result

    def answer(self, key: str, response: Any) -> bool:
        delivered: bool = self.finish(self.spawn("answer", key, json.dumps(response)))
        return delivered

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []

    def wait_for(self, predicate: Any, process: subprocess.Popen[str] | None = None) -> None:
        """Poll the effect log until `predicate(lines)` holds (the worker must stay alive meanwhile)."""
        deadline = time.monotonic() + PATIENCE
        while not predicate(self.lines()):
            assert process is None or process.poll() is None, process.communicate()[1] if process else ""
            assert time.monotonic() < deadline, f"gave up waiting; the log holds {self.lines()}"
            time.sleep(0.01)

    @staticmethod
    def kill(process: subprocess.Popen[str]) -> None:
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=PATIENCE)

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                self.kill(process)


@pytest.fixture(params=DATABASES)
def workers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(database_url(request.param, tmp_path, request), tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


def call(call_id: str, name: str, **arguments: Any) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


def test_a_worker_killed_mid_call_recovers_each_call_by_its_promise(workers: Workers) -> None:
    """SIGKILL mid-write, then mid-charge: the write is not run again, the charge's retry is deduplicated."""
    turn = [call("w", "write", text="a"), call("c", "charge", cents=5)]
    workers.log.with_suffix(".hold").touch()

    first = workers.spawn("run", "run-1", json.dumps(turn))
    workers.wait_for(lambda lines: "write a" in lines, first)
    workers.kill(first)

    second = workers.spawn("run", "run-1", json.dumps(turn))  # recovers the write, then runs the charge
    workers.wait_for(lambda lines: any(line.startswith("charge ") for line in lines), second)
    workers.kill(second)

    workers.log.with_suffix(".hold").unlink()
    results = workers.run("run-1", turn)
    assert [r["text"] for r in results] == [
        'error: error: tool "write" was interrupted; its outcome is unknown',
        "charged 5",
    ]
    charge_key = results[1]["key"]
    effects = [line for line in workers.lines() if not line.startswith("ready")]
    assert effects == ["write a", f"attempt {charge_key}", f"charge {charge_key}", f"attempt {charge_key}"]


def test_a_worker_killed_mid_wait_resumes_once_answered(workers: Workers) -> None:
    """SIGKILL while a call waits: another process answers it (once), the call finishes exactly once."""
    turn = [call("a", "approve", text="x"), call("w", "write", text="y")]
    first = workers.spawn("run", "run-1", json.dumps(turn), "--after-waiting=hang")
    assert first.stdout is not None
    waiting = json.loads(first.stdout.readline())
    assert [r["status"] for r in waiting] == ["waiting", "held"]
    workers.kill(first)

    key = waiting[0]["key"]
    assert workers.answer(key, True)
    assert not workers.answer(key, False)  # a duplicate answer is ignored
    results = workers.run("run-1", turn)
    assert [r["text"] for r in results] == ["approved x", "wrote y"]
    assert [line for line in workers.lines() if not line.startswith("ready")] == [f"approved {key}", "write y"]


@pytest.mark.parametrize("workers", ["sqlite"], indirect=True)  # the PostgreSQL wait is the class-based case above
def test_a_worker_killed_while_an_approval_waits_runs_the_tool_once_with_the_answer(workers: Workers) -> None:
    """SIGKILL while a one-line approval waits: answered in another process, a third runs the tool exactly once."""
    turn = [call("r", "remove", path="/srv/old"), call("w", "write", text="after")]
    first = workers.spawn("run", "run-1", json.dumps(turn), "--after-waiting=hang")
    assert first.stdout is not None
    waiting = json.loads(first.stdout.readline())
    assert [r["status"] for r in waiting] == ["waiting", "held"]
    workers.kill(first)
    assert [line for line in workers.lines() if not line.startswith("ready")] == []  # nothing ran before the answer

    key = waiting[0]["key"]
    assert workers.answer(key, True)
    results = workers.run("run-1", turn)
    assert [r["text"] for r in results] == ["removed /srv/old", "wrote after"]
    effects = [line for line in workers.lines() if not line.startswith("ready")]
    assert effects == [f"removed /srv/old {key}", "write after"]


def test_two_workers_on_one_postgres_database_run_each_call_once(
    postgres_server: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Both workers drive the same turn at the same time; each call runs in one of them, once."""
    workers = Workers(database_url("postgres", tmp_path, request), tmp_path)
    try:
        turn = [call(f"c{i}", "charge", cents=i) for i in range(3)] + [
            call(f"w{i}", "write", text=str(i)) for i in range(3)
        ]
        workers.log.with_suffix(".barrier").touch()
        pair = [workers.spawn("run", "run-1", json.dumps(turn), executor=name) for name in ("worker-1", "worker-2")]
        workers.wait_for(lambda lines: {"ready worker-1", "ready worker-2"} <= set(lines))
        workers.log.with_suffix(".go").touch()
        first, second = (workers.finish(process) for process in pair)
    finally:
        workers.stop_all()
    assert first == second
    assert [r["text"] for r in first] == [f"charged {i}" for i in range(3)] + [f"wrote {i}" for i in range(3)]
    effects = [line for line in workers.lines() if not line.startswith("ready")]
    keys = [r["key"] for r in first[:3]]
    assert sorted(effects) == sorted(
        [f"attempt {k}" for k in keys] + [f"charge {k}" for k in keys] + [f"write {i}" for i in range(3)]
    )
