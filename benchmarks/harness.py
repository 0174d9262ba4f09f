"""The one harness of every benchmark script: its command line, timing, instruction counts and report.

A benchmark is a script ``benchmarks/NAME.py``: a module docstring (its first line is ``--help``'s),
the runners it compares, a ``report(options) -> str`` that measures them and writes Markdown, and

    def main() -> None:
        harness.run(__doc__, report, PAGE)  # PAGE: harness.Page(docs/x.md, start marker, end marker), or None

    if __name__ == "__main__":
        main()

(``harness.parse`` then ``harness.publish`` where the script needs its own flags or modes). Every script
takes the same flags: ``--quick`` (the smoke run CI makes: 3 rounds of 0.01 s batches, no instruction
counts, never writes docs), ``--rounds``, ``--target`` (seconds per batch), ``--calls`` (calls a step
under callgrind), and ``--no-docs``; a full run writes its report into its page (between the page's two
marker lines, or the whole file) unless ``--no-docs``.

Timing (`medians`): each runner is a ``run(count) -> nanoseconds`` (`calls` for a function, `awaits`
for a coroutine on an event loop); each is warmed up and its batch calibrated to ``--target`` seconds,
then the runners take turns over ``--rounds`` rounds (`take_turns`: every runner once a round, the order
reversed every other round), so noise on a shared machine hits all of them alike; the median per
operation is reported. `take_turns` alone interleaves runners that are not batches (fresh processes).

Instruction counts (`instructions`): a script that passes ``steps`` to `parse` is run again as
``NAME.py --child CALLS`` under valgrind's callgrind; the child runs each `Step` between two calls of
``os.getppid`` (where callgrind dumps its counts) and prints its plan; the parent reads each step's
instructions per call, less its group's ``idle`` loop. They are the same however busy the machine is.

Why not pyperf or pytest-benchmark: pyperf runs each benchmark in worker processes of its own, one
benchmark after another, and compares separate runs; these comparisons need their runners interleaved
round by round in one process (and often on one event loop, sharing a registry or a server), so that a
ratio is taken within a round. pytest-benchmark makes benchmarks into tests, which this project never
does (figures come from scripts), and times one function's rounds before the next's. Neither counts
instructions or writes the docs pages; what is shared here is small, so it is written here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOCS = ROOT / "docs"
IDLE = "idle"
"""The side of a `Step` group that does nothing: its loop's own instructions, subtracted from the others'."""

Runner = Callable[[int], int]
"""Runs its operation `count` times; returns the nanoseconds that took."""
T = TypeVar("T")


# -- the command line and the report -------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How long a run measures: rounds, seconds per batch, calls per step under callgrind."""

    rounds: int = 9
    target: float = 0.1
    calls: int = 2000


QUICK = Plan(rounds=3, target=0.01, calls=20)


@dataclass(frozen=True)
class Page:
    """Where a full run writes its report: between two marker lines of a page, or (no markers) the whole file."""

    path: Path
    start: str = ""
    end: str = ""


@dataclass(frozen=True)
class Options:
    """What one run was asked for."""

    quick: bool
    rounds: int
    target: float
    calls: int
    docs: bool
    """Whether the report goes into its page: a full run without ``--no-docs``."""
    count: bool
    """Whether to count instructions: not ``--quick``, and valgrind installed."""
    command: str
    """The command as the report quotes it."""
    load: float
    """The load average when the run began."""
    args: argparse.Namespace
    """Every flag, the script's own included."""


@dataclass(frozen=True)
class Step:
    """One loop counted under callgrind: `count` runs of `run`, reported as `group`'s `side`."""

    group: str
    side: str
    run: Runner
    count: int


def parse(
    doc: str | None,
    *,
    full: Plan = Plan(),
    quick: Plan = QUICK,
    steps: Callable[[int], Sequence[Step]] | None = None,
    flags: Callable[[argparse.ArgumentParser], None] | None = None,
) -> Options:
    """The common flags (and the script's own, added by `flags`); ``--child CALLS`` runs `steps` and exits."""
    parser = argparse.ArgumentParser(
        description=(doc or "").split("\n\n")[0], epilog=_usage(doc), formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run (CI): short, no instruction counts, no docs")
    parser.add_argument("--rounds", type=int, help=f"interleaved rounds (default {full.rounds}, quick {quick.rounds})")
    parser.add_argument("--target", type=float, help=f"seconds per batch (default {full.target}, quick {quick.target})")
    parser.add_argument(
        "--calls",
        type=int,
        help=f"calls a step under callgrind, or a round where the script says so (default {full.calls})",
    )
    parser.add_argument("--no-docs", action="store_true", help="print the report only (a full run writes its page)")
    if steps is not None:
        parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    if flags is not None:
        flags(parser)
    args = parser.parse_args()
    if steps is not None and args.child is not None:
        child(steps(args.child))
        raise SystemExit(0)
    plan = quick if args.quick else full
    words = [word for word in sys.argv[1:] if word != "--no-docs"]
    return Options(
        quick=args.quick,
        rounds=args.rounds or plan.rounds,
        target=args.target or plan.target,
        calls=args.calls or plan.calls,
        docs=not (args.quick or args.no_docs),
        count=steps is not None and not args.quick and can_count(),
        command=" ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *words]),
        load=os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0,
        args=args,
    )


def _usage(doc: str | None) -> str:
    """The docstring's indented command lines, for ``--help``."""
    return "\n".join(line for line in (doc or "").splitlines() if line.startswith("    python "))


def publish(options: Options, text: str, page: Page | None = None) -> None:
    """Print the report; a full run (not ``--no-docs``) also writes it into `page`."""
    print(text.rstrip("\n"))
    if page is not None and options.docs:
        write(page, text)
        print(f"wrote {page.path.relative_to(ROOT)}", file=sys.stderr)


def run(doc: str | None, report: Callable[[Options], str], page: Page | None = None, **parsing: Any) -> None:
    """The whole ``main`` of most scripts: `parse`, ``report(options)``, `publish`."""
    options = parse(doc, **parsing)
    publish(options, report(options), page)


def write(page: Page, text: str) -> None:
    """Put `text` into `page`: between its markers, or in place of the whole file."""
    if not page.start:
        page.path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
        return
    replace_between(page.path, page.start, page.end, f"\n\n{text.strip()}\n\n")


def replace_between(page: Path, start: str, end: str, body: str) -> None:
    """Put `body` between the markers `start` and `end` of `page`, in place of what stood there."""
    text = page.read_text(encoding="utf-8")
    head, found, rest = text.partition(start)
    _, ended, tail = rest.partition(end)
    if not found or not ended:
        raise SystemExit(f"{page}: the markers {start!r} and {end!r} are missing")
    page.write_text(f"{head}{start}{body}{end}{tail}", encoding="utf-8")


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(load: float | None = None) -> str:
    """The machine and interpreter, in a few words (with the load average when `load` is given)."""
    busy = f" (load average {load:.2f} when the run began)" if load is not None else ""
    return (
        f"{_cpu()}, {os.cpu_count()} CPUs{busy}, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()} ({platform.python_implementation()})"
    )


def versions(*packages: str) -> str:
    """``name version`` of each package installed, comma-separated (scopetool first)."""
    found: list[str] = []
    for name in dict.fromkeys(("scopetool", *packages)):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def header(options: Options, *packages: str, how: str = "") -> str:
    """The report's first lines: the machine, the versions, the command and how it measured."""
    return (
        f"Machine: {machine(options.load)}. Versions: {versions(*packages)}.\n"
        f"Command: `{options.command}`.{' ' + how if how else ''}"
    )


def timing(options: Options, unit: str = "call") -> str:
    """How the timed figures were taken, in a sentence."""
    return f"Timings: medians of {options.rounds} interleaved rounds of {options.target:g} s batches, per {unit}."


def counting(options: Options, how: str = "") -> str:
    """How the instructions were counted, in a sentence (or why they were not)."""
    if options.count:
        return (
            f"Instructions: valgrind's callgrind, {options.calls} calls a side after a warm-up"
            f"{', ' + how if how else ''}, the loop's own subtracted."
        )
    return "No instructions counted (" + ("--quick" if options.quick else "valgrind is not installed here") + ")."


# -- timing --------------------------------------------------------------------------------------------


def calls(fn: Callable[[Any], Any], arg: Any = None) -> Runner:
    """A runner of ``fn(arg)``; an exception (the rejection of an invalid input) ends that call, not the batch."""
    clock = time.perf_counter_ns

    def batch(count: int) -> int:
        start = clock()
        for _ in range(count):
            try:
                fn(arg)
            except Exception:
                continue
        return clock() - start

    return batch


def awaits(turn: Callable[[], Awaitable[Any]], loop: asyncio.AbstractEventLoop) -> Runner:
    """A runner of ``await turn()``, its batch run to completion on `loop` (and timed inside it)."""
    clock = time.perf_counter_ns

    async def batch(count: int) -> int:
        start = clock()
        for _ in range(count):
            await turn()
        return clock() - start

    return lambda count: loop.run_until_complete(batch(count))


async def nothing() -> None:
    """A turn that does nothing: the `IDLE` side of an async group."""


def take_turns(runners: Mapping[str, Callable[[], T]], rounds: int) -> dict[str, list[T]]:
    """What each runner returned in each of `rounds` rounds: every runner once a round, the order reversed
    every other round, so noise hits every runner alike."""
    samples: dict[str, list[T]] = {label: [] for label in runners}
    order = list(runners)
    for index in range(rounds):
        for label in order if index % 2 == 0 else order[::-1]:
            samples[label].append(runners[label]())
    return samples


def calibrate(run: Runner, target: float) -> int:
    """How many operations make a batch of about `target` seconds (at least one)."""
    count = 1
    while True:
        elapsed = run(count)
        if elapsed > 20_000_000 or count >= 1 << 22:
            return max(1, round(count * target * 1e9 / max(elapsed, 1)))
        count *= 4


def medians(runners: Mapping[str, Runner], rounds: int, target: float) -> dict[str, float]:
    """Median nanoseconds per operation of each runner: warmed up, its batch calibrated, then taking turns."""
    counts: dict[str, int] = {}
    for label, run in runners.items():
        run(1)
        counts[label] = calibrate(run, target)

    def per_operation(run: Runner, count: int) -> Callable[[], float]:
        return lambda: run(count) / count

    samples = take_turns({label: per_operation(run, counts[label]) for label, run in runners.items()}, rounds)
    return {label: statistics.median(values) for label, values in samples.items()}


def on_one_core() -> Callable[[], None]:
    """Pin this process to one core (where the system can); the function that gives the others back."""
    if not hasattr(os, "sched_getaffinity"):
        return lambda: None
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    return lambda: os.sched_setaffinity(0, cores)


# -- instruction counts --------------------------------------------------------------------------------


def can_count() -> bool:
    """Whether valgrind is installed."""
    return shutil.which("valgrind") is not None


def settle() -> None:
    """Collect, then freeze what is left: no step pays for collecting what the ones before it left."""
    gc.collect()
    gc.freeze()


def child(steps: Sequence[Step], warm: int = 50) -> None:
    """Under callgrind: warm every step up, then run each between two dump markers (a collection after each,
    between markers of its own), and print the plan as the last line."""
    for step in steps:
        step.run(min(warm, step.count))
    settle()
    os.getppid()  # callgrind dumps its counts before each call of getppid
    for step in steps:
        step.run(step.count)
        os.getppid()
        settle()
        os.getppid()
    print(json.dumps([[step.group, step.side, step.count] for step in steps]))


def instructions(script: str | Path, calls: int) -> dict[str, dict[str, float]]:
    """Instructions per call of each step of ``SCRIPT --child CALLS`` under callgrind, by group and side; in a
    group with an `IDLE` side, that loop's own count is subtracted from every other side's (and dropped)."""
    script = Path(script).resolve()
    plan: list[list[Any]] = []

    def read(stdout: str) -> int:
        plan.extend(json.loads(stdout.strip().splitlines()[-1]))
        return 2 * len(plan) + 2

    # Dump 1 holds the setup; dump 2k + 2 the k-th step, dump 2k + 3 the collection after it.
    dumps = callgrind([str(script), "--child", str(calls)], script.parent, read)
    totals = [dumps[2 * k + 1] for k in range(len(plan))]
    counts: dict[str, dict[str, float]] = {}
    for (group, side, count), total in zip(plan, totals, strict=True):
        counts.setdefault(group, {})[side] = total / count
    for row in counts.values():
        idle = row.pop(IDLE, None)
        for side in row:
            row[side] -= idle or 0.0
    return counts


def callgrind(arguments: Sequence[str], cwd: str | Path, dumps: Callable[[str], int] = lambda _: 2) -> list[int]:
    """The instructions of each part of ``python ARGUMENTS`` under callgrind: the parts are cut at each call of
    ``os.getppid`` (callgrind dumps its counts before each); `dumps` reads the process's output and says how
    many parts there are (the last one runs to the exit). The same interpreter, and ``PYTHONHASHSEED=0``
    (the same dict and set layouts), so the same counts every run.

    Raises:
        SystemExit: valgrind failed, or a dump has no summary.
    """
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-before=getppid"]
        command += [sys.executable, *arguments]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd, env=env)
        if done.returncode != 0:
            raise SystemExit(f"valgrind failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
        count = dumps(done.stdout)
        return [_total(Path(f"{out}.{k}") if k < count else out) for k in range(1, count + 1)]


def _total(dump: Path) -> int:
    for line in dump.read_text(encoding="utf-8").splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise SystemExit(f"{dump}: no summary line")


@contextlib.contextmanager
def serving(script: str, *arguments: str, startup: float = 120.0) -> Generator[str]:
    """``python SCRIPT ARGUMENTS`` as a server process for the block: the first line it prints (its URL).

    Raises:
        SystemExit: the process printed nothing within `startup` seconds.
    """
    process = subprocess.Popen([sys.executable, script, *arguments], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        if not select.select([process.stdout], [], [], startup)[0]:
            raise SystemExit(f"{' '.join(arguments)}: the server did not start within {startup:g} s")
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait()
