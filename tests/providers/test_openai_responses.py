"""Tests for the OpenAI Responses API adapter: flat function tools, function_call items and their outputs."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import re
import textwrap
from typing import Any

import pytest
import typing_extensions
from corpus import CORPUS
from openai.types.responses import FunctionTool, FunctionToolParam, Response, ResponseFunctionToolCallParam
from openai.types.responses.response_input_item_param import FunctionCallOutput
from sdk_types import check_typed_dict
from test_openai_chat import strict_problems

from scopetool import (
    Definition,
    Failure,
    FailureKind,
    MediaBlock,
    Output,
    Registry,
    Request,
    Result,
    TextBlock,
    tool,
)
from scopetool.providers import ProviderError, ToolCall, openai_chat, openai_responses, run_call

SECRET = "s3cr3t-api-key-0xC0FFEE"


def the_tool(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The exported tool called `name`."""
    return next(entry for entry in tools if entry["name"] == name)


# -- export ----------------------------------------------------------------------------------------


def test_sdk_declares_output_schema() -> None:
    """The installed SDK's FunctionToolParam has output_schema, so the export may send it."""
    hints = typing_extensions.get_type_hints(FunctionToolParam, include_extras=True)
    assert "output_schema" in hints


@pytest.mark.parametrize("strict", [True, False])
def test_corpus_exports_validate_against_the_sdk_types(strict: bool) -> None:
    """Every corpus export is a FunctionToolParam (exact keys) and a FunctionTool, with strict always sent."""
    export = openai_responses.export_tools(CORPUS, strict=strict)
    assert len(export.tools) == len(CORPUS)
    for entry in export.tools:
        check_typed_dict(entry, FunctionToolParam)
        FunctionTool.model_validate(entry)
        assert "function" not in entry
        assert isinstance(entry["strict"], bool)
        assert entry["strict"] is False or strict


def test_corpus_schemas_are_those_of_chat_completions() -> None:
    """Responses shows each tool the schema, strictness and report Chat Completions does (same subset)."""
    responses = openai_responses.export_tools(CORPUS)
    chat = openai_chat.export_tools(CORPUS)
    for flat, wrapped in zip(responses.tools, chat.tools, strict=True):
        assert flat["name"] == wrapped["function"]["name"]
        assert flat["parameters"] == wrapped["function"]["parameters"]
        assert flat["strict"] == wrapped["function"]["strict"]
    assert responses.report.provider == "openai-responses"
    assert responses.report.tools == chat.report.tools


def test_corpus_strict_schemas_meet_the_strict_subset() -> None:
    """Every schema sent with strict true meets OpenAI's strict rules; the four others fall back."""
    export = openai_responses.export_tools(CORPUS)
    fallbacks = {entry["name"] for entry in export.tools if not entry["strict"]}
    assert fallbacks == {"unique", "mixed_tuple", "counts", "anything"}
    for entry in export.tools:
        if entry["strict"]:
            assert strict_problems(entry["parameters"]) == [], entry["name"]
        else:
            assert entry["parameters"] == the_definition(entry["name"]).input_schema


def the_definition(name: str) -> Definition:
    """The definition of a corpus tool."""
    return next(t.definition() for t in CORPUS if t.name == name)


def test_output_schema_is_sent_when_declared() -> None:
    """A tool with an output schema sends it as output_schema; a text tool sends none."""
    export = openai_responses.export_tools(CORPUS)
    for entry in export.tools:
        declared = the_definition(entry["name"]).output_schema
        if declared is None:
            assert "output_schema" not in entry
        else:
            assert entry["output_schema"] == declared
    assert the_tool(export.tools, "add")["output_schema"] == {"type": "integer"}
    assert "output_schema" not in the_tool(export.tools, "ping")


def test_output_schema_can_be_left_out() -> None:
    """output_schema=False sends no output schema, for deployments that do not know the field."""
    export = openai_responses.export_tools(CORPUS, output_schema=False)
    assert all("output_schema" not in entry for entry in export.tools)


def test_boolean_output_schemas_become_objects() -> None:
    """The SDK takes an object: true becomes {} and false becomes {"not": {}}, the same schemas."""
    schema = {"type": "object"}
    anything = Definition(name="anything", input_schema=schema, output_schema=True)
    nothing = Definition(name="nothing", input_schema=schema, output_schema=False)
    export = openai_responses.export_tools([anything, nothing])
    assert the_tool(export.tools, "anything")["output_schema"] == {}
    assert the_tool(export.tools, "nothing")["output_schema"] == {"not": {}}
    for entry in export.tools:
        check_typed_dict(entry, FunctionToolParam)


def test_strict_false_sends_the_contract_schema() -> None:
    """Without strict mode each schema is the contract's own and strict false is explicit."""
    export = openai_responses.export_tools(CORPUS, strict=False)
    for entry in export.tools:
        assert entry["parameters"] == the_definition(entry["name"]).input_schema
        assert entry["strict"] is False
    assert all(r.lossless and r.strict is False for r in export.report.tools)


def test_fallback_reasons_are_reported() -> None:
    """A schema that cannot be strict is sent with strict false and the report says why."""
    schema = {
        "type": "object",
        "properties": {"d": {"type": "object", "additionalProperties": {"type": "integer"}}},
        "additionalProperties": False,
    }
    export = openai_responses.export_tools(Definition(name="dicts", input_schema=schema))
    assert export.tools[0]["strict"] is False
    assert export.tools[0]["parameters"] == schema
    assert export.report.for_tool("dicts").not_strict == (
        "$.d: an open object (dict) cannot be closed without changing its meaning",
    )


def test_name_rule_and_description_limit() -> None:
    """A name breaking the rule is refused by name; a description over 1024 characters is noted."""
    forged = Definition(name="ok", input_schema={"type": "object"})
    forged._name = "has space"  # a definition from elsewhere may hold any name
    with pytest.raises(ProviderError, match=r"'has space' cannot be exported to openai-responses"):
        openai_responses.export_tools(forged)
    long = Definition(name="long", description="x" * 1500, input_schema={"type": "object"})
    export = openai_responses.export_tools(long)
    assert export.tools[0]["description"] == "x" * 1500
    assert export.report.for_tool("long").notes == (
        "description has 1500 characters; this provider accepts at most 1024",
    )
    assert re.fullmatch(openai_responses.NAME_PATTERN, "a" * 65) is None


def test_module_example_runs() -> None:
    """The module docstring's example prints what it says."""
    doc = openai_responses.__doc__ or ""
    code = textwrap.dedent(re.search(r"```python\n(.*?)```", doc, re.S).group(1))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "example", "exec"), {})
    assert printed.getvalue().splitlines() == re.findall(r"#> (.*)", code)


# -- tool calls ------------------------------------------------------------------------------------


@tool
def search(query: str, limit: int = 3) -> list[str]:
    """Search the shop."""
    return [f"{query} {i}" for i in range(limit)]


@tool
def transfer(amount: int) -> str:
    """Move money."""
    raise Failure(kind=FailureKind.REJECTED, output="transfers above 100 need approval")


@tool
def explode() -> str:
    """Fail with a private error."""
    raise RuntimeError(f"upstream refused key {SECRET}")


def function_call(call_id: str, name: str, arguments: str, **extra: Any) -> dict[str, Any]:
    """A function_call output item as the API returns it."""
    return {
        "type": "function_call",
        "id": f"fc_{call_id[5:]}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
        **extra,
    }


RECORDED_RESPONSE: dict[str, Any] = {
    "id": "resp_68af4030592c81938ec0a5fbab4a3e9f",
    "object": "response",
    "created_at": 1756315696,
    "status": "completed",
    "model": "gpt-5-2025-08-07",
    "output": [
        {"type": "reasoning", "id": "rs_68af403ac9b08193", "summary": []},
        {
            "type": "message",
            "id": "msg_68af403b1a3c8193",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        },
        function_call("call_N5b1", "search", '{"query":"tea","limit":null}'),
        function_call("call_N5b2", "transfer", '{"amount":500}'),
        function_call("call_N5b3", "search", '{"query":["tea"]}'),
        function_call("call_N5b4", "refund", '{"order":"A1"}'),
        function_call("call_N5b5", "explode", "{}"),
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "metadata": {},
    "temperature": 1.0,
    "top_p": 1.0,
}


def test_recorded_response_is_the_sdk_wire_format() -> None:
    """The recorded payload is a valid Response, and each call item a ResponseFunctionToolCallParam."""
    response = Response.model_validate(RECORDED_RESPONSE)
    assert [item.type for item in response.output].count("function_call") == 5
    for item in RECORDED_RESPONSE["output"][2:]:
        check_typed_dict(item, ResponseFunctionToolCallParam)


def test_parse_a_whole_response() -> None:
    """Function calls are read from a response's output; reasoning and messages are skipped."""
    calls = openai_responses.parse_tool_calls(RECORDED_RESPONSE)
    assert [(c.id, c.name) for c in calls] == [
        ("call_N5b1", "search"),
        ("call_N5b2", "transfer"),
        ("call_N5b3", "search"),
        ("call_N5b4", "refund"),
        ("call_N5b5", "explode"),
    ]
    assert calls[1].request == Request(name="transfer", arguments='{"amount":500}')


def test_parse_a_list_of_items() -> None:
    """A list of items (such as the input list being built) works too; the id is the call_id, not fc_."""
    calls = openai_responses.parse_tool_calls(RECORDED_RESPONSE["output"][3:5])
    assert [c.id for c in calls] == ["call_N5b2", "call_N5b3"]
    assert openai_responses.parse_tool_calls([]) == []
    assert openai_responses.parse_tool_calls({"output": []}) == []


def test_parsed_object_arguments_are_encoded() -> None:
    """Arguments given as an object become JSON text."""
    [call] = openai_responses.parse_tool_calls(
        [{"type": "function_call", "call_id": "c", "name": "t", "arguments": {"a": 1}}]
    )
    assert json.loads(call.request.arguments) == {"a": 1}


def test_namespaced_calls_keep_their_namespace() -> None:
    """A call inside a namespace never dispatches to a top-level tool of the same name."""
    [call] = openai_responses.parse_tool_calls([function_call("call_1", "search", "{}", namespace="crm")])
    assert call.name == "crm.search"
    assert Registry(search).resolve(call.name) is None


@pytest.mark.parametrize(
    "payload",
    [
        {"id": "resp_1"},
        {"output": "function_call"},
        ["not an item"],
        [{"call_id": "c", "name": "t", "arguments": "{}"}],
        [{"type": "function_call", "name": "t", "arguments": "{}"}],
        [{"type": "function_call", "call_id": "c", "arguments": "{}"}],
        [{"type": "function_call", "call_id": "c", "name": "", "arguments": "{}"}],
        [{"type": "function_call", "call_id": 7, "name": "t", "arguments": "{}"}],
        [{"type": "function_call", "call_id": "c", "name": "t", "arguments": 3}],
        [{"type": "function_call", "call_id": "c", "name": "t", "arguments": "{}", "namespace": 1}],
        "function_call",
        42,
    ],
)
def test_malformed_payloads_raise(payload: Any) -> None:
    """Anything that is not a response or items with well-formed function calls is a ProviderError."""
    with pytest.raises(ProviderError):
        openai_responses.parse_tool_calls(payload)


def test_export_of_another_provider_is_refused() -> None:
    """Reading calls with an export made for Chat Completions is a mistake, reported as such."""
    with pytest.raises(ProviderError, match="openai-chat"):
        openai_responses.parse_tool_calls(RECORDED_RESPONSE, openai_chat.export_tools([search]))


def test_null_for_an_optional_field_means_its_default() -> None:
    """With the export, a null the strict schema allowed for an optional field is read as omitted."""
    export = openai_responses.export_tools([search])
    assert export.report.for_tool("search").null_defaults == ("$.limit",)
    calls = openai_responses.parse_tool_calls(RECORDED_RESPONSE, export)
    assert json.loads(calls[0].request.arguments) == {"query": "tea"}
    assert openai_responses.parse_tool_calls(RECORDED_RESPONSE)[0].request.arguments == '{"query":"tea","limit":null}'


# -- results and the round trip ----------------------------------------------------------------------


async def run(registry: Registry, call: ToolCall) -> Result | BaseException:
    """Resolve, admit and run one call, as a driver does (the library's `run_call`)."""
    return await run_call(registry, call)


async def test_round_trip_of_a_recorded_response() -> None:
    """Recorded calls -> parse -> resolve -> prepare -> call -> function_call_output items the SDK accepts."""
    registry = Registry(search, transfer, explode)
    export = openai_responses.export_tools(registry)
    calls = openai_responses.parse_tool_calls(RECORDED_RESPONSE, export)
    items = [openai_responses.result_message(call, await run(registry, call)) for call in calls]
    for item in items:
        check_typed_dict(item, FunctionCallOutput)
        assert item["type"] == "function_call_output"
    assert [item["call_id"] for item in items] == [c["call_id"] for c in RECORDED_RESPONSE["output"][2:]]
    success, failure, rejection, unknown, secret = (item["output"] for item in items)
    assert json.loads(success) == ["tea 0", "tea 1", "tea 2"]
    assert failure == "transfers above 100 need approval"
    assert rejection.startswith("invalid arguments for tool 'search'") and "$.query" in rejection
    assert unknown == 'error: tool "refund" is not available'
    assert secret == 'error: tool "explode" failed'
    assert all(SECRET not in json.dumps(item) for item in items)


def answer(output: Output) -> dict[str, Any]:
    """The function_call_output item for a result with `output`, checked against the SDK type."""
    item = openai_responses.result_message(ToolCall(id="call_7", request=Request(name="t")), Result(output=output))
    check_typed_dict(item, FunctionCallOutput)
    return item


def test_text_and_details_go_as_a_string() -> None:
    """Text-only output is one string; output with only details is their JSON text."""
    assert answer(Output(content=(TextBlock("a"), TextBlock("b"))))["output"] == "ab"
    assert answer(Output.from_json('{"n": 1}'))["output"] == '{"n": 1}'
    assert answer(Output())["output"] == ""


PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("block", "part"),
    [
        (
            MediaBlock(mime_type="image/png", data=PNG),
            {"type": "input_image", "image_url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
        ),
        (
            MediaBlock(mime_type="image/jpeg", uri="https://example.com/a.jpg"),
            {"type": "input_image", "image_url": "https://example.com/a.jpg"},
        ),
        (MediaBlock(mime_type="image/png", reference="file-abc123"), {"type": "input_image", "file_id": "file-abc123"}),
        (
            MediaBlock(mime_type="application/pdf", data=b"%PDF-1.7"),
            {
                "type": "input_file",
                "filename": "attachment.pdf",
                "file_data": "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.7").decode(),
            },
        ),
        (
            MediaBlock(mime_type="application/pdf", uri="https://example.com/a.pdf"),
            {"type": "input_file", "file_url": "https://example.com/a.pdf"},
        ),
        (MediaBlock(mime_type="application/pdf", reference="file-9"), {"type": "input_file", "file_id": "file-9"}),
        (MediaBlock(mime_type="audio/wav", data=b"RIFF"), {"type": "input_text", "text": "[audio/wav media]"}),
    ],
)
def test_media_go_as_content_items(block: MediaBlock, part: dict[str, Any]) -> None:
    """Images and PDFs become input_image and input_file items; other media are named, never dropped."""
    item = answer(Output(content=(TextBlock("see:"), block)))
    assert item["output"] == [{"type": "input_text", "text": "see:"}, part]


def test_failure_with_media_keeps_its_media() -> None:
    """A Failure's public output is shown as it is, media included."""
    failure = Failure(
        kind=FailureKind.REJECTED, output=Output(content=(TextBlock("denied"), MediaBlock("image/png", data=PNG)))
    )
    item = openai_responses.result_message(ToolCall(id="c", request=Request(name="t")), failure)
    check_typed_dict(item, FunctionCallOutput)
    assert [part["type"] for part in item["output"]] == ["input_text", "input_image"]


def test_result_needs_a_call_id() -> None:
    """A call without a call_id cannot be answered."""
    with pytest.raises(ProviderError, match="call_id"):
        openai_responses.result_message(ToolCall(id=None, request=Request(name="t")), Result())
