"""The MCP client follows a server's tool list changes (2026-07-28's ``subscriptions/listen``), pins applied."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from scopetool import Registry, Request
from scopetool.mcp.client import MCPClient, StdioServer, connect
from scopetool.mcp.pins import PinFile

GROWING = Path(__file__).with_name("growing_server.py")


def growing() -> StdioServer:
    """The growing server over stdio (this worktree's scopetool on its path)."""
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
    return StdioServer(sys.executable, (str(GROWING),), env=env)


def names(client: MCPClient) -> list[str]:
    """The names of the client's tools, in the server's order."""
    return [str(tool.listed["name"]) for tool in client.tools]


async def grow(client: MCPClient) -> None:
    """Call the server's ``grow`` tool (it adds a tool)."""
    binding = Registry(*client.tools)["grow"]
    await binding.call(binding.contract.prepare(Request("grow", "{}")))


async def names_after_growing(client: MCPClient) -> list[str]:
    """Call ``grow``, then wait (at most 10 s) until the client's tools change; their names."""
    before = names(client)
    await grow(client)
    deadline = time.monotonic() + 10
    while names(client) == before and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    return names(client)


async def test_a_2026_connection_re_lists_on_the_listen_stream() -> None:
    """2026-07-28: a ``subscriptions/listen`` event says the tools changed; the client re-lists by itself."""
    async with connect(growing(), name="grower") as client:
        assert client.protocol_version == "2026-07-28"
        assert await names_after_growing(client) == ["grow", "extra_1"]
        assert await client.refresh() is False  # nothing changed since


async def test_a_new_tool_waits_for_its_pin(tmp_path: Path) -> None:
    """With pins, the tool that appeared is pending, not handed out, until it is accepted."""
    pins = PinFile(tmp_path / "mcp.lock")
    async with connect(growing(), name="grower", pins=pins) as client:
        await grow(client)
        with anyio.fail_after(10):
            while "extra_1" not in pins.pending("grower"):
                await anyio.sleep(0.05)
        assert names(client) == ["grow"]


async def test_a_closed_client_neither_listens_nor_re_lists(caplog: pytest.LogCaptureFixture) -> None:
    """No stream to open, no list to read: each is one log line (and one hook call), the tools stay, nothing raises."""
    told: list[str] = []

    async def hook(client: MCPClient, error: Exception | None) -> None:
        told.append(str(error))

    client = MCPClient(
        "gone", cast("Any", None), cast("Any", None), list_timeout=1.0, call_timeout=1.0, on_tools_changed=hook
    )
    with caplog.at_level(logging.INFO, logger="scopetool.mcp.client"):
        async with anyio.create_task_group() as group:
            await group.start(client._listen_for_tool_changes)  # pyright: ignore[reportPrivateUsage]
            group.start_soon(client._follow_tool_changes)  # pyright: ignore[reportPrivateUsage]
            client._tools_changed()  # pyright: ignore[reportPrivateUsage]
            with anyio.fail_after(5):
                while not told:
                    await anyio.sleep(0.01)
            group.cancel_scope.cancel()
    assert [record.getMessage() for record in caplog.records] == [
        "MCP server 'gone': not following tool list changes: the MCP client of server 'gone' is closed",
        "MCP server 'gone': the changed tool list could not be read: the MCP client of server 'gone' is closed",
    ]
    assert told == ["RuntimeError: the MCP client of server 'gone' is closed"]
    assert client.tools == ()
