"""Tests for the Ollama adapter: the schema fitted to what Ollama keeps, tool calls and tool messages."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from corpus import CORPUS, tree
from ollama._types import ChatResponse, Message, Tool

from scopetool import (
    Definition,
    Failure,
    FailureKind,
    InvalidInvocationError,
    MediaBlock,
    Output,
    Registry,
    Result,
    TextBlock,
    tool,
)
from scopetool.providers import ProviderError, ToolCall, UnknownToolError, mcp, ollama, run_call
from scopetool.providers._common import Export
from scopetool.providers._ollama_schema import PROPERTY_KEYS, ROOT_KEYS, ollama_schema

SECRET = "s3cr3t-db-password-0xDEADBEEF"
EXPORTABLE = [func for func in CORPUS if func is not tree]
"""The corpus minus its recursive tool, which Ollama cannot take."""
CONSTRAINTS = (
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
    "pattern", "format", "minItems", "maxItems", "uniqueItems", "default",
)  # fmt: skip


def the_tool(export: Export, name: str) -> dict[str, Any]:
    """The exported function of one tool."""
    for entry in export.tools:
        if entry["function"]["name"] == name:
            function: dict[str, Any] = entry["function"]
            return function
    raise KeyError(name)


def export_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """Export one hand-written schema as tool ``t``: its parameters and its changes as strings."""
    export = ollama.export_tools([Definition(name="t", input_schema=schema)])
    return export.tools[0]["function"]["parameters"], {str(c) for c in export.report.for_tool("t").changes}


def obj(**properties: Any) -> dict[str, Any]:
    """An object schema with `properties`, none required."""
    return {"type": "object", "properties": properties}


def client_view(entry: dict[str, Any]) -> dict[str, Any]:
    """What ollama-python sends for a tool: `Tool.model_validate(...).model_dump(exclude_none=True)`."""
    dumped: dict[str, Any] = Tool.model_validate(entry).model_dump(exclude_none=True)
    return dumped


def property_nodes(schema: Any, path: str) -> Iterator[tuple[str, Any]]:
    """A property and every `items` below it, with paths."""
    yield path, schema
    if isinstance(schema, dict) and "items" in schema:
        yield from property_nodes(schema["items"], f"{path}.items")


def constraint_texts(schema: Any) -> Iterator[str]:
    """``keyword: value`` (as the description writes it) for every constraint anywhere in `schema`."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in CONSTRAINTS and not isinstance(value, dict):
                yield f"{json.dumps(key)}:{json.dumps(value, separators=(',', ':'))}"
                yield f"{key}: {json.dumps(value, separators=(',', ':'))}"
            yield from constraint_texts(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from constraint_texts(item)


# -- the corpus ---------------------------------------------------------------------------------


def test_corpus_exports_survive_the_ollama_client_whole() -> None:
    """ollama-python's Tool model drops nothing from any export (it would drop much of the raw schemas)."""
    export = ollama.export_tools(EXPORTABLE)
    assert len(export.tools) == len(EXPORTABLE) >= 30
    for entry in export.tools:
        assert client_view(entry) == entry
        assert set(entry) == {"type", "function"} and entry["type"] == "function"


def test_raw_schemas_would_lose_keywords_in_the_client() -> None:
    """Why the transform exists: sent raw, the client silently drops bounds, refs and nested fields."""
    for name in ("bounded", "lookup", "optional_model", "pet"):
        raw = {"type": "function", "function": {"name": name, "parameters": the_raw_schema(name)}}
        assert client_view(raw) != raw


def the_raw_schema(name: str) -> dict[str, Any]:
    """The contract's input schema of one corpus tool."""
    [func] = [f for f in CORPUS if f.definition().name == name]
    return func.definition().input_schema


def test_corpus_schemas_hold_only_what_ollama_keeps() -> None:
    """Parameters keep type/properties/required; every property and item keeps only type/items/description/enum."""
    export = ollama.export_tools(EXPORTABLE)
    for entry in export.tools:
        parameters = entry["function"]["parameters"]
        assert set(parameters) <= set(ROOT_KEYS), entry["function"]["name"]
        assert parameters["type"] == "object"
        assert set(parameters.get("required", [])) <= set(parameters["properties"])
        for name, prop in parameters["properties"].items():
            for path, node in property_nodes(prop, f"$.{name}"):
                assert isinstance(node, dict), path
                assert set(node) <= set(PROPERTY_KEYS), (path, node)
                kind = node.get("type")
                assert kind is None or isinstance(kind, str) or all(isinstance(k, str) for k in kind), path
        assert "$ref" not in json.dumps(parameters)


def test_corpus_constraints_are_described_not_lost() -> None:
    """Every bound, pattern, format, length and default of the contract is written in a description."""
    export = ollama.export_tools(EXPORTABLE)
    checked = 0
    for func in EXPORTABLE:
        d = func.definition()
        sent = json.dumps(the_tool(export, d.name)["parameters"], ensure_ascii=False).replace("\\", "")
        texts = list(constraint_texts(d.input_schema))
        for written, spelled in zip(texts[::2], texts[1::2], strict=True):
            # Escapes are compared away on both sides (a pattern's backslashes are escaped once more when described).
            left, right = written.replace("\\", ""), spelled.replace("\\", "")
            assert left in sent or right in sent, (d.name, right)
            checked += 1
    assert checked >= 30


def test_corpus_report_is_pinned() -> None:
    """The report of each corpus tool: what was dropped, converted, inlined or described."""
    export = ollama.export_tools(EXPORTABLE)
    assert export.report.provider == "ollama"
    closed = "$ additionalProperties dropped"
    short = {r.name: {f"{c.path} {c.keyword} {c.action}" for c in r.changes} for r in export.report.tools}
    assert short["ping"] == short["add"] == short["mode"] == short["anything"] == {closed}
    assert short["greet"] == {closed, "$.punctuation default described"}
    assert short["maybe"] == {closed, "$.note anyOf converted", "$.note default described"}
    assert short["pick"] == {closed, "$ $defs dropped", "$.color $ref inlined", "$.color title dropped"}
    assert short["constant"] == {closed, "$.kind const converted"}
    assert short["bounded"] == {
        closed,
        "$.count maximum described",
        "$.count minimum described",
        "$.ratio default described",
        "$.ratio exclusiveMaximum described",
        "$.ratio exclusiveMinimum described",
    }
    assert short["pair"] == {
        closed,
        "$.point prefixItems converted",
        "$.point maxItems described",
        "$.point minItems described",
    }
    assert short["mixed_tuple"] == {
        closed,
        "$.row prefixItems described",
        "$.row maxItems described",
        "$.row minItems described",
    }
    assert short["either"] == {closed, "$.value anyOf converted"}
    assert short["counts"] == {closed, "$.by_name additionalProperties described"}
    assert short["lookup"] == {
        closed,
        "$ $defs dropped",
        "$ description dropped",
        "$.address $ref inlined",
        "$.address title dropped",
        "$.address.postcode anyOf converted",
        "$.address additionalProperties dropped",
        "$.address properties described",
        "$.address required described",
        "$.tags default described",
    }
    assert short["pet"] == {
        closed,
        "$ $defs dropped",
        "$.animal.oneOf[0] $ref inlined",
        "$.animal.oneOf[1] $ref inlined",
        "$.animal discriminator dropped",
        "$.animal type converted",
        "$.animal.oneOf[0] title dropped",
        "$.animal.oneOf[0].kind const converted",
        "$.animal.oneOf[1] title dropped",
        "$.animal.oneOf[1].kind const converted",
        "$.animal oneOf described",
    }
    for report in export.report.tools:
        assert report.strict is None
        assert report.not_strict == report.null_defaults == report.notes == ()
        assert not report.lossless  # every contract schema is closed, and Ollama cannot say so


def test_corpus_exported_schemas_read_as_expected() -> None:
    """A few exported properties, as the model reads them."""
    export = ollama.export_tools(EXPORTABLE)

    def prop(tool_name: str, name: str) -> dict[str, Any]:
        properties: dict[str, Any] = the_tool(export, tool_name)["parameters"]["properties"]
        return properties[name]

    assert prop("maybe", "note") == {"type": ["string", "null"], "description": "(default: null)"}
    assert prop("bounded", "count") == {"type": "integer", "description": "(maximum: 10; minimum: 0)"}
    assert prop("pick", "color") == {"description": "A string enum.", "enum": ["red", "green"], "type": "string"}
    assert prop("constant", "kind") == {"type": "string", "enum": ["only"]}
    assert prop("either", "value") == {"type": ["integer", "string"]}
    assert prop("pair", "point")["items"] == {"type": "integer"}
    assert prop("when", "at") == {"type": "string", "description": '(format: "date-time")'}
    assert prop("optional_model", "address")["type"] == ["object", "null"]
    assert '"street"' in prop("optional_model", "address")["description"]
    assert prop("addresses", "items")["items"]["type"] == "object"
    assert prop("pet", "animal")["type"] == "object"
    assert '"enum":["cat"]' in prop("pet", "animal")["description"]
    assert prop("window", "limit") == {"type": "integer", "description": "(default: 10; maximum: 100; minimum: 1)"}
    assert '"tags":{"default":[]' in prop("ship", "customer")["description"]  # nested keywords are described too
    assert prop("documented", "query") == {"description": "Words to look for.", "type": "string"}


def test_recursive_schema_is_refused_naming_the_tool() -> None:
    """A recursive model cannot be inlined: the export raises, naming the tool and the reference."""
    with pytest.raises(ProviderError, match=r"tool 'tree' .*recursive \(#/\$defs/Node"):
        ollama.export_tools([tree])


def test_transform_never_changes_its_input() -> None:
    """The contract's schema is copied, never edited."""
    for func in EXPORTABLE:
        schema = func.definition().input_schema
        before = json.dumps(schema, sort_keys=True)
        ollama_schema(schema, "t")
        assert json.dumps(schema, sort_keys=True) == before


# -- the transform, keyword by keyword ----------------------------------------------------------


def test_ref_siblings_win_over_the_definition() -> None:
    """An inlined $ref keeps its sibling description over the definition's own."""
    schema = {
        "type": "object",
        "properties": {"c": {"$ref": "#/$defs/C", "description": "the colour"}},
        "$defs": {"C": {"type": "string", "enum": ["r"], "description": "C.", "title": "C"}},
    }
    parameters, changes = export_schema(schema)
    assert parameters["properties"]["c"] == {"type": "string", "enum": ["r"], "description": "the colour"}
    assert {
        "$.c: $ref inlined (Ollama resolves no references: #/$defs/C inlined)",
        "$.c: title dropped (an annotation Ollama drops)",
    } <= changes


def test_a_definition_used_twice_is_inlined_twice() -> None:
    """Reuse is not recursion: a definition referenced from two places is inlined in both."""
    schema = obj(a={"$ref": "#/$defs/X"}, b={"type": "array", "items": {"$ref": "#/$defs/X"}})
    schema["$defs"] = {"X": {"type": "integer", "minimum": 1}}
    parameters, _ = export_schema(schema)
    assert parameters["properties"]["a"] == {"type": "integer", "description": "(minimum: 1)"}
    assert parameters["properties"]["b"]["items"] == {"type": "integer", "description": "(minimum: 1)"}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (obj(a={"type": "array", "items": {"$ref": "#"}}), r"recursive \(# at \$\.a\.items\)"),
        (obj(a={"$ref": "#/$defs/missing"}), "does not point into its own schema"),
        (obj(a={"$ref": "https://example.com/s.json"}), "does not point into its own schema"),
    ],
)
def test_unresolvable_refs_raise(schema: dict[str, Any], message: str) -> None:
    """A reference to the root, to nothing or to another document cannot be inlined."""
    with pytest.raises(ProviderError, match=message):
        export_schema(schema)


def test_ref_chain_and_json_pointer_are_followed() -> None:
    """A reference to a reference, and a pointer into a list, are both inlined."""
    schema = obj(a={"$ref": "#/$defs/A"}, b={"$ref": "#/$defs/U/anyOf/0"})
    schema["$defs"] = {"A": {"$ref": "#/$defs/B"}, "B": {"type": "boolean"}, "U": {"anyOf": [{"type": "string"}]}}
    parameters, _ = export_schema(schema)
    assert parameters["properties"] == {"a": {"type": "boolean"}, "b": {"type": "string"}}


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, {"type": ["integer", "null"]}),
        ({"anyOf": [{"type": ["integer", "string"]}, {"type": "null"}]}, {"type": ["integer", "string", "null"]}),
        (
            {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]},
            {"enum": ["a", "b", None], "type": ["string", "null"]},
        ),
        ({"anyOf": [{"enum": [1]}, {"type": "null"}]}, {"enum": [1, None]}),
        ({"anyOf": [{}, {"type": "null"}]}, {}),
        (
            {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
            {"type": ["integer", "string", "null"]},
        ),
        ({"oneOf": [{"type": "integer"}, {"type": "boolean"}]}, {"type": ["integer", "boolean"]}),
    ],
)
def test_nullables_and_plain_unions_become_type_lists(prop: dict[str, Any], expected: dict[str, Any]) -> None:
    """anyOf [X, null] is X with a null type (and null in its enum); a union of plain types is a type list."""
    parameters, changes = export_schema(obj(p=prop))
    assert parameters["properties"]["p"] == expected
    assert any(change.startswith(("$.p: anyOf converted", "$.p: oneOf converted")) for change in changes)


def test_a_union_of_models_keeps_its_branches_in_the_description() -> None:
    """A union that no type list can say is described whole, and typed when its branches agree."""
    branches = [{"type": "object", "properties": {"x": {"type": "integer"}}}, {"type": "string"}]
    parameters, changes = export_schema(obj(p={"anyOf": branches}))
    prop = parameters["properties"]["p"]
    assert prop["type"] == ["object", "string"]
    assert prop["description"] == "(anyOf: " + json.dumps(branches, separators=(",", ":"), sort_keys=True) + ")"
    assert "$.p: anyOf described (Ollama keeps no anyOf; the contract still enforces it)" in changes
    untyped, _ = export_schema(obj(p={"anyOf": [{"type": "integer", "minimum": 1}, {"const": "x"}, {"not": {}}]}))
    assert "type" not in untyped["properties"]["p"]
    assert untyped["properties"]["p"]["description"].startswith("(anyOf: [")


def test_const_becomes_a_typed_one_value_enum() -> None:
    """const is a one-value enum; its type is inferred when missing (booleans before integers)."""
    parameters, _ = export_schema(
        obj(a={"const": True}, b={"const": 3}, c={"const": 1.5}, d={"const": None}, e={"const": [1]})
    )
    assert parameters["properties"] == {
        "a": {"enum": [True], "type": "boolean"},
        "b": {"enum": [3], "type": "integer"},
        "c": {"enum": [1.5], "type": "number"},
        "d": {"enum": [None], "type": "null"},
        "e": {"enum": [[1]]},
    }


def test_single_all_of_is_merged_and_several_are_described() -> None:
    """A one-member allOf merges into its parent; a several-member one goes into the description."""
    parameters, changes = export_schema(
        obj(a={"allOf": [{"type": "integer"}], "description": "n"}, b={"allOf": [{"minimum": 1}, {"maximum": 3}]})
    )
    assert parameters["properties"]["a"] == {"description": "n", "type": "integer"}
    assert parameters["properties"]["b"] == {"description": '(allOf: [{"minimum":1},{"maximum":3}])'}
    assert "$.a: allOf inlined (a single-member allOf merged into its parent)" in changes


def test_root_keys_other_than_the_kept_ones_are_dropped_and_reported() -> None:
    """The parameters object has no description or bounds: they are dropped, each reported."""
    schema = {**obj(a={"type": "string"}), "description": "input", "minProperties": 1, "title": "In"}
    parameters, changes = export_schema(schema)
    assert parameters == obj(a={"type": "string"})
    assert {c.split(" (")[0] for c in changes} == {
        "$: description dropped",
        "$: minProperties dropped",
        "$: title dropped",
    }


def test_boolean_property_schemas() -> None:
    """A `true` property is the empty schema; a `false` one says that no value is accepted."""
    parameters, changes = export_schema(obj(yes=True, no=False))
    assert parameters["properties"] == {"yes": {}, "no": {"description": "(no value is accepted)"}}
    assert len([c for c in changes if "schema converted" in c]) == 2
    entry = {"type": "function", "function": {"name": "t", "parameters": parameters}}
    assert client_view(entry) == entry


def test_items_are_fitted_too() -> None:
    """Array items follow the property rule, however deep."""
    deep = {"type": "array", "items": {"type": "array", "items": {"type": "string", "maxLength": 3, "title": "S"}}}
    parameters, changes = export_schema(obj(m=deep))
    assert parameters["properties"]["m"]["items"]["items"] == {"type": "string", "description": "(maxLength: 3)"}
    assert "$.m.items.items: maxLength described (Ollama drops this keyword; the contract still enforces it)" in changes


# -- names and descriptions ---------------------------------------------------------------------


def test_names_and_descriptions_pass_through() -> None:
    """Ollama enforces no name rule or description limit: both are sent as they are, without notes."""
    long = Definition(name="a-b_c", input_schema={"type": "object"}, description="d" * 5000)
    export = ollama.export_tools([long])
    assert export.tools[0]["function"]["name"] == "a-b_c"
    assert export.tools[0]["function"]["description"] == "d" * 5000
    assert export.report.for_tool("a-b_c").notes == ()
    assert re.fullmatch(ollama.NAME_PATTERN, "a-b_c")


def test_empty_description_is_left_out_and_duplicates_refused() -> None:
    """An empty description is not sent; two tools with one name cannot be exported together."""
    d = Definition(name="t", input_schema={"type": "object"})
    assert "description" not in ollama.export_tools([d]).tools[0]["function"]
    with pytest.raises(ProviderError, match="unique"):
        ollama.export_tools([d, d])


# -- tool calls ---------------------------------------------------------------------------------

RECORDED_RESPONSE: dict[str, Any] = {
    "model": "llama3.1:8b",
    "created_at": "2025-07-01T10:00:00.000000Z",
    "message": {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"function": {"name": "add", "arguments": {"a": 2, "b": 3}}},
            {"function": {"name": "transfer", "arguments": {"amount": 500}}},
            {"function": {"name": "add", "arguments": {"a": "2", "c": 1}}},
            {"function": {"name": "delete_everything", "arguments": {}}},
            {"function": {"name": "explode", "arguments": {}}},
        ],
    },
    "done": True,
    "done_reason": "stop",
    "total_duration": 1_000_000,
}


def test_recorded_response_is_the_sdk_wire_format() -> None:
    """The recorded /api/chat response is a ChatResponse whose message holds the tool calls."""
    response = ChatResponse.model_validate(RECORDED_RESPONSE)
    assert response.message.tool_calls is not None
    assert [call.function.name for call in response.message.tool_calls][:2] == ["add", "transfer"]


def test_parse_a_response_a_message_and_a_list() -> None:
    """A chat response, its message and its tool_calls list give the same calls, without ids."""
    message = RECORDED_RESPONSE["message"]
    for payload in (RECORDED_RESPONSE, message, message["tool_calls"]):
        calls = ollama.parse_tool_calls(payload)
        assert [c.name for c in calls] == ["add", "transfer", "add", "delete_everything", "explode"]
        assert all(c.id is None for c in calls)
        assert json.loads(calls[0].request.arguments) == {"a": 2, "b": 3}


def test_parse_an_sdk_message_dump() -> None:
    """An SDK Message, dumped, parses like the wire dict."""
    dumped = Message.model_validate(RECORDED_RESPONSE["message"]).model_dump(exclude_none=True)
    assert [c.name for c in ollama.parse_tool_calls(dumped)][:1] == ["add"]


def test_message_without_tool_calls_gives_none() -> None:
    """A plain answer has no calls."""
    assert ollama.parse_tool_calls({"role": "assistant", "content": "Hi!"}) == []
    assert ollama.parse_tool_calls({"role": "assistant", "content": "", "tool_calls": None}) == []


def test_extra_keys_of_newer_servers_are_ignored() -> None:
    """Newer servers add an index beside the function: it changes nothing."""
    [call] = ollama.parse_tool_calls([{"function": {"index": 0, "name": "add", "arguments": {"a": 1, "b": 2}}}])
    assert (call.id, call.name, json.loads(call.request.arguments)) == (None, "add", {"a": 1, "b": 2})


@pytest.mark.parametrize(
    "payload",
    [
        [{"function": {"name": "add", "arguments": '{"a": 1}'}}],
        [{"function": {"name": "add"}}],
        [{"function": {"name": "add", "arguments": None}}],
        [{"function": {"arguments": {}}}],
        [{"function": {"name": "", "arguments": {}}}],
        [{"name": "add", "arguments": {}}],
        [{"function": "add"}],
        ["add"],
        [{"function": {"name": "add", "arguments": {"a": float("inf")}}}],
        {"role": "assistant", "tool_calls": {"function": {"name": "add", "arguments": {}}}},
        {"role": "assistant", "tool_calls": "add"},
        "add",
        7,
    ],
)
def test_malformed_tool_calls_raise(payload: Any) -> None:
    """Anything but Ollama's tool-call format raises ProviderError."""
    with pytest.raises(ProviderError):
        ollama.parse_tool_calls(payload)


def test_only_ollama_exports_are_accepted() -> None:
    """An export made for another provider is refused."""
    with pytest.raises(ProviderError, match=r"scopetool\.providers\.ollama"):
        ollama.parse_tool_calls([], mcp.export_tools(CORPUS[:1]))


# -- results and the full round trip ------------------------------------------------------------


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


def assert_sdk_message(message: dict[str, Any]) -> None:
    """The message is an Ollama Message, to the key."""
    assert Message.model_validate(message).model_dump(exclude_none=True) == message
    assert set(message) == {"role", "tool_name", "content"}


async def test_round_trip_of_a_recorded_response() -> None:
    """Recorded calls -> parse -> resolve -> prepare -> call -> tool messages the SDK accepts."""
    registry = Registry(add, transfer, explode)
    export = ollama.export_tools(registry)
    calls = ollama.parse_tool_calls(RECORDED_RESPONSE, export)
    outcomes = [await run(registry, call) for call in calls]
    assert isinstance(outcomes[0], Result)
    assert isinstance(outcomes[2], InvalidInvocationError)
    assert isinstance(outcomes[3], UnknownToolError)
    messages = [ollama.result_message(call, outcome) for call, outcome in zip(calls, outcomes, strict=True)]
    for message in messages:
        assert_sdk_message(message)
    assert [m["tool_name"] for m in messages] == ["add", "transfer", "add", "delete_everything", "explode"]
    texts = [m["content"] for m in messages]
    assert texts[0] == "5"
    assert texts[1] == "transfers above 100 need approval"
    assert texts[2].startswith("invalid arguments for tool 'add'")
    assert "$.b" in texts[2] and "$.c" in texts[2]
    assert '"2"' not in texts[2]  # rejected values are never echoed
    assert texts[3] == 'error: tool "delete_everything" is not available'
    assert texts[4] == 'error: tool "explode" failed'
    assert SECRET not in json.dumps(messages)


def test_media_are_named_in_the_text() -> None:
    """Ollama tool messages are text: a media block is named, never dropped silently."""
    output = Output(content=(TextBlock("see "), MediaBlock(mime_type="image/png", data=b"\x89PNG")))
    [call] = ollama.parse_tool_calls([{"function": {"name": "s", "arguments": {}}}])
    message = ollama.result_message(call, Result(output))
    assert message["content"] == "see [image/png media]"
    assert_sdk_message(message)


def test_module_example_runs() -> None:
    """The module docstring's example prints what it says."""
    assert ollama.__doc__ is not None
    [block] = re.findall(r"```python\n(.*?)```", ollama.__doc__, re.S)
    code = "\n".join(line[4:] for line in block.splitlines())
    printed: list[str] = []
    exec(compile(code, "ollama-example", "exec"), {"print": lambda value: printed.append(str(value))})
    assert printed == [m.strip() for m in re.findall(r"#> (.*)", code)]
