"""An MCP server (the SDK's low-level one, over stdio) with a large catalog: ``catalog_server.py COUNT [PAGE]``.

It lists COUNT tools, PAGE to a page (default: all on one), each a real server's tool as that server
listed it (``tests/data/real_tool_schemas/servers.json``, taken in turn) under a numbered name, and
answers a call of any of them with its name.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

REAL = Path(__file__).resolve().parents[1] / "data" / "real_tool_schemas" / "servers.json"


def catalog(count: int) -> list[types.Tool]:
    """COUNT real-sized tools: the real servers' tools in turn, each renamed ``NAME_INDEX``."""
    real = [tool for server in json.loads(REAL.read_text())["servers"] for tool in server["tools"]]
    return [
        types.Tool.model_validate({**real[index % len(real)], "name": f"{real[index % len(real)]['name']}_{index}"})
        for index in range(count)
    ]


def main() -> None:
    """Serve the catalog on standard input and output until it ends."""
    count = int(sys.argv[1])
    page = int(sys.argv[2]) if len(sys.argv) > 2 else count
    tools = catalog(count)

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < count else None)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    async def serve() -> None:
        server: Server[Any] = Server("catalog", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
