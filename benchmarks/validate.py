"""Throughput of ``scopetool validate``: its admission loop in calls per second on one core.

Each case is a list of logged calls of a small tool, ``add(a: int, b: int)``, as JSONL lines. The loop
is the one the command runs (`LineChecker.check` on every line, counting and reporting), fed from
memory; beside it, in the same run and over the same lines, a bare pydantic-core ``validate_json``
of each whole line against a strict typed-dict schema of the line (the floor: no duplicate-key or
I-JSON check, no message, no format detection). The median of ``--rounds`` rounds is reported.

The end-to-end row runs the installed command on a file of the neutral lines, in a fresh process
(start-up and reading included), and notes its peak memory for that file and for one four times as
long: the loop streams, so the two stay close.

    python benchmarks/validate.py            # 200,000 lines a case
    python benchmarks/validate.py --quick    # a smoke run (CI)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic_core import SchemaValidator, core_schema

from scopetool import Registry, tool
from scopetool.cli._validate import LineChecker, validate_lines

TOOLS = '''
from scopetool import Registry, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


registry = Registry(add)
'''


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _arguments_schema() -> core_schema.CoreSchema:
    integer = core_schema.int_schema(strict=True)
    return core_schema.typed_dict_schema(
        {"a": core_schema.typed_dict_field(integer), "b": core_schema.typed_dict_field(integer)},
        extra_behavior="forbid",
        strict=True,
    )


def _line_validator(fields: dict[str, core_schema.CoreSchema]) -> SchemaValidator:
    return SchemaValidator(
        core_schema.typed_dict_schema(
            {name: core_schema.typed_dict_field(schema) for name, schema in fields.items()},
            extra_behavior="forbid",
            strict=True,
        )
    )


def _text(value: str) -> core_schema.CoreSchema:
    return core_schema.literal_schema([value])


def _args(number: int) -> str:
    return json.dumps({"a": number, "b": 2})


def _cases(count: int) -> list[tuple[str, list[bytes], SchemaValidator]]:
    string = core_schema.str_schema(strict=True)
    arguments = _arguments_schema()
    neutral = [json.dumps({"name": "add", "arguments": {"a": i, "b": i % 7}}).encode() + b"\n" for i in range(count)]
    some_rejected = [
        json.dumps({"name": "add", "arguments": {"a": i} if i % 100 == 0 else {"a": i, "b": 1}}).encode() + b"\n"
        for i in range(count)
    ]
    openai = [
        json.dumps({"id": f"c{i}", "type": "function", "function": {"name": "add", "arguments": _args(i)}}).encode()
        + b"\n"
        for i in range(count)
    ]
    anthropic = [
        json.dumps({"type": "tool_use", "id": f"toolu_{i}", "name": "add", "input": {"a": i, "b": 2}}).encode() + b"\n"
        for i in range(count)
    ]
    neutral_line = _line_validator({"name": _text("add"), "arguments": arguments})
    function = core_schema.typed_dict_schema(
        {
            "name": core_schema.typed_dict_field(_text("add")),
            "arguments": core_schema.typed_dict_field(core_schema.json_schema(arguments)),
        },
        extra_behavior="forbid",
        strict=True,
    )
    openai_line = _line_validator({"id": string, "type": _text("function"), "function": function})
    anthropic_line = _line_validator(
        {"type": _text("tool_use"), "id": string, "name": _text("add"), "input": arguments}
    )
    return [
        ("neutral, all admitted", neutral, neutral_line),
        ("neutral, 1% rejected", some_rejected, neutral_line),
        ("openai_chat items", openai, openai_line),
        ("anthropic items", anthropic, anthropic_line),
    ]


def _scopetool(lines: list[bytes]) -> Callable[[], object]:
    checker = LineChecker(Registry(add))
    return lambda: validate_lines(lines, checker, io.StringIO())


def _bare(lines: list[bytes], validator: SchemaValidator) -> Callable[[], object]:
    validate = validator.validate_json

    def run() -> None:
        for line in lines:
            with contextlib.suppress(ValueError):
                validate(line)

    return run


def _median_seconds(runners: list[Callable[[], object]], rounds: int) -> list[float]:
    """Median wall time of each runner; rounds go round-robin so machine noise hits every runner alike."""
    times: list[list[float]] = [[] for _ in runners]
    for _ in range(rounds):
        for index, runner in enumerate(runners):
            start = time.perf_counter()
            runner()
            times[index].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def _end_to_end(lines: list[bytes]) -> tuple[float, int, int]:
    """Calls per second of the command in a fresh process, and its peak RSS (KiB) for the file and one 4x as long."""
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        (folder / "tools.py").write_text(TOOLS, encoding="utf-8")
        (folder / "calls.jsonl").write_bytes(b"".join(lines))
        (folder / "longer.jsonl").write_bytes(b"".join(lines) * 4)
        command = [sys.executable, "-m", "scopetool", "validate", "tools.py:registry"]
        seconds, short_peak = _child([*command, "calls.jsonl"], folder)
        _, long_peak = _child([*command, "longer.jsonl"], folder)
    return len(lines) / seconds, short_peak, long_peak


def _child(command: list[str], folder: Path) -> tuple[float, int]:
    """The wall time of `command` and its peak RSS in KiB, measured by a parent that runs nothing else."""
    code = (
        "import resource, subprocess, sys, time; start = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
        "print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    result = subprocess.run([sys.executable, "-c", code, *command], cwd=folder, check=True, capture_output=True)
    seconds, peak = result.stdout.split()
    return float(seconds), int(peak) // (1024 if sys.platform == "darwin" else 1)  # macOS reports bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5,000 lines a case, 3 rounds")
    parser.add_argument("--lines", type=int, default=200_000, help="lines a case")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    count, rounds = (5_000, 3) if options.quick else (options.lines, options.rounds)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core

    print(f"scopetool validate: admission loop throughput, {count:,} lines a case, median of {rounds} rounds")
    print(f"python {platform.python_version()}, {platform.machine()}, {platform.system()}, one core")
    print()
    print("| case | scopetool calls/s | bare validate_json calls/s | scopetool time / bare time |")
    print("|---|---:|---:|---:|")
    for name, lines, validator in _cases(count):
        ours, bare = _median_seconds([_scopetool(lines), _bare(lines, validator)], rounds)
        print(f"| {name} | {count / ours:,.0f} | {count / bare:,.0f} | {ours / bare:.1f}x |")
    neutral = _cases(count)[0][1]
    rate, short_peak, long_peak = _end_to_end(neutral)
    print()
    print(
        f"end to end (`scopetool validate`, a fresh process, {count:,} neutral lines): {rate:,.0f} calls/s; "
        f"peak RSS {short_peak / 1024:.0f} MiB, and {long_peak / 1024:.0f} MiB for {4 * count:,} lines"
    )


if __name__ == "__main__":
    main()
