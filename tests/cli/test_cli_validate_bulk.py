"""``scopetool validate`` in bulk: the fast path decides as the full reading does, and ``--jobs`` changes nothing."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from cli_support import FIXTURES, Command, forget_fixture_modules

from scopetool import Registry, tool
from scopetool.cli import _validate, _validate_lines
from scopetool.cli._validate import FileShare, ProgressBar, line_count, read_chunks, read_lines, validate_in_processes
from scopetool.cli._validate_lines import LINE_LIMIT, LineChecker, Tally, Verdict, validate_lines


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


REGISTRY = Registry(add)

# Lines the fast path reads (the neutral envelope), and lines it must leave to the full reading.
LINES = [
    b'{"name": "add", "arguments": {"a": 1, "b": 2}}\n',
    b'{"id": "call 7", "name":"add","arguments":{"a":1,"b":2}}\r\n',
    b'{"name": "add", "arguments": {"a": 1}}\n',
    b'{"name": "add", "arguments": {"a": "1", "b": 2}}\n',
    b'{"name": "add", "arguments": {"a": 1, "b": 2, "c": 3}}\n',
    b'{"name": "add", "arguments": {"a": 1, "a": 2, "b": 3}}\n',
    b'{"name": "add", "arguments": {"a": "\\ud800", "b": 1}}\n',
    b'{"name": "add", "arguments": {"a": NaN, "b": 1}}\n',
    b'{"name": "add", "arguments": {"a": 1e400, "b": 1}}\n',
    b'{"name": "add", "arguments": {"a": 1, "b": 2}, "b": {}}\n',
    b'{"name": "add", "arguments": {"a": 1}} {}}\n',
    b'{"name": "add", "arguments": {"a": 1, "b": \xff}}\n',
    b'{"id": "\xc3\xa9", "name": "add", "arguments": {"a": 1, "b": 2}}\n',
    b'{"name": "nope", "arguments": {"a": 1}}\n',
    b'{"name": "nope", "arguments": {"a": NaN}}\n',
    b'{"name": "nope", "arguments": {"a": 1}, "x": {}}\n',
    b'{"name": "a-b", "arguments": {}}\n',
]


@pytest.mark.parametrize("line", LINES, ids=[line.decode(errors="replace")[:60] for line in LINES])
def test_the_fast_path_decides_as_the_full_reading_does(line: bytes) -> None:
    """Every line gets the verdict the full reading (parse, shape, span, prepare) gives it, on the fast path or not."""
    checker = LineChecker(REGISTRY)
    try:
        slow = checker._checked(line)  # pyright: ignore[reportPrivateUsage] - the reference reading
    except _validate_lines._UnreadableError as error:  # pyright: ignore[reportPrivateUsage]
        slow = Verdict("unreadable", str(error), (_validate_lines.UNREADABLE,))
    assert checker.check(line) == slow


def test_a_rejected_line_is_admitted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rejected neutral line costs one prepare, and its verdict names the contract's own message."""
    contract = REGISTRY.resolve("add")
    assert contract is not None
    calls: list[object] = []
    real = type(contract.contract).prepare

    def counted(self: object, *args: object) -> object:
        calls.append(args)
        return real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(type(contract.contract), "prepare", counted)
    found = LineChecker(REGISTRY).check(b'{"name": "add", "arguments": {"a": 1}}\n')
    assert found is not None and found.reasons == ("missing field",)
    assert len(calls) == 1


def test_an_unknown_tool_has_one_verdict_per_name() -> None:
    """Calls of one unknown tool share one verdict; the names kept are bounded."""
    checker = LineChecker(REGISTRY)
    first = checker.check(b'{"name": "nope", "arguments": {}}')
    assert first is not None and first is checker.check(b'{"name": "nope", "arguments": {"a": 1}}')
    assert first.message == 'error: tool "nope" is not available'
    count = _validate_lines._UNKNOWN_CACHE + 5  # pyright: ignore[reportPrivateUsage]
    out = io.StringIO()
    validate_lines([f'{{"name": "t{index}", "arguments": {{}}}}'.encode() for index in range(count)], checker, out)
    assert len(checker._unknown) == count - 5  # pyright: ignore[reportPrivateUsage]
    assert out.getvalue().splitlines()[-1] == f'{count}: t{count - 1}: error: tool "t{count - 1}" is not available'


def test_a_rejection_the_contract_described_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path parses the arguments again only when the contract's rejection does not say they parsed."""
    parsed: list[bytes] = []
    real = _validate_lines.syntax_problem

    def counted(raw: bytes, **options: bool) -> object:
        parsed.append(raw)
        return real(raw, **options)

    monkeypatch.setattr(_validate_lines, "syntax_problem", counted)
    checker = LineChecker(REGISTRY)
    found = checker.check(b'{"name": "add", "arguments": {"a": "1", "b": 2}}\n')
    assert found is not None and found.reasons == ("wrong type",)
    assert parsed == []
    found = checker.check(b'{"name": "add", "arguments": {"a": 1}} {}}\n')
    assert found is not None and found.reasons == (_validate_lines.UNREADABLE,)
    assert parsed == [b'{"a": 1}} {}']


def test_calls_rejected_with_one_message_share_one_verdict() -> None:
    """Calls with the same problems get one verdict; the verdicts kept are bounded."""
    checker = LineChecker(REGISTRY)
    first = checker.check(b'{"name": "add", "arguments": {"a": 1}}')
    assert first is not None and first is checker.check(b'{"name": "add", "arguments": {"a": 2}}')
    count = _validate_lines._UNKNOWN_CACHE + 5  # pyright: ignore[reportPrivateUsage]
    lines = [f'{{"name": "add", "arguments": {{"a": 1, "b": 2, "m{index}": 0}}}}'.encode() for index in range(count)]
    out = io.StringIO()
    tally = validate_lines(lines, checker, out)
    assert tally.rejected == count and tally.by_reason == {"unknown field": count}
    assert len(checker._rejections) == _validate_lines._UNKNOWN_CACHE  # pyright: ignore[reportPrivateUsage]
    assert out.getvalue().splitlines()[-2:] == [
        f"{count}: add: invalid arguments for tool 'add' (1 problem):",
        f"    - $.m{count - 1}: unknown field; expected one of 'a', 'b'",
    ]


def _pieces(data: bytes, size: int) -> list[bytes | None]:
    """The lines of `data` as `read_chunks` groups them, split again."""
    lines: list[bytes | None] = []
    for chunk in read_chunks(io.BytesIO(data), size):
        if chunk is None:
            lines.append(None)
        else:
            split = list(read_lines(io.BytesIO(chunk)))
            assert len(split) == line_count(chunk)
            lines.extend(split)
    return lines


@pytest.mark.parametrize("size", [1, 7, 64, 1 << 16])
def test_read_chunks_gives_the_lines_read_lines_gives(size: int) -> None:
    """Pieces hold whole lines, the very lines `read_lines` reads, whatever the block size."""
    data = b"".join(LINES) + b"\n\nlast without newline"
    assert _pieces(data, size) == list(read_lines(io.BytesIO(data)))
    assert list(read_chunks(io.BytesIO(b""), size)) == []


def test_read_chunks_skips_over_long_lines_as_read_lines_does() -> None:
    """A line over `LINE_LIMIT` bytes (newline included) is one None, at the start, middle or end of the file."""
    long = b"x" * LINE_LIMIT
    data = long + b"\nfirst\n" + long[:-1] + b"\n" + b"y" * (LINE_LIMIT + 3) + b"\nlast\n" + long + b"z"
    expected = list(read_lines(io.BytesIO(data)))
    assert [line if line is None else line[:5] for line in expected] == [
        None,
        b"first",
        b"xxxxx",
        None,
        b"last\n",
        None,
    ]
    assert _pieces(data, 1 << 20) == expected
    assert line_count(None) == 1
    # Lines that outgrow the limit many blocks before they end, in the middle and at the end of the file.
    longer = b"y" * (LINE_LIMIT + 300_000)
    data = b"first\n" + longer + b"\nlast\n" + longer
    assert _pieces(data, 1 << 16) == list(read_lines(io.BytesIO(data))) == [b"first\n", None, b"last\n", None]


def _shared_out(data: bytes, shares: int, size: int) -> list[tuple[int, bytes | None]]:
    """The lines of `data` with their numbers, as `shares` `FileShare` pieces give them, piece by piece in order."""
    streams = [io.BytesIO(data) for _ in range(shares)]
    parts = [FileShare(stream, share, shares, size) for share, stream in enumerate(streams)]
    numbered: list[tuple[int, bytes | None]] = []
    for index in range(len(data) // size + 2):  # past the end: every share says so
        piece = parts[index % shares].next_piece()
        if piece is None:
            assert all(part.next_piece() is None for part in parts)
            return numbered
        first, lines = piece
        assert not numbered or not lines or first == numbered[-1][0] + 1
        numbered.extend(enumerate(lines, first))
    raise AssertionError("no share reached the end")


SHARED = b"".join(LINES) + b"\n\n\r\n" + b"".join(LINES[:3]).replace(b"\n", b"\r\n") + b"last without newline"


@pytest.mark.parametrize("shares", [1, 2, 3])
@pytest.mark.parametrize("size", [1, 2, 7, 46, 47, 48, 64, 1 << 16])
def test_file_shares_hold_every_line_once_with_its_number(shares: int, size: int) -> None:
    """Pieces of any size, across any number of shares, hold the lines `read_lines` reads, each once, numbered."""
    expected = list(enumerate(read_lines(io.BytesIO(SHARED)), 1))
    assert _shared_out(SHARED, shares, size) == expected
    assert _shared_out(SHARED + b"\n", shares, size) == [*expected[:-1], (len(expected), b"last without newline\n")]
    assert _shared_out(b"", shares, size) == []


def test_a_piece_edge_on_a_line_boundary_splits_nowhere_else() -> None:
    """A line that starts exactly where a piece starts is that piece's; a CRLF split at the edge stays whole."""
    data = b"a\r\nbb\r\nccc\n"  # lines start at 0, 3 and 7
    assert FileShare(io.BytesIO(data), 1, 2, 3).next_piece() == (2, [b"bb\r\n"])  # bytes 3-5
    assert FileShare(io.BytesIO(data), 1, 4, 2).next_piece() == (2, [b"bb\r\n"])  # bytes 2-3: the line at 3
    assert FileShare(io.BytesIO(data), 2, 3, 2).next_piece() == (0, [])  # bytes 4-5: inside the line at 3
    assert FileShare(io.BytesIO(data), 1, 2, 7).next_piece() == (3, [b"ccc\n"])
    assert FileShare(io.BytesIO(data), 1, 2, 12).next_piece() is None  # past the end
    assert FileShare(io.BytesIO(data), 1, 2, 11).next_piece() is None  # the newline before it ends the file
    with pytest.raises(ValueError, match="a share is one of"):
        FileShare(io.BytesIO(data), 2, 2)
    with pytest.raises(ValueError, match="a share is one of"):
        FileShare(io.BytesIO(data), 0, 1, LINE_LIMIT + 1)


def test_file_shares_skip_over_long_lines_as_read_lines_does() -> None:
    """A line over `LINE_LIMIT` bytes is one None in the piece where it starts, wherever the pieces' edges fall."""
    long = b"x" * LINE_LIMIT
    data = b"first\n" + long + b"\n" + long[:-1] + b"\n" + b"y" * (LINE_LIMIT + 3) + b"\nlast\n" + long + b"z"
    expected = list(enumerate(read_lines(io.BytesIO(data)), 1))
    assert [(number, line if line is None else line[:5]) for number, line in expected] == [
        (1, b"first"),
        (2, None),
        (3, b"xxxxx"),
        (4, None),
        (5, b"last\n"),
        (6, None),
    ]
    assert _shared_out(data, 2, 1 << 20) == expected
    assert _shared_out(data, 3, LINE_LIMIT) == expected


def test_jobs_split_a_file_shorter_than_the_processes(tmp_path: Path) -> None:
    """More processes than lines, an empty file, a bad or unfinished last line: what one process finds and writes."""
    files = {
        "short.jsonl": b'{"name": "add", "arguments": {"a": 1}}\r\n{"name": "add", "arguments": {"a": 1, "b": 2}}',
        "empty.jsonl": b"",
        "bad.jsonl": b"\nnot json",
        "tiny.jsonl": b"{}\n{}",  # the fourth piece starts past the end: a worker's end comes first
    }
    reports: dict[str, str] = {}
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        serial, parallel = io.StringIO(), io.StringIO()
        expected = validate_lines(read_lines(io.BytesIO(data)), LineChecker(REGISTRY), serial)
        with path.open("rb") as stream, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            found = validate_in_processes(stream, LineChecker(REGISTRY), 4, parallel)
        assert (found, parallel.getvalue()) == (expected, serial.getvalue()), name
        reports[name] = serial.getvalue()
    assert reports["short.jsonl"].startswith("1: add: ") and reports["empty.jsonl"] == ""
    assert reports["bad.jsonl"].startswith("2: unreadable: ")


def _log(folder: Path) -> Path:
    """A log of every kind of line (one over-long), long enough for several pieces of `read_chunks`."""
    body = b"".join([*LINES, b"\n", b"not json\n", b"[1, 2]\n"] * 40)
    calls = [json.dumps({"name": "add", "arguments": {"a": i, "b": 1} if i % 5 else {"a": i}}) for i in range(12_000)]
    path = folder / "calls.jsonl"
    path.write_bytes(body + "\n".join(calls).encode() + b"\n" + b"x" * (LINE_LIMIT + 1) + b"\n" + body)
    return path


def test_jobs_write_the_same_report_in_the_same_order(command: Command, tmp_path: Path) -> None:
    """``--jobs 2`` and ``--jobs 3`` print exactly what ``--jobs 1`` prints, byte for byte, and exit alike."""
    path = _log(tmp_path)
    target = f"{FIXTURES / 'cli_tools.py'}:add"
    with warnings.catch_warnings():  # in-process on 3.12+: forking pytest, which may hold threads, warns
        warnings.simplefilter("ignore", DeprecationWarning)
        runs = [command("validate", target, str(path), "--jobs", jobs, cwd=tmp_path) for jobs in ("1", "2", "3")]
    assert runs[0].returncode == 1 and runs[0].stderr == ""
    assert "unreadable: the line is over 8388608 bytes" in runs[0].stdout
    assert runs[0].stdout.count("\n") > 5_000
    assert [(run.returncode, run.stdout, run.stderr) for run in runs[1:]] == [
        (runs[0].returncode, runs[0].stdout, runs[0].stderr)
    ] * 2


def test_jobs_must_be_a_positive_number(command: Command) -> None:
    """``--jobs`` takes a whole number of processes, at least one, and says so in one line."""
    for value in ("0", "two"):
        result = command("validate", "cli_tools.py:add", "-", "--jobs", value, stdin="")
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and "--jobs: expected a whole number of processes" in result.stderr


def test_validate_in_processes_reads_a_stream_and_counts_it_all() -> None:
    """The parallel loop counts every line of a stream as the serial one does (blank and over-long lines too)."""
    data = b"".join(LINES) * 3 + b"\n" + b"x" * (LINE_LIMIT + 1)
    serial, parallel = io.StringIO(), io.StringIO()
    expected = validate_lines(read_lines(io.BytesIO(data)), LineChecker(REGISTRY), serial)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        found = validate_in_processes(io.BytesIO(data), LineChecker(REGISTRY), 2, parallel)
    assert (found, parallel.getvalue()) == (expected, serial.getvalue())
    assert expected.lines == len(LINES) * 3 + 2 and expected.blank == 1
    assert Tally().lines == 0


def test_a_piece_is_checked_from_its_own_first_line() -> None:
    """A worker numbers the lines of its piece from the piece's first line in the file."""
    _validate._worker[:] = [LineChecker(REGISTRY)]  # pyright: ignore[reportPrivateUsage] - as a worker has it
    try:
        text, tally = _validate._check_chunk(41, b'{"name": "nope"}\n\n')  # pyright: ignore[reportPrivateUsage]
        long_text, long_tally = _validate._check_chunk(9, None)  # pyright: ignore[reportPrivateUsage]
    finally:
        _validate._worker.clear()  # pyright: ignore[reportPrivateUsage]
    assert text == '41: nope: error: tool "nope" is not available\n'
    assert (tally.lines, tally.blank, tally.rejected) == (2, 1, 1)
    assert long_text.startswith("9: unreadable: the line is over") and long_tally.unreadable == 1


def test_the_parallel_loop_clears_the_progress_bar_before_each_report() -> None:
    """With a progress bar, the parallel loop ticks it per piece and clears it before writing and at the end."""
    drawn = io.StringIO()
    bar = ProgressBar(drawn)
    bar._shown = True  # pyright: ignore[reportPrivateUsage] - as if drawn already
    out = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        validate_in_processes(io.BytesIO(b'{"name": "nope"}\n'), LineChecker(REGISTRY), 2, out, bar=bar)
    assert out.getvalue() == '1: nope: error: tool "nope" is not available\n'
    assert drawn.getvalue().endswith("\r\x1b[K")  # cleared (after a redraw, on a slow machine)


def test_workers_that_are_not_forked_load_the_target_themselves(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without fork, a worker loads TARGET itself, and the parallel loop refuses to start without one."""
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    with pytest.raises(ValueError, match="need the TARGET"):
        validate_in_processes(io.BytesIO(b""), LineChecker(REGISTRY), 2, io.StringIO())
    previous = signal.getsignal(signal.SIGINT)
    try:
        _validate._start_worker(None, (f"{FIXTURES / 'cli_tools.py'}:add", "neutral"))  # pyright: ignore[reportPrivateUsage]
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # Ctrl-C is the parent's to handle
        loaded = _validate._worker[0]  # pyright: ignore[reportPrivateUsage]
        assert loaded.check(b'{"name": "add", "arguments": {"a": 1, "b": 2}}') is None
    finally:
        signal.signal(signal.SIGINT, previous)
        _validate._worker.clear()  # pyright: ignore[reportPrivateUsage]
        forget_fixture_modules()


def test_a_share_worker_sends_each_piece_then_the_end(tmp_path: Path) -> None:
    """A worker of a file opens it itself, loads TARGET where it is not forked, and sends each piece of its share."""
    path = tmp_path / "calls.jsonl"
    path.write_bytes(b'{"name": "nope"}\n' * 3 + b"x" * (_validate.CHUNK_BYTES + 10) + b'\n{"name": "nope"}')
    receiver, sender = multiprocessing.Pipe(duplex=False)
    previous = signal.getsignal(signal.SIGINT)
    try:
        target = (f"{FIXTURES / 'cli_tools.py'}:add", "auto")
        _validate._work_share(sender, (None, target), str(path), 1, 2)  # pyright: ignore[reportPrivateUsage]
        messages = [receiver.recv()]
        while messages[-1] is not None:
            messages.append(receiver.recv())
    finally:
        signal.signal(signal.SIGINT, previous)
        _validate._worker.clear()  # pyright: ignore[reportPrivateUsage]
        forget_fixture_modules()
        receiver.close()
    assert len(messages) == 2  # piece 1 (from byte CHUNK_BYTES on), then the end: piece 3 is past it
    report, tally = messages[0]
    assert report == b'5: nope: error: tool "nope" is not available\n'
    assert (tally.lines, tally.rejected) == (1, 1)


def test_a_worker_error_is_raised_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that cannot read the file hands its error over to be raised here; a worker gone silent is an error."""
    path = tmp_path / "calls.jsonl"
    path.write_bytes(b'{"name": "nope"}\n' * 20_000)

    def unreadable(*args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(_validate, "open", unreadable, raising=False)  # only a worker opens the file by name
    with path.open("rb") as stream, warnings.catch_warnings(), pytest.raises(PermissionError, match="denied"):
        warnings.simplefilter("ignore", DeprecationWarning)
        validate_in_processes(stream, LineChecker(REGISTRY), 2, io.StringIO())
    receiver, sender = multiprocessing.Pipe(duplex=False)
    sender.close()
    with pytest.raises(RuntimeError, match="stopped before it was done"):
        _validate._received(receiver)  # pyright: ignore[reportPrivateUsage]
    receiver.close()


def test_a_share_worker_hands_over_its_error(tmp_path: Path) -> None:
    """A worker (forked, with the checker) that cannot open the file sends the error instead of a piece."""
    receiver, sender = multiprocessing.Pipe(duplex=False)
    previous = signal.getsignal(signal.SIGINT)
    try:
        _validate._work_share(  # pyright: ignore[reportPrivateUsage]
            sender, (LineChecker(REGISTRY), None), str(tmp_path / "gone.jsonl"), 1, 2
        )
        error = receiver.recv()
    finally:
        signal.signal(signal.SIGINT, previous)
        _validate._worker.clear()  # pyright: ignore[reportPrivateUsage]
        receiver.close()
    assert isinstance(error, FileNotFoundError)
    with pytest.raises(FileNotFoundError):
        _validate._received(_Replay(error))  # pyright: ignore[reportPrivateUsage]


class _Replay:
    """A connection that gives one message."""

    def __init__(self, message: object) -> None:
        self.message = message

    def recv(self) -> object:
        """The message."""
        return self.message


def test_only_a_regular_file_its_path_still_names_is_shared_out(tmp_path: Path) -> None:
    """A file removed or replaced since it was opened, or a stream without a path, is read here and handed out."""
    path = tmp_path / "calls.jsonl"
    path.write_bytes(b"{}\n")
    with path.open("rb") as stream:
        assert _validate._path_of(stream) == str(path)  # pyright: ignore[reportPrivateUsage]
        path.unlink()
        assert _validate._path_of(stream) is None  # pyright: ignore[reportPrivateUsage]
        path.write_bytes(b"{}\n")
        assert _validate._path_of(stream) is None  # pyright: ignore[reportPrivateUsage] - another file now
    assert _validate._path_of(io.BytesIO(b"")) is None  # pyright: ignore[reportPrivateUsage]
    with open(os.devnull, "rb") as device:
        assert _validate._path_of(device) is None  # pyright: ignore[reportPrivateUsage] - not a regular file


def test_a_long_stream_goes_to_the_workers_a_few_pieces_at_a_time(tmp_path: Path) -> None:
    """Standard input (here a stream without a path) of many pieces: the report a single process writes."""
    data = _log(tmp_path).read_bytes() + b'{"name": "add", "arguments": {"a": 1, "b": 2}}\n' * 12_000
    serial, parallel = io.StringIO(), io.StringIO()
    expected = validate_lines(read_lines(io.BytesIO(data)), LineChecker(REGISTRY), serial)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        found = validate_in_processes(io.BytesIO(data), LineChecker(REGISTRY), 2, parallel)
    assert (found, parallel.getvalue()) == (expected, serial.getvalue())


def test_a_shared_file_ticks_and_clears_the_progress_bar(tmp_path: Path) -> None:
    """Sharing a file out, the bar is cleared before each report (this process's or a worker's) and at the end."""
    path = tmp_path / "calls.jsonl"
    path.write_bytes(b'{"name": "nope"}\n' * 40_000)
    drawn = io.StringIO()
    bar = ProgressBar(drawn)
    out = io.StringIO()
    with path.open("rb") as stream, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        found = validate_in_processes(stream, LineChecker(REGISTRY), 2, out, bar=bar)
    assert found.rejected == 40_000 and out.getvalue().count("\n") == 40_000
    assert out.getvalue().splitlines()[-1].startswith("40000: nope: ")
    assert not bar._shown  # pyright: ignore[reportPrivateUsage]


@pytest.mark.skipif(sys.platform != "linux", reason="the pipe size is Linux's")
def test_a_worker_pipe_holds_a_few_pieces_reports() -> None:
    """On Linux, a worker's pipe is widened to 1 MiB, so the worker need not wait for each report to be read."""
    import fcntl

    receiver, sender = multiprocessing.Pipe(duplex=False)
    try:
        _validate._widen(receiver)  # pyright: ignore[reportPrivateUsage]
        assert fcntl.fcntl(receiver.fileno(), fcntl.F_GETPIPE_SZ) == 1 << 20
    finally:
        receiver.close()
        sender.close()


def test_spawned_workers_load_the_target_and_share_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where processes are spawned, not forked, a file is still shared out: each worker loads TARGET itself."""
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    path = tmp_path / "calls.jsonl"
    path.write_bytes(b'{"name": "add", "arguments": {"a": 1}}\n' * 8_000)
    serial, parallel = io.StringIO(), io.StringIO()
    expected = validate_lines(read_lines(io.BytesIO(path.read_bytes())), LineChecker(REGISTRY), serial)
    try:
        with path.open("rb") as stream:
            target = (f"{FIXTURES / 'cli_tools.py'}:add", "auto")
            found = validate_in_processes(stream, LineChecker(REGISTRY), 2, parallel, target=target)
    finally:
        forget_fixture_modules()
    assert (found, parallel.getvalue()) == (expected, serial.getvalue())
    assert found.rejected == 8_000


def test_pieces_make_whole_rounds_so_every_share_is_as_long() -> None:
    """Pieces are at most `CHUNK_BYTES`, and each process's share of the file's bytes is as long, within a few."""
    chunk = _validate.CHUNK_BYTES
    for file_size in (0, 1, 100, chunk, 2 * chunk + 1, 10_288_882, 1 << 30):
        for jobs in (2, 3, 8):
            size = _validate._piece_size(file_size, jobs)  # pyright: ignore[reportPrivateUsage]
            assert 1 <= size <= chunk
            shares = [0] * jobs
            for index, low in enumerate(range(0, file_size, size)):
                shares[index % jobs] += min(size, file_size - low)
            assert max(shares) - min(shares) <= max(jobs * -(-file_size // (chunk * jobs)), 100 // jobs + 1)


_LOADED_BY_VALIDATE = """
import sys
from scopetool.cli import main
code = main(["validate", "tools.py:registry", "calls.jsonl"])
print(code, [name for name in ("asyncio", "multiprocessing", "concurrent.futures") if name in sys.modules],
      file=sys.stderr)
"""


def test_validate_without_jobs_loads_no_event_loop_and_no_processes(tmp_path: Path) -> None:
    """Checking a file in one process imports neither asyncio nor multiprocessing nor concurrent.futures."""
    (tmp_path / "tools.py").write_text(
        "from scopetool import Registry, tool\n\n\n@tool\ndef add(a: int, b: int) -> int:\n"
        '    """Add two integers."""\n    return a + b\n\n\nregistry = Registry(add)\n',
        encoding="utf-8",
    )
    (tmp_path / "calls.jsonl").write_text(
        '{"name": "add", "arguments": {"a": 1, "b": 2}}\n{"name": "add", "arguments": {"a": "1"}}\n', encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, "-c", _LOADED_BY_VALIDATE], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert result.stderr.splitlines()[-1] == "1 []"  # exit 1: one line was rejected
