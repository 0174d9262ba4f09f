"""Shared pieces of the reliability suite: settings, oracles, JSON and schema strategies, admission helpers."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import typing
from collections.abc import Callable
from decimal import Decimal
from functools import cache
from typing import Annotated, Any

import annotated_types
import jsonschema
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter
from pydantic.fields import FieldInfo
from pydantic_core import PydanticSerializationError

from scopetool import Contract, InvalidInvocationError, Invocation, Request, classify_input_rejection

RELIABLE = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
"""Bounded, reproducible Hypothesis settings for every property in this suite."""

# ---------------------------------------------------------------------------------------------------
# The independent oracle: python-jsonschema, Draft 2020-12.

_RFC3339_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$", re.ASCII)
_RFC3339_TIME = re.compile(r"^\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$", re.ASCII)
_ISO_DURATION = re.compile(
    r"^-?P(?!$)(?:\d+Y)?(?:\d+M)?(?:\d+W)?(?:\d+D)?(?:T(?=\d)(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?$", re.ASCII
)

FORMATS = jsonschema.FormatChecker()
"""The format assertions of the oracle: python-jsonschema's own, plus RFC 3339 date-time and time and
ISO 8601 duration written here (python-jsonschema needs extra packages for those)."""


@FORMATS.checks("date-time")
def _date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _RFC3339_DATE_TIME.match(value):
        return False
    date, time = value[:10], value[11:19]
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        return False
    hour, minute, second = (int(part) for part in time.split(":"))
    return hour <= 23 and minute <= 59 and second <= 60


@FORMATS.checks("time")
def _time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _RFC3339_TIME.match(value):
        return False
    hour, minute, second = (int(part) for part in value[:8].split(":"))
    return hour <= 23 and minute <= 59 and second <= 60


@FORMATS.checks("duration")
def _duration(value: object) -> bool:
    return not isinstance(value, str) or bool(_ISO_DURATION.match(value))


@cache
def _validator(schema_json: bytes, formats: bool) -> jsonschema.Draft202012Validator:
    schema = json.loads(schema_json)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=FORMATS if formats else None)


def schema_allows(contract: Contract, value: Any, *, formats: bool) -> bool:
    """Whether the contract's advertised input schema allows `value`, by python-jsonschema."""
    return _validator(contract.definition().input_schema_json, formats).is_valid(value)


def enforces_formats(contract: Contract) -> bool:
    """Hand-written schemas have their formats asserted by the contract (jsonschema-rs); typed ones don't."""
    return contract._validate is None


# ---------------------------------------------------------------------------------------------------
# Admission.


def prepare(contract: Contract, arguments: str | bytes) -> Invocation | InvalidInvocationError:
    """Prepare `arguments`; the invocation, or the `InvalidInvocationError` (anything else propagates)."""
    try:
        return contract.prepare(Request(name=contract.name, arguments=arguments))
    except InvalidInvocationError as error:
        return error


def message_of(error: InvalidInvocationError) -> str:
    """The model-visible message of a rejection (its InputRejection's message)."""
    rejection = classify_input_rejection(error)
    assert rejection is not None, f"a rejection of untrusted arguments carries no InputRejection: {error}"
    return rejection.message


def dumps(value: Any) -> str:
    """JSON text the way a model's client would send it (non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def canonical(value: Any) -> Any:
    """A form of a JSON value in which equality is exact: type-tagged numbers, -0.0 kept apart from 0.0."""
    if isinstance(value, dict):
        return ("object", sorted((key, canonical(member)) for key, member in value.items()))
    if isinstance(value, list | tuple):
        return ("array", [canonical(item) for item in value])
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value.hex(), math.copysign(1.0, value))
    if isinstance(value, str):
        return ("str", value)
    raise TypeError(f"not a JSON value: {type(value).__name__}")


# ---------------------------------------------------------------------------------------------------
# JSON strategies.

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
"""Arbitrary JSON values (finite numbers, exact integers)."""

json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)

TOKENS = [
    "{", "}", "[", "]", ":", ",", " ", "\n", "\t", '"a"', '"\\u0061"', '"b"', '"payload"', "0", "-0", "1", "-1",
    "1.5", "1e400", "-1e400", "1E-400", "-0.0", "123456789012345678901234567890", "NaN", "Infinity", "-Infinity",
    "true", "false", "null", '"\\ud800"', '"\\udc00"', '"\\ud83d\\ude00"', '"\\u0000"', "\x00", "\ufeff", "\u00a0",
    '"x', "\\", '"\\"', "\ud800", "é", "\u2028", "/*", "'a'", "0x10", "01", ".5", "+1",
]  # fmt: skip
json_token_soup = st.lists(st.sampled_from(TOKENS), max_size=24).map("".join)
"""Text assembled from JSON tokens and the spellings parsers disagree on: near-JSON, often broken."""


def encodings(text: str) -> st.SearchStrategy[str | bytes]:
    """`text` as str, as UTF-8 bytes (where encodable) and with a UTF-8 BOM or as UTF-16."""
    choices: list[str | bytes] = [text]
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return st.sampled_from(choices)
    choices += [data, b"\xef\xbb\xbf" + data, text.encode("utf-16")]
    return st.sampled_from(choices)


# ---------------------------------------------------------------------------------------------------
# Values generated from an advertised JSON Schema (the subset pydantic and the corpus use).

_FORMAT_STRATEGIES: dict[str, st.SearchStrategy[str]] = {
    "date-time": st.datetimes(
        min_value=dt.datetime(1000, 1, 1),
        timezones=st.sampled_from(
            [dt.UTC, dt.timezone(dt.timedelta(hours=5, minutes=30)), dt.timezone(-dt.timedelta(hours=8))]
        ),
    ).map(lambda value: value.isoformat()),
    "date": st.dates(min_value=dt.date(1000, 1, 1)).map(dt.date.isoformat),
    "time": st.times(timezones=st.just(dt.UTC)).map(lambda value: value.isoformat()),
    "duration": st.timedeltas(min_value=dt.timedelta(0), max_value=dt.timedelta(days=900)).map(
        lambda value: TypeAdapter(dt.timedelta).dump_python(value, mode="json")
    ),
    "uuid": st.uuids().map(str),
    "email": st.from_regex(r"\A[a-z]{1,8}@[a-z]{1,8}\.(?:com|org)\Z"),
    "ipv4": st.ip_addresses(v=4).map(str),
    "ipv6": st.ip_addresses(v=6).map(str),
    "uri": st.from_regex(r"\Ahttps://[a-z]{1,8}\.(?:com|org)/[a-z]{0,6}\Z"),
}


def _resolve(root: dict[str, Any], ref: str) -> Any:
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def from_schema(schema: Any, root: dict[str, Any] | None = None, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values shaped by `schema`: mostly valid, sometimes not (the oracle, not this, decides validity)."""
    root = schema if root is None else root
    if schema is True or schema == {} or not isinstance(schema, dict):
        return json_values if schema is not False else st.nothing()
    if "$ref" in schema:
        return from_schema(_resolve(root, schema["$ref"]), root, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            return st.one_of([from_schema(choice, root, depth + 1) for choice in schema[keyword]])
    if "allOf" in schema and "type" not in schema:
        return from_schema(schema["allOf"][0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": one}, root, depth) for one in kind])
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(schema, root, depth)
    if kind == "array":
        return _array(schema, root, depth)
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return _integer(schema)
    if kind == "number":
        return _number(schema)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return json_values


def _object(schema: dict[str, Any], root: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    if "then" in schema:
        required |= set(schema["then"].get("required", []))
    mandatory = {name: from_schema(properties.get(name, {}), root, depth + 1) for name in required}
    optional = (
        {name: from_schema(sub, root, depth + 1) for name, sub in properties.items() if name not in required}
        if depth < 4
        else {}
    )
    base = st.fixed_dictionaries(mandatory, optional=optional)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and depth < 4:
        names = st.text(max_size=6).filter(lambda name: name not in properties)
        more = st.dictionaries(names, from_schema(extra, root, depth + 1), max_size=3)
        base = st.tuples(base, more).map(lambda pair: {**pair[1], **pair[0]})
    for pattern, sub in schema.get("patternProperties", {}).items():
        keys = st.from_regex(pattern).filter(lambda name: name not in properties and len(name) < 10)
        more = st.dictionaries(keys, from_schema(sub, root, depth + 1), max_size=2)
        base = st.tuples(base, more).map(lambda pair: {**pair[1], **pair[0]})
    return base


def _array(schema: dict[str, Any], root: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    low = schema.get("minItems", 0)
    high = min(schema.get("maxItems", low + 4), low + 4) if depth < 4 else low
    if "prefixItems" in schema:
        prefix = st.tuples(*(from_schema(item, root, depth + 1) for item in schema["prefixItems"])).map(list)
        items = schema.get("items")
        if items is False or (items is None and "maxItems" in schema):
            return prefix
        rest = st.lists(from_schema(items if isinstance(items, dict) else {}, root, depth + 1), max_size=2)
        return st.tuples(prefix, rest).map(lambda pair: pair[0] + pair[1])
    element = from_schema(schema.get("items", {}), root, depth + 1)
    if "contains" in schema:
        element = element | from_schema(schema["contains"], root, depth + 1)
    if schema.get("uniqueItems"):
        return st.lists(element, min_size=low, max_size=high, unique_by=lambda item: json.dumps(item, sort_keys=True))
    return st.lists(element, min_size=low, max_size=high)


def _string(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    if schema.get("format") in _FORMAT_STRATEGIES:
        return _FORMAT_STRATEGIES[schema["format"]] | st.text(max_size=4)
    if "pattern" in schema:
        top = high if high is not None else low + 12
        return st.from_regex(schema["pattern"]).filter(lambda text: low <= len(text) <= top)
    return st.text(min_size=low, max_size=high if high is not None else max(low, 8) + 4)


def _integer(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    low, high = schema.get("minimum"), schema.get("maximum")
    if "exclusiveMinimum" in schema:
        low = math.floor(schema["exclusiveMinimum"]) + 1
    if "exclusiveMaximum" in schema:
        high = math.ceil(schema["exclusiveMaximum"]) - 1
    step = schema.get("multipleOf")
    if isinstance(step, int) and step > 0:
        first = None if low is None else -(-low // step)
        last = None if high is None else high // step
        return st.integers(min_value=first, max_value=last).map(lambda n: n * step)
    return st.integers(min_value=low, max_value=high)


def _number(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    step = schema.get("multipleOf")
    if step is not None:
        return st.integers(min_value=-20, max_value=20).map(lambda n: n * step)
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    floats = st.floats(
        min_value=low,
        max_value=high,
        exclude_min="exclusiveMinimum" in schema,
        exclude_max="exclusiveMaximum" in schema,
        allow_nan=False,
        allow_infinity=False,
    )
    first = None if low is None else math.ceil(low) + ("exclusiveMinimum" in schema)
    last = None if high is None else math.floor(high) - ("exclusiveMaximum" in schema)
    if first is not None and last is not None and first > last:
        return floats
    return floats | st.integers(min_value=first, max_value=last)


# ---------------------------------------------------------------------------------------------------
# Near misses: one small change to a value, anywhere in it.

NASTY = [
    None, True, False, 0, 1, -1, 1.0, 0.5, -0.0, 2**53 + 1, 10**20, 1e300, "", "x", "1", "1.5", "AB\n",
    "2020-01-01T00:00:00", "😀", [], {}, [1, 1], {"zz": 1},
]  # fmt: skip


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, member in value.items():
            found += _paths(member, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], change: Callable[[Any], Any]) -> Any:
    if not path:
        return change(value)
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, change)}
    copy = list(value)
    copy[head] = _replace(value[head], rest, change)
    return copy


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _tweak(leaf: Any, how: int, nasty: Any) -> Any:
    if how == 0:
        return nasty
    if isinstance(leaf, bool) or leaf is None:
        return nasty
    if isinstance(leaf, int):
        return leaf + (1 if how % 2 else -1)
    if isinstance(leaf, float):
        nudged = math.nextafter(leaf, math.inf if how % 2 else -math.inf) if math.isfinite(leaf) else math.inf
        return nudged if math.isfinite(nudged) else nasty  # the largest double nudged up has no JSON spelling
    if isinstance(leaf, str):
        return leaf + "a" if how % 2 else leaf[:-1]
    if isinstance(leaf, list):
        return [*leaf, leaf[0]] if leaf and how % 2 else leaf[:-1]
    if isinstance(leaf, dict):
        if how % 2 and leaf:
            return dict(list(leaf.items())[1:])
        return {**leaf, "zz_unknown": nasty}
    return nasty


@st.composite
def near_misses(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    """A value from `base` with one change at one place: a member dropped or added, a leaf nudged or swapped."""
    value = draw(base)
    path = draw(st.sampled_from(_paths(value)))
    how = draw(st.integers(min_value=0, max_value=3))
    nasty = draw(st.sampled_from(NASTY))
    if path and draw(st.booleans()) and isinstance(_get(value, path[:-1]), dict):

        def drop(parent: dict[str, Any]) -> dict[str, Any]:
            return {key: member for key, member in parent.items() if key != path[-1]}

        return _replace(value, path[:-1], drop)
    return _replace(value, path, lambda leaf: _tweak(leaf, how, nasty))


# ---------------------------------------------------------------------------------------------------
# Values generated from a typed tool's own Python types.


def python_values(annotation: Any) -> st.SearchStrategy[Any]:
    """Valid Python values of `annotation`, as pydantic's JSON-mode dump (what a faithful client sends)."""
    adapter = TypeAdapter(annotation)
    strategy = _from_annotation(annotation)

    def dumped(value: Any) -> Any:
        try:
            checked = adapter.validate_python(value)
        except (ValueError, ArithmeticError):  # pydantic compares a NaN Decimal with its bounds and raises
            assume(False)
        try:
            dumped = adapter.dump_python(checked, mode="json")
        except (ValueError, PydanticSerializationError):
            assume(False)  # bytes that are not UTF-8 have no JSON string (pydantic reads and writes UTF-8)
        try:
            json.dumps(dumped, allow_nan=False)
        except ValueError:
            assume(False)  # pydantic's Python mode allows infinity; JSON has no spelling for it
        return dumped

    return strategy.map(dumped)


_HYPOTHESIS_READS = (
    annotated_types.Gt, annotated_types.Ge, annotated_types.Lt, annotated_types.Le, annotated_types.MinLen,
    annotated_types.MaxLen,
)  # fmt: skip


def _from_annotation(annotation: Any) -> st.SearchStrategy[Any]:
    if annotation is Any:
        return json_values
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        base, *metadata = typing.get_args(annotation)
        constraints: list[Any] = []
        for item in metadata:
            constraints += item.metadata if isinstance(item, FieldInfo) else [item]
        pattern = next((getattr(c, "pattern", None) for c in constraints if getattr(c, "pattern", None)), None)
        if pattern is not None:
            return st.from_regex(pattern, fullmatch=True)
        # Hypothesis reads annotated-types bounds and lengths; other constraints are checked by pydantic.
        usable = [c for c in constraints if isinstance(c, _HYPOTHESIS_READS)]
        if base is Decimal:  # Hypothesis's own bounded decimals may compare a NaN with the bounds
            low = next((c.ge for c in usable if isinstance(c, annotated_types.Ge)), None)
            high = next((c.le for c in usable if isinstance(c, annotated_types.Le)), None)
            return st.decimals(min_value=low, max_value=high, allow_nan=False, allow_infinity=False)
        return st.from_type(Annotated[base, *usable]) if usable else _from_annotation(base)
    if origin is dict and typing.get_args(annotation)[1] is Any:
        return st.dictionaries(st.text(max_size=6), json_values, max_size=4)
    return st.from_type(annotation)
