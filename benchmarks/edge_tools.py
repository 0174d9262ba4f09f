"""The tools `benchmarks/edge.py` serves over HTTP: `add`, and `hang`, a sync tool that does not return for an hour."""

from __future__ import annotations

import time

from scopetool import Effect, Registry, tool


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def hang() -> str:
    """Block for an hour in a sync function (a stand-in for a call stuck on a lock or a dead socket)."""
    time.sleep(3600)
    return "done"


registry = Registry(add, hang)
