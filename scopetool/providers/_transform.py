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
from typing import Any, Final

from .._json import JsonObject, is_object
from ._common import Change, ChangeAction

__all__ = ["Edit", "Transformed", "openai_strict", "subschemas"]

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
    "maxProperties", "patternProperties", "propertyNames",
)  # fmt: skip
OPENAI_TYPED: Final = ("type", "$ref", "anyOf", "enum", "const")
_LOOKAROUND: Final = ("(?=", "(?!", "(?<=", "(?<!", "\\1", "\\2", "\\k<")


def openai_strict(schema: dict[str, Any]) -> Transformed:
    """Fit a schema to OpenAI's strict subset, or say why it cannot be.

    Objects are closed, every property is required (optional ones made nullable), `oneOf` becomes
    `anyOf`, defaults and annotations go. A schema that cannot meet the subset comes back unchanged,
    with the reasons in `not_strict`.
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
    for keyword in OPENAI_UNSUPPORTED:
        if keyword in node:
            edit.refuse(path, f"{keyword} is not in the strict subset")
    if "format" in node and node["format"] not in OPENAI_FORMATS:
        edit.refuse(path, f"format {node['format']!r} is not one strict mode supports")
    if isinstance(node.get("pattern"), str) and any(marker in node["pattern"] for marker in _LOOKAROUND):
        edit.refuse(path, "patterns with lookaround or backreferences are not supported")
    ref = node.get("$ref")
    if isinstance(ref, str):
        if not (ref == "#" or ref.startswith(("#/$defs/", "#/definitions/"))):
            edit.refuse(path, f"$ref {ref!r} is not a local definition")
        siblings = [k for k in node if k != "$ref"]
        if siblings:
            wrapped = {k: node.pop(k) for k in siblings}
            node["anyOf"] = [{"$ref": node.pop("$ref")}]
            node.update(wrapped)
            edit.record(path, "converted", "$ref", "a $ref with siblings is wrapped in anyOf")
    kind = node.get("type")
    is_object = (
        kind == "object" or (isinstance(kind, list) and "object" in kind) or ("properties" in node and kind is None)
    )
    if is_object:
        _openai_object(node, path, edit)
    if kind == "array" or (isinstance(kind, list) and "array" in kind):
        _openai_array(node, path, edit)
    if path != "$" and not any(k in node for k in OPENAI_TYPED) and not path.endswith(("$defs", "definitions")):
        edit.refuse(path, "a value without a type (Any) cannot be strict")
    for child_path, child in list(subschemas(node, path)):
        if depth < 64:
            _openai_node(child, child_path, edit, root, depth + 1)


def _openai_object(node: dict[str, Any], path: str, edit: Edit) -> None:
    if node.get("type") is None:
        node["type"] = "object"
    properties: JsonObject = node.setdefault("properties", {})
    extra = node.get("additionalProperties", False)
    if extra is not False:
        edit.refuse(path, "an open object (dict) cannot be closed without changing its meaning")
    elif "additionalProperties" not in node:
        node["additionalProperties"] = False
        edit.record(path, "closed", "additionalProperties", "strict mode needs closed objects")
    required = list(node.get("required", []))
    for name, prop in properties.items():
        if name in required or not is_object(prop):
            continue
        before = json.dumps(prop, sort_keys=True)
        _make_nullable(prop)
        if json.dumps(prop, sort_keys=True) != before:
            edit.null_defaults.append(f"{path}.{name}")
            edit.record(f"{path}.{name}", "nullable", "required", "made required and nullable; null means omitted")
        else:
            edit.record(f"{path}.{name}", "required", "required", "strict mode needs every property required")
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
    prefix = node.get("prefixItems")
    if prefix is not None:
        distinct = {json.dumps(item, sort_keys=True) for item in prefix}
        if len(distinct) == 1 and node.get("items") in (None, False):
            node["items"] = prefix[0]
            node.pop("prefixItems")
            node["minItems"] = node["maxItems"] = len(prefix)
            edit.record(path, "converted", "prefixItems", "a same-typed tuple becomes items with a fixed length")
        else:
            edit.refuse(path, "tuples of different types (prefixItems) are not in the strict subset")
            return
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
