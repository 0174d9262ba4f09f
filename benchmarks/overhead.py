"""Overhead around admission: a call through a Binding, export, bulk throughput, import cost.

- binding: ``prepare`` + ``await binding.call`` of a trivial async tool, with 0 and with 3
  pass-through middlewares, against awaiting the function directly (baseline).
- export: 100 definitions as neutral dicts (`Definition.to_dict`) and as OpenAI Chat tools
  (`openai_chat.export_tools`), against ``pydantic_core.from_json`` of their stored schemas (a copy).
- throughput: small calls admitted per second on one core, against the bare validator.
- import: ``import scopetool`` and ``from scopetool import tool`` time and peak memory against
  ``import pydantic`` and ``from pydantic import BaseModel``, each in a fresh subprocess.

Timed figures are `harness.medians`; imports are medians over interleaved subprocesses (`harness.take_turns`).

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
from typing import Any

import harness
import pydantic_core
from admission import CASES, bare_validator
from harness import awaits, calls

from scopetool import Caller, Definition, Invocation, Request, Result, bind, tool
from scopetool.providers import openai_chat

Rows = list[dict[str, Any]]


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def passthrough(invocation: Invocation, call_next: Caller) -> Result:
    """A middleware that only forwards."""
    return await call_next(invocation)


def binding(rounds: int, target: float) -> Rows:
    """ns per call: direct await, and prepare + Binding.call with 0 and 3 middlewares."""
    request = Request(name="add", arguments='{"a":17,"b":25}')

    def through(*middlewares: Any) -> Any:
        bound = bind(tool(add), *middlewares)
        prepare, call = bound.contract.prepare, bound.call
        return lambda: call(prepare(request))

    loop = asyncio.new_event_loop()
    try:
        turns = {
            "direct": lambda: add(17, 25),
            "binding, 0 middlewares": through(),
            "binding, 3 middlewares": through(passthrough, passthrough, passthrough),
        }
        ns = harness.medians({label: awaits(turn, loop) for label, turn in turns.items()}, rounds, target)
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
    floor = "pydantic_core.from_json of 100 schemas"
    runners = {
        floor: calls(lambda _: [from_json(s) for s in stored]),
        "100 x Definition.to_dict": calls(lambda _: [d.to_dict() for d in definitions]),
        "openai_chat.export_tools(100)": calls(lambda _: openai_chat.export_tools(definitions)),
    }
    ns = harness.medians(runners, rounds, target)
    return [{"what": label, "ns": value, "ratio": value / ns[floor]} for label, value in ns.items()]


def throughput(rounds: int, target: float) -> Rows:
    """Small calls admitted per second on one core (distinct arguments), against the bare validator."""
    _, fn, raw = CASES[0]
    prepare = bind(tool(fn)).contract.prepare
    validate = bare_validator(fn, raw)
    raws = [json.dumps({"a": i, "b": -i}, separators=(",", ":")) for i in range(1000)]
    requests = [Request(name=fn.__name__, arguments=r) for r in raws]

    def admit(_: object) -> None:
        for request in requests:
            prepare(request)

    def bare(_: object) -> None:
        for r in raws:
            validate(r)

    release = harness.on_one_core()
    try:
        ns = harness.medians({"bare validate_json": calls(bare), "Contract.prepare": calls(admit)}, rounds, target)
    finally:
        release()
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

    def probe(statement: str) -> tuple[float, float]:
        command = [sys.executable, "-c", _PROBE.format(statement=statement)]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()
        return float(out[0]) * 1000, int(out[1]) / 1024

    samples = harness.take_turns({label: (lambda s=statement: probe(s)) for label, statement in IMPORTS.items()}, runs)
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

    def flags(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--imports", type=int, help="fresh subprocesses per import statement (default 11, quick 3)")

    options = harness.parse(__doc__, flags=flags)
    runs = options.args.imports or (3 if options.quick else 11)
    how = f"{harness.timing(options)} Imports: medians of {runs} fresh subprocesses each."
    text = "\n".join(
        [harness.header(options, "pydantic", how=how), "", *tables(measure(options.rounds, options.target, runs))]
    )
    harness.publish(options, text)


if __name__ == "__main__":
    main()
