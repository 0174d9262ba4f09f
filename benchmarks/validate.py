"""Throughput of ``scopetool validate`` against its floor, its memory, and ``--jobs`` scaling.

Each case is a list of logged calls of a small tool, ``add(a: int, b: int)``, as JSONL lines. The loop
is the one the command runs (`LineChecker.check` on every line, counting, and writing the report of
each line not admitted with the message the model would get), fed from memory. The floor, in the
same run and over the same lines, is the plain loop anyone would write: ``orjson.loads`` of each line,
then pydantic-core's ``validate_json`` of its arguments against a strict typed-dict schema of the
tool (re-encoded by ``orjson.dumps`` where the line holds an object), a failure caught and dropped:
no I-JSON check, no format detection, no message. Both run on one core, in interleaved rounds; the
medians are reported, with scopetool's throughput as a fraction of the floor's.

End to end, the installed command runs in a fresh process on a file of the one-in-five case: its
peak memory for that file and for one four times as long (the loop streams, so the two stay close),
and its wall time and the CPU time of all its processes with ``--jobs 1`` and ``--jobs 2`` on all the
machine's cores, in interleaved rounds, whose outputs must be the same byte for byte; in the same
rounds, the command on an empty file gives its start-up (interpreter, imports, TARGET), which no
number of processes shortens. The children may write bytecode, and one untimed run goes first, as
a user's install has its .pyc files.

    python benchmarks/validate.py            # 200,000 lines a case (and instructions, where valgrind is installed)
    python benchmarks/validate.py --quick    # a smoke run (CI): 5,000 lines a case, no instruction counts
    python benchmarks/validate.py --instructions   # only the instructions per line of the neutral loops
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness
import jiter
import orjson
from harness import Step
from pydantic_core import SchemaValidator, ValidationError, core_schema

from scopetool import Registry, tool
from scopetool.cli._validate_lines import LineChecker, validate_lines

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


def _validator() -> SchemaValidator:
    integer = core_schema.int_schema(strict=True)
    return SchemaValidator(
        core_schema.typed_dict_schema(
            {"a": core_schema.typed_dict_field(integer), "b": core_schema.typed_dict_field(integer)},
            extra_behavior="forbid",
            strict=True,
        )
    )


def _line(value: object) -> bytes:
    return json.dumps(value).encode() + b"\n"


def _arguments(i: int, rejected_every: int) -> dict[str, Any]:
    """The arguments of call `i`: every `rejected_every`-th one a missing, a mistyped or an unknown field in turn."""
    if rejected_every and i % rejected_every == 0:
        wrong = (i // rejected_every) % 3
        if wrong == 0:
            return {"a": i}
        if wrong == 1:
            return {"a": str(i), "b": i % 7}
        return {"a": i, "b": i % 7, "c": 3}
    return {"a": i, "b": i % 7}


def cases(count: int) -> list[tuple[str, list[bytes], str]]:
    """(name, lines, format) of every case."""
    return [
        (
            "neutral, all admitted",
            [_line({"name": "add", "arguments": _arguments(i, 0)}) for i in range(count)],
            "neutral",
        ),
        (
            "neutral, 1 in 5 rejected",
            [_line({"name": "add", "arguments": _arguments(i, 5)}) for i in range(count)],
            "neutral",
        ),
        (
            "openai_chat items, all admitted",
            [
                _line(
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "add", "arguments": json.dumps(_arguments(i, 0))},
                    }
                )
                for i in range(count)
            ],
            "openai_chat",
        ),
        (
            "anthropic items, all admitted",
            [
                _line({"type": "tool_use", "id": f"toolu_{i}", "name": "add", "input": _arguments(i, 0)})
                for i in range(count)
            ],
            "anthropic",
        ),
    ]


def _scopetool(lines: list[bytes]) -> Callable[[], object]:
    checker = LineChecker(Registry(add))
    return lambda: validate_lines(lines, checker, io.StringIO())


def _floor(lines: list[bytes], line_format: str) -> Callable[[], object]:
    """The plain loop: orjson.loads per line, then validate_json of the arguments; failures dropped."""
    validators = {"add": _validator().validate_json}
    loads, dumps = orjson.loads, orjson.dumps

    def neutral() -> None:
        for line in lines:
            call = loads(line)
            with contextlib.suppress(ValidationError):
                validators[call["name"]](dumps(call["arguments"]))

    def openai_chat() -> None:
        for line in lines:
            function = loads(line)["function"]
            with contextlib.suppress(ValidationError):
                validators[function["name"]](function["arguments"])

    def anthropic() -> None:
        for line in lines:
            call = loads(line)
            with contextlib.suppress(ValidationError):
                validators[call["name"]](dumps(call["input"]))

    return {"neutral": neutral, "openai_chat": openai_chat, "anthropic": anthropic}[line_format]


def _median_seconds(runners: list[Callable[[], object]], rounds: int) -> list[float]:
    """Median wall time of each runner (a whole loop), the runners taking turns (`harness.take_turns`)."""

    def timed(runner: Callable[[], object]) -> Callable[[], float]:
        def run() -> float:
            start = time.perf_counter()
            runner()
            return time.perf_counter() - start

        return run

    samples = harness.take_turns({str(k): timed(runner) for k, runner in enumerate(runners)}, rounds)
    return [statistics.median(values) for values in samples.values()]


def _child(command: list[str], folder: Path, cores: set[int] | None) -> tuple[float, int, bytes, float]:
    """The wall time of `command`, its peak RSS in KiB, its output and the CPU seconds of its processes.

    Measured by a parent that runs nothing else.
    """
    code = (
        "import resource, subprocess, sys, time; start = time.perf_counter(); "
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE); "
        "sys.stderr.buffer.write(done.stdout); usage = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(time.perf_counter() - start, usage.ru_maxrss, usage.ru_utime + usage.ru_stime)"
    )

    def on_cores() -> None:
        if cores is not None:
            os.sched_setaffinity(0, cores)

    result = subprocess.run(
        [sys.executable, "-c", code, *command],
        cwd=folder,
        check=True,
        capture_output=True,
        env={key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"},
        preexec_fn=on_cores if hasattr(os, "sched_setaffinity") else None,
    )
    seconds, peak, cpu = result.stdout.split()
    kib = int(peak) // (1024 if sys.platform == "darwin" else 1)  # macOS reports bytes
    return float(seconds), kib, result.stderr, float(cpu)


def end_to_end(lines: list[bytes], rounds: int, cores: set[int] | None) -> dict[str, Any]:
    """The command in fresh processes: calls per second, peak RSS for the file and one 4x as long, --jobs scaling.

    Each round runs ``--jobs 1``, ``--jobs 2`` and the command on an empty file (its start-up), each one's
    wall time and the CPU time of all its processes kept; the medians are reported.
    """
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        (folder / "tools.py").write_text(TOOLS, encoding="utf-8")
        (folder / "calls.jsonl").write_bytes(b"".join(lines))
        (folder / "longer.jsonl").write_bytes(b"".join(lines) * 4)
        (folder / "empty.jsonl").write_bytes(b"")
        command = [sys.executable, "-m", "scopetool", "validate", "tools.py:registry"]
        _child([*command, "empty.jsonl"], folder, cores)  # untimed: bytecode written, files cached
        _, short_peak, _, _ = _child([*command, "calls.jsonl"], folder, cores)
        _, long_peak, _, _ = _child([*command, "longer.jsonl"], folder, cores)
        runs = {
            "serial": ["calls.jsonl", "--jobs", "1"],
            "parallel": ["calls.jsonl", "--jobs", "2"],
            "start": ["empty.jsonl"],
        }
        wall: dict[str, list[float]] = {name: [] for name in runs}
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        outputs: set[bytes] = set()
        load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        for _ in range(rounds):
            for name, arguments in runs.items():
                seconds, _, output, used = _child([*command, *arguments], folder, cores)
                wall[name].append(seconds)
                cpu[name].append(used)
                if name != "start":
                    outputs.add(output)
    if len(outputs) != 1:
        raise RuntimeError("--jobs 2 wrote another report than --jobs 1")
    return {
        "lines": len(lines),
        "cores": len(cores) if cores is not None else os.cpu_count(),
        "short_peak_kib": short_peak,
        "long_peak_kib": long_peak,
        "serial_s": statistics.median(wall["serial"]),
        "parallel_s": statistics.median(wall["parallel"]),
        "start_s": statistics.median(wall["start"]),
        "serial_cpu_s": statistics.median(cpu["serial"]),
        "parallel_cpu_s": statistics.median(cpu["parallel"]),
        "start_cpu_s": statistics.median(cpu["start"]),
        "load_before": load_before,
        "load": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def _parses(lines: list[bytes], rounds: int) -> dict[str, float]:
    """Nanoseconds a line of each JSON parser: orjson, jiter, and jiter catching repeated member names."""

    def loop(parse: Callable[[bytes], object]) -> Callable[[], object]:
        def run() -> None:
            for line in lines:  # nothing kept: 200,000 live dicts would have the collector walk them
                parse(line)

        return run

    runners = {
        "orjson.loads": loop(orjson.loads),
        "jiter.from_json": loop(jiter.from_json),
        "jiter.from_json, repeated names caught": loop(lambda line: jiter.from_json(line, catch_duplicate_keys=True)),
    }
    seconds = _median_seconds(list(runners.values()), rounds)
    return {name: value / len(lines) * 1e9 for name, value in zip(runners, seconds, strict=True)}


def measure(count: int, rounds: int, counted_lines: int | None = 2_000) -> dict[str, Any]:
    """Every figure of the benchmark, JSON-ready: the loop against the floor on one core, its instructions
    on `counted_lines` lines (callgrind, when installed; None: not counted), then end to end."""
    cores = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    all_cases = cases(count)
    rows: list[dict[str, Any]] = []
    release = harness.on_one_core()  # the loops on one core
    try:
        for name, lines, line_format in all_cases:
            ours, floor = _median_seconds([_scopetool(lines), _floor(lines, line_format)], rounds)
            rows.append({"case": name, "lines": count, "scopetool_s": ours, "floor_s": floor})
        parses = _parses(all_cases[0][1], rounds)
    finally:
        release()
    return {
        "lines": count,
        "rounds": rounds,
        "rows": rows,
        "parses": parses,
        "instructions": None if counted_lines is None else count_instructions(counted_lines),
        "end_to_end": end_to_end(all_cases[1][1], max(3, rounds // 2), cores),
    }


def tables(figures: dict[str, Any]) -> list[str]:
    """Markdown: the loop against the floor, then the end-to-end figures."""
    lines = [
        "| case | scopetool calls/s | floor calls/s | scopetool / floor (throughput) |",
        "|---|---:|---:|---:|",
    ]
    for row in figures["rows"]:
        ours, floor = row["lines"] / row["scopetool_s"], row["lines"] / row["floor_s"]
        lines.append(f"| {row['case']} | {ours:,.0f} | {floor:,.0f} | {ours / floor:.2f}x |")
    lines += ["", *_rejected_line(figures)]
    parses = figures.get("parses")
    if parses:
        lines += [
            "",
            "Reading one line of the all-admitted case: "
            + ", ".join(f"{name} {ns:.0f} ns" for name, ns in parses.items())
            + ". `validate` must refuse a repeated member name anywhere in a line (I-JSON), which orjson "
            "cannot see (the last value wins), so a line that needs parsing is read by jiter with repeated "
            "names caught; the common neutral line is not parsed at all before `Contract.prepare`, whose "
            "validator reads its arguments.",
        ]
    ends = figures["end_to_end"]
    lines += [
        "",
        f"End to end (`scopetool validate`, a fresh process, {ends['lines']:,} lines, 1 in 5 rejected): "
        f"{ends['lines'] / ends['serial_s']:,.0f} calls/s with `--jobs 1`, "
        f"{ends['lines'] / ends['parallel_s']:,.0f} calls/s with `--jobs 2` on {ends['cores']} cores "
        f"({ends['serial_s'] / ends['parallel_s']:.2f}x; the same report byte for byte); peak RSS "
        f"{ends['short_peak_kib'] / 1024:.0f} MiB, and {ends['long_peak_kib'] / 1024:.0f} MiB for a file four "
        "times as long.",
        "",
        scaling(ends),
    ]
    return lines


def _rejected_line(figures: dict[str, Any]) -> list[str]:
    """Markdown: what one rejected line costs, from the two neutral cases (whose lines differ in the rejected ones)."""
    rows = {row["case"]: row for row in figures["rows"]}
    valid, mixed = rows["neutral, all admitted"], rows["neutral, 1 in 5 rejected"]

    def rejected_us(key: str) -> float:
        return _rejected_cost(valid[key] / valid["lines"], mixed[key] / mixed["lines"]) * 1e6

    ours, floor = rejected_us("scopetool_s"), rejected_us("floor_s")
    admitted = valid["scopetool_s"] / valid["lines"] * 1e6
    return [
        f"A rejected line costs scopetool about {ours:.1f} µs against the floor's {floor:.1f} µs, and "
        f"{ours / admitted:.1f}x an admitted line's {admitted:.2f} µs (from the two neutral cases). The floor "
        "drops pydantic's error; scopetool also writes the line's report with the message the model would get, "
        "which is built once for each distinct list of problems and kept by the contract. What is left on "
        "every rejected line (by callgrind and cProfile on a loop of rejected lines) is the I-JSON parse of "
        "the arguments with jiter (a repeated member name or a NaN would be the message instead), pydantic's "
        "`errors()`, each error located in the parsed document (the memo's key: the kinds, paths and what "
        "was sent), and the rejection objects themselves: the `InputRejection` and the settling of "
        "`InvalidInvocationError`'s pending explanation.",
        *_rejected_instructions(figures),
    ]


def _rejected_cost(admitted: float, mixed: float) -> float:
    """What one rejected line costs, from a line's cost in the all-admitted case and in the mixed one.

    A fifth of the mixed case's lines are rejected: its cost a line, less four fifths of an admitted
    line's, is a fifth of a rejected line's.
    """
    return (mixed - 0.8 * admitted) / 0.2


def _rejected_instructions(figures: dict[str, Any]) -> list[str]:
    """Markdown: the neutral cases' instructions per line, and a rejected line's, when they were counted."""
    counts = figures.get("instructions")
    if counts is None:
        return []
    valid, mixed = _counted(counts, "neutral, all admitted"), _counted(counts, "neutral, 1 in 5 rejected")
    rejected = [_rejected_cost(v, m) for v, m in zip(valid, mixed, strict=True)]
    return [
        "",
        f"Instructions per line (callgrind, {counts['lines']:,} lines a case): all admitted, scopetool "
        f"{valid[0]:,.0f} against the floor's {valid[1]:,.0f} (throughput {valid[1] / valid[0]:.2f}x the floor's); "
        f"1 in 5 rejected, {mixed[0]:,.0f} against {mixed[1]:,.0f} ({mixed[1] / mixed[0]:.2f}x); so a rejected "
        f"line {rejected[0]:,.0f} against the floor's {rejected[1]:,.0f}.",
    ]


JOBS_TARGET = 1.8
"""`--jobs 2` against `--jobs 1`, end to end, on 2 cores."""


def scaling(ends: dict[str, Any]) -> str:
    """The paragraph on ``--jobs 2``: the CPU time of all processes, the start-up, and why the target is met or not."""
    ratio = ends["serial_s"] / ends["parallel_s"]
    serial_cpu, parallel_cpu = ends["serial_cpu_s"], ends["parallel_cpu_s"]
    text = (
        f"CPU time of all the command's processes: {serial_cpu:.2f} s with `--jobs 1`, {parallel_cpu:.2f} s with "
        f"`--jobs 2` ({parallel_cpu / serial_cpu:.2f}x: what running in processes adds to the work)"
    )
    if "start_cpu_s" not in ends:  # a run saved before the start-up was measured
        load = ends.get("load")
        return (
            text
            + "; the wall-time scaling can reach the core count only on idle cores"
            + (f" (the load average was {load:.1f} during this run)." if load is not None else ".")
        )
    start, start_cpu, cores = ends["start_s"], ends["start_cpu_s"], ends["cores"]
    # On idle cores, the start-up stays serial and the checking's CPU time divides among the processes.
    best = serial_cpu / (start_cpu + (parallel_cpu - start_cpu) / min(cores, 2))
    past_start = (ends["serial_s"] - start) / max(ends["parallel_s"] - start, 1e-9)
    text += (
        f". The start-up (the command on an empty file: interpreter, imports, TARGET) takes {start:.2f} s "
        f"({start_cpu:.2f} s of CPU) with any number of processes; past it, `--jobs 2` checked the lines "
        f"{past_start:.2f}x as fast as `--jobs 1`. With these CPU times, two idle cores would give at best "
        f"{best:.2f}x end to end"
    )
    if ratio >= JOBS_TARGET:
        text += f"; this run gave {ratio:.2f}x, so the {JOBS_TARGET}x target is met"
    elif best < JOBS_TARGET:
        added = (parallel_cpu - start_cpu) / max(serial_cpu - start_cpu, 1e-9)
        text += (
            f"; this run gave {ratio:.2f}x, {(1 - ratio / JOBS_TARGET) * 100:.0f}% short of the {JOBS_TARGET}x "
            f"target, which even idle cores would not reach: the start-up is {start_cpu / serial_cpu * 100:.0f}% "
            f"of `--jobs 1`'s CPU time and stays serial, and checking in processes took {added:.2f}x the CPU "
            "time of checking in one"
        )
    else:
        text += (
            f"; this run gave {ratio:.2f}x, {(1 - ratio / JOBS_TARGET) * 100:.0f}% short of the {JOBS_TARGET}x "
            "target, which these CPU times would reach on idle cores: the rest is other work on the machine's cores"
        )
    before, after = ends.get("load_before"), ends.get("load")
    if before is not None and after is not None:
        text += f" (the load average was {before:.1f} before these rounds and {after:.1f} after them)"
    return text + "."


def targets(figures: dict[str, Any]) -> list[tuple[str, float, float, bool]]:
    """The validate targets: (what, measured, limit, whether more is better)."""
    rows = {row["case"]: row for row in figures["rows"]}
    valid, mixed = rows["neutral, all admitted"], rows["neutral, 1 in 5 rejected"]
    ends = figures["end_to_end"]
    counts = figures.get("instructions")

    def counted(case: str) -> str:
        if counts is None:
            return ""
        ours, floor = _counted(counts, case)
        return f"; by instructions {floor / ours:.2f}x"

    return [
        (
            "`scopetool validate`: at least 0.9x the floor's throughput, all admitted"
            + counted("neutral, all admitted"),
            valid["floor_s"] / valid["scopetool_s"],
            0.9,
            True,
        ),
        (
            "`scopetool validate`: at least 0.6x the floor's throughput, 1 in 5 rejected"
            + counted("neutral, 1 in 5 rejected"),
            mixed["floor_s"] / mixed["scopetool_s"],
            0.6,
            True,
        ),
        (
            "`scopetool validate`: peak RSS for 4x the lines, at most 1.1x",
            ends["long_peak_kib"] / ends["short_peak_kib"],
            1.1,
            False,
        ),
        (
            f"`scopetool validate --jobs 2`: at least {JOBS_TARGET}x `--jobs 1` on 2 cores",
            ends["serial_s"] / ends["parallel_s"],
            JOBS_TARGET,
            True,
        ),
    ]


def steps(count: int) -> list[Step]:
    """The loops counted under callgrind: scopetool's and the floor's, on each neutral case of `count` lines."""

    def repeat(loop: Callable[[], object]) -> harness.Runner:
        def run(times: int) -> int:
            for _ in range(times):
                loop()
            return 0  # not timed: counted

        return run

    found: list[Step] = []
    for name, lines, line_format in cases(count)[:2]:
        found.append(Step(name, "scopetool", repeat(_scopetool(lines)), 1))
        found.append(Step(name, "floor", repeat(_floor(lines, line_format)), 1))
    return found


def count_instructions(count: int) -> dict[str, Any] | None:
    """The instructions per line of scopetool's loop and the floor's on each neutral case (callgrind), or
    None without valgrind."""
    if not harness.can_count():
        return None
    counted = harness.instructions(__file__, count)
    per_line = {f"{case}: {side}": total / count for case, sides in counted.items() for side, total in sides.items()}
    return {"lines": count, "per_line": per_line}


def _counted(counts: dict[str, Any], case: str) -> tuple[float, float]:
    """(scopetool's, the floor's) instructions per line of a neutral case, from `count_instructions`."""
    per_line = counts["per_line"]
    return per_line[f"{case}: scopetool"], per_line[f"{case}: floor"]


def instructions(count: int) -> str:
    """The instructions per line of scopetool's loop and the floor's on the neutral cases (callgrind)."""
    counts = count_instructions(count)
    if counts is None:
        return "valgrind is not installed: no instruction counts"
    lines = [f"Instructions per line (valgrind's callgrind, {count:,} lines a case, the loops' own counted):"]
    for name, _, _ in cases(1)[:2]:
        ours, floor = _counted(counts, name)
        lines.append(f"- {name}: scopetool {ours:,.0f}, floor {floor:,.0f} (floor / scopetool {floor / ours:.3f}x)")
    return "\n".join(lines)


def report(options: harness.Options) -> str:
    """Every figure: the loop against the floor, end to end, and the targets met or not."""
    count = options.args.lines or (5_000 if options.quick else 200_000)
    if options.args.instructions:
        return instructions(options.calls)
    figures = measure(count, options.rounds, options.calls if options.count else None)
    how = f"{count:,} lines a case, medians of {options.rounds} interleaved rounds, the loops on one core."
    lines = [harness.header(options, "orjson", "jiter", "pydantic-core", how=how), "", *tables(figures), ""]
    for what, value, limit, more in targets(figures):
        met = value >= limit if more else value <= limit
        lines.append(f"- {what}: {value:.2f}x ({'met' if met else 'not met'})")
    return "\n".join(lines)


def main() -> None:
    """Measure and print the report."""

    def flags(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--lines", type=int, help="lines a case (default 200,000, quick 5,000)")
        parser.add_argument("--instructions", action="store_true", help="count the neutral loops' instructions only")

    full, quick = harness.Plan(rounds=5, calls=2_000), harness.Plan(rounds=3, calls=200)
    harness.run(__doc__, report, full=full, quick=quick, steps=steps, flags=flags)


if __name__ == "__main__":
    main()
