"""The tools the MCP tasks tests serve: ``scopetool serve tasks_fixture_tools.py:registry --tasks``.

Run as a script, ``python tasks_fixture_tools.py STORE SUBJECT`` serves the registry over stdio with
durable tasks (DBOS on the SQLite file STORE), every call made as the principal SUBJECT: how an
operator who verified the caller runs it.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from scopetool import CallContext, Effect, Principal, Registry, acting_as, tool


@tool(effect=Effect.SAFE)
async def slow(seconds: float) -> str:
    """Wait a while, then say how long."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}s"


@tool(effect=Effect.IDEMPOTENT)
def label(ctx: CallContext[None], item: str) -> str:
    """Label an item with the word a person gives."""
    word = ctx.ask(f"A label for {item}?", str)
    return f"{item}: {word}"


@tool
async def book(seat: str, seconds: float) -> str:
    """Book a seat (no effect promise: never run twice), slowly."""
    await asyncio.sleep(seconds)
    return f"booked {seat}"


registry = Registry(slow, label, book)


def main(store: Path, subject: str) -> None:
    """Serve over stdio with tasks on DBOS at `store`, as `subject`."""
    from scopetool.driver.dbos import DbosBackend  # the script alone needs DBOS
    from scopetool.mcp.server import run_stdio
    from scopetool.mcp.tasks import TaskOptions

    with DbosBackend(registry, f"sqlite:///{store}") as backend, acting_as(Principal(subject)):
        run_stdio(registry, tasks=TaskOptions(backend=backend, store=store, answer_within=0.2, poll_interval=0.1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
