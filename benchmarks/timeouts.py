"""What timeouts cost on the call path: nothing when none is set, and what one costs when it is.

A binding without a timeout awaits the tool's own call, as before timeouts existed (a test checks it is
the same function object: tests/test_timeout.py). The one operation timeouts add to a call without
one is on the sync path: `Func.call` asks whether a timeout is running (one ``ContextVar.get``) to
choose between the loop's worker pool and a thread of the call's own. This script measures:

- timed, in interleaved rounds (median ns per ``await binding.call(invocation)`` of a trivial tool):
  an async and a sync tool, each bound without a timeout and with one of 60 s that is never reached;
- counted by valgrind's callgrind where it is installed (the same figure however busy the machine is):
  instructions per call of the same four paths, and of the one check the sync path gained, as a share
  of the sync call without a timeout.

    python benchmarks/timeouts.py            # full run: writes the tables into docs/concepts/timeouts.md
    python benchmarks/timeouts.py --quick    # a smoke run (CI): timed only, no callgrind, no docs
"""

from __future__ import annotations

import asyncio

import harness
from harness import IDLE, Step, awaits

from scopetool import Binding, Request, bind, tool
from scopetool._timeout import UNDER_TIMEOUT

PAGE = harness.Page(
    harness.DOCS / "concepts" / "timeouts.md", "<!-- benchmarks/timeouts.py writes from here -->", "<!-- to here -->"
)
LIMIT = 60.0
CHECK = "the check: UNDER_TIMEOUT.get()"
SYNC_TIMED = f"sync, timeout {LIMIT:g} s (own thread)"


async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def add_sync(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def bindings() -> dict[str, Binding]:
    """The four call paths: async and sync, without and with a timeout that is never reached."""
    return {
        "async, no timeout": bind(tool(add_async)),
        f"async, timeout {LIMIT:g} s": bind(tool(add_async), timeout=LIMIT),
        "sync, no timeout": bind(tool(add_sync)),
        SYNC_TIMED: bind(tool(add_sync), timeout=LIMIT),
    }


def runners(loop: asyncio.AbstractEventLoop) -> dict[str, harness.Runner]:
    """``await binding.call(invocation)`` of each path, on `loop`."""

    def calling(binding: Binding) -> harness.Runner:
        invocation = binding.contract.prepare(Request(name=binding.name, arguments='{"a":17,"b":25}'))
        call = binding.call
        return awaits(lambda: call(invocation), loop)

    return {label: calling(binding) for label, binding in bindings().items()}


async def _check() -> None:
    UNDER_TIMEOUT.get()


def steps(calls: int) -> list[Step]:
    """Under callgrind: the idle loop, the one check the sync path gained, and each path."""
    loop = asyncio.new_event_loop()
    sides = {IDLE: awaits(harness.nothing, loop), CHECK: awaits(_check, loop), **runners(loop)}
    return [Step("timeouts", side, run, calls) for side, run in sides.items()]


def tables(ns: dict[str, float], instructions: dict[str, float] | None) -> list[str]:
    """The timed table, then the instruction counts when there are."""
    lines = [
        "| path | ns per call (median of interleaved rounds) | x its path without a timeout |",
        "|---|---:|---:|",
    ]
    labels = list(ns)
    for index, label in enumerate(labels):
        base = ns[labels[index - index % 2]]
        lines.append(f"| {label} | {ns[label]:,.0f} | {ns[label] / base:.2f}x |")
    lines.append("")
    if instructions is None:
        return lines
    check = instructions[CHECK]
    sync = instructions["sync, no timeout"]
    async_off, async_on = instructions["async, no timeout"], instructions[f"async, timeout {LIMIT:g} s"]
    lines += [
        "| counted by callgrind | instructions per call |",
        "|---|---:|",
        f"| async, no timeout | {async_off:,.0f} |",
        f"| async, timeout {LIMIT:g} s | {async_on:,.0f} ({async_on / async_off:.2f}x) |",
        f"| sync, no timeout | {sync:,.0f} |",
        f"| of which the check timeouts added | {check:,.0f} ({100 * check / sync:.2f}% of the sync call) |",
        f"| {SYNC_TIMED} | {instructions[SYNC_TIMED]:,.0f} ({instructions[SYNC_TIMED] / sync:.2f}x) |",
    ]
    return lines


def report(options: harness.Options) -> str:
    """Time every path (and count its instructions where valgrind is installed): the report."""
    loop = asyncio.new_event_loop()
    try:
        ns = harness.medians(runners(loop), options.rounds, options.target)
    finally:
        loop.close()
    counted = harness.instructions(__file__, options.calls)["timeouts"] if options.count else None
    how = f"A trivial tool, `await binding.call(invocation)`. {harness.timing(options)} {harness.counting(options)}"
    return "\n".join([harness.header(options, how=how), "", *tables(ns, counted)])


def main() -> None:
    """Run the benchmark; print the tables and (a full run) write them into the docs."""
    harness.run(__doc__, report, PAGE, full=harness.Plan(rounds=15), steps=steps)


if __name__ == "__main__":
    main()
