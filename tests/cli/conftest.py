"""Shared fixtures for the tests of the ``scopetool`` command."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from scopetool.cli import main

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


@pytest.fixture(params=["process", "in-process"])
def command(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Command]:
    """The command, run as a new process, then through `scopetool.cli.main` in this process (what coverage sees)."""
    if request.param == "process":
        yield run_process
        return
    monkeypatch.setattr(sys, "path", list(sys.path))

    def run_here(*argv: str, cwd: Path = FIXTURES, stdin: str | None = None, env: object = None) -> Ran:
        assert env is None, "environment variables only reach a new process"
        monkeypatch.chdir(cwd)
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        code = main(list(argv))
        captured = capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    yield run_here
    forget_fixture_modules()


def forget_fixture_modules() -> None:
    """Drop the fixture modules a target loaded, so the next test loads them afresh."""
    for name in [path.stem for path in FIXTURES.glob("*.py")] + ["_scopetool_target", "tools"]:
        sys.modules.pop(name, None)
