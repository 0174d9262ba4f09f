"""Tests for the OpenAI Chat Completions adapter: export, the strict transform, tool calls and results."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from corpus import CORPUS, Address, Customer
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionToolParam,
)
from openai.types.shared_params import FunctionDefinition
from sdk_types import check_typed_dict

from scopetool import (
    Definition,
    Failure,
    FailureKind,
    InputRequest,
    InvalidInvocationError,
    MediaBlock,
    Output,
    Registry,
    Result,
    TextBlock,
    tool,
)
from scopetool.providers import ProviderError, ToolCall, openai_chat, run_call
from scopetool.providers._common import Export
from scopetool.providers._transform import openai_strict

SECRET = "s3cr3t-db-password-0xDEADBEEF"

# -- OpenAI's strict subset (providers.md §2.3 and §11.1), checked independently of the transform ---

STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
STRICT_REFUSED = {
    "allOf", "oneOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "patternProperties",
    "unevaluatedProperties", "unevaluatedItems", "propertyNames", "minProperties", "maxProperties", "contains",
    "minContains", "maxContains", "uniqueItems", "prefixItems", "default", "title", "discriminator", "$schema",
    "examples", "$comment", "readOnly", "writeOnly", "deprecated",
}  # fmt: skip
TYPED = ("type", "$ref", "anyOf", "enum", "const")
INT = {"type": "integer"}
NULL = {"type": "null"}
LOCAL_REF = re.compile(r"#(/\$defs/[^/]+|/definitions/[^/]+)?")


def nodes(schema: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema of `schema` with its path (parents first)."""
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


def strict_problems(schema: dict[str, Any]) -> list[str]:
    """What in `schema` OpenAI's strict mode would refuse (empty when it is acceptable)."""
    found: list[str] = []
    if schema.get("type") != "object" or any(k in schema for k in ("anyOf", "oneOf", "allOf", "$ref")):
        found.append("$: root is not a plain object")
    for path, node in nodes(schema):
        found.extend(f"{path}: {keyword}" for keyword in sorted(STRICT_REFUSED & set(node)))
        kind = node.get("type")
        if kind == "object" or (isinstance(kind, list) and "object" in kind):
            if node.get("additionalProperties") is not False:
                found.append(f"{path}: object not closed")
            if "properties" not in node:
                found.append(f"{path}: object without properties")
            elif node.get("required") != list(node["properties"]):
                found.append(f"{path}: required is not every property")
        if kind == "array" or (isinstance(kind, list) and "array" in kind):
            items = node.get("items")
            if not isinstance(items, dict) or not any(k in items for k in TYPED):
                found.append(f"{path}: array items without a type")
        is_container = re.search(r"\.(\$defs|definitions)\.[^.]+$", path) is not None
        if path != "$" and not is_container and not any(k in node for k in TYPED):
            found.append(f"{path}: no type")
        if "$ref" in node:
            if not LOCAL_REF.fullmatch(node["$ref"]):
                found.append(f"{path}: $ref {node['$ref']} is not local")
            if set(node) != {"$ref"}:
                found.append(f"{path}: $ref with siblings")
        if "format" in node and node["format"] not in STRICT_FORMATS:
            found.append(f"{path}: format {node['format']}")
        if any(marker in node.get("pattern", "") for marker in ("(?=", "(?!", "(?<", "\\1")):
            found.append(f"{path}: pattern with lookaround")
    return found


def the_tool(export: Export, name: str) -> dict[str, Any]:
    """The exported function of one tool."""
    for entry in export.tools:
        if entry["function"]["name"] == name:
            function: dict[str, Any] = entry["function"]
            return function
    raise KeyError(name)


def export_schema(schema: dict[str, Any], *, strict: bool = True) -> tuple[dict[str, Any], Any]:
    """Export one hand-written schema as tool ``t``: its exported function and its report."""
    export = openai_chat.export_tools(Definition(name="t", input_schema=schema), strict=strict)
    return export.tools[0]["function"], export.report.for_tool("t")


def obj(**properties: Any) -> dict[str, Any]:
    """A closed object schema with `properties`, none required."""
    return {"type": "object", "properties": properties, "additionalProperties": False}


# -- the corpus ---------------------------------------------------------------------------------

# Per corpus tool: strict or not, null repairs, where strict mode was refused, and every change made.
PINNED_REPORT: dict[str, tuple[bool, tuple[str, ...], tuple[str, ...], set[str]]] = {
    "ping": (True, (), (), set()),
    "add": (True, (), (), set()),
    "greet": (True, ("$.punctuation",), (), {"$.punctuation default described", "$.punctuation required nullable"}),
    "maybe": (True, (), (), {"$.note default described", "$.note required required"}),
    "scale": (True, ("$.factor",), (), {"$.factor default described", "$.factor required nullable"}),
    "flag": (True, ("$.on",), (), {"$.on default described", "$.on required nullable"}),
    "pick": (True, (), (), {"$.$defs.Color title dropped"}),
    "level": (
        True,
        ("$.value",),
        (),
        {
            "$.$defs.Level title dropped",
            "$.value default described",
            "$.value $ref converted",
            "$.value required nullable",
        },
    ),
    "sort": (True, ("$.order",), (), {"$.order default described", "$.order required nullable"}),
    "mode": (True, (), (), set()),
    "constant": (True, (), (), set()),
    "bounded": (True, ("$.ratio",), (), {"$.ratio default described", "$.ratio required nullable"}),
    "text_rules": (True, (), (), set()),
    "sized": (True, (), (), set()),
    "unique": (False, (), ("$.items",), set()),
    "pair": (True, (), (), {"$.point prefixItems converted"}),
    "mixed_tuple": (False, (), ("$.row",), set()),
    "when": (True, (), (), {"$.day default described", "$.day required required"}),
    "ident": (True, (), (), set()),
    "money": (True, (), (), set()),
    "either": (True, (), (), set()),
    "counts": (False, (), ("$.by_name",), set()),
    "anything": (False, (), ("$.payload",), set()),
    "lookup": (
        True,
        ("$.tags",),
        (),
        {
            "$.$defs.Address title dropped",
            "$.$defs.Address.postcode default described",
            "$.$defs.Address.postcode required required",
            "$.tags default described",
            "$.tags required nullable",
        },
    ),
    "ship": (
        True,
        ("$.express", "$.$defs.Customer.tags"),
        (),
        {
            "$.$defs.Address title dropped",
            "$.$defs.Address.postcode default described",
            "$.$defs.Address.postcode required required",
            "$.$defs.Customer title dropped",
            "$.$defs.Customer.tags default described",
            "$.$defs.Customer.tags required nullable",
            "$.express default described",
            "$.express required nullable",
        },
    ),
    "optional_model": (
        True,
        (),
        (),
        {
            "$.$defs.Address title dropped",
            "$.$defs.Address.postcode default described",
            "$.$defs.Address.postcode required required",
            "$.address default described",
            "$.address required required",
        },
    ),
    "addresses": (
        True,
        (),
        (),
        {
            "$.$defs.Address title dropped",
            "$.$defs.Address.postcode default described",
            "$.$defs.Address.postcode required required",
        },
    ),
    "tree": (
        True,
        ("$.children", "$.$defs.Node.children"),
        (),
        {
            "$.$defs.Node title dropped",
            "$.$defs.Node.children default described",
            "$.$defs.Node.children required nullable",
            "$.children default described",
            "$.children required nullable",
        },
    ),
    "pet": (
        True,
        ("$.$defs.Cat.lives", "$.$defs.Dog.good"),
        (),
        {
            "$.$defs.Cat title dropped",
            "$.$defs.Cat.lives default described",
            "$.$defs.Cat.lives required nullable",
            "$.$defs.Dog title dropped",
            "$.$defs.Dog.good default described",
            "$.$defs.Dog.good required nullable",
            "$.animal discriminator dropped",
            "$.animal oneOf converted",
        },
    ),
    "plain_union": (
        True,
        ("$.$defs.Cat.lives", "$.$defs.Dog.good"),
        (),
        {
            "$.$defs.Cat title dropped",
            "$.$defs.Cat.lives default described",
            "$.$defs.Cat.lives required nullable",
            "$.$defs.Dog title dropped",
            "$.$defs.Dog.good default described",
            "$.$defs.Dog.good required nullable",
        },
    ),
    "window": (
        True,
        ("$.limit",),
        (),
        {
            "$.end default described",
            "$.end required required",
            "$.limit default described",
            "$.limit required nullable",
        },
    ),
    "documented": (True, ("$.limit",), (), {"$.limit default described", "$.limit required nullable"}),
    "matrix": (True, (), (), set()),
}


def test_corpus_is_large_enough() -> None:
    """The corpus the exports are checked on holds at least 30 signatures, all distinct."""
    assert len(CORPUS) >= 30
    assert len({t.name for t in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("strict", [True, False])
def test_corpus_exports_validate_against_the_sdk_types(strict: bool) -> None:
    """Every corpus export is a ChatCompletionToolParam with a FunctionDefinition, exact keys."""
    export = openai_chat.export_tools(CORPUS, strict=strict)
    assert len(export.tools) == len(CORPUS)
    for entry in export.tools:
        check_typed_dict(entry, ChatCompletionToolParam)
        check_typed_dict(entry["function"], FunctionDefinition)
        assert entry["type"] == "function"
        assert isinstance(entry["function"]["strict"], bool)


def test_corpus_strict_schemas_meet_the_strict_subset() -> None:
    """Each tool exported strict meets OpenAI's strict rules; the others are sent with strict false."""
    export = openai_chat.export_tools(CORPUS)
    strict_tools = [e["function"] for e in export.tools if e["function"]["strict"]]
    assert len(strict_tools) >= 25
    for function in strict_tools:
        assert strict_problems(function["parameters"]) == [], function["name"]


def test_corpus_fallbacks_keep_the_contract_schema() -> None:
    """A tool that cannot be strict is sent with its own schema, unchanged, and strict false."""
    export = openai_chat.export_tools(CORPUS)
    by_name = {t.name: t for t in CORPUS}
    fallbacks = [e["function"] for e in export.tools if not e["function"]["strict"]]
    assert {f["name"] for f in fallbacks} == {"unique", "mixed_tuple", "counts", "anything"}
    for function in fallbacks:
        assert function["parameters"] == by_name[function["name"]].definition().input_schema
        assert strict_problems(function["parameters"]) != []
        report = export.report.for_tool(function["name"])
        assert report.strict is False and report.not_strict and not report.changes and not report.null_defaults


def test_corpus_strict_schemas_are_valid_json_schemas() -> None:
    """The transformed schemas are still valid JSON Schema documents (2020-12)."""
    for entry in openai_chat.export_tools(CORPUS).tools:
        jsonschema.Draft202012Validator.check_schema(entry["function"]["parameters"])


def test_corpus_report_is_pinned() -> None:
    """The portability report of the corpus: strictness, null repairs, refusals and every change."""
    report = openai_chat.export_tools(CORPUS).report
    assert report.provider == "openai-chat"
    found = {
        r.name: (
            r.strict,
            r.null_defaults,
            tuple(reason.split(":")[0] for reason in r.not_strict),
            {f"{c.path} {c.keyword} {c.action}" for c in r.changes},
        )
        for r in report.tools
    }
    assert found == PINNED_REPORT


def test_corpus_non_strict_export_is_lossless() -> None:
    """With strict=False every schema is the contract's own and the report records no change."""
    export = openai_chat.export_tools(CORPUS, strict=False)
    for definition, entry in zip((t.definition() for t in CORPUS), export.tools, strict=True):
        assert entry["function"]["parameters"] == definition.input_schema
        assert entry["function"]["strict"] is False
    assert all(r.lossless and r.strict is False for r in export.report.tools)


def test_corpus_report_serialises_and_prints() -> None:
    """The report's dict form is JSON and its text names fallbacks and null repairs."""
    report = openai_chat.export_tools(CORPUS).report
    data = json.loads(json.dumps(report.to_dict()))
    assert [t["name"] for t in data["tools"]] == [t.name for t in CORPUS]
    text = str(report)
    assert "- counts (non-strict):" in text
    assert "null means default: $.punctuation" in text


# -- strict transform cases (providers.md §11.1) -------------------------------------------------


def test_root_union_cannot_be_strict() -> None:
    """A root with anyOf is not a plain object: the tool falls back and says why."""
    schema = {"type": "object", "anyOf": [obj(a={"type": "string"}), obj(b={"type": "string"})]}
    function, report = export_schema(schema)
    assert function["strict"] is False
    assert any(reason.startswith("$:") and "root" in reason for reason in report.not_strict)


def test_annotations_are_dropped_and_recorded() -> None:
    """Titles, examples, discriminators and other annotations go; each drop is recorded."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "T",
        "type": "object",
        "properties": {"a": {"type": "string", "title": "A", "examples": ["x"], "deprecated": True}},
        "required": ["a"],
        "additionalProperties": False,
    }
    function, report = export_schema(schema)
    assert function["strict"] is True
    assert function["parameters"]["properties"]["a"] == {"type": "string"}
    assert "title" not in function["parameters"] and "$schema" not in function["parameters"]
    dropped = {(c.path, c.keyword) for c in report.changes if c.action == "dropped"}
    assert dropped == {("$", "$schema"), ("$", "title"), ("$.a", "title"), ("$.a", "examples"), ("$.a", "deprecated")}


def test_default_moves_into_the_description() -> None:
    """A default is removed and told in words after the existing description."""
    schema = obj(n={"type": "integer", "description": "How many.", "default": 5})
    function, report = export_schema(schema)
    assert function["parameters"]["properties"]["n"] == {
        "type": ["integer", "null"],
        "description": "How many. (default: 5)",
    }
    assert any(c.keyword == "default" and c.action == "described" for c in report.changes)


def test_one_of_becomes_any_of() -> None:
    """oneOf is rewritten as anyOf."""
    branches = [{"type": "integer"}, {"type": "string"}]
    function, report = export_schema({**obj(v={"oneOf": branches}), "required": ["v"]})
    assert function["parameters"]["properties"]["v"] == {"anyOf": branches}
    assert {(c.path, c.keyword, c.action) for c in report.changes} == {("$.v", "oneOf", "converted")}


def test_single_all_of_is_merged_and_several_refuse_strict() -> None:
    """A one-member allOf merges into its parent; several members cannot be strict."""
    one = {**obj(v={"allOf": [{"type": "integer"}], "description": "V."}), "required": ["v"]}
    function, _ = export_schema(one)
    assert function["strict"] is True
    assert function["parameters"]["properties"]["v"] == {"type": "integer", "description": "V."}
    several = {**obj(v={"allOf": [{"type": "integer"}, {"minimum": 1}]}), "required": ["v"]}
    function, report = export_schema(several)
    assert function["strict"] is False
    assert "$.v: allOf with several members is not in the strict subset" in report.not_strict


def test_ref_with_siblings_is_wrapped_in_any_of() -> None:
    """A $ref beside a description is wrapped, since strict mode refuses keywords next to $ref."""
    schema = {
        "type": "object",
        "$defs": {"P": obj(x={"type": "integer"}) | {"required": ["x"]}},
        "properties": {"p": {"$ref": "#/$defs/P", "description": "A point."}},
        "required": ["p"],
        "additionalProperties": False,
    }
    function, report = export_schema(schema)
    assert function["strict"] is True
    assert function["parameters"]["properties"]["p"] == {"anyOf": [{"$ref": "#/$defs/P"}], "description": "A point."}
    assert strict_problems(function["parameters"]) == []
    assert ("$.p", "$ref", "converted") in {(c.path, c.keyword, c.action) for c in report.changes}


def test_non_local_ref_cannot_be_strict() -> None:
    """A $ref into the properties of the schema is not a definition: no strict mode."""
    schema = {**obj(a={"type": "string"}, b={"$ref": "#/properties/a"}), "required": ["a", "b"]}
    function, report = export_schema(schema)
    assert function["strict"] is False
    assert any("'#/properties/a' is not a local definition" in reason for reason in report.not_strict)


def test_closed_objects_are_completed() -> None:
    """Closed objects get a properties member, a type and required when they lack one."""
    inner = {"properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": False}
    schema = obj(inner=inner, empty={"type": "object", "additionalProperties": False})
    schema["required"] = ["inner", "empty"]
    function, report = export_schema(schema)
    parameters = function["parameters"]
    assert function["strict"] is True
    assert parameters["properties"]["inner"] == {"type": "object", **inner}
    assert parameters["properties"]["empty"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
        "required": [],
    }
    assert report.changes == ()


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "required": ["a"]},
        {"type": "object"},
        obj(o={"type": "object", "properties": {"x": {"type": "integer"}}}),
        obj(o={"type": "array", "items": {"properties": {}}}),
        obj(o={"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False}),
    ],
)
def test_open_objects_are_not_closed(schema: dict[str, Any]) -> None:
    """An object that admits unnamed members is not closed: the tool falls back unchanged, with the reason."""
    function, report = export_schema(schema)
    assert function["strict"] is False and function["parameters"] == schema
    assert any("an open object" in reason for reason in report.not_strict), report.not_strict


def test_required_without_properties_is_not_rewritten_to_nothing() -> None:
    """`required` naming members with no properties used to become `required: []` and closed: no call fit."""
    schema = {"type": "object", "required": ["path"]}
    function, report = export_schema(schema)
    assert function == {"name": "t", "parameters": schema, "strict": False}
    jsonschema.validate({"path": "/tmp"}, function["parameters"])
    assert report.not_strict[0].startswith("$: an open object (without additionalProperties")


def test_unevaluated_properties_false_alone_is_closing() -> None:
    """unevaluatedProperties false with no applicator beside it becomes additionalProperties false."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "unevaluatedProperties": False,
    }
    function, report = export_schema(schema)
    assert function["strict"] is True
    assert function["parameters"] == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert [(c.path, c.keyword, c.action) for c in report.changes] == [("$", "additionalProperties", "closed")]
    beside = {**schema, "allOf": [{"properties": {"b": {"type": "string"}}}]}
    assert export_schema(beside)[0]["strict"] is False


def test_optional_nullable_property_needs_a_null_default() -> None:
    """An optional field that already admits null is made required only when null is its default."""
    nullable = {"type": ["string", "null"]}
    function, report = export_schema(obj(v=nullable | {"default": None}))
    assert function["strict"] is True and function["parameters"]["required"] == ["v"]
    function, report = export_schema(obj(v=nullable))
    assert function["strict"] is False
    assert report.not_strict == ("$.v: optional and already nullable: required, null could not mean omitted",)
    function, report = export_schema(obj(v={"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 3}))
    assert function["strict"] is False


def test_optional_properties_are_made_nullable_once_they_are_strict() -> None:
    """An optional single-member allOf is made nullable after it is merged (it was required, never null)."""
    function, report = export_schema(obj(v={"allOf": [{"type": "integer"}]}))
    assert function["strict"] is True
    assert function["parameters"]["properties"]["v"] == {"type": ["integer", "null"]}
    assert report.null_defaults == ("$.v",)


def test_boolean_property_schemas_refuse_strict() -> None:
    """A property given as a boolean schema (true: anything, false: never) is not in the subset."""
    function, report = export_schema({**obj(w=True, n=False), "required": ["w"]})
    assert function["strict"] is False
    assert set(report.not_strict) == {
        "$.w: a boolean schema (true) cannot be strict",
        "$.n: a boolean schema (false) cannot be strict",
    }


@pytest.mark.parametrize(
    ("tuple_schema", "strict"),
    [
        ({"type": "array", "prefixItems": [{"type": "integer"}] * 2, "minItems": 2, "maxItems": 2}, True),
        ({"type": "array", "prefixItems": [{"type": "integer"}] * 2, "items": False}, True),
        ({"type": "array", "prefixItems": [{"type": "integer"}] * 2, "items": {"type": "integer"}}, True),
        ({"type": "array", "prefixItems": [{"type": "integer"}] * 2}, False),
        ({"type": "array", "prefixItems": [{"type": "integer"}] * 2, "items": {"type": "string"}}, False),
        ({"type": "array", "prefixItems": [], "items": {"type": "integer"}}, False),
    ],
)
def test_tuples_become_items_only_when_nothing_else_may_follow(tuple_schema: dict[str, Any], strict: bool) -> None:
    """prefixItems alone sets no length and lets anything follow: the rewrite keeps both as written."""
    function, _ = export_schema({**obj(p=tuple_schema), "required": ["p"]})
    assert function["strict"] is strict
    if strict:
        exported = function["parameters"]["properties"]["p"]
        for value in ([], [1], [1, 2], [1, 2, 3], [1, "x"]):
            admitted = jsonschema.Draft202012Validator(tuple_schema).is_valid(value)
            assert jsonschema.Draft202012Validator(exported).is_valid(value) is admitted, value


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "open object"),
        ({"type": "object", "additionalProperties": True}, "open object"),
        ({"type": "object", "patternProperties": {"^x": {"type": "integer"}}}, "patternProperties"),
        ({"type": "object", "propertyNames": {"pattern": "^x"}}, "propertyNames"),
    ],
)
def test_open_objects_cannot_be_strict(member: dict[str, Any], reason: str) -> None:
    """A dict (additionalProperties true or a schema, patterns on names) is never silently closed."""
    function, report = export_schema({**obj(d=member), "required": ["d"]})
    assert function["strict"] is False
    assert function["parameters"]["properties"]["d"] == member
    assert any(reason in r for r in report.not_strict)


@pytest.mark.parametrize(
    ("optional", "nullable"),
    [
        ({"type": "integer"}, {"type": ["integer", "null"]}),
        ({"type": ["integer", "string"]}, {"type": ["integer", "string", "null"]}),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"anyOf": [INT, {"type": "string"}, NULL]}),
        ({"$ref": "#/$defs/E"}, {"anyOf": [{"$ref": "#/$defs/E"}, {"type": "null"}]}),
        ({"enum": ["a", "b"], "type": "string"}, {"enum": ["a", "b", None], "type": ["string", "null"]}),
        ({"const": "x", "type": "string"}, {"anyOf": [{"const": "x", "type": "string"}, {"type": "null"}]}),
    ],
)  # fmt: skip
def test_optional_fields_become_required_and_nullable(optional: dict[str, Any], nullable: dict[str, Any]) -> None:
    """Every property is required; an optional one accepts null, and the report lists it."""
    schema = {**obj(need={"type": "string"}, opt=optional), "required": ["need"], "$defs": {"E": {"enum": [1, 2]}}}
    function, report = export_schema(schema)
    assert function["strict"] is True
    assert function["parameters"]["required"] == ["need", "opt"]
    assert function["parameters"]["properties"]["opt"] == nullable
    assert function["parameters"]["properties"]["need"] == {"type": "string"}
    assert report.null_defaults == ("$.opt",)


def test_optional_field_already_nullable_is_only_required() -> None:
    """An optional field that already accepts null is marked required, with no null repair."""
    schema = obj(note={"anyOf": [{"type": "string"}, {"type": "null"}], "default": None})
    function, report = export_schema(schema)
    assert function["parameters"]["properties"]["note"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "description": "(default: null)",
    }
    assert function["parameters"]["required"] == ["note"]
    assert report.null_defaults == ()
    assert ("$.note", "required", "required") in {(c.path, c.keyword, c.action) for c in report.changes}


@pytest.mark.parametrize(
    ("array", "strict"),
    [
        ({"type": "array"}, False),
        ({"type": "array", "items": {}}, False),
        ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}, False),
        ({"type": "array", "items": {"type": "integer"}}, True),
    ],
)
def test_arrays_need_typed_items(array: dict[str, Any], strict: bool) -> None:
    """Untyped items and heterogeneous tuples cannot be strict; typed items can."""
    function, report = export_schema({**obj(a=array), "required": ["a"]})
    assert function["strict"] is strict
    assert bool(report.not_strict) is not strict


def test_homogeneous_tuple_becomes_fixed_length_items() -> None:
    """A tuple of one type becomes items with minItems and maxItems set to its length."""
    tuple_schema = {"type": "array", "prefixItems": [{"type": "integer"}] * 3, "minItems": 3, "maxItems": 3}
    function, _ = export_schema({**obj(p=tuple_schema), "required": ["p"]})
    assert function["parameters"]["properties"]["p"] == {
        "type": "array",
        "items": {"type": "integer"},
        "minItems": 3,
        "maxItems": 3,
    }


@pytest.mark.parametrize("leaf", [{}, {"description": "anything"}])
def test_typeless_values_cannot_be_strict(leaf: dict[str, Any]) -> None:
    """A value without a type (Any) is refused by strict mode."""
    function, report = export_schema({**obj(v=leaf), "required": ["v"]})
    assert function["strict"] is False
    assert report.not_strict == ("$.v: a value without a type (Any) cannot be strict",)


@pytest.mark.parametrize(
    "keywords",
    [
        {"not": {"type": "null"}},
        {"if": {"minimum": 0}, "then": {"maximum": 9}},
        {"uniqueItems": True, "items": {"type": "integer"}},
        {"contains": {"type": "integer"}, "items": {"type": "integer"}},
        {"format": "uri"},
        {"pattern": "^(?!admin).*$"},
        {"pattern": "^(a)\\1$"},
    ],
)
def test_unsupported_keywords_refuse_strict(keywords: dict[str, Any]) -> None:
    """Keywords outside the strict subset make the tool fall back to non-strict."""
    kind = "array" if "items" in keywords else ("string" if {"format", "pattern"} & set(keywords) else "integer")
    function, report = export_schema({**obj(v={"type": kind, **keywords}), "required": ["v"]})
    assert function["strict"] is False
    assert report.not_strict


def test_supported_constraints_stay() -> None:
    """Formats, patterns, lengths, bounds and item counts OpenAI supports are kept as they are."""
    properties = {
        "at": {"type": "string", "format": "date-time"},
        "code": {"type": "string", "pattern": "^[A-Z]+$", "minLength": 2, "maxLength": 8},
        "n": {"type": "number", "minimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.5},
        "xs": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 4},
    }
    function, report = export_schema({**obj(**properties), "required": list(properties)})
    assert function["strict"] is True
    assert function["parameters"]["properties"] == properties
    assert report.changes == ()


def nested(levels: int) -> dict[str, Any]:
    """An object schema `levels` objects deep (the root counts as one)."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {**obj(x=schema), "required": ["x"]}
    return schema


def test_nesting_limit() -> None:
    """Ten object levels can be strict; eleven cannot."""
    assert export_schema(nested(10))[0]["strict"] is True
    function, report = export_schema(nested(11))
    assert function["strict"] is False
    assert report.not_strict == ("$: more than 10 levels of nesting",)


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({**obj(**{f"p{i}": {"type": "integer"} for i in range(5001)})}, "5001 properties"),
        ({**obj(e={"enum": list(range(1001))}), "required": ["e"]}, "1001 enum values"),
        (obj(e={"enum": ["x" * 1000 for _ in range(121)]}), "characters of names and enum values"),
    ],
)
def test_size_limits(schema: dict[str, Any], reason: str) -> None:
    """Over 5000 properties, 1000 enum values or 120000 characters, the tool cannot be strict."""
    function, report = export_schema(schema)
    assert function["strict"] is False
    assert any(reason in r for r in report.not_strict)


def test_fallback_sends_the_original_schema_with_every_reason() -> None:
    """A refused schema is sent unchanged (titles, defaults and all) and every reason is listed."""
    schema = {
        "type": "object",
        "title": "T",
        "properties": {
            "d": {"type": "object", "additionalProperties": True},
            "v": {},
            "n": {"type": "integer", "default": 1},
        },
        "additionalProperties": False,
    }
    function, report = export_schema(schema)
    assert function["strict"] is False
    assert function["parameters"] == schema
    assert set(report.not_strict) == {
        "$.d: an open object (dict) cannot be closed without changing its meaning",
        "$.v: a value without a type (Any) cannot be strict",
    }
    assert report.changes == () and report.null_defaults == ()


def test_transform_never_changes_its_input() -> None:
    """The strict transform works on a copy."""
    schema = nested(3) | {"title": "T"}
    before = json.dumps(schema, sort_keys=True)
    openai_strict(schema)
    assert json.dumps(schema, sort_keys=True) == before


def test_strict_false_sends_the_schema_as_is() -> None:
    """Without strict mode nothing is transformed and strict false is sent explicitly."""
    schema = obj(n={"type": "integer", "default": 1, "title": "N"})
    function, report = export_schema(schema, strict=False)
    assert function == {"name": "t", "parameters": schema, "strict": False}
    assert report.lossless


# -- names and descriptions ------------------------------------------------------------------------


def test_name_rule_and_limit() -> None:
    """A 64-character name is exported; a name breaking the rule is refused, naming the tool and the rule."""
    long_name = "a" * 64
    export = openai_chat.export_tools(Definition(name=long_name, input_schema={"type": "object"}))
    assert export.tools[0]["function"]["name"] == long_name
    forged = Definition(name="ok", input_schema={"type": "object"})
    forged._name = "bad.name"  # a definition from elsewhere may hold any name
    with pytest.raises(ProviderError, match=r"'bad\.name'.*\[a-zA-Z0-9_-\]\{1,64\}"):
        openai_chat.export_tools(forged)
    assert re.fullmatch(openai_chat.NAME_PATTERN, "a" * 65) is None


def test_long_description_is_reported_and_still_sent() -> None:
    """A description over 1024 characters is sent whole and named in the report's notes."""
    schema = {"type": "object"}
    at_limit = Definition(name="fits", description="d" * 1024, input_schema=schema)
    over = Definition(name="long", description="d" * 1025, input_schema=schema)
    export = openai_chat.export_tools([at_limit, over])
    assert the_tool(export, "long")["description"] == "d" * 1025
    assert export.report.for_tool("fits").notes == ()
    assert export.report.for_tool("long").notes == (
        "description has 1025 characters; this provider accepts at most 1024",
    )


def test_empty_description_is_left_out() -> None:
    """A tool without a description exports no description member."""
    export = openai_chat.export_tools(Definition(name="bare", input_schema={"type": "object"}))
    assert "description" not in export.tools[0]["function"]


def test_registry_export_is_sorted_and_duplicates_are_refused() -> None:
    """A registry exports in name order; a list naming one tool twice is refused."""
    export = openai_chat.export_tools(Registry(*CORPUS[:5]))
    names = [e["function"]["name"] for e in export.tools]
    assert names == sorted(names)
    with pytest.raises(ProviderError, match="unique"):
        openai_chat.export_tools([CORPUS[0], CORPUS[0]])


def test_a_single_tool_can_be_exported() -> None:
    """One tool given on its own is exported like a list of one."""
    export = openai_chat.export_tools(CORPUS[1])
    assert [e["function"]["name"] for e in export.tools] == [CORPUS[1].name]


def test_export_tools_is_a_fresh_copy() -> None:
    """Changing the tools an export hands out never changes the export."""
    export = openai_chat.export_tools(CORPUS[:2])
    export.tools[0]["function"]["name"] = "changed"
    assert export.tools[0]["function"]["name"] == CORPUS[0].name


# -- tool calls ------------------------------------------------------------------------------------

RECORDED_CALLS = [
    ("call_Qh8f1", "search", '{"query":"tea","limit":null}'),
    ("call_Qh8f2", "transfer", '{"amount":500}'),
    ("call_Qh8f3", "search", '{"query":7,"limit":2}'),
    ("call_Qh8f4", "delete_everything", "{}"),
    ("call_Qh8f5", "explode", ""),
]
RECORDED_COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-BVhk3Tc2h4yQ",
    "object": "chat.completion",
    "created": 1746542401,
    "model": "gpt-4.1-2025-04-14",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "logprobs": None,
            "message": {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "annotations": [],
                "tool_calls": [
                    {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}
                    for id_, name, arguments in RECORDED_CALLS
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 80, "total_tokens": 200},
}


def test_recorded_completion_is_the_sdk_wire_format() -> None:
    """The recorded payload the tests read is a valid ChatCompletion."""
    completion = ChatCompletion.model_validate(RECORDED_COMPLETION)
    tool_calls = completion.choices[0].message.tool_calls
    assert tool_calls is not None and len(tool_calls) == 5


def test_parse_tool_calls_of_an_assistant_message() -> None:
    """Each tool call keeps its id, name and raw argument text."""
    message = RECORDED_COMPLETION["choices"][0]["message"]
    calls = openai_chat.parse_tool_calls(message)
    assert [(c.id, c.name) for c in calls] == [
        ("call_Qh8f1", "search"),
        ("call_Qh8f2", "transfer"),
        ("call_Qh8f3", "search"),
        ("call_Qh8f4", "delete_everything"),
        ("call_Qh8f5", "explode"),
    ]
    assert calls[1].request.arguments == '{"amount":500}'
    assert calls[0].request.arguments == '{"query":"tea","limit":null}'  # no export given: nothing repaired


def test_parse_tool_calls_of_a_list_and_of_a_message_without_calls() -> None:
    """A bare tool_calls list works too; a message without calls has none."""
    listed = RECORDED_COMPLETION["choices"][0]["message"]["tool_calls"][:2]
    assert [c.id for c in openai_chat.parse_tool_calls(listed)] == ["call_Qh8f1", "call_Qh8f2"]
    assert openai_chat.parse_tool_calls({"role": "assistant", "content": "Hello"}) == []
    assert openai_chat.parse_tool_calls({"role": "assistant", "content": None, "tool_calls": None}) == []


def test_parsed_object_arguments_are_encoded() -> None:
    """Arguments already parsed into an object (some compatible servers) become JSON text."""
    calls = openai_chat.parse_tool_calls(
        [{"id": "c", "type": "function", "function": {"name": "t", "arguments": {"a": 1}}}]
    )
    assert json.loads(calls[0].request.arguments) == {"a": 1}


@pytest.mark.parametrize(
    "payload",
    [
        {"tool_calls": ["not a call"]},
        {"tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "t", "input": "x"}}]},
        {"tool_calls": [{"id": "c", "type": "function"}]},
        {"tool_calls": [{"id": "c", "type": "function", "function": {"arguments": "{}"}}]},
        {"tool_calls": [{"id": "c", "type": "function", "function": {"name": 3, "arguments": "{}"}}]},
        {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "t", "arguments": 12}}]},
        {"tool_calls": "call_1"},
        [{"id": "c", "function": {"name": "t", "arguments": ["a"]}}],
    ],
)
def test_malformed_tool_calls_raise(payload: Any) -> None:
    """Anything that is not a function tool call with a name and JSON arguments is a ProviderError."""
    with pytest.raises(ProviderError):
        openai_chat.parse_tool_calls(payload)


# -- the null repair on import (providers.md §11.1 step 6) -------------------------------------------


@tool
def search(query: str, limit: int = 3) -> list[str]:
    """Search the shop.

    Args:
        query: Words to look for.
        limit: How many results.
    """
    return [f"{query} {i}" for i in range(limit)]


@tool
def note(text: str | None = None, pinned: bool = False) -> str:
    """Keep a note."""
    return f"{text!r} {pinned}"


@tool
def register(customer: Customer, addresses: list[Address] = []) -> str:  # noqa: B006 - pydantic copies defaults
    """Register a customer."""
    return f"{customer.name} {customer.tags} {len(addresses)}"


@tool
def scale(x: float, factor: float = 2.0) -> str:
    """Scale a number."""
    return repr(x * factor)


async def run(registry: Registry, call: ToolCall) -> Result | BaseException:
    """Resolve, admit and run one call, as a driver does (the library's `run_call`)."""
    return await run_call(registry, call)


def one_call(name: str, arguments: str) -> list[dict[str, Any]]:
    """A tool_calls list holding one call."""
    return [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}]


async def test_null_for_an_optional_field_means_its_default() -> None:
    """With the export, a null the strict schema allowed for an optional field gives the default."""
    registry = Registry(search)
    export = openai_chat.export_tools(registry)
    assert export.report.for_tool("search").null_defaults == ("$.limit",)
    [call] = openai_chat.parse_tool_calls(one_call("search", '{"query": "tea", "limit": null}'), export)
    assert json.loads(call.request.arguments) == {"query": "tea"}
    outcome = await run(registry, call)
    assert isinstance(outcome, Result)
    assert outcome.output.details_value() == ["tea 0", "tea 1", "tea 2"]


async def test_without_the_export_a_null_is_left_to_the_contract() -> None:
    """Without the export nothing is repaired, and the contract refuses the null."""
    registry = Registry(search)
    [call] = openai_chat.parse_tool_calls(one_call("search", '{"query": "tea", "limit": null}'))
    outcome = await run(registry, call)
    assert isinstance(outcome, InvalidInvocationError)
    assert "$.limit" in str(outcome)


async def test_null_for_a_nullable_field_stays_null() -> None:
    """A field that accepts null in the contract keeps the model's null; only the other one is repaired."""
    registry = Registry(note)
    export = openai_chat.export_tools(registry)
    [call] = openai_chat.parse_tool_calls(one_call("note", '{"text": null, "pinned": null}'), export)
    assert json.loads(call.request.arguments) == {"text": None}
    outcome = await run(registry, call)
    assert isinstance(outcome, Result)
    assert outcome.output.text() == "None False"


async def test_nulls_are_repaired_inside_nested_models_and_lists() -> None:
    """Nulls in a nested model, and in every model of a list, are read as omitted."""
    registry = Registry(register)
    export = openai_chat.export_tools(registry)
    arguments = json.dumps(
        {
            "customer": {"name": "Ada", "address": {"street": "1 Way", "city": "Oslo", "postcode": None}, "tags": None},
            "addresses": [{"street": "2 Way", "city": "Rome", "postcode": None}],
        }
    )
    [call] = openai_chat.parse_tool_calls(one_call("register", arguments), export)
    repaired = json.loads(call.request.arguments)
    assert "tags" not in repaired["customer"]
    assert repaired["customer"]["address"]["postcode"] is None  # nullable in the contract: kept
    outcome = await run(registry, call)
    assert isinstance(outcome, Result)
    assert outcome.output.text() == "Ada [] 1"


def test_repair_keeps_number_spelling() -> None:
    """Repaired arguments keep each number exactly as the model wrote it."""
    export = openai_chat.export_tools([scale])
    [call] = openai_chat.parse_tool_calls(one_call("scale", '{"x": 1.50, "factor": null}'), export)
    assert call.request.arguments == '{"x":1.50}'


@pytest.mark.parametrize(
    "arguments", ['{"query": "a", "limit": null, "limit": null}', '{"query": "a", "limit": null', "null"]
)
def test_repair_leaves_what_the_contract_would_refuse(arguments: str) -> None:
    """Duplicate members, broken JSON and non-objects are passed on untouched for the contract to refuse."""
    export = openai_chat.export_tools([search])
    [call] = openai_chat.parse_tool_calls(one_call("search", arguments), export)
    assert call.request.arguments == arguments


def test_required_field_null_is_not_repaired() -> None:
    """A null for a required field is kept: the contract reports it to the model."""
    export = openai_chat.export_tools([search])
    [call] = openai_chat.parse_tool_calls(one_call("search", '{"query": null, "limit": 2}'), export)
    assert json.loads(call.request.arguments) == {"query": None, "limit": 2}


def test_non_strict_tool_gets_no_null_repair() -> None:
    """Only the fields a report names as null_defaults are repaired; a non-strict tool keeps the model's null."""

    @tool
    def tally(by_name: dict[str, int], limit: int = 5) -> int:
        """An open dict makes this tool non-strict."""
        return limit

    export = openai_chat.export_tools([search, tally])
    assert export.report.for_tool("tally").strict is False
    assert export.report.for_tool("tally").null_defaults == ()
    [call] = openai_chat.parse_tool_calls(one_call("tally", '{"by_name": {}, "limit": null}'), export)
    assert json.loads(call.request.arguments) == {"by_name": {}, "limit": None}


def test_optional_discriminated_union_becomes_nullable() -> None:
    """An optional oneOf field is made nullable like any other optional field."""
    schema = {
        "type": "object",
        "$defs": {"A": {**obj(k={"const": "a", "type": "string"}), "required": ["k"]}},
        "properties": {"v": {"oneOf": [{"$ref": "#/$defs/A"}, {"type": "integer"}], "default": 1}},
        "additionalProperties": False,
    }
    _, report = export_schema(schema)
    assert report.null_defaults == ("$.v",)


# -- results and the full round trip ----------------------------------------------------------------


@tool
def transfer(amount: int) -> str:
    """Move money."""
    raise Failure(kind=FailureKind.REJECTED, output="transfers above 100 need approval")


@tool
def explode() -> str:
    """Fail with a private error."""
    raise RuntimeError(f"database down: {SECRET}")


@tool
def snapshot() -> Output:
    """Return text and an image."""
    return Output(content=(TextBlock("here:"), MediaBlock(mime_type="image/png", data=b"\x89PNG")))


async def test_round_trip_of_a_recorded_completion() -> None:
    """Recorded calls -> parse -> resolve -> prepare -> call -> tool messages the SDK accepts."""
    registry = Registry(search, transfer, explode)
    export = openai_chat.export_tools(registry)
    calls = openai_chat.parse_tool_calls(RECORDED_COMPLETION["choices"][0]["message"], export)
    messages = [openai_chat.result_message(call, await run(registry, call)) for call in calls]
    for message in messages:
        check_typed_dict(message, ChatCompletionToolMessageParam)
    assistant = dict(RECORDED_COMPLETION["choices"][0]["message"])
    del assistant["refusal"], assistant["annotations"]
    check_typed_dict(assistant, ChatCompletionAssistantMessageParam)
    assert [m["tool_call_id"] for m in messages] == [t["id"] for t in assistant["tool_calls"]]
    success, failure, rejection, unknown, secret = (m["content"] for m in messages)
    assert json.loads(success) == ["tea 0", "tea 1", "tea 2"]
    assert failure == "transfers above 100 need approval"
    assert rejection.startswith("invalid arguments for tool 'search'") and "$.query" in rejection
    assert unknown == 'error: tool "delete_everything" is not available'
    assert secret == 'error: tool "explode" failed'
    assert all(SECRET not in m["content"] and "database" not in m["content"] for m in messages)


def test_result_with_media_names_the_media() -> None:
    """Chat tool messages hold text only: media are named in the text, never dropped silently."""
    call = ToolCall(id="call_9", request=openai_chat.parse_tool_calls(one_call("snapshot", ""))[0].request)
    message = openai_chat.result_message(call, Result(output=snapshot()))
    check_typed_dict(message, ChatCompletionToolMessageParam)
    assert message["content"] == "here:[image/png media]"


def test_result_needs_a_call_id_and_a_finished_result() -> None:
    """A call without an id, or a result waiting for input, cannot become a tool message."""
    [call] = openai_chat.parse_tool_calls([{"type": "function", "function": {"name": "t", "arguments": "{}"}}])
    assert call.id is None
    with pytest.raises(ProviderError, match="id"):
        openai_chat.result_message(call, Result())
    waiting = Result(input_request=InputRequest(prompt="sure?", response_schema={"type": "boolean"}))
    with pytest.raises(ProviderError, match="requests input"):
        openai_chat.result_message(ToolCall(id="c", request=call.request), waiting)
