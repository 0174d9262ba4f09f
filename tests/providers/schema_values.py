"""A hypothesis strategy for JSON values a JSON Schema may admit, for property tests over real schemas.

hypothesis-jsonschema 0.23 no longer runs on the hypothesis this project tests with, so this is a small
generator of its own. It aims at the values that tell exports apart: optional members left out, members
an open object does not name, every branch of a union, values at the bounds. It is not exact (a
``pattern``, ``format`` or ``allOf`` may be missed); the tests keep only the values that the schema,
read by `jsonschema`, and the contract both admit, so a miss costs an example, never a false pass.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

JSON_SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
FORMATS: dict[str, st.SearchStrategy[str]] = {
    "date-time": st.just("2026-12-01T10:15:00Z"),
    "date": st.just("2026-12-01"),
    "time": st.just("10:15:00Z"),
    "email": st.just("someone@example.org"),
    "uri": st.sampled_from(["https://example.org/a?b=c", "file:///tmp/x"]),
    "uuid": st.just("6f1c2a57-3b7e-4c1d-9a43-0f4f5e6a7b8c"),
    "ipv4": st.just("192.0.2.1"),
    "hostname": st.just("example.org"),
}


def values(schema: Any, root: dict[str, Any] | None = None, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values `schema` may admit (local ``$ref``s resolved against `root`)."""
    root = schema if root is None else root
    if schema is True or schema == {}:
        return ANY_JSON
    if not isinstance(schema, dict) or depth > 8:
        return st.nothing() if schema is False else ANY_JSON
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        target: Any = root
        for part in ref[2:].split("/") if ref != "#" else []:
            target = target.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(target, dict) else {}
        return values(target, root, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"]) if schema["enum"] else st.nothing()
    for keyword in ("anyOf", "oneOf"):
        if isinstance(schema.get(keyword), list) and schema[keyword]:
            rest = {k: v for k, v in schema.items() if k != keyword}
            return st.one_of([values({**rest, **branch}, root, depth + 1) for branch in schema[keyword]])
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for member in schema["allOf"]:
            if isinstance(member, dict):
                merged = {**member, **merged}
        return values(merged, root, depth + 1)
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else _implied(schema)
    return st.one_of([_typed(k, schema, root, depth) for k in kinds])


def _implied(schema: dict[str, Any]) -> list[str]:
    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return ["null", "boolean", "integer", "number", "string", "array", "object"]


def _typed(kind: str, schema: dict[str, Any], root: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        low = None if low is None else int(low) + (1 if "exclusiveMinimum" in schema else 0)
        high = None if high is None else int(high) - (1 if "exclusiveMaximum" in schema else 0)
        if low is not None and high is not None and low > high:
            return st.nothing()
        integers = st.integers(low if low is not None else -(10**9), high if high is not None else 10**9)
        if kind == "integer":
            return integers | integers.map(float)  # 1.0 is an integer to JSON Schema
        return integers | st.floats(low, high, allow_nan=False, allow_infinity=False)
    if kind == "string":
        if schema.get("format") in FORMATS:
            return FORMATS[schema["format"]]
        if isinstance(schema.get("pattern"), str):
            return st.from_regex(schema["pattern"])
        return st.text(min_size=schema.get("minLength", 0), max_size=max(schema.get("maxLength", 12), 0))
    if kind == "array":
        items = values(schema.get("items", {}), root, depth + 1)
        low = schema.get("minItems", 0)
        return st.lists(items, min_size=low, max_size=max(min(schema.get("maxItems", low + 3), low + 3), low))
    if kind == "object":
        return _object(schema, root, depth)
    return st.nothing()


def _object(schema: dict[str, Any], root: dict[str, Any], depth: int) -> st.SearchStrategy[dict[str, Any]]:
    properties: dict[str, Any] = schema.get("properties") or {}
    required = [name for name in schema.get("required", []) if isinstance(name, str)]
    fixed = {name: values(properties.get(name, {}), root, depth + 1) for name in required}
    optional = {name: values(prop, root, depth + 1) for name, prop in properties.items() if name not in required}
    extra = schema.get("additionalProperties", True)
    names = st.text(min_size=1, max_size=8).filter(lambda n: n not in properties)
    unnamed = st.dictionaries(names, values(extra, root, depth + 1), max_size=2) if extra is not False else st.just({})

    def build(parts: tuple[dict[str, Any], dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
        more, named, own = parts
        return {**more, **named, **own}

    return st.tuples(unnamed, st.fixed_dictionaries({}, optional=optional), st.fixed_dictionaries(fixed)).map(build)
