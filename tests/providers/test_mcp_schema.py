"""Tests for MCP's schema shaping: `$ref` inlined and nullable unions as type lists, each exact."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from corpus import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st
from schema_values import ANY_JSON, values

from scopetool.providers import ProviderError, mcp
from scopetool.providers._mcp_schema import INLINE_LIMIT, client_schema
from scopetool.providers._transform import Change

ADDRESS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
HAND_MADE: dict[str, dict[str, Any]] = {
    "ref with annotations": {
        "type": "object",
        "properties": {"home": {"$ref": "#/$defs/A", "description": "Where they live."}},
        "$defs": {"A": ADDRESS},
    },
    "ref with an assertion beside it": {
        "type": "object",
        "properties": {"home": {"$ref": "#/$defs/A", "additionalProperties": False}},
        "$defs": {"A": ADDRESS},
    },
    "optional model": {
        "type": "object",
        "properties": {"home": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}], "default": None}},
        "$defs": {"A": ADDRESS},
    },
    "integer or bounded number": {
        "type": "object",
        "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "number", "minimum": 5}]}},
    },
    "optional enum": {
        "type": "object",
        "properties": {"e": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]}},
    },
    "string or bounded integer": {
        "type": "object",
        "properties": {"s": {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}]}},
    },
}
SCHEMAS = {**{f.definition().name: f.definition().input_schema for f in CORPUS}, **HAND_MADE}


def shaped(schema: dict[str, Any]) -> tuple[dict[str, Any], list[Change], list[str]]:
    """The shaped schema, its changes and notes."""
    changes: list[Change] = []
    notes: list[str] = []
    return client_schema(schema, "inputSchema", changes, notes), changes, notes


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_a_shaped_schema_admits_exactly_what_the_original_does(name: str, data: st.DataObject) -> None:
    """On values drawn from either schema and arbitrary JSON, the original and the shaped one agree."""
    original = SCHEMAS[name]
    result, _, _ = shaped(original)
    value = data.draw(st.one_of(values(original), values(result), ANY_JSON), label="value")
    before = jsonschema.Draft202012Validator(original).is_valid(value)
    assert jsonschema.Draft202012Validator(result).is_valid(value) == before


def test_what_real_clients_need_is_there() -> None:
    """No $ref or $defs is left where inlining is exact, and an Optional parameter has a top-level type."""
    for name in ("ref with annotations", "ref with an assertion beside it", "optional model"):
        result, changes, notes = shaped(HAND_MADE[name])
        assert '"$ref"' not in json.dumps(result) and "$defs" not in result, name
        assert notes == [] and changes[0].action == "inlined"
    home = shaped(HAND_MADE["optional model"])[0]["properties"]["home"]
    assert home == {**ADDRESS, "type": ["object", "null"], "default": None}
    annotated = shaped(HAND_MADE["ref with annotations"])[0]["properties"]["home"]
    assert annotated == {**ADDRESS, "description": "Where they live."}
    beside = shaped(HAND_MADE["ref with an assertion beside it"])[0]["properties"]["home"]
    assert beside == {"additionalProperties": False, "allOf": [ADDRESS]}  # never merged: that would change it
    for kept in ("integer or bounded number", "optional enum"):
        assert shaped(HAND_MADE[kept])[0] == HAND_MADE[kept]  # no exact type list exists for these
    with_true = {"type": "object", "properties": {"x": {"anyOf": [True, {"type": "null"}]}}}
    assert shaped(with_true) == (with_true, [], [])  # a boolean member is not a plain type
    assert shaped(HAND_MADE["string or bounded integer"])[0]["properties"]["s"] == {
        "type": ["string", "integer"],
        "maxLength": 2,
    }


def test_a_recursive_schema_keeps_its_defs_and_says_so() -> None:
    """A recursive model cannot be inlined: it is sent as it is, and a note in the report says why."""
    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
        },
    }
    result, changes, notes = shaped(tree)
    assert result == tree and changes == []
    assert notes == [
        "inputSchema: $ref kept with $defs (clients that drop $defs cannot use it): "
        "the schema is recursive (#/$defs/Node at $.root.kids.items)"
    ]


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        (
            {"type": "object", "properties": {"a": {"$ref": "https://example.org/a.json"}}},
            "is not a local JSON pointer",
        ),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, "does not name a schema"),
        ({"type": "object", "$defs": {"A": {"$id": "urn:a"}}, "properties": {"a": {"$ref": "#/$defs/A"}}}, "has $id"),
        (
            {"type": "object", "dependentSchemas": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": ADDRESS}},
            "a $ref under a keyword that is not inlined",
        ),
        (
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"a": {"$ref": "#/definitions/A", "maxProperties": 1}},
                "definitions": {"A": ADDRESS},
            },
            "drafts before 2019-09 ignore",
        ),
    ],
)
def test_a_reference_that_cannot_be_inlined_exactly_is_left_alone(schema: dict[str, Any], why: str) -> None:
    """Remote refs, dangling refs, $id, unvisited keywords and old drafts: the schema is sent as it is."""
    result, changes, notes = shaped(schema)
    assert result == schema and changes == []
    assert len(notes) == 1 and why in notes[0]


def test_inlining_that_would_explode_is_left_alone() -> None:
    """Shared definitions that multiply past INLINE_LIMIT nodes once inlined keep their $refs."""
    defs: dict[str, Any] = {"D0": {"type": "string"}}
    for level in range(1, 14):
        defs[f"D{level}"] = {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/D{level - 1}"}, "b": {"$ref": f"#/$defs/D{level - 1}"}},
        }
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/D13"}}, "$defs": defs}
    result, _, notes = shaped(schema)
    assert result == schema and f"more than {INLINE_LIMIT} nodes" in notes[0]


def test_tool_fields_are_sent_and_checked() -> None:
    """title, icons and _meta reach the Tool as given (copied); an unknown tool or field is refused by name."""
    add = CORPUS[1]
    fields = {
        "add": {
            "title": "Add",
            "icons": [{"src": "https://example.org/add.png", "sizes": ["48x48"]}],
            "_meta": {"k": 1},
        }
    }
    entry = mcp.export_tools([add], tool_fields=fields).tools[0]
    assert list(entry) == [
        "name",
        "title",
        "description",
        "icons",
        "inputSchema",
        "outputSchema",
        "annotations",
        "_meta",
    ]
    assert (entry["title"], entry["icons"], entry["_meta"]) == ("Add", fields["add"]["icons"], {"k": 1})
    assert entry["icons"] is not fields["add"]["icons"]
    for bad, message in [
        ({"nope": {"title": "x"}}, "tool_fields['nope']: no tool of that name is exported"),
        ({"add": {"name": "x"}}, "tool_fields['add']: 'name' is not one of title, icons, _meta"),
        ({"add": {"title": 3}}, "tool_fields['add']['title'] must be a string"),
        ({"add": {"icons": [{"href": "x"}]}}, "tool_fields['add']['icons'] must be a list of objects"),
        ({"add": {"icons": [{"src": "x", "theme": "blue"}]}}, "tool_fields['add']['icons'] must be a list"),
        ({"add": {"_meta": []}}, "tool_fields['add']['_meta'] must be an object"),
        ({"add": {"_meta": {"x": float("nan")}}}, "tool_fields['add'] is not JSON"),
        ({"add": []}, "tool_fields['add'] must be a mapping"),
        ([("add", {})], "tool_fields must be a mapping"),
    ]:
        with pytest.raises(ProviderError, match=message.replace("[", r"\[").replace("(", r"\(")):
            mcp.export_tools([add], tool_fields=bad)  # type: ignore[arg-type]
