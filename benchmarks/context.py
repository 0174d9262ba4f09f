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

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import harness
from harness import IDLE, Step, awaits

from scopetool import Binding, CallContext, Registry, Request, tool

PAGE = harness.Page(
    harness.DOCS / "concepts" / "context.md", "<!-- context-benchmark:start -->", "<!-- context-benchmark:end -->"
)

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


def sides(loop: asyncio.AbstractEventLoop) -> dict[str, dict[str, harness.Runner]]:
    """Each pair's runners on `loop`: the plain tool and the one taking the context."""
    return {
        label: {"plain": awaits(turn(plain), loop), "context": awaits(turn(context), loop)}
        for label, plain, context in PAIRS
    }


def steps(calls: int) -> list[Step]:
    """Under callgrind: each pair's idle loop, then each side in a loop of its own."""
    loop = asyncio.new_event_loop()
    idle = awaits(harness.nothing, loop)
    return [
        Step(label, side, run, calls)
        for label, runs in sides(loop).items()
        for side, run in {IDLE: idle, **runs}.items()
    ]


def report(options: harness.Options) -> str:
    """The generated table, with the machine and the command."""
    counted = harness.instructions(__file__, options.calls) if options.count else {}
    lines = [
        harness.header(
            options, how=f"One call: prepare and call. {harness.timing(options)} {harness.counting(options)}"
        ),
        "",
        "| tool | plain (µs) | with `CallContext` (µs) | added (µs) | ratio | plain (instructions) "
        "| with `CallContext` (instructions) | added (instructions) | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    loop = asyncio.new_event_loop()
    try:
        for label, runs in sides(loop).items():
            ns = harness.medians(runs, options.rounds, options.target)
            a, b = ns["plain"] / 1000, ns["context"] / 1000
            count = counted.get(label)
            ins = (
                f"{count['plain']:,.0f} | {count['context']:,.0f} | {count['context'] - count['plain']:,.0f} "
                f"| {count['context'] / count['plain']:.2f}x"
                if count
                else "- | - | - | -"
            )
            lines.append(f"| {label} | {a:.1f} | {b:.1f} | {b - a:.1f} | {b / a:.2f}x | {ins} |")
    finally:
        loop.close()
    return "\n".join(lines)


def main() -> None:
    """Measure every pair, print the table, and (a full run) write it into the docs."""
    harness.run(__doc__, report, PAGE, full=harness.Plan(rounds=15, calls=300), steps=steps)


if __name__ == "__main__":
    main()
