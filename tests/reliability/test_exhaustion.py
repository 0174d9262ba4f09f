"""Resource exhaustion: every 1 MiB hostile input is admitted or rejected in bounded time and memory.

The bounds here are loose on purpose (a slow CI machine must pass); `benchmarks/limits.py` measures the
real figures, case by case, into docs/reliability-limits.md.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from scopetool import MAX_INPUT_BYTES, InvalidInvocationError, Request
from scopetool._rejection import MAX_REJECTION_CHARS

from ._support import message_of, prepare


def _load_limits() -> Any:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "limits.py"
    spec = importlib.util.spec_from_file_location("scopetool_benchmark_limits", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


limits = _load_limits()
HOSTILE: dict[str, tuple[str, bytes]] = limits.hostile_inputs()
SUBJECTS = limits.subjects()

MAX_SECONDS = 30.0
"""Per case, under tracemalloc (which slows allocation-heavy paths several times over)."""
MAX_PYTHON_PEAK = 512 * 2**20
"""Per case: Python allocations may reach this (measured worst: see docs/reliability-limits.md)."""

# Every kind runs against the contracts where it reaches a different code path; the costly error
# paths run once each, on the contract where they cost most, to keep the suite inside its time budget.
ALL = ("typed-any", "typed-model", "typed-lists", "raw-open", "raw-closed")
PLAN: dict[str, tuple[str, ...]] = {
    "depth/arrays": ALL,
    "depth/objects": ALL,
    "depth/unclosed": ALL,
    "keys/distinct": ("typed-any", "raw-closed"),
    "keys/duplicate": ALL,
    "keys/escaped-duplicate": ALL,
    "keys/top-level-unknown": ("typed-model", "raw-open"),
    "keys/long-name": ("typed-any", "raw-closed", "raw-open"),
    "items/zeros": ("typed-any", "raw-open"),
    "items/wrong-type": ("typed-model", "raw-closed"),
    "items/empty-objects": ("typed-any", "raw-closed"),
    "items/one-byte-wrong": ("typed-model", "typed-lists", "raw-closed"),
    "items/empty-arrays": ("typed-model", "typed-lists"),
    "items/nested-arrays": ("typed-model", "typed-lists"),
    "strings/long": ALL,
    "strings/escapes": ALL,
    "strings/surrogate-pairs": ("typed-any", "raw-open"),
    "strings/many-short": ("typed-any", "raw-open"),
    "numbers/300-digit": ALL,
    "numbers/4300-digit": ALL,
    "numbers/overflowing": ("typed-any", "raw-open"),
    "numbers/long-fractions": ALL,
    "numbers/in-float-member": ("typed-model", "raw-open"),
    "blank/spaces": ("typed-any", "typed-model"),
    "blank/unicode": ("typed-any", "raw-closed"),
}
CASES = [(kind, subject) for kind, subjects in PLAN.items() for subject in subjects]

EXPECTED = {
    "depth/arrays": "rejected",
    "depth/objects": "rejected",
    "depth/unclosed": "rejected",
    "keys/duplicate": "rejected",
    "keys/escaped-duplicate": "rejected",
    "numbers/overflowing": "rejected",
    "strings/long": {"typed-any": "admitted", "raw-open": "admitted"},
    "numbers/300-digit": {"typed-any": "admitted", "raw-open": "admitted"},
    "keys/top-level-unknown": {"typed-model": "rejected", "raw-open": "admitted"},
    "items/wrong-type": "rejected",
    "items/one-byte-wrong": "rejected",
    "items/empty-arrays": "rejected",
    "items/nested-arrays": "rejected",
    "blank/spaces": {"typed-any": "admitted", "typed-model": "rejected"},
}


def test_every_hostile_kind_is_planned_and_at_the_limit() -> None:
    """Every hostile kind of the benchmark is exercised here, each built within 64 bytes of 1 MiB."""
    assert set(PLAN) == set(HOSTILE)
    for kind, (_, data) in HOSTILE.items():
        assert MAX_INPUT_BYTES - 8192 <= len(data) <= MAX_INPUT_BYTES, kind


# The error paths that describe one problem per item or member: their memory grows linearly with the
# input, and tracing a full 1 MiB of them costs most of the suite's budget, so their memory is traced
# on a quarter of it (the full-size figures are in the generated report).
HEAVY = {
    ("items/wrong-type", "raw-closed"),
    ("items/wrong-type", "typed-model"),
    ("keys/top-level-unknown", "typed-model"),
    ("items/one-byte-wrong", "typed-model"),
    ("items/empty-arrays", "typed-model"),
    ("items/nested-arrays", "typed-model"),
}
QUARTER: dict[str, tuple[str, bytes]] = limits.hostile_inputs(MAX_INPUT_BYTES // 4)


@pytest.mark.parametrize(("kind", "subject"), CASES)
def test_hostile_input_is_bounded(kind: str, subject: str) -> None:
    """A 1 MiB hostile input is admitted or rejected (never another error) within loose time and memory bounds."""
    heavy = (kind, subject) in HEAVY
    # RecursionError or MemoryError would propagate out of run_one and fail the test.
    row = limits.run_one(SUBJECTS[subject], HOSTILE[kind][1], traced=not heavy)
    if heavy:
        quarter = limits.run_one(SUBJECTS[subject], QUARTER[kind][1])
        assert quarter["outcome"] == row["outcome"]
        assert quarter["python_peak"] < MAX_PYTHON_PEAK // 4
    assert row["outcome"] in ("admitted", "rejected")
    assert row["seconds"] < MAX_SECONDS
    assert row["python_peak"] < MAX_PYTHON_PEAK
    assert row["message"] <= MAX_REJECTION_CHARS
    expected = EXPECTED.get(kind)
    if isinstance(expected, dict):
        expected = expected.get(subject)
    if expected is not None:
        assert row["outcome"] == expected


@pytest.mark.parametrize("arguments", [b"{" + b" " * MAX_INPUT_BYTES + b"}", "{" + " " * MAX_INPUT_BYTES + "}"])
def test_one_byte_over_the_limit_is_rejected_before_parsing(arguments: str | bytes) -> None:
    """An argument document one byte over 1 MiB is rejected as too large, whatever it holds."""
    outcome = prepare(SUBJECTS["typed-any"], arguments)
    assert isinstance(outcome, InvalidInvocationError)
    assert "the limit is 1048576 bytes" in message_of(outcome)


def test_multibyte_text_is_measured_in_utf8_bytes() -> None:
    """Text under 1 Mi characters but over 1 MiB of UTF-8 is rejected as too large."""
    text = '{"payload":"' + "é" * (MAX_INPUT_BYTES // 2) + '"}'
    assert len(text) < MAX_INPUT_BYTES < len(text.encode())
    outcome = prepare(SUBJECTS["typed-any"], text)
    assert isinstance(outcome, InvalidInvocationError)
    assert "the limit is 1048576 bytes" in message_of(outcome)


@pytest.mark.parametrize("kind", ["bytes", "str"])
def test_huge_arguments_are_refused_at_once(kind: str) -> None:
    """64 MiB of arguments are refused in well under a second, holding at most one copy of them."""
    size = 64 * 2**20
    arguments: str | bytes = b"[" * size if kind == "bytes" else "[" * size
    contract = SUBJECTS["raw-closed"]
    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(InvalidInvocationError) as refused:
        contract.prepare(Request(name=contract.name, arguments=arguments))
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert "the limit is 1048576 bytes" in message_of(refused.value)  # refused by its size, before any parse
    assert peak <= size + 2**20
    assert elapsed < 10.0  # a bound on a hang, not a speed target


def test_deep_nesting_is_refused_without_recursion_error_even_near_the_stack_limit() -> None:
    """Admission from deep inside the caller's own recursion still rejects 1 MiB of nesting cleanly."""
    data = HOSTILE["depth/objects"][1]
    contract = SUBJECTS["typed-model"]

    def descend(levels: int) -> Any:
        if levels:
            return descend(levels - 1)
        return prepare(contract, data)

    outcome = descend(sys.getrecursionlimit() - 200)
    assert isinstance(outcome, InvalidInvocationError)


def test_rejection_memory_does_not_grow_with_the_number_of_problems() -> None:
    """64 KiB of wrong-type items is rejected within 4 MiB of Python memory (8 problems are shown)."""
    count = (64 * 1024) // len("true,")
    data = ('{"items":[' + ",".join(["true"] * count) + "]}").encode()
    row = limits.run_one(SUBJECTS["raw-closed"], data)
    assert row["outcome"] == "rejected"
    assert row["python_peak"] < 4 * 2**20, f"peak {row['python_peak'] / 2**20:.1f} MiB"


def test_wrong_items_in_a_parameter_list_cost_one_error_whatever_their_number() -> None:
    """1 MiB of one-byte wrong items in a list parameter is rejected within 8 MiB of Python memory."""
    row = limits.run_one(SUBJECTS["typed-lists"], HOSTILE["items/one-byte-wrong"][1])
    assert row["outcome"] == "rejected"
    assert row["python_peak"] < 8 * 2**20, f"peak {row['python_peak'] / 2**20:.1f} MiB"
