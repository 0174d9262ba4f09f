"""examples/mcp_server.py runs as an MCP server: the real SDK client starts it over stdio and uses its tools."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client, types

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_server.py"


async def test_the_notebook_example_serves_its_tools_over_stdio() -> None:
    """The example lists its tools, saves notes and a contact, finds them with progress, and rejects a bad call."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    env = {"PYTHONPATH": os.pathsep.join(sys.path)}  # this checkout's scopetool, whatever is installed
    server = StdioServerParameters(command=sys.executable, args=[str(EXAMPLE)], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
        init = await client.initialize()
        listed = {t.name: t for t in (await client.list_tools()).tools}
        await client.call_tool("save_note", {"title": "groceries", "text": "Eggs and flour"})
        saved = await client.call_tool("save_note", {"title": "recipe", "text": "Pancakes: eggs, flour, milk"})
        found = await client.call_tool("find_notes", {"words": ["EGGS", "milk"]}, progress_callback=on_progress)
        bad = await client.call_tool("find_notes", {"words": "eggs"})
        contact = await client.call_tool("save_contact", {"contact": {"name": "Ada", "tags": ["maths"]}})
        first = await client.call_tool("list_notes", {"limit": 1})
        every = await client.call_tool("list_notes", {"limit": None})
    assert sorted(listed) == ["find_notes", "list_notes", "save_contact", "save_note"]
    assert (contact.is_error, first.structured_content) == (False, {"result": ["Ada"]})
    assert every.structured_content == {"result": ["Ada", "groceries", "recipe"]}
    assert (init.server_info.name, init.instructions) == (
        "notebook",
        "Save notes with save_note and contacts with save_contact; find them with find_notes or list_notes.",
    )
    assert listed["find_notes"].annotations is not None and listed["find_notes"].annotations.read_only_hint is True
    assert listed["save_note"].annotations is not None and listed["save_note"].annotations.idempotent_hint is True
    assert isinstance(saved.content[0], types.TextContent)
    assert saved.content[0].text == "saved 'recipe' (2 notes in the notebook)"
    assert (found.is_error, found.structured_content) == (False, {"result": ["recipe"]})
    assert seen == [(1.0, 2.0, "searched 'groceries'"), (2.0, 2.0, "searched 'recipe'")]
    assert bad.is_error is True
    assert (
        isinstance(bad.content[0], types.TextContent)
        and "$.words: Input should be a valid array" in bad.content[0].text
    )
