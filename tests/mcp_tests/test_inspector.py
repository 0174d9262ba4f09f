"""The official MCP Inspector's CLI (npm) calls every tool of examples/mcp_server.py over HTTP, lists them over stdio.

Its ``--tool-arg k=v`` strings become numbers, booleans or JSON only where the property has a
top-level ``type``: the optional ``limit`` (``int | None``) and the model parameter ``contact`` are
the calls that need the schema shaping of `scopetool.providers.mcp`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from third_party import inspector_cli

pytestmark = pytest.mark.needs("mcp")  # runs the MCP SDK in a subprocess

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mcp_server.py"
TOOLS = ("find_notes", "list_notes", "save_contact", "save_note")
"""Every tool the example serves (the test checks the list is exactly this)."""


async def inspect(*target_and_arguments: str) -> dict[str, Any]:
    """Run the Inspector CLI once (JSON output); its result, or its error envelope."""
    process = await asyncio.create_subprocess_exec(
        *inspector_cli(),
        *target_and_arguments,
        "--format",
        "json",
        "-q",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    found: dict[str, Any] = json.loads(out or err)
    return found


def stdio() -> list[str]:
    """The example as a stdio target (the Inspector passes no PYTHONPATH of its own: given with -e)."""
    return ["-e", f"PYTHONPATH={os.pathsep.join(sys.path)}", sys.executable, str(EXAMPLE)]


def call(tool: str, *arguments: str) -> list[str]:
    """The Inspector arguments of one tools/call."""
    return ["--method", "tools/call", "--tool-name", tool, *(["--tool-arg", *arguments] if arguments else [])]


def text(found: dict[str, Any]) -> str:
    """The one text block of a tools/call result."""
    result = found["result"]
    assert result["isError"] is False, found
    [block] = result["content"]
    return str(block["text"])


@pytest.fixture
async def http_url() -> AsyncGenerator[str]:
    """The example started as ``python examples/mcp_server.py --http 0``: the URL it prints."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), "--http", "0", stdout=subprocess.PIPE, env=env
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        yield line.decode().strip()
    finally:
        process.terminate()
        await process.wait()


async def test_the_inspector_lists_and_calls_the_shaped_tools_over_stdio() -> None:
    """Each call starts the example afresh; the optional and the model argument are converted by their schema."""
    listed, titles, contact = await asyncio.gather(
        inspect(*stdio(), "--method", "tools/list"),
        inspect(*stdio(), *call("list_notes", "limit=2")),
        inspect(*stdio(), *call("save_contact", 'contact={"name": "Ada", "tags": ["maths"]}', "starred=true")),
    )
    assert tuple(tool["name"] for tool in listed["result"]["tools"]) == TOOLS
    assert titles["result"]["structuredContent"] == {"result": []}
    assert text(contact) == "saved contact 'Ada' (starred)"


async def test_the_inspector_calls_every_example_tool_over_http(http_url: str) -> None:
    """One server, one notebook: the calls see each other's notes; the 2026-07-28 era works as well."""
    saved = await inspect(http_url, *call("save_note", "title=groceries", "text=Eggs and flour"))
    contact = await inspect(http_url, *call("save_contact", 'contact={"name": "Ada", "email": "ada@example.org"}'))
    found, first, modern = await asyncio.gather(
        inspect(http_url, *call("find_notes", 'words=["EGGS"]')),
        inspect(http_url, *call("list_notes", "limit=1")),
        inspect(http_url, "--protocol-era", "modern", *call("list_notes")),
    )
    assert text(saved) == "saved 'groceries' (1 notes in the notebook)"
    assert text(contact) == "saved contact 'Ada'"
    assert found["result"]["structuredContent"] == {"result": ["groceries"]}
    assert first["result"]["structuredContent"] == {"result": ["Ada"]}
    assert modern["result"]["structuredContent"] == {"result": ["Ada", "groceries"]}


def test_the_docs_state_the_node_version_the_inspector_needs() -> None:
    """The Node.js version the docs give for the Inspector is the installed package's ``engines`` minimum."""
    package = Path(inspector_cli()[0]).parents[1] / "@modelcontextprotocol" / "inspector" / "package.json"
    needed = json.loads(package.read_text(encoding="utf-8"))["engines"]["node"]
    assert needed.startswith(">="), needed
    for page in ("mcp-http.md", "mcp-server.md"):
        assert f"Node.js {needed.removeprefix('>=')} or later" in (ROOT / "docs" / page).read_text(encoding="utf-8")
