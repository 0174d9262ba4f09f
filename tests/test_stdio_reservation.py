"""The reservation of the standard streams: what else is written goes to stderr, what else reads gets nothing."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from scopetool._stdio import output_stream, reserved_stdin, reserved_stdout


@contextmanager
def descriptor(fd: int, replacement: int) -> Iterator[None]:
    """File descriptor `fd` pointed at `replacement` for the block, then given back."""
    saved = os.dup(fd)
    os.dup2(replacement, fd)
    try:
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def test_reserved_stdout_sends_everything_else_on_descriptor_1_to_stderr(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On descriptor 1: prints and raw writes to fd 1 reach stderr; the reserved stream reaches stdout."""
    monkeypatch.setattr(sys, "stdout", open(1, "w", encoding="utf-8", closefd=False))  # noqa: SIM115
    with reserved_stdout() as out, reserved_stdout() as inner:
        assert inner is out and output_stream() is out and sys.stdout is sys.stderr
        print("stray print")
        sys.stderr.flush()
        os.write(1, b"stray descriptor write\n")
        out.write("protocol\n")
    assert output_stream() is sys.stdout
    captured = capfd.readouterr()
    assert captured.out == "protocol\n"
    assert "stray print" in captured.err and "stray descriptor write" in captured.err


def test_reserved_stdout_in_place_keeps_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream that is not descriptor 1 is used as it is, and prints go to stderr meanwhile."""
    stream, errors = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", stream)
    monkeypatch.setattr(sys, "stderr", errors)
    with reserved_stdout() as out:
        print("stray")
        out.write("mine\n")
    assert (stream.getvalue(), errors.getvalue(), sys.stdout) == ("mine\n", "stray\n", stream)


def test_a_reader_that_went_away_is_a_broken_pipe_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output left unwritten when the reader closed its end raises BrokenPipeError, and is dropped."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        with descriptor(1, writer):
            monkeypatch.setattr(sys, "stdout", open(1, "w", encoding="utf-8", closefd=False))  # noqa: SIM115
            with pytest.raises(BrokenPipeError), reserved_stdout() as out:
                out.write("lost\n")
    finally:
        os.close(writer)


def test_reserved_stdin_gives_everything_else_an_empty_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """On descriptor 0: the reserved stream reads the input; input() and fd 0 read nothing."""
    reader, writer = os.pipe()
    os.write(writer, b"line one\nline two\n")
    os.close(writer)
    try:
        with descriptor(0, reader):
            monkeypatch.setattr(sys, "stdin", open(0, encoding="utf-8", closefd=False))  # noqa: SIM115
            with reserved_stdin() as stream, reserved_stdin() as inner:
                assert inner is stream
                assert sys.stdin.read() == "" and os.read(0, 10) == b""
                assert stream.readline() == b"line one\n"
            assert sys.stdin.fileno() == 0
    finally:
        os.close(reader)


def test_reserved_stdin_without_a_descriptor(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream that is not descriptor 0 is read in place; no standard input at all reads empty."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"data\n")))
    with reserved_stdin() as stream:
        assert stream.read() == b"data\n"
    monkeypatch.setattr(sys, "stdin", None)
    with reserved_stdin() as stream:
        assert stream.read() == b""
    assert sys.stdin is None
