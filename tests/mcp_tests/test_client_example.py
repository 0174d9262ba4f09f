"""examples/mcp_client.py runs: it uses an MCPServer's tools, refuses a bad call, pins them, refuses a change."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.needs("mcp")  # runs the MCP SDK in a subprocess

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_client.py"


def test_the_client_example_prints_what_its_docstring_says() -> None:
    """Listed, called, a bad call refused, exported, pinned; then the changed tool refused by name."""
    completed = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=True, timeout=120, env=os.environ.copy()
    )
    assert completed.stderr == ""
    assert completed.stdout.splitlines() == [
        "tools: ['add_note', 'count_notes']",
        "call: noted 'buy milk' (priority 2); 1 note(s)",
        "refused before sending: - $.priority: expected integer (got a string)",
        "anthropic sees: ['add_note', 'count_notes']",
        "pinned: ['add_note', 'count_notes']",
        "tools: ['count_notes']",
        'refused: tool "add_note" of MCP server "notes" changed since it was pinned (description)',
    ]
