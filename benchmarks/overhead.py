"""Overhead around admission: a call through a Binding, export, bulk throughput, import cost.

- binding: ``prepare`` + ``await binding.call`` of a trivial async tool, with 0 and with 3
  pass-through middlewares, against awaiting the function directly (baseline).
- export: 100 definitions as neutral dicts (`Definition.to_dict`) and as OpenAI Chat tools
  (`openai_chat.export_tools`), against ``pydantic_core.from_json`` of their stored schemas (a copy).
- throughput: small calls admitted per second on one core, against the bare validator.
- import: ``import scopetool`` and ``from scopetool import tool`` time and peak memory against
  ``import pydantic`` and ``from pydantic import BaseModel``, each in a fresh subprocess.

Timed figures are medians over interleaved rounds; imports are medians over interleaved subprocesses.

    python benchmarks/overhead.py            # full run
    python benchmarks/overhead.py --quick    # a smoke run (CI)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pydantic_core
from admission import CASES, _calibrate, bare_validator

from scopetool import Caller, Definition, Invocation, Request, Result, bind, tool
from scopetool.providers import openai_chat

Rows = list[dict[str, Any]]


def _interleaved(runners: dict[str, Callable[[int], int]], rounds: int, target: float) -> dict[str, float]:
    """Median ns per operation of each `run(count) -> elapsed ns`, batches calibrated then interleaved."""
    counts = {}
    for label, run in runners.items():
        run(10)  # warm up
        counts[label] = _calibrate(lambda _raw, run=run: run(1), "", target)
    samples: dict[str, list[float]] = {label: [] for label in runners}
    for _ in range(rounds):
        for label, run in runners.items():
            samples[label].append(run(counts[label]) / counts[label])
    return {label: statistics.median(values) for label, values in samples.items()}


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def passthrough(invocation: Invocation, call_next: Caller) -> Result:
    """A middleware that only forwards."""
    return await call_next(invocation)


def binding(rounds: int, target: float) -> Rows:
    """ns per call: direct await, and prepare + Binding.call with 0 and 3 middlewares."""
    loop = asyncio.new_event_loop()
    clock = time.perf_counter_ns
    request = Request(name="add", arguments='{"a":17,"b":25}')

    async def direct(count: int) -> int:
        start = clock()
        for _ in range(count):
            await add(17, 25)
        return clock() - start

    def through(*middlewares: Any) -> Callable[[int], Any]:
        bound = bind(tool(add), *middlewares)
        prepare, call = bound.contract.prepare, bound.call

        async def batch(count: int) -> int:
            start = clock()
            for _ in range(count):
                await call(prepare(request))
            return clock() - start

        return batch

    batches = {
        "direct": direct,
        "binding, 0 middlewares": through(),
        "binding, 3 middlewares": through(passthrough, passthrough, passthrough),
    }
    try:
        runners = {label: (lambda n, b=b: loop.run_until_complete(b(n))) for label, b in batches.items()}
        ns = _interleaved(runners, rounds, target)
    finally:
        loop.close()
    base = ns["direct"]
    return [
        {"what": label, "ns": value, "ratio": value / base, "added_us": (value - base) / 1000}
        for label, value in ns.items()
    ]


def _definitions(count: int) -> list[Definition]:
    functions = [fn for _, fn, _ in CASES[::2]]
    return [
        tool(name=f"{fn.__name__}_{i}")(fn).definition() for i, fn in zip(range(count), functions * count, strict=False)
    ]


def export(rounds: int, target: float) -> Rows:
    """ns per export of 100 definitions, against ``pydantic_core.from_json`` of their stored schemas."""
    definitions = _definitions(100)
    stored = [d.input_schema_json for d in definitions]
    from_json = pydantic_core.from_json
    clock = time.perf_counter_ns

    def floor(count: int) -> int:
        start = clock()
        for _ in range(count):
            [from_json(s) for s in stored]
        return clock() - start

    def neutral(count: int) -> int:
        start = clock()
        for _ in range(count):
            [d.to_dict() for d in definitions]
        return clock() - start

    def openai(count: int) -> int:
        start = clock()
        for _ in range(count):
            openai_chat.export_tools(definitions)
        return clock() - start

    ns = _interleaved(
        {
            "pydantic_core.from_json of 100 schemas": floor,
            "100 x Definition.to_dict": neutral,
            "openai_chat.export_tools(100)": openai,
        },
        rounds,
        target,
    )
    base = ns["pydantic_core.from_json of 100 schemas"]
    return [{"what": label, "ns": value, "ratio": value / base} for label, value in ns.items()]


def throughput(rounds: int, target: float) -> Rows:
    """Small calls admitted per second on one core (distinct arguments), against the bare validator."""
    _, fn, raw = CASES[0]
    prepare = bind(tool(fn)).contract.prepare
    validate = bare_validator(fn, raw)
    raws = [json.dumps({"a": i, "b": -i}, separators=(",", ":")) for i in range(1000)]
    requests = [Request(name=fn.__name__, arguments=r) for r in raws]
    clock = time.perf_counter_ns

    def admit(count: int) -> int:
        start = clock()
        for _ in range(count):
            for request in requests:
                prepare(request)
        return clock() - start

    def bare(count: int) -> int:
        start = clock()
        for _ in range(count):
            for r in raws:
                validate(r)
        return clock() - start

    pinned = hasattr(os, "sched_getaffinity")
    if pinned:
        cpus = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {min(cpus)})
    try:
        ns = _interleaved({"bare validate_json": bare, "Contract.prepare": admit}, rounds, target)
    finally:
        if pinned:
            os.sched_setaffinity(0, cpus)
    per_second = {label: 1e9 * len(raws) / value for label, value in ns.items()}
    base = per_second["bare validate_json"]
    return [{"what": label, "per_second": value, "ratio": value / base} for label, value in per_second.items()]


_PROBE = """
import time
start = time.perf_counter()
{statement}
elapsed = time.perf_counter() - start
try:  # the peak RSS of this process image (ru_maxrss on Linux keeps the parent's peak across exec)
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except OSError:
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(elapsed, peak)
"""
# Both packages load lazily: ``import pydantic`` defers BaseModel, ``import scopetool`` defers everything
# until a public name is read. So each bare import is paired with the statement that loads the package
# for use: each figure has two baselines, the bare ``import pydantic`` and ``from pydantic import BaseModel``.
IMPORTS = {
    "import pydantic": "import pydantic",
    "from pydantic import BaseModel": "from pydantic import BaseModel",
    "import scopetool": "import scopetool",
    "from scopetool import tool": "from scopetool import tool",
}


def imports(runs: int) -> Rows:
    """Median import time (ms) and peak RSS (MiB) in fresh subprocesses, interleaved.

    One untimed run of each statement first writes any missing bytecode cache (as installing a package
    does), so every timed run loads compiled modules whatever PYTHONDONTWRITEBYTECODE says.
    """
    writable = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    for statement in IMPORTS.values():
        subprocess.run([sys.executable, "-c", statement], check=True, env=writable)
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in IMPORTS}
    for _ in range(runs):
        for label, statement in IMPORTS.items():
            out = subprocess.run(
                [sys.executable, "-c", _PROBE.format(statement=statement)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            samples[label].append((float(out[0]) * 1000, int(out[1]) / 1024))
    medians = {
        label: (statistics.median(t for t, _ in values), statistics.median(m for _, m in values))
        for label, values in samples.items()
    }
    base_ms, base_mib = medians["import pydantic"]
    model_ms, model_mib = medians["from pydantic import BaseModel"]
    return [
        {
            "what": label,
            "ms": ms,
            "mib": mib,
            "time_ratio": ms / base_ms,
            "memory_ratio": mib / base_mib,
            "time_vs_model": ms / model_ms,
            "memory_vs_model": mib / model_mib,
        }
        for label, (ms, mib) in medians.items()
    ]


def measure(rounds: int, target: float, import_runs: int) -> dict[str, Rows]:
    """Every overhead figure."""
    return {
        "binding": binding(rounds, target),
        "export": export(rounds, target),
        "throughput": throughput(rounds, target),
        "imports": imports(import_runs),
    }


def tables(results: dict[str, Rows]) -> list[str]:
    """Markdown tables of `measure`'s results, each figure with its ratio to its baseline."""
    lines = ["**Call through a Binding** (trivial async tool; baseline: awaiting the function directly)", ""]
    lines += ["| path | ns/call | x direct | added (µs) |", "|---|---:|---:|---:|"]
    lines += [f"| {r['what']} | {r['ns']:.0f} | {r['ratio']:.2f}x | {r['added_us']:.2f} |" for r in results["binding"]]
    lines += ["", "**Export of 100 definitions** (baseline: pydantic_core.from_json of the 100 stored schemas)", ""]
    lines += ["| export | µs | x baseline |", "|---|---:|---:|"]
    lines += [f"| {r['what']} | {r['ns'] / 1000:.1f} | {r['ratio']:.2f}x |" for r in results["export"]]
    lines += ["", "**Bulk admission, small calls, one core** (baseline: bare validate_json)", ""]
    lines += ["| path | calls/s | x baseline |", "|---|---:|---:|"]
    lines += [f"| {r['what']} | {r['per_second']:,.0f} | {r['ratio']:.2f}x |" for r in results["throughput"]]
    lines += ["", "**Import in a fresh interpreter** (peak RSS of the whole process; two baselines: the bare"]
    lines += ["`import pydantic`, which defers BaseModel, and `from pydantic import BaseModel`)", ""]
    lines += [
        "| statement | ms | x `import pydantic` | x `from pydantic import BaseModel` | peak RSS (MiB) "
        "| x `import pydantic` | x `from pydantic import BaseModel` |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| `{r['what']}` | {r['ms']:.1f} | {r['time_ratio']:.2f}x | {r['time_vs_model']:.2f}x | {r['mib']:.1f} "
        f"| {r['memory_ratio']:.2f}x | {r['memory_vs_model']:.2f}x |"
        for r in results["imports"]
    ]
    return lines


def main() -> None:
    """Run the overhead benchmarks and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--target", type=float, default=0.1, help="seconds per batch")
    parser.add_argument("--imports", type=int, default=11, help="fresh subprocesses per import statement")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 0.01 s batches, 3 imports each")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.target, args.imports = 3, 0.01, 3
    print("\n".join(tables(measure(args.rounds, args.target, args.imports))))


if __name__ == "__main__":
    main()
