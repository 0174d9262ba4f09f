"""An MCP server (the SDK's low-level one, over stdio) whose tool list grows: ``grow`` adds a tool and says so.

On a 2026-07-28 connection the change is an event on the ``subscriptions/listen`` stream.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged

BUS = InMemorySubscriptionBus()
NAMES = ["grow"]


def _tool(name: str) -> types.Tool:
    return types.Tool(name=name, description=f"The {name} tool.", input_schema={"type": "object", "properties": {}})


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[_tool(name) for name in NAMES])


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "grow":
        NAMES.append(f"extra_{len(NAMES)}")
        await BUS.publish(ToolsListChanged())
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name} done")])


async def main() -> None:
    server: Server[Any] = Server(
        "grower", on_list_tools=list_tools, on_call_tool=call_tool, on_subscriptions_listen=ListenHandler(BUS)
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
