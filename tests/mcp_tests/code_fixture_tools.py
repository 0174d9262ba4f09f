"""The tools the code mode server tests serve: ``scopetool serve code_fixture_tools.py:registry --code-mode``."""

from __future__ import annotations

from mcp_fixture_tools import Asker

from scopetool import Effect, Registry, tool

ticks = [0]
"""How many times `tick` has run in this process (the server's)."""


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def tick() -> int:
    """Count one more run (not idempotent): how many times it has run."""
    ticks[0] += 1
    return ticks[0]


registry = Registry(add, tick, Asker("approve", "Approve the transfer?", {"type": "boolean", "title": "Approve"}))
