"""An MCP server built with the MCP SDK's MCPServer, with scopetool tools added beside the app's own.

The app keeps its ``@server.tool()`` functions; `add_tools` adds a registry's tools, whose calls are
admitted by Contract.prepare (the SDK's own tools coerce ``"5"`` to 5 and drop unknown fields). An MCP
client starts it as ``python examples/mcp_sdk_server.py`` (stdio). ``python examples/mcp_sdk_server.py
--demo`` instead drives it in process with the official MCP client and prints what the client sees.
It needs ``pip install 'scopetool[mcp]'``.
"""

from __future__ import annotations

import asyncio
import json
import sys

from mcp import Client, types
from mcp.client.session import ClientRequestContext
from mcp.server.mcpserver import MCPServer

from scopetool import Definition, Effect, InputRequest, Invocation, Output, Registry, Result, tool
from scopetool.integrations.mcp_sdk import add_tools

server = MCPServer("shop", instructions="Look orders up with order_status; refunds need approval.")
STOCK = {"lamp": 3}
REFUNDS: list[str] = []


@server.tool()
def stock(item: str) -> int:
    """How many of an item are in stock (the app's own tool, validated by the SDK)."""
    return STOCK.get(item, 0)


@tool(effect=Effect.SAFE)
def order_status(order: str, lines: int = 10) -> str:
    """Where an order is.

    Args:
        order: The order id.
        lines: How many history lines to include.
    """
    return f"{order}: shipped (showing {lines} lines)"


class Refund:
    """Refunds an order once the person at the client approves (an MCP elicitation)."""

    def definition(self) -> Definition:
        return Definition(
            name="refund",
            description="Refund an order, once a person approves it.",
            input_schema={
                "type": "object",
                "properties": {"order": {"type": "string"}},
                "required": ["order"],
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        order = json.loads(invocation.arguments)["order"]
        if invocation.continuation is None:
            return Result(input_request=InputRequest(prompt=f"Refund {order}?", response_schema={"type": "boolean"}))
        if invocation.continuation.response is not True:
            return Result(output=Output.from_text("the refund was not approved"))
        REFUNDS.append(order)
        return Result(output=Output.from_text(f"refunded {order}"))


add_tools(server, Registry(order_status, Refund()))


async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    """The person at the client: shown the prompt, approves."""
    print(f"asked: {params.message}")
    return types.ElicitResult(action="accept", content={"answer": True})


async def demo() -> None:
    """What an MCP client sees, calling each tool (in process, with the official client)."""
    async with Client(server, elicitation_callback=approve) as client:
        print("tools:", ", ".join(sorted(t.name for t in (await client.list_tools()).tools)))
        for name, arguments in (
            ("stock", {"item": "lamp", "colour": "red"}),
            ("order_status", {"order": "SO-7", "lines": 2}),
            ("order_status", {"order": "SO-7", "lines": "2"}),
            ("order_status", {"order": "SO-7", "colour": "red"}),
            ("refund", {"order": "SO-7"}),
        ):
            result = await client.call_tool(name, arguments)
            text = " ".join(b.text for b in result.content if isinstance(b, types.TextContent))
            print(f"{name} {arguments}: {'error: ' if result.is_error else ''}{text}")


if __name__ == "__main__":
    if "--demo" in sys.argv:
        asyncio.run(demo())
    else:
        server.run()
