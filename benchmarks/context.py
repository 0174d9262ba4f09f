"""What a `CallContext` parameter costs on the call path, against the same tool without one.

Each pair is one tool written twice: a plain ``@tool`` function, and the same function taking
``ctx: CallContext[Deps]`` (bound with deps, and reading them). One call is `Contract.prepare` of the
request and `Binding.call` of the invocation, awaited. Timings are medians of interleaved rounds in one
run; where valgrind is installed, instructions per call are counted too (the loop's own cost subtracted),
which is what to read when the ratio is near 1 on a shared machine.

    python benchmarks/context.py           # full run: writes the table into docs/concepts/context.md
    python benchmarks/context.py --quick   # a smoke run (CI): few rounds, no callgrind, no docs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from callgrind import count_steps
from pages import replace_between

from scopetool import Binding, CallContext, Registry, Request, tool

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs" / "concepts" / "context.md"
START = "<!-- context-benchmark:start -->"
END = "<!-- context-benchmark:end -->"

Turn = Callable[[], Awaitable[object]]


@dataclass
class Deps:
    """An application dependency the context tools read."""

    offset: int


@tool
async def plain_async(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def context_async(ctx: CallContext[Deps], a: int, b: int) -> int:
    """Add two integers and the deps' offset."""
    return a + b + ctx.deps.offset


@tool
def plain_sync(a: int, b: int) -> int:
    """Add two integers (in a worker thread)."""
    return a + b


@tool
def context_sync(ctx: CallContext[Deps], a: int, b: int) -> int:
    """Add two integers and the deps' offset (in a worker thread)."""
    return a + b + ctx.deps.offset


REGISTRY = Registry(plain_async, context_async, plain_sync, context_sync, deps=Deps(0))
PAIRS = [("async function", "plain_async", "context_async"), ("sync function", "plain_sync", "context_sync")]
ARGUMENTS = '{"a": 2, "b": 3}'


def turn(name: str) -> Turn:
    """One call of tool `name`: prepare the request, then await the call."""
    binding: Binding | None = REGISTRY.resolve(name)
    assert binding is not None
    contract = binding.contract
    request = Request(name=name, arguments=ARGUMENTS)

    async def once() -> object:
        return await binding.call(contract.prepare(request))

    return once


async def _round(one: Turn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await one()
    return (time.perf_counter() - start) / calls


async def timed(plain: Turn, context: Turn, rounds: int, calls: int) -> tuple[float, float]:
    """Median seconds per call of each, over interleaved rounds (warmed up first)."""
    await _round(plain, calls)
    await _round(context, calls)
    a: list[float] = []
    b: list[float] = []
    for index in range(rounds):
        pair = (plain, a), (context, b)
        for one, into in pair if index % 2 == 0 else pair[::-1]:
            into.append(await _round(one, calls))
    return statistics.median(a), statistics.median(b)


async def _idle() -> None:
    return None


async def _loop(one: Turn, calls: int) -> None:
    for _ in range(calls):
        await one()


def child(calls: int) -> None:
    """Under callgrind: the idle loop and each side of each pair in a loop of its own, between dump markers."""
    loop = asyncio.new_event_loop()
    plan: list[tuple[str, str]] = []
    turns: list[Turn] = []
    for label, plain, context in PAIRS:
        for side, one in (("idle", _idle), ("plain", turn(plain)), ("context", turn(context))):
            plan.append((label, side))
            turns.append(one)
    for one in turns:
        loop.run_until_complete(_loop(one, 50))
    os.getppid()
    for one in turns:
        loop.run_until_complete(_loop(one, calls))
        os.getppid()
    print(json.dumps(plan))


def instructions(calls: int) -> dict[str, dict[str, float]]:
    """Instructions per call of each side of each pair, the loop's own cost subtracted."""
    plan, totals = count_steps(Path(__file__).resolve(), calls, len)
    counts: dict[str, dict[str, float]] = {}
    for (label, side), total in zip(plan, totals, strict=True):
        counts.setdefault(label, {})[side] = total / calls
    for row in counts.values():
        idle = row.pop("idle")
        for side in row:
            row[side] -= idle
    return counts


def report(quick: bool) -> str:
    """The generated table, with the machine and the command."""
    rounds, calls = (3, 20) if quick else (31, 400)
    counted: dict[str, dict[str, float]] = {}
    counting = "no instructions counted (" + ("--quick" if quick else "valgrind is not installed here") + ")"
    if not quick and shutil.which("valgrind") is not None:
        counted = instructions(300)
        counting = "instructions: valgrind's callgrind, 300 calls per side after 50 warm-up calls, loop cost subtracted"
    lines = [
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.release()}; Python {platform.python_version()}.",
        f"Command: `python benchmarks/context.py{' --quick' if quick else ''}`. Timings: medians of {rounds} "
        f"interleaved rounds of {calls} calls (prepare and call); {counting}.",
        "",
        "| tool | plain (µs) | with `CallContext` (µs) | added (µs) | ratio | plain (instructions) "
        "| with `CallContext` (instructions) | added (instructions) | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, plain, context in PAIRS:
        a, b = asyncio.run(timed(turn(plain), turn(context), rounds, calls))
        count = counted.get(label)
        ins = (
            f"{count['plain']:,.0f} | {count['context']:,.0f} | {count['context'] - count['plain']:,.0f} "
            f"| {count['context'] / count['plain']:.2f}x"
            if count
            else "- | - | - | -"
        )
        lines.append(f"| {label} | {a * 1e6:.1f} | {b * 1e6:.1f} | {(b - a) * 1e6:.1f} | {b / a:.2f}x | {ins} |")
    return "\n".join(lines)


def write_docs(text: str) -> None:
    """Put the table between the markers of docs/concepts/context.md."""
    replace_between(DOCS, START, END, f"\n\n{text.strip()}\n\n")


def main() -> None:
    """Measure every pair, print the table, and (a full run) write it into the docs."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds, no instruction counts, no docs")
    parser.add_argument("--no-docs", action="store_true", help="leave docs/concepts/context.md alone")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child is not None:
        child(options.child)
        return
    text = report(options.quick)
    print(text)
    if not options.quick and not options.no_docs:
        write_docs(text)


if __name__ == "__main__":
    main()
