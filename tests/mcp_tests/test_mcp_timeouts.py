"""Timed-out calls through the MCP server, seen by the official SDK client in process and over stdio."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client, types
from mcp_slow_tools import GATE, registry

from scopetool import overrunning_calls
from scopetool.mcp.server import create_server

SHOWN = {
    "slow_read": 'error: tool "slow_read" timed out',
    "slow_write": 'error: tool "slow_write" timed out; its outcome is unknown',
    "slow_sync_read": 'error: tool "slow_sync_read" timed out',
    "slow_sync_write": 'error: tool "slow_sync_write" timed out; its outcome is unknown',
}
ARGUMENTS = {"slow_read": {"sku": "L-1"}, "slow_write": {"cents": 5}, "slow_sync_read": {"sku": "L-1"}}
ARGUMENTS["slow_sync_write"] = {"cents": 5}


@pytest.fixture(autouse=True)
def _release() -> Iterator[None]:
    GATE.clear()
    yield
    GATE.set()
    for _ in range(2000):
        if not overrunning_calls():
            break
        time.sleep(0.005)


def text(result: types.CallToolResult) -> str:
    """The result's one text block."""
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_timed_out_calls_are_error_results_with_a_fixed_text(mode: str) -> None:
    """Each timed-out call is an isError result showing its effect's fixed text; the server serves on."""
    server = create_server(registry, name="slow-tools")
    async with Client(server, mode=mode, raise_exceptions=True) as client:
        results = {name: await client.call_tool(name, arguments) for name, arguments in ARGUMENTS.items()}
        added = await client.call_tool("add", {"a": 2, "b": 3})
    for name, result in results.items():
        assert (result.is_error, text(result)) == (True, SHOWN[name])
        assert result.structured_content is None
        assert "0.05" not in result.model_dump_json()
    assert (added.is_error, text(added)) == (False, "5")


async def test_a_served_process_answers_timed_out_calls_and_serves_on() -> None:
    """Over stdio (``scopetool serve``), a sync tool left running past its timeout does not stop the server."""
    fixture = Path(__file__).with_name("mcp_slow_tools.py")
    server = StdioServerParameters(command=sys.executable, args=["-m", "scopetool", "serve", f"{fixture}:registry"])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        unknown = await client.call_tool("slow_sync_write", {"cents": 5})
        safe = await client.call_tool("slow_sync_read", {"sku": "L-1"})
        added = await client.call_tool("add", {"a": 2, "b": 3})
    assert (unknown.is_error, text(unknown)) == (True, SHOWN["slow_sync_write"])
    assert (safe.is_error, text(safe)) == (True, SHOWN["slow_sync_read"])
    assert (added.is_error, text(added)) == (False, "5")
