"""scopetool tools added to an ``MCPServer`` app, driven over stdio by the official MCP client (and in process)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from integration_tools import SECRET, add, registry
from mcp import Client, ClientSession, StdioServerParameters, stdio_client, types
from mcp.client.session import ClientRequestContext
from mcp.server.mcpserver import MCPServer

from scopetool import Registry
from scopetool.integrations.mcp_sdk import NO_INPUT, NOT_JSON, ScopetoolMCPTool, add_tools, mcp_tools

HERE = Path(__file__).resolve().parent
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent.parent), str(HERE)])}
SERVER = StdioServerParameters(command=sys.executable, args=[str(HERE / "mcp_sdk_fixture_server.py")], env=ENV)
"""The fixture app (its own tools, and the hostile-case scopetool tools) as a subprocess."""


def text(result: types.CallToolResult) -> str:
    """The result's one text block."""
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def _ran(client: Client | ClientSession) -> list[str]:
    """What has run in the server so far (its own ``ran`` tool)."""
    result = await client.call_tool("ran", {})
    assert result.structured_content is not None
    found: list[str] = result.structured_content["result"]
    return found


class Person:
    """Answers elicitations in order, and remembers the prompts."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.prompts.append(params.message)
        return self.answers.pop(0)


PROBLEM = "invalid arguments for tool 'add' (1 problem):"
APPROVE = types.ElicitResult(action="accept", content={"answer": True})


async def test_a_2026_client_sees_every_hostile_call_answered_and_nothing_runs_that_should_not() -> None:
    """Over stdio, with the SDK's default Client (2026-07-28): the app's tools and scopetool's side by side."""
    person = Person(APPROVE)
    async with _client(person) as client:
        assert client.protocol_version == "2026-07-28"
        listed = {t.name: t for t in (await client.list_tools()).tools}
        answers = {
            "valid": await client.call_tool("add", {"a": 2, "b": 3}),
            "unknown": await client.call_tool("add", {"a": 2, "b": 3, "c": 4}),
            "coerced": await client.call_tool("add", {"a": "5", "b": 3}),
            "secret": await client.call_tool("leaky", {"account": "ada"}),
            "failure": await client.call_tool("rate", {"base": "EUR", "quote": "JPY"}),
            "guard": await client.call_tool("transfer", {"cents": 100}),
            "input": await client.call_tool("refund", {"order": "SO-1"}),
            "native": await client.call_tool("native_add", {"a": "5", "b": 3, "c": 4}),
        }
        echoed = await client.call_tool("native_add", {"a": "card 4111-1111", "b": 3})
        ran = await _ran(client)
    assert sorted(listed) == ["add", "leaky", "native_add", "native_leaky", "ran", "rate", "refund", "transfer"]
    assert listed["add"].input_schema["additionalProperties"] is False  # the contract's schema, not the SDK's
    assert listed["rate"].output_schema is not None and listed["add"].annotations is None
    assert {key: (r.is_error, text(r)) for key, r in answers.items()} == {
        "valid": (False, "5"),
        "unknown": (True, f"{PROBLEM}\n- $.c: unknown field; expected one of 'a', 'b'"),
        "coerced": (True, f"{PROBLEM}\n- $.a: Input should be a valid integer (got a string)"),
        "secret": (True, 'error: tool "leaky" failed'),
        "failure": (True, "no rate for EUR/JPY"),
        "guard": (True, 'error: tool "transfer" is not authorized'),
        "input": (False, "refunded SO-1"),
        "native": (False, "8"),  # the app's own tool: "5" coerced, "c" dropped
    }  # fmt: skip
    assert person.prompts == ["Refund SO-1?"]
    assert ran == [
        "add 2 3",
        "leaky ada",
        "rate EUR/JPY",
        "refund SO-1 asked",
        "refund SO-1 approved",
        "native_add 5 3",
    ]
    assert all(SECRET not in text(r) for r in answers.values())
    assert echoed.is_error and "card 4111-1111" in text(echoed)  # the SDK's own validation error quotes the value


@asynccontextmanager
async def _client(person: Person) -> AsyncGenerator[Client]:
    """The SDK's default Client on the fixture server."""
    async with Client(SERVER, elicitation_callback=person) as client:
        yield client


@asynccontextmanager
async def _session(person: Person) -> AsyncGenerator[ClientSession]:
    """A 2025-11-25 ClientSession (the initialize handshake) on the fixture server."""
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(SERVER, errlog=quiet) as (read, write),
            ClientSession(read, write, elicitation_callback=person) as client,
        ):
            await client.initialize()
            yield client


async def test_a_2025_client_is_asked_for_input_within_the_call() -> None:
    """On a 2025 connection the input request is an elicitation/create; a decline runs nothing."""
    person = Person(APPROVE, types.ElicitResult(action="decline"))
    async with _session(person) as client:
        approved = await client.call_tool("refund", {"order": "SO-2"})
        declined = await client.call_tool("refund", {"order": "SO-3"})
        leaked = await client.call_tool("native_leaky", {"account": "x"})
        ran = await _ran(client)
    assert (approved.is_error, text(approved)) == (False, "refunded SO-2")
    assert declined.is_error and "declined" in text(declined)
    assert ran == ["refund SO-2 asked", "refund SO-2 approved", "refund SO-3 asked"]
    assert SECRET not in text(leaked)


def test_a_repeated_member_name_on_the_wire_is_collapsed_by_the_sdk_before_the_tool() -> None:
    """Raw JSON-RPC with ``"a"`` twice: the SDK's parser keeps the last, so the call is admitted with it."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]  # fmt: skip
    wire = "".join(json.dumps(line) + "\n" for line in lines)
    params = '{"name": "add", "arguments": {"a": 1, "b": 3, "a": 40}}'
    wire += f'{{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {params}}}\n'
    with subprocess.Popen(
        [SERVER.command, *SERVER.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=ENV,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        watchdog = threading.Timer(60, server.kill)  # a hung server fails the test instead of hanging it
        watchdog.start()
        server.stdin.write(wire)
        server.stdin.flush()
        answers: dict[int, Any] = {}
        while 2 not in answers and (line := server.stdout.readline()):  # stdin stays open until answered
            message = json.loads(line)
            answers[message["id"]] = message
        server.stdin.close()
        watchdog.cancel()
    assert answers[2]["result"]["content"] == [{"type": "text", "text": "43"}]


async def test_in_process_calls_are_admitted_and_cannot_ask_for_input() -> None:
    """``MCPServer.call_tool`` with no request: admitted, answered; an input request or a NaN gets a fixed text."""
    server = MCPServer("app")
    add_tools(server, registry())
    valid = await server.call_tool("add", {"a": 2, "b": 3})
    asked = await server.call_tool("refund", {"order": "SO-4"})
    nan = await server.call_tool("add", {"a": float("nan"), "b": 1})
    assert isinstance(valid, types.CallToolResult) and valid.structured_content == {"result": 5}
    assert isinstance(asked, types.CallToolResult) and text(asked) == NO_INPUT.format(name="refund") and asked.is_error
    assert isinstance(nan, types.CallToolResult) and text(nan) == NOT_JSON.format(name="add") and nan.is_error


def test_adding_tools_checks_the_server_the_registry_and_the_names() -> None:
    """A name the app already uses is refused, naming it; the app's tools stay; mcp_tools for MCPServer(tools=...)."""
    server = MCPServer("app")

    @server.tool()
    def add(text: str) -> str:
        """The app's own tool of that name."""
        return text

    with pytest.raises(ValueError, match="already has tools named 'add'"):
        add_tools(server, registry())
    assert [t.name for t in asyncio.run(server.list_tools())] == ["add"]
    with pytest.raises(TypeError, match="needs an MCPServer"):
        add_tools(object(), registry())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs a Registry"):
        mcp_tools([])  # type: ignore[arg-type]
    built = MCPServer("built", tools=mcp_tools(Registry(_add())))
    (only,) = asyncio.run(built.list_tools())
    assert only.name == "add" and isinstance(mcp_tools(Registry(_add()))[0], ScopetoolMCPTool)


def _add() -> Any:
    return add


def test_the_integration_imports_nothing_into_scopetool() -> None:
    """``import scopetool`` does not import the MCP SDK (checked in a fresh interpreter)."""
    code = (
        "import sys, scopetool, scopetool.integrations; "
        "print([m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


async def test_in_memory_the_official_client_reaches_the_same_admission() -> None:
    """The SDK's Client on the server object (no subprocess): the input request is asked and answered by retry."""
    server = MCPServer("app")
    add_tools(server, registry())
    person = Person(APPROVE)
    async with Client(server, elicitation_callback=person) as client:
        refunded = await client.call_tool("refund", {"order": "SO-5"})
        coerced = await client.call_tool("add", {"a": "5", "b": 3})
    assert (refunded.is_error, text(refunded)) == (False, "refunded SO-5")
    assert coerced.is_error and "$.a: Input should be a valid integer" in text(coerced)
    assert person.prompts == ["Refund SO-5?"]


def test_import_without_the_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the integration without the mcp package says how to install it."""
    import importlib

    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.delitem(sys.modules, "scopetool.integrations.mcp_sdk")
    with pytest.raises(ImportError, match=r"pip install 'scopetool\[mcp\]'"):
        importlib.import_module("scopetool.integrations.mcp_sdk")


async def test_the_mcp_sdk_example_serves_both_kinds_of_tools_over_stdio() -> None:
    """``python examples/mcp_sdk_server.py`` as an MCP client starts it: the app's tool and the admitted ones."""
    example = HERE.parent.parent / "examples" / "mcp_sdk_server.py"
    person = Person(APPROVE)
    async with Client(
        StdioServerParameters(command=sys.executable, args=[str(example)], env=ENV), elicitation_callback=person
    ) as client:
        names = sorted(t.name for t in (await client.list_tools()).tools)
        coerced = await client.call_tool("order_status", {"order": "SO-1", "lines": "2"})
        refunded = await client.call_tool("refund", {"order": "SO-1"})
    assert names == ["order_status", "refund", "stock"]
    assert coerced.is_error and "$.lines: Input should be a valid integer" in text(coerced)
    assert text(refunded) == "refunded SO-1" and person.prompts == ["Refund SO-1?"]
