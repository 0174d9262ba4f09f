"""Code mode on DBOS across processes: a worker killed mid-snippet, and no completed nested call run again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from driver_support import database_url

WORKER = Path(__file__).with_name("_code_worker.py")
PATIENCE = 120.0  # seconds before a stuck worker fails the test (a guard, not a measurement)
CODE = "[await count(label='a'), await count(label='b'), await ship(label='c'), await count(label='d')]"


def _lines(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def _kill_when(log: Path, arguments: list[str], line: str) -> None:
    """Start a worker, SIGKILL it once `line` is in the effect log."""
    first = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + PATIENCE
        while line not in _lines(log):
            assert first.poll() is None, first.communicate()[1]
            assert time.monotonic() < deadline, f"gave up waiting; the log holds {_lines(log)}"
            time.sleep(0.01)
        os.kill(first.pid, signal.SIGKILL)
        first.communicate(timeout=PATIENCE)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate(timeout=PATIENCE)


def _run_again(log: Path, arguments: list[str]) -> dict[str, Any]:
    """Let held tools finish and drive the same code call again: its status, error flag and text."""
    log.with_suffix(".hold").unlink()
    second = subprocess.run(arguments, capture_output=True, text=True, timeout=PATIENCE, check=False)
    assert second.returncode == 0, second.stderr
    result: dict[str, Any] = json.loads(second.stdout.splitlines()[-1])
    return result


def _arguments(tmp_path: Path, request: pytest.FixtureRequest, code: str) -> tuple[Path, list[str]]:
    url = database_url("sqlite", tmp_path, request)
    log = tmp_path / "effects.log"
    log.with_suffix(".hold").touch()
    return log, [sys.executable, str(WORKER), url, str(log), "run-1", code]


def test_a_worker_killed_mid_snippet_runs_no_completed_nested_call_again(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """SIGKILL while the third nested call runs: after recovery the first two are not run again, the rest complete."""
    log, arguments = _arguments(tmp_path, request, CODE)
    _kill_when(log, arguments, "ship c")
    assert _lines(log) == ["ready", "count a", "count b", "ship c"]
    result = _run_again(log, arguments)
    assert result["status"] == "done" and not result["error"], result
    report = json.loads(result["text"])
    assert report["result"] == ["counted a", "counted b", "shipped c", "counted d"]
    effects = [line for line in _lines(log) if line != "ready"]
    assert effects.count("count a") == 1 and effects.count("count b") == 1  # recorded, not run again
    assert effects.count("count d") == 1 and "ship c" in effects


def test_a_worker_killed_mid_batch_runs_no_completed_call_of_the_batch_again(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """SIGKILL while a gather's third call runs, its first two done: after recovery they are not run again."""
    code = "import asyncio\nawait asyncio.gather(peek(label='a'), peek(label='b'), ship(label='c'), count(label='d'))"
    log, arguments = _arguments(tmp_path, request, code)
    _kill_when(log, arguments, "ship c")
    lines = _lines(log)
    assert sorted(lines[1:3]) == ["peek a", "peek b"] and lines[3:] == ["ship c"]  # d waits its turn: not SAFE
    result = _run_again(log, arguments)
    assert result["status"] == "done" and not result["error"], result
    assert json.loads(result["text"])["result"] == ["peeked a", "peeked b", "shipped c", "counted d"]
    effects = [line for line in _lines(log) if line != "ready"]
    assert effects.count("peek a") == 1 and effects.count("peek b") == 1  # recorded, not run again
    assert effects.count("count d") == 1 and effects.count("ship c") == 2  # ship (IDEMPOTENT) ran again


def test_a_nested_call_of_unknown_outcome_stops_the_recovered_snippet(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """SIGKILL mid-write (no effect promise): after recovery the snippet stops there; nothing after it runs."""
    code = "[await count(label='a'), await write(label='w'), await count(label='d')]"
    log, arguments = _arguments(tmp_path, request, code)
    _kill_when(log, arguments, "write w")
    result = _run_again(log, arguments)
    assert result["error"], result
    report = json.loads(result["text"])
    assert report["error"].startswith('error: the snippet was stopped: nested call 2 of tool "write" was interrupted')
    assert [line for line in _lines(log) if line != "ready"] == ["count a", "write w"]


def test_an_approval_asked_mid_code_resumes_the_same_run_in_another_process(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """An approval asked mid-snippet is answered from another process; the run resumes, nothing before it runs again."""
    code = "[await count(label='a'), await approve(label='x'), await count(label='d')]"
    log, arguments = _arguments(tmp_path, request, code)
    log.with_suffix(".hold").unlink()

    def worker(*extra: str) -> Any:
        done = subprocess.run([*arguments[:4], *extra], capture_output=True, text=True, timeout=PATIENCE, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    asked = worker("run-1", arguments[5])
    assert asked["status"] == "waiting" and asked["text"] == "approve x?"
    assert worker("--answer", asked["key"], "true") is True
    done = worker("run-1", arguments[5])
    assert done["status"] == "done" and not done["error"], done
    assert json.loads(done["text"])["result"] == ["counted a", "approved x", "counted d"]
    assert [line for line in _lines(log) if line != "ready"] == ["count a", "approved x", "count d"]
