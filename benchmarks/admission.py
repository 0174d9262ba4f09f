"""Admission cost: `Contract.prepare` against a bare pydantic-core `validate_json` of the same bytes.

The bare validator is the floor: a typed-dict validator equivalent to the tool's parameters, strict,
extra members forbidden, with nothing else (no size cap, no duplicate-key check, no identity, no
Invocation). Each case runs valid and invalid arguments of three sizes; the median ns per call (timed
by `harness.medians`) is reported with its ratio to the bare validator. A second table times each
check of prepare on its own (`breakdown`), a third what a rejection costs (`rejections`).

    python benchmarks/admission.py            # full run: writes benchmarks/results.md
    python benchmarks/admission.py --quick    # a smoke run (CI)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

import harness
from harness import calls
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic_core import SchemaValidator, core_schema

from scopetool import Request, bind, tool
from scopetool._contract import SPEEDUPS, _prepare_python
from scopetool._json import may_hold_non_finite, syntax_problem


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
ADMISSION_PATH = (
    "prepare's common path in C (scopetool._speedups)"
    if SPEEDUPS
    else "prepare in pure Python (scopetool._speedups not built, or SCOPETOOL_PURE_PYTHON set)"
)


def interleaved_medians(
    runners: dict[str, tuple[Callable[[Any], Any], Any]], rounds: int, target: float
) -> dict[str, float]:
    """Median ns per call of each ``label: (run, argument)``, the runners taking turns in every round."""
    return harness.medians({label: calls(run, arg) for label, (run, arg) in runners.items()}, rounds, target)


def measure(rounds: int, target: float) -> list[dict[str, Any]]:
    """Median ns per call of every runner on every case, over interleaved rounds."""
    rows = []
    for name, fn, raw in CASES:
        medians = interleaved_medians({label: (make(fn, raw), raw) for label, make in RUNNERS.items()}, rounds, target)
        rows.append({"case": name, "bytes": len(raw), **medians, "ratio": medians["scopetool"] / medians["bare"]})
    return rows


# A string value that holds ":" (a time, a URL): the pure-Python member count alone then cannot rule out
# a duplicate, so it also counts the ":" inside the decoded value's strings (the C scan does not care).
COLON_IN_STRING = {
    "medium/valid": ('"vector database written in rust"', '"vector database: written in rust"'),
    "large/valid": ('"leave at the door"', '"leave at: the door"'),
}
BREAKDOWN = [
    ("bare", "bare pydantic-core validate_json (baseline)"),
    ("schema", "the contract's validator, as prepare calls it"),
    ("vouch", "C scan of the raw text: repeated names, NaN, inexact numbers (`_speedups.scan`)"),
    ("parse", "full I-JSON parse (duplicate keys): what the scan saves"),
    ("prepare", "Contract.prepare, everything"),
    ("rest", "the rest of prepare: type, name and size checks, the Invocation"),
    ("colon", "Contract.prepare, a string value holding ':'"),
    ("pure", "Contract.prepare in pure Python (no C extension)"),
    ("count", "pure Python: count ':' and the decoded members"),
    ("strings", "pure Python: ':' inside strings, counted in the decoded value (when ':' outnumber the members)"),
    ("scan", "pure Python: NaN/Infinity scan (schemas with decimal or complex positions)"),
]


def pure_prepare(fn: Callable[..., Any], raw: str) -> Callable[[str], Any]:
    """The pure-Python `Contract.prepare` of `fn` made a tool, as it runs without the C extension."""
    contract = bind(tool(fn)).contract
    request = Request(name=fn.__name__, arguments=raw)

    def run(_: str) -> Any:
        return _prepare_python(contract, request)

    return run


DIFFERENCES_NOTE = (
    "The rows that are differences (the rest of prepare, the rejection itself) can be smaller than the run-to-run "
    "noise of what they are subtracted from on the larger documents, and then come out negative; "
    "`benchmarks/instructions.py` counts instructions, which that noise does not move."
)


def validator_as_prepare_calls_it(contract: Any) -> Callable[[str], Any]:
    """The contract's validator, called the way prepare calls it, behind one Python frame as prepare is.

    The C prepare calls it from C with its keyword flags (`_speedups.validate` makes that very call);
    the pure-Python prepare calls it from Python, flags unpacked from a dict. Timed apart, it is what
    prepare's other parts are measured against, so the call must cost what it costs inside prepare.
    """
    if SPEEDUPS:
        from scopetool._speedups import validate as validate_in_c

        def schema(raw: str, contract: Any = contract) -> Any:
            return validate_in_c(contract, raw)

        return schema
    validate, flags = contract._validate, contract._flags
    assert validate is not None

    def schema_in_python(raw: str, validate: Callable[..., Any] = validate, flags: dict[str, Any] = flags) -> Any:
        return validate(raw, **flags)

    return schema_in_python


def breakdown(rounds: int, target: float) -> list[dict[str, Any]]:
    """What each admission check costs on its own, per valid case: median ns over interleaved rounds.

    The checks are timed apart from prepare with the contract's own parts (its validator, the C scan,
    the pure-Python member counter and the I-JSON parser); "rest" is prepare less the parts it ran on
    that input. Without the C extension, prepare is the pure-Python one and the C rows are absent.
    """
    rows = []
    for name, fn, raw in CASES[::2]:
        contract = bind(tool(fn)).contract
        count = contract._count
        schema = validator_as_prepare_calls_it(contract)
        value = schema(raw)
        data = raw.encode()

        def counted(r: str, count: Callable[[Any], int] = count, value: Any = value) -> bool:
            return r.count(":") <= count(value)

        def parse(_: str, data: bytes = data) -> Any:
            return syntax_problem(data, finite=False)  # as prepare's own fallback runs it

        runners: dict[str, tuple[Callable[[str], Any], str]] = {
            "bare": (bare_validator(fn, raw), raw),
            "schema": (schema, raw),
            "count": (counted, raw),
            "parse": (parse, raw),
            "prepare": (scopetool_prepare(fn, raw), raw),
        }
        if SPEEDUPS:
            from scopetool._speedups import scan

            runners["vouch"] = (scan, raw)
            runners["pure"] = (pure_prepare(fn, raw), raw)
        if contract._scan_non_finite:
            runners["scan"] = (may_hold_non_finite, raw)
        strings = contract._strings
        if strings is not None:

            def in_strings(_: str, strings: Callable[[Any], int] = strings, value: Any = value) -> int:
                return strings(value)

            runners["strings"] = (in_strings, raw)
        if name in COLON_IN_STRING:
            plain, colon = COLON_IN_STRING[name]
            assert plain in raw
            colon_raw = raw.replace(plain, colon)
            runners["colon"] = (scopetool_prepare(fn, colon_raw), colon_raw)
        ns = interleaved_medians(runners, rounds, target)
        if SPEEDUPS:
            ns["rest"] = ns["prepare"] - ns["schema"] - ns["vouch"]
        else:
            ns["rest"] = ns["prepare"] - ns["schema"] - ns["count"] - ns.get("scan", 0.0)
        rows.append({"case": name, "bytes": len(raw), "ns": ns})
    return rows


def rejections(rounds: int, target: float) -> list[dict[str, Any]]:
    """What a rejection costs, per invalid case: median ns over interleaved rounds.

    "rejection" is prepare less its validator's own failure: catching pydantic's ValidationError and
    raising scopetool's InvalidInvocationError instead (its message pending until read).
    """
    rows = []
    for name, fn, raw in CASES[1::2]:
        contract = bind(tool(fn)).contract
        request = Request(name=fn.__name__, arguments=raw)
        schema = validator_as_prepare_calls_it(contract)

        def read(_: str, prepare: Callable[[Request], Any] = contract.prepare, request: Request = request) -> str:
            try:
                prepare(request)
            except Exception as error:
                return str(error)
            raise AssertionError("admitted")

        ns = interleaved_medians(
            {
                "bare": (bare_validator(fn, raw), raw),
                "schema": (schema, raw),
                "prepare": (scopetool_prepare(fn, raw), raw),
                "read": (read, raw),
            },
            rounds,
            target,
        )
        ns["rejection"] = ns["prepare"] - ns["schema"]
        rows.append({"case": name, "bytes": len(raw), "ns": ns})
    return rows


def rejections_table(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown: one row per invalid case (ns, and the ratio to the bare validator's own failure)."""
    lines = [
        "| case | bare validate_json raising (ns) | the contract's validator raising | Contract.prepare raising "
        "| the rejection itself (prepare less its validator) | prepare, then the message read |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ns = row["ns"]
        cells = [
            f"{ns[key]:.0f} ns ({ns[key] / ns['bare']:.2f}x)" for key in ("schema", "prepare", "rejection", "read")
        ]
        lines.append(f"| {row['case']} ({row['bytes']} B) | {ns['bare']:.0f} | " + " | ".join(cells) + " |")
    return lines


def breakdown_table(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown: one row per check, one column per valid case (ns, and the ratio to the bare validator)."""
    lines = [
        "| check | " + " | ".join(f"{row['case']} ({row['bytes']} B)" for row in rows) + " |",
        "|---|" + "---:|" * len(rows),
    ]
    for label, words in BREAKDOWN:
        cells = []
        for row in rows:
            ns = row["ns"]
            cells.append(f"{ns[label]:.0f} ns ({ns[label] / ns['bare']:.2f}x)" if label in ns else "-")
        lines.append(f"| {words} | " + " | ".join(cells) + " |")
    return lines


PAGE = harness.Page(harness.HERE / "results.md")


def report(options: harness.Options) -> str:
    """The benchmark's Markdown report: how it was run, then one row per case."""
    rounds, target = options.rounds, options.target
    lines = [
        harness.header(
            options, "pydantic", "pydantic-core", "jiter", how=f"{ADMISSION_PATH}. {harness.timing(options)}"
        ),
        "",
        "| case | bytes | bare validate_json (ns) | Contract.prepare (ns) | prepare / bare |",
        "|---|---:|---:|---:|---:|",
    ]
    lines.extend(
        f"| {row['case']} | {row['bytes']} | {row['bare']:.0f} | {row['scopetool']:.0f} | {row['ratio']:.2f}x |"
        for row in measure(rounds, target)
    )
    lines += ["", f"What each check of prepare costs on its own (valid documents). {DIFFERENCES_NOTE}", ""]
    lines += breakdown_table(breakdown(rounds, target))
    lines += ["", "What a rejection costs (invalid documents):", ""]
    lines += rejections_table(rejections(rounds, target))
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run the benchmark, print its report and (a full run) write it into benchmarks/results.md."""
    harness.run(__doc__, report, PAGE)


if __name__ == "__main__":
    main()
