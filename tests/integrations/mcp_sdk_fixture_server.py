"""An MCPServer app with its own tools and the hostile-case scopetool tools, served over stdio (run as a script)."""

from __future__ import annotations

from integration_tools import RAN, registry
from mcp.server.mcpserver import MCPServer

from scopetool.integrations.mcp_sdk import add_tools

server = MCPServer("fixture-app")


@server.tool()
def native_add(a: int, b: int) -> int:
    """The app's own tool: the SDK validates its arguments (laxly)."""
    RAN.append(f"native_add {a} {b}")
    return a + b


@server.tool()
def native_leaky(account: str) -> str:
    """The app's own tool, failing with a secret in its error."""
    from integration_tools import SECRET

    raise ValueError(f"cannot connect with password {SECRET}")


@server.tool()
def ran() -> list[str]:
    """What has run in this server so far (for the tests)."""
    return list(RAN)


add_tools(server, registry())

if __name__ == "__main__":
    server.run()
