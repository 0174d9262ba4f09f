"""A Temporal worker process for the durability tests, and the tools it runs (which log their effects).

Usage::

    python _temporal_worker.py TARGET LOG TASK_QUEUE NAME

It connects to the Temporal server at TARGET, logs ``ready NAME`` once its worker polls TASK_QUEUE,
and runs calls until it is killed. The tests drive the calls from their own process with `registry`
(the client half needs the same tools to admit calls). Tools append lines to LOG, flushed at once:

* ``count`` (no effect promise): adds one to the counter file LOG.count, logs ``count <n> <NAME>``,
  then blocks while the file LOG.hold exists;
* ``charge`` (IDEMPOTENT): logs ``attempt <key>``, then ``charge <key>`` unless that line is already
  there (the external system deduplicates on the key), then blocks while LOG.hold exists;
* ``remove`` (a ``@tool(approval=...)`` function): asks a person first; approved, logs ``removed <path> <key>``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from scopetool import CallContext, Effect, Registry, tool
from scopetool.driver.temporal import TemporalBackend


def backend(tools: Registry, client: Client, task_queue: str) -> TemporalBackend:
    """The backend as these tests set it: a lost worker is seen within a second, and retried at once."""
    return TemporalBackend(
        tools,
        client,
        task_queue=task_queue,
        heartbeat_timeout=1.0,
        retry_initial_interval=0.1,
        start_to_close_timeout=60,
    )


class Log:
    """The effect log every worker appends to."""

    def __init__(self, path: Path, worker: str = "") -> None:
        self.path = path
        self.worker = worker

    def append(self, line: str) -> None:
        with self.path.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
            file.flush()

    def lines(self) -> list[str]:
        return self.path.read_text(encoding="utf-8").splitlines() if self.path.exists() else []

    def hold(self) -> None:
        deadline = time.monotonic() + 120
        while self.path.with_suffix(".hold").exists() and time.monotonic() < deadline:
            time.sleep(0.01)


@tool
def count(ctx: CallContext[Log]) -> int:
    """Add one to the counter (no replay promise: a second run counts twice)."""
    counter = ctx.deps.path.with_suffix(".count")
    value = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(value))
    ctx.deps.append(f"count {value} {ctx.deps.worker}")
    ctx.deps.hold()
    return value


@tool(effect=Effect.IDEMPOTENT)
def charge(ctx: CallContext[Log], cents: int) -> str:
    """Charge an amount once per call key."""
    key = ctx.idempotency_key
    ctx.deps.append(f"attempt {key}")
    if f"charge {key}" not in ctx.deps.lines():
        ctx.deps.append(f"charge {key}")
    ctx.deps.hold()
    return f"charged {cents}"


def removal_prompt(path: str) -> str:
    """What a person is asked before `remove` runs."""
    return f"Remove {path}?"


@tool(approval=removal_prompt)
def remove(ctx: CallContext[Log], path: str) -> str:
    """Remove a path, once a person approves it."""
    ctx.deps.append(f"removed {path} {ctx.idempotency_key}")
    return f"removed {path}"


def registry(log: Path, worker: str = "") -> Registry:
    """The tools, logging to `log` as `worker`."""
    return Registry(count, charge, remove, deps=Log(log, worker))


async def serve(target: str, log: Path, task_queue: str, name: str) -> None:
    client = await Client.connect(target)
    # A killed worker's cached workflows move to the other workers after this long (10 s by default).
    async with backend(registry(log, name), client, task_queue).worker(
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=0.5)
    ):
        Log(log).append(f"ready {name}")
        await asyncio.sleep(3600)


if __name__ == "__main__":
    target, log, task_queue, name = sys.argv[1:]
    asyncio.run(serve(target, Path(log), task_queue, name))
