"""Tests for the Anthropic Messages adapter: export, the strict transform, request limits, tool calls and results."""

from __future__ import annotations

import base64
import copy
import json
import re
import textwrap
from collections.abc import Iterator
from typing import Any

import anthropic as anthropic_sdk
import jsonschema
import pytest
from anthropic.types import Message, MessageParam, ToolParam, ToolResultBlockParam, ToolUseBlockParam
from corpus import CORPUS
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
from scopetool.providers import ProviderError, ToolCall, bedrock, run_call
from scopetool.providers import anthropic as adapter
from scopetool.providers._anthropic_schema import anthropic_strict
from scopetool.providers._common import Export

SECRET = "s3cr3t-db-password-0xDEADBEEF"

# -- Claude's strict subset (providers.md §4.3 and §11.3), checked independently of the transform --

FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
ALLOWED = {
    "type", "enum", "const", "anyOf", "allOf", "$ref", "$defs", "definitions", "description", "title",
    "properties", "required", "additionalProperties", "items", "minItems", "format", "pattern",
}  # fmt: skip
TYPED = ("type", "anyOf", "allOf", "enum", "const", "$ref")
COMPLEX_PATTERN = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<|\\[bB]")


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


def refs(node: Any) -> Iterator[str]:
    """Every $ref string below `node`."""
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def recursive(schema: dict[str, Any]) -> bool:
    """Whether some definition reaches itself through $refs."""
    defs = schema.get("$defs", {})

    def reaches(name: str, seen: frozenset[str]) -> bool:
        targets = {r.rsplit("/", 1)[-1] for r in refs(defs[name]) if r.startswith("#/$defs/")}
        return any(t in seen or reaches(t, seen | {t}) for t in targets if t in defs)

    return "#" in set(refs(schema)) or any(reaches(name, frozenset({name})) for name in defs)


def root_problems(schema: dict[str, Any]) -> list[str]:
    """What Anthropic refuses at the root in every mode."""
    found = [] if schema.get("type") == "object" else ["$: root type is not object"]
    return found + [f"$: {k} at the top level" for k in ("anyOf", "oneOf", "allOf") if k in schema]


def claude_strict_problems(schema: dict[str, Any]) -> list[str]:
    """What in `schema` Claude's strict mode would refuse (empty when it is acceptable)."""
    found = root_problems(schema)
    if recursive(schema):
        found.append("$: recursive")
    for path, node in nodes(schema):
        found.extend(f"{path}: {keyword}" for keyword in sorted(set(node) - ALLOWED))
        kind = node.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if "object" in kinds and node.get("additionalProperties") is not False:
            found.append(f"{path}: object not closed")
        if "array" in kinds and not (isinstance(node.get("items"), dict) and any(k in node["items"] for k in TYPED)):
            found.append(f"{path}: array items without a type")
        if not any(k in node for k in TYPED):
            found.append(f"{path}: no type")
        if "$ref" in node:
            if not re.fullmatch(r"#/\$defs/[^/]+", node["$ref"]):
                found.append(f"{path}: $ref {node['$ref']} is not local")
            if set(node) != {"$ref"}:
                found.append(f"{path}: $ref with siblings")
        if node.get("minItems", 0) not in (0, 1):
            found.append(f"{path}: minItems {node['minItems']}")
        if "format" in node and node["format"] not in FORMATS:
            found.append(f"{path}: format {node['format']}")
        if COMPLEX_PATTERN.search(node.get("pattern", "")):
            found.append(f"{path}: complex pattern")
        values = node.get("enum", []) + ([node["const"]] if "const" in node else [])
        if any(isinstance(v, dict | list) for v in values):
            found.append(f"{path}: non-primitive enum or const")
    return found


def request_cost(schemas: list[dict[str, Any]]) -> tuple[int, int]:
    """Optional parameters (not in required) and union parameters (anyOf or a type list) over `schemas`."""
    optional = unions = 0
    for schema in schemas:
        for _, node in nodes(schema):
            unions += "anyOf" in node or isinstance(node.get("type"), list)
            optional += sum(1 for name in node.get("properties", {}) if name not in node.get("required", []))
    return optional, unions


def export_schema(schema: dict[str, Any], *, strict: bool = True) -> tuple[dict[str, Any], Any]:
    """Export one hand-written schema as tool ``t``: its wire tool and its report."""
    export = adapter.export_tools(Definition(name="t", input_schema=schema), strict=strict)
    return export.tools[0], export.report.for_tool("t")


def obj(*required: str, **properties: Any) -> dict[str, Any]:
    """A closed object schema with `properties`, `required` naming the given ones."""
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def changes(report: Any) -> set[str]:
    """A report's changes as ``path keyword action`` strings."""
    return {f"{c.path} {c.keyword} {c.action}" for c in report.changes}


def alone(name: str) -> Export:
    """The strict export of one corpus tool on its own (no request limits from the others)."""
    return adapter.export_tools([t for t in CORPUS if t.name == name], strict=True)


# -- the corpus ---------------------------------------------------------------------------------

# Each corpus tool exported strict on its own: (strict, reasons' paths, changes).
PINNED_REPORT: dict[str, tuple[bool, tuple[str, ...], set[str]]] = {
    "ping": (True, (), set()),
    "add": (True, (), set()),
    "greet": (True, (), {"$.punctuation default described"}),
    "maybe": (True, (), {"$.note default described"}),
    "scale": (True, (), {"$.factor default described"}),
    "flag": (True, (), {"$.on default described"}),
    "pick": (True, (), set()),
    "level": (True, (), {"$.value $ref inlined", "$.value default described", "$.$defs.Level $defs dropped"}),
    "sort": (True, (), {"$.order default described"}),
    "mode": (True, (), set()),
    "constant": (True, (), set()),
    "bounded": (
        True,
        (),
        {
            "$.count maximum described",
            "$.count minimum described",
            "$.ratio default described",
            "$.ratio exclusiveMaximum described",
            "$.ratio exclusiveMinimum described",
        },
    ),
    "text_rules": (True, (), {"$.code maxLength described", "$.code minLength described"}),
    "sized": (True, (), {"$.items maxItems described"}),
    "unique": (True, (), {"$.items uniqueItems described"}),
    "pair": (
        True,
        (),
        {"$.point prefixItems converted", "$.point minItems described", "$.point maxItems described"},
    ),
    "mixed_tuple": (False, ("$.row",), set()),
    "when": (True, (), {"$.day default described"}),
    "ident": (True, (), set()),
    "money": (True, (), set()),
    "either": (True, (), set()),
    "counts": (False, ("$.by_name",), set()),
    "anything": (False, ("$.payload",), set()),
    "lookup": (True, (), {"$.$defs.Address.postcode default described", "$.tags default described"}),
    "ship": (
        True,
        (),
        {
            "$.$defs.Address.postcode default described",
            "$.$defs.Customer.tags default described",
            "$.express default described",
        },
    ),
    "optional_model": (True, (), {"$.$defs.Address.postcode default described", "$.address default described"}),
    "addresses": (True, (), {"$.$defs.Address.postcode default described"}),
    "tree": (False, ("$.$defs.Node",), set()),
    "pet": (
        True,
        (),
        {
            "$.$defs.Cat.lives default described",
            "$.$defs.Dog.good default described",
            "$.animal discriminator dropped",
            "$.animal oneOf converted",
        },
    ),
    "plain_union": (True, (), {"$.$defs.Cat.lives default described", "$.$defs.Dog.good default described"}),
    "window": (
        True,
        (),
        {
            "$.end default described",
            "$.limit default described",
            "$.limit maximum described",
            "$.limit minimum described",
        },
    ),
    "documented": (True, (), {"$.limit default described"}),
    "matrix": (True, (), set()),
}
FALLBACKS = {"mixed_tuple", "counts", "anything", "tree"}


@pytest.mark.parametrize("strict", [True, False])
def test_corpus_exports_validate_against_the_sdk_types(strict: bool) -> None:
    """Every corpus export is an anthropic ToolParam with exactly the keys it declares."""
    export = adapter.export_tools(CORPUS, strict=strict)
    assert len(export.tools) == len(CORPUS) >= 30
    for entry in export.tools:
        check_typed_dict(entry, ToolParam)
        assert entry.get("strict", True) is True  # only ever sent as true; absent means non-strict
        assert root_problems(entry["input_schema"]) == []


def test_corpus_report_is_pinned() -> None:
    """Each corpus tool exported strict on its own: strictness, refusals and every change."""
    found = {}
    for name in PINNED_REPORT:
        report = alone(name).report.for_tool(name)
        assert report.null_defaults == ()  # Claude keeps optional fields optional: nothing to repair
        found[name] = (report.strict, tuple(r.split(":")[0] for r in report.not_strict), changes(report))
    assert found == PINNED_REPORT
    assert {t.name for t in CORPUS} == set(PINNED_REPORT)


def test_corpus_strict_schemas_meet_claudes_strict_subset() -> None:
    """Every schema sent strict meets the strict rules; every fallback would not have."""
    for tool_ in CORPUS:
        export = alone(tool_.name)
        entry = export.tools[0]
        if entry.get("strict"):
            assert claude_strict_problems(entry["input_schema"]) == [], tool_.name
        else:
            assert tool_.name in FALLBACKS
            assert entry["input_schema"] == tool_.definition().input_schema
            assert claude_strict_problems(entry["input_schema"]) != []


def test_corpus_strict_schemas_leave_nothing_for_the_sdk_to_move() -> None:
    """The SDK's own transform_schema finds no leftover keyword to move into a description."""

    def descriptions(schema: dict[str, Any]) -> dict[str, str]:
        return {p: n["description"] for p, n in nodes(schema) if "description" in n}

    for tool_ in CORPUS:
        entry = alone(tool_.name).tools[0]
        if not entry.get("strict"):
            continue
        ours = copy.deepcopy(entry["input_schema"])
        for _, node in nodes(ours):
            node.pop("pattern", None)  # simple patterns are in the subset; the SDK helper moves every pattern
        sdk = anthropic_sdk.transform_schema(ours)
        assert descriptions(sdk) == descriptions(ours), tool_.name


def test_corpus_strict_schemas_are_valid_json_schemas() -> None:
    """The transformed schemas are still valid JSON Schema documents (2020-12)."""
    for entry in adapter.export_tools(CORPUS, strict=True).tools:
        jsonschema.Draft202012Validator.check_schema(entry["input_schema"])


def test_corpus_strict_export_respects_the_request_limits() -> None:
    """In one request at most 20 tools are strict, with at most 24 optional and 16 union parameters."""
    export = adapter.export_tools(CORPUS, strict=True)
    strict = [e["input_schema"] for e in export.tools if e.get("strict")]
    assert len(strict) == 20
    optional, unions = request_cost(strict)
    assert optional <= 24 and unions <= 16
    limited = [r.name for r in export.report.tools if any("request limit" in x for x in r.not_strict)]
    assert limited == [t.name for t in CORPUS if t.name not in FALLBACKS][20:]
    for tool_, entry in zip(CORPUS, export.tools, strict=True):
        if not entry.get("strict"):
            assert entry["input_schema"] == tool_.definition().input_schema


def test_corpus_non_strict_export_is_lossless() -> None:
    """Without strict every schema is the contract's own, no strict key is sent and nothing is reported."""
    export = adapter.export_tools(CORPUS)
    for definition, entry in zip((t.definition() for t in CORPUS), export.tools, strict=True):
        assert entry == {
            "name": definition.name,
            "description": definition.description,
            "input_schema": definition.input_schema,
        }
    assert all(r.lossless and r.strict is False for r in export.report.tools)


def test_corpus_report_serialises_and_prints() -> None:
    """The report's dict form is JSON; its text names fallbacks and their reasons."""
    report = adapter.export_tools(CORPUS, strict=True).report
    assert report.provider == "anthropic"
    data = json.loads(json.dumps(report.to_dict()))
    assert [t["name"] for t in data["tools"]] == [t.name for t in CORPUS]
    text = str(report)
    assert "- counts (non-strict):" in text
    assert "not strict: $.$defs.Node: recursive schemas cannot be strict" in text


# -- the root rule (every mode) ----------------------------------------------------------------------


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf", "allOf"])
@pytest.mark.parametrize("strict", [True, False])
def test_root_union_is_refused_naming_the_rule(keyword: str, strict: bool) -> None:
    """A definition whose root is a union cannot be exported: the error names the tool and the rule."""
    schema = {"type": "object", keyword: [obj("a", a={"type": "string"}), obj("b", b={"type": "string"})]}
    with pytest.raises(ProviderError, match=rf"'t'.*top level.*{keyword}"):
        export_schema(schema, strict=strict)


# -- strict transform cases (providers.md §11.3) ----------------------------------------------------


def test_required_is_kept_as_written() -> None:
    """Optional properties stay optional: no null repair, no extra required entries."""
    schema = obj("a", a={"type": "string"}, b={"type": "integer"})
    tool_, report = export_schema(schema)
    assert tool_["strict"] is True
    assert tool_["input_schema"] == schema
    assert report.null_defaults == ()
    assert report.changes == ()


def test_closed_objects_are_completed() -> None:
    """Closed objects get a properties member and a type when they lack one."""
    inner = {"properties": {"x": {"type": "integer"}}, "additionalProperties": False}
    schema = obj("inner", "empty", inner=inner, empty={"type": "object", "additionalProperties": False})
    tool_, report = export_schema(schema)
    properties = tool_["input_schema"]["properties"]
    assert properties["inner"] == {"type": "object", **inner}
    assert properties["empty"] == {"type": "object", "properties": {}, "additionalProperties": False}
    assert "$.inner type converted" in changes(report)
    assert "$.empty properties converted" in changes(report)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "required": ["a"]},
        obj("o", o={"type": "object", "properties": {"x": {"type": "integer"}}}),
        obj("o", o={"type": "array", "items": {"type": "object", "properties": {}}}),
    ],
)
def test_open_objects_are_not_closed(schema: dict[str, Any]) -> None:
    """An object without additionalProperties admits unknown members: the tool falls back unchanged."""
    tool_, report = export_schema(schema)
    assert "strict" not in tool_ and tool_["input_schema"] == schema
    assert any("an open object (without additionalProperties" in r for r in report.not_strict), report.not_strict


def test_unevaluated_properties_false_alone_is_closing() -> None:
    """unevaluatedProperties false with no applicator beside it becomes additionalProperties false."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "unevaluatedProperties": False}
    tool_, report = export_schema(schema)
    assert tool_["strict"] is True
    assert tool_["input_schema"] == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": False,
    }
    assert changes(report) == {"$ additionalProperties closed"}


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "open object (dict)"),
        ({"type": "object", "additionalProperties": True}, "open object (dict)"),
        ({"type": "object", "patternProperties": {"^x": {"type": "integer"}}}, "patternProperties"),
        ({"type": "object", "propertyNames": {"pattern": "^x"}}, "propertyNames"),
    ],
)
def test_open_objects_cannot_be_strict(member: dict[str, Any], reason: str) -> None:
    """A dict is never silently closed (the model would be forced to send {}): the tool falls back."""
    tool_, report = export_schema(obj("d", d=member))
    assert "strict" not in tool_
    assert tool_["input_schema"]["properties"]["d"] == member
    assert report.strict is False and any(reason in r for r in report.not_strict)


XS_TEXT = "{maxItems: 4, minItems: 2, uniqueItems: true}"


def test_unsupported_keywords_move_into_the_description() -> None:
    """Bounds, lengths, maxItems, minItems over 1, defaults and other formats become `{key: value}` text."""
    properties = {
        "n": {"type": "integer", "description": "How many.", "minimum": 1, "maximum": 9, "default": 3},
        "x": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
        "s": {"type": "string", "minLength": 2, "maxLength": 8, "format": "iri"},
        "xs": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4, "uniqueItems": True},
        "ok": {"type": "array", "items": {"type": "string", "format": "uri"}, "minItems": 1},
    }
    tool_, report = export_schema(obj(*properties, **properties))
    assert tool_["strict"] is True
    assert tool_["input_schema"]["properties"] == {
        "n": {"type": "integer", "description": 'How many.\n\n{default: 3, maximum: 9, minimum: 1}'},
        "x": {"type": "number", "description": "{exclusiveMinimum: 0, multipleOf: 0.5}"},
        "s": {"type": "string", "description": '{format: "iri", maxLength: 8, minLength: 2}'},
        "xs": {"type": "array", "items": {"type": "integer"}, "description": XS_TEXT},
        "ok": properties["ok"],
    }  # fmt: skip
    described = {(c.path, c.keyword) for c in report.changes if c.action == "described"}
    assert described == {
        ("$.n", "default"), ("$.n", "maximum"), ("$.n", "minimum"), ("$.x", "exclusiveMinimum"),
        ("$.x", "multipleOf"), ("$.s", "format"), ("$.s", "maxLength"), ("$.s", "minLength"),
        ("$.xs", "minItems"), ("$.xs", "maxItems"), ("$.xs", "uniqueItems"),
    }  # fmt: skip
    reasons = {c.keyword: c.reason for c in report.changes if c.action == "described"}
    assert reasons["default"] == "strict mode takes no defaults; the tool still applies it"
    assert reasons["minimum"] == "not in the strict subset; the contract still enforces it"


@pytest.mark.parametrize(
    ("pattern", "kept"),
    [
        ("^[A-Z]{2,4}$", True),
        ("^\\d+(\\.\\d+)?$", True),
        ("^(?!admin).*$", False),
        ("^(?<=x)y$", False),
        ("^(a)\\1$", False),
        ("\\bword\\b", False),
        ("^(?<n>a)\\k<n>$", False),
    ],
)
def test_simple_patterns_stay_and_complex_ones_are_described(pattern: str, kept: bool) -> None:
    """Lookaround, backreferences and word boundaries are not in the subset: they move to the description."""
    tool_, _ = export_schema(obj("s", s={"type": "string", "pattern": pattern}))
    node = tool_["input_schema"]["properties"]["s"]
    assert tool_["strict"] is True
    if kept:
        assert node == {"type": "string", "pattern": pattern}
    else:
        assert node == {"type": "string", "description": f"{{pattern: {json.dumps(pattern)}}}"}


def test_annotations_are_dropped_or_described() -> None:
    """Titles stay; discriminators and schema noise go; examples and deprecation are told in words."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "T",
        **obj("a", a={"type": "string", "title": "A", "examples": ["x"], "deprecated": True, "readOnly": True}),
    }
    tool_, report = export_schema(schema)
    assert tool_["input_schema"]["title"] == "T" and "$schema" not in tool_["input_schema"]
    assert tool_["input_schema"]["properties"]["a"] == {
        "type": "string",
        "title": "A",
        "description": '{deprecated: true, examples: ["x"]}',
    }
    assert {(c.path, c.keyword) for c in report.changes if c.action == "dropped"} == {
        ("$", "$schema"),
        ("$.a", "readOnly"),
    }


def test_one_of_becomes_any_of_and_nested_unions_are_flattened() -> None:
    """oneOf is rewritten as anyOf; an optional discriminated union becomes one flat anyOf (one union)."""
    branches = [obj("k", k={"const": "a", "type": "string"}), obj("k", k={"const": "b", "type": "string"})]
    schema = obj(v={"anyOf": [{"oneOf": branches, "discriminator": {"propertyName": "k"}}, {"type": "null"}]})
    tool_, report = export_schema(schema)
    node = tool_["input_schema"]["properties"]["v"]
    assert [b.get("type") for b in node["anyOf"]] == ["object", "object", "null"]
    assert changes(report) >= {
        "$.v.anyOf[0] oneOf converted",
        "$.v anyOf converted",
        "$.v.anyOf[0] discriminator dropped",
    }
    assert request_cost([tool_["input_schema"]]) == (1, 1)


def test_ref_with_description_is_inlined_and_the_unused_definition_dropped() -> None:
    """A $ref beside a description is replaced by its definition (the description kept), and $defs shrinks."""
    schema = {
        "$defs": {"P": obj("x", x={"type": "integer"}), "Q": obj("y", y={"type": "string"})},
        **obj("p", "q", p={"$ref": "#/$defs/P", "description": "A point."}, q={"$ref": "#/$defs/Q"}),
    }
    tool_, report = export_schema(schema)
    out = tool_["input_schema"]
    assert out["properties"]["p"] == {
        **obj("x", x={"type": "integer"}),
        "description": "A point.",
        "additionalProperties": False,
    }
    assert out["properties"]["q"] == {"$ref": "#/$defs/Q"}
    assert list(out["$defs"]) == ["Q"]
    assert {"$.p $ref inlined", "$.$defs.P $defs dropped"} <= changes(report)
    assert claude_strict_problems(out) == []


def test_ref_with_constraining_siblings_is_wrapped() -> None:
    """A $ref beside a constraint keeps both meanings: the $ref is wrapped in anyOf."""
    schema = {"$defs": {"E": {"enum": ["a", "b"]}}, **obj("e", e={"$ref": "#/$defs/E", "type": "string"})}
    tool_, report = export_schema(schema)
    assert tool_["input_schema"]["properties"]["e"] == {"anyOf": [{"$ref": "#/$defs/E"}], "type": "string"}
    assert "$.e $ref converted" in changes(report)


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("#/properties/a", "is not a local definition"),
        ("#/$defs/Missing", "names no definition"),
        ("other.json#/X", "local"),
    ],
)
def test_bad_refs_cannot_be_strict(ref: str, reason: str) -> None:
    """A $ref that is not a definition of this schema makes the tool fall back."""
    tool_, report = export_schema(obj("a", "b", a={"type": "string"}, b={"$ref": ref}))
    assert "strict" not in tool_
    assert any(reason in r for r in report.not_strict)


LINKED = {"$defs": {"N": obj("next", next={"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]})}}
MUTUAL = {
    "$defs": {
        "A": obj("b", b={"$ref": "#/$defs/B", "description": "b"}),
        "B": obj("a", a={"$ref": "#/$defs/A", "description": "a"}),
    }
}


@pytest.mark.parametrize(
    "schema",
    [
        obj("n", n={"$ref": "#"}),
        {**LINKED, **obj("n", n={"$ref": "#/$defs/N"})},
        {**MUTUAL, **obj("a", a={"$ref": "#/$defs/A"})},
    ],
)
def test_recursion_cannot_be_strict(schema: dict[str, Any]) -> None:
    """Recursive schemas (through # or definitions, even via $refs with siblings) fall back unchanged."""
    tool_, report = export_schema(schema)
    assert "strict" not in tool_ and tool_["input_schema"] == schema
    assert any("recursive schemas cannot be strict" in r for r in report.not_strict)


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        ({}, "without a type"),
        ({"description": "anything"}, "without a type"),
        ({"type": "array"}, "items need a type"),
        ({"type": "array", "items": {}}, "items need a type"),
        ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}, "tuple (prefixItems)"),
        ({"type": "array", "prefixItems": [{"type": "integer"}]}, "tuple (prefixItems)"),
        ({"enum": [{"a": 1}, "b"]}, "enum must list"),
        ({"const": [1, 2]}, "const must be"),
        ({"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]}, "allOf over a $ref"),
        ({"oneOf": [{"type": "string"}], "anyOf": [{"type": "integer"}]}, "anyOf beside oneOf"),
    ],
)
def test_shapes_outside_the_subset_cannot_be_strict(member: dict[str, Any], reason: str) -> None:
    """Any, untyped items, mixed tuples, object enums and allOf over $refs make the tool fall back."""
    defs = {"A": obj("x", x={"type": "string"}), "B": obj("y", y={"type": "string"})}
    tool_, report = export_schema({"$defs": defs, **obj("v", v=member)})
    assert "strict" not in tool_
    assert any(reason in r for r in report.not_strict), report.not_strict


def test_all_of_merges_or_stays() -> None:
    """A single-member allOf merges into its parent; several members without $ref stay as allOf."""
    schema = obj(
        "one", "two",
        one={"allOf": [{"type": "integer"}], "description": "One."},
        two={"allOf": [{"type": "string"}, {"type": "string", "format": "email"}]},
    )  # fmt: skip
    tool_, report = export_schema(schema)
    assert tool_["strict"] is True
    assert tool_["input_schema"]["properties"]["one"] == {"type": "integer", "description": "One."}
    assert tool_["input_schema"]["properties"]["two"] == schema["properties"]["two"]
    assert "$.one allOf inlined" in changes(report)


def test_homogeneous_tuple_becomes_items_with_its_length_described() -> None:
    """A same-typed tuple becomes items; its fixed length (minItems over 1, maxItems) is described."""
    tuple_schema = {"type": "array", "prefixItems": [{"type": "integer"}] * 3, "minItems": 3, "maxItems": 3}
    tool_, _ = export_schema(obj("p", p=tuple_schema))
    assert tool_["input_schema"]["properties"]["p"] == {
        "type": "array",
        "items": {"type": "integer"},
        "description": "{maxItems: 3, minItems: 3}",
    }


def test_fallback_sends_the_original_schema_with_every_reason() -> None:
    """A refused schema is sent unchanged (defaults and all), every reason listed, no change recorded."""
    schema = obj(d={"type": "object", "additionalProperties": True}, v={}, n={"type": "integer", "default": 1})
    tool_, report = export_schema(schema)
    assert tool_ == {"name": "t", "input_schema": schema}
    assert set(report.not_strict) == {
        "$.d: an open object (dict) cannot be closed without changing its meaning",
        "$.v: a value without a type (Any) cannot be strict",
    }
    assert report.changes == ()


def test_transform_never_changes_its_input() -> None:
    """The strict transform works on a copy."""
    schema = {
        "$defs": {"P": obj("x", x={"type": "integer", "minimum": 0})},
        **obj(p={"$ref": "#/$defs/P", "default": None}),
    }
    before = json.dumps(schema, sort_keys=True)
    assert anthropic_strict(schema).strict
    assert json.dumps(schema, sort_keys=True) == before


# -- request limits --------------------------------------------------------------------------------


def definition(name: str, optional: int = 0, unions: int = 0) -> Definition:
    """A tool with one required string, `optional` optional integers and `unions` required union fields."""
    properties: dict[str, Any] = {"req": {"type": "string"}}
    properties |= {f"o{i}": {"type": "integer"} for i in range(optional)}
    properties |= {f"u{i}": {"anyOf": [{"type": "integer"}, {"type": "string"}]} for i in range(unions)}
    required = ["req", *(f"u{i}" for i in range(unions))]
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return Definition(name=name, input_schema=schema)


def test_at_most_20_strict_tools_per_request() -> None:
    """The 21st strict-capable tool falls back, and the report names the limit."""
    export = adapter.export_tools([definition(f"t{i:02}") for i in range(21)], strict=True)
    assert [e.get("strict", False) for e in export.tools] == [True] * 20 + [False]
    assert export.report.for_tool("t20").not_strict == ("request limit: at most 20 strict tools per request",)
    assert "strict" not in export.tools[20] and export.tools[20]["input_schema"] == definition("x").input_schema


def test_optional_parameters_are_limited_across_tools_first_come_first_served() -> None:
    """Tools whose optional parameters would pass 24 fall back; a later, smaller tool still fits."""
    tools = [
        definition("a", optional=10),
        definition("b", optional=10),
        definition("c", optional=5),
        definition("d", optional=4),
    ]
    export = adapter.export_tools(tools, strict=True)
    assert [r.strict for r in export.report.tools] == [True, True, False, True]
    assert export.report.for_tool("c").not_strict == (
        "request limit: its 5 optional parameters would bring the strict tools to 25 (at most 24 per request)",
    )
    assert request_cost([e["input_schema"] for e in export.tools if e.get("strict")])[0] == 24


def test_union_parameters_are_limited_across_tools() -> None:
    """Union parameters (anyOf or type lists) over 16 make the tool that would pass the limit fall back."""
    tools = [definition("a", unions=9), definition("b", unions=8), definition("c", unions=7)]
    export = adapter.export_tools(tools, strict=True)
    assert [r.strict for r in export.report.tools] == [True, False, True]
    assert export.report.for_tool("b").not_strict == (
        "request limit: its 8 union parameters would bring the strict tools to 17 (at most 16 per request)",
    )
    assert request_cost([e["input_schema"] for e in export.tools if e.get("strict")])[1] == 16


def test_one_tool_over_a_limit_alone_falls_back() -> None:
    """A single tool with 25 optional parameters cannot be strict even on its own."""
    export = adapter.export_tools([definition("big", optional=25)], strict=True)
    assert export.report.for_tool("big").strict is False
    assert "25 optional parameters" in export.report.for_tool("big").not_strict[0]


# -- names and descriptions ------------------------------------------------------------------------


def forged(name: str) -> Definition:
    """A definition holding a name scopetool itself would refuse (as one from elsewhere might)."""
    definition_ = Definition(name="ok", input_schema={"type": "object"})
    definition_._name = name
    return definition_


def test_name_rule_and_limit() -> None:
    """Names up to 128 characters of the rule are exported; others are refused naming the tool and the rule."""
    export = adapter.export_tools([forged("a" * 128), Definition(name="Get-item_2", input_schema={"type": "object"})])
    assert [e["name"] for e in export.tools] == ["a" * 128, "Get-item_2"]
    for bad in ("a" * 129, "bad.name", "has space", ""):
        with pytest.raises(ProviderError, match=r"anthropic: names must match \[a-zA-Z0-9_-\]\{1,128\}"):
            adapter.export_tools(forged(bad))


def test_descriptions_have_no_limit_and_empty_ones_are_left_out() -> None:
    """A long description is sent whole with no note; an empty one sends no description member."""
    export = adapter.export_tools(
        [
            Definition(name="long", description="d" * 5000, input_schema={"type": "object"}),
            Definition(name="bare", input_schema={"type": "object"}),
        ]
    )
    assert export.tools[0]["description"] == "d" * 5000
    assert "description" not in export.tools[1]
    assert all(r.notes == () for r in export.report.tools)


def test_export_tools_is_a_fresh_copy_and_registry_order_is_by_name() -> None:
    """Changing what an export hands out never changes it; a registry exports in name order."""
    export = adapter.export_tools(Registry(*CORPUS[:6]), strict=True)
    names = [e["name"] for e in export.tools]
    assert names == sorted(names)
    export.tools[0]["name"] = "changed"
    assert export.tools[0]["name"] == names[0]


# -- tool calls ------------------------------------------------------------------------------------

RECORDED_RESPONSE = json.loads(
    textwrap.dedent(
        """
        {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
         "model": "claude-sonnet-4-5-20250929",
         "content": [
           {"type": "thinking", "thinking": "Several tools are needed.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"},
           {"type": "text", "text": "Let me check those for you."},
           {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "search", "input": {"query": "tea"}},
           {"type": "tool_use", "id": "toolu_01B7Hq2", "name": "transfer", "input": {"amount": 500}},
           {"type": "tool_use", "id": "toolu_01C8Jr3", "name": "search", "input": {"query": 7, "limit": 2}},
           {"type": "tool_use", "id": "toolu_01D9Ks4", "name": "delete_everything", "input": {}},
           {"type": "tool_use", "id": "toolu_01E0Lt5", "name": "explode", "input": {}}
         ],
         "stop_reason": "tool_use", "stop_sequence": null,
         "usage": {"input_tokens": 512, "output_tokens": 161}}
        """
    )
)


def test_recorded_response_is_the_sdk_wire_format() -> None:
    """The recorded payload is a valid Message; its tool_use blocks are valid ToolUseBlockParams."""
    message = Message.model_validate(RECORDED_RESPONSE)
    assert [b.type for b in message.content].count("tool_use") == 5
    for block in RECORDED_RESPONSE["content"][2:]:
        check_typed_dict(block, ToolUseBlockParam)


def test_parse_tool_calls_of_a_response() -> None:
    """Each tool_use block keeps its id, name and input (as JSON text); other blocks are skipped."""
    calls = adapter.parse_tool_calls(RECORDED_RESPONSE)
    assert [(c.id, c.name) for c in calls] == [
        ("toolu_01A09q90qw90lq917835lq9", "search"),
        ("toolu_01B7Hq2", "transfer"),
        ("toolu_01C8Jr3", "search"),
        ("toolu_01D9Ks4", "delete_everything"),
        ("toolu_01E0Lt5", "explode"),
    ]
    assert json.loads(calls[0].request.arguments) == {"query": "tea"}
    assert calls[3].request.arguments == "{}"


def test_parse_tool_calls_of_other_payload_forms() -> None:
    """A content list, an SDK Message object and an assistant message without calls all work."""
    listed = adapter.parse_tool_calls(RECORDED_RESPONSE["content"])
    from_sdk = adapter.parse_tool_calls(Message.model_validate(RECORDED_RESPONSE))
    blocks = adapter.parse_tool_calls(Message.model_validate(RECORDED_RESPONSE).content)
    assert [c.id for c in listed] == [c.id for c in from_sdk] == [c.id for c in blocks]
    assert len(listed) == 5
    assert adapter.parse_tool_calls({"role": "assistant", "content": "Hello"}) == []
    assert adapter.parse_tool_calls({"role": "assistant", "content": [{"type": "text", "text": "Hi"}]}) == []


def test_non_ascii_input_is_kept() -> None:
    """Input text outside ASCII reaches the contract as is."""
    [call] = adapter.parse_tool_calls([{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"q": "thé 🍵"}}])
    assert call.request.arguments == '{"q":"thé 🍵"}'


@pytest.mark.parametrize(
    "payload",
    [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
        {"role": "assistant", "content": {"type": "tool_use"}},
        {"role": "assistant", "content": ["not a block"]},
        {"role": "assistant", "content": [{"id": "toolu_1", "name": "t", "input": {}}]},
        [{"type": "tool_use", "name": "t", "input": {}}],
        [{"type": "tool_use", "id": "", "name": "t", "input": {}}],
        [{"type": "tool_use", "id": "toolu_1", "input": {}}],
        [{"type": "tool_use", "id": "toolu_1", "name": 3, "input": {}}],
        [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": '{"a": 1}'}],
        [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": [1]}],
        [{"type": "tool_use", "id": "toolu_1", "name": "t"}],
        [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"x": float("nan")}}],
        "tool_use",
    ],
)
def test_malformed_payloads_raise(payload: Any) -> None:
    """Anything that is not an assistant message with well-formed tool_use blocks is a ProviderError."""
    with pytest.raises(ProviderError):
        adapter.parse_tool_calls(payload)


# -- results and the full round trip ----------------------------------------------------------------


@tool
def search(query: str, limit: int = 3) -> list[str]:
    """Search the shop.

    Args:
        query: Words to look for.
        limit: How many results.
    """
    return [f"{query} {i}" for i in range(limit)]


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


async def test_round_trip_of_a_recorded_response() -> None:
    """Recorded tool_use blocks -> parse -> resolve -> prepare -> call -> one user message the SDK accepts."""
    registry = Registry(search, transfer, explode)
    export = adapter.export_tools(registry, strict=True)
    calls = adapter.parse_tool_calls(RECORDED_RESPONSE, export)
    outcomes = [await run(registry, call) for call in calls]
    assert isinstance(outcomes[2], InvalidInvocationError)
    message = adapter.results_message(zip(calls, outcomes, strict=True))
    check_typed_dict(message, MessageParam)
    for block in message["content"]:
        check_typed_dict(block, ToolResultBlockParam)
    assert message["role"] == "user"
    assert [b["tool_use_id"] for b in message["content"]] == [c.id for c in calls]
    success, failure, rejection, unknown, secret = message["content"]
    assert "is_error" not in success
    assert json.loads(success["content"][0]["text"]) == ["tea 0", "tea 1", "tea 2"]
    assert failure["is_error"] is True
    assert failure["content"] == [{"type": "text", "text": "transfers above 100 need approval"}]
    assert rejection["is_error"] is True
    assert rejection["content"][0]["text"].startswith("invalid arguments for tool 'search'")
    assert "$.query" in rejection["content"][0]["text"]
    assert unknown == {
        "type": "tool_result",
        "tool_use_id": "toolu_01D9Ks4",
        "content": [{"type": "text", "text": 'error: tool "delete_everything" is not available'}],
        "is_error": True,
    }
    assert secret["content"] == [{"type": "text", "text": 'error: tool "explode" failed'}]
    assert SECRET not in json.dumps(message) and "database" not in json.dumps(message)


def test_results_message_puts_tool_results_first() -> None:
    """Extra text goes after every tool_result block; no results or a repeated id are refused."""
    call = ToolCall(id="toolu_1", request=adapter.parse_tool_calls(RECORDED_RESPONSE)[0].request)
    message = adapter.results_message([(call, Result(output=Output.from_text("ok")))], text="Thanks.")
    check_typed_dict(message, MessageParam)
    assert [b["type"] for b in message["content"]] == ["tool_result", "text"]
    with pytest.raises(ProviderError, match="at least one"):
        adapter.results_message([])
    with pytest.raises(ProviderError, match="toolu_1"):
        adapter.results_message([(call, Result()), (call, Result())])


PNG = b"\x89PNG\r\n\x1a\n fake"
PNG_B64 = base64.b64encode(PNG).decode()
PDF_B64 = base64.b64encode(b"%PDF-1.7").decode()


@pytest.mark.parametrize(
    ("output", "content"),
    [
        (Output.from_text("plain"), [{"type": "text", "text": "plain"}]),
        (Output.from_json('{"sum": 5}'), [{"type": "text", "text": '{"sum": 5}'}]),
        (Output(content=(TextBlock("see:"),), details=b'{"hidden": 1}'), [{"type": "text", "text": "see:"}]),
        (
            Output(content=(TextBlock("chart:"), MediaBlock(mime_type="image/png", data=PNG))),
            [
                {"type": "text", "text": "chart:"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
            ],
        ),
        (
            Output(content=(MediaBlock(mime_type="image/webp", uri="https://example.com/a.webp"),)),
            [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.webp"}}],
        ),
        (
            Output(content=(MediaBlock(mime_type="image/jpeg", reference="file_011CNha8iCJcU1wXNR6q4V8w"),)),
            [{"type": "image", "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}}],
        ),
        (
            Output(content=(MediaBlock(mime_type="application/pdf", data=b"%PDF-1.7"),)),
            [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64}}],
        ),
        (
            Output(content=(MediaBlock(mime_type="application/pdf", uri="https://example.com/r.pdf"),)),
            [{"type": "document", "source": {"type": "url", "url": "https://example.com/r.pdf"}}],
        ),
    ],
)  # fmt: skip
def test_result_content_blocks(output: Output, content: list[dict[str, Any]]) -> None:
    """Text, images and PDFs map to tool_result content; details show only when there is no content."""
    block = adapter.result_message(ToolCall(id="toolu_9", request=_req()), Result(output=output))
    check_typed_dict(block, ToolResultBlockParam)
    assert block["content"] == content
    assert "is_error" not in block


def _req() -> Any:
    """A request for the tool ``t``."""
    return adapter.parse_tool_calls([{"type": "tool_use", "id": "x", "name": "t", "input": {}}])[0].request


@pytest.mark.parametrize(
    "media",
    [
        MediaBlock(mime_type="audio/wav", data=b"RIFF"),
        MediaBlock(mime_type="image/tiff", data=b"II*"),
        MediaBlock(mime_type="image/png", uri="file:///tmp/a.png"),
    ],
)
def test_media_anthropic_cannot_carry_is_named(media: MediaBlock) -> None:
    """Media a tool_result cannot carry are named in a text block, never dropped silently."""
    block = adapter.result_message(ToolCall(id="toolu_9", request=_req()), Result(output=Output(content=(media,))))
    check_typed_dict(block, ToolResultBlockParam)
    [text] = block["content"]
    assert text["type"] == "text" and text["text"].startswith(f"[{media.mime_type} media not shown")


def test_empty_result_sends_no_content() -> None:
    """An empty output is a tool_result without content (the block alone says the call finished)."""
    block = adapter.result_message(ToolCall(id="toolu_9", request=_req()), Result())
    check_typed_dict(block, ToolResultBlockParam)
    assert block == {"type": "tool_result", "tool_use_id": "toolu_9"}


def test_result_needs_a_call_id_and_a_finished_result() -> None:
    """A call without an id, or a result waiting for input, cannot become a tool_result."""
    with pytest.raises(ProviderError, match="tool_use id"):
        adapter.result_message(ToolCall(id=None, request=_req()), Result())
    waiting = Result(input_request=InputRequest(prompt="sure?", response_schema={"type": "boolean"}))
    with pytest.raises(ProviderError, match="requests input"):
        adapter.result_message(ToolCall(id="toolu_9", request=_req()), waiting)


def test_module_example_runs_as_documented() -> None:
    """The module docstring's example runs and prints what its `#>` lines say."""
    [block] = re.findall(r"```python\n(.*?)```", adapter.__doc__ or "", re.S)
    code = textwrap.dedent(block)
    expected = re.findall(r"^#> (.+)$", code, re.M)
    printed: list[str] = []
    exec(compile(code, "example", "exec"), {"print": lambda *a: printed.append(" ".join(map(str, a)))})
    assert printed == expected


def test_parse_refuses_an_export_of_another_provider() -> None:
    """An export made for another provider cannot drive this provider's import."""
    other = bedrock.export_tools(CORPUS[:1])
    with pytest.raises(ProviderError, match=r"scopetool\.providers\.anthropic, not one for bedrock"):
        adapter.parse_tool_calls(RECORDED_RESPONSE, other)
    assert len(adapter.parse_tool_calls(RECORDED_RESPONSE, adapter.export_tools(CORPUS[:1]))) == 5
