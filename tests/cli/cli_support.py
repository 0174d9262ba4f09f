"""What the tests of the ``scopetool`` command share: running it, and its fixture targets (fixtures in conftest)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Ran:
    """What one run of the command printed and returned."""

    returncode: int
    stdout: str
    stderr: str


Command = Callable[..., Ran]
"""``command(*argv, cwd=FIXTURES, stdin=None, env=None) -> Ran``."""


def run_process(*argv: str, cwd: Path = FIXTURES, stdin: str | None = None, env: dict[str, str] | None = None) -> Ran:
    """Run ``python -m scopetool ARGV`` as a new process, as a user does."""
    done = subprocess.run(
        [sys.executable, "-m", "scopetool", *argv],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def forget_fixture_modules() -> None:
    """Drop the fixture modules a target loaded, so the next test loads them afresh."""
    for name in [path.stem for path in FIXTURES.glob("*.py")] + ["_scopetool_target", "tools"]:
        sys.modules.pop(name, None)
