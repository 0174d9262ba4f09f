"""MCP SDK ``MCPServer``: its native tools and the same tools added with `add_tools`, on the hostile cases.

Each case is one ``tools/call`` from the official MCP client (``mcp.Client``, the SDK's in-memory
transport, on a 2025-11-25 connection, where the SDK's own ``ctx.elicit`` can ask the client) to an
``MCPServer`` app; the cell shows the result's text, what the
client hands its model. The SDK parses the JSON-RPC message before any tool sees it, so the case's
arguments are sent as the dict its parser makes of them (for the duplicate key, the last member: the
tests check this on the wire, over stdio). An input request is answered by the client's elicitation
callback (an approval). The overhead cases time one ``MCPServer.call_tool`` in process on each server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client, types
from mcp.client.session import ClientRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from scopetool import Effect, Registry
from scopetool import tool as scopetool_tool
from scopetool.integrations.mcp_sdk import add_tools

from ._cases import CASES, CONNECT_ERROR, REFUND_FAILURE, TRANSFER_PROMPT, Case, outcome, ran, registry

FRAMEWORK = "MCP SDK MCPServer"


class Approval(BaseModel):
    """The native form: one boolean, named as scopetool wraps a boolean response schema."""

    answer: bool


def native_server() -> MCPServer:
    """The same tools, written as MCPServer tools."""
    server = MCPServer("native")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran("add", a=a, b=b)
        return a + b

    @server.tool()
    def connect() -> str:
        """Open a connection to the database."""
        ran("connect")
        raise RuntimeError(CONNECT_ERROR)

    @server.tool()
    def refund(order: str) -> str:
        """Refund an order."""
        ran("refund", order=order)
        raise ToolError(REFUND_FAILURE)

    @server.tool()
    def delete_account(user: str) -> str:
        """Delete a user's account."""
        ran("delete_account", user=user)
        return f"deleted {user}"

    @server.tool()
    async def transfer(to: str, cents: int, ctx: Context) -> str:
        """Move money to an account, after a person approves it."""
        answer = await ctx.elicit(TRANSFER_PROMPT, Approval)
        if answer.action != "accept" or not answer.data.answer:
            return "the transfer was declined"
        ran("transfer", to=to, cents=cents)
        return f"sent {cents} cents to {to}"

    return server


def scopetool_server() -> MCPServer:
    """An MCPServer app with the scopetool tools added."""
    server = MCPServer("scopetool")
    add_tools(server, registry())
    return server


async def _approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"answer": True})


def _text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def run_case(case: Case, *, through_scopetool: bool) -> str:
    """One ``tools/call`` of the case from the official client; its table cell."""
    server = scopetool_server() if through_scopetool else native_server()
    arguments: dict[str, Any] = json.loads(case.arguments)  # what the SDK's JSON-RPC parser makes of them
    try:
        async with Client(server, elicitation_callback=_approve, mode="legacy") as client:
            result = await client.call_tool(case.tool, arguments)
    except Exception as error:
        return outcome(None, error)
    return outcome(_text(result))


async def hostile_rows_async() -> list[tuple[str, str, str]]:
    """Every case, native then through scopetool."""
    return [
        (case.name, await run_case(case, through_scopetool=False), await run_case(case, through_scopetool=True))
        for case in CASES
    ]


def hostile_rows() -> list[tuple[str, str, str]]:
    """(case, what the native tool did and the client saw, the same through scopetool)."""
    return asyncio.run(hostile_rows_async())


async def _quiet_add(a: int, b: int) -> int:
    """Add two integers (async on both sides: the turn, not a worker thread's hand-off, is timed)."""
    return a + b


def overhead_cases() -> list[tuple[str, Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]]:
    """(label, one native call, the same call through scopetool): ``MCPServer.call_tool`` in process."""
    native = MCPServer("native")
    native.add_tool(_quiet_add, name="add")
    through = MCPServer("scopetool")
    add_tools(through, Registry(scopetool_tool(name="add", effect=Effect.SAFE)(_quiet_add)))
    arguments = {"a": 2, "b": 3}

    async def native_turn() -> object:
        return await native.call_tool("add", arguments)

    async def scopetool_turn() -> object:
        return await through.call_tool("add", arguments)

    return [("add(2, 3): one valid call, MCPServer.call_tool", native_turn, scopetool_turn)]
