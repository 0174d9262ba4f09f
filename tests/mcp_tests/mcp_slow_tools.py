"""Tools that outlive their 50 ms timeout, for the MCP server's tests (in process and over stdio)."""

from __future__ import annotations

import asyncio
import threading

from scopetool import Effect, Registry, tool

GATE = threading.Event()
"""The sync tools wait on it (an in-process test sets it when done; a server process just exits)."""


@tool(effect=Effect.SAFE)
async def slow_read(sku: str) -> int:
    """Read a stock level, too slowly."""
    await asyncio.Event().wait()
    return 0


@tool
async def slow_write(cents: int) -> str:
    """Send money with no promise, too slowly."""
    await asyncio.Event().wait()
    return "sent"


@tool(effect=Effect.SAFE)
def slow_sync_read(sku: str) -> int:
    """Read a stock level in a sync function, too slowly."""
    GATE.wait(10)
    return 0


@tool
def slow_sync_write(cents: int) -> str:
    """Send money in a sync function with no promise, too slowly."""
    GATE.wait(10)
    return "sent"


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers (quickly, under the same timeout)."""
    return a + b


registry = Registry(slow_read, slow_write, slow_sync_read, slow_sync_write, add, timeout=0.05)
"""Every tool has the registry's default timeout of 50 ms."""
