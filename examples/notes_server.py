"""A stand-in third-party MCP server, on the MCP SDK's own `MCPServer` (no scopetool): ``python notes_server.py``.

`examples/mcp_client.py` and ``docs/mcp-client.md`` start it as a child process and use its tools over
stdio, as they would any server's.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")
notes: list[str] = []


@server.tool()
def add_note(text: str, priority: int = 1) -> str:
    """Add a note."""
    notes.append(text)
    return f"noted {text!r} (priority {priority}); {len(notes)} note(s)"


@server.tool()
def count_notes() -> int:
    """How many notes there are."""
    return len(notes)


if __name__ == "__main__":
    server.run("stdio")
