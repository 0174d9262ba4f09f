"""Ollama's tool-schema dialect: only what its server and Python client keep of a JSON Schema.

Ollama reads tool parameters into fixed structures and silently drops every other keyword before
the model's chat template sees them: the parameters object keeps ``type``, ``properties`` and
``required``; each property (ollama-python, the stricter of the two) keeps only ``type`` (a string
or a list), ``items``, ``description`` and ``enum``. So the transform:

1. inlines every ``$ref`` (siblings such as ``description`` win over the definition) and drops
   ``$defs``; a recursive schema cannot be inlined and raises `ProviderError` naming the tool;
2. drops annotations (``title``, ``discriminator``...), turns ``const`` into a one-value ``enum``,
   merges a one-member ``allOf``, writes ``anyOf: [X, {"type": "null"}]`` as X with
   ``type: [X, "null"]`` (and ``null`` in its ``enum``), and a union of plain types as a type list;
3. keeps only the keys above, and moves every other keyword of a property (bounds, ``pattern``,
   ``format``, ``default``, nested ``properties`` and ``required``, typed-dict
   ``additionalProperties``, tuple ``prefixItems``, unions of models...) into its description as
   ``(keyword: JSON)``, so the model still reads it. A same-typed tuple becomes ``items``.

Every change is recorded; the contract still enforces everything the model no longer sees.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

from .._json import JsonObject, is_array, is_object, json_type
from ._common import ProviderError
from ._transform import ANNOTATIONS, Edit, Transformed, describe, subschemas

__all__ = ["PROPERTY_KEYS", "ROOT_KEYS", "ollama_schema"]

ROOT_KEYS: Final = ("type", "properties", "required")
"""What Ollama keeps of the parameters object (it also keeps ``$defs``, which nothing can use once
``$ref`` is gone)."""
PROPERTY_KEYS: Final = ("type", "items", "description", "enum")
"""What ollama-python keeps of each property (``Tool.Function.Parameters.Property``)."""

_ENFORCED: Final = "Ollama drops this keyword; the contract still enforces it"
_REASONS: Final = {
    "default": "Ollama drops defaults; the contract applies the default when the field is omitted",
    "properties": "Ollama keeps no nested object structure; the contract still enforces it",
    "required": "Ollama keeps no nested object structure; the contract still enforces it",
    "additionalProperties": "Ollama keeps no nested object structure; the contract still enforces it",
    "anyOf": "Ollama keeps no anyOf; the contract still enforces it",
    "oneOf": "Ollama keeps no oneOf; the contract still enforces it",
    "allOf": "Ollama keeps no allOf; the contract still enforces it",
}


def ollama_schema(schema: dict[str, Any], tool: str) -> Transformed:
    """Fit an input schema to what Ollama keeps, moving what it would drop into descriptions.

    Args:
        schema: The contract's input schema (an object schema).
        tool: The tool's name, for error messages.

    Returns:
        The schema to send and every change made; ``not_strict`` and ``null_defaults`` are empty
        (Ollama has no strict mode).

    Raises:
        ProviderError: The schema is recursive, or holds a ``$ref`` that does not point into itself.
    """
    edit = Edit()
    original = copy.deepcopy(schema)
    result = copy.deepcopy(schema)
    for key in ("$defs", "definitions"):
        if key in result:
            del result[key]
            edit.record("$", "dropped", key, "every $ref is inlined: Ollama resolves no references")
    _inline(result, "$", original, edit, tool=tool, stack=("#",))
    _normalize(result, "$", edit)
    _fit_root(result, edit)
    return Transformed(schema=result, changes=tuple(edit.changes), not_strict=(), null_defaults=())


# -- 1. inline references ------------------------------------------------------------------------


def _inline(
    node: dict[str, Any], path: str, root: dict[str, Any], edit: Edit, *, tool: str, stack: tuple[str, ...]
) -> None:
    while isinstance(node.get("$ref"), str):
        ref: str = node.pop("$ref")
        if ref in stack:
            raise ProviderError(
                f"tool {tool!r} cannot be exported to ollama: its schema is recursive ({ref} at {path}), and "
                "Ollama, which resolves no $ref, needs every reference inlined"
            )
        target = _resolve(ref, root)
        if not is_object(target):
            raise ProviderError(
                f"tool {tool!r} cannot be exported to ollama: $ref {ref!r} at {path} does not point into its own schema"
            )
        for key, value in copy.deepcopy(target).items():
            node.setdefault(key, value)
        edit.record(path, "inlined", "$ref", f"Ollama resolves no references: {ref} inlined")
        stack = (*stack, ref)
    for child_path, child in list(subschemas(node, path)):
        _inline(child, child_path, root, edit, tool=tool, stack=stack)


def _resolve(ref: str, root: dict[str, Any]) -> Any:
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if is_object(node):
            node = node.get(key)
        elif is_array(node) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


# -- 2. normalize: annotations, const, allOf, nullable and plain unions --------------------------


def _normalize(node: dict[str, Any], path: str, edit: Edit) -> None:
    members = node.get("allOf")
    if is_array(members) and len(members) == 1 and is_object(members[0]):
        del node["allOf"]
        for key, value in members[0].items():
            node.setdefault(key, value)
        edit.record(path, "inlined", "allOf", "a single-member allOf merged into its parent")
    if "const" in node and "enum" not in node:
        value = node.pop("const")
        node["enum"] = [value]
        if "type" not in node and json_type(value) not in ("array", "object"):
            node["type"] = json_type(value)
        edit.record(path, "converted", "const", "Ollama has no const: a one-value enum")
    for keyword in ("anyOf", "oneOf"):
        choices = node.get(keyword)
        if is_array(choices):
            _union(node, keyword, choices, path, edit)
    for keyword in ANNOTATIONS:  # last: a merged branch brings its own
        if keyword in node:
            del node[keyword]
            edit.record(path, "dropped", keyword, "an annotation Ollama drops")
    for child_path, child in list(subschemas(node, path)):
        _normalize(child, child_path, edit)


def _union(node: dict[str, Any], keyword: str, choices: list[Any], path: str, edit: Edit) -> None:
    others = [c for c in choices if c != {"type": "null"}]
    nullable = len(others) < len(choices)
    if (
        nullable
        and len(others) == 1
        and is_object(others[0])
        and (others[0] == {} or "type" in others[0] or "enum" in others[0])
    ):
        del node[keyword]
        for key, value in others[0].items():
            node.setdefault(key, value)
        _add_null(node)
        edit.record(path, "converted", keyword, "Ollama keeps no anyOf: a nullable value is written as a type list")
        return
    plain = [c.get("type") for c in choices if is_object(c) and set(c) == {"type"}]
    if "type" not in node and len(plain) == len(choices) and all(isinstance(t, str) for t in plain):
        del node[keyword]
        node["type"] = list(dict.fromkeys(plain))
        edit.record(
            path, "converted", keyword, "Ollama keeps no anyOf: a union of plain types is written as a type list"
        )
        return
    kinds: list[str] = []
    for choice in choices:
        kind = choice.get("type") if is_object(choice) else None
        if not isinstance(kind, str):
            return
        kinds.append(kind)
    if "type" not in node:
        distinct = list(dict.fromkeys(kinds))
        node["type"] = distinct[0] if len(distinct) == 1 else distinct
        edit.record(path, "converted", "type", f"set to the {keyword} branches' types, since Ollama drops {keyword}")


def _add_null(node: dict[str, Any]) -> None:
    kind = node.get("type")
    if isinstance(kind, str) and kind != "null":
        node["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        node["type"] = [*kind, "null"]
    enum = node.get("enum")
    if isinstance(enum, list) and None not in enum:
        node["enum"] = [*enum, None]


# -- 3. fit: keep what Ollama keeps, describe the rest -------------------------------------------


def _fit_root(root: dict[str, Any], edit: Edit) -> None:
    for key in list(root):
        if key in ROOT_KEYS:
            continue
        value = root.pop(key)
        if key == "additionalProperties" and value is False:
            edit.record(
                "$", "dropped", key, "Ollama keeps no additionalProperties; the contract still rejects unknown fields"
            )
        else:
            edit.record(
                "$",
                "dropped",
                key,
                "Ollama's parameters keep only type, properties and required; the contract still enforces it",
            )
    properties = root.get("properties")
    if is_object(properties):
        for name in list(properties):
            properties[name] = _fit_property(properties[name], f"$.{name}", edit)


def _fit_property(node: Any, path: str, edit: Edit) -> JsonObject:
    if not is_object(node):
        edit.record(path, "converted", "schema", "Ollama wants an object schema: a boolean schema in its object form")
        return {} if node else {"description": "(no value is accepted)"}
    described: list[str] = []
    for key in list(node):
        if key in PROPERTY_KEYS:
            continue
        value = node.pop(key)
        if key == "additionalProperties" and value is False:
            edit.record(
                path, "dropped", key, "Ollama keeps no additionalProperties; the contract still rejects unknown fields"
            )
        elif key == "prefixItems" and "items" not in node and _same(value):
            node["items"] = value[0]
            edit.record(path, "converted", key, "a same-typed tuple becomes items; its length is in the description")
        else:
            described.append(f"{key}: {json.dumps(value, ensure_ascii=False, separators=(',', ':'))}")
            edit.record(path, "described", key, _REASONS.get(key, _ENFORCED))
    if described:
        describe(node, "; ".join(described))
    items = node.get("items")
    if isinstance(items, dict | bool):
        node["items"] = _fit_property(items, f"{path}.items", edit)
    return node


def _same(prefix: Any) -> bool:
    return is_array(prefix) and len(prefix) > 0 and all(item == prefix[0] for item in prefix)
