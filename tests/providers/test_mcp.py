"""Tests for the MCP adapter: Tool objects, annotations, output schemas, tools/call requests and CallToolResults."""

from __future__ import annotations

import base64
import copy
import json
import re
from typing import Any

import jsonschema
import mcp.types as mcp_types
import pytest
from corpus import CORPUS, Address, Node
from mcp_types import _v2025_11_25 as mcp_2025_11_25
from mcp_types.jsonrpc import JSONRPCRequest

from scopetool import (
    Definition,
    Effect,
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
from scopetool.providers import ProviderError, ToolCall, UnknownToolError, mcp, ollama, run_call
from scopetool.providers._common import Export

SECRET = "s3cr3t-db-password-0xDEADBEEF"
WRAPPED = (
    'outputSchema: type converted (the root is not an object: wrapped as {"result": <schema>} for clients up to '
    '2025-11-25; structuredContent is {"result": value})'
)


def wire(model: Any, value: dict[str, Any]) -> dict[str, Any]:
    """`value` validated by an SDK model and dumped back in wire form."""
    dumped: dict[str, Any] = model.model_validate(value).model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


def assert_sdk_tool(entry: dict[str, Any]) -> None:
    """The entry is an MCP Tool, to the key, and one a 2025-11-25 client accepts (object output root)."""
    assert wire(mcp_types.Tool, entry) == entry
    mcp_2025_11_25.Tool.model_validate(entry)


def assert_sdk_result(message: dict[str, Any]) -> None:
    """The message is a CallToolResult, to the key, and one a 2025-11-25 client accepts."""
    assert wire(mcp_types.CallToolResult, message) == message
    mcp_2025_11_25.CallToolResult.model_validate(message)


def the_tool(export: Export, name: str) -> dict[str, Any]:
    """The exported Tool object of one tool."""
    for entry in export.tools:
        if entry["name"] == name:
            return entry
    raise KeyError(name)


def definition(output_schema: Any = None, effect: Effect | None = None, name: str = "t") -> Definition:
    """A hand-made definition with one string argument."""
    return Definition(
        name=name,
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        output_schema=output_schema,
        effect=effect,
    )


# -- the corpus ---------------------------------------------------------------------------------

WRAPPED_TOOLS = {
    "add", "scale", "flag", "level", "mode", "bounded", "sized", "unique", "pair", "counts", "addresses",
    "documented", "matrix",
}  # fmt: skip
"""The corpus tools whose output schema is not an object (their report holds exactly the wrap)."""


def test_corpus_exports_are_sdk_tools() -> None:
    """Every corpus export is an MCP Tool (exact keys) and valid for a 2025-11-25 client."""
    export = mcp.export_tools(CORPUS)
    assert len(export.tools) == len(CORPUS) >= 30
    for entry in export.tools:
        assert_sdk_tool(entry)
        assert re.fullmatch(mcp.NAME_PATTERN, entry["name"])
        assert set(entry) <= {"name", "description", "inputSchema", "outputSchema", "annotations"}


def test_corpus_input_schemas_are_sent_unchanged_unless_shaped() -> None:
    """Every input schema is the contract's own, byte for byte, unless the report names its shaping for clients."""
    export = mcp.export_tools(CORPUS)
    for func in CORPUS:
        d = func.definition()
        entry = the_tool(export, d.name)
        shaped = [c for c in export.report.for_tool(d.name).changes if c.path == "inputSchema"]
        assert (entry["inputSchema"] == d.input_schema) == (not shaped), d.name
        assert all(c.keyword in ("$ref", "anyOf") for c in shaped)
        kept = [note for note in export.report.for_tool(d.name).notes if note.startswith("inputSchema: $ref kept")]
        assert ('"$ref"' in json.dumps(entry["inputSchema"])) == bool(kept), d.name
        assert entry["inputSchema"]["type"] == "object"
        assert entry.get("description", "") == d.description


def test_corpus_report_is_pinned() -> None:
    """Only non-object output schemas are changed (wrapped); nothing else is reported."""
    export = mcp.export_tools(CORPUS)
    for report in export.report.tools:
        assert report.strict is None
        assert report.not_strict == report.null_defaults == ()
        assert all("$ref kept with $defs" in note for note in report.notes)
        expected = [WRAPPED] if report.name in WRAPPED_TOOLS else []
        unshaped = [change for change in report.changes if change.keyword not in ("$ref", "anyOf")]
        assert [str(change) for change in unshaped] == expected, report.name
    assert export.report.for_tool("ping").lossless
    assert not export.report.for_tool("add").lossless


def test_corpus_output_schemas_have_object_roots() -> None:
    """Every output schema has an object root; wrapped ones hold the contract's schema under result."""
    export = mcp.export_tools(CORPUS)
    for func in CORPUS:
        d = func.definition()
        entry = the_tool(export, d.name)
        if d.output_schema is None:
            assert "outputSchema" not in entry
            continue
        schema = entry["outputSchema"]
        assert schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(schema)
        if d.name in WRAPPED_TOOLS:
            assert schema["required"] == ["result"]
            assert schema["properties"]["result"] == d.output_schema
        else:
            assert schema == d.output_schema


def test_list_tools_result_is_the_sdk_result() -> None:
    """The tools/list result holds the export and the 2026-07-28 caching fields, as the SDK dumps them."""
    export = mcp.export_tools(CORPUS)
    result = mcp.list_tools_result(export)
    assert wire(mcp_types.ListToolsResult, result) == result
    assert result["tools"] == export.tools
    assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == ("complete", 0, "private")
    mcp_2025_11_25.ListToolsResult.model_validate(result)
    paged = mcp.list_tools_result(export, next_cursor="page-2", ttl_ms=60_000, cache_scope="public")
    assert wire(mcp_types.ListToolsResult, paged) == paged
    assert (paged["nextCursor"], paged["ttlMs"], paged["cacheScope"]) == ("page-2", 60_000, "public")


@pytest.mark.parametrize(
    "arguments",
    [{"ttl_ms": -1}, {"ttl_ms": True}, {"ttl_ms": 1.5}, {"cache_scope": "shared"}, {"next_cursor": 3}],
)
def test_list_tools_result_refuses_bad_directives(arguments: dict[str, Any]) -> None:
    """A negative or non-integer ttl, an unknown cache scope or a non-string cursor is refused."""
    with pytest.raises(ProviderError):
        mcp.list_tools_result(mcp.export_tools(CORPUS[:1]), **arguments)


def test_only_mcp_exports_are_accepted() -> None:
    """An export made for another provider is refused where an MCP one is needed."""
    other = ollama.export_tools(CORPUS[:1])
    with pytest.raises(ProviderError, match=r"scopetool\.providers\.mcp"):
        mcp.list_tools_result(other)
    with pytest.raises(ProviderError, match=r"scopetool\.providers\.mcp"):
        mcp.parse_tool_calls({"name": "ping"}, other)


# -- effects as annotations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("effect", "hints"),
    [
        (Effect.SAFE, {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True}),
        (Effect.IDEMPOTENT, {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True}),
    ],
)
def test_effects_become_annotations(effect: Effect, hints: dict[str, bool]) -> None:
    """SAFE is read-only (so not destructive, and idempotent); IDEMPOTENT mutates but repeats harmlessly."""
    entry = mcp.export_tools(definition(effect=effect)).tools[0]
    assert entry["annotations"] == hints
    assert_sdk_tool(entry)
    annotations = mcp_types.ToolAnnotations.model_validate(entry["annotations"])
    assert annotations.idempotent_hint is True
    assert annotations.read_only_hint is (effect is Effect.SAFE)
    assert annotations.open_world_hint is None


def test_no_effect_means_no_annotations() -> None:
    """Without an effect no hint is sent: MCP's defaults (not read-only, destructive) are the conservative ones."""
    entry = mcp.export_tools(definition()).tools[0]
    assert "annotations" not in entry
    assert mcp_types.Tool.model_validate(entry).annotations is None


def test_corpus_effects() -> None:
    """The corpus's one SAFE tool is annotated read-only; the others carry no annotations."""
    export = mcp.export_tools(CORPUS)
    annotated = {entry["name"] for entry in export.tools if "annotations" in entry}
    assert annotated == {"add"}
    assert the_tool(export, "add")["annotations"]["readOnlyHint"] is True


# -- output schemas -----------------------------------------------------------------------------


def test_object_output_schema_is_sent_as_is() -> None:
    """A model's object schema is the outputSchema unchanged, and nothing is reported."""

    @tool
    def find(q: str) -> Address:
        """Find an address."""
        return Address(street=q, city="x")

    export = mcp.export_tools([find])
    schema = copy.deepcopy(find.definition().output_schema)
    assert isinstance(schema, dict)
    schema["properties"]["postcode"] = {"default": None, "type": ["string", "null"]}  # shaped for clients
    assert the_tool(export, "find")["outputSchema"] == schema
    assert [change.keyword for change in export.report.for_tool("find").changes] == ["anyOf"]


def test_wrapped_schema_lifts_defs_and_still_validates() -> None:
    """`-> list[Address]` is wrapped; its $defs move to the wrapper, so its refs still resolve."""

    @tool
    def every(q: str) -> list[Address]:
        """List addresses."""
        return []

    schema = the_tool(mcp.export_tools([every]), "every")["outputSchema"]
    assert set(schema) == {"type", "properties", "required"}  # and then inlined, for clients that drop $defs
    assert "$defs" not in schema["properties"]["result"]
    assert mcp.export_tools([every], object_output=True).report.for_tool("every").changes[1].action == "inlined"
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"result": [{"street": "a", "city": "b"}]})
    assert not validator.is_valid({"result": [{"street": "a"}]})
    assert not validator.is_valid([{"street": "a", "city": "b"}])
    mcp_2025_11_25.Tool.model_validate(the_tool(mcp.export_tools([every]), "every"))


def test_wrapped_recursive_schema_keeps_its_recursion() -> None:
    """A recursive non-object schema (`list[Node]`) still validates trees after wrapping."""

    @tool
    def forest(q: str) -> list[Node]:
        """List trees."""
        return []

    schema = the_tool(mcp.export_tools([forest]), "forest")["outputSchema"]
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"result": [{"label": "a", "children": [{"label": "b"}]}]})
    assert not validator.is_valid({"result": [{"label": "a", "children": [{"children": []}]}]})


def test_wrapped_root_references_are_rebased() -> None:
    """A `#` reference to the old root points at `#/properties/result` after wrapping."""
    nested = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array", "items": {"$ref": "#"}}
    schema = mcp.export_tools(definition(nested)).tools[0]["outputSchema"]
    assert schema["properties"]["result"]["items"] == {"$ref": "#/properties/result"}
    assert schema["$schema"] == nested["$schema"]
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"result": [[], [[]]]})
    assert not validator.is_valid({"result": [[1]]})


def test_wrapped_schema_with_its_own_id_is_left_whole() -> None:
    """A schema with its own $id is its own resource: it is wrapped untouched."""
    inner = {"$id": "https://example.com/list", "type": "array", "items": {"$ref": "#/$defs/x"}, "$defs": {"x": {}}}
    schema = mcp.export_tools(definition(inner)).tools[0]["outputSchema"]
    assert schema == {"type": "object", "properties": {"result": inner}, "required": ["result"]}


@pytest.mark.parametrize("boolean", [True, False])
def test_boolean_output_schema_is_wrapped(boolean: bool) -> None:
    """A boolean output schema is wrapped like any non-object one."""
    entry = mcp.export_tools(definition(boolean)).tools[0]
    assert entry["outputSchema"] == {"type": "object", "properties": {"result": boolean}, "required": ["result"]}
    assert_sdk_tool(entry)


def test_object_output_false_sends_schemas_as_they_are() -> None:
    """For 2026-07-28 clients a non-object schema is sent unchanged (a boolean one in object form)."""
    export = mcp.export_tools([definition({"type": "integer"}), definition(True, name="u")], object_output=False)
    assert the_tool(export, "t")["outputSchema"] == {"type": "integer"}
    assert export.report.for_tool("t").changes == ()
    assert the_tool(export, "u")["outputSchema"] == {}
    assert [c.keyword for c in export.report.for_tool("u").changes] == ["true"]
    for entry in export.tools:
        assert wire(mcp_types.Tool, entry) == entry
    with pytest.raises(Exception, match="type"):
        mcp_2025_11_25.Tool.model_validate(the_tool(export, "t"))  # why wrapping is the default


# -- names and descriptions ---------------------------------------------------------------------


def test_name_rule() -> None:
    """MCP names are 1-128 of letters, digits, `_`, `-` and `.`: no spaces, commas or other characters."""
    for good in ("a", "get.user", "a-b_c", "x" * 128):
        assert re.fullmatch(mcp.NAME_PATTERN, good)
    for bad in ("", "a b", "a,b", "a/b", "x" * 129, "café"):
        assert not re.fullmatch(mcp.NAME_PATTERN, bad)


def test_long_description_is_sent_without_a_note() -> None:
    """MCP has no description limit: a long description is sent whole and not reported."""
    long = Definition(name="t", input_schema={"type": "object"}, description="d" * 5000)
    export = mcp.export_tools(long)
    assert export.tools[0]["description"] == "d" * 5000
    assert export.report.for_tool("t").lossless


def test_empty_description_is_left_out_and_duplicates_refused() -> None:
    """An empty description is not sent; two tools with one name cannot be exported together."""
    assert "description" not in mcp.export_tools(definition()).tools[0]
    with pytest.raises(ProviderError, match="unique"):
        mcp.export_tools([definition(), definition()])


def test_registry_export_is_sorted() -> None:
    """A registry exports in name order, and `tools` is a fresh copy each time."""
    export = mcp.export_tools(Registry(*CORPUS[:5]))
    assert [entry["name"] for entry in export.tools] == sorted(f.definition().name for f in CORPUS[:5])
    export.tools[0]["name"] = "changed"
    assert export.tools[0]["name"] != "changed"


# -- tools/call requests ------------------------------------------------------------------------

RECORDED_REQUEST: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {
        "name": "add",
        "arguments": {"a": 2, "b": 3},
        "_meta": {"progressToken": "tok-1", "io.modelcontextprotocol/protocolVersion": "2026-07-28"},
    },
}


def test_recorded_request_is_the_sdk_wire_format() -> None:
    """The recorded request is a JSON-RPC request whose params are CallToolRequestParams."""
    request = JSONRPCRequest.model_validate(RECORDED_REQUEST)
    params = mcp_types.CallToolRequestParams.model_validate(request.params)
    assert params.name == "add"
    assert params.arguments == {"a": 2, "b": 3}


def test_parse_a_whole_request() -> None:
    """A whole request gives its id (an integer as its text) and its arguments as JSON."""
    [call] = mcp.parse_tool_calls(RECORDED_REQUEST)
    assert call.id == "7"
    assert call.name == "add"
    assert json.loads(call.request.arguments) == {"a": 2, "b": 3}
    [named] = mcp.parse_tool_calls({**RECORDED_REQUEST, "id": "req-9"})
    assert named.id == "req-9"


def test_parse_params_alone() -> None:
    """Params carry no id; absent or null arguments mean no arguments."""
    [call] = mcp.parse_tool_calls({"name": "add", "arguments": {"a": 1, "b": 1}})
    assert call.id is None
    assert json.loads(call.request.arguments) == {"a": 1, "b": 1}
    assert mcp.parse_tool_calls({"name": "ping"})[0].request.arguments == ""
    assert mcp.parse_tool_calls({"name": "ping", "arguments": None})[0].request.arguments == ""


def test_parse_an_sdk_request_without_envelope() -> None:
    """The SDK's CallToolRequest dump (method and params, no jsonrpc or id) gives a call without id."""
    request = mcp_types.CallToolRequest(params=mcp_types.CallToolRequestParams(name="add", arguments={"a": 1, "b": 2}))
    [call] = mcp.parse_tool_calls(request.model_dump(by_alias=True, exclude_none=True, mode="json"))
    assert (call.id, call.name) == (None, "add")
    assert json.loads(call.request.arguments) == {"a": 1, "b": 2}


def test_parse_a_batch() -> None:
    """A list of requests (a JSON-RPC batch) gives one call per request, in order."""
    calls = mcp.parse_tool_calls([RECORDED_REQUEST, {**RECORDED_REQUEST, "id": 8, "params": {"name": "ping"}}])
    assert [(c.id, c.name) for c in calls] == [("7", "add"), ("8", "ping")]


def test_parsed_arguments_keep_unicode_and_numbers() -> None:
    """Arguments are encoded as UTF-8 JSON with integers exact."""
    [call] = mcp.parse_tool_calls({"name": "t", "arguments": {"q": "thé", "n": 2**70}})
    assert call.request.arguments == '{"q":"thé","n":1180591620717411303424}'


@pytest.mark.parametrize(
    "payload",
    [
        {**RECORDED_REQUEST, "method": "tools/list"},
        {**RECORDED_REQUEST, "jsonrpc": "1.0"},
        {**RECORDED_REQUEST, "id": None},
        {**RECORDED_REQUEST, "id": True},
        {**RECORDED_REQUEST, "id": 1.5},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ["add"]},
        {"arguments": {}},
        {"name": ""},
        {"name": 3},
        {"name": "add", "arguments": '{"a": 1}'},
        {"name": "add", "arguments": [1, 2]},
        {"name": "add", "arguments": {"a": float("nan")}},
        {"name": "add", "arguments": {"a": object()}},
        "tools/call",
        b"{}",
        42,
        [{"name": "add"}, "add"],
    ],
)
def test_malformed_requests_raise(payload: Any) -> None:
    """Anything but a tools/call request, its params, or a list of them raises ProviderError."""
    with pytest.raises(ProviderError):
        mcp.parse_tool_calls(payload)


# -- results ------------------------------------------------------------------------------------


def call_of(name: str) -> ToolCall:
    """A call of `name` parsed from params."""
    return mcp.parse_tool_calls({"name": name})[0]


def test_wrapped_result_gives_structured_content_and_text() -> None:
    """With the export, `-> int` gives structuredContent {"result": 5} and the JSON as text."""
    export = mcp.export_tools(CORPUS)
    message = mcp.result_message(call_of("add"), Result(Output.from_json("5")), export)
    assert message == {
        "content": [{"type": "text", "text": "5"}],
        "structuredContent": {"result": 5},
        "isError": False,
        "resultType": "complete",
    }
    assert_sdk_result(message)
    jsonschema.validate(message["structuredContent"], the_tool(export, "add")["outputSchema"])


def test_object_result_is_structured_content_as_is() -> None:
    """An object output schema gives the details themselves as structuredContent."""

    @tool
    def find(q: str) -> Address:
        """Find an address."""
        return Address(street=q, city="Oslo")

    export = mcp.export_tools([find])
    details = '{"city":"Oslo","postcode":null,"street":"Main 1"}'
    message = mcp.result_message(call_of("find"), Result(Output.from_json(details)), export)
    assert message["structuredContent"] == {"city": "Oslo", "postcode": None, "street": "Main 1"}
    assert message["content"] == [{"type": "text", "text": details}]
    assert_sdk_result(message)
    jsonschema.validate(message["structuredContent"], the_tool(export, "find")["outputSchema"])


def test_without_the_export_details_are_text_only() -> None:
    """Without the export the adapter cannot know the output schema: details go as text only."""
    message = mcp.result_message(call_of("add"), Result(Output.from_json("5")))
    assert message == {"content": [{"type": "text", "text": "5"}], "isError": False, "resultType": "complete"}
    assert_sdk_result(message)


def test_details_without_an_output_schema_are_text_only() -> None:
    """A tool with no output schema sends its details as text, not as structuredContent."""
    export = mcp.export_tools(CORPUS)
    message = mcp.result_message(call_of("greet"), Result(Output.from_json('{"x":1}')), export)
    assert "structuredContent" not in message
    assert message["content"] == [{"type": "text", "text": '{"x":1}'}]


def test_content_stays_the_model_view_beside_structured_content() -> None:
    """With content and details, content is sent as is and the details only as structuredContent."""
    export = mcp.export_tools(CORPUS)
    output = Output(content=(TextBlock("five"),), details=b"5")
    message = mcp.result_message(call_of("add"), Result(output), export)
    assert message["content"] == [{"type": "text", "text": "five"}]
    assert message["structuredContent"] == {"result": 5}
    assert_sdk_result(message)


def test_empty_output_is_empty_content() -> None:
    """An empty output gives an empty content list."""
    message = mcp.result_message(call_of("ping"), Result())
    assert message["content"] == []
    assert_sdk_result(message)


def test_a_result_for_a_tool_outside_the_export_raises() -> None:
    """A success for a tool the export lacks is a driver mistake: structuredContent cannot be decided."""
    with pytest.raises(ProviderError, match="not in this export"):
        mcp.result_message(call_of("nope"), Result(Output.from_json("1")), mcp.export_tools(CORPUS))


def test_media_blocks() -> None:
    """Images and audio go inline as base64; URIs as resource links; other media are named in text."""
    output = Output(
        content=(
            TextBlock("see:"),
            MediaBlock(mime_type="image/png", data=b"\x89PNG"),
            MediaBlock(mime_type="audio/wav; rate=8000", data=b"RIFF"),
            MediaBlock(mime_type="application/pdf", uri="https://example.com/files/report.pdf"),
            MediaBlock(mime_type="image/jpeg", uri="https://example.com/"),
            MediaBlock(mime_type="application/pdf", data=b"%PDF"),
            MediaBlock(mime_type="image/png", reference="file-123"),
        )
    )
    message = mcp.result_message(call_of("t"), Result(output))
    assert message["content"] == [
        {"type": "text", "text": "see:"},
        {"type": "image", "data": base64.b64encode(b"\x89PNG").decode(), "mimeType": "image/png"},
        {"type": "audio", "data": base64.b64encode(b"RIFF").decode(), "mimeType": "audio/wav; rate=8000"},
        {
            "type": "resource_link",
            "uri": "https://example.com/files/report.pdf",
            "name": "report.pdf",
            "mimeType": "application/pdf",
        },
        {
            "type": "resource_link",
            "uri": "https://example.com/",
            "name": "https://example.com/",
            "mimeType": "image/jpeg",
        },
        {"type": "text", "text": "[application/pdf media]"},
        {"type": "text", "text": "[image/png media]"},
    ]
    assert_sdk_result(message)


def test_failure_is_an_error_without_structured_content() -> None:
    """A Failure shows its public output, sets isError, and never sends structuredContent."""
    export = mcp.export_tools(CORPUS)
    failure = Failure(kind=FailureKind.FAILED, output=Output.from_json("0"), cause=ValueError(SECRET))
    message = mcp.result_message(call_of("add"), failure, export)
    assert message == {"content": [{"type": "text", "text": "0"}], "isError": True, "resultType": "complete"}
    assert_sdk_result(message)


def test_other_errors_are_redacted() -> None:
    """An ordinary exception shows only a generic text, whatever its message holds."""
    message = mcp.result_message(call_of("add"), RuntimeError(SECRET), mcp.export_tools(CORPUS))
    assert message["isError"] is True
    assert message["content"] == [{"type": "text", "text": 'error: tool "add" failed'}]
    assert SECRET not in json.dumps(message)


def test_a_result_waiting_for_input_is_not_a_tool_result() -> None:
    """A result that requests input must be answered first: it cannot become a CallToolResult."""
    waiting = Result(input_request=InputRequest(prompt="ok?", response_schema={"type": "boolean"}))
    with pytest.raises(ProviderError, match="requests input"):
        mcp.result_message(call_of("t"), waiting)


# -- the full round trip ------------------------------------------------------------------------


@tool(effect=Effect.SAFE)
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


RECORDED_SESSION: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "transfer", "arguments": {"amount": 500}}},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": "2", "c": 1}}},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "delete_everything", "arguments": {}}},
    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "explode"}},
]


async def run(registry: Registry, call: ToolCall) -> Result | BaseException:
    """Resolve, admit and run one call, as a driver does (the library's `run_call`)."""
    return await run_call(registry, call)


async def test_round_trip_of_a_recorded_session() -> None:
    """Recorded tools/call requests -> parse -> resolve -> prepare -> call -> CallToolResults the SDK accepts."""
    registry = Registry(add, transfer, explode)
    export = mcp.export_tools(registry)
    for request in RECORDED_SESSION:
        JSONRPCRequest.model_validate(request)
    calls = [call for request in RECORDED_SESSION for call in mcp.parse_tool_calls(request, export)]
    assert [c.id for c in calls] == ["1", "2", "3", "4", "5"]
    outcomes = [await run(registry, call) for call in calls]
    assert isinstance(outcomes[2], InvalidInvocationError)
    assert isinstance(outcomes[3], UnknownToolError)
    messages = [mcp.result_message(call, outcome, export) for call, outcome in zip(calls, outcomes, strict=True)]
    for message in messages:
        assert_sdk_result(message)
    texts = [message["content"][0]["text"] for message in messages]
    assert [message["isError"] for message in messages] == [False, True, True, True, True]
    assert messages[0]["structuredContent"] == {"result": 5}
    assert texts[0] == "5"
    assert texts[1] == "transfers above 100 need approval"
    assert texts[2].startswith("invalid arguments for tool 'add'")
    assert "$.b" in texts[2] and "$.c" in texts[2]
    assert '"2"' not in texts[2]  # rejected values are never echoed
    assert texts[3] == 'error: tool "delete_everything" is not available'
    assert texts[4] == 'error: tool "explode" failed'
    assert all("structuredContent" not in message for message in messages[1:])
    assert SECRET not in json.dumps(messages)


def test_module_example_runs() -> None:
    """The module docstring's example prints what it says."""
    assert mcp.__doc__ is not None
    [block] = re.findall(r"```python\n(.*?)```", mcp.__doc__, re.S)
    code = "\n".join(line[4:] for line in block.splitlines())
    printed: list[str] = []
    exec(compile(code, "mcp-example", "exec"), {"print": lambda value: printed.append(str(value))})
    assert printed == [m.strip() for m in re.findall(r"#> (.*)", code)]
