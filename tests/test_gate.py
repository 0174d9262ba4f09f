"""The regression gate's comparison (`benchmarks/gate.py`): what fails, what is only reported, what differs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import gate  # noqa: E402 - a benchmark script, found on the path just set

sys.path.remove(str(BENCHMARKS))  # the benchmarks' own modules (limits.py) must not shadow packages elsewhere

BASELINE = {"admission": 30_000.0, "turn": 1_000_000.0}


def test_a_path_six_percent_dearer_fails_and_is_named_with_its_figures() -> None:
    """6% over the 5% margin: a failure naming the path, the baseline, the count, the change and the command."""
    verdicts = gate.compare(BASELINE, {"admission": 31_800.0, "turn": 1_000_000.0})
    failed = [verdict for verdict in verdicts if verdict.slower]
    assert [verdict.path for verdict in failed] == ["admission"]
    line = failed[0].line()
    assert line.startswith("FAILED admission: 31,800 against 30,000 (+6.0%)")
    assert gate.UPDATE in line


def test_a_path_within_the_margin_passes_either_way() -> None:
    """4.9% dearer and 4.9% cheaper are both within the margin: neither fails nor asks for a new baseline."""
    verdicts = gate.compare(BASELINE, {"admission": 31_470.0, "turn": 951_000.0})
    assert not any(verdict.slower or verdict.cheaper for verdict in verdicts)
    assert "within 5%" in verdicts[0].line()


def test_a_path_cheaper_past_the_margin_is_reported_not_failed() -> None:
    """10% cheaper: not a failure, but the advice to record the baseline again."""
    (verdict,) = gate.compare({"turn": 1_000_000.0}, {"turn": 900_000.0})
    assert verdict.cheaper and not verdict.slower
    assert "cheaper by more than 5%" in verdict.line()
    assert gate.UPDATE in verdict.line()


def test_a_new_path_and_a_gone_one_are_said_and_do_not_fail() -> None:
    """A path without baseline, and a baseline without path: each said, neither a failure."""
    verdicts = gate.compare({"gone": 1.0}, {"new": 2.0})
    assert [(verdict.path, verdict.slower) for verdict in verdicts] == [("gone", False), ("new", False)]
    assert "no longer counted" in verdicts[0].line()
    assert "no baseline yet" in verdicts[1].line()


def test_another_environment_is_named_package_by_package() -> None:
    """Another Python and another pydantic-core are each named; the same environment has no difference."""
    here = gate.environment()
    assert gate.differences(here, here) == []
    there = {**here, "python": "CPython 3.99.0", "packages": {**here["packages"], "pydantic-core": "0.0.1"}}
    found = gate.differences(there, here)
    assert found[0] == f"python: CPython 3.99.0 there, {here['python']} here"
    assert found[1].startswith("pydantic-core 0.0.1 there")


def test_the_committed_baseline_holds_every_path_and_its_environment() -> None:
    """benchmarks/data/gate.json records a count for every path, the margin, and what they depend on."""
    saved = json.loads(gate.BASELINE.read_text(encoding="utf-8"))
    assert list(saved["counts"]) == list(gate.PATHS)
    assert saved["margin"] == gate.MARGIN
    assert set(saved["environment"]) == {"python", "platform", "prepare", "packages"}
    assert set(saved["environment"]["packages"]) == set(gate.PACKAGES)


def test_without_valgrind_the_gate_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """CI=true and no valgrind: exit 1 (outside CI the same run only warns, exit 0)."""
    monkeypatch.setattr(gate.harness, "can_count", lambda: False)
    monkeypatch.setattr(sys, "argv", ["gate.py"])
    monkeypatch.setenv("CI", "true")
    with pytest.raises(SystemExit) as ended:
        gate.main()
    assert ended.value.code == 1
    monkeypatch.setenv("CI", "")
    gate.main()  # returns: only a warning
