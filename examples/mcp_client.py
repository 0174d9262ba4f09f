"""Use another MCP server's tools through scopetool: admitted by their own schema, pinned in a lock file.

Run it with ``python examples/mcp_client.py`` (it needs ``pip install 'scopetool[mcp]'``). It starts
``notes_server.py`` (the MCP SDK's own `MCPServer`, standing in for any server you use) as a child
process, connects to it over stdio, and then:

1. lists the server's tools, pinning their definitions in ``mcp.lock.json`` on first contact;
2. calls one, and shows a call whose arguments break the server's schema refused before it is sent;
3. exports the remote tools to a provider (Anthropic's tool list here), like any scopetool tool;
4. connects again with one pin changed, as if the server had changed under it: the tool is refused
   until the change is accepted (``scopetool pins accept mcp.lock.json notes add_note``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from scopetool import InvalidInvocationError, Registry, Request, classify_input_rejection
from scopetool.mcp.client import StdioServer, connect
from scopetool.mcp.pins import PinFile, fingerprint
from scopetool.providers import anthropic

SERVER = StdioServer(command=sys.executable, args=(str(Path(__file__).with_name("notes_server.py")),))
"""The stand-in third-party server (`notes_server.py`), started as a child process."""


async def main(folder: Path) -> None:
    """Connect twice to the server below and print what happens."""
    lock = folder / "mcp.lock.json"
    async with connect(SERVER, name="notes", pins=PinFile(lock)) as client:
        print("tools:", [tool.definition().name for tool in client.tools])
        registry = Registry(*client.tools)
        add_note = registry.resolve("add_note")
        assert add_note is not None
        invocation = add_note.contract.prepare(Request("add_note", '{"text": "buy milk", "priority": 2}'))
        print("call:", (await add_note.call(invocation)).output.text())
        try:
            add_note.contract.prepare(Request("add_note", '{"text": "buy milk", "priority": "high"}'))
        except InvalidInvocationError as error:
            rejection = classify_input_rejection(error)
            print("refused before sending:", rejection.message.splitlines()[-1] if rejection else error)
        print("anthropic sees:", [tool["name"] for tool in anthropic.export_tools(registry).tools])
    pinned = json.loads(lock.read_text())["servers"]["notes"]["tools"]
    print("pinned:", sorted(pinned))

    # Make the pin say the tool used to be described otherwise: to the client, the server changed.
    definition = pinned["add_note"]["definition"]
    definition["description"] = "Add a note (as it was described when it was pinned)"
    pinned["add_note"] = {"definition": definition, "sha256": fingerprint(definition)}
    document = json.loads(lock.read_text())
    document["servers"]["notes"]["tools"] = pinned
    lock.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    async with connect(SERVER, name="notes", pins=PinFile(lock)) as client:
        print("tools:", [tool.definition().name for tool in client.tools])
        print("refused:", client.refused["add_note"].split(";")[0])


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(main(Path(scratch)))
