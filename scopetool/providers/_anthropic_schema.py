"""Anthropic's strict tool schemas (``strict: true``), shared by the Anthropic and Bedrock adapters.

Claude's strict mode compiles each schema into a grammar, so it accepts a subset of JSON Schema
(Anthropic's documented strict subset). `anthropic_strict` fits one schema to that subset the way the
SDK's ``transform_schema`` does, with three differences: open objects (``dict[str, X]``, or any
object without ``additionalProperties``) and
recursive schemas make a tool fall back to non-strict instead of being silently closed or refused by
the API; a ``$ref`` with sibling keywords is inlined (or wrapped) instead of losing its description;
and every change is recorded. `fit_request` then applies the per-request limits (strict tools,
optional parameters, union parameters) across all tools of one request.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from typing import Any, Final

from .._json import JsonObject, is_array, is_object
from ._transform import ANNOTATIONS, Edit, Transformed, close_object, same_typed_tuple, subschemas, to_items

__all__ = [
    "ANTHROPIC_FORMATS",
    "MAX_OPTIONAL_PARAMETERS",
    "MAX_STRICT_TOOLS",
    "MAX_UNION_PARAMETERS",
    "anthropic_strict",
    "fit_request",
    "root_union",
    "schema_cost",
]

ANTHROPIC_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
"""The string formats strict mode enforces; any other format is moved into the description."""

MAX_STRICT_TOOLS: Final = 20
"""Strict tools one request may carry."""
MAX_OPTIONAL_PARAMETERS: Final = 24
"""Properties left out of ``required``, summed over every strict schema of one request."""
MAX_UNION_PARAMETERS: Final = 16
"""Nodes with ``anyOf`` or a list of types, summed over every strict schema of one request."""

_KEPT: Final = frozenset(
    {
        "type", "enum", "const", "anyOf", "allOf", "$ref", "description", "title", "properties", "required",
        "additionalProperties", "items", "minItems", "format", "pattern",
    }
)  # fmt: skip
_TYPED: Final = ("type", "anyOf", "allOf", "enum", "const", "$ref")
_DESCRIBED_ANNOTATIONS: Final = ("examples", "deprecated")
_REF_SIBLINGS: Final = frozenset({"description", "title", "default", "examples", "deprecated", "$comment"})
_UNIONS: Final = ("anyOf", "oneOf", "allOf")
_DEFINITIONS: Final = ("$defs", "definitions")
_MAX_DEPTH: Final = 64
_MOVED_REASON: Final = "not in the strict subset; the contract still enforces it"
_MOVED_REASONS: Final = {
    "default": "strict mode takes no defaults; the tool still applies it",
    "examples": "an annotation strict mode does not take",
    "deprecated": "an annotation strict mode does not take",
}


def root_union(schema: dict[str, Any]) -> str | None:
    """The composition keyword at the root of `schema` (Claude refuses one there), or None."""
    return next((keyword for keyword in _UNIONS if keyword in schema), None)


def anthropic_strict(schema: dict[str, Any]) -> Transformed:
    """Fit a schema to Claude's strict subset, or say why it cannot be.

    Objects must be closed already (`close_object`) and keep ``required`` as written; ``oneOf``
    becomes ``anyOf``; a ``$ref`` with sibling keywords is replaced by its definition (or wrapped in
    ``anyOf`` when a sibling constrains); unsupported keywords (bounds, lengths, ``maxItems``,
    ``minItems`` over 1, other formats, patterns with lookaround, backreferences or word boundaries,
    ``default``, ...) move into the description as ``{key: value}`` text; definitions no longer
    referenced are dropped. Open objects, recursion, untyped values (``Any``), tuples of different
    types and non-primitive enums cannot be strict: the schema then comes back unchanged, with the
    reasons in `not_strict`.
    """
    edit = Edit()
    keyword = root_union(schema)
    if keyword is not None or "$ref" in schema or schema.get("type") != "object":
        found = keyword or ("$ref" if "$ref" in schema else f"type {schema.get('type')!r}")
        edit.refuse("$", f"the root must be a plain object schema (it has {found})")
        return _unchanged(schema, edit)
    walker = _Walker(schema, edit)
    cycle = walker.recursion()
    if cycle is not None:
        edit.refuse(cycle, "recursive schemas cannot be strict")
        walker.inline = False  # go on only to find the other reasons: nothing is inlined in a cycle
    result = copy.deepcopy({k: v for k, v in schema.items() if k not in _DEFINITIONS})
    walker.node(result, "$", 0)
    walker.definitions(result)
    if edit.not_strict:
        return _unchanged(schema, edit)
    return Transformed(schema=result, changes=tuple(edit.changes), not_strict=(), null_defaults=())


def schema_cost(schema: dict[str, Any]) -> tuple[int, int]:
    """How much of the request budget a strict schema takes: (optional parameters, union parameters).

    Every property left out of its object's ``required`` is optional; every node with ``anyOf`` or a
    list of types is a union. Each definition is counted once, where it is defined.
    """
    optional = 0
    unions = 0

    def visit(node: dict[str, Any], depth: int) -> None:
        nonlocal optional, unions
        if "anyOf" in node or isinstance(node.get("type"), list):
            unions += 1
        properties = node.get("properties")
        if is_object(properties):
            required = node.get("required") or ()
            optional += sum(1 for name in properties if name not in required)
        if depth < _MAX_DEPTH:
            for _, child in subschemas(node, ""):
                visit(child, depth + 1)

    visit(schema, 0)
    return optional, unions


def fit_request(transformed: Sequence[Transformed], originals: Sequence[dict[str, Any]]) -> list[Transformed]:
    """Apply the per-request limits to the strict schemas of one request, first come first served.

    In order, each strict schema is kept while the request stays within `MAX_STRICT_TOOLS`,
    `MAX_OPTIONAL_PARAMETERS` and `MAX_UNION_PARAMETERS`; one that would exceed a limit falls back
    to its original schema (non-strict), with the limit named in `not_strict`. Later, smaller tools
    may still fit.
    """
    tools = optional = unions = 0
    fitted: list[Transformed] = []
    for result, original in zip(transformed, originals, strict=True):
        if not result.strict:
            fitted.append(result)
            continue
        own_optional, own_unions = schema_cost(result.schema)
        problems: list[str] = []
        if tools + 1 > MAX_STRICT_TOOLS:
            problems.append(f"request limit: at most {MAX_STRICT_TOOLS} strict tools per request")
        if optional + own_optional > MAX_OPTIONAL_PARAMETERS:
            problems.append(
                f"request limit: its {own_optional} optional parameters would bring the strict tools to "
                f"{optional + own_optional} (at most {MAX_OPTIONAL_PARAMETERS} per request)"
            )
        if unions + own_unions > MAX_UNION_PARAMETERS:
            problems.append(
                f"request limit: its {own_unions} union parameters would bring the strict tools to "
                f"{unions + own_unions} (at most {MAX_UNION_PARAMETERS} per request)"
            )
        if problems:
            fitted.append(Transformed(copy.deepcopy(original), (), tuple(problems), ()))
            continue
        tools += 1
        optional += own_optional
        unions += own_unions
        fitted.append(result)
    return fitted


def _unchanged(schema: dict[str, Any], edit: Edit) -> Transformed:
    return Transformed(schema=copy.deepcopy(schema), changes=(), not_strict=tuple(edit.not_strict), null_defaults=())


class _Walker:
    """One schema's strict transform: the original's definitions, and what was done."""

    def __init__(self, schema: dict[str, Any], edit: Edit) -> None:
        self.edit = edit
        self.root_refs = set(_refs(schema))
        self.inline = True
        self.defs: dict[tuple[str, str], dict[str, Any]] = {}
        for key in _DEFINITIONS:
            definitions: JsonObject = schema.get(key) or {}
            for name, node in definitions.items():
                self.defs[key, name] = node if is_object(node) else {}

    # -- references

    def target(self, ref: object, path: str) -> tuple[str, str] | None:
        """The definition a local ``$ref`` names, or None (refused) when it is anything else."""
        if isinstance(ref, str):
            for key in _DEFINITIONS:
                prefix = f"#/{key}/"
                if ref.startswith(prefix) and "/" not in ref[len(prefix) :]:
                    name = ref[len(prefix) :].replace("~1", "/").replace("~0", "~")
                    if (key, name) in self.defs:
                        return key, name
                    self.edit.refuse(path, f"$ref {ref!r} names no definition")
                    return None
        self.edit.refuse(path, f"$ref {ref!r} is not a local definition ($defs or definitions)")
        return None

    def recursion(self) -> str | None:
        """The path of a definition that reaches itself through ``$ref``s (or ``#``), or None."""
        if "#" in self.root_refs:
            return "$"
        graph: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for key, node in self.defs.items():
            graph[key] = []
            for ref in _refs(node):
                found = self._lookup(ref)
                if found is not None:
                    graph[key].append(found)
        state: dict[tuple[str, str], int] = {}

        def cyclic(key: tuple[str, str], depth: int) -> bool:
            if state.get(key) == 1 or depth > _MAX_DEPTH:
                return True
            if state.get(key) == 2:
                return False
            state[key] = 1
            if any(cyclic(child, depth + 1) for child in graph[key]):
                return True
            state[key] = 2
            return False

        for key in graph:
            if cyclic(key, 0):
                return f"$.{key[0]}.{key[1]}"
        return None

    def _lookup(self, ref: str) -> tuple[str, str] | None:
        for key in _DEFINITIONS:
            prefix = f"#/{key}/"
            if ref.startswith(prefix):
                name = ref[len(prefix) :].replace("~1", "/").replace("~0", "~")
                return (key, name) if (key, name) in self.defs else None
        return None

    def definitions(self, result: dict[str, Any]) -> None:
        """Transform the definitions still referenced from `result`; drop the others."""
        done: dict[tuple[str, str], dict[str, Any]] = {}
        pending = [found for ref in _refs(result) if (found := self._lookup(ref)) is not None]
        while pending:
            key = pending.pop()
            if key in done:
                continue
            node = copy.deepcopy(self.defs[key])
            self.node(node, f"$.{key[0]}.{key[1]}", 0)
            done[key] = node
            pending.extend(found for ref in _refs(node) if (found := self._lookup(ref)) is not None)
        for key in self.defs:
            if key in done:
                result.setdefault(key[0], {})[key[1]] = done[key]
            else:
                self.edit.record(f"$.{key[0]}.{key[1]}", "dropped", key[0], "no longer referenced (inlined or unused)")

    # -- nodes

    def node(self, node: dict[str, Any], path: str, depth: int) -> None:
        """Fit one subschema (and, below it, its children) to the strict subset."""
        edit = self.edit
        if depth > _MAX_DEPTH:
            edit.refuse(path, f"nesting deeper than {_MAX_DEPTH} levels")
            return
        moved: dict[str, Any] = {}
        self._all_of(node, path)
        for _ in range(_MAX_DEPTH):  # a definition may itself be a $ref with siblings
            if "$ref" not in node or not self._ref(node, path):
                break
        for keyword in ANNOTATIONS:
            if keyword == "title" or keyword not in node:
                continue
            if keyword in _DESCRIBED_ANNOTATIONS:
                moved[keyword] = node.pop(keyword)
            else:
                del node[keyword]
                edit.record(path, "dropped", keyword, "an annotation strict mode does not take")
        if "oneOf" in node:
            if "anyOf" in node:
                edit.refuse(path, "anyOf beside oneOf cannot be expressed in strict mode")
            else:
                node["anyOf"] = node.pop("oneOf")
                edit.record(path, "converted", "oneOf", "strict mode has only anyOf; the contract still enforces oneOf")
        if "default" in node:
            moved["default"] = node.pop("default")
        if "enum" in node and not (
            is_array(node["enum"]) and node["enum"] and all(_primitive(v) for v in node["enum"])
        ):
            edit.refuse(path, "enum must list strings, numbers, booleans or null")
        if "const" in node and not _primitive(node["const"]):
            edit.refuse(path, "const must be a string, number, boolean or null")
        kind = node.get("type")
        kinds = kind if is_array(kind) else [kind]
        if "object" in kinds or ("properties" in node and kind is None):
            self._object(node, path)
        if "array" in kinds:
            self._array(node, path)
        if not any(keyword in node for keyword in _TYPED):
            edit.refuse(path, "a value without a type (Any) cannot be strict")
        if "minItems" in node and node["minItems"] not in (0, 1):
            moved["minItems"] = node.pop("minItems")
        if "format" in node and node["format"] not in ANTHROPIC_FORMATS:
            moved["format"] = node.pop("format")
        if "pattern" in node and (not isinstance(node["pattern"], str) or _complex_pattern(node["pattern"])):
            moved["pattern"] = node.pop("pattern")
        for keyword in [k for k in node if k not in _KEPT]:
            moved[keyword] = node.pop(keyword)
        if moved:
            _describe(node, moved)
            for keyword in moved:
                edit.record(path, "described", keyword, _MOVED_REASONS.get(keyword, _MOVED_REASON))
        for child_path, child in list(subschemas(node, path)):
            self.node(child, child_path, depth + 1)
        choices = node.get("anyOf")
        if is_array(choices) and any(_bare_union(choice) for choice in choices):
            node["anyOf"] = [
                branch for choice in choices for branch in (choice["anyOf"] if _bare_union(choice) else [choice])
            ]
            edit.record(path, "converted", "anyOf", "nested anyOf flattened (one union parameter, not two)")

    def _all_of(self, node: dict[str, Any], path: str) -> None:
        members = node.get("allOf")
        if not is_array(members):
            return
        if len(members) == 1 and is_object(members[0]) and not set(members[0]) & set(node):
            node.update(node.pop("allOf")[0])
            self.edit.record(path, "inlined", "allOf", "a single-member allOf merged into its parent")
        elif any(next(_refs(member), None) is not None for member in members):
            self.edit.refuse(path, "allOf over a $ref is not in the strict subset")

    def _ref(self, node: dict[str, Any], path: str) -> bool:
        """Inline or wrap a ``$ref`` with siblings; True when it was inlined (look again)."""
        ref = node["$ref"]
        target = self.target(ref, path)
        siblings = [k for k in node if k != "$ref"]
        if target is None or not siblings or not self.inline:
            return False
        if set(siblings) <= _REF_SIBLINGS:
            merged = copy.deepcopy(self.defs[target])
            merged.update({k: node[k] for k in siblings})
            node.clear()
            node.update(merged)
            self.edit.record(path, "inlined", "$ref", "a $ref with sibling keywords is replaced by its definition")
            return True
        if any(keyword in node for keyword in _UNIONS):
            self.edit.refuse(path, "a $ref beside anyOf, oneOf or allOf is not in the strict subset")
        else:
            rest = {k: node.pop(k) for k in siblings}
            node["anyOf"] = [{"$ref": node.pop("$ref")}]
            node.update(rest)
            self.edit.record(path, "converted", "$ref", "a $ref with constraining siblings is wrapped in anyOf")
        return False

    def _object(self, node: dict[str, Any], path: str) -> None:
        edit = self.edit
        if node.get("type") is None:
            node["type"] = "object"
            edit.record(path, "converted", "type", "an object schema needs its type")
        close_object(node, path, edit)
        if "propertyNames" in node:
            edit.refuse(path, "propertyNames is not in the strict subset")
        properties = node.get("properties")
        if not is_object(properties):
            node["properties"] = {}
            edit.record(path, "converted", "properties", "strict mode needs properties on every object")
            return
        for name, prop in properties.items():
            if not is_object(prop):
                edit.refuse(f"{path}.{name}", "a value without a type (Any) cannot be strict")

    def _array(self, node: dict[str, Any], path: str) -> None:
        edit = self.edit
        if "prefixItems" in node:
            if not same_typed_tuple(node):
                edit.refuse(path, "this tuple (prefixItems) cannot be written as items: it is not in the strict subset")
                return
            to_items(node)
            edit.record(path, "converted", "prefixItems", "a same-typed tuple becomes items (length described)")
        items = node.get("items")
        if not isinstance(items, dict) or not any(keyword in items for keyword in _TYPED):
            edit.refuse(path, "array items need a type")


def _describe(node: dict[str, Any], moved: dict[str, Any]) -> None:
    """Append the moved keywords to the node's description as ``{key: value, ...}`` text, keys sorted."""
    pairs = sorted(moved.items())
    text = "{" + ", ".join(f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in pairs) + "}"
    current = node.get("description")
    node["description"] = f"{current}\n\n{text}" if isinstance(current, str) and current else text


def _bare_union(node: object) -> bool:
    return is_object(node) and set(node) == {"anyOf"} and is_array(node["anyOf"])


def _primitive(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _complex_pattern(pattern: str) -> bool:
    """Whether a regex uses lookaround, a backreference or a word boundary (not in the strict subset)."""
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            if pattern[index + 1] in "123456789bBk":
                return True
            index += 2
            continue
        if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), index):
            return True
        index += 1
    return False


def _refs(node: Any) -> Iterator[str]:
    """Every ``$ref`` string in `node`, at any depth (definitions included when present)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if is_object(current):
            ref = current.get("$ref")
            if isinstance(ref, str):
                yield ref
            stack.extend(current.values())
        elif is_array(current):
            stack.extend(current)
