"""An MCP gateway: two notes servers and a local tool served as one MCP server, guarded and audited.

An MCP client (Claude Desktop, an IDE, an agent) starts it as ``scopetool proxy
examples/mcp_gateway.json`` (add ``--http 127.0.0.1:8000`` for Streamable HTTP). The config
(`mcp_gateway.json`) runs `notes_server.py` twice, as "work" and "home": their tools collide, so each
is served with its server's prefix; "work" has a policy (`mcp_gateway_policy.py`), "home" a deny
list, and only `add` of `quickstart.py`'s local tools is allowed.

Run as a script, it starts the same gateway in process, with this Python for the servers and the
pins and audit log in a temporary folder, drives it with the official MCP client and prints what
happened. It needs the MCP SDK: ``pip install 'scopetool[mcp]'``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client, MCPError

from scopetool.mcp.gateway import open_gateway, parse_config
from scopetool.mcp.server import create_server

HERE = Path(__file__).resolve().parent


async def main(folder: Path) -> None:
    """Start the gateway, make a few calls through it, and print the audit log."""
    data = json.loads((HERE / "mcp_gateway.json").read_text())
    for entry in data["mcpServers"].values():  # "python" on PATH may not be this one: use this one
        entry["command"] = sys.executable
    config = parse_config(data, base=HERE, source="mcp_gateway.json")
    config = dataclasses.replace(config, pins=folder / "mcp.lock.json", audit=folder / "audit.jsonl")
    async with open_gateway(config, errlog=sys.stdout) as gateway:
        server = create_server(gateway.registry, name=config.name, on_call=gateway.observe)
        async with Client(server) as client:
            print("tools:", ", ".join(tool.name for tool in (await client.list_tools()).tools))
            calls = [
                ("work__add_note", {"text": "Quarterly review on Friday", "priority": 2}),
                ("work__add_note", {"text": "The wifi password is hunter2"}),
                ("home__add_note", {"text": "Buy eggs", "priority": "high"}),
                ("home__count_notes", {}),
                ("count_notes", {}),
                ("add", {"a": 2, "b": 3}),
            ]
            for name, arguments in calls:
                try:
                    result = await client.call_tool(name, arguments)
                except MCPError as error:
                    print(f"{name}: refused ({error.error.message})")
                    continue
                first = result.content[0].text.splitlines()[0] if result.content else ""  # type: ignore[union-attr]
                print(f"{name}: {'error' if result.is_error else 'ok'}: {first}")
    print("audit:")
    for line in (folder / "audit.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if entry["event"] == "call":
            print(
                f"  {entry['name']}: admitted={entry['admitted']} reason={entry['reason']} outcome={entry['outcome']}"
            )


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as temporary:
        anyio.run(main, Path(temporary))
