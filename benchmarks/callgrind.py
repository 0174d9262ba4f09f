"""Instruction counts under valgrind's callgrind, for the benchmark scripts that report them.

A script run as ``SCRIPT --child CALLS`` does its setup, calls ``os.getppid()`` before each step it
measures (callgrind dumps its counts there), and prints one line of JSON last; `count_steps` runs it so
and gives that JSON and the instructions of each step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def count_steps(script: Path, calls: int, steps: Callable[[Any], int]) -> tuple[Any, list[int]]:
    """Run `script` under callgrind: the JSON it printed last, and the instructions of its `steps(report)` steps."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            "--dump-before=getppid",
            sys.executable,
            str(script),
            "--child",
            str(calls),
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same dict layouts, so the same counts, every run
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=script.parent, env=env)
        if done.returncode != 0:
            raise SystemExit(f"valgrind failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
        report = json.loads(done.stdout.strip().splitlines()[-1])
        # Dump 1 holds the setup; dump k + 2 the k-th measured step.
        return report, [_total(Path(f"{out}.{k + 2}")) for k in range(steps(report))]


def _total(dump: Path) -> int:
    for line in dump.read_text(encoding="utf-8").splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise SystemExit(f"{dump}: no summary line")
