"""The parts of the ``scopetool`` command that hold on their own: line checking, reasons, spans, streaming."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import jiter
import pytest
from cli_support import FIXTURES, forget_fixture_modules
from pydantic import Field

from scopetool import Definition, Invocation, Registry, Result, _stdio, tool
from scopetool._extras import missing_message
from scopetool.cli import _call, _validate, main
from scopetool.cli._common import dump_json, say
from scopetool.cli._validate import ProgressBar, read_lines
from scopetool.cli._validate_lines import LINE_LIMIT, LineChecker, Tally, Verdict, printable, reasons, validate_lines
from scopetool.providers import openai_chat


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def scale(factor: float, label: Annotated[str, Field(max_length=3)] = "x") -> float:
    """Scale by a factor."""
    return factor


class Raw:
    """A tool with a hand-written schema (checked by jsonschema-rs), and a validator that can be defective."""

    def definition(self) -> Definition:
        """Its definition."""
        return Definition(
            name="raw",
            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False},
        )

    def input_validator(self) -> Any:
        """A validator with a defect: it fails on n = 13."""

        def check(raw: bytes) -> None:
            if jiter.from_json(raw).get("n") == 13:
                raise RuntimeError("validator bug")

        return check

    async def call(self, invocation: Invocation) -> Result:
        """Nothing."""
        return Result()


REGISTRY = Registry(add, scale, Raw())


def verdict(line: str | bytes, line_format: str = "auto", registry: Registry = REGISTRY) -> Verdict | None:
    """The verdict on one line."""
    return LineChecker(registry, line_format).check(line.encode() if isinstance(line, str) else line)


def message(line: str, line_format: str = "auto") -> str:
    """The message of a line that is not admitted."""
    found = verdict(line, line_format)
    assert found is not None, line
    return found.message


ADMITTED = [
    '{"name": "add", "arguments": {"a": 1, "b": 2}}',
    '{"id": "7", "name":"add","arguments":{"a":1,"b":2}}\r\n',
    '{"name": "add", "arguments": {"b": 2, "a": 1}, "id": 7}',
    '{"arguments": {"a": 1, "b": 2}, "name": "add"}',
    '{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}',
    '{"name": "raw"}',
    '{"name": "raw", "arguments": null}',
    '{"name": "scale", "arguments": {"factor": 1e300}}',
    '{"id": "c", "type": "function", "function": {"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}}',
    '{"type": "function", "function": {"name": "scale", "arguments": "{\\"factor\\": 2, \\"label\\": null}"}}',
    '{"type": "function_call", "call_id": "c", "name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}',
    '{"type": "tool_use", "id": "t", "name": "add", "input": {"a": 1, "b": 2}}',
    '{"toolUse": {"toolUseId": "t", "name": "add", "input": {"a": 1, "b": 2}}}',
    '{"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}}',
    '{"function_call": {"name": "add", "args": {"a": 1, "b": 2}}}',
    '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}',
    "",
    " \r\n",
]


@pytest.mark.parametrize("line", ADMITTED)
def test_admitted_lines_have_no_verdict(line: str) -> None:
    """Calls the contract admits, in every format (and blank lines), give no verdict worth reporting."""
    found = verdict(line)
    assert found is None or (found.reasons == () and found.message == "")


@pytest.mark.parametrize(
    ("line", "line_format"),
    [
        ('{"function": {"name": "add", "arguments": {"a": 1, "b": 2}}}', "ollama"),
        ('{"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}', "mistral"),
        ('{"name": "add", "arguments": {"a": 1, "b": 2}}', "mcp"),
        ('{"name": "add", "arguments": {"a": 1, "b": 2}}', "neutral"),
    ],
)
def test_a_forced_format_reads_its_own_lines(line: str, line_format: str) -> None:
    """``--format`` reads lines of formats that are not recognised on their own (or share a shape)."""
    assert verdict(line, line_format) is None


REJECTED = [
    ('{"name": "add", "arguments": {"a": 1}}', ("missing field",), "- $.b: missing required field"),
    ('{"name": "add", "arguments": {"a": 1, "b": 2, "c": 3}}', ("unknown field",), "- $.c: unknown field"),
    ('{"name": "add", "arguments": {"a": "1", "b": 2}}', ("wrong type",), "(got a string)"),
    ('{"name": "raw", "arguments": {"n": "1"}}', ("wrong type",), "- $.n: expected integer"),
    ('{"name": "scale", "arguments": {"factor": 1, "label": "long"}}', ("invalid value",), "at most 3 characters"),
    ('{"name": "add", "arguments": "{\\"a\\": 1, \\"a\\": 1}"}', ("duplicate member",), "same member name twice"),
    ('{"name": "add", "arguments": "{\\"a\\": 1"}', ("truncated JSON",), "it looks truncated"),
    ('{"name": "add", "arguments": "{} x"}', ("not JSON",), "more after the JSON document"),
    ('{"name": "add", "arguments": "[1]"}', ("not an object",), "must be a JSON object, not an array"),
    ('{"name": "add", "arguments": {"a": NaN, "b": 1}}', ("non-finite number",), "NaN and Infinity"),
    ('{"name": "raw", "arguments": {"n": 1e400}}', ("non-finite number",), "too large for a double"),
    ('{"name": "scale", "arguments": {"factor": 9007199254740993}}', ("inexact integer",), "cannot hold exactly"),
    ('{"name": "add", "arguments": {"a": "\\ud800", "b": 1}}', ("not JSON",), "invalid escape"),
    ('{"name": "raw", "arguments": {"n": 13}}', ("validator defect",), 'is shown: error: tool "raw" failed'),
    ('{"name": "ad", "arguments": {}}', ("unknown tool",), 'error: tool "ad" is not available'),
    ('{"name": "a\\u001bb"}', ("unknown tool",), 'error: tool "a\\x1bb" is not available'),
    (
        '{"type": "tool_use", "id": "t", "name": "add", "input": {"a": 1, "b": 2, "b": 2}}',
        ("duplicate member",),
        "(line 1, column 22)",  # counted in the arguments, not in the line
    ),
    ('{"functionCall": {"name": "add", "args": {"a": NaN}}}', ("non-finite number",), "NaN and Infinity"),
    (
        '{"id": "c", "type": "function", "function": {"name": "add", "arguments": "{\\"a\\": \\"\\ud800\\"}"}}',
        ("not JSON",),
        "lone surrogate",
    ),
]


@pytest.mark.parametrize(("line", "labels", "text"), REJECTED)
def test_rejected_lines_carry_the_models_message_and_stable_reasons(
    line: str, labels: tuple[str, ...], text: str
) -> None:
    """A rejected call is reported with the message the model would get and its reason labels."""
    found = verdict(line)
    assert found is not None
    assert (found.reasons, text in printable(found.message)) == (labels, True), found


UNREADABLE = [
    ("[1, 2]", "not a JSON object"),
    ('{"nom": "add"}', "not a tool call: expected"),
    ('{"name": 1}', 'a neutral line needs a "name" string'),
    ('{"name": "add", "args": {}}', 'unknown member "args": a neutral line has name, arguments and id'),
    ('{"name": "add", "arguments": {"a": 1}', "not JSON: Expecting ',' delimiter (character 38)"),
    ("[" * 100_000, "not JSON: nested too deeply"),
    ('{"name": "add", "name": "add"}', "not strict JSON: an object has the same member name twice"),
    ('{"name": "add", "id": NaN, "arguments": {}}', "not strict JSON outside the arguments: NaN and Infinity"),
    ('{"type": "function_call", "name": "add", "arguments": "{}"}', "function call without a call_id"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', "not a tool call of mcp: tools/call: method must be"),
    ('{"type": "function", "function": {"name": "add"}, "x": 1, "x": 2}', "not strict JSON: an object has"),
]


@pytest.mark.parametrize(("line", "why"), UNREADABLE)
def test_unreadable_lines_say_why(line: str, why: str) -> None:
    """A line that is not a tool call that can be read is reported as unreadable, with the reason."""
    found = verdict(line)
    assert found is not None
    assert (found.label, found.reasons, why in found.message) == ("unreadable", ("unreadable line",), True), found


def test_undecodable_and_mismatched_lines_are_unreadable() -> None:
    """Bytes that are not UTF-8, and a line in another format than the forced one, are unreadable."""
    found = verdict(b'{"name": "add", "arguments": {"a": \xff}}')
    assert found is not None and found.message == "not UTF-8 (byte 36)"
    assert message('{"type": "text", "text": "hi"}', "anthropic") == "not a tool call of anthropic"
    assert message('{"name": "add"}', "anthropic") == "not a tool call of anthropic: content[0]: not a content block"
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        LineChecker(REGISTRY, "xml")


def test_calls_of_a_provider_that_refuses_a_tool_are_read_without_an_export() -> None:
    """A registry a provider cannot export (a name it refuses) still has that provider's calls read."""
    registry = Registry(tool(name="9lives")(lambda: "x"), add)
    assert verdict('{"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}}', registry=registry) is None
    found = verdict('{"functionCall": {"name": "add", "args": {"a": 1}}}', registry=registry)
    assert found is not None and found.reasons == ("missing field",)


def test_reasons_label_every_problem_once_and_skip_the_overflow_line() -> None:
    """Several problems give their labels in order, once each; "... and N more" is not a problem."""
    lines = [f"- $.f{index}: missing required field" for index in range(3)]
    lines += ["- $.x: unknown field", "- ... and 4 more"]
    text = "invalid arguments for tool 'add' (9 problems):\n" + "\n".join(lines)
    assert reasons(text, "add") == ("missing field", "unknown field")
    assert reasons("amount must be positive", "add") == ("tool's own rule",)
    assert reasons("invalid arguments for tool 'add' (1 problem):\n- $.a: must be odd", "add") == ("invalid value",)


def test_read_lines_skips_an_over_long_line_in_bounded_chunks() -> None:
    """A line over `LINE_LIMIT` bytes comes as None, and reading goes on at the next line."""
    long = b"x" * (LINE_LIMIT + 5)
    stream = io.BytesIO(b"first\n" + long + b"\n" + b"a" * (LINE_LIMIT - 1) + b"\nlast" + b"\n" + long)
    lines = list(read_lines(stream))
    assert [line if line is None else line[:5] for line in lines] == [b"first", None, b"aaaaa", b"last\n", None]
    assert len(lines[2] or b"") == LINE_LIMIT


def test_validate_lines_streams_and_counts() -> None:
    """Each line is reported before the next is read; the tally counts lines, blanks and both kinds of failure."""
    out = io.StringIO()
    pulled: list[int] = []

    def lines() -> Iterator[bytes | None]:
        for line in [b'{"name": "ad"}\n', b"\n", None, b'{"name": "add", "arguments": {}}\n']:
            pulled.append(out.getvalue().count("\n"))
            yield line

    tally = validate_lines(lines(), LineChecker(REGISTRY), out)
    assert pulled == [0, 1, 1, 2]  # the report of line 1 was written before line 2 was read
    counts = (tally.lines, tally.blank, tally.calls, tally.admitted, tally.rejected, tally.unreadable)
    assert counts == (4, 1, 3, 0, 2, 1)
    assert out.getvalue().splitlines()[1] == f"3: unreadable: the line is over {LINE_LIMIT} bytes"
    assert Tally().summary() == "0 calls: 0 admitted, 0 rejected, 0 unreadable"


def test_progress_bar_redraws_at_most_ten_times_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bar shows the share of the file read and the rate, only when 0.1 s passed, and clears itself."""
    clock = iter([0.0, 0.05, 0.5, 1.0, 1.0])
    monkeypatch.setattr(_validate.time, "monotonic", lambda: next(clock))
    stream = io.StringIO()
    bar = ProgressBar(stream, total=1000, position=lambda: 250)
    assert list(bar.wrap(range(3000))) == list(range(3000))
    drawn = stream.getvalue()
    assert drawn == (f"\r[{'#' * 8}{'.' * 22}]  25% 2,048 lines, 4,096/s\x1b[K\r\x1b[K")
    bare = ProgressBar(stream)
    bare.clear()
    assert stream.getvalue() == drawn


def test_validate_shows_a_progress_bar_only_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a terminal the bar goes to standard error and is cleared before each report line."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    calls = tmp_path / "calls.jsonl"
    calls.write_text('{"name": "ad"}\n' * 3000, encoding="utf-8")
    target = f"{FIXTURES / 'cli_tools.py'}:add"
    clock = iter(float(second) for second in range(100))
    monkeypatch.setattr(_validate.time, "monotonic", lambda: next(clock))
    for source in ("file", "pipe", "memory"):
        terminal = Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        argv = ["validate", target, str(calls) if source == "file" else "-"]
        with contextlib.ExitStack() as stack:
            if source == "pipe":
                read, write = os.pipe()
                os.write(write, calls.read_bytes()[:60_000])
                os.close(write)
                binary: io.BufferedIOBase = stack.enter_context(os.fdopen(read, "rb"))
            else:
                binary = io.BytesIO(calls.read_bytes())
            monkeypatch.setattr(sys, "stdin", stack.enter_context(io.TextIOWrapper(binary)))
            assert main(argv) == 1
        shown = terminal.getvalue()
        assert "lines, " in shown and shown.endswith("\r\x1b[K"), (source, shown[-200:])
        assert ("%" in shown) == (source == "file"), source
        assert capsys.readouterr().out.startswith('1: ad: error: tool "ad" is not available; did you mean "add"?\n')
    forget_fixture_modules()


def test_dump_json_keeps_order_unicode_and_exact_numbers() -> None:
    """Members stay in their order, text stays UTF-8, lossless numbers print as written."""
    value = jiter.from_json(b'{"z": 1.10, "a": [], "n": {}, "s": "gr\\u00fc\\u00df", "l": [1e400, true, null]}',
        float_mode="lossless-float")  # fmt: skip
    assert dump_json(value) == (
        '{\n  "z": 1.10,\n  "a": [],\n  "n": {},\n  "s": "grüß",\n  "l": [\n    1e400,\n    true,\n    null\n  ]\n}'
    )


def test_a_missing_module_is_named_with_the_extra_that_brings_it_only_when_one_does() -> None:
    """The module met missing is named; the install command only for a module an extra brings."""
    sdk = ModuleNotFoundError("No module named 'mcp'", name="mcp")
    assert missing_message("scopetool serve", sdk) == (
        "scopetool serve needs the module 'mcp', which is not installed: pip install 'scopetool[mcp]'"
    )
    other = ModuleNotFoundError("No module named 'sniffio'", name="sniffio")
    assert missing_message("scopetool proxy", other) == (
        "scopetool proxy needs the module 'sniffio', which is not installed (no scopetool extra brings it)"
    )
    assert missing_message("scopetool serve", ImportError("broken")) == (
        "scopetool serve cannot import what it needs: broken"
    )


def test_serve_dispatches_to_the_mcp_server_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``serve`` hands the loaded registry to `run_stdio`; a server module that cannot load is one line."""
    import scopetool.mcp.server

    served: list[Registry] = []
    monkeypatch.setattr(scopetool.mcp.server, "run_stdio", lambda registry, **options: served.append(registry))
    monkeypatch.chdir(FIXTURES)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["serve", "cli_tools.py:add"]) == 0
    assert main(["serve", "cli_tools:calculator"]) == 0
    assert main(["serve", "cli_tools:calculator"]) == 0  # the second load finds its folder on sys.path already
    names = [[binding.name for binding in registry] for registry in served]
    assert names == [["add"], ["add", "divide"], ["add", "divide"]]
    monkeypatch.setitem(sys.modules, "scopetool.mcp.server", None)
    assert main(["serve", "cli_tools.py:add"]) == 2
    assert capsys.readouterr().err.startswith("scopetool: scopetool serve cannot import what it needs: import of ")
    forget_fixture_modules()


@pytest.mark.needs("mcp")
def test_serve_says_one_line_and_passes_its_options(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A terminal gets one line; --http, --name, --instructions, --page-size reach the server; errors are a line."""
    import scopetool.mcp.server

    calls: list[tuple[str, dict[str, object]]] = []

    def run_http(registry: Registry, **options: Any) -> None:
        calls.append(("http", options))
        ready = options.pop("ready")
        assert options.pop("warn") is say
        ready(f"http://{options['host']}:{options['port'] or 41000}/mcp")

    def busy(registry: Registry, **options: Any) -> None:
        raise OSError(98, "Address already in use")

    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(scopetool.mcp.server, "run_http", run_http)

    def run_stdio(registry: Registry, **options: Any) -> None:
        calls.append(("stdio", options))
        ready = options.pop("ready")
        if ready is not None:
            ready()

    monkeypatch.setattr(scopetool.mcp.server, "run_stdio", run_stdio)
    monkeypatch.chdir(FIXTURES)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["serve", "cli_tools:calculator", "--http", "0", "--name", "calc", "--page-size", "1"]) == 0
    assert capsys.readouterr().err == (
        "scopetool: serving 2 tools as MCP server 'calc' at http://127.0.0.1:41000/mcp (Streamable HTTP); "
        "waiting for a client (Ctrl-C stops)\n"
    )
    monkeypatch.setattr(sys, "stdin", Terminal(io.BytesIO()))
    assert main(["serve", "cli_tools.py:add", "--instructions", "Add."]) == 0
    assert capsys.readouterr().err == (
        "scopetool: serving 1 tool as MCP server 'scopetool' over stdio; "
        "waiting for a client on standard input (Ctrl-C stops)\n"
    )
    assert calls == [
        (
            "http",
            {
                "host": "127.0.0.1",
                "port": 0,
                "settings": scopetool.mcp.server.HttpSettings(),
                "auth": None,
                "name": "calc",
                "instructions": None,
                "page_size": 1,
            },
        ),
        ("stdio", {"name": "scopetool", "instructions": "Add.", "page_size": None, "principal": None}),
    ]
    monkeypatch.setattr(scopetool.mcp.server, "run_http", busy)
    assert main(["serve", "cli_tools.py:add", "--http", "127.0.0.1:80"]) == 2
    assert capsys.readouterr().err == (
        "scopetool: --http 127.0.0.1:80: cannot listen there: OSError: [Errno 98] Address already in use\n"
    )
    assert main(["serve", "cli_tools.py:add", "--page-size", "0"]) == 2
    assert capsys.readouterr().err == "scopetool: --page-size must be a positive integer, not 0\n"
    forget_fixture_modules()


@pytest.mark.needs("mcp")
def test_serve_answers_an_mcp_client_over_stdio() -> None:
    """``scopetool serve`` speaks MCP on standard input and output: it initializes, lists the tools, ends at EOF."""
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
    command = [sys.executable, "-m", "scopetool", "serve", "cli_tools.py:calculator"]
    with subprocess.Popen(command, cwd=FIXTURES, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as server:
        assert server.stdin is not None and server.stdout is not None

        def ask(message: dict[str, Any]) -> dict[str, Any]:
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
            server.stdin.flush()
            if "id" not in message:
                return {}
            answer: dict[str, Any] = json.loads(server.stdout.readline())
            return answer

        assert ask({"id": 1, "method": "initialize", "params": hello})["id"] == 1
        ask({"method": "notifications/initialized"})
        listed = ask({"id": 2, "method": "tools/list"})
        server.stdin.close()
        assert server.wait(timeout=60) == 0
    assert [t["name"] for t in listed["result"]["tools"]] == ["add", "divide"]


def test_main_survives_interruption_and_a_closed_pipe(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Ctrl-C is exit code 130 and one line (a tool raising KeyboardInterrupt only fails its call); a reader
    that went away ends the command quietly."""
    (tmp_path / "tools.py").write_text(
        "import sys\nfrom scopetool import tool\n\n@tool\nasync def stop() -> str:\n    raise KeyboardInterrupt\n\n"
        "@tool\ndef leave() -> str:\n    sys.exit(0)\n\ntools = [stop, leave]\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name, raised in (("stop", "KeyboardInterrupt"), ("leave", "SystemExit")):
        assert main(["call", "tools.py:tools", name]) == 1
        assert capsys.readouterr() == (
            f'error: tool "{name}" failed\n',
            f"scopetool: the call raised {raised}; the model is shown only the generic text above\n",
        )

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt  # Ctrl-C while the command runs

    monkeypatch.setattr(_call, "run", interrupted)
    assert main(["call", "tools.py:stop", "stop"]) == 130
    assert capsys.readouterr().err == "scopetool: interrupted\n"

    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError

        def fileno(self) -> int:
            return descriptor

    descriptor = os.open(os.devnull, os.O_WRONLY)
    try:
        monkeypatch.setattr(sys, "stdout", Closed())
        (tmp_path / "calls.jsonl").write_text('{"name": "nope"}\n', encoding="utf-8")
        assert main(["validate", "tools.py:stop", "calls.jsonl"]) == 1
    finally:
        os.close(descriptor)
    forget_fixture_modules()


def test_output_is_utf8_whatever_the_locale_says() -> None:
    """A text stream in another encoding is switched to UTF-8 before anything is printed."""
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    _stdio._utf8(stream)
    stream.write("grüß")
    stream.flush()
    assert stream.buffer.getvalue() == "grüß".encode()  # type: ignore[attr-defined]


def test_validate_reports_a_read_error_on_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stream that fails while it is read (a device error on standard input, here) is a usage error."""

    class Failing(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            raise OSError(errno.EIO, "Input/output error")

    with io.TextIOWrapper(io.BufferedReader(Failing())) as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        assert main(["validate", f"{FIXTURES / 'cli_tools.py'}:add", "-"]) == 2
    assert capsys.readouterr().err == "scopetool: cannot read '-': Input/output error\n"
    forget_fixture_modules()


def test_arguments_that_are_not_utf8_are_left_for_the_contract() -> None:
    """``call --provider`` leaves bytes that are not UTF-8 as they are: the contract rejects them."""
    export = openai_chat.export_tools(Registry(add_optional))
    assert _call._as_provider_reads(b"\xff{}", export, "add_optional") == b"\xff{}"
    assert _call._as_provider_reads(b'{"a": 1, "b": null}', export, "add_optional") == '{"a":1}'


@tool
def add_optional(a: int, b: int = 2) -> int:
    """Add two integers, the second 2 unless given."""
    return a + b


def test_a_target_that_raises_is_located_in_the_users_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A syntax error is where the parser found it; an error of installed code alone is where it was raised."""
    from scopetool import _target  # the module under test, private

    monkeypatch.chdir(tmp_path)
    (tmp_path / "typo.py").write_text("x = 1\ndef broken(:\n")
    with pytest.raises(_target.TargetError, match=r"raised SyntaxError: .* \(at typo\.py:2\)$"):
        _target.load_object("typo.py:x")
    try:
        json.loads("{")
    except ValueError as error:
        assert error.__traceback__ is not None
        installed_only = error.with_traceback(error.__traceback__.tb_next)  # without this test's own frame
        assert (_target._where_raised(installed_only) or "").startswith(json.__file__.rpartition(os.sep)[0])
    assert _target._where_raised(RuntimeError("never raised")) is None
