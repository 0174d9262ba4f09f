"""Gemini's two schema dialects: JSON Schema (``parametersJsonSchema``) and the OpenAPI subset (``parameters``).

`json_schema` keeps the schema a JSON Schema and only removes what Gemini refuses (mode A).
`openapi` rewrites it into the OpenAPI-3.0 subset of ``types.Schema`` (mode B): every
``$ref`` inlined, nullables as ``nullable``, only string enums, every node typed and nothing outside the
``Schema`` fields. Both record each change; the contract keeps enforcing the original schema.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Final

from .._json import JsonObject, is_array, is_object, json_type
from ._common import ProviderError
from ._transform import ANNOTATIONS, Edit, Transformed, describe, resolve_ref, subschemas

__all__ = ["GeminiTransformed", "json_schema", "openapi"]

JSON_FORMATS: Final = frozenset({"date-time", "date", "time"})
"""String formats Gemini's JSON Schema mode documents; any other is moved into the description."""

OPENAPI_FIELDS: Final = frozenset(
    {
        "type", "format", "description", "nullable", "enum", "items", "minItems", "maxItems", "properties",
        "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
        "propertyOrdering", "default", "minimum", "maximum",
    }
)  # fmt: skip
"""The ``types.Schema`` fields (wire names) the Gemini API accepts in ``parameters``.

``title`` is a field too but is dropped as an annotation; ``additionalProperties``, ``defs`` and ``ref``
exist only on Vertex AI.
"""

OPENAPI_NUMBER_FORMATS: Final = frozenset({"int32", "int64", "float", "double"})
NODE_LIMIT: Final = 20_000
"""The most nodes an inlined OpenAPI-subset schema may have (shared definitions multiply when inlined)."""
PROPERTY_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""Property names the parameters dialect accepts."""

_SILENT: Final = (*ANNOTATIONS, "$id", "$anchor", "$vocabulary", "$dynamicAnchor", "$dynamicRef")
_DESCRIBABLE: Final = frozenset(
    {"multipleOf", "uniqueItems", "minContains", "maxContains", "contentEncoding", "contentMediaType"}
)
_DICT_LIKE: Final = ("additionalProperties", "patternProperties")


@dataclass(frozen=True)
class GeminiTransformed(Transformed):
    """A Gemini transform's result.

    `not_strict` holds the reasons VALIDATED mode would hold the model to a narrower schema than the
    contract's (such as a dict field that can only be sent empty); `notes` anything else worth knowing.
    """

    notes: tuple[str, ...] = ()


def _text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _finish(schema: Any, edit: Edit, notes: list[str], blockers: list[str]) -> GeminiTransformed:
    changes = tuple(dict.fromkeys(edit.changes))
    return GeminiTransformed(
        schema=schema,
        changes=changes,
        not_strict=tuple(dict.fromkeys(blockers)),
        null_defaults=(),
        notes=tuple(dict.fromkeys(notes)),
    )


def _exclusive_bounds(node: dict[str, Any], path: str, edit: Edit) -> None:
    """Integer exclusive bounds become inclusive ones; other exclusive bounds move into the description."""
    integer = node.get("type") == "integer"
    for key, inclusive, words in (
        ("exclusiveMinimum", "minimum", "greater than"),
        ("exclusiveMaximum", "maximum", "less than"),
    ):
        if key not in node:
            continue
        value = node.pop(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            edit.record(path, "dropped", key, "a draft-4 boolean bound Gemini does not read")
            continue
        if integer:
            bound = math.floor(value) + 1 if inclusive == "minimum" else math.ceil(value) - 1
            current = node.get(inclusive)
            if isinstance(current, int | float) and not isinstance(current, bool):
                bound = max(bound, math.ceil(current)) if inclusive == "minimum" else min(bound, math.floor(current))
            node[inclusive] = bound
            edit.record(path, "converted", key, f"an integer {words} {_text(value)} becomes {inclusive} {bound}")
        else:
            describe(node, f"{words} {_text(value)}")
            edit.record(path, "described", key, "Gemini has no exclusive bounds")


# -- Mode A: parametersJsonSchema ------------------------------------------------------------------


def json_schema(schema: dict[str, Any] | bool) -> GeminiTransformed:
    """Fit a JSON Schema to Gemini's ``parametersJsonSchema`` / ``responseJsonSchema``.

    Annotations go, ``const`` becomes a one-value ``enum``, exclusive bounds become inclusive (integers)
    or words in the description, formats other than date-time, date and time move into the
    description, a ``$ref`` keeps only ``description`` and ``default`` beside it (others wrap it in
    ``anyOf``), and a recursive reference reachable only through required properties has its nearest
    property shown as optional (Gemini unrolls recursion only through optional properties).
    """
    edit = Edit()
    notes: list[str] = []
    result = copy.deepcopy(schema)
    if isinstance(result, dict):
        _json_node(result, "$", edit, 0)
        _relax_recursion(result, edit, notes)
    return _finish(result, edit, notes, [])


def _json_node(node: dict[str, Any], path: str, edit: Edit, depth: int) -> None:
    for keyword in ANNOTATIONS:
        if keyword in node:
            del node[keyword]
            edit.record(path, "dropped", keyword, "an annotation Gemini refuses or ignores")
    if "const" in node:
        value = node.pop("const")
        node["enum"] = [value]
        node.setdefault("type", json_type(value))
        edit.record(path, "converted", "const", "Gemini has no const; a one-value enum says the same")
    _exclusive_bounds(node, path, edit)
    form = node.get("format")
    if isinstance(form, str) and form not in JSON_FORMATS:
        del node["format"]
        describe(node, f"format: {form}")
        edit.record(path, "described", "format", "Gemini documents only the date-time, date and time formats")
    ref = node.get("$ref")
    if isinstance(ref, str):
        siblings = [k for k in node if k not in ("$ref", "description", "default") and not k.startswith("$")]
        if siblings:
            del node["$ref"]
            node["anyOf"] = [{"$ref": ref}]
            edit.record(path, "converted", "$ref", "only description and default may stand beside a $ref")
    if depth < 256:
        for child_path, child in list(subschemas(node, path)):
            _json_node(child, child_path, edit, depth + 1)


@dataclass
class _Guard:
    owner: dict[str, Any]
    name: str
    path: str
    required: bool


@dataclass
class _Edge:
    source: str
    target: str
    guard: _Guard | None
    optional: bool
    path: str


def _relax_recursion(schema: dict[str, Any], edit: Edit, notes: list[str]) -> None:
    scopes: dict[str, tuple[dict[str, Any], str]] = {"#": (schema, "$")}
    for key in ("$defs", "definitions"):
        definitions: JsonObject = schema.get(key) or {}
        for name, node in definitions.items():
            if is_object(node):
                scopes[f"#/{key}/{name}"] = (node, f"$.{key}.{name}")
    cut: set[str] = set()
    for _ in range(10_000):
        graph = _Graph(scopes=scopes, root=schema, edges=[])
        for source, (node, path) in scopes.items():
            graph.collect(node, path, source, [], 0)
        cycle = _find_cycle([e for e in graph.edges if not e.optional and e.path not in cut])
        if cycle is None:
            return
        guarded = [e for e in cycle if e.guard is not None]
        if not guarded:
            for edge in cycle:
                cut.add(edge.path)
            notes.append(
                f"{cycle[-1].path}: a recursive $ref outside any optional property; Gemini unrolls recursion "
                "only through optional properties and may refuse this schema"
            )
            continue
        guard = guarded[-1].guard
        assert guard is not None
        required = [name for name in guard.owner.get("required", []) if name != guard.name]
        if required:
            guard.owner["required"] = required
        else:
            guard.owner.pop("required", None)
        edit.record(
            guard.path,
            "dropped",
            "required",
            "Gemini accepts recursion only through optional properties; the contract still requires it",
        )


@dataclass
class _Graph:
    """The references between a schema's root and its definitions, each with the properties it passes."""

    scopes: dict[str, tuple[dict[str, Any], str]]
    root: dict[str, Any]
    edges: list[_Edge]

    def collect(self, node: dict[str, Any], path: str, source: str, guards: list[_Guard], depth: int) -> None:
        """Record every reference below `node` (definitions are scopes of their own)."""
        if depth > 256:
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and ref in self.scopes:
            self.edges.append(
                _Edge(
                    source=source,
                    target=ref,
                    guard=guards[-1] if guards else None,
                    optional=any(not g.required for g in guards),
                    path=path,
                )
            )
        found = node.get("properties")
        properties: JsonObject = found if is_object(found) else {}
        listed = node.get("required")
        required: list[Any] = listed if is_array(listed) else []
        skip = {id(child) for child in properties.values()}
        if node is self.root:
            for key in ("$defs", "definitions"):
                defs = node.get(key)
                if is_object(defs):
                    skip.update(id(child) for child in defs.values())
        for name, child in properties.items():
            if is_object(child):
                guard = _Guard(owner=node, name=name, path=f"{path}.{name}", required=name in required)
                self.collect(child, f"{path}.{name}", source, [*guards, guard], depth + 1)
        for child_path, child in subschemas(node, path):
            if id(child) not in skip:
                self.collect(child, child_path, source, guards, depth + 1)


def _find_cycle(edges: list[_Edge]) -> list[_Edge] | None:
    graph: dict[str, list[_Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)
    state: dict[str, int] = {}
    trail: list[_Edge] = []

    def visit(vertex: str) -> list[_Edge] | None:
        state[vertex] = 1
        for edge in graph.get(vertex, []):
            mark = state.get(edge.target, 0)
            if mark == 1:
                start = next((i for i, e in enumerate(trail) if e.source == edge.target), len(trail))
                return [*trail[start:], edge]
            if mark == 0:
                trail.append(edge)
                found = visit(edge.target)
                if found is not None:
                    return found
                trail.pop()
        state[vertex] = 2
        return None

    for vertex in list(graph):
        if state.get(vertex, 0) == 0:
            found = visit(vertex)
            if found is not None:
                return found
    return None


# -- Mode B: parameters (OpenAPI subset) -----------------------------------------------------------


def openapi(schema: dict[str, Any] | bool, *, output: bool = False) -> GeminiTransformed:
    """Rewrite a JSON Schema into the OpenAPI subset of Gemini's ``parameters`` (or, with `output`, ``response``).

    Raises:
        ProviderError: the schema cannot be expressed: a recursive ``$ref``, a property name outside
            ``[A-Za-z_][A-Za-z0-9_]{0,63}``, a ``false`` schema where a value is required, ``allOf``
            members that disagree, or more than `NODE_LIMIT` nodes once inlined.
    """
    converter = _OpenAPI(schema if isinstance(schema, dict) else {}, output=output)
    result = converter.node(schema, "$", ("#",))
    if result is None:
        raise ProviderError("$: the schema matches nothing (false)")
    return _finish(result, converter.edit, converter.notes, converter.blockers)


class _OpenAPI:
    """One conversion into the OpenAPI subset; collects changes, notes and VALIDATED blockers."""

    def __init__(self, root: dict[str, Any], *, output: bool) -> None:
        self.root = root
        self.output = output
        self.edit = Edit()
        self.notes: list[str] = []
        self.blockers: list[str] = []
        self.count = 0

    def node(self, raw: Any, path: str, stack: tuple[str, ...]) -> dict[str, Any] | None:
        """A typed node of the subset, or None for a schema that matches nothing."""
        out = self.convert(raw, path, stack)
        if out is not None:
            self.typed(out, path)
        return out

    def convert(self, raw: Any, path: str, stack: tuple[str, ...]) -> dict[str, Any] | None:
        """Convert one node and its children, leaving the node's own type to `typed`."""
        self.count += 1
        if len(stack) > 64 or self.count > NODE_LIMIT:
            raise ProviderError(f"{path}: inlining every $ref makes the schema too large for the parameters dialect")
        if raw is True:
            raw = {}
        if raw is False:
            return None
        if not is_object(raw):
            raise ProviderError(f"{path}: a schema must be an object or a boolean, not {type(raw).__name__}")
        node = dict(raw)
        if path == "$":
            for key in ("$defs", "definitions"):
                if key in node:
                    del node[key]
                    self.edit.record(path, "inlined", key, "the parameters dialect has no definitions")
        while "$ref" in node:
            ref = node.pop("$ref")
            if not isinstance(ref, str):
                raise ProviderError(f"{path}: $ref must be a string")
            if ref in stack:
                raise ProviderError(
                    f"{path}: the recursive $ref {ref!r} cannot be expressed in Gemini's parameters dialect "
                    "(export with mode='json_schema')"
                )
            target = resolve_ref(ref, self.root)
            if target is False:
                raise ProviderError(
                    f"{path}: $ref {ref!r} is a false schema, which the parameters dialect cannot express"
                )
            if not is_object(target):
                raise ProviderError(f"{path}: $ref {ref!r} does not name a definition in this schema")
            self.edit.record(path, "inlined", "$ref", f"{ref} inlined: the parameters dialect has no references")
            node = {**{k: v for k, v in target.items() if k not in ("$defs", "definitions")}, **node}
            stack = (*stack, ref)
            path = _ref_path(ref)
        members = node.pop("allOf", None)
        out = self.keywords(node, path, stack)
        if members is None:
            return out
        if not is_array(members):
            raise ProviderError(f"{path}: allOf must be a list")
        parts = [out]
        for index, member in enumerate(members):
            converted = self.convert(member, f"{path}.allOf[{index}]", stack)
            if converted is None:
                raise ProviderError(f"{path}.allOf[{index}]: a false member makes the schema match nothing")
            parts.append(converted)
        merged: dict[str, Any] = {}
        for part in parts:
            if part is not None:
                _merge(merged, part, path)
        if any(p is not None and "nullable" in p for p in parts):
            if all(p is not None and p.get("nullable") for p in parts):
                merged["nullable"] = True
            else:
                merged.pop("nullable", None)
        self.edit.record(path, "converted", "allOf", "flattened into one schema: the parameters dialect has no allOf")
        return merged

    def keywords(self, node: dict[str, Any], path: str, stack: tuple[str, ...]) -> dict[str, Any] | None:
        """Convert a node's own keywords (its references already resolved), then its children."""
        edit = self.edit
        for keyword in _SILENT:
            if keyword in node:
                del node[keyword]
                edit.record(path, "dropped", keyword, "an annotation the parameters dialect does not have")
        if "oneOf" in node:
            choices = node.pop("oneOf")
            if "anyOf" in node:
                raise ProviderError(f"{path}: anyOf and oneOf together cannot be expressed in the parameters dialect")
            node["anyOf"] = choices
            edit.record(path, "converted", "oneOf", "the parameters dialect has only anyOf (the branches are disjoint)")
        if "default" in node and node["default"] is None:
            del node["default"]
            edit.record(path, "dropped", "default", "a null default, which Gemini's Schema cannot carry")
        kind = node.get("type")
        if is_array(kind):
            self.type_list(node, kind, path)
        if "const" in node:
            value = node.pop("const")
            node["enum"] = [value]
            if "type" not in node and value is not None:
                node["type"] = json_type(value)
            edit.record(
                path, "converted", "const", "the parameters dialect has no const; a one-value enum says the same"
            )
        if "enum" in node:
            self.enum(node, path)
        _exclusive_bounds(node, path, edit)
        form = node.get("format")
        if form is not None and not (node.get("type") in ("integer", "number") and form in OPENAPI_NUMBER_FORMATS):
            del node["format"]
            describe(node, f"format: {form}")
            edit.record(path, "described", "format", "the parameters dialect has no string formats")
        kind = node.get("type")
        is_object = kind == "object" or (kind is None and ("properties" in node or "required" in node))
        if is_object and not self.output and "additionalProperties" not in node and not node.get("patternProperties"):
            # Open in JSON Schema, but the dialect can only name members: VALIDATED would forbid the rest.
            self.blockers.append(
                f"{path}: an open object (no additionalProperties): the model can send only its properties"
            )
        for keyword in _DICT_LIKE:
            if keyword not in node:
                continue
            value = node.pop(keyword)
            if value is False and keyword == "additionalProperties":
                edit.record(
                    path,
                    "dropped",
                    keyword,
                    "the parameters dialect has no additionalProperties; the contract still refuses unknown members",
                )
            elif value is not False and self.output:
                edit.record(
                    path,
                    "dropped",
                    keyword,
                    "the parameters dialect has no additionalProperties: a dict's members go undeclared",
                )
            elif value is not False:
                edit.record(
                    path,
                    "dropped",
                    keyword,
                    "the parameters dialect has no additionalProperties: the model cannot add members, "
                    "so this dict field arrives empty",
                )
                self.blockers.append(f"{path}: a dict field the model can only send empty")
        if "prefixItems" in node:
            self.tuple_items(node, path)
        for key in list(node):
            if key in OPENAPI_FIELDS:
                continue
            value = node.pop(key)
            if key in _DESCRIBABLE and isinstance(value, str | int | float | bool):
                describe(node, f"{key}: {_text(value)}")
                edit.record(path, "described", key, "not in the parameters dialect; the contract still enforces it")
            else:
                edit.record(path, "dropped", key, "not in the parameters dialect; the contract still enforces it")
        self.children(node, path, stack)
        if "anyOf" in node:
            return self.union(node, path)
        return node

    def type_list(self, node: dict[str, Any], kind: list[Any], path: str) -> None:
        """``type: [T, "null"]`` becomes ``type: T`` and ``nullable``; several types become an ``anyOf``."""
        kinds = [k for k in kind if k != "null"]
        if "null" in kind:
            node["nullable"] = True
        if len(kinds) == 1:
            node["type"] = kinds[0]
        elif not kinds:
            node["type"] = "null"
        else:
            if "anyOf" in node:
                raise ProviderError(f"{path}: a type list beside anyOf cannot be expressed in the parameters dialect")
            del node["type"]
            node["anyOf"] = [{"type": k} for k in kinds]
        self.edit.record(path, "converted", "type", "the parameters dialect takes one type (null as nullable)")

    def enum(self, node: dict[str, Any], path: str) -> None:
        """Keep string enums; state other values in the description (the model must not send ``"1"`` for 1)."""
        values = node.pop("enum")
        if not is_array(values):
            raise ProviderError(f"{path}: enum must be a list")
        if None in values:
            node["nullable"] = True
            values = [v for v in values if v is not None]
            if not values:
                node["type"] = "null"
                return
        floats = any(isinstance(v, float) for v in values)
        groups: dict[str, list[Any]] = {}
        for value in values:
            kind = json_type(value)
            groups.setdefault("number" if kind == "integer" and floats else kind, []).append(value)
        if set(groups) != {"string"}:
            describe(node, "allowed values: " + ", ".join(_text(v) for v in values))
            self.edit.record(path, "described", "enum", "the parameters dialect allows only string enums")
        if len(groups) == 1:
            kind = next(iter(groups))
            if kind == "string":
                node["enum"] = values
            node["type"] = kind
            return
        if "anyOf" in node:
            raise ProviderError(f"{path}: a mixed enum beside anyOf cannot be expressed in the parameters dialect")
        node.pop("type", None)
        node["anyOf"] = [{"type": k, "enum": g} if k == "string" else {"type": k} for k, g in groups.items()]
        self.edit.record(path, "converted", "enum", "values of several types become one branch per type")

    def tuple_items(self, node: dict[str, Any], path: str) -> None:
        """A tuple (``prefixItems``) becomes ``items`` accepting any of its positions, with a fixed length."""
        positions = node.pop("prefixItems")
        if not is_array(positions):
            raise ProviderError(f"{path}: prefixItems must be a list")
        rest = node.pop("items", None)
        choices = list(positions) if rest in (None, False) else [*positions, rest]
        distinct: dict[str, Any] = {}
        for choice in choices:
            distinct.setdefault(_text(choice), choice)
        node["items"] = next(iter(distinct.values())) if len(distinct) == 1 else {"anyOf": list(distinct.values())}
        shortest, longest = node.get("minItems", 0), node.get("maxItems")
        node.setdefault("minItems", len(positions))
        if rest in (None, False):
            node.setdefault("maxItems", len(positions))
        if shortest < len(positions) or (rest is None and (longest is None or longest > len(positions))):
            # prefixItems alone fixes no length: a shorter array, or (with no items) a longer one, is valid.
            self.blockers.append(f"{path}: a tuple whose length the dialect fixes, though its schema does not")
        if len(distinct) == 1:
            self.edit.record(path, "converted", "prefixItems", "a same-typed tuple becomes items with a fixed length")
        else:
            self.edit.record(
                path,
                "converted",
                "prefixItems",
                "no tuples in the parameters dialect: each position accepts any of the types",
            )

    def children(self, node: dict[str, Any], path: str, stack: tuple[str, ...]) -> None:
        """Convert properties, items and anyOf branches."""
        properties = node.get("properties")
        if properties is not None:
            if not is_object(properties):
                raise ProviderError(f"{path}: properties must be an object")
            listed = node.get("required")
            required: list[Any] = listed if is_array(listed) else []
            converted: dict[str, Any] = {}
            for name, child in properties.items():
                if not PROPERTY_NAME.fullmatch(name):
                    raise ProviderError(
                        f"{path}: property name {name!r} is not allowed in Gemini's parameters dialect "
                        "(it must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$; export with mode='json_schema')"
                    )
                value = self.node(child, f"{path}.{name}", stack)
                if value is None:
                    if name in required:
                        raise ProviderError(f"{path}.{name}: a required property that matches nothing (false)")
                    self.edit.record(f"{path}.{name}", "dropped", "properties", "a property that matches nothing")
                    continue
                converted[name] = value
            node["properties"] = converted
            if "required" in node:
                node["required"] = [name for name in required if name in converted]
        if "items" in node:
            items = self.node(node["items"], f"{path}.items", stack)
            if items is None:
                raise ProviderError(f"{path}.items: false items (an always-empty array) cannot be expressed")
            node["items"] = items
        if "anyOf" in node:
            branches = node["anyOf"]
            if not is_array(branches):
                raise ProviderError(f"{path}: anyOf must be a list")
            kept: list[dict[str, Any]] = []
            for index, branch in enumerate(branches):
                value = self.node(branch, f"{path}.anyOf[{index}]", stack)
                if value is None:
                    self.edit.record(f"{path}.anyOf[{index}]", "dropped", "anyOf", "a branch that matches nothing")
                else:
                    kept.append(value)
            node["anyOf"] = kept

    def union(self, node: dict[str, Any], path: str) -> dict[str, Any]:
        """A null branch becomes ``nullable``; a single branch left is merged into its parent."""
        branches: list[dict[str, Any]] = node.pop("anyOf")
        real = [b for b in branches if not _is_null(b)]
        if len(real) < len(branches):
            node["nullable"] = True
            self.edit.record(path, "nullable", "anyOf", "a null branch becomes nullable: true")
        if not real:
            node.setdefault("type", "null")
            return node
        if len(real) == 1:
            branch = real[0]
            merged = {**branch, **node}
            if branch.get("nullable"):
                merged["nullable"] = True
            if len(branches) == 1:
                self.edit.record(path, "converted", "anyOf", "a one-branch anyOf merged into its parent")
            return merged
        node["anyOf"] = real
        kinds = {b.get("type") for b in real}
        if "type" not in node:
            if len(kinds) == 1 and None not in kinds:
                node["type"] = kinds.pop()
            else:
                self.notes.append(
                    f"{path}: a union of different types has no single type; Gemini 3 models may refuse such "
                    "a node in the parameters dialect (mode='json_schema' has no such limit)"
                )
        return node

    def typed(self, node: dict[str, Any], path: str) -> None:
        """Give the node a type when it has none (Gemini 3 refuses untyped nodes); upper-case it."""
        if "type" not in node and "anyOf" not in node:
            if "properties" in node or "required" in node:
                node["type"] = "object"
            elif "items" in node or "minItems" in node or "maxItems" in node:
                node["type"] = "array"
            else:
                node["type"] = "string"
                describe(node, "any JSON value, shown as text")
                self.edit.record(
                    path,
                    "converted",
                    "type",
                    "an untyped value (Any) needs a type in the parameters dialect: it is shown as a string",
                )
                self.blockers.append(f"{path}: an untyped value (Any) the model can only send as text")
        if node.get("type") == "array" and "items" not in node:
            node["items"] = {"type": "STRING"}
            self.edit.record(path, "converted", "items", "an array needs typed items: they are shown as strings")
            self.blockers.append(f"{path}: array items the model can only send as text")
        if isinstance(node.get("type"), str):
            node["type"] = node["type"].upper()


def _is_null(schema: dict[str, Any]) -> bool:
    return schema.get("type") in ("null", "NULL") and not (set(schema) - {"type", "description", "nullable"})


def _merge(into: dict[str, Any], part: dict[str, Any], path: str) -> None:
    for key, value in part.items():
        if key not in into:
            into[key] = copy.deepcopy(value)
        elif key == "properties":
            for name, schema in value.items():
                if name in into[key]:
                    _merge(into[key][name], schema, f"{path}.{name}")
                else:
                    into[key][name] = copy.deepcopy(schema)
        elif key == "required":
            into[key] = list(dict.fromkeys([*into[key], *value]))
        elif key in ("minimum", "minItems", "minLength", "minProperties"):
            into[key] = max(into[key], value)
        elif key in ("maximum", "maxItems", "maxLength", "maxProperties"):
            into[key] = min(into[key], value)
        elif key == "description":
            if value not in into[key]:
                into[key] = f"{into[key]} ({value})"
        elif key == "nullable":
            into[key] = into[key] and value
        elif key == "enum":
            into[key] = [v for v in into[key] if v in value]
        elif into[key] != value:
            raise ProviderError(f"{path}: allOf members disagree on {key}, so they cannot be flattened")


def _ref_path(ref: str) -> str:
    if ref == "#":
        return "$"
    return "$." + ".".join(part.replace("~1", "/").replace("~0", "~") for part in ref[2:].split("/"))
