"""Where scopetool uses orjson, and where it does not: each JSON job timed scopetool's way and orjson's.

The jobs of a tool turn and its records, on the valid documents of `admission.py` (small, medium, large):

- parsed arguments to JSON text (Anthropic's ``input``, Gemini's ``args``, MCP's ``arguments``...): the
  standard library's encoder (what scopetool used before), ``orjson.dumps`` alone, and scopetool's
  ``object_arguments`` (orjson, with the standard library's refusals kept);
- reading a logged line (``scopetool validate``): jiter with repeated member names caught, which
  I-JSON needs, against ``orjson.loads``, whose last repeated member wins;
- a tool's return value to its result's JSON details: pydantic-core's serializer for the declared type
  (what `@tool` uses) against ``orjson.dumps`` (of ``model_dump()`` for a model);
- a Driver record of a completed call (the DBOS backend): DBOS's portable JSON serializer, which DBOS
  applies itself, against ``orjson.dumps`` (skipped without dbos).

    python benchmarks/orjson_use.py           # full run
    python benchmarks/orjson_use.py --quick   # a smoke run (CI)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import harness
import jiter
import orjson
from admission import CASES
from harness import calls
from pydantic import BaseModel, TypeAdapter

from scopetool import Output, Result
from scopetool.driver._records import outcome_record
from scopetool.providers._common import object_arguments

_STANDARD = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
"""The standard library's encoder, as scopetool made it once for parsed arguments before orjson."""


class Order(BaseModel):
    """A tool's structured return value."""

    id: str
    lines: list[dict[str, int]]
    total: float
    paid: bool


_ORDER = Order(id="ord-7", lines=[{"sku": i, "qty": i % 5 + 1} for i in range(12)], total=129.5, paid=True)


def _documents() -> list[tuple[str, dict[str, Any]]]:
    """The valid documents of the admission benchmark, parsed: (size, arguments)."""
    return [(name.split("/")[0], json.loads(raw)) for name, _, raw in CASES if name.endswith("/valid")]


def _record() -> dict[str, Any]:
    """The record the DBOS backend stores of a call that completed with JSON details."""
    return outcome_record("add", Result(output=Output(details=b'{"sum":42}')))


def _dbos_serializer() -> Callable[[Any], str] | None:
    try:
        from dbos._serialization import DBOSPortableJSONSerializer
    except ImportError:
        return None
    return DBOSPortableJSONSerializer().serialize


Job = tuple[str, str, str, Callable[[Any], Any], Any, Callable[[Any], Any], Any]
"""(job, case, scopetool's way, its runner, its argument, orjson's runner, its argument)."""

WHY: dict[str, str] = {
    "parsed arguments to JSON text": "orjson is used: `object_arguments` is orjson's text with the standard "
    "library's refusals kept (NaN, infinities, values JSON has no form for); its row against orjson's is what "
    "those checks cost",
    "reading a logged line": "orjson is not used: it keeps the last of a repeated member name, which I-JSON "
    "refuses and jiter reports",
    "a return value to its result's details": "orjson is not used: pydantic-core's serializer writes the "
    "declared type as the output schema advertises it (a model's aliases, dates, enums and its own "
    "serializers), which orjson does not know",
    "a Driver record (DBOS)": "orjson is not used: DBOS serializes its records itself, and a call on DBOS "
    "costs milliseconds of database writes (`docs/driver.md`) against these microseconds",
}
"""Why scopetool uses orjson for a job or not, by job."""


def jobs() -> tuple[list[Job], list[str]]:
    """Every job timed, and notes on those skipped."""
    found: list[Job] = []
    notes: list[str] = []
    for size, arguments in _documents():
        found.append(
            (
                "parsed arguments to JSON text",
                size,
                "json.JSONEncoder (before)",
                _STANDARD,
                arguments,
                orjson.dumps,
                arguments,
            )
        )
        found.append(
            (
                "parsed arguments to JSON text",
                size,
                "object_arguments (now)",
                lambda value: object_arguments(value, "benchmark"),
                arguments,
                orjson.dumps,
                arguments,
            )
        )
    for size, arguments in _documents():
        line = json.dumps({"name": "tool", "arguments": arguments}).encode()
        found.append(
            (
                "reading a logged line",
                size,
                "jiter, repeated names caught",
                lambda data: jiter.from_json(data, catch_duplicate_keys=True),
                line,
                orjson.loads,
                line,
            )
        )
    for case, declared, value, plain in (
        ("an int", int, 42, 42),
        ("a dict[str, int]", dict[str, int], {"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3}),
        ("a pydantic model", Order, _ORDER, None),
    ):
        adapter: TypeAdapter[Any] = TypeAdapter(declared)
        serializer = adapter.serializer.to_json
        orjson_side: Callable[[Any], Any] = (
            orjson.dumps if plain is not None else (lambda m: orjson.dumps(m.model_dump()))
        )
        found.append(
            (
                "a return value to its result's details",
                case,
                "pydantic-core, the declared type",
                serializer,
                value,
                orjson_side,
                value,
            )
        )
    record, dbos = _record(), _dbos_serializer()
    if dbos is not None:
        found.append(
            (
                "a Driver record (DBOS)",
                "a completed call",
                "DBOS's portable JSON",
                dbos,
                record,
                orjson.dumps,
                record,
            )
        )
    else:
        notes.append("the DBOS record row was skipped: dbos is not installed (pip install 'scopetool[dbos]')")
    return found, notes


def measure(rounds: int, target: float) -> dict[str, Any]:
    """Median ns per call of scopetool's way and orjson's for every job, JSON-ready."""
    found, notes = jobs()
    rows: list[dict[str, Any]] = []
    for job, case, way, ours, our_argument, theirs, their_argument in found:
        medians = harness.medians(
            {"ours": calls(ours, our_argument), "orjson": calls(theirs, their_argument)}, rounds, target
        )
        rows.append(
            {
                "job": job,
                "case": case,
                "way": way,
                "ours_ns": medians["ours"],
                "orjson_ns": medians["orjson"],
                "used": WHY[job].startswith("orjson is used"),
            }
        )
    return {"rounds": rounds, "rows": rows, "notes": notes}


def table(figures: dict[str, Any]) -> list[str]:
    """Markdown: every job, scopetool's way against orjson's, and whether scopetool uses orjson for it."""
    lines = [
        "| job | case | scopetool's way | its ns | orjson's ns | orjson / its | orjson used |",
        "|---|---|---|---:|---:|---:|:---:|",
    ]
    lines.extend(
        f"| {row['job']} | {row['case']} | {row['way']} | {row['ours_ns']:.0f} | {row['orjson_ns']:.0f} | "
        f"{row['orjson_ns'] / row['ours_ns']:.2f}x | {'yes' if row['used'] else 'no'} |"
        for row in figures["rows"]
    )
    lines.append("")
    lines.extend(f"- {job}: {WHY[job]}." for job in dict.fromkeys(row["job"] for row in figures["rows"]))
    lines += [f"\n{note}" for note in figures["notes"]]
    return lines


def report(options: harness.Options) -> str:
    """How it was run, then the table."""
    figures = measure(options.rounds, options.target)
    how = harness.timing(options)
    return "\n".join(
        [harness.header(options, "orjson", "jiter", "pydantic-core", "dbos", how=how), "", *table(figures)]
    )


def main() -> None:
    """Time every job and print the table."""
    harness.run(__doc__, report)


if __name__ == "__main__":
    main()
