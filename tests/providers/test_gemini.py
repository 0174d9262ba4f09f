"""Tests for the Gemini adapter: both schema dialects, tool config, function calls and function responses."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from corpus import CORPUS
from google.genai import types
from pydantic import BaseModel

from scopetool import (
    Binding,
    Definition,
    Failure,
    FailureKind,
    InputRequest,
    InvalidInvocationError,
    MediaBlock,
    Output,
    Registry,
    Request,
    Result,
    TextBlock,
    tool,
)
from scopetool.providers import Export, ProviderError, ToolCall, gemini, run_call
from scopetool.providers._gemini_schema import json_schema, openapi

SECRET = "s3cr3t-db-password-0xDEADBEEF"
RECURSIVE = {"tree"}  # corpus tools the OpenAPI subset cannot express

# -- Gemini's rules (providers.md §5.3, §5.4, §11.2), checked independently of the transforms ----------

MODE_A_REFUSED = {"$schema", "title", "discriminator", "examples", "$comment", "const"} | {
    "exclusiveMinimum",
    "exclusiveMaximum",
}
MODE_A_FORMATS = {"date-time", "date", "time"}
SCHEMA_FIELDS = {
    "type", "format", "description", "nullable", "enum", "items", "minItems", "maxItems", "properties", "required",
    "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf", "propertyOrdering",
    "default", "minimum", "maximum",
}  # fmt: skip
SCHEMA_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
PROPERTY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def nodes(schema: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema of a JSON Schema with its path (parents first)."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in ("properties", "$defs", "definitions", "patternProperties"):
        for name, child in (schema.get(key) or {}).items():
            yield from nodes(child, f"{path}.{key}.{name}")
    for key in ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"):
        yield from nodes(schema.get(key), f"{path}.{key}")
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for index, child in enumerate(schema.get(key) or []):
            yield from nodes(child, f"{path}.{key}[{index}]")


def mode_a_problems(schema: dict[str, Any]) -> list[str]:
    """What in a ``parametersJsonSchema`` Gemini would refuse (empty when it is acceptable)."""
    found: list[str] = []
    for path, node in nodes(schema):
        found.extend(f"{path}: {keyword}" for keyword in sorted(MODE_A_REFUSED & set(node)))
        if "format" in node and node["format"] not in MODE_A_FORMATS:
            found.append(f"{path}: format {node['format']}")
        if "$ref" in node:
            extra = {k for k in node if not k.startswith("$")} - {"description", "default"}
            if extra:
                found.append(f"{path}: $ref beside {sorted(extra)}")
    found.extend(required_recursion(schema))
    return found


def required_recursion(schema: dict[str, Any]) -> list[str]:
    """Definitions that reach themselves through required properties only."""
    defs = {f"#/$defs/{name}": node for name, node in (schema.get("$defs") or {}).items()}
    found: list[str] = []

    def refs(node: Any) -> Iterator[str]:
        if not isinstance(node, dict):
            return
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        required = set(node.get("required", []))
        for name, child in (node.get("properties") or {}).items():
            if name in required:
                yield from refs(child)
        for key in ("items", "additionalProperties"):
            yield from refs(node.get(key))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for child in node.get(key) or []:
                yield from refs(child)

    for start, node in defs.items():
        seen: set[str] = set()
        todo = list(refs(node))
        while todo:
            ref = todo.pop()
            if ref == start:
                found.append(f"{start}: recursion through required properties")
                break
            if ref in defs and ref not in seen:
                seen.add(ref)
                todo.extend(refs(defs[ref]))
    return found


def openapi_nodes(schema: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node of an OpenAPI-subset schema (properties, items and anyOf are its only children)."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for name, child in (schema.get("properties") or {}).items():
        yield from openapi_nodes(child, f"{path}.{name}")
    yield from openapi_nodes(schema.get("items"), f"{path}.items")
    for index, child in enumerate(schema.get("anyOf") or []):
        yield from openapi_nodes(child, f"{path}.anyOf[{index}]")


def mode_b_problems(schema: dict[str, Any]) -> list[str]:
    """What in a ``parameters`` schema Gemini would refuse (empty when it is acceptable)."""
    found: list[str] = []
    for path, node in openapi_nodes(schema):
        found.extend(f"{path}: unknown field {key}" for key in sorted(set(node) - SCHEMA_FIELDS))
        kind = node.get("type")
        if kind is None and "anyOf" not in node:
            found.append(f"{path}: no type")
        if kind is not None and kind not in SCHEMA_TYPES:
            found.append(f"{path}: type {kind!r}")
        if "enum" in node and (kind != "STRING" or not all(isinstance(v, str) for v in node["enum"])):
            found.append(f"{path}: non-string enum")
        if kind == "ARRAY" and "items" not in node:
            found.append(f"{path}: array without items")
        found.extend(
            f"{path}: property name {n!r}" for n in node.get("properties") or {} if not PROPERTY_NAME.fullmatch(n)
        )
        if "anyOf" in node and any("type" not in b and "anyOf" not in b for b in node["anyOf"]):
            found.append(f"{path}: untyped anyOf branch")
    return found


def sdk_declaration(declaration: dict[str, Any]) -> dict[str, Any]:
    """A declaration as the SDK reads and re-emits it (extra keys are refused)."""
    dumped: dict[str, Any] = types.FunctionDeclaration.model_validate(declaration).model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )
    return dumped


def declaration(export: Export, name: str) -> dict[str, Any]:
    """The exported declaration of one tool."""
    for entry in export.tools:
        if entry["name"] == name:
            return entry
    raise KeyError(name)


def export_schema(schema: dict[str, Any], mode: gemini.Mode = "openapi") -> tuple[dict[str, Any], Any]:
    """Export one hand-written input schema as tool ``t``: its declaration and its report."""
    export = gemini.export_tools(Definition(name="t", input_schema=schema), mode=mode)
    return export.tools[0], export.report.for_tool("t")


def obj(*required: str, **properties: Any) -> dict[str, Any]:
    """An object schema with `properties`, of which `required` are required."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def binding(name: str, registry: Registry) -> Binding:
    """The registered binding of a tool."""
    found = registry.resolve(name)
    assert found is not None
    return found


def changes(report: Any) -> set[tuple[str, str, str]]:
    """A report's changes as (path, keyword, action)."""
    return {(c.path, c.keyword, c.action) for c in report.changes}


# -- the corpus ----------------------------------------------------------------------------------

CLOSED = "the parameters dialect has no additionalProperties; the contract still refuses unknown members"

# Per corpus tool: the changes ("path keyword action", leaving out the closed objects' additionalProperties
# drops) and where the notes point ("VALIDATED" for the VALIDATED-mode note).
PINNED_JSON_SCHEMA: dict[str, set[str]] = {
    "pick": {"$.$defs.Color title dropped"},
    "level": {"$.$defs.Level title dropped"},
    "constant": {"$.kind const converted"},
    "bounded": {"$.ratio exclusiveMaximum described", "$.ratio exclusiveMinimum described"},
    "ident": {"$.value format described"},
    "lookup": {"$.$defs.Address title dropped"},
    "ship": {"$.$defs.Address title dropped", "$.$defs.Customer title dropped"},
    "optional_model": {"$.$defs.Address title dropped"},
    "addresses": {"$.$defs.Address title dropped"},
    "tree": {"$.$defs.Node title dropped"},
    "pet": {
        "$.$defs.Cat title dropped",
        "$.$defs.Cat.kind const converted",
        "$.$defs.Dog title dropped",
        "$.$defs.Dog.kind const converted",
        "$.animal discriminator dropped",
    },
    "plain_union": {
        "$.$defs.Cat title dropped",
        "$.$defs.Cat.kind const converted",
        "$.$defs.Dog title dropped",
        "$.$defs.Dog.kind const converted",
    },
}
ADDRESS = {
    "$.$defs.Address title dropped",
    "$.$defs.Address.postcode default dropped",
    "$.$defs.Address.postcode anyOf nullable",
}
ANIMALS = {
    "$ $defs inlined",
    "$.$defs.Cat title dropped",
    "$.$defs.Cat.kind const converted",
    "$.$defs.Dog title dropped",
    "$.$defs.Dog.kind const converted",
    "$.animal.anyOf[0] $ref inlined",
    "$.animal.anyOf[1] $ref inlined",
}
PINNED_OPENAPI: dict[str, tuple[set[str], tuple[str, ...]]] = {
    "maybe": ({"$.note default dropped", "$.note anyOf nullable"}, ()),
    "pick": ({"$ $defs inlined", "$.color $ref inlined", "$.$defs.Color title dropped"}, ()),
    "level": (
        {"$ $defs inlined", "$.value $ref inlined", "$.$defs.Level title dropped", "$.$defs.Level enum described"},
        (),
    ),
    "mode": ({"$.value enum described"}, ()),
    "constant": ({"$.kind const converted"}, ()),
    "bounded": ({"$.ratio exclusiveMaximum described", "$.ratio exclusiveMinimum described"}, ()),
    "unique": ({"$.items uniqueItems described"}, ()),
    "pair": ({"$.point prefixItems converted"}, ()),
    "mixed_tuple": ({"$.row prefixItems converted"}, ("$.row.items",)),
    "when": (
        {"$.at format described", "$.day anyOf nullable", "$.day default dropped", "$.day.anyOf[0] format described"},
        (),
    ),
    "ident": ({"$.value format described"}, ()),
    "money": (set(), ("$.amount",)),
    "either": (set(), ("$.value",)),
    "counts": ({"$.by_name additionalProperties dropped"}, ("VALIDATED",)),
    "anything": ({"$.payload type converted"}, ("VALIDATED",)),
    "lookup": ({"$ $defs inlined", "$.address $ref inlined"} | ADDRESS, ()),
    "ship": (
        {
            "$ $defs inlined",
            "$.customer $ref inlined",
            "$.$defs.Customer title dropped",
            "$.$defs.Customer.address $ref inlined",
        }
        | ADDRESS,
        (),
    ),
    "optional_model": (
        {
            "$ $defs inlined",
            "$.address anyOf nullable",
            "$.address default dropped",
            "$.address.anyOf[0] $ref inlined",
        }
        | ADDRESS,
        (),
    ),
    "addresses": ({"$ $defs inlined", "$.items.items $ref inlined"} | ADDRESS, ()),
    "pet": (ANIMALS | {"$.animal oneOf converted", "$.animal discriminator dropped"}, ()),
    "plain_union": (ANIMALS, ()),
    "window": (
        {
            "$.end default dropped",
            "$.end anyOf nullable",
            "$.end.anyOf[0] format described",
            "$.start format described",
        },
        (),
    ),
}
EXPRESSIBLE = [t for t in CORPUS if t.name not in RECURSIVE]


def test_corpus_is_large_enough() -> None:
    """The corpus holds at least 30 distinct signatures, and only the recursive one is refused in openapi mode."""
    assert len(CORPUS) >= 30
    assert len({t.name for t in CORPUS}) == len(CORPUS)
    assert len(EXPRESSIBLE) == len(CORPUS) - 1


def test_corpus_json_schema_declarations_validate_against_the_sdk() -> None:
    """Every json_schema declaration is a FunctionDeclaration the SDK re-emits unchanged."""
    export = gemini.export_tools(CORPUS)
    assert len(export.tools) == len(CORPUS)
    for entry in export.tools:
        assert sdk_declaration(entry) == entry
        assert set(entry) <= {"name", "description", "parametersJsonSchema", "responseJsonSchema"}
        assert entry["parametersJsonSchema"]["type"] == "object"
    assert types.Tool.model_validate(gemini.tool(export)).function_declarations is not None


def test_corpus_openapi_declarations_validate_against_the_sdk() -> None:
    """Every openapi declaration is a FunctionDeclaration, and each schema a types.Schema, re-emitted unchanged."""
    export = gemini.export_tools(EXPRESSIBLE, mode="openapi")
    for entry in export.tools:
        assert sdk_declaration(entry) == entry
        assert set(entry) <= {"name", "description", "parameters", "response"}
        for key in ("parameters", "response"):
            if key in entry:
                schema = types.Schema.model_validate(entry[key])
                assert schema.model_dump(by_alias=True, exclude_none=True, mode="json") == entry[key]
    assert "parameters" not in declaration(export, "ping")  # no arguments: no parameters at all
    described = Definition(name="d", description="D.", input_schema={"type": "object", "description": "Nothing."})
    assert gemini.export_tools(described, mode="openapi").tools[0]["parameters"] == {
        "type": "OBJECT",
        "description": "Nothing.",
    }
    assert declaration(export, "add")["parameters"]["type"] == "OBJECT"


def test_corpus_json_schemas_meet_gemini_rules() -> None:
    """No json_schema declaration holds a keyword, format or $ref form Gemini refuses, nor required recursion."""
    for entry in gemini.export_tools(CORPUS).tools:
        assert mode_a_problems(entry["parametersJsonSchema"]) == [], entry["name"]
        if "responseJsonSchema" in entry:
            assert mode_a_problems(entry["responseJsonSchema"]) == [], entry["name"]


def test_corpus_openapi_schemas_meet_gemini_rules() -> None:
    """Every openapi schema is in the subset: known fields only, typed nodes, string enums, valid names."""
    for entry in gemini.export_tools(EXPRESSIBLE, mode="openapi").tools:
        for key in ("parameters", "response"):
            if key in entry:
                assert mode_b_problems(entry[key]) == [], (entry["name"], key)


def test_the_oracles_catch_the_contract_schemas() -> None:
    """The raw contract schemas break the rules the checks above enforce (the checks can fail)."""
    raw = {t.name: t.definition().input_schema for t in CORPUS}
    assert mode_a_problems(raw["constant"]) == ["$.properties.kind: const"]
    assert "$.by_name: unknown field additionalProperties" in mode_b_problems(raw["counts"])
    with pytest.raises(Exception):  # noqa: B017 - a type list raises AttributeError, not ValidationError
        types.Schema.model_validate({"type": ["STRING", "NULL"]})
    with pytest.raises(Exception):  # noqa: B017
        types.Schema.model_validate(raw["constant"])


def test_corpus_json_schemas_are_valid_and_admit_what_the_contract_admits() -> None:
    """json_schema output is valid 2020-12 JSON Schema, and accepts arguments the contract accepts."""
    samples = {
        "add": {"a": 1, "b": 2},
        "constant": {"kind": "only"},
        "bounded": {"count": 3, "ratio": 0.25},
        "pet": {"animal": {"kind": "dog"}},
        "tree": {"label": "a", "children": [{"label": "b"}]},
        "ident": {"value": "8c1d7a3e-4f0e-4a59-9f2e-0d6c1a2b3c4d"},
    }
    export = gemini.export_tools(CORPUS)
    for entry in export.tools:
        jsonschema.Draft202012Validator.check_schema(entry["parametersJsonSchema"])
    for name, arguments in samples.items():
        jsonschema.validate(arguments, declaration(export, name)["parametersJsonSchema"])


def test_corpus_report_is_pinned() -> None:
    """The portability reports of both modes: every change and every note."""
    export = gemini.export_tools(CORPUS)
    assert export.report.provider == "gemini"
    found = {r.name: {f"{c.path} {c.keyword} {c.action}" for c in r.changes} for r in export.report.tools}
    assert {k: v for k, v in found.items() if v} == PINNED_JSON_SCHEMA
    assert all(r.strict is None and r.notes == () for r in export.report.tools)

    report = gemini.export_tools(EXPRESSIBLE, mode="openapi").report
    pinned = {
        r.name: (
            {f"{c.path} {c.keyword} {c.action}" for c in r.changes if c.reason != CLOSED},
            tuple("VALIDATED" if n.startswith(gemini.VALIDATED_NOTE) else n.split(":")[0] for n in r.notes),
        )
        for r in report.tools
    }
    assert {k: v for k, v in pinned.items() if v != (set(), ())} == PINNED_OPENAPI
    closed = {c.path for r in report.tools if r.name == "ship" for c in r.changes if c.reason == CLOSED}
    assert closed == {"$", "$.$defs.Customer", "$.$defs.Address"}


def test_corpus_report_serialises() -> None:
    """The report's dict form is JSON and names the VALIDATED blockers."""
    report = gemini.export_tools(EXPRESSIBLE, mode="openapi").report
    data = json.loads(json.dumps(report.to_dict()))
    assert [t["name"] for t in data["tools"]] == [t.name for t in EXPRESSIBLE]
    assert "$.by_name: a dict field the model can only send empty" in str(report)


def test_recursive_corpus_tool_is_refused_in_openapi_mode() -> None:
    """The recursive model cannot be inlined: the error names the tool and the reference."""
    with pytest.raises(ProviderError, match=r"tool 'tree'.*recursive \$ref '#/\$defs/Node'.*json_schema"):
        gemini.export_tools(CORPUS, mode="openapi")


async def test_constraints_dropped_from_the_view_are_still_enforced() -> None:
    """What the model no longer sees (exclusive bounds, dict members) the contract still checks or admits."""
    registry = Registry(*CORPUS)
    export = gemini.export_tools(EXPRESSIBLE, mode="openapi")
    assert "minimum" not in declaration(export, "bounded")["parameters"]["properties"]["ratio"]
    with pytest.raises(InvalidInvocationError, match=r"\$\.ratio"):
        binding("bounded", registry).contract.prepare(Request(name="bounded", arguments='{"count": 1, "ratio": 1}'))
    counts = binding("counts", registry)
    invocation = counts.contract.prepare(Request(name="counts", arguments='{"by_name": {"a": 2}}'))
    assert (await counts.call(invocation)).output.details_value() == 2


# -- json_schema mode (providers.md §11.2 mode A) ---------------------------------------------------


def test_json_schema_drops_annotations_and_records_each() -> None:
    """$schema, titles, examples, discriminators and comments go; a property named title stays."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "T",
        "$comment": "c",
        **obj("title", title={"type": "string", "title": "Title", "examples": ["x"]}),
    }
    entry, report = export_schema(schema, "json_schema")
    assert entry["parametersJsonSchema"] == obj("title", title={"type": "string"})
    assert changes(report) == {
        ("$", "$schema", "dropped"),
        ("$", "title", "dropped"),
        ("$", "$comment", "dropped"),
        ("$.title", "title", "dropped"),
        ("$.title", "examples", "dropped"),
    }


@pytest.mark.parametrize(
    ("const", "kind"), [(True, "boolean"), (3, "integer"), (2.5, "number"), ("x", "string"), (None, "null")]
)
def test_const_becomes_a_one_value_enum_with_its_type(const: Any, kind: str) -> None:
    """const -> enum [v], and the type is inferred from the value (booleans before integers)."""
    entry, report = export_schema(obj("v", v={"const": const}), "json_schema")
    assert entry["parametersJsonSchema"]["properties"]["v"] == {"enum": [const], "type": kind}
    assert changes(report) == {("$.v", "const", "converted")}


def test_exclusive_bounds_become_inclusive_for_integers_and_words_for_numbers() -> None:
    """An integer > 0 is >= 1; a tighter minimum already there wins; a number bound moves into the description."""
    schema = obj(
        i={"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10.5},
        j={"type": "integer", "exclusiveMinimum": 0, "minimum": 5},
        f={"type": "number", "exclusiveMinimum": 0, "description": "Ratio."},
    )
    for mode in ("json_schema", "openapi"):
        entry, report = export_schema(schema, mode)
        props = entry["parametersJsonSchema" if mode == "json_schema" else "parameters"]["properties"]
        assert (props["i"]["minimum"], props["i"]["maximum"]) == (1, 10)
        assert props["j"]["minimum"] == 5
        assert props["f"]["description"] == "Ratio. (greater than 0)"
        assert not any("exclusive" in key for p in props.values() for key in p)
        assert ("$.f", "exclusiveMinimum", "described") in changes(report)
        assert ("$.i", "exclusiveMaximum", "converted") in changes(report)


def test_json_schema_keeps_documented_formats_and_describes_the_others() -> None:
    """date-time, date and time stay; uuid and email move into the description."""
    formats = ["date-time", "date", "time", "uuid", "email"]
    schema = obj(**{f.replace("-", "_"): {"type": "string", "format": f} for f in formats})
    entry, report = export_schema(schema, "json_schema")
    props = entry["parametersJsonSchema"]["properties"]
    assert [props[k].get("format") for k in ("date_time", "date", "time")] == ["date-time", "date", "time"]
    assert props["uuid"] == {"type": "string", "description": "(format: uuid)"}
    assert {c.path for c in report.changes} == {"$.uuid", "$.email"}


def test_ref_keeps_description_and_default_and_wraps_other_siblings() -> None:
    """Only description and default may stand beside $ref; other keywords wrap it in anyOf."""
    schema = {
        **obj(
            a={"$ref": "#/$defs/L", "description": "A.", "default": [], "title": "A"},
            b={"$ref": "#/$defs/L", "maxItems": 3},
        ),
        "$defs": {"L": {"type": "array", "items": {"type": "integer"}}},
    }
    entry, report = export_schema(schema, "json_schema")
    props = entry["parametersJsonSchema"]["properties"]
    assert props["a"] == {"$ref": "#/$defs/L", "description": "A.", "default": []}
    assert props["b"] == {"anyOf": [{"$ref": "#/$defs/L"}], "maxItems": 3}
    assert ("$.b", "$ref", "converted") in changes(report)
    assert mode_a_problems(entry["parametersJsonSchema"]) == []


class Graph(BaseModel):
    """A model that recurses through required fields."""

    value: int
    kids: list[Graph]
    next: Graph | None


class Chain(BaseModel):
    """A model that recurses only through an optional field."""

    value: int
    next: Chain | None = None


@tool
def walk(graph: Graph, chain: Chain) -> int:
    """Walk two recursive structures."""
    return graph.value + chain.value


def test_recursion_through_required_properties_is_shown_optional() -> None:
    """Gemini unrolls recursion only through optional properties: required ones are shown optional."""
    export = gemini.export_tools([walk])
    schema = declaration(export, "walk")["parametersJsonSchema"]
    assert required_recursion(walk.definition().input_schema) == [
        "#/$defs/Graph: recursion through required properties"
    ]
    assert required_recursion(schema) == []
    assert schema["$defs"]["Graph"]["required"] == ["value"]
    assert schema["$defs"]["Chain"]["required"] == ["value"]  # already optional: untouched
    relaxed = {(c.path, c.keyword, c.action) for c in export.report.for_tool("walk").changes if c.keyword == "required"}
    assert relaxed == {("$.$defs.Graph.kids", "required", "dropped"), ("$.$defs.Graph.next", "required", "dropped")}


def test_the_contract_still_requires_what_recursion_relaxed() -> None:
    """A graph node without kids, which the model may now send, is still refused by the contract."""
    arguments = {"graph": {"value": 1, "kids": [{"value": 2, "next": None}], "next": None}, "chain": {"value": 3}}
    with pytest.raises(InvalidInvocationError, match=r"kids"):
        binding("walk", Registry(walk)).contract.prepare(Request(name="walk", arguments=json.dumps(arguments)))


def test_recursion_outside_properties_is_noted() -> None:
    """A definition that recurses through items alone cannot be shown optional: the report says so."""
    schema = {
        **obj("t", t={"$ref": "#/$defs/T"}),
        "$defs": {"T": {"type": "array", "items": {"$ref": "#/$defs/T"}}},
    }
    _, report = export_schema(schema, "json_schema")
    assert report.notes == (
        "$.$defs.T.items: a recursive $ref outside any optional property; Gemini unrolls recursion only through "
        "optional properties and may refuse this schema",
    )


def test_json_schema_keeps_what_gemini_accepts() -> None:
    """oneOf, anyOf, $defs, additionalProperties, prefixItems and bounds are left as they are."""
    schema = {
        **obj(
            "u",
            u={"oneOf": [{"type": "integer"}, {"type": "string"}]},
            d={"type": "object", "additionalProperties": {"type": "integer"}},
            p={"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2},
            n={"type": "number", "minimum": 0, "maximum": 1},
        ),
        "additionalProperties": False,
    }
    entry, report = export_schema(schema, "json_schema")
    assert entry["parametersJsonSchema"] == schema
    assert report.lossless


def test_transforms_never_change_their_input() -> None:
    """Both transforms work on copies."""
    schemas = [walk.definition().input_schema] + [t.definition().input_schema for t in EXPRESSIBLE]
    before = json.dumps(schemas, sort_keys=True)
    json_schema(schemas[0])
    for schema in schemas[1:]:
        json_schema(schema)
        openapi(schema)
    assert json.dumps(schemas, sort_keys=True) == before


# -- openapi mode (providers.md §11.2 mode B) --------------------------------------------------------


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, {"type": "INTEGER", "nullable": True}),
        ({"type": ["string", "null"]}, {"type": "STRING", "nullable": True}),
        (
            {"type": ["integer", "string"]},
            {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]},
        ),
        ({"enum": ["a", None]}, {"type": "STRING", "enum": ["a"], "nullable": True}),
        (
            {"anyOf": [{"type": "integer"}, {"type": "boolean"}, {"type": "null"}]},
            {"anyOf": [{"type": "INTEGER"}, {"type": "BOOLEAN"}], "nullable": True},
        ),
    ],
)
def test_nullables_become_nullable(prop: dict[str, Any], expected: dict[str, Any]) -> None:
    """A null branch, a null in a type list or an enum becomes nullable: true on a single type."""
    entry, _ = export_schema(obj("v", v=prop))
    assert entry["parameters"]["properties"]["v"] == expected
    types.Schema.model_validate(entry["parameters"])


def test_one_of_becomes_any_of_with_a_common_type() -> None:
    """A discriminated union's oneOf becomes anyOf; object branches give the node the type OBJECT."""
    entry, report = export_schema(obj("pet", pet={"oneOf": [obj(a={"type": "string"}), obj(b={"type": "string"})]}))
    pet = entry["parameters"]["properties"]["pet"]
    assert pet["type"] == "OBJECT"
    assert [list(b["properties"]) for b in pet["anyOf"]] == [["a"], ["b"]]
    assert ("$.pet", "oneOf", "converted") in changes(report)


def test_all_of_is_flattened() -> None:
    """allOf members merge: properties and required are joined, bounds tightened."""
    prop = {
        "allOf": [
            {**obj("a", a={"type": "integer", "minimum": 0}), "description": "First."},
            {**obj("b", a={"type": "integer", "minimum": 2}, b={"type": "string"})},
        ]
    }
    entry, report = export_schema(obj("v", v=prop))
    assert entry["parameters"]["properties"]["v"] == {
        "type": "OBJECT",
        "description": "First.",
        "properties": {"a": {"type": "INTEGER", "minimum": 2}, "b": {"type": "STRING"}},
        "required": ["a", "b"],
    }
    assert ("$.v", "allOf", "converted") in changes(report)


def test_conflicting_all_of_is_refused_naming_the_tool() -> None:
    """allOf members that disagree on a type cannot be flattened."""
    with pytest.raises(ProviderError, match=r"tool 't'.*\$\.v: allOf members disagree on type"):
        export_schema(obj("v", v={"allOf": [{"type": "integer"}, {"type": "string"}]}))


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"const": "x"}, {"type": "STRING", "enum": ["x"]}),
        ({"enum": [1, 2], "type": "integer"}, {"type": "INTEGER", "description": "(allowed values: 1, 2)"}),
        ({"enum": [1, 2.5]}, {"type": "NUMBER", "description": "(allowed values: 1, 2.5)"}),
        ({"const": True}, {"type": "BOOLEAN", "description": "(allowed values: true)"}),
        (
            {"enum": ["a", 1]},
            {
                "description": '(allowed values: "a", 1)',
                "anyOf": [{"type": "STRING", "enum": ["a"]}, {"type": "INTEGER"}],
            },
        ),
    ],
)
def test_enums_are_strings_only(prop: dict[str, Any], expected: dict[str, Any]) -> None:
    """String enums stay; other values keep their type and are stated in the description, never stringified."""
    entry, _ = export_schema(obj("v", v=prop))
    assert entry["parameters"]["properties"]["v"] == expected
    types.Schema.model_validate(entry["parameters"])


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        (
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}], "minItems": 2},
            {"type": "ARRAY", "items": {"type": "INTEGER"}, "minItems": 2, "maxItems": 2},
        ),
        (
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
            {
                "type": "ARRAY",
                "items": {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]},
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (
            {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
            {"type": "ARRAY", "items": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}, "minItems": 1},
        ),
    ],
)
def test_tuples_are_approximated(prop: dict[str, Any], expected: dict[str, Any]) -> None:
    """prefixItems -> items of any position type, with the tuple's length (open when more items may follow)."""
    entry, report = export_schema(obj("v", v=prop))
    assert entry["parameters"]["properties"]["v"] == expected
    assert ("$.v", "prefixItems", "converted") in changes(report)
    # prefixItems alone fixes no length, so the fixed one narrows the schema: VALIDATED stays off.
    blocker = "$.v: a tuple whose length the dialect fixes, though its schema does not"
    assert any(note.startswith(gemini.VALIDATED_NOTE) and blocker in note for note in report.notes), report.notes


def test_tuples_of_fixed_length_keep_validated() -> None:
    """A tuple whose schema fixes its length (as pydantic's do) is not narrowed: VALIDATED stays on."""
    prop = {"type": "array", "prefixItems": [{"type": "integer"}] * 2, "minItems": 2, "maxItems": 2}
    schema = obj("v", v=prop) | {"additionalProperties": False}
    export = gemini.export_tools(Definition(name="t", input_schema=schema), mode="openapi")
    assert gemini.tool_config(export) == {"functionCallingConfig": {"mode": "VALIDATED"}}


@pytest.mark.parametrize(
    "member",
    [
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"type": "object", "additionalProperties": True},
        {"type": "object", "patternProperties": {"^x": {"type": "integer"}}},
    ],
)
def test_dict_fields_are_dropped_with_a_report_entry(member: dict[str, Any]) -> None:
    """A dict's value schema goes; the report says the field arrives empty and keeps VALIDATED off."""
    schema = obj("d", d=member) | {"additionalProperties": False}
    export = gemini.export_tools(Definition(name="t", input_schema=schema), mode="openapi")
    assert export.tools[0]["parameters"]["properties"]["d"] == {"type": "OBJECT"}
    report = export.report.for_tool("t")
    [change] = [c for c in report.changes if c.path == "$.d"]
    assert change.action == "dropped" and "arrives empty" in change.reason
    assert report.notes == (gemini.VALIDATED_NOTE + "$.d: a dict field the model can only send empty",)
    assert gemini.tool_config(export) == {"functionCallingConfig": {"mode": "AUTO"}}


def test_open_objects_keep_validated_off() -> None:
    """An object without additionalProperties admits unnamed members the dialect cannot declare: no VALIDATED."""
    schema = obj("a", a={"type": "string"}, o={"type": "object", "properties": {}, "additionalProperties": False})
    export = gemini.export_tools(Definition(name="t", input_schema=schema), mode="openapi")
    report = export.report.for_tool("t")
    assert report.notes == (
        gemini.VALIDATED_NOTE + "$: an open object (no additionalProperties): the model can send only its properties",
    )
    assert gemini.tool_config(export) == {"functionCallingConfig": {"mode": "AUTO"}}
    closed = gemini.export_tools(
        Definition(name="t", input_schema=schema | {"additionalProperties": False}), mode="openapi"
    )
    assert gemini.tool_config(closed) == {"functionCallingConfig": {"mode": "VALIDATED"}}


def test_closed_objects_lose_additional_properties_but_keep_validated() -> None:
    """additionalProperties false is dropped too (the contract refuses unknown members): VALIDATED stays."""
    export = gemini.export_tools([CORPUS[1]], mode="openapi")
    assert "additionalProperties" not in export.tools[0]["parameters"]
    assert [c.reason for c in export.report.tools[0].changes] == [CLOSED]
    assert gemini.tool_config(export) == {"functionCallingConfig": {"mode": "VALIDATED"}}


def test_unknown_keywords_are_dropped_or_described() -> None:
    """Only types.Schema fields remain; scalar constraints are told in the description, the rest dropped."""
    prop = {
        "type": "array",
        "items": {"type": "number", "multipleOf": 0.5},
        "uniqueItems": True,
        "contains": {"type": "number"},
        "x-vendor": 1,
        "not": {"type": "null"},
        "$id": "urn:x",
        "readOnly": True,
    }
    entry, report = export_schema(obj("v", v=prop))
    assert entry["parameters"]["properties"]["v"] == {
        "type": "ARRAY",
        "items": {"type": "NUMBER", "description": "(multipleOf: 0.5)"},
        "description": "(uniqueItems: true)",
    }
    assert {(c.keyword, c.action) for c in report.changes if c.path.startswith("$.v")} == {
        ("$id", "dropped"),
        ("readOnly", "dropped"),
        ("uniqueItems", "described"),
        ("contains", "dropped"),
        ("x-vendor", "dropped"),
        ("not", "dropped"),
        ("multipleOf", "described"),
    }


def test_every_node_gets_a_type() -> None:
    """Any becomes a string (and keeps VALIDATED off); bare arrays get string items; implied types are set."""
    schema = obj(
        any_value={},
        bare={"type": "array"},
        untyped_items={"type": "array", "items": True},
        implied={"properties": {"x": {"type": "integer"}}},
    )
    entry, report = export_schema(schema)
    props = entry["parameters"]["properties"]
    assert props["any_value"] == {"type": "STRING", "description": "(any JSON value, shown as text)"}
    assert props["bare"]["items"] == {"type": "STRING"}
    assert props["untyped_items"]["items"]["type"] == "STRING"
    assert props["implied"]["type"] == "OBJECT"
    assert mode_b_problems(entry["parameters"]) == []
    [note] = report.notes
    assert note.startswith(gemini.VALIDATED_NOTE) and "$.any_value" in note and "$.bare" in note


def test_ref_is_inlined_and_its_siblings_win() -> None:
    """A $ref is replaced by its definition, with the description beside it kept over the definition's."""
    schema = {
        **obj("p", p={"$ref": "#/$defs/P", "description": "Where."}),
        "$defs": {"P": {**obj("x", x={"type": "number"}), "description": "A point.", "title": "P"}},
    }
    entry, report = export_schema(schema)
    assert entry["parameters"]["properties"]["p"] == {
        "type": "OBJECT",
        "description": "Where.",
        "properties": {"x": {"type": "NUMBER"}},
        "required": ["x"],
    }
    assert {("$", "$defs", "inlined"), ("$.p", "$ref", "inlined")} <= changes(report)


def test_root_recursion_is_refused() -> None:
    """A reference to the root itself cannot be inlined either."""
    with pytest.raises(ProviderError, match=r"\$\.next: the recursive \$ref '#'"):
        export_schema(obj(next={"$ref": "#"}))


def test_indirect_recursion_is_refused() -> None:
    """A -> B -> A cannot be inlined: the error names the tool and the reference."""
    schema = {
        **obj("a", a={"$ref": "#/$defs/A"}),
        "$defs": {"A": obj(b={"$ref": "#/$defs/B"}), "B": obj(a={"$ref": "#/$defs/A"})},
    }
    with pytest.raises(ProviderError, match=r"tool 't' cannot be exported to gemini \(parameters\).*'#/\$defs/A'"):
        export_schema(schema)


def test_inlining_that_explodes_is_refused() -> None:
    """Definitions that each use the next twice would double at every level once inlined: refused."""
    defs = {f"D{i}": obj(l={"$ref": f"#/$defs/D{i + 1}"}, r={"$ref": f"#/$defs/D{i + 1}"}) for i in range(15)}
    defs["D15"] = {"type": "integer"}
    with pytest.raises(ProviderError, match="too large"):
        export_schema({**obj(root={"$ref": "#/$defs/D0"}), "$defs": defs})
    entry, _ = export_schema({**obj(root={"$ref": "#/$defs/D0"}), "$defs": defs}, "json_schema")
    assert len(entry["parametersJsonSchema"]["$defs"]) == 16


@pytest.mark.parametrize("name", ["a-b", "1x", "a.b", "x" * 65, "naïve"])
def test_property_names_outside_the_rule_are_refused(name: str) -> None:
    """Property names must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$ in openapi mode; json_schema mode takes them."""
    schema = obj(**{name: {"type": "string"}})
    with pytest.raises(ProviderError, match=r"tool 't'.*property name.*\^\[A-Za-z_\]"):
        export_schema(schema)
    entry, _ = export_schema(schema, "json_schema")
    assert name in entry["parametersJsonSchema"]["properties"]
    assert export_schema(obj(**{"_" + "x" * 63: {"type": "string"}}))[0]["parameters"]


def test_false_schemas() -> None:
    """A false branch or optional property is dropped; a required false property is refused."""
    entry, report = export_schema(obj(u={"anyOf": [{"type": "integer"}, False, {"type": "string"}]}, gone=False))
    assert entry["parameters"]["properties"] == {"u": {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]}}
    assert {("$.u.anyOf[1]", "anyOf", "dropped"), ("$.gone", "properties", "dropped")} <= changes(report)
    with pytest.raises(ProviderError, match="matches nothing"):
        export_schema(obj("gone", gone=False))


def test_string_formats_move_into_the_description_and_number_formats_stay() -> None:
    """The parameters dialect has no string formats; int32/double formats are Schema formats."""
    entry, _ = export_schema(
        obj(at={"type": "string", "format": "date-time"}, n={"type": "integer", "format": "int64"})
    )
    props = entry["parameters"]["properties"]
    assert props["at"] == {"type": "STRING", "description": "(format: date-time)"}
    assert props["n"] == {"type": "INTEGER", "format": "int64"}


class Shape(BaseModel):
    """An output that recurses."""

    name: str
    parts: list[Shape] = []


@tool
def draw(size: int) -> Shape:
    """Draw a shape."""
    return Shape(name=str(size))


def test_output_schemas_become_response_schemas() -> None:
    """Output schemas go to responseJsonSchema / response; one openapi cannot express is left out and noted."""
    export = gemini.export_tools([CORPUS[1], draw])
    assert declaration(export, "add")["responseJsonSchema"] == {"type": "integer"}
    assert declaration(export, "draw")["responseJsonSchema"]["$defs"]["Shape"]["properties"]["parts"]
    openapi_export = gemini.export_tools([CORPUS[1], draw], mode="openapi")
    assert declaration(openapi_export, "add")["response"] == {"type": "INTEGER"}
    assert "response" not in declaration(openapi_export, "draw")
    [note] = openapi_export.report.for_tool("draw").notes
    assert note.startswith("no response schema declared") and "recursive" in note
    assert gemini.tool_config(openapi_export) == {"functionCallingConfig": {"mode": "VALIDATED"}}
    bare = gemini.export_tools([CORPUS[1]], output_schema=False)
    assert set(bare.tools[0]) == {"name", "description", "parametersJsonSchema"}


def test_output_changes_are_marked_as_output() -> None:
    """Changes to the response schema are reported with an output: prefix."""
    report = gemini.export_tools([draw]).report.for_tool("draw")
    assert {(c.path, c.keyword) for c in report.changes} == {("output:$.$defs.Shape", "title")}


def test_unknown_mode_is_refused() -> None:
    """Only json_schema and openapi are modes."""
    with pytest.raises(ProviderError, match="mode"):
        gemini.export_tools([CORPUS[1]], mode="parameters")  # type: ignore[arg-type]


# -- names, descriptions, Tool and toolConfig --------------------------------------------------------


def test_name_rule_and_limit() -> None:
    """A 64-character name is exported; a leading digit or dash is refused, naming the tool and the rule."""
    long_name = "a" * 64
    export = gemini.export_tools(Definition(name=long_name, input_schema={"type": "object"}))
    assert export.tools[0]["name"] == long_name
    for bad in ("1tool", "-tool"):
        with pytest.raises(ProviderError, match=rf"'{bad}'.*\[A-Za-z_\]"):
            gemini.export_tools(Definition(name=bad, input_schema={"type": "object"}))
    assert re.fullmatch(gemini.NAME_PATTERN, "ns.tool:v2-x") is not None
    assert re.fullmatch(gemini.NAME_PATTERN, "a" * 65) is None


def test_descriptions_have_no_limit_and_empty_ones_are_left_out() -> None:
    """Gemini documents no description limit: a long one is sent whole without a note."""
    export = gemini.export_tools(
        [
            Definition(name="long", description="d" * 5000, input_schema={"type": "object"}),
            Definition(name="bare", input_schema={"type": "object"}),
        ]
    )
    assert declaration(export, "long")["description"] == "d" * 5000
    assert "description" not in declaration(export, "bare")
    assert all(r.notes == () for r in export.report.tools)


def test_tool_wraps_the_declarations() -> None:
    """tool() is the Tool holding every declaration, in export order."""
    export = gemini.export_tools(Registry(*CORPUS[:4]))
    wrapped = gemini.tool(export)
    assert list(wrapped) == ["functionDeclarations"]
    parsed = types.Tool.model_validate(wrapped)
    assert [d.name for d in parsed.function_declarations or []] == sorted(t.name for t in CORPUS[:4])


@pytest.mark.parametrize(
    ("mode", "allowed", "expected"),
    [
        ("VALIDATED", None, {"mode": "VALIDATED"}),
        ("AUTO", None, {"mode": "AUTO"}),
        ("ANY", None, {"mode": "ANY"}),
        ("ANY", ["add"], {"mode": "ANY", "allowedFunctionNames": ["add"]}),
    ],
)
def test_tool_config(mode: gemini.CallingMode, allowed: list[str] | None, expected: dict[str, Any]) -> None:
    """tool_config builds a ToolConfig the SDK accepts."""
    export = gemini.export_tools(CORPUS[:3])
    config = gemini.tool_config(export, mode, allowed=allowed)
    assert config == {"functionCallingConfig": expected}
    parsed = types.ToolConfig.model_validate(config)
    assert parsed.model_dump(by_alias=True, exclude_none=True, mode="json") == config


def test_validated_falls_back_to_auto_when_a_tool_was_narrowed() -> None:
    """One narrowed tool (Any shown as text) keeps the whole request on AUTO; json_schema mode keeps VALIDATED."""
    anything = next(t for t in CORPUS if t.name == "anything")
    assert gemini.tool_config(gemini.export_tools([anything, CORPUS[1]], mode="openapi"))["functionCallingConfig"] == {
        "mode": "AUTO"
    }
    assert gemini.tool_config(gemini.export_tools(CORPUS)) == {"functionCallingConfig": {"mode": "VALIDATED"}}


@pytest.mark.parametrize(
    ("mode", "allowed", "match"),
    [
        ("VALIDATED", ["add"], "only with mode 'ANY'"),
        ("ANY", ["nope"], "nope"),
        ("ANY", [], "none given"),
        ("NONE", None, "mode must be"),
    ],
)
def test_tool_config_refuses_bad_requests(mode: Any, allowed: list[str] | None, match: str) -> None:
    """Allowed names go with ANY and must be tools of the export; unknown modes are refused."""
    with pytest.raises(ProviderError, match=match):
        gemini.tool_config(gemini.export_tools(CORPUS[:3]), mode, allowed=allowed)


def test_tool_and_tool_config_need_a_gemini_export() -> None:
    """Another provider's export is refused."""
    from scopetool.providers import openai_chat

    other = openai_chat.export_tools([CORPUS[1]])
    with pytest.raises(ProviderError, match=r"gemini\.export_tools"):
        gemini.tool(other)
    with pytest.raises(ProviderError, match=r"gemini\.export_tools"):
        gemini.tool_config(other)


# -- function calls ---------------------------------------------------------------------------------

RECORDED_RESPONSE: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Let me do that.", "thought": True},
                    {
                        "functionCall": {"id": "fc_01", "name": "add", "args": {"a": 2, "b": 3}},
                        "thoughtSignature": "c2lnbmF0dXJl",
                    },
                    {"functionCall": {"id": "fc_02", "name": "transfer", "args": {"amount": 500}}},
                    {"functionCall": {"id": "fc_03", "name": "add", "args": {"a": "two", "b": 3}}},
                    {"functionCall": {"id": "fc_04", "name": "delete_everything", "args": {}}},
                    {"functionCall": {"name": "explode"}},
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 40, "totalTokenCount": 160},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "a1b2c3",
}


def test_recorded_response_is_the_sdk_wire_format() -> None:
    """The recorded payload is a GenerateContentResponse the SDK reads, with five function calls."""
    response = types.GenerateContentResponse.model_validate(RECORDED_RESPONSE)
    assert response.function_calls is not None and len(response.function_calls) == 5
    assert response.model_dump(by_alias=True, exclude_none=True, mode="json") == RECORDED_RESPONSE


def test_parse_tool_calls_of_a_response() -> None:
    """Each function call keeps its id (None when absent), its name and its args as JSON text."""
    calls = gemini.parse_tool_calls(RECORDED_RESPONSE)
    assert [(c.id, c.name) for c in calls] == [
        ("fc_01", "add"),
        ("fc_02", "transfer"),
        ("fc_03", "add"),
        ("fc_04", "delete_everything"),
        (None, "explode"),
    ]
    assert json.loads(calls[0].request.arguments) == {"a": 2, "b": 3}
    assert calls[4].request.arguments == "{}"


def test_parse_tool_calls_of_a_content_a_part_list_and_snake_case() -> None:
    """A content, a list of parts, a single part and the SDK's snake_case dump are read alike."""
    content = RECORDED_RESPONSE["candidates"][0]["content"]
    assert [c.id for c in gemini.parse_tool_calls(content)][:2] == ["fc_01", "fc_02"]
    assert [c.name for c in gemini.parse_tool_calls(content["parts"][1:3])] == ["add", "transfer"]
    assert gemini.parse_tool_calls(content["parts"][2])[0].id == "fc_02"
    snake = types.GenerateContentResponse.model_validate(RECORDED_RESPONSE).model_dump(exclude_none=True)
    assert "function_call" in snake["candidates"][0]["content"]["parts"][1]
    assert gemini.parse_tool_calls(snake) == gemini.parse_tool_calls(RECORDED_RESPONSE)


def test_parse_tool_calls_without_calls() -> None:
    """Text-only contents, empty candidates and candidates without content have no calls."""
    assert gemini.parse_tool_calls({"role": "model", "parts": [{"text": "Hello"}]}) == []
    assert gemini.parse_tool_calls({"candidates": []}) == []
    assert gemini.parse_tool_calls({"candidates": [{"finishReason": "SAFETY"}]}) == []
    assert gemini.parse_tool_calls({"role": "model"}) == []


def test_args_are_encoded_exactly() -> None:
    """Unicode stays as is and nested values keep their JSON types."""
    [call] = gemini.parse_tool_calls([{"functionCall": {"name": "t", "args": {"q": "café", "n": [1, 2.5, None]}}}])
    assert call.request.arguments == '{"q":"café","n":[1,2.5,null]}'


@pytest.mark.parametrize(
    "payload",
    [
        {"parts": ["not a part"]},
        {"parts": [{"functionCall": "add"}]},
        {"parts": [{"functionCall": {"args": {}}}]},
        {"parts": [{"functionCall": {"name": "", "args": {}}}]},
        {"parts": [{"functionCall": {"name": 3, "args": {}}}]},
        {"parts": [{"functionCall": {"name": "t", "args": '{"a": 1}'}}]},
        {"parts": [{"functionCall": {"name": "t", "args": [1]}}]},
        {"parts": [{"functionCall": {"name": "t", "args": {"x": float("nan")}}}]},
        {"parts": [{"functionCall": {"name": "t", "id": 7, "args": {}}}]},
        {"parts": {"functionCall": {"name": "t"}}},
        {"candidates": {"content": {}}},
        {"candidates": ["x"]},
        {"candidates": [{"content": "x"}]},
        {"text": "no parts"},
        "functionCall",
        42,
    ],
)
def test_malformed_payloads_raise(payload: Any) -> None:
    """Anything that is not a well-formed function call is a ProviderError."""
    with pytest.raises(ProviderError):
        gemini.parse_tool_calls(payload)


# -- results and the full round trip ------------------------------------------------------------------


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def transfer(amount: int) -> str:
    """Move money."""
    raise Failure(kind=FailureKind.REJECTED, output="transfers above 100 need approval")


@tool
def explode() -> str:
    """Fail with a private error."""
    raise RuntimeError(f"database down: {SECRET}")


async def run(registry: Registry, call: ToolCall) -> Result | BaseException:
    """Resolve, admit and run one call, as a driver does (the library's `run_call`)."""
    return await run_call(registry, call)


def sdk_part(part: dict[str, Any]) -> dict[str, Any]:
    """A part as the SDK reads and re-emits it."""
    dumped: dict[str, Any] = types.Part.model_validate(part).model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


@pytest.mark.parametrize("mode", ["json_schema", "openapi"])
async def test_round_trip_of_a_recorded_response(mode: gemini.Mode) -> None:
    """Recorded calls -> parse -> resolve -> prepare -> call -> function responses the SDK accepts."""
    registry = Registry(add, transfer, explode)
    export = gemini.export_tools(registry, mode=mode)
    calls = gemini.parse_tool_calls(RECORDED_RESPONSE, export)
    pairs = [(call, await run(registry, call)) for call in calls]
    message = gemini.results_message(pairs)
    content = types.Content.model_validate(message)
    assert content.model_dump(by_alias=True, exclude_none=True, mode="json") == message
    assert message["role"] == "user"
    responses = [part["functionResponse"] for part in message["parts"]]
    assert [r.get("id") for r in responses] == ["fc_01", "fc_02", "fc_03", "fc_04", None]
    assert [r["name"] for r in responses] == ["add", "transfer", "add", "delete_everything", "explode"]
    success, failure, rejection, unknown, secret = (r["response"] for r in responses)
    assert success == {"output": 5}
    assert failure == {"error": "transfers above 100 need approval"}
    assert list(rejection) == ["error"]
    assert rejection["error"].startswith("invalid arguments for tool 'add'") and "$.a" in rejection["error"]
    assert "two" not in rejection["error"]
    assert unknown == {"error": 'error: tool "delete_everything" is not available'}
    assert secret == {"error": 'error: tool "explode" failed'}
    assert SECRET not in json.dumps(message) and "database" not in json.dumps(message)


def call_of(name: str = "t", call_id: str | None = "fc_1") -> ToolCall:
    """A tool call with no arguments."""
    return ToolCall(id=call_id, request=Request(name=name, arguments="{}"))


@pytest.mark.parametrize(
    ("details", "response"),
    [
        ('{"hits": 3}', {"output": {"hits": 3}}),
        ("[1, 2]", {"output": [1, 2]}),
        ('"done"', {"output": "done"}),
        ("null", {"output": None}),
        ('{"schema": {"$ref": "#/x"}}', {"output": '{"schema": {"$ref": "#/x"}}'}),
        ('[{"a": [{"$ref": 1}]}]', {"output": '[{"a": [{"$ref": 1}]}]'}),
    ],
)
def test_details_become_the_output(details: str, response: dict[str, Any]) -> None:
    """Details are the output's JSON value, wrapped under output; anything holding a $ref key goes as a string."""
    part = gemini.result_message(call_of(), Result(output=Output.from_json(details)))
    assert part == {"functionResponse": {"id": "fc_1", "name": "t", "response": response}}
    if response["output"] is not None:  # the SDK drops a null output on the way out
        assert sdk_part(part) == part


def test_failure_details_become_the_error() -> None:
    """A Failure with structured output sends it under error."""
    failure = Failure(kind=FailureKind.REJECTED, output=Output.from_json('{"code": "over_limit"}'))
    part = gemini.result_message(call_of(), failure)
    assert part["functionResponse"]["response"] == {"error": {"code": "over_limit"}}
    assert sdk_part(part) == part


def test_text_wins_over_details_and_empty_output_is_empty_text() -> None:
    """Content is what the model sees: details beside text are not sent; an empty output is ''."""
    output = Output(content=(TextBlock("a"), TextBlock("b")), details=b'{"x": 1}')
    assert gemini.result_message(call_of(), Result(output=output))["functionResponse"]["response"] == {"output": "ab"}
    assert gemini.result_message(call_of(), Result())["functionResponse"]["response"] == {"output": ""}


def test_media_go_in_function_response_parts() -> None:
    """Inline media are base64 inlineData; URIs and references are fileData; the text stays the output."""
    output = Output(
        content=(
            TextBlock("here:"),
            MediaBlock(mime_type="image/png", data=b"\x89PNG\r\n"),
            MediaBlock(mime_type="application/pdf", uri="https://example.com/a.pdf"),
            MediaBlock(mime_type="image/jpeg", reference="files/abc123"),
        )
    )
    part = gemini.result_message(call_of(), Result(output=output))
    response = part["functionResponse"]
    assert response["response"] == {"output": "here:"}
    assert response["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(b"\x89PNG\r\n").decode()}},
        {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/a.pdf"}},
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "files/abc123"}},
    ]
    parsed = types.Part.model_validate(part)
    assert parsed.function_response is not None and parsed.function_response.parts is not None
    assert parsed.function_response.parts[0].inline_data is not None
    assert parsed.function_response.parts[0].inline_data.data == b"\x89PNG\r\n"
    assert sdk_part(part) == part


def test_call_without_id_gets_a_response_without_id() -> None:
    """Gemini may send calls without ids; the response then has none either."""
    part = gemini.result_message(call_of(call_id=None), Result(output=Output.from_text("ok")))
    assert part == {"functionResponse": {"name": "t", "response": {"output": "ok"}}}
    assert sdk_part(part) == part


def test_results_message_needs_results_and_finished_calls() -> None:
    """An empty batch and a result waiting for input cannot be sent."""
    with pytest.raises(ProviderError, match="at least one"):
        gemini.results_message([])
    waiting = Result(input_request=InputRequest(prompt="sure?", response_schema={"type": "boolean"}))
    with pytest.raises(ProviderError, match="requests input"):
        gemini.result_message(call_of(), waiting)
