"""An MCP server (the SDK's low-level one, over stdio) whose tools change when its control tools are called.

``add`` adds a tool (``{"name", "description"}``; it takes ``{"n": integer}`` and answers ``NAME got N``;
with ``n`` < 0 it takes ``-n`` tenths of a second), ``remove`` removes one, ``change`` gives one a new
description, ``flood`` says ``count`` times that the tools changed, ``fail`` makes every ``tools/list``
from then on an error (and says the tools changed); ``listings`` answers how many times ``tools/list``
was asked. Each change is said as the connection's revision says it: ``notifications/tools/list_changed``
on a 2025 session, an event on the ``subscriptions/listen`` stream on a 2026-07-28 one. With the argument
``legacy`` the server answers ``server/discover`` with "method not found", so that clients fall back to a
2025 session.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import ErrorData, JSONRPCError, JSONRPCRequest
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

BUS = InMemorySubscriptionBus()
NUMBER = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}
NAMED = {"type": "object", "properties": {"name": {"type": "string"}, "description": {"type": "string"}}}
COUNT = {"type": "object", "properties": {"count": {"type": "integer"}}}
NOTHING = {"type": "object"}
CONTROLS = {"add": NAMED, "remove": NAMED, "change": NAMED, "flood": COUNT, "fail": NOTHING, "listings": NOTHING}
TOOLS: dict[str, str] = {"first": "The first tool."}
LISTINGS = [0]
FAILING: list[bool] = []


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    LISTINGS[0] += 1
    if FAILING:
        raise MCPError(types.INTERNAL_ERROR, "the tools cannot be listed now")
    controls = [
        types.Tool(name=name, description=f"{name} tools", input_schema=schema) for name, schema in CONTROLS.items()
    ]
    own = [types.Tool(name=name, description=text, input_schema=NUMBER) for name, text in TOOLS.items()]
    return types.ListToolsResult(tools=controls + own)


async def say_changed(ctx: ServerRequestContext[Any, Any]) -> None:
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        await BUS.publish(ToolsListChanged())
    else:
        await ctx.session.send_tool_list_changed()


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    name = str(arguments.get("name", ""))
    answer = "done"
    if params.name == "add":
        TOOLS[name] = str(arguments.get("description", f"The {name} tool."))
    elif params.name == "remove":
        TOOLS.pop(name, None)
    elif params.name == "change":
        TOOLS[name] = str(arguments.get("description", ""))
    elif params.name == "flood":
        for _ in range(int(arguments.get("count", 1))):
            await say_changed(ctx)
        answer = "flooded"
    elif params.name == "listings":
        answer = str(LISTINGS[0])
    elif params.name == "fail":
        FAILING.append(True)
    elif params.name in TOOLS:
        number = int(arguments.get("n", 0))
        await anyio.sleep(max(0, -number) / 10)
        answer = f"{params.name} got {number}"
    else:
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
    if params.name in ("add", "remove", "change", "fail"):
        await say_changed(ctx)
    return types.CallToolResult(content=[types.TextContent(type="text", text=answer)])


async def main() -> None:
    server: Server[Any] = Server(
        "changing", on_list_tools=list_tools, on_call_tool=call_tool, on_subscriptions_listen=ListenHandler(BUS)
    )
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        if "legacy" not in sys.argv[1:]:
            await server.run(read, write, options)
            return
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)

        async def without_discover() -> None:  # answered here, before the server sees it and picks 2026-07-28
            async with send:
                async for item in read:
                    message = item.message if isinstance(item, SessionMessage) else None
                    if isinstance(message, JSONRPCRequest) and message.method == "server/discover":
                        error = ErrorData(code=types.METHOD_NOT_FOUND, message="Method not found")
                        await write.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=message.id, error=error)))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(without_discover)
            await server.run(receive, write, options)
            group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
