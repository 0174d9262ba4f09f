"""``scopetool validate``: admit logged tool calls in bulk, never running them.

The file holds one JSON object a line (blank lines are skipped). With ``--format auto`` (the default)
each line's format is recognised on its own:

* neutral: ``{"name": ..., "arguments": ..., "id": ...}``, where ``arguments`` is an object (its exact
  text in the line is what is admitted), JSON text in a string, or absent or null (``{}``); ``id`` is
  optional and ignored. No other member is allowed.
* a provider's tool call item, read by that adapter's ``parse_tool_calls`` with an export of the
  registry in the adapter's default mode, as a driver would: ``{"type": "function_call", ...}``
  (openai_responses), ``{"type": "tool_use", ...}`` (anthropic), ``{"toolUse": ...}`` (bedrock),
  ``{"functionCall": ...}`` (gemini), a JSON-RPC ``tools/call`` request (mcp), and
  ``{"function": ...}`` (openai_chat; ``--format mistral`` or ``--format ollama`` reads it with those
  adapters instead).

Every line is checked as I-JSON as a whole (no repeated member name at any depth, no lone surrogate,
no NaN, no number beyond a double), then its arguments go through `Contract.prepare`. A problem
inside the arguments is the call's rejection, reported with the message the model would get (a
repeated member inside arguments an adapter re-encodes is caught here, though a driver would not see
it); a problem elsewhere makes the line unreadable.

This module reads the file (in lines of at most `LINE_LIMIT` bytes, or in pieces shared out to ``--jobs``
processes) and draws the progress bar; checking a line and writing the report are
`scopetool.cli._validate_lines`'s.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import signal
import stat
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final, TextIO, TypeVar, final

from .._target import load_registry
from ._common import ExitCode, UsageError, stdout
from ._validate_lines import LINE_LIMIT, LineChecker, Tally, validate_lines

__all__ = [
    "CHUNK_BYTES",
    "FileShare",
    "ProgressBar",
    "line_count",
    "read_chunks",
    "read_lines",
    "run",
    "validate_in_processes",
]

CHUNK_BYTES: Final = 1 << 18
"""About how much of the file (256 KiB) one worker process checks at a time with ``--jobs``."""


def read_lines(stream: BinaryIO) -> Iterator[bytes | None]:
    """The stream's lines, at most `LINE_LIMIT` bytes each; None for a longer one, read past in bounded chunks."""
    readline = stream.readline
    while True:
        line = readline(LINE_LIMIT + 1)
        if not line:
            return
        if len(line) <= LINE_LIMIT:
            yield line
            continue
        while not line.endswith(b"\n"):
            line = readline(LINE_LIMIT)
            if not line:
                break
        yield None


def read_chunks(stream: BinaryIO, size: int = CHUNK_BYTES) -> Iterator[bytes | None]:
    """The stream in pieces of whole lines, about `size` bytes each (the last line may lack its newline).

    A line over `LINE_LIMIT` bytes comes alone, as None, read past in bounded chunks: the lines are the
    ones `read_lines` gives, grouped.
    """
    held = b""  # the start of a line whose end is not read yet
    skipping = False  # inside an over-long line
    while True:
        block = stream.read(size)
        if not block:
            if skipping:
                yield None
            elif held:
                yield held
            return
        if skipping:
            end = block.find(b"\n")
            if end < 0:
                continue
            yield None
            skipping = False
            block = block[end + 1 :]
        data = held + block if held else block
        end = data.find(b"\n")
        if end < 0:
            held = b"" if len(data) > LINE_LIMIT else data
            skipping = len(data) > LINE_LIMIT
            continue
        if end >= LINE_LIMIT:  # only the first line can be that long: the others are within one block
            yield None
            data = data[end + 1 :]
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut]
        held = data[cut:]


def line_count(chunk: bytes | None) -> int:
    """How many lines a piece of `read_chunks` holds."""
    if chunk is None:
        return 1
    return chunk.count(b"\n") + (not chunk.endswith(b"\n"))


T = TypeVar("T")


@final
class ProgressBar:
    """A progress line on a terminal, redrawn at most ten times a second."""

    __slots__ = ("_position", "_shown", "_started", "_stream", "_total", "_when", "_width")

    def __init__(self, stream: TextIO, total: int | None = None, position: Callable[[], int] | None = None) -> None:
        self._stream = stream
        self._total = total or None
        self._position = position
        self._started = self._when = time.monotonic()
        self._shown = False
        self._width = 30

    def wrap(self, lines: Iterable[T]) -> Iterator[T]:
        """Yield `lines`, redrawing the bar as they go, and clear it at the end."""
        for count, line in enumerate(lines, 1):
            if not count & 1023:
                self.tick(count)
            yield line
        self.clear()

    def tick(self, count: int) -> None:
        """Redraw the bar for `count` lines read, unless it was drawn less than 0.1 s ago."""
        now = time.monotonic()
        if now - self._when < 0.1:
            return
        self._when = now
        rate = count / max(now - self._started, 1e-9)
        text = f"{count:,} lines, {rate:,.0f}/s"
        if self._total is not None and self._position is not None:
            fraction = min(self._position() / self._total, 1.0)
            filled = round(fraction * self._width)
            text = f"[{'#' * filled}{'.' * (self._width - filled)}] {fraction:4.0%} {text}"
        self._stream.write(f"\r{text}\x1b[K")
        self._stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erase the bar (before other output, and at the end)."""
        if self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False


def run(args: argparse.Namespace) -> int:
    """Admit every line of CALLS.jsonl; report the ones not admitted and a summary."""
    path: str = args.calls
    jobs: int = getattr(args, "jobs", 1)
    checker = LineChecker(load_registry(args.target), args.format)
    try:
        stream: BinaryIO = sys.stdin.buffer if path == "-" else Path(path).open("rb")  # noqa: SIM115 - closed below
    except OSError as error:
        raise UsageError(f"cannot read {path!r}: {error.strerror or error}") from None
    try:
        bar = _bar(stream)
        if jobs > 1:
            tally = validate_in_processes(stream, checker, jobs, stdout(), bar=bar, target=(args.target, args.format))
        else:
            lines: Iterable[bytes | None] = read_lines(stream)
            if bar is not None:
                lines = bar.wrap(lines)
            tally = validate_lines(lines, checker, stdout(), None if bar is None else bar.clear)
    except BrokenPipeError:
        raise  # the reader of the report went away: not a problem with the file
    except OSError as error:
        raise UsageError(f"cannot read {path!r}: {error.strerror or error}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    stdout().write(tally.summary() + "\n")
    return ExitCode.FAILED if tally.rejected or tally.unreadable else ExitCode.OK


def validate_in_processes(
    stream: BinaryIO,
    checker: LineChecker,
    jobs: int,
    out: TextIO,
    *,
    bar: ProgressBar | None = None,
    target: tuple[str, str] | None = None,
) -> Tally:
    """`validate_lines` over `stream` in `jobs` processes, this one among them: the same report, in the same order.

    A regular file named by its path (as `Path.open` gives) is shared out as it lies: the pieces of
    `FileShare`, as many for each process and every `jobs`-th one to one process, this one working a
    share too and writing each piece's report once the pieces before it are. Any other stream (a
    pipe, standard input) is read here and sent to `jobs` worker processes in pieces of whole lines
    (`read_chunks`), at most two per worker at a time. Either way memory stays bounded. Where
    processes are forked, the workers inherit `checker`; elsewhere each one loads `target` (TARGET
    and the format) again.
    """
    import multiprocessing  # noqa: PLC0415 - only --jobs needs it

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    inherited = checker if context.get_start_method() == "fork" else None
    if inherited is None and target is None:
        raise ValueError("without fork, the worker processes need the TARGET to load")
    path = _path_of(stream)
    out.flush()  # nothing buffered is copied into a forked process
    if path is None:
        return _validate_pieces(stream, jobs, out, context=context, bar=bar, setup=(inherited, target))
    return _validate_shares(stream, path, checker, jobs, out, context=context, bar=bar, setup=(inherited, target))


def _path_of(stream: BinaryIO) -> str | None:
    """The path `stream` was opened from, when it is a regular file that path still names; otherwise None."""
    name = getattr(stream, "name", None)
    if not isinstance(name, str):
        return None
    try:
        opened, named = os.fstat(stream.fileno()), os.stat(name)
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (named.st_dev, named.st_ino):
        return None
    return name


@final
class FileShare:
    """One process's share of a seekable file with ``--jobs``: every `shares`-th piece of `size` bytes, from `share`.

    Piece ``k`` holds the lines that start in its bytes ``[k * size, (k + 1) * size)`` (a line that starts
    in one piece and ends in the next is the first one's), so the pieces of all the shares hold every
    line of the file once, as `read_lines` reads them (a line over `LINE_LIMIT` bytes is None, read past
    in bounded blocks). The file's newlines before a piece are counted as the share goes, so each piece
    knows the number of its first line without asking the other processes.
    """

    __slots__ = ("_counted", "_newlines", "_piece", "_shares", "_size", "_stream")

    def __init__(self, stream: BinaryIO, share: int = 0, shares: int = 1, size: int = CHUNK_BYTES) -> None:
        if not 0 <= share < shares or not 0 < size <= LINE_LIMIT:
            raise ValueError("a share is one of `shares` (counted from 0), of pieces of 1 to LINE_LIMIT bytes")
        self._stream = stream
        self._piece = share
        self._shares = shares
        self._size = size
        self._counted = 0  # the file's bytes before this offset are counted ...
        self._newlines = 0  # ... and hold this many newlines

    def next_piece(self) -> tuple[int, list[bytes | None]] | None:
        """The number of the next piece's first line and its lines; None past the end.

        A piece inside a line that started in an earlier piece holds no lines (and its number is 0).
        """
        stream, size = self._stream, self._size
        low = self._piece * size
        self._piece += self._shares
        if low:
            stream.seek(low - 1)
            block = stream.read(size)  # a line starts in the piece after a newline in [low - 1, low - 1 + size)
            if not block:
                return None
            found = block.find(b"\n")
            if found < 0:
                return 0, []
            start = low + found
        else:
            start = 0
        self._count_to(start)
        stream.seek(start)
        data = stream.read(low + size - start)
        if not data:  # the file ends with the newline before the piece, or is empty
            return None
        lines: list[bytes | None]
        if data.endswith(b"\n"):
            lines = list(read_lines(io.BytesIO(data)))
        else:  # the piece's last line ends after it: read on to its end
            tail = data.rfind(b"\n") + 1
            line = data[tail:] + stream.readline(LINE_LIMIT + 1 - (len(data) - tail))
            lines = list(read_lines(io.BytesIO(data[:tail])))
            if len(line) <= LINE_LIMIT:
                lines.append(line)
            else:
                while not line.endswith(b"\n"):
                    line = stream.readline(LINE_LIMIT)
                    if not line:
                        break
                lines.append(None)
        first = self._newlines + 1
        self._counted = stream.tell()
        self._newlines += len(lines)  # each line ends with a newline, but the file's last one perhaps
        return first, lines

    def _count_to(self, offset: int) -> None:
        """Count the newlines of the file's bytes from where the count stands to `offset` (other shares' pieces)."""
        stream = self._stream
        stream.seek(self._counted)
        left = offset - self._counted
        while left > 0:
            block = stream.read(min(left, 1 << 20))
            if not block:  # pragma: no cover - only a file that shrank while it was read
                break
            self._newlines += block.count(b"\n")
            left -= len(block)
        self._counted = offset


_Piece = tuple[bytes, Tally] | None
"""What a worker sends for each piece of its share: the piece's report (UTF-8) and tally; None past the end."""


def _validate_shares(
    stream: BinaryIO,
    path: str,
    checker: LineChecker,
    jobs: int,
    out: TextIO,
    *,
    context: Any,
    bar: ProgressBar | None,
    setup: tuple[LineChecker | None, tuple[str, str] | None],
) -> Tally:
    """`validate_in_processes` over a regular file: this process checks share 0 and writes the reports in order."""
    receivers: list[Any] = [None]  # a connection from each worker, by share (share 0 is this process's)
    workers: list[Any] = []
    total = Tally()
    size = _piece_size(os.fstat(stream.fileno()).st_size, jobs)
    gc.freeze()  # the collector leaves the objects of now alone: the forked pages stay shared, not copied
    try:
        for share in range(1, jobs):
            receiver, sender = context.Pipe(duplex=False)
            _widen(receiver)
            worker = context.Process(target=_work_share, args=(sender, setup, path, share, jobs, size), daemon=True)
            worker.start()
            sender.close()  # the worker's end: once it exits, a read here ends instead of waiting
            receivers.append(receiver)
            workers.append(worker)
        own = FileShare(stream, 0, jobs, size)
        ended = [False] * jobs
        index = -1
        while True:
            index += 1
            share = index % jobs
            if share:
                piece: _Piece = _received(receivers[share])
                if piece is None:
                    ended[share] = True
                    break
                report, tally = piece
                if report:
                    if bar is not None:
                        bar.clear()
                    out.write(report.decode("utf-8", "surrogatepass"))
            else:
                lines = own.next_piece()
                if lines is None:
                    break
                tally = validate_lines(lines[1], checker, out, None if bar is None else bar.clear, start=lines[0])
            _add(total, tally)
            if bar is not None:
                bar.tick(total.lines)
        for share in range(1, jobs):  # every later piece is past the end too: each worker's next one says so
            while not ended[share] and _received(receivers[share]) is not None:
                pass  # pragma: no cover - only a file that grew while it was read has more
        for worker in workers:
            worker.join()
    finally:
        for worker in workers:
            if worker.is_alive():  # pragma: no cover - only when this process stops early (Ctrl-C, a write error)
                worker.terminate()
                worker.join()
        for receiver in receivers[1:]:
            receiver.close()
        gc.unfreeze()
    if bar is not None:
        bar.clear()
    return total


_PIPE_BYTES: Final = 1 << 20
"""How much a worker's pipe holds where the system lets it grow (Linux): a few pieces' reports."""


def _widen(receiver: Any) -> None:
    """Let a worker's pipe hold `_PIPE_BYTES`, so the worker can run a few pieces ahead of this process."""
    try:
        import fcntl  # noqa: PLC0415 - Unix only

        fcntl.fcntl(receiver.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # pragma: no cover - not Linux, or a lower system limit
        pass


def _received(receiver: Any) -> _Piece:
    """The next message of a worker: a piece, or None past the end; a worker's error is raised here."""
    try:
        message = receiver.recv()
    except EOFError:
        raise RuntimeError("a worker process of validate --jobs stopped before it was done") from None
    if isinstance(message, BaseException):
        raise message
    return message  # type: ignore[no-any-return]


def _piece_size(file_size: int, jobs: int) -> int:
    """At most `CHUNK_BYTES`, and such that the file is whole rounds of `jobs` pieces: every share as long."""
    rounds = max(1, -(-file_size // (CHUNK_BYTES * jobs)))
    return max(1, -(-file_size // (rounds * jobs)))


def _work_share(  # noqa: PLR0917 - a process's arguments
    sender: Any,
    setup: tuple[LineChecker | None, tuple[str, str] | None],
    path: str,
    share: int,
    shares: int,
    size: int = CHUNK_BYTES,
) -> None:
    """A worker's life with a regular file: open it, check its share piece by piece, send each piece's report."""
    try:
        _start_worker(*setup)
        checker = _worker[0]
        with open(path, "rb") as stream:  # its own reading position, whatever the others do
            pieces = FileShare(stream, share, shares, size)
            while (lines := pieces.next_piece()) is not None:
                report = io.StringIO()
                tally = validate_lines(lines[1], checker, report, start=lines[0])
                sender.send((report.getvalue().encode("utf-8", "surrogatepass"), tally))
        sender.send(None)
    except Exception as error:  # noqa: BLE001 - handed to the parent, which raises it
        sender.send(error)
    finally:
        sender.close()


def _validate_pieces(
    stream: BinaryIO,
    jobs: int,
    out: TextIO,
    *,
    context: Any,
    bar: ProgressBar | None,
    setup: tuple[LineChecker | None, tuple[str, str] | None],
) -> Tally:
    """`validate_in_processes` over a stream read here: pieces go to a pool of workers, reports come back in order."""
    from concurrent.futures import Future, ProcessPoolExecutor  # noqa: PLC0415 - only a stream in processes needs it

    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker, initargs=setup)
    total = Tally()
    pending: deque[Future[tuple[str, Tally]]] = deque()
    read = 0

    def write_first() -> None:
        text, tally = pending.popleft().result()
        if text:
            if bar is not None:
                bar.clear()
            out.write(text)
        _add(total, tally)

    try:
        for chunk in read_chunks(stream):
            pending.append(pool.submit(_check_chunk, read + 1, chunk))
            read += line_count(chunk)
            if bar is not None:
                bar.tick(read)
            if len(pending) >= 2 * jobs:
                write_first()
        while pending:
            write_first()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if bar is not None:
        bar.clear()
    return total


_worker: list[LineChecker] = []  # a worker process's checker


def _start_worker(checker: LineChecker | None, target: tuple[str, str] | None) -> None:
    """Set up a worker process: Ctrl-C is the parent's to handle, and the checker is inherited or loaded."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if checker is None:
        assert target is not None
        checker = LineChecker(load_registry(target[0]), target[1])
    _worker[:] = [checker]


def _check_chunk(start: int, chunk: bytes | None) -> tuple[str, Tally]:
    """In a worker: the report and the tally of one piece of the file, whose first line is line `start`."""
    out = io.StringIO()
    lines: Iterable[bytes | None] = [None] if chunk is None else read_lines(io.BytesIO(chunk))
    tally = validate_lines(lines, _worker[0], out, start=start)
    return out.getvalue(), tally


def _add(total: Tally, part: Tally) -> None:
    total.lines += part.lines
    total.blank += part.blank
    total.rejected += part.rejected
    total.unreadable += part.unreadable
    total.by_tool.update(part.by_tool)
    total.by_reason.update(part.by_reason)


def _bar(stream: BinaryIO) -> ProgressBar | None:
    if not sys.stderr.isatty():
        return None
    try:
        status = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return ProgressBar(sys.stderr)
    if not stat.S_ISREG(status.st_mode):
        return ProgressBar(sys.stderr)
    return ProgressBar(sys.stderr, status.st_size, stream.tell)
