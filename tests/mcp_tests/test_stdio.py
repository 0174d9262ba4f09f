"""The MCP server as a subprocess, driven over stdio by the real SDK client: what a desktop client sees.

Most tests start it as ``python -m scopetool serve mcp_fixture_tools.py:registry`` (`SERVER`); the
raw-wire test runs the fixture as a script (`SCRIPT`), which calls `run_stdio` itself. The tests of an
input that ends before the answers (``printf ... | scopetool serve``) also run `serve_stdio` in process,
with this process's stdin and stdout pointed at files or OS pipes.
"""

from __future__ import annotations

import asyncio
import gc
import io
import json
import math
import os
import pty
import signal
import subprocess
import sys
import threading
import warnings
from collections.abc import AsyncGenerator, Iterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client, types
from mcp.client.session import ClientRequestContext
from mcp_fixture_tools import HOSTILE, SECRET, registry

from scopetool.mcp._stdio_server import _lines, _read_line
from scopetool.mcp.server import run_stdio, serve_stdio

FIXTURE = Path(__file__).with_name("mcp_fixture_tools.py")
SERVER = StdioServerParameters(command=sys.executable, args=["-m", "scopetool", "serve", f"{FIXTURE}:registry"])
"""``scopetool serve``, as a desktop client would start it."""
SCRIPT = StdioServerParameters(command=sys.executable, args=[str(FIXTURE)])
"""The fixture run as a script: it calls ``run_stdio(registry, name="fixture-tools")``."""


def text(result: types.CallToolResult) -> str:
    """The result's one text block."""
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


class Person:
    """Answers elicitations in order, and remembers the prompts."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.prompts.append(params.message)
        return self.answers.pop(0)


@asynccontextmanager
async def session(person: Person | None = None, notes: list[Any] | None = None) -> AsyncGenerator[ClientSession]:
    """A 2025-11-25 ClientSession (the initialize handshake) with the server subprocess."""

    async def record(message: Any) -> None:
        if notes is not None:
            notes.append(message)

    async with (
        stdio_client(SERVER) as (read, write),
        ClientSession(read, write, elicitation_callback=person, message_handler=record) as client,
    ):
        await client.initialize()
        yield client


async def test_a_2025_client_lists_calls_and_sees_only_safe_errors() -> None:
    """Over stdio: the list with annotations and output schemas, results, and redacted error results."""
    async with session() as client:
        assert client.initialize_result is not None
        assert client.initialize_result.server_info.name == "scopetool"  # the default name
        listed = {t.name: t for t in (await client.list_tools()).tools}
        added = await client.call_tool("add", {"a": 2, "b": 3})
        rejected = await client.call_tool("add", {"a": "two", "b": 3})
        failed = await client.call_tool("reserve", {"seat": "12A"})
        crashed = await client.call_tool("connect", {"host": "db.internal"})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("drop_tables", {})
        chatty = await client.call_tool("chatty", {"name": "Ada"})  # its print goes to stderr, not the wire
    assert (chatty.is_error, text(chatty)) == (False, "hello Ada")
    assert listed["add"].annotations is not None and listed["add"].annotations.read_only_hint is True
    assert listed["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert listed["greet"].annotations is None and listed["greet"].input_schema["required"] == ["name"]
    assert (added.is_error, text(added), added.structured_content) == (False, "5", {"result": 5})
    assert rejected.is_error and "$.a: Input should be a valid integer (got a string)" in text(rejected)
    assert (failed.is_error, text(failed)) == (True, "the flight is full")
    assert (crashed.is_error, text(crashed)) == (True, 'error: tool "connect" failed')
    assert unknown.value.code == -32602  # MCP 2026-07-28: an unknown tool is a protocol error
    for result in (rejected, failed, crashed):
        assert SECRET not in result.model_dump_json() and '"two"' not in result.model_dump_json()


async def test_a_2025_client_gets_progress_in_order_and_elicitations() -> None:
    """Progress only when asked for, in order; an accepted form resumes the call, a declined one ends it."""
    notes: list[Any] = []
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    person = Person(types.ElicitResult(action="accept", content={"answer": True}), types.ElicitResult(action="decline"))
    async with session(person, notes) as client:
        counted = await client.call_tool("count", {"steps": 5}, progress_callback=on_progress)
        quiet = len(notes)
        await client.call_tool("count", {"steps": 2})
        approved = await client.call_tool("approve", {"item": "invoice-7"})
        declined = await client.call_tool("approve", {"item": "invoice-8"})
        upload = await client.call_tool("upload", {"item": "key"})
    assert text(counted) == "counted to 5"
    assert seen == [(float(n), 5.0, f"step {n}") for n in range(1, 6)]
    assert [n for n in notes[quiet:] if isinstance(n, types.ProgressNotification)] == []
    assert person.prompts == ["Approve the transfer?", "Approve the transfer?"]
    assert json.loads(text(approved)) == {"answer": True, "item": "invoice-7", "state": {"item": "invoice-7"}}
    assert (declined.is_error, text(declined)) == (
        True,
        'error: tool "approve" needs input, and the request for it was declined',
    )
    assert (upload.is_error, text(upload)) == (
        True,
        'error: tool "upload" needs input that cannot be requested over this connection',
    )


async def test_a_client_without_elicitation_is_told_input_cannot_be_requested() -> None:
    """A client that declared no elicitation capability gets the fixed error, and is never asked."""
    async with session() as client:
        result = await client.call_tool("approve", {"item": "x"})
    assert (result.is_error, text(result)) == (
        True,
        'error: tool "approve" needs input that cannot be requested over this connection',
    )


async def test_a_2026_client_answers_input_requests_by_retrying() -> None:
    """The SDK's default Client speaks 2026-07-28 over stdio: input_required, then the retry resumes the call."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    person = Person(types.ElicitResult(action="accept", content={"email": "ada@example.com", "plan": "free"}))
    async with Client(SERVER, elicitation_callback=person) as client:
        assert client.protocol_version == "2026-07-28"
        profile = await client.call_tool("profile", {"item": "account"})
        counted = await client.call_tool("count", {"steps": 3}, progress_callback=on_progress)
    assert person.prompts == ['{"ask": "your profile"}']
    assert json.loads(text(profile))["answer"] == {"email": "ada@example.com", "plan": "free"}
    assert text(counted) == "counted to 3" and seen == [1.0, 2.0, 3.0]


async def test_a_tool_that_raises_past_exception_is_one_error_result_and_the_server_keeps_serving() -> None:
    """CancelledError, KeyboardInterrupt, sys.exit from sync and async tools: each its call's isError result.

    A call in flight meanwhile is answered, and so is the call after them.
    """
    results: dict[str, types.CallToolResult] = {}
    async with session() as client:

        async def run(name: str, arguments: dict[str, Any]) -> None:
            results[name] = await client.call_tool(name, arguments)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(run, "nap", {"seconds": 1.0})  # in flight while the others fail
                await anyio.sleep(0.2)
                for name, arguments in HOSTILE.items():
                    group.start_soon(run, name, arguments)
            after = await client.call_tool("add", {"a": 1, "b": 2})
    assert (after.is_error, text(after)) == (False, "3")
    assert (results["nap"].is_error, text(results["nap"])) == (False, "slept 1.0s")
    for name in HOSTILE:
        assert (results[name].is_error, text(results[name])) == (True, f'error: tool "{name}" failed'), name
        assert SECRET not in results[name].model_dump_json()


def hostile_lines() -> bytes:
    """Raw lines that break I-JSON or JSON-RPC, between a handshake and a valid call (id 13)."""
    lines = [
        wire(initialize()).encode(),
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greet",'
        b' "arguments": {"name": "shown", "\\u006eame": "run"}}}\n',  # a collision only once escapes are read
        b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add",'
        b' "arguments": {"a": "\\ud800", "b": 1}}}\n',  # a lone surrogate
        b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "add", "arguments": {"a": NaN}}}\n',
        b"not json\n",
        b'{"jsonrpc": "2.0", "id": 5, "method"\n',  # truncated
        b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "\xff"}}\n',  # not UTF-8
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call",'
        b' "params": {"name": "add", "\\u006eame": "greet", "arguments": {"a": 1, "b": 2}}}\n',  # which tool?
        b'{"jsonrpc": "2.0", "id": 8, "id": 9, "method": "tools/list"}\n',  # which request?
        b'{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1,'
        b' "b": 2}, "_meta": {"progressToken": 1, "progressToken": 2}}}\n',
        b'{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "add",'
        b' "arguments": {"a": 1, "b": 2}, "arguments": {"a": 5, "b": 5}}}\n',  # which arguments?
        b'{"jsonrpc": "2.0", "id": "\\udc00", "method": "tools/list"}\n',  # an id that is not I-JSON
        b'{"id": 12, "hello": "world"}\n',  # JSON, not JSON-RPC
        b"[1, 2]\n",
        b"\n",  # blank: skipped
        wire([call(13, "add", a=20, b=22)]).encode(),
    ]
    return b"".join(lines)


def check_hostile_answers(output: bytes) -> None:
    """Each request of `hostile_lines` answered as docs/mcp-server.md says, and the server still serving."""
    messages = [json.loads(line) for line in output.splitlines()]
    got = {m["id"]: m for m in messages if m.get("id") is not None}
    unnamed = [m["error"] for m in messages if "id" in m and m["id"] is None]
    for request_id, problem in ((2, "same member name twice"), (3, "invalid escape"), (4, "NaN and Infinity")):
        assert got[request_id]["result"]["isError"] is True and problem in result_text(got[request_id])
        assert "run" not in result_text(got[request_id])
    for request_id in (7, 10, 11):
        error = got[request_id]["error"]
        assert error["code"] == types.INVALID_REQUEST and "the same member name twice" in error["message"]
    assert (
        got[12]["error"]["code"] == types.INVALID_REQUEST
        and "not a JSON-RPC 2.0 message" in got[12]["error"]["message"]
    )
    assert result_text(got[13]) == "42" and sorted(got) == [1, 2, 3, 4, 7, 10, 11, 12, 13]
    assert sorted(e["code"] for e in unnamed) == [types.PARSE_ERROR] * 3 + [types.INVALID_REQUEST] * 3
    assert {e["message"] for e in unnamed if e["code"] == types.PARSE_ERROR} == {
        "Parse error: not JSON: Expecting value (character 1)",
        "Parse error: not JSON: Expecting ':' delimiter (character 38)",
        "Parse error: not UTF-8 (byte 73)",
    }


def test_every_hostile_line_is_answered_and_the_server_keeps_serving() -> None:
    """``scopetool serve``: each request among raw hostile lines gets an answer, then a valid call still runs."""
    done = subprocess.run(
        [SERVER.command, *SERVER.args], input=hostile_lines(), capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0
    check_hostile_answers(done.stdout)


def test_an_answer_to_an_elicitation_that_breaks_i_json_ends_the_call() -> None:
    """A repeated member in the client's answer is no answer: the call ends with the 'did not answer' result."""
    with subprocess.Popen(
        [SERVER.command, *SERVER.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        watchdog = threading.Timer(60, server.kill)  # a hung server fails the test instead of hanging it
        watchdog.start()
        server.stdin.write(wire([*initialize(elicitation={}), call(2, "approve", item="x")]).encode())
        server.stdin.flush()
        initialized, asked = json.loads(server.stdout.readline()), json.loads(server.stdout.readline())
        answer = f'{{"jsonrpc": "2.0", "id": {json.dumps(asked["id"])}, "result": {{"action": "accept",'
        answer += ' "content": {"answer": false, "answer": true}}}\n'
        server.stdin.write(answer.encode())
        server.stdin.close()
        ended = json.loads(server.stdout.readline())
        watchdog.cancel()
    assert initialized["id"] == 1 and asked["method"] == "elicitation/create"
    assert ended["id"] == 2 and ended["result"]["isError"] is True
    assert result_text(ended) == 'error: tool "approve" needs input, and the client did not answer the request for it'


# --- Input that ends before the answers: `printf '...' | scopetool serve`, or a client that half-closes. ---


def initialize(**capabilities: Any) -> list[dict[str, Any]]:
    """The 2025-11-25 handshake (request id 1), declaring `capabilities`."""
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "clientInfo": {"name": "raw", "version": "1"},
    }
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


def call(request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
    """A ``tools/call`` request."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def wire(messages: list[dict[str, Any]]) -> str:
    """JSON-RPC messages as newline-delimited JSON, the stdio framing."""
    return "".join(json.dumps(message) + "\n" for message in messages)


def answers(output: str) -> dict[Any, dict[str, Any]]:
    """The server's responses by request id (its own requests and notifications left out)."""
    messages = [json.loads(line) for line in output.splitlines()]
    return {message["id"]: message for message in messages if "method" not in message}


def result_text(answer: dict[str, Any]) -> str:
    """The one text block of a ``tools/call`` response."""
    [block] = answer["result"]["content"]
    return str(block["text"])


PIPED = [
    *initialize(),
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    call(3, "nap", seconds=0.5),  # still running when the input ends
    call(4, "add", a=2, b=3),
]
"""The reported sequence (initialize, initialized, tools/list), then a slow call and a quick one."""


def test_scopetool_serve_answers_every_piped_request_before_exiting() -> None:
    """``printf ... | scopetool serve``: stdin ends at once, yet the list and both calls are answered; no stderr."""
    done = subprocess.run(
        [SERVER.command, *SERVER.args],
        input=wire(PIPED),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    got = answers(done.stdout)
    assert (done.returncode, done.stderr) == (0, "")  # a pipe is a client: no "waiting for a client" line
    assert sorted(got) == [1, 2, 3, 4] and all("result" in answer for answer in got.values())
    assert len(got[2]["result"]["tools"]) == len(registry.definitions())
    assert (result_text(got[3]), result_text(got[4])) == ("slept 0.5s", "5")


class Piped:
    """This process's stdin and stdout pointed at files, for `serve_stdio` in process: all input, then its end."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch, files: ExitStack) -> None:
        self.folder, self.monkeypatch, self.files = folder, monkeypatch, files

    def feed(self, messages: list[dict[str, Any]], *, garbage: str = "") -> None:
        """Write `messages` (after a `garbage` line, when given) as the whole input; the output starts empty."""
        source, sink = self.folder / "stdin.jsonl", self.folder / "stdout.jsonl"
        source.write_text(garbage + wire(messages), encoding="utf-8")
        self.monkeypatch.setattr(sys, "stdin", self.files.enter_context(source.open(encoding="utf-8")))
        self.monkeypatch.setattr(sys, "stdout", self.files.enter_context(sink.open("w", encoding="utf-8")))

    def feed_bytes(self, data: bytes) -> None:
        """Write `data` as the whole input, as it is; the output starts empty."""
        source, sink = self.folder / "stdin.jsonl", self.folder / "stdout.jsonl"
        source.write_bytes(data)
        self.monkeypatch.setattr(sys, "stdin", self.files.enter_context(source.open(encoding="utf-8")))
        self.monkeypatch.setattr(sys, "stdout", self.files.enter_context(sink.open("w", encoding="utf-8")))

    def output(self) -> str:
        """Everything the server wrote."""
        return (self.folder / "stdout.jsonl").read_text(encoding="utf-8")


@pytest.fixture
def piped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Piped]:
    """Stdin and stdout as files, closed after the test."""
    with ExitStack() as files:
        yield Piped(tmp_path, monkeypatch, files)


def test_hostile_lines_in_process(piped: Piped) -> None:
    """The same hostile lines, served in process by `run_stdio`."""
    piped.feed_bytes(hostile_lines())
    run_stdio(registry)
    check_hostile_answers(piped.output().encode())


@pytest.mark.parametrize(
    ("line", "to_server", "code", "request_id"),
    [
        (b'{"jsonrpc": "2.0", "id": 5, "result": {"a": 1, "a": 2}}', True, types.INVALID_REQUEST, 5),
        (b'{"jsonrpc": "2.0", "id": 5, "result": 3}', True, types.INVALID_REQUEST, 5),
        (b'{"jsonrpc": "2.0", "id": true, "method": "x", "params": {"a": NaN}}', False, types.INVALID_REQUEST, None),
        (b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "\\ud800"}}', False, -32600, None),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [NaN]}', False, types.INVALID_REQUEST, 1),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"a": NaN}}', False, -32600, 1),
        (b"[NaN]", False, types.INVALID_REQUEST, None),
    ],
)
def test_a_line_that_cannot_be_read_is_answered_to_the_right_side(
    line: bytes, to_server: bool, code: int, request_id: int | None
) -> None:
    """A client's response that cannot be read is an error to the server; anything else, to the client."""
    for_server, for_client = _read_line(line)
    answer = for_server if to_server else for_client
    assert (for_server is None, for_client is None) == (not to_server, to_server) and answer is not None
    error = answer.message
    assert isinstance(error, types.JSONRPCError) and (error.error.code, error.id) == (code, request_id)
    assert _read_line(b"  \r\n") == (None, None)


def test_run_stdio_answers_what_it_read_before_the_input_ended(piped: Piped) -> None:
    """In process: a line that is not JSON is answered with a parse error, an error without an id is skipped."""
    unparsed = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    piped.feed([unparsed, *PIPED], garbage="not json\n")
    readied: list[bool] = []
    run_stdio(registry, ready=lambda: readied.append(True))
    got = answers(piped.output())
    assert readied == [True]  # once, when serving began
    assert got.pop(None)["error"]["code"] == types.PARSE_ERROR  # the answer to "not json"
    assert sorted(got) == [1, 2, 3, 4]
    assert (result_text(got[3]), result_text(got[4])) == ("slept 0.5s", "5")


async def test_a_call_still_running_when_the_grace_ends_is_answered_connection_closed(piped: Piped) -> None:
    """Past `shutdown_grace`, a call still running is cancelled and answered with the SDK's CONNECTION_CLOSED."""
    piped.feed([*initialize(), call(2, "nap", seconds=3600), call(3, "add", a=1, b=1)])
    with anyio.fail_after(60):  # a server that outlives its grace fails the test instead of hanging it
        await serve_stdio(registry, shutdown_grace=1.0)
    got = answers(piped.output())
    assert result_text(got[3]) == "2"
    assert got[2]["error"]["code"] == types.CONNECTION_CLOSED and "result" not in got[2]


async def test_a_call_the_client_cancelled_is_not_waited_for(piped: Piped) -> None:
    """A request the client cancelled is never answered, so the server does not wait for it, even with no bound."""
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    piped.feed([*initialize(), call(2, "nap", seconds=3600), cancel, call(3, "add", a=1, b=2)])
    with anyio.fail_after(60):  # waiting for the cancelled call would hang: fail instead
        await serve_stdio(registry, shutdown_grace=math.inf)
    got = answers(piped.output())
    assert sorted(got) == [1, 3] and result_text(got[3]) == "3"


async def test_a_request_for_input_after_the_input_ended_ends_the_call(piped: Piped) -> None:
    """The client can no longer answer an elicitation: the call ends at once with the fixed 'did not answer' text."""
    piped.feed([*initialize(elicitation={}), call(2, "approve", item="x")])
    with anyio.fail_after(60):
        await serve_stdio(registry, shutdown_grace=math.inf)
    output = piped.output()
    assert [json.loads(line).get("method") for line in output.splitlines()].count("elicitation/create") == 1
    answer = answers(output)[2]
    assert answer["result"]["isError"] is True
    assert result_text(answer) == 'error: tool "approve" needs input, and the client did not answer the request for it'


async def test_a_client_that_answers_then_half_closes_gets_the_call_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over OS pipes: the first elicitation is answered, the input closes, and the tool's next one ends the call."""
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    with (  # closed last to first: the server's stdout before the client's end, so no read stays blocked
        open(stdout_read, encoding="utf-8") as client_in,
        open(stdin_write, "w", encoding="utf-8") as client_out,
        open(stdin_read, encoding="utf-8") as server_in,
        open(stdout_write, "w", encoding="utf-8") as server_out,
    ):
        monkeypatch.setattr(sys, "stdin", server_in)
        monkeypatch.setattr(sys, "stdout", server_out)

        async def read() -> dict[str, Any]:
            line = await anyio.to_thread.run_sync(client_in.readline, abandon_on_cancel=True)
            return dict(json.loads(line))

        async def converse() -> list[dict[str, Any]]:
            """The client's side: answer the first elicitation, close the input, read the rest."""
            client_out.write(wire([*initialize(elicitation={}), call(2, "nag", item="x")]))
            client_out.flush()
            initialized, asked = await read(), await read()
            accept = {"action": "accept", "content": {"answer": True}}
            client_out.write(wire([{"jsonrpc": "2.0", "id": asked["id"], "result": accept}]))
            client_out.close()  # half-close: the answers still come
            return [initialized, asked, await read(), await read()]

        async def serve() -> None:
            await serve_stdio(registry, shutdown_grace=math.inf)
            server_out.close()  # what the client reads next is the end of the output

        conversation: list[dict[str, Any]] = []
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(serve)
                conversation = await converse()
    initialized, asked, again, ended = conversation
    assert initialized["id"] == 1 and asked["method"] == again["method"] == "elicitation/create"
    assert again["id"] != asked["id"] and ended["id"] == 2 and ended["result"]["isError"] is True
    assert result_text(ended) == 'error: tool "nag" needs input, and the client did not answer the request for it'


def test_a_shutdown_grace_that_is_not_a_duration_is_refused() -> None:
    """A negative or NaN grace is a ValueError, before anything is served."""
    for grace in (-1.0, math.nan):
        with pytest.raises(ValueError, match="shutdown_grace"):
            run_stdio(registry, shutdown_grace=grace)


async def test_a_client_that_closed_the_output_is_a_disconnect(piped: Piped, monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers that can no longer be written (a broken pipe) end the server quietly, as a disconnect does."""
    piped.feed([*initialize(), call(2, "nap", seconds=3600)])
    reader, writer = os.pipe()
    os.close(reader)  # the client stopped reading: every write is a broken pipe
    output = open(writer, "w", encoding="utf-8")  # noqa: SIM115 - its close raises, for the unwritten answer
    monkeypatch.setattr(sys, "stdout", output)
    try:
        with anyio.fail_after(60):
            await serve_stdio(registry, shutdown_grace=math.inf)
    finally:
        with pytest.raises(BrokenPipeError):
            output.close()
    assert output.closed


def test_scopetool_serve_at_a_terminal_says_so_and_stops_on_one_ctrl_c() -> None:
    """stdin a terminal: one stderr line says what is served and that it waits; one SIGINT ends it, exit 130."""
    controller, terminal = pty.openpty()
    try:
        with subprocess.Popen(
            [SERVER.command, *SERVER.args, "--name", "fixture-tools"],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as process:
            assert process.stderr is not None
            line = process.stderr.readline()
            process.send_signal(signal.SIGINT)  # what Ctrl-C sends; the server is blocked reading the terminal
            rest = process.stderr.read()
            code = process.wait(30)
    finally:
        os.close(controller)
        os.close(terminal)
    assert line == (
        f"scopetool: serving {len(registry)} tools as MCP server 'fixture-tools' over stdio; "
        "waiting for a client on standard input (Ctrl-C stops)\n"
    )
    assert (code, rest) == (130, "scopetool: interrupted\n")


def test_the_stdin_reader_leaves_nothing_unawaited_when_its_loop_has_closed() -> None:
    """A line that arrives after the server's loop closed is dropped; no coroutine is left never awaited."""
    read_end, write_end = os.pipe()

    async def first_line() -> bytes:
        with open(read_end, "rb", buffering=0, closefd=False) as stream:
            async for line in _lines(stream):
                return line
        raise AssertionError("no line")

    earlier = set(threading.enumerate())  # readers of earlier tests' streams may still be blocked
    os.write(write_end, b"one\n")
    assert asyncio.run(first_line()) == b"one\n"
    (reader,) = (
        thread for thread in threading.enumerate() if thread.name == "scopetool-stdin" and thread not in earlier
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        os.write(write_end, b"two\n")  # the reader hands this line to a loop that is gone
        os.close(write_end)
        reader.join(10)
        gc.collect()
    os.close(read_end)
    assert not reader.is_alive()
    assert [str(warning.message) for warning in caught] == []


async def test_the_stdin_reader_gives_every_line_of_any_stream(tmp_path: Path) -> None:
    """Lines of an in-memory stream and of a file (across reads, the last without a newline) arrive whole."""
    assert [line async for line in _lines(io.BytesIO(b"one\ntwo"))] == [b"one\n", b"two"]
    (tmp_path / "input").write_bytes(b"a\nbb\n" + b"c" * 70_000)
    with (tmp_path / "input").open("rb") as file:
        assert [line async for line in _lines(file)] == [b"a\n", b"bb\n", b"c" * 70_000]

    class Broken(io.BytesIO):
        def fileno(self) -> int:
            return 987_654  # no such descriptor: the read fails, and the input has ended

    assert [line async for line in _lines(Broken())] == []
