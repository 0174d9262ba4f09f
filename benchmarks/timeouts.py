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

    python benchmarks/timeouts.py            # full run; --docs also writes the tables into docs/concepts/timeouts.md
    python benchmarks/timeouts.py --quick    # a smoke run (CI): timed only, no callgrind
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from callgrind import count_steps
from pages import replace_between

from scopetool import Binding, Request, bind, tool
from scopetool._timeout import UNDER_TIMEOUT

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs" / "concepts" / "timeouts.md"
START = "<!-- benchmarks/timeouts.py --docs writes from here -->"
END = "<!-- to here -->"
LIMIT = 60.0
CHECK = "the check: UNDER_TIMEOUT.get()"
SYNC_TIMED = f"sync, timeout {LIMIT:g} s (own thread)"
COUNTED = ("idle", CHECK, "async, no timeout", f"async, timeout {LIMIT:g} s", "sync, no timeout", SYNC_TIMED)


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


def _batch(binding: Binding) -> Callable[[int], Coroutine[Any, Any, int]]:
    invocation = binding.contract.prepare(Request(name=binding.name, arguments='{"a":17,"b":25}'))
    call = binding.call
    clock = time.perf_counter_ns

    async def batch(count: int) -> int:
        start = clock()
        for _ in range(count):
            await call(invocation)
        return clock() - start

    return batch


def timed(rounds: int, target: float) -> dict[str, float]:
    """Median ns per call of each path, batches calibrated once, then interleaved round by round."""
    loop = asyncio.new_event_loop()
    try:
        runners = {label: _batch(binding) for label, binding in bindings().items()}
        counts: dict[str, int] = {}
        for label, run in runners.items():
            count = 1
            while loop.run_until_complete(run(count)) < target * 1e9 and count < 1 << 20:
                count *= 2
            counts[label] = count
        samples: dict[str, list[float]] = {label: [] for label in runners}
        for _ in range(rounds):
            for label, run in runners.items():
                samples[label].append(loop.run_until_complete(run(counts[label])) / counts[label])
    finally:
        loop.close()
    return {label: statistics.median(values) for label, values in samples.items()}


def child(calls: int) -> None:
    """Under callgrind: each counted step between two ``os.getppid()`` markers; the loop's cost is the idle step."""
    paths = bindings()
    loop = asyncio.new_event_loop()

    async def idle(count: int) -> None:
        for _ in range(count):
            pass  # the loop itself

    async def check(count: int) -> None:
        for _ in range(count):
            UNDER_TIMEOUT.get()

    steps: dict[str, Callable[[int], Coroutine[Any, Any, Any]]] = {
        "idle": idle,
        CHECK: check,
        **{label: _batch(paths[label]) for label in COUNTED[2:]},
    }
    for step in steps.values():
        loop.run_until_complete(step(max(calls // 10, 1)))  # warm up
    for step in steps.values():
        os.getppid()
        loop.run_until_complete(step(calls))
    os.getppid()
    loop.close()
    print(json.dumps({"steps": len(steps)}))


def counted(calls: int) -> dict[str, float] | None:
    """Instructions per call of each counted step, less the idle loop's; None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    _, totals = count_steps(Path(__file__), calls, lambda report: report["steps"])
    per_call = dict(zip(COUNTED, (total / calls for total in totals), strict=True))
    idle = per_call.pop("idle")
    return {label: value - idle for label, value in per_call.items()}


def tables(ns: dict[str, float], instructions: dict[str, float] | None) -> list[str]:
    """The report: the timed table, then the instruction counts (or why there are none)."""
    lines = [
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs. "
        "Command: `python benchmarks/timeouts.py`; a trivial tool, `await binding.call(invocation)`.",
        "",
        "| path | ns per call (median of interleaved rounds) | x its path without a timeout |",
        "|---|---:|---:|",
    ]
    labels = list(ns)
    for index, label in enumerate(labels):
        base = ns[labels[index - index % 2]]
        lines.append(f"| {label} | {ns[label]:,.0f} | {ns[label] / base:.2f}x |")
    lines.append("")
    if instructions is None:
        lines.append("(no instruction counts: valgrind is not installed here, or --quick)")
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


def write_docs(lines: list[str]) -> None:
    """Replace the figures between the markers in the docs page."""
    replace_between(DOCS, START, END, "\n" + "\n".join(lines) + "\n")


def main() -> None:
    """Run the benchmark; print the tables (and write them into the docs with --docs)."""
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--target", type=float, default=0.1, help="seconds per batch")
    parser.add_argument("--calls", type=int, default=2000, help="calls per step under callgrind")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 0.01 s batches, no callgrind")
    parser.add_argument("--docs", action="store_true", help=f"write the tables into {DOCS.relative_to(HERE.parent)}")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.target = 3, 0.01
    lines = tables(timed(args.rounds, args.target), None if args.quick else counted(args.calls))
    print("\n".join(lines))
    if args.docs:
        write_docs(lines)


if __name__ == "__main__":
    main()
