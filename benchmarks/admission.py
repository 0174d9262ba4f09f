"""Admission cost: `Contract.prepare` against a bare pydantic-core `validate_json` of the same bytes.

The bare validator is the floor: a typed-dict validator equivalent to the tool's parameters, strict,
extra members forbidden, with nothing else (no size cap, no duplicate-key check, no identity, no
Invocation). Each case runs valid and invalid arguments of three sizes. Timing: batches sized to
``--target`` seconds, run round-robin over ``--rounds`` rounds so machine noise hits every runner
alike; the median ns per call is reported with its ratio to the bare validator.

    python benchmarks/admission.py            # full run
    python benchmarks/admission.py --quick    # a smoke run (CI)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic_core import SchemaValidator, core_schema

from scopetool import Request, bind, tool


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class DateRange(BaseModel):
    start: str
    end: str | None = None


class SearchFilters(BaseModel):
    owner: str | None = None
    min_stars: int = 0
    created: DateRange | None = None


def search(
    query: str,
    tags: list[str],
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    language: str | None = None,
    sort: Literal["relevance", "date", "stars"] = "relevance",
    include_archived: bool = False,
    filters: SearchFilters | None = None,
    page: Annotated[int, Field(ge=1)] = 1,
) -> str:
    """Search code repositories."""
    return "ok"


class Address(BaseModel):
    street: str
    city: str
    country: str
    postcode: str


class Customer(BaseModel):
    id: int
    name: str
    email: str
    address: Address


class LineItem(BaseModel):
    sku: str
    name: str
    qty: Annotated[int, Field(ge=1)]
    unit_price: float
    tags: list[str] = []
    gift: bool = False


def submit_order(
    order_id: str,
    customer: Customer,
    items: list[LineItem],
    notes: str | None = None,
    priority: Literal["low", "normal", "high"] = "normal",
) -> str:
    """Submit an order with its line items."""
    return "ok"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


_MEDIUM = {
    "query": "vector database written in rust",
    "tags": ["db", "rust", "simd"],
    "limit": 25,
    "language": "en",
    "sort": "stars",
    "include_archived": False,
    "filters": {"owner": "acme", "min_stars": 100, "created": {"start": "2023-01-01", "end": "2024-06-30"}},
    "page": 2,
}
_ITEMS = [
    {
        "sku": f"SKU-{i:05d}",
        "name": f"Widget model {i}",
        "qty": 1 + i % 7,
        "unit_price": round(3.5 + i * 1.25, 2),
        "tags": ["red", "sale"] if i % 2 else ["blue"],
        "gift": i % 5 == 0,
    }
    for i in range(50)
]
_LARGE = {
    "order_id": "ORD-2024-000123",
    "customer": {
        "id": 4242,
        "name": "Ada Lovelace",
        "email": "ada@example.com",
        "address": {"street": "12 Analytical Way", "city": "London", "country": "GB", "postcode": "N1 9GU"},
    },
    "items": _ITEMS,
    "notes": "leave at the door",
    "priority": "high",
}
_BAD_ITEMS = [dict(item) for item in _ITEMS]
_BAD_ITEMS[37]["qty"] = "three"

CASES: list[tuple[str, Callable[..., Any], str]] = [
    ("small/valid", add, _dumps({"a": 17, "b": 25})),
    ("small/invalid", add, _dumps({"a": 17, "b": "twenty-five"})),
    ("medium/valid", search, _dumps(_MEDIUM)),
    ("medium/invalid", search, _dumps({**_MEDIUM, "limit": "twenty-five"})),
    ("large/valid", submit_order, _dumps(_LARGE)),
    ("large/invalid", submit_order, _dumps({**_LARGE, "items": _BAD_ITEMS})),
]


def bare_validator(fn: Callable[..., Any], raw: str) -> Callable[[str], Any]:
    """A typed-dict validator equivalent to `fn`'s parameters: strict, extra forbidden, nothing more."""
    import inspect
    import typing

    hints = typing.get_type_hints(fn, include_extras=True)
    fields = {
        name: (hints[name], ... if p.default is inspect.Parameter.empty else p.default)
        for name, p in inspect.signature(fn).parameters.items()
    }
    model = create_model(f"{fn.__name__}_bare", __config__=ConfigDict(extra="forbid"), **fields)
    schema: Any = model.__pydantic_core_schema__
    definitions = None
    if schema["type"] == "definitions":
        definitions, schema = schema["definitions"], schema["schema"]
    typed = core_schema.typed_dict_schema(
        {
            key: core_schema.typed_dict_field(field["schema"], required=field["schema"]["type"] != "default")
            for key, field in schema["schema"]["fields"].items()
        },
        extra_behavior="forbid",
    )
    if definitions:
        typed = core_schema.definitions_schema(typed, definitions)
    validate = SchemaValidator(typed).validate_json

    def run(raw: str) -> Any:
        return validate(raw, strict=True)

    return run


def scopetool_prepare(fn: Callable[..., Any], raw: str) -> Callable[[str], Any]:
    """`Contract.prepare` of `fn` made a tool; the request is built outside the timed call."""
    prepare = bind(tool(fn)).contract.prepare
    request = Request(name=fn.__name__, arguments=raw)

    def run(_: str) -> Any:
        return prepare(request)

    return run


RUNNERS = {"bare": bare_validator, "scopetool": scopetool_prepare}


def _batch(run: Callable[[str], Any], raw: str, count: int) -> int:
    clock = time.perf_counter_ns
    start = clock()
    for _ in range(count):
        try:
            run(raw)
        except Exception:
            continue
    return clock() - start


def _calibrate(run: Callable[[str], Any], raw: str, target: float) -> int:
    count = 16
    while True:
        elapsed = _batch(run, raw, count)
        if elapsed > 20_000_000 or count > 1 << 22:
            return max(1, int(count * target * 1e9 / elapsed))
        count *= 4


def measure(rounds: int, target: float) -> list[dict[str, Any]]:
    """Median ns per call of every runner on every case, over interleaved rounds."""
    rows = []
    for name, fn, raw in CASES:
        runners = {label: make(fn, raw) for label, make in RUNNERS.items()}
        for run in runners.values():  # warm up
            _batch(run, raw, 50)
        counts = {label: _calibrate(run, raw, target) for label, run in runners.items()}
        samples: dict[str, list[float]] = {label: [] for label in runners}
        for _ in range(rounds):
            for label, run in runners.items():
                samples[label].append(_batch(run, raw, counts[label]) / counts[label])
        medians = {label: statistics.median(values) for label, values in samples.items()}
        rows.append({"case": name, "bytes": len(raw), **medians, "ratio": medians["scopetool"] / medians["bare"]})
    return rows


def report(rounds: int, target: float) -> str:
    """The benchmark's Markdown report: how it was run, then one row per case."""
    versions = " ".join(f"{p}=={metadata.version(p)}" for p in ("scopetool", "pydantic", "pydantic-core", "jiter"))
    lines = [
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; {versions}.",
        f"Command: `python benchmarks/admission.py --rounds {rounds} --target {target}`; median ns per call over "
        f"{rounds} interleaved rounds.",
        "",
        "| case | bytes | bare validate_json (ns) | Contract.prepare (ns) | prepare / bare |",
        "|---|---:|---:|---:|---:|",
    ]
    lines.extend(
        f"| {row['case']} | {row['bytes']} | {row['bare']:.0f} | {row['scopetool']:.0f} | {row['ratio']:.2f}x |"
        for row in measure(rounds, target)
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run the benchmark, print its report and, with --write, save it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--target", type=float, default=0.1, help="seconds per batch")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 0.01 s batches: checks that it runs")
    parser.add_argument("--write", metavar="PATH", help="also write the report (Markdown) to PATH")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.target = 3, 0.01
    text = report(args.rounds, args.target)
    print(text, end="")
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
