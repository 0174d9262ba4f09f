"""Resource-exhaustion bounds: time and peak memory of `Contract.prepare` on 1 MiB hostile inputs.

Each hostile kind is built at the admission limit (`MAX_INPUT_BYTES`, 1 MiB) and offered to five
contracts: a typed tool with an unconstrained member, a typed tool whose input is one model (nested
models and lists: the model's own validator runs), a typed tool of list parameters, a hand-written open
schema and a hand-written closed schema. Every case runs in a fresh subprocess, so
its peak resident memory is its own; the report gives the outcome (admitted or rejected), the median
wall time over ``--rounds`` runs, the peak of Python allocations (tracemalloc) and the growth of the
process's peak resident set (which also sees allocations made in Rust by jiter, pydantic-core and
jsonschema-rs).

    python benchmarks/limits.py           # every kind, five runs each: writes docs/reliability-limits.md
    python benchmarks/limits.py --quick   # a smoke run (CI): three kinds, one run each, printed
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from scopetool import (
    MAX_INPUT_BYTES,
    Contract,
    Definition,
    InvalidInvocationError,
    Invocation,
    Output,
    Request,
    Result,
    bind,
    classify_input_rejection,
    tool,
)

if TYPE_CHECKING:
    import harness

LIMIT = MAX_INPUT_BYTES
QUICK_KINDS = ["depth/arrays", "keys/top-level-unknown", "numbers/300-digit"]


def _fill(prefix: str, unit: str, suffix: str, closing: str = "", limit: int = LIMIT) -> bytes:
    """`prefix`, then `unit` repeated as often as fits, then `suffix` (and per-unit `closing`), within `limit`."""
    room = limit - len(prefix.encode()) - len(suffix.encode())
    count = room // (len(unit.encode()) + len(closing.encode()))
    return (prefix + unit * count + closing * count + suffix).encode()


def _members(unit: Callable[[int], str], prefix: str = '{"payload":{', suffix: str = "}}", limit: int = LIMIT) -> bytes:
    parts: list[str] = []
    size = len(prefix) + len(suffix)
    index = 0
    while True:
        part = unit(index)
        if size + len(part) + 1 > limit:
            break
        parts.append(part)
        size += len(part) + 1
        index += 1
    return (prefix + ",".join(parts) + suffix).encode()


def _items(unit: str, prefix: str = '{"payload":[', suffix: str = "]}", limit: int = LIMIT) -> bytes:
    count = (limit - len(prefix) - len(suffix) + 1) // (len(unit) + 1)
    return (prefix + ",".join([unit] * count) + suffix).encode()


def hostile_inputs(limit: int = LIMIT) -> dict[str, tuple[str, bytes]]:
    """Every hostile kind: its description and its bytes (each at most `limit`, by default `MAX_INPUT_BYTES`)."""
    n = limit
    big = "9" * 300
    huge = "9" * 4300
    return {
        "depth/arrays": ("nested arrays as deep as 1 MiB allows", _fill('{"payload":', "[", "}", "]", n)),
        "depth/objects": ("nested objects as deep as 1 MiB allows", _fill('{"payload":', '{"a":', "1}", "}", n)),
        "depth/unclosed": ("1 MiB of [ that never closes", _fill('{"payload":', "[", "", limit=n)),
        "keys/distinct": ("one object with as many distinct members as fit", _members(lambda i: f'"k{i}":0', limit=n)),
        "keys/duplicate": ("one object repeating one member name", _members(lambda i: '"a":0', limit=n)),
        "keys/escaped-duplicate": (
            "a member name repeated through escapes",
            _members(lambda i: '"\\u0061":0', limit=n),
        ),
        "keys/top-level-unknown": (
            "distinct unknown members at the top level",
            _members(lambda i: f'"k{i}":0', "{", "}", limit=n),
        ),
        "keys/long-name": ("one member whose name fills 1 MiB", _fill('{"', "k", '":0}', limit=n)),
        "items/zeros": ("an array of as many 0 as fit", _items("0", limit=n)),
        "items/wrong-type": (
            "an array of true where integers are expected",
            _items("true", '{"items":[', "]}", limit=n),
        ),
        "items/empty-objects": ("an array of as many {} as fit", _items("{}", limit=n)),
        "items/one-byte-wrong": (
            "an array of as many 1 as fit where strings are expected",
            _items("1", '{"tags":[', "]}", limit=n),
        ),
        "items/empty-arrays": (
            "an array of as many [] as fit where integers are expected",
            _items("[]", '{"items":[', "]}", limit=n),
        ),
        "items/nested-arrays": (
            "an array of as many [[]] as fit where integers are expected",
            _items("[[]]", '{"items":[', "]}", limit=n),
        ),
        "strings/long": ("one string filling 1 MiB", _fill('{"payload":"', "a", '"}', limit=n)),
        "strings/escapes": ("one string of \\u0041 escapes", _fill('{"payload":"', "\\u0041", '"}', limit=n)),
        "strings/surrogate-pairs": (
            "one string of escaped surrogate pairs",
            _fill('{"payload":"', "\\ud83d\\ude00", '"}', limit=n),
        ),
        "strings/many-short": ("an array of as many short strings as fit", _items('"ab"', limit=n)),
        "numbers/300-digit": ("an array of 300-digit integers", _items(big, limit=n)),
        "numbers/4300-digit": ("an array of 4300-digit integers", _items(huge, limit=n)),
        "numbers/overflowing": ("an array of 1e400", _items("1e400", limit=n)),
        "numbers/long-fractions": ("an array of numbers with 1000-digit fractions", _items("0." + "1" * 1000, limit=n)),
        "numbers/in-float-member": (
            "300-digit integers in a list of floats",
            _items(big, '{"ratios":[', "]}", limit=n),
        ),
        "blank/spaces": ("1 MiB of spaces", b" " * n),
        "blank/unicode": ("1 MiB of no-break spaces (Unicode white space)", "\u00a0".encode() * (n // 2)),
    }


class _Address(BaseModel):
    street: str
    city: str


class _Order(BaseModel):
    address: _Address
    items: list[int] = []
    ratios: list[float] = []
    tags: list[str] = []


def subjects() -> dict[str, Contract]:
    """The contracts each hostile kind is offered to."""

    @tool
    def carry(payload: Any = None) -> str:
        """Carry any value."""
        return "ok"

    @tool
    def order(order: _Order) -> str:
        """Place an order."""
        return "ok"

    @tool
    def lists(items: list[int] = [], ratios: list[float] = [], tags: list[str] = []) -> str:  # noqa: B006 - never mutated
        """Take lists."""
        return "ok"

    class Raw:
        def __init__(self, name: str, schema: dict[str, Any]) -> None:
            self._definition = Definition(name=name, input_schema=schema)

        def definition(self) -> Definition:
            return self._definition

        async def call(self, invocation: Invocation) -> Result:
            return Result(output=Output())

    closed = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "integer"}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "name": {"type": "string"},
        },
        "additionalProperties": False,
    }
    return {
        "typed-any": bind(carry).contract,
        "typed-model": bind(order).contract,
        "typed-lists": bind(lists).contract,
        "raw-open": bind(Raw("raw_open", {"type": "object"})).contract,
        "raw-closed": bind(Raw("raw_closed", closed)).contract,
    }


def _prepare(contract: Contract, request: Request) -> tuple[str, int]:
    try:
        contract.prepare(request)
    except InvalidInvocationError as error:
        rejection = classify_input_rejection(error)
        return "rejected", len(rejection.message) if rejection else -1
    return "admitted", 0


def run_one(contract: Contract, data: bytes, *, traced: bool = True) -> dict[str, Any]:
    """Prepare `data` once; the outcome, seconds, message size and (when `traced`) the tracemalloc peak.

    tracemalloc slows allocation-heavy paths several times over, so timings are taken untraced.
    """
    request = Request(name=contract.name, arguments=data)
    if traced:
        tracemalloc.start()
    started = time.perf_counter()
    outcome, message = _prepare(contract, request)
    elapsed = time.perf_counter() - started
    peak = 0
    if traced:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return {"outcome": outcome, "seconds": elapsed, "python_peak": peak, "message": message}


def _child(kind: str, subject: str, repeat: int) -> None:
    data = hostile_inputs()[kind][1]
    contract = subjects()[subject]
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    timed = [run_one(contract, data, traced=False) for _ in range(repeat)]
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline
    traced = run_one(contract, data)
    print(
        json.dumps(
            {
                "outcome": timed[0]["outcome"],
                "seconds": statistics.median(r["seconds"] for r in timed),
                "worst_seconds": max(r["seconds"] for r in timed),
                "python_peak": traced["python_peak"],
                "rss_growth": grown * 1024,
                "message": timed[0]["message"],
                "bytes": len(data),
            }
        )
    )


def measure(repeat: int, kinds: list[str] | None = None) -> list[dict[str, Any]]:
    """Run every (kind, subject) case in its own subprocess."""
    rows: list[dict[str, Any]] = []
    for kind in kinds or list(hostile_inputs()):
        for subject in subjects():
            done = subprocess.run(
                [sys.executable, __file__, "--case", kind, subject, "--rounds", str(repeat)],
                check=True,
                capture_output=True,
                text=True,
            )
            rows.append({"kind": kind, "subject": subject, **json.loads(done.stdout)})
    return rows


def _mib(value: float) -> str:
    return f"{value / 2**20:.1f}"


def report(options: harness.Options) -> str:
    """The Markdown report: header (machine, versions, command), the table, and the worst cases."""
    import harness

    rows = measure(options.rounds, QUICK_KINDS if options.quick else None)
    descriptions = {kind: description for kind, (description, _) in hostile_inputs().items()}
    how = (
        "Each case runs in a fresh process: time is the median (and the worst) of the untraced runs; Python peak "
        "is tracemalloc's, from one more traced run; RSS growth is the rise of the process's peak resident set over "
        "the untraced runs (it includes Rust allocations)."
    )
    lines = [
        "# Resource-exhaustion limits (measured)",
        "",
        "Generated by `benchmarks/limits.py`; do not edit by hand.",
        "",
        harness.header(options, "pydantic", "pydantic-core", "jiter", "jsonschema-rs", how=how),
        "",
        "| kind | input | contract | bytes | outcome | median (ms) | worst (ms) | Python peak (MiB) "
        "| RSS growth (MiB) |",
        "|---|---|---|---:|---|---:|---:|---:|---:|",
    ]
    lines.extend(
        f"| {row['kind']} | {descriptions[row['kind']]} | {row['subject']} | {row['bytes']} | {row['outcome']} | "
        f"{row['seconds'] * 1000:.1f} | {row['worst_seconds'] * 1000:.1f} | {_mib(row['python_peak'])} | "
        f"{_mib(row['rss_growth'])} |"
        for row in rows
    )
    slowest = max(rows, key=lambda row: row["worst_seconds"])
    hungriest = max(rows, key=lambda row: max(row["python_peak"], row["rss_growth"]))
    lines += [
        "",
        f"Worst time: {slowest['kind']} on {slowest['subject']}, {slowest['worst_seconds'] * 1000:.1f} ms "
        f"({slowest['outcome']}).",
        f"Worst memory: {hungriest['kind']} on {hungriest['subject']}, Python peak "
        f"{_mib(hungriest['python_peak'])} MiB, RSS growth {_mib(hungriest['rss_growth'])} MiB "
        f"({hungriest['outcome']}).",
        f"Largest model-visible message: {max(row['message'] for row in rows)} characters.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Measure every case (or, with ``--case``, be one), print the report and (a full run) write its page."""
    import harness

    def flags(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--case", nargs=2, metavar=("KIND", "SUBJECT"), help=argparse.SUPPRESS)

    options = harness.parse(__doc__, full=harness.Plan(rounds=5), quick=harness.Plan(rounds=1), flags=flags)
    if options.args.case:
        _child(options.args.case[0], options.args.case[1], options.rounds)
        return
    harness.publish(options, report(options), harness.Page(harness.DOCS / "reliability-limits.md"))


if __name__ == "__main__":
    main()
