"""The regression gate (CI): the hot paths' instructions, counted by callgrind, against the committed baseline.

Each path is counted under valgrind's callgrind (`harness.instructions`: the same interpreter,
``PYTHONHASHSEED=0``, every loop warmed up first, its own loop's instructions subtracted), so its
figure is the same however busy the machine is, and compared with `BASELINE`
(``benchmarks/data/gate.json``: the counts, with the Python, the platform and the versions of the
packages the paths run through). A path that costs more than `MARGIN` above its baseline fails the
gate, named with its baseline, its new count and the change; one that got cheaper by more than the
margin is reported (not a failure), with the advice to record the baseline again.

The paths (`PATHS`): admission of a typical call and of a rejected one (`Contract.prepare` on
``admission.py``'s medium case, valid and mistyped), a turn of 8 mixed calls (sync and async tools,
OpenAI Chat: ``parse_tool_calls``, ``run_call``, ``result_message``), one line of ``scopetool validate``
(``validate.py``'s neutral line), the gateway's own work on one ``tools/call`` (its stdio server's lean
path: the line read, the call admitted, guarded by a policy and a deny list, run, audited and answered;
a local tool, so no other process is in it) and ``import scopetool`` in a fresh interpreter (between two
dump markers, so the interpreter's start is not in it).

A deliberate cost is accepted by recording the baseline again in the same commit (``--update``), with a
sentence in the CHANGELOG saying what got dearer and why. When this environment is not the
baseline's (another Python, platform, prepare path or package version), the recorded counts say
nothing of this code here: the gate says so, then counts the baseline's own commit (the last commit
that wrote the baseline) in a worktree of its own, in this environment and in the same run, and
compares with that (`side_by_side`); where that commit cannot be counted the gate fails under CI and
only warns elsewhere. Without valgrind the gate fails under CI (``CI=true``) and only warns elsewhere.

    python benchmarks/gate.py               # count every path and compare with the baseline (CI)
    python benchmarks/gate.py --update      # count every path and record the baseline again
    python benchmarks/gate.py --repeat 5    # count five times: each path's spread over the runs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import harness
from harness import IDLE, Step

BASELINE = harness.HERE / "data" / "gate.json"
MARGIN = 0.05
"""A path fails past 5% above its baseline; the counts repeat to well within that (``--repeat``)."""
CALLS = 200
"""Calls a path under callgrind (a turn of 8 calls counts an eighth as many turns)."""
UPDATE = "python benchmarks/gate.py --update"
"""The one command that records the baseline again (the failure message quotes it)."""
PATHS = {
    "admission": "Contract.prepare of a typical call (admission.py's medium/valid), per call",
    "rejected": "Contract.prepare of a rejected call (admission.py's medium/invalid), per call",
    "turn": "a turn of 8 mixed calls (4 sync, 4 async tools), OpenAI Chat, per turn",
    "validate": "one line of scopetool validate (validate.py's neutral line, admitted), per line",
    "gateway": "the gateway's own work on one tools/call (lean path, policy, deny list, audit log), per call",
    "import": "import scopetool in a fresh interpreter",
}
PACKAGES = ("pydantic", "pydantic-core", "jiter", "jsonschema-rs", "orjson", "docstring-parser", "mcp", "anyio")
"""The packages the paths run through: another version of one makes the recorded counts another machine's."""
IMPORT = "import os; os.getppid(); import scopetool; os.getppid()"
"""The import, between two dump markers: the second part of the process is the import alone."""


# -- the comparison ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One path's count against its baseline."""

    path: str
    baseline: float | None
    count: float | None
    margin: float = MARGIN

    @property
    def change(self) -> float | None:
        """The change from the baseline, as a fraction of it (None when either is missing)."""
        if self.baseline is None or self.count is None:
            return None
        return self.count / self.baseline - 1

    @property
    def slower(self) -> bool:
        """Whether the path costs more than the margin above its baseline: a failure."""
        change = self.change
        return change is not None and change > self.margin

    @property
    def cheaper(self) -> bool:
        """Whether the path costs less than the margin below its baseline: record the baseline again."""
        change = self.change
        return change is not None and change < -self.margin

    def line(self) -> str:
        """The verdict in one line."""
        if self.count is None:
            return f"{self.path}: in the baseline, no longer counted: record the baseline again ({UPDATE})"
        if self.baseline is None:
            return f"{self.path}: {self.count:,.0f} instructions, no baseline yet: record it ({UPDATE})"
        change = f"{self.count:,.0f} against {self.baseline:,.0f} ({self.change:+.1%})"
        if self.slower:
            return (
                f"FAILED {self.path}: {change}, more than {self.margin:.0%} above the baseline. If the cost is "
                f"deliberate, record the baseline again ({UPDATE}) in the same commit and say why in the CHANGELOG."
            )
        if self.cheaper:
            return f"{self.path}: {change}, cheaper by more than {self.margin:.0%}: record the baseline ({UPDATE})"
        return f"{self.path}: {change}, within {self.margin:.0%}"


def compare(baseline: Mapping[str, float], counts: Mapping[str, float], margin: float = MARGIN) -> list[Verdict]:
    """Every path's verdict: those of the baseline first, in its order, then the new ones."""
    paths = list(dict.fromkeys([*baseline, *counts]))
    return [Verdict(path, baseline.get(path), counts.get(path), margin) for path in paths]


def environment() -> dict[str, Any]:
    """What the counts depend on besides the code: the interpreter, the platform, the prepare path, the packages."""
    from scopetool._contract import SPEEDUPS

    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": f"{platform.system()} {platform.machine()}",
        "prepare": "C" if SPEEDUPS else "pure Python",
        "packages": found,
    }


def differences(recorded: Mapping[str, Any], here: Mapping[str, Any]) -> list[str]:
    """What differs between the baseline's environment and this one, one phrase each (empty: the same)."""
    found = [
        f"{key}: {recorded.get(key)} there, {here[key]} here"
        for key in ("python", "platform", "prepare")
        if recorded.get(key) != here[key]
    ]
    packages, theirs = here["packages"], recorded.get("packages", {})
    found += [
        f"{name} {theirs.get(name) or 'absent'} there, {packages.get(name) or 'absent'} here"
        for name in dict.fromkeys([*theirs, *packages])
        if theirs.get(name) != packages.get(name)
    ]
    return found


# -- the paths -----------------------------------------------------------------------------------------


def _admission(count: int) -> list[Step]:
    from admission import CASES, scopetool_prepare

    found: list[Step] = []
    for path, case in (("admission", "medium/valid"), ("rejected", "medium/invalid")):
        _, fn, raw = next(entry for entry in CASES if entry[0] == case)
        found += [
            Step(path, IDLE, harness.calls(lambda _: None, raw), count),
            Step(path, "count", harness.calls(scopetool_prepare(fn, raw), raw), count),
        ]
    return found


def mixed_turn() -> Callable[[], Any]:
    """The turn: an OpenAI Chat assistant message of 8 calls, sync and async tools in turn, to its 8 results."""
    from turn import async_add, sync_add

    from scopetool import Effect, Registry, tool
    from scopetool.providers import openai_chat, run_call

    registry = Registry(
        tool(name="add", effect=Effect.SAFE)(sync_add), tool(name="add_async", effect=Effect.SAFE)(async_add)
    )
    payload = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{k}",
                "type": "function",
                "function": {"name": "add" if k % 2 else "add_async", "arguments": f'{{"a": {k}, "b": 3}}'},
            }
            for k in range(8)
        ],
    }
    parse, answer = openai_chat.parse_tool_calls, openai_chat.result_message

    async def turn() -> list[dict[str, Any]]:
        calls = parse(payload)
        outcomes = await asyncio.gather(*(run_call(registry, call) for call in calls))
        return [answer(call, outcome) for call, outcome in zip(calls, outcomes, strict=True)]

    answers = asyncio.run(turn())
    if [a["content"] for a in answers] != [str(k + 3) for k in range(8)]:
        raise SystemExit(f"gate.py: the mixed turn answered {answers!r}")
    return turn


def _turn(count: int, loop: asyncio.AbstractEventLoop) -> list[Step]:
    turns = max(1, count // 8)
    return [
        Step("turn", IDLE, harness.awaits(harness.nothing, loop), turns),
        Step("turn", "count", harness.awaits(mixed_turn(), loop), turns),
    ]


def _validate(count: int) -> list[Step]:
    import io

    from validate import add, cases

    from scopetool import Registry
    from scopetool.cli._validate_lines import LineChecker, validate_lines

    line = cases(1)[0][1][0]
    lines = [line] * count
    checker = LineChecker(Registry(add))

    def run(times: int) -> int:
        tally = validate_lines(lines[:times], checker, io.StringIO())
        if tally.admitted != times:
            raise SystemExit(f"gate.py: validate admitted {tally.admitted} of {times} lines")
        return 0  # counted, not timed

    return [Step("validate", "count", run, count)]


GATEWAY_TOOLS = '''
from scopetool import Registry, tool


@tool
def echo(message: str) -> str:
    """Say the message back."""
    return message


registry = Registry(echo)
'''
POLICY = "def allow(authorization):\n    return True\n"
_OPEN: list[Any] = []


class _Wire:
    """The lean server's connection, in memory: no reader (lines are handed in), every answer kept."""

    reader = None

    def __init__(self) -> None:
        self.written: list[bytes] = []

    async def write(self, data: bytes) -> None:
        self.written.append(data)
        if len(self.written) > 64:
            del self.written[:-1]


def gateway_call(loop: asyncio.AbstractEventLoop, folder: Path) -> Callable[[], Any]:
    """One ``tools/call`` through the gateway's stdio server (lean path), the gateway opened on `loop`."""
    from scopetool.mcp._gateway_config import parse_config
    from scopetool.mcp._lean_server import _Front  # pyright: ignore[reportPrivateUsage]
    from scopetool.mcp._tool_handlers import server_and_tools
    from scopetool.mcp.gateway import open_gateway

    (folder / "tools.py").write_text(GATEWAY_TOOLS)
    (folder / "policy.py").write_text(POLICY)
    config = parse_config(
        {
            "scopetool": {"tools": ["tools.py:registry"], "policy": "policy.py:allow", "deny": ["get-env"]},
            "gateway": {"audit": "audit.jsonl"},
        },
        base=folder,
    )
    opening = open_gateway(config, errlog=open(os.devnull, "w"))  # noqa: SIM115 - open while the process runs
    _OPEN.append(opening)  # never exited: the gateway serves until the process ends
    gateway = loop.run_until_complete(opening.__aenter__())
    server, tools = server_and_tools(
        gateway.registry, on_call=gateway.observe, visible=gateway.allows, limiter=gateway.limiter
    )
    wire = _Wire()
    front = _Front(server, tools, wire, 1.0)  # type: ignore[arg-type]
    front._version = "2025-11-25"  # the handshake done: tools/call takes the lean path
    line = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"ping"}}}'
    calls = front._calls

    async def call() -> None:
        if not front._lean(line):
            raise SystemExit("gate.py: the gateway's call did not take the lean path")
        await calls[7]

    loop.run_until_complete(call())
    if b'"text":"ping"' not in wire.written[-1] or b'"isError":false' not in wire.written[-1]:
        raise SystemExit(f"gate.py: the gateway answered {wire.written[-1]!r}")
    return call


def _gateway(count: int, loop: asyncio.AbstractEventLoop) -> list[Step]:
    folder = Path(tempfile.mkdtemp(prefix="scopetool-gate-"))
    return [
        Step("gateway", IDLE, harness.awaits(harness.nothing, loop), count),
        Step("gateway", "count", harness.awaits(gateway_call(loop, folder), loop), count),
    ]


def steps(count: int) -> list[Step]:
    """Under callgrind: every path but the import, `count` calls each (a turn of 8, an eighth as many)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return [*_admission(count), *_turn(count, loop), *_validate(count), *_gateway(count, loop)]


def import_count() -> float:
    """The instructions of ``import scopetool`` in a fresh interpreter (its bytecode written by an import before)."""
    subprocess.run([sys.executable, "-c", "import scopetool"], cwd=harness.ROOT, check=True)
    return float(harness.callgrind(["-c", IMPORT], harness.ROOT, lambda _: 3)[1])


def count(calls: int) -> dict[str, float]:
    """Every path's instructions (per call, per turn, per line; the import whole), in `PATHS` order."""
    counted = {path: sides["count"] for path, sides in harness.instructions(__file__, calls).items()}
    counted["import"] = import_count()
    return {path: round(counted[path], 1) for path in PATHS}


# -- the baseline's commit, counted here ----------------------------------------------------------------


def baseline_commit() -> str | None:
    """The last commit that wrote the baseline, or None (not a git checkout, or never committed)."""
    done = subprocess.run(
        ["git", "log", "-1", "--format=%H", "--", str(BASELINE.relative_to(harness.ROOT))],
        cwd=harness.ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or None


def side_by_side(commit: str, calls: int) -> tuple[dict[str, float], dict[str, Any]]:
    """The counts and environment of `commit`'s own gate, run here: a detached worktree, its C extension built.

    Raises:
        SystemExit: the worktree, the build or the count failed (its last lines said).
    """
    with tempfile.TemporaryDirectory(prefix="scopetool-gate-") as scratch:
        tree = Path(scratch) / "tree"

        def run(command: list[str], cwd: Path, **env: str) -> str:
            done = subprocess.run(
                command, cwd=cwd, capture_output=True, text=True, check=False, env={**os.environ, **env}
            )
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                raise SystemExit(f"gate.py: {' '.join(command)} failed in {cwd}: {tail}")
            return done.stdout

        run(["git", "worktree", "add", "--detach", "--quiet", str(tree), commit], harness.ROOT)
        try:
            run([sys.executable, "setup.py", "build_ext", "--inplace", "--quiet"], tree)
            out = run(
                [sys.executable, "benchmarks/gate.py", "--json", "--calls", str(calls)], tree, PYTHONPATH=str(tree)
            )
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=harness.ROOT, check=False)
    found = json.loads(out.strip().splitlines()[-1])
    return found["counts"], found["environment"]


# -- the command ----------------------------------------------------------------------------------------


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _spread(runs: list[dict[str, float]]) -> list[str]:
    """Each path's least and most count over the runs, and the spread as a fraction of the least."""
    lines = ["| path | least | most | spread |", "|---|---:|---:|---:|"]
    for path in runs[0]:
        values = [run[path] for run in runs]
        low, high = min(values), max(values)
        lines.append(f"| {path} | {low:,.0f} | {high:,.0f} | {(high - low) / low:.3%} |")
    return lines


def record(counts: Mapping[str, float], calls: int) -> None:
    """Write the baseline: the counts, how they were taken, and the environment they hold for."""
    data = {
        "about": "benchmarks/gate.py's baseline: instructions (callgrind) per call of each hot path. Record it again "
        f"with `{UPDATE}` (a deliberate cost: in the same commit, with a sentence in the CHANGELOG).",
        "margin": MARGIN,
        "calls": calls,
        "environment": environment(),
        "paths": PATHS,
        "counts": dict(counts),
    }
    BASELINE.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def gate(calls: int) -> int:
    """Compare this code's counts with the baseline's (see the module docstring); the exit status."""
    saved = json.loads(BASELINE.read_text(encoding="utf-8"))
    margin, here = float(saved["margin"]), environment()
    baseline: dict[str, float] = saved["counts"]
    changed = differences(saved["environment"], here)
    if changed:
        print(f"gate: this environment is not the baseline's ({'; '.join(changed)}): its counts do not hold here.")
        commit = baseline_commit()
        try:
            if commit is None:
                raise SystemExit(f"gate.py: {BASELINE.name} has no commit to count here")
            print(f"gate: counting the baseline's commit {commit[:12]} here, side by side")
            baseline, theirs = side_by_side(commit, calls)
            still = differences(theirs, here)
            if still:
                raise SystemExit(f"gate.py: the baseline's commit counted in another environment: {'; '.join(still)}")
        except SystemExit as error:
            if _in_ci():
                print(f"{error}\ngate: FAILED: no baseline holds here; record one in this environment ({UPDATE})")
                return 1
            print(f"{error}\ngate: not compared (outside CI this only warns)")
            return 0
    verdicts = compare(baseline, count(calls), margin)
    for verdict in verdicts:
        print(verdict.line())
    failed = [verdict.path for verdict in verdicts if verdict.slower]
    if failed:
        print(f"gate: FAILED: {', '.join(failed)} slower than the baseline by more than {margin:.0%}")
        return 1
    print(f"gate: passed ({len(verdicts)} paths within {margin:.0%} or cheaper)")
    return 0


def main() -> None:
    """Count, then compare (or record, or show the spread); exit 1 when a path got slower past the margin."""

    def flags(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--update", action="store_true", help=f"record the baseline again ({BASELINE.name})")
        parser.add_argument("--repeat", type=int, help="count this many times and show each path's spread")
        parser.add_argument("--json", action="store_true", help="print the counts and the environment as JSON")

    options = harness.parse(__doc__, full=harness.Plan(calls=CALLS), steps=steps, flags=flags)
    args = options.args
    if not harness.can_count():
        print("gate: valgrind is not installed, so no hot path was counted")
        if _in_ci():
            print("gate: FAILED: CI must count them (apt-get install valgrind)")
            raise SystemExit(1)
        return
    if args.repeat:
        runs = [count(options.calls) for _ in range(args.repeat)]
        print("\n".join([f"{args.repeat} runs, {options.calls} calls a path:", *_spread(runs)]))
        return
    if args.json:
        print(json.dumps({"counts": count(options.calls), "environment": environment()}))
        return
    if args.update:
        counts = count(options.calls)
        record(counts, options.calls)
        print("\n".join(f"{path}: {value:,.0f}" for path, value in counts.items()))
        print(f"wrote {BASELINE.relative_to(harness.ROOT)}: commit it with the change, and say why in the CHANGELOG")
        return
    raise SystemExit(gate(options.calls))


if __name__ == "__main__":
    main()
