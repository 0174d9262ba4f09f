"""Shared fixtures for the tests of the ``scopetool`` command."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import FIXTURES, Command, Ran, forget_fixture_modules, run_process

from scopetool.cli import main


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
