"""Schema transforms shared by the provider adapters, starting with OpenAI's strict mode.

Each transform takes the contract's canonical input schema and returns the schema the provider is
shown, with every change recorded. The contract keeps enforcing the original, so what a transform
drops from the model's view is still checked on admission.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal, final

from .._json import JsonObject, is_array, is_object

__all__ = [
    "Change",
    "ChangeAction",
    "Edit",
    "Transformed",
    "allows_null",
    "close_object",
    "openai_strict",
    "resolve_ref",
    "same_typed_tuple",
    "subschemas",
    "to_items",
]


ChangeAction = Literal["dropped", "described", "closed", "nullable", "inlined", "converted", "required"]


@final
@dataclass(frozen=True, slots=True)
class Change:
    """One change an export made to a tool's schema so the provider accepts it."""

    path: str
    """Where, as a JSON path into the schema (``$`` is the root, ``$defs`` names a definition)."""
    action: ChangeAction
    """What was done: dropped, moved into the description, closed, made nullable, inlined, converted,
    or marked required."""
    keyword: str
    """The JSON Schema keyword concerned."""
    reason: str
    """Why, in a few words."""

    def __str__(self) -> str:
        return f"{self.path}: {self.keyword} {self.action} ({self.reason})"


ANNOTATIONS: Final = (
    "$schema",
    "title",
    "discriminator",
    "examples",
    "$comment",
    "readOnly",
    "writeOnly",
    "deprecated",
)
"""Keywords that only annotate; providers' strict modes refuse some of them."""


@dataclass
class Edit:
    """Collects what a transform did to one schema."""

    changes: list[Change] = field(default_factory=list[Change])
    not_strict: list[str] = field(default_factory=list[str])
    null_defaults: list[str] = field(default_factory=list[str])

    def record(self, path: str, action: ChangeAction, keyword: str, reason: str) -> None:
        """Note one change."""
        self.changes.append(Change(path=path, action=action, keyword=keyword, reason=reason))

    def refuse(self, path: str, reason: str) -> None:
        """Note why strict mode cannot be used."""
        message = f"{path}: {reason}"
        if message not in self.not_strict:
            self.not_strict.append(message)


@dataclass(frozen=True)
class Transformed:
    """A transform's result: the schema to show, and what it took."""

    schema: dict[str, Any]
    changes: tuple[Change, ...]
    not_strict: tuple[str, ...]
    null_defaults: tuple[str, ...]

    @property
    def strict(self) -> bool:
        """Whether the schema met the strict rules."""
        return not self.not_strict


def subschemas(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every direct subschema of `schema` that is an object, with its path."""
    for key in ("properties", "$defs", "definitions", "patternProperties"):
        members: JsonObject = schema.get(key) or {}
        for name, child in members.items():
            if is_object(child):
                yield f"{path}.{key}.{name}" if key != "properties" else f"{path}.{name}", child
    for key in ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"):
        child = schema.get(key)
        if is_object(child):
            yield f"{path}.{key}", child
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for index, child in enumerate(schema.get(key) or []):
            if is_object(child):
                yield f"{path}.{key}[{index}]", child


# -- what every strict mode shares: closing objects, and tuples as arrays --------------------------

OPEN_OBJECT: Final = (
    "an open object (without additionalProperties, JSON Schema admits members it does not name): "
    "closing it would forbid calls the contract admits"
)
"""Why an object without ``additionalProperties`` cannot be closed (a hand-written schema's common case)."""
_APPLICATORS: Final = ("allOf", "anyOf", "oneOf", "not", "$ref", "if", "then", "else", "dependentSchemas")


def close_object(node: dict[str, Any], path: str, edit: Edit) -> None:
    """Make sure an object schema is closed for a strict mode, or refuse strict mode where it cannot be.

    Strict modes hold the model to closed objects (``additionalProperties: false``). Closing is only
    done where it keeps the object's meaning: ``unevaluatedProperties: false`` with no applicator
    beside it already admits exactly the named properties, and becomes ``additionalProperties:
    false``. Anything else that admits unnamed members is open, and closing it would forbid calls the
    contract admits: a missing ``additionalProperties`` (open in JSON Schema), ``true`` or a schema
    (a ``dict``), or ``patternProperties``. The tool then falls back to non-strict, with the reason.
    """
    extra = node.get("additionalProperties")
    if node.get("patternProperties"):
        edit.refuse(path, "an open object (patternProperties) cannot be closed without forbidding its members")
    if extra is False:
        return
    if extra is None:
        if node.get("unevaluatedProperties") is False and not any(k in node for k in _APPLICATORS):
            del node["unevaluatedProperties"]
            node["additionalProperties"] = False
            edit.record(
                path, "closed", "additionalProperties", "unevaluatedProperties: false with no applicator means the same"
            )
        else:
            edit.refuse(path, OPEN_OBJECT)
        return
    edit.refuse(path, "an open object (dict) cannot be closed without changing its meaning")


def same_typed_tuple(node: dict[str, Any]) -> bool:
    """Whether a ``prefixItems`` tuple can become ``items`` without forbidding an array it admits.

    Every position must have the same schema, and what may follow the positions must be nothing
    (``items: false``, or ``maxItems`` no more than the positions) or that same schema. The rewrite
    keeps ``minItems`` and ``maxItems`` as written: ``prefixItems`` alone sets no length.
    """
    prefix = node.get("prefixItems")
    if not is_array(prefix) or not prefix:
        return False
    first = json.dumps(prefix[0], sort_keys=True)
    if any(json.dumps(item, sort_keys=True) != first for item in prefix):
        return False
    rest = node.get("items")
    limit = node.get("maxItems")
    bounded = isinstance(limit, int) and not isinstance(limit, bool) and limit <= len(prefix)
    return rest is False or (rest is None and bounded) or json.dumps(rest, sort_keys=True) == first


def to_items(node: dict[str, Any]) -> None:
    """Rewrite a tuple `same_typed_tuple` accepted as ``items`` (with ``maxItems`` where nothing may follow)."""
    prefix = node.pop("prefixItems")
    if node.get("items") is False:
        node["maxItems"] = min(node.get("maxItems", len(prefix)), len(prefix))
    node["items"] = prefix[0]


def describe(node: dict[str, Any], text: str) -> None:
    """Append `text` to a node's description (a keyword the model can no longer see, in words)."""
    current = node.get("description")
    node["description"] = f"{current} ({text})" if current else f"({text})"


# -- OpenAI strict (Chat Completions `function.strict`, Responses `strict`) -----------------------

OPENAI_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
OPENAI_UNSUPPORTED: Final = (
    "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "unevaluatedProperties",
    "unevaluatedItems", "contains", "minContains", "maxContains", "uniqueItems", "minProperties",
    "maxProperties", "propertyNames",
)  # fmt: skip
OPENAI_TYPED: Final = ("type", "$ref", "anyOf", "enum", "const")
_LOOKAROUND: Final = ("(?=", "(?!", "(?<=", "(?<!", "\\1", "\\2", "\\k<")


def openai_strict(schema: dict[str, Any]) -> Transformed:
    """Fit a schema to OpenAI's strict subset, or say why it cannot be.

    Objects must be closed already (`close_object`), every property is made required (optional ones
    nullable, see `_require_all`), `oneOf` becomes `anyOf`, defaults and annotations go. A schema
    that cannot meet the subset comes back unchanged, with the reasons in `not_strict`.
    """
    edit = Edit()
    result = copy.deepcopy(schema)
    if result.get("type") != "object" or any(k in result for k in ("anyOf", "oneOf", "allOf")):
        edit.refuse("$", "the root must be a plain object schema")
    _openai_node(result, "$", edit, result, 0)
    if edit.not_strict:
        return Transformed(
            schema=copy.deepcopy(schema), changes=(), not_strict=tuple(edit.not_strict), null_defaults=()
        )
    _check_limits(result, edit)
    if edit.not_strict:
        return Transformed(
            schema=copy.deepcopy(schema), changes=(), not_strict=tuple(edit.not_strict), null_defaults=()
        )
    return Transformed(result, tuple(edit.changes), (), tuple(edit.null_defaults))


def _openai_node(node: dict[str, Any], path: str, edit: Edit, root: dict[str, Any], depth: int) -> None:
    for keyword in ANNOTATIONS:
        if keyword in node:
            del node[keyword]
            edit.record(path, "dropped", keyword, "an annotation strict mode refuses")
    if "default" in node:
        default = node.pop("default")
        describe(node, f"default: {json.dumps(default, ensure_ascii=False)}")
        edit.record(path, "described", "default", "strict mode refuses defaults")
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
        edit.record(path, "converted", "oneOf", "strict mode has only anyOf (the branches are disjoint)")
    if "allOf" in node:
        members = node.pop("allOf")
        if len(members) == 1 and isinstance(members[0], dict):
            node.update({k: v for k, v in members[0].items() if k not in node})
            edit.record(path, "inlined", "allOf", "a single-member allOf merged into its parent")
        else:
            edit.refuse(path, "allOf with several members is not in the strict subset")
    if "format" in node and node["format"] not in OPENAI_FORMATS:
        edit.refuse(path, f"format {node['format']!r} is not one strict mode supports")
    if isinstance(node.get("pattern"), str) and any(marker in node["pattern"] for marker in _LOOKAROUND):
        edit.refuse(path, "patterns with lookaround or backreferences are not supported")
    ref = node.get("$ref")
    if isinstance(ref, str):
        if not (ref == "#" or ref.startswith(("#/$defs/", "#/definitions/"))):
            edit.refuse(path, f"$ref {ref!r} is not a local definition")
        siblings = [k for k in node if k != "$ref"]
        if siblings and not edit.not_strict:  # once refused, the schema is sent unchanged
            wrapped = {k: node.pop(k) for k in siblings}
            node["anyOf"] = [{"$ref": node.pop("$ref")}]
            node.update(wrapped)
            edit.record(path, "converted", "$ref", "a $ref with siblings is wrapped in anyOf")
    kind = node.get("type")
    is_object = (
        kind == "object" or (isinstance(kind, list) and "object" in kind) or ("properties" in node and kind is None)
    )
    optional = _openai_object(node, path, edit) if is_object else {}
    marks = (len(edit.null_defaults), len(edit.changes))
    for keyword in OPENAI_UNSUPPORTED:
        if keyword in node:
            edit.refuse(path, f"{keyword} is not in the strict subset")
    if kind == "array" or (isinstance(kind, list) and "array" in kind):
        _openai_array(node, path, edit)
    if path != "$" and not any(k in node for k in OPENAI_TYPED) and not path.endswith(("$defs", "definitions")):
        edit.refuse(path, "a value without a type (Any) cannot be strict")
    for child_path, child in list(subschemas(node, path)):
        if depth < 64:
            _openai_node(child, child_path, edit, root, depth + 1)
    if is_object:
        _require_all(node, path, edit, root, optional=optional, marks=marks)


def _openai_object(node: dict[str, Any], path: str, edit: Edit) -> dict[str, bool]:
    """Close an object; its optional properties, each with whether its default is null (read before it goes)."""
    if node.get("type") is None:
        node["type"] = "object"
    close_object(node, path, edit)
    properties: JsonObject = node.setdefault("properties", {})
    for name, prop in properties.items():
        if not is_object(prop):  # true (any value) or false (never): neither is in the subset
            edit.refuse(f"{path}.{name}", f"a boolean schema ({json.dumps(prop)}) cannot be strict")
    required = node.get("required", [])
    return {
        name: is_object(prop) and "default" in prop and prop["default"] is None
        for name, prop in properties.items()
        if name not in required
    }


def _require_all(
    node: dict[str, Any],
    path: str,
    edit: Edit,
    root: dict[str, Any],
    *,
    optional: dict[str, bool],
    marks: tuple[int, int],
) -> None:
    """Make every property required, once the properties are themselves strict; optional ones made nullable.

    The model then sends ``null`` for "omitted" (`Edit.null_defaults`), which `repair_nulls` takes out
    again. A property that already admits ``null`` cannot say "omitted" that way: it is only made
    required when ``null`` is its default anyway; otherwise strict mode is refused. What is found is
    recorded at `marks` (where the object's own entries began), before its properties' entries.
    """
    properties: JsonObject = node["properties"]
    nullable: list[str] = []
    changes = Edit()
    for name, null_default in optional.items():
        prop = properties[name]
        where = f"{path}.{name}"
        if not is_object(prop) or not any(keyword in prop for keyword in OPENAI_TYPED):
            continue  # already refused: a boolean schema, or a value without a type
        elif allows_null(prop, root, 0):
            if null_default:
                changes.record(where, "required", "required", "made required; it admits null, its default")
            else:
                edit.refuse(where, "optional and already nullable: required, null could not mean omitted")
        else:
            _make_nullable(prop)
            nullable.append(where)
            changes.record(where, "nullable", "required", "made required and nullable; null means omitted")
    edit.null_defaults[marks[0] : marks[0]] = nullable
    edit.changes[marks[1] : marks[1]] = changes.changes
    node["required"] = list(properties)


def _make_nullable(prop: dict[str, Any]) -> None:
    kind = prop.get("type")
    if "$ref" in prop or "anyOf" in prop or "oneOf" in prop:
        choices = prop.pop("anyOf", None) or prop.pop("oneOf", None) or [{"$ref": prop.pop("$ref")}]
        if not any(c.get("type") == "null" for c in choices if is_object(c)):
            choices.append({"type": "null"})
        prop["anyOf"] = choices
    elif "enum" in prop:
        if None not in prop["enum"]:
            prop["enum"] = [*prop["enum"], None]
        if isinstance(kind, str):
            prop["type"] = [kind, "null"]
    elif "const" in prop:
        prop["anyOf"] = [
            {"const": prop.pop("const"), **({"type": prop.pop("type")} if "type" in prop else {})},
            {"type": "null"},
        ]
    elif isinstance(kind, str) and kind != "null":
        prop["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        prop["type"] = [*kind, "null"]


def _openai_array(node: dict[str, Any], path: str, edit: Edit) -> None:
    if "prefixItems" in node:
        if not same_typed_tuple(node):
            edit.refuse(path, "this tuple (prefixItems) cannot be written as items: it is not in the strict subset")
            return
        to_items(node)
        edit.record(path, "converted", "prefixItems", "a same-typed tuple becomes items, its length kept")
    items = node.get("items")
    if not isinstance(items, dict) or not any(k in items for k in OPENAI_TYPED):
        edit.refuse(path, "array items need a type")


def _check_limits(schema: dict[str, Any], edit: Edit) -> None:
    properties = 0
    enum_values = 0
    chars = 0

    def visit(node: dict[str, Any], depth: int) -> None:
        nonlocal properties, enum_values, chars
        if depth > 10:
            edit.refuse("$", "more than 10 levels of nesting")
            return
        props: JsonObject = node.get("properties") or {}
        properties += len(props)
        chars += sum(len(name) for name in props)
        for value in node.get("enum") or ():
            enum_values += 1
            chars += len(str(value))
        for _, child in subschemas(node, ""):
            visit(child, depth + (1 if child.get("type") == "object" else 0))

    visit(schema, 1)
    if properties > 5000:
        edit.refuse("$", f"{properties} properties (the limit is 5000)")
    if enum_values > 1000:
        edit.refuse("$", f"{enum_values} enum values (the limit is 1000)")
    if chars > 120_000:
        edit.refuse("$", f"{chars} characters of names and enum values (the limit is 120000)")


def walk(node: Any, visit: Callable[[dict[str, Any], str], None], path: str = "$") -> None:
    """Call `visit` on `node` and every subschema below it, parents first."""
    if not is_object(node):
        return
    visit(node, path)
    for child_path, child in list(subschemas(node, path)):
        walk(child, visit, child_path)


def allows_null(schema: Any, root: JsonObject, depth: int) -> bool:
    """Whether `schema` admits ``null`` (local ``$ref``s followed, `depth` bounding the walk)."""
    if schema is True or schema == {}:
        return True
    if not is_object(schema) or depth > 32:
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if None in schema.get("enum", [1]) or ("const" in schema and schema["const"] is None):
        return True
    ref = schema.get("$ref")
    if isinstance(ref, str) and allows_null(resolve_ref(ref, root), root, depth + 1):
        return True
    return any(allows_null(choice, root, depth + 1) for choice in schema.get("anyOf", []) + schema.get("oneOf", []))


def resolve_ref(ref: str, root: JsonObject) -> Any:
    """The node a local ``$ref`` (``#`` or a JSON pointer ``#/...``) names in `root`, or None."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part.replace("~1", "/").replace("~0", "~")) if is_object(node) else None
    return node
