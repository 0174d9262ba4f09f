"""The durable approval example: asked in one process, answered after a restart in another."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scopetool.driver.dbos import _sqlite_problem  # pyright: ignore[reportPrivateUsage]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "durable_approval.py"


def test_the_approval_survives_a_restart_and_moves_money_once() -> None:
    """The second process finds the call waiting, answers once, and the ledger holds one transfer."""
    problem = _sqlite_problem("sqlite:///calls.sqlite")  # the example keeps its calls in SQLite
    if problem is not None:
        pytest.skip(problem)
    completed = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=True, timeout=120)
    lines = completed.stdout.splitlines()
    assert lines[:4] == [
        "process 1: waiting: Send 12.50 to ACME-7?",
        "process 2: after the restart, waiting: Send 12.50 to ACME-7?",
        "process 2: a person approves: True",
        "process 2: a second answer is ignored: True",
    ]
    assert (
        lines[4]
        == "process 2: done: {'role': 'tool', 'tool_call_id': 'call_1', 'content': 'sent 1250 cents to ACME-7'}"
    )
    ledger = json.loads(lines[5].removeprefix("ledger: "))
    assert list(ledger.values()) == [{"to": "ACME-7", "cents": 1250}]
    assert completed.stderr == ""
