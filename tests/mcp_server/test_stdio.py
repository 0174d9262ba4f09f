"""The MCP server as a subprocess, driven over stdio by the real SDK client: what a desktop client sees.

Most tests start it as ``python -m scopetool serve mcp_fixture_tools.py:registry`` (`SERVER`); the
raw-wire test runs the fixture as a script (`SCRIPT`), which calls `run_stdio` itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client, ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.session import ClientRequestContext
from mcp_fixture_tools import SECRET

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
        unknown = await client.call_tool("drop_tables", {})
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
    assert (unknown.is_error, text(unknown)) == (True, 'error: tool "drop_tables" is not available')
    for result in (rejected, failed, crashed, unknown):
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


def test_arguments_that_are_not_json_get_an_error_result_on_the_wire() -> None:
    """A NaN in raw JSON-RPC arguments (the SDK's parser accepts it) is answered with an error result."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]  # fmt: skip
    wire = "".join(json.dumps(line) + "\n" for line in lines)
    wire += '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": NaN}}}\n'
    with subprocess.Popen(
        [SCRIPT.command, *SCRIPT.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        watchdog = threading.Timer(60, server.kill)  # a hung server fails the test instead of hanging it
        watchdog.start()
        server.stdin.write(wire)
        server.stdin.flush()
        answers: dict[int, Any] = {}
        while 2 not in answers and (line := server.stdout.readline()):
            message = json.loads(line)
            answers[message["id"]] = message
        server.stdin.close()  # end of input: the server exits
        watchdog.cancel()
    assert answers[1]["result"]["serverInfo"]["name"] == "fixture-tools"
    assert answers[2]["result"]["isError"] is True
    assert answers[2]["result"]["content"] == [
        {"type": "text", "text": 'error: the arguments for tool "add" are not JSON'}
    ]
