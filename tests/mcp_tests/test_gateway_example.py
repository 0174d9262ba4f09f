"""examples/mcp_gateway.py: the example config and policy run as a gateway, driven by the official client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.needs("mcp")  # runs the MCP SDK in a subprocess

ROOT = Path(__file__).resolve().parents[2]


def test_the_gateway_example_prefixes_guards_and_audits() -> None:
    """Prefixed collisions, the policy's refusal, a schema rejection, a denied tool, and the audit of each."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "mcp_gateway.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        "scopetool proxy: scopetool: 2 tools listed, 1 served",
        "scopetool proxy: work: 2 tools listed, 2 served",
        "scopetool proxy: home: 2 tools listed, 1 served",
        "tools: add, count_notes, home__add_note, work__add_note",
    ]
    assert lines[4].startswith("work__add_note: ok: noted 'Quarterly review on Friday' (priority 2)")
    assert lines[5] == 'work__add_note: error: error: tool "work__add_note" is not authorized'
    assert lines[6] == "home__add_note: error: invalid arguments for tool 'home__add_note' (1 problem):"
    assert lines[7] == (
        'home__count_notes: refused (error: tool "home__count_notes" is not available;'
        ' did you mean "count_notes" or "home__add_note"?)'
    )
    assert lines[8].startswith("count_notes: ok: ")
    assert lines[9:] == [
        "add: ok: 5",
        "audit:",
        "  work__add_note: admitted=True reason=None outcome=result",
        "  work__add_note: admitted=False reason=policy outcome=None",
        "  home__add_note: admitted=False reason=invalid outcome=None",
        "  home__count_notes: admitted=False reason=denied outcome=None",
        "  count_notes: admitted=True reason=None outcome=result",
        "  add: admitted=True reason=None outcome=result",
    ]
