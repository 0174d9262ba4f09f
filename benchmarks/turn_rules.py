"""Admission with turn rules on beside admission without them: `prepare`, then `Tally.admit` (--help's line).

Each runner admits a 15-byte call of ``add(a: int, b: int)``: ``prepare`` alone, then ``prepare``
and a tally's ``admit`` with a per-tool budget, and with a budget and repeat refusal (each call's
arguments differ, so every call is granted and digested, the dearest case). The tally's budget is set
past the calls made. Timing: `harness.medians`; instructions per call under callgrind
(`harness.instructions`) where valgrind is installed, with the ratio to ``prepare`` alone.

    python benchmarks/turn_rules.py            # full run, printed (--no-docs is implied: no page yet)
    python benchmarks/turn_rules.py --quick    # a smoke run
"""

from __future__ import annotations

import itertools

import harness
from harness import IDLE, Step, calls

from scopetool import Request, TurnRules, bind, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


PREPARE = bind(add).contract.prepare
BIG = 10**12
_counter = itertools.count()


def _admit(rules: TurnRules):  # type: ignore[no-untyped-def]
    tally = rules.tally()
    admit = tally.admit

    def run(_: object) -> object:
        return admit(PREPARE(Request(name="add", arguments=f'{{"a": {next(_counter)}, "b": 2}}')))

    return run


RUNNERS = {
    "prepare (rules off)": calls(
        lambda _: PREPARE(Request(name="add", arguments=f'{{"a": {next(_counter)}, "b": 2}}')), None
    ),
    "prepare + admit (per-tool budget)": calls(_admit(TurnRules(per_tool=BIG)), None),
    "prepare + admit (budget and repeats)": calls(_admit(TurnRules(per_tool=BIG, refuse_repeats=True)), None),
}


def steps(count: int) -> list[Step]:
    return [Step("rules", side, run, count) for side, run in {IDLE: calls(lambda _: None, None), **RUNNERS}.items()]


def report(options: harness.Options) -> str:
    ns = harness.medians(RUNNERS, options.rounds, options.target)
    counted = harness.instructions(__file__, options.calls)["rules"] if options.count else {}
    base = counted.get("prepare (rules off)", 0)
    how = f"{harness.timing(options)} {harness.counting(options)}"
    lines = [harness.header(options, "pydantic-core", how=how), "", "| admission | ns | instructions | x off |"]
    lines.append("|---|---:|---:|---:|")
    for label in RUNNERS:
        count = counted.get(label, 0)
        ratio = f"{count / base:.2f}" if base else "-"
        lines.append(f"| {label} | {ns[label]:.0f} | {count:,.0f} | {ratio} |")
    return "\n".join(lines)


if __name__ == "__main__":
    harness.run(__doc__, report, None, steps=steps)
