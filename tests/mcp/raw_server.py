"""A stdio MCP server written by hand, answering what no SDK server would send: ``python raw_server.py``.

It speaks just enough JSON-RPC for a client to initialize (protocol 2025-11-25) and list one tool,
``hologram``, whose result holds a content block of a type MCP does not have.
"""

from __future__ import annotations

import json
import sys

TOOL = {"name": "hologram", "inputSchema": {"type": "object", "properties": {}}}


def answer(message: dict[str, object]) -> dict[str, object] | None:
    """The response to one request (None for a notification)."""
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None
    if method == "initialize":
        result: object = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        result = {"content": [{"type": "hologram", "data": "?"}]}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def main() -> None:
    """Answer each line of standard input."""
    for line in sys.stdin:
        response = answer(json.loads(line))
        if response is not None:
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
