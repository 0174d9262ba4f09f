"""An input request's response schema as an MCP elicitation form (`requested_schema`), for `scopetool.mcp.server`.

What a form can carry (a flat object of primitive properties, MCP 2025-11-25 and 2026-07-28), the keywords
each kind of property may have, and a primitive response schema wrapped as the one property `ANSWER`.
Asking the client and resuming the call with its answer is `scopetool.mcp._tool_handlers`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from .._json import is_array, is_object

__all__ = ["ANSWER", "requested_schema"]

ANSWER: Final = "answer"
"""The one property a non-object response schema is wrapped in for elicitation."""

_FORMATS: Final = frozenset({"date", "date-time", "email", "uri"})
_ROOT: Final = frozenset({"type", "properties", "required", "additionalProperties", "title", "description", "$schema"})


def requested_schema(response_schema: Any) -> tuple[dict[str, Any], bool] | None:
    """The MCP elicitation ``requestedSchema`` that asks for an answer to `response_schema`, or None.

    An elicitation form (MCP 2025-11-25 and 2026-07-28) is a flat object whose properties are
    primitives: a string (with ``minLength``, ``maxLength`` and a ``format`` of ``date``,
    ``date-time``, ``email`` or ``uri``), a string enum (``enum``, or ``oneOf`` of ``const`` and
    ``title``), a number or integer (with ``minimum`` and ``maximum``), a boolean, or an array of
    enum strings (with ``minItems`` and ``maxItems``); each may have a ``title``, a ``description``
    and a ``default``. A response schema is expressible when it says nothing else: with one keyword a
    form cannot carry (``pattern``, ``$ref``, ``anyOf``, a nested object...), the answer is not
    requested at all. A primitive response schema (``{"type": "boolean"}``) becomes the one required
    property ``answer``, keeping its keywords (all but ``$schema``).

    Returns:
        The requested schema and whether it wraps a primitive, or None when it is not expressible.

    Example:
        ```python
        from scopetool.mcp.server import requested_schema

        form, wrapped = requested_schema({"type": "boolean", "title": "Approve"})
        print(form["properties"], wrapped)
        #> {'answer': {'type': 'boolean', 'title': 'Approve'}} True
        print(requested_schema({"type": "string", "pattern": "^[A-Z]+$"}))
        #> None
        ```
    """
    if not is_object(response_schema):
        return None
    if response_schema.get("type") != "object":
        field = _primitive({key: value for key, value in response_schema.items() if key != "$schema"})
        if field is None:
            return None
        return {"type": "object", "properties": {ANSWER: field}, "required": [ANSWER]}, True
    properties, required = response_schema.get("properties", {}), response_schema.get("required", [])
    if (
        set(response_schema) - _ROOT
        or not _is_bool(response_schema.get("additionalProperties", False))
        or not is_object(properties)
        or not is_array(required)
    ):
        return None
    fields = {key: _primitive(value) for key, value in properties.items()}
    if any(field is None for field in fields.values()) or not all(
        isinstance(key, str) and key in fields for key in required
    ):
        return None
    form: dict[str, Any] = {"type": "object", "properties": fields}
    if required:
        form["required"] = list(required)
    return form, False


def _primitive(schema: object) -> dict[str, Any] | None:
    """The property schema MCP elicitation accepts for `schema`, or None when it cannot say it all."""
    if not is_object(schema):
        return None
    kind = schema.get("type")
    if kind == "string" and "enum" in schema:
        kind = "enum"
    elif kind == "string" and "oneOf" in schema:
        kind = "titled"
    checks = _KEYWORDS.get(kind) if isinstance(kind, str) else None
    if checks is None:
        return None
    for key, value in schema.items():
        check = _ANNOTATIONS.get(key) or checks.get(key)
        if key != "type" and (check is None or not check(value)):
            return None
    return dict(schema)


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_format(value: object) -> bool:
    return isinstance(value, str) and value in _FORMATS


def _is_strings(value: object) -> bool:
    return is_array(value) and all(isinstance(item, str) for item in value)


def _is_enum(value: object) -> bool:
    return _is_strings(value) and bool(value)


def _is_titled(value: object) -> bool:
    """A non-empty list of ``{"const": str, "title": str}`` options."""
    return (
        is_array(value)
        and bool(value)
        and all(
            is_object(option) and set(option) == {"const", "title"} and all(map(_is_str, option.values()))
            for option in value
        )
    )


def _is_enum_items(value: object) -> bool:
    """The ``items`` of a multi-select: string enum values, or titled options."""
    if not is_object(value):
        return False
    if set(value) == {"type", "enum"}:
        return value["type"] == "string" and _is_enum(value["enum"])
    return set(value) == {"anyOf"} and _is_titled(value["anyOf"])


_Check: TypeAlias = Callable[[object], bool]
_ANNOTATIONS: Final[Mapping[str, _Check]] = {"title": _is_str, "description": _is_str}
_NUMBER: Final[Mapping[str, _Check]] = {"default": _is_number, "minimum": _is_number, "maximum": _is_number}
_KEYWORDS: Final[Mapping[str, Mapping[str, _Check]]] = {
    "boolean": {"default": _is_bool},
    "number": _NUMBER,
    "integer": _NUMBER,
    "string": {"default": _is_str, "minLength": _is_count, "maxLength": _is_count, "format": _is_format},
    "enum": {"default": _is_str, "enum": _is_enum},
    "titled": {"default": _is_str, "oneOf": _is_titled},
    "array": {"default": _is_strings, "items": _is_enum_items, "minItems": _is_count, "maxItems": _is_count},
}
"""Per kind of property (a string with ``enum`` or ``oneOf`` is its own kind), the keywords MCP
elicitation carries and what each value must be; ``title`` and ``description`` are allowed on all."""
