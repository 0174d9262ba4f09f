"""The ``scopetool`` command: see what the model sees, try calls, lint definitions, check logs, serve MCP."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``scopetool`` command with `argv` (default: ``sys.argv[1:]``); return its exit code."""
    del argv
    sys.stderr.write("scopetool: not implemented yet\n")
    return 2
