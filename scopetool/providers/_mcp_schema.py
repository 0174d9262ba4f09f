"""MCP's schema shaping: the same JSON Schema, in a form the MCP clients in use can read.

Two rewrites, each exact (every instance the original accepts, the rewrite accepts, and no other):

1. ``$ref`` inlined. Several clients drop ``$defs`` before they use a schema, and a ``$ref`` they
   cannot resolve then breaks them. Every local ``$ref`` is replaced by its target: merged into the
   referring node when the node says nothing beside the ``$ref`` but annotations (the node's own
   ``description`` or ``default`` wins), wrapped as ``allOf: [target]`` otherwise (JSON Schema
   2020-12 applies a ``$ref``'s siblings beside it, never over it). ``$defs`` is then dropped. A
   recursive schema cannot be inlined: it is sent as it is, ``$defs`` and all (a change in the
   report says so), as is a schema with a reference that is not a local pointer, an ``$id``, an
   anchor or a dynamic reference, a schema of an older draft, and one that inlining would make
   larger than `INLINE_LIMIT` nodes.
2. A nullable union as a type list. ``Optional[int] = None`` is ``{"anyOf": [{"type": "integer"},
   {"type": "null"}]}`` to pydantic; clients that read a property's top-level ``type`` to convert a
   string argument (the MCP Inspector's CLI does) cannot call it. ``anyOf`` members that are each
   one plain type (with only keywords that apply to that type alone, such as ``maxLength`` for a
   string or ``properties`` for an object) become one node with ``type: [..., "null"]``.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

from .._json import is_array, is_object
from ._transform import Change, resolve_ref, subschemas

__all__ = ["INLINE_LIMIT", "client_schema"]

INLINE_LIMIT: Final = 4096
"""The most schema nodes an inlined schema may have (shared definitions multiply when inlined)."""

_ANNOTATIONS: Final = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
)
_TYPE_ONLY: Final[dict[str, frozenset[str]]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType"}),
    "number": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}),
    "integer": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}),
    "boolean": frozenset(),
    "array": frozenset(
        {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains"}
    ),
    "object": frozenset(
        {
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "dependentRequired",
            "dependentSchemas",
        }
    ),
}
"""Per type, the keywords that constrain only instances of that type (they accept every other value)."""
_UNMOVABLE: Final = ("$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor")
_OLD_DRAFTS: Final = ("draft-04", "draft-06", "draft-07")


class _Kept(Exception):  # noqa: N818 - a control signal: the schema is sent as it is
    """The schema cannot be inlined exactly; the text says why."""


def client_schema(schema: dict[str, Any], where: str, changes: list[Change], notes: list[str]) -> dict[str, Any]:
    """`schema` with its ``$ref``s inlined and its nullable unions as type lists (see the module).

    Args:
        schema: An input or output schema (not changed).
        where: The schema's path in the tool (``inputSchema``), for the report.
        changes: Where each change made is recorded.
        notes: Where the reason the references could not be inlined is recorded.
    """
    result = schema
    if _has_ref(schema):
        try:
            result = _Inliner(schema).inline()
        except _Kept as kept:
            notes.append(f"{where}: $ref kept with $defs (clients that drop $defs cannot use it): {kept}")
        else:
            changes.append(Change(where, "inlined", "$ref", "every $ref inlined, for clients that drop $defs"))
    if _has_nullable_union(result):
        result = copy.deepcopy(result)
        _type_lists(result, "$")
        changes.append(
            Change(where, "converted", "anyOf", "unions of plain types as a type list, for clients that read 'type'")
        )
    return result


def _has_ref(schema: dict[str, Any]) -> bool:
    return '"$ref"' in json.dumps(schema)


class _Inliner:
    """Inlines the local references of one schema, or raises `_Kept`."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.nodes = 0
        schema_uri = root.get("$schema")
        self.old_draft = isinstance(schema_uri, str) and any(draft in schema_uri for draft in _OLD_DRAFTS)

    def inline(self) -> dict[str, Any]:
        result = copy.deepcopy(self.root)
        self.node(result, "$", ())
        for key in ("$defs", "definitions"):
            result.pop(key, None)
        if _has_ref(result):  # under a keyword the walk does not visit (dependentSchemas...): keep them all
            raise _Kept("a $ref under a keyword that is not inlined")
        return result

    def node(self, node: dict[str, Any], path: str, stack: tuple[str, ...]) -> None:
        """Inline every reference in `node` (a private copy, changed in place)."""
        self.nodes += 1
        if self.nodes > INLINE_LIMIT:
            raise _Kept(f"inlined, the schema would have more than {INLINE_LIMIT} nodes")
        for key in _UNMOVABLE:
            if key in node:
                raise _Kept(f"{path} has {key}")
        ref = node.pop("$ref", None)
        for child_path, child in list(subschemas(node, path)):
            if not child_path.startswith((f"{path}.$defs.", f"{path}.definitions.")):
                self.node(child, child_path, stack)
        if ref is None:
            return
        if not isinstance(ref, str) or (ref != "#" and not ref.startswith("#/")):
            raise _Kept(f"{path}: $ref {ref!r} is not a local JSON pointer")
        if ref in stack:
            raise _Kept(f"the schema is recursive ({ref} at {path})")
        target = resolve_ref(ref, self.root)
        if not is_object(target):
            raise _Kept(f"{path}: $ref {ref!r} does not name a schema in this one")
        inlined = copy.deepcopy(target)
        self.node(inlined, path, (*stack, ref))
        for key in ("$defs", "definitions", "$schema"):
            inlined.pop(key, None)
        if set(node) - {"$defs", "definitions", "$schema"} <= _ANNOTATIONS:
            merged = {**inlined, **node}  # the referring node's annotations win
            node.clear()
            node.update(merged)
        elif self.old_draft:
            raise _Kept(f"{path}: a $ref with siblings, which drafts before 2019-09 ignore")
        else:
            node["allOf"] = [inlined, *node["allOf"]] if is_array(node.get("allOf")) else [inlined]


def _plain_type(member: object) -> str | None:
    """The type of an ``anyOf`` member that constrains only instances of one type, or None."""
    if not is_object(member):
        return None
    kind = member.get("type")
    if not isinstance(kind, str) or kind == "null":
        return "null" if kind == "null" and set(member) <= _ANNOTATIONS | {"type"} else None
    allowed = _TYPE_ONLY.get(kind)
    if allowed is None or not set(member) <= allowed | _ANNOTATIONS | {"type"}:
        return None
    return kind


def _collapsible(node: dict[str, Any]) -> list[str] | None:
    """The types of a node whose ``anyOf`` can be one type list, or None."""
    members = node.get("anyOf")
    if not is_array(members) or len(members) < 2 or not set(node) - {"anyOf"} <= _ANNOTATIONS:
        return None
    kinds = [_plain_type(member) for member in members]
    if None in kinds or len(set(kinds)) != len(kinds):
        return None
    typed = [member for member in members if set(member) - _ANNOTATIONS - {"type"}]
    if len(typed) > 1 or (typed and {"integer", "number"} <= set(kinds)):
        return None  # one member's keywords would then constrain another's values (an integer is a number)
    return [kind for kind in kinds if kind is not None]


def _has_nullable_union(schema: dict[str, Any]) -> bool:
    found = False

    def visit(node: dict[str, Any], path: str) -> None:
        nonlocal found
        found = found or _collapsible(node) is not None
        for child_path, child in subschemas(node, path):
            visit(child, child_path)

    visit(schema, "$")
    return found


def _type_lists(node: dict[str, Any], path: str) -> None:
    kinds = _collapsible(node)
    if kinds is not None:
        members = node.pop("anyOf")
        outer = dict(node)
        node.clear()
        for member in members:
            node.update({key: value for key, value in member.items() if key != "type"})
        node.update(outer)
        node["type"] = kinds
    for child_path, child in subschemas(node, path):
        _type_lists(child, child_path)
