"""The process's standard streams, reserved for one writer and one reader: nothing else reaches the wire.

`reserved_stdout` keeps standard output for the ``scopetool`` command's own output (the MCP server's
JSON-RPC messages, the JSON of ``definitions``): while it is held, ``sys.stdout`` is ``sys.stderr``
and, when standard output is file descriptor 1, that descriptor points at standard error too, so a
print of a tool or of a module on import, a C library or a child process writes to standard error.
`reserved_stdin` keeps standard input for the MCP server's reader: everything else reads an empty
input. Both nest: an inner reservation gets the stream of the outer one, which alone gives it back.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Generator
from typing import BinaryIO, TextIO

__all__ = ["output_stream", "reserved_stdin", "reserved_stdout"]

_held_stdout: list[TextIO] = []
_held_stdin: list[BinaryIO] = []


@contextlib.contextmanager
def reserved_stdout() -> Generator[TextIO]:
    """Standard output for the caller alone (UTF-8 text), until the block ends; see the module.

    Raises:
        BrokenPipeError: on exit, the output could not be flushed because its reader went away (what
            was left unwritten is dropped, so nothing flushes into the closed pipe later).
    """
    if _held_stdout:
        yield _held_stdout[-1]
        return
    original = sys.stdout
    stream, give_back = _claim_stdout(original)
    _held_stdout.append(stream)
    sys.stdout = sys.stderr
    try:
        yield stream
    finally:
        sys.stdout = original
        _held_stdout.pop()
        give_back()


def output_stream() -> TextIO:
    """The stream of the `reserved_stdout` in force (``sys.stdout`` when there is none)."""
    return _held_stdout[-1] if _held_stdout else sys.stdout


@contextlib.contextmanager
def reserved_stdin() -> Generator[BinaryIO]:
    """Standard input for the caller alone (bytes), until the block ends; everything else reads an empty input."""
    if _held_stdin:
        yield _held_stdin[-1]
        return
    original = sys.stdin
    stream, give_back = _claim_stdin(original)
    _held_stdin.append(stream)
    with open(os.devnull, encoding="utf-8") as empty:
        sys.stdin = empty
        try:
            yield stream
        finally:
            sys.stdin = original
            _held_stdin.pop()
            give_back()


def _fileno(stream: object) -> int | None:
    try:
        return int(stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # not a file, or a capture of the test runner's
        return None


def _claim_stdout(original: TextIO) -> tuple[TextIO, Callable[[], None]]:
    """The stream to write the output to, and how to give standard output back."""
    if _fileno(original) != 1:  # a stream that is not the descriptor (a test's capture, a file): used in place
        _utf8(original)
        return original, original.flush
    original.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    stream = open(private, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - closed by give_back

    def give_back() -> None:
        try:
            stream.flush()
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, private)  # what is left in the buffer goes nowhere, never into the closed pipe
            os.close(devnull)
            raise
        finally:
            with contextlib.suppress(OSError):
                stream.close()
            os.dup2(private, 1)
            os.close(private)

    return stream, give_back


def _utf8(stream: object) -> None:
    """Make a text stream write UTF-8 whatever the locale says, so JSON and tool texts print as they are."""
    if isinstance(stream, io.TextIOWrapper) and stream.encoding.lower().replace("-", "") != "utf8":
        stream.reconfigure(encoding="utf-8")


def _claim_stdin(original: TextIO | None) -> tuple[BinaryIO, Callable[[], None]]:
    """The stream to read the input from, and how to give standard input back."""
    if original is None:  # no standard input at all (pythonw): an empty one
        return io.BytesIO(), _nothing
    if _fileno(original) != 0:  # a stream that is not the descriptor (a test's file): used in place
        return original.buffer, _nothing
    private = os.dup(0)
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)
    os.close(empty)
    stream = open(private, "rb", closefd=False)  # noqa: SIM115 - closed by give_back

    def give_back() -> None:
        stream.close()
        os.dup2(private, 0)
        os.close(private)

    return stream, give_back


def _nothing() -> None:
    """Nothing to give back."""
