"""Tests for the Mistral adapter: OpenAI-like tools, closed objects in strict mode, tool calls and results."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import textwrap
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from corpus import CORPUS
from mistralai.client.models import AssistantMessage, ChatCompletionResponse, Function, Tool, ToolMessage
from mistralai.extra.utils._pydantic_helper import rec_strict_json_schema

from scopetool import Definition, Failure, FailureKind, MediaBlock, Output, Registry, Request, Result, TextBlock, tool
from scopetool.providers import ProviderError, ToolCall, UnknownToolError, mistral, openai_chat, run_call
from scopetool.providers._mistral_schema import mistral_strict

SECRET = "s3cr3t-token-0xFEEDFACE"


def check_model(value: dict[str, Any], model: Any) -> None:
    """Validate `value` with a Mistral SDK model; the model's dump must give back exactly `value` (no unknown keys)."""
    assert model.model_validate(value).model_dump(by_alias=True, exclude_unset=True) == value


def objects(schema: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object-typed subschema of `schema`, with its path."""
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in schema:
            yield path, schema
        for key, value in schema.items():
            if key in ("properties", "$defs", "definitions"):
                for name, child in value.items():
                    yield from objects(child, f"{path}.{key}.{name}")
            elif key in ("enum", "const", "default", "examples"):
                continue
            else:
                yield from objects(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from objects(item, f"{path}[{index}]")


def export_schema(schema: dict[str, Any], *, strict: bool = True) -> tuple[dict[str, Any], Any]:
    """Export one hand-written schema as tool ``t``: its exported function and its report."""
    export = mistral.export_tools(Definition(name="t", input_schema=schema), strict=strict)
    return export.tools[0]["function"], export.report.for_tool("t")


# -- the corpus ---------------------------------------------------------------------------------


@pytest.mark.parametrize("strict", [True, False])
def test_corpus_exports_validate_against_the_sdk_models(strict: bool) -> None:
    """Every corpus export is a Mistral Tool with a Function, with no key the SDK does not know."""
    export = mistral.export_tools(CORPUS, strict=strict)
    assert len(export.tools) == len(CORPUS)
    for entry in export.tools:
        check_model(entry, Tool)
        check_model(entry["function"], Function)
        assert entry["type"] == "function"
        assert isinstance(entry["function"]["strict"], bool)


def test_corpus_parameters_are_draft_7_schemas() -> None:
    """Mistral checks parameters with Draft7Validator.check_schema: every export passes it."""
    for strict in (True, False):
        for entry in mistral.export_tools(CORPUS, strict=strict).tools:
            jsonschema.Draft7Validator.check_schema(entry["function"]["parameters"])


def test_corpus_strict_exports_close_every_object_and_keep_required() -> None:
    """Strict exports close every object and keep required as written; only the dict tool falls back."""
    export = mistral.export_tools(CORPUS)
    for tool_, entry in zip(CORPUS, export.tools, strict=True):
        function = entry["function"]
        original = tool_.definition().input_schema
        if not function["strict"]:
            assert function["name"] == "counts"
            assert function["parameters"] == original
            continue
        for path, node in objects(function["parameters"]):
            assert node.get("additionalProperties") is False, (function["name"], path)
        required = {path: node.get("required") for path, node in objects(original)}
        assert {path: node.get("required") for path, node in objects(function["parameters"])} == required


def test_corpus_strict_matches_mistral_s_own_helper() -> None:
    """Where it can be strict, the export is exactly what Mistral's SDK helper makes of the schema."""
    for tool_, entry in zip(CORPUS, mistral.export_tools(CORPUS).tools, strict=True):
        if entry["function"]["strict"]:
            expected = rec_strict_json_schema(copy.deepcopy(tool_.definition().input_schema))
            assert entry["function"]["parameters"] == expected, tool_.name


def test_corpus_report_is_pinned() -> None:
    """scopetool's schemas are already closed: every tool is strict and lossless but the open dict."""
    report = mistral.export_tools(CORPUS).report
    assert report.provider == "mistral"
    assert [r.name for r in report.tools if not r.lossless] == ["counts"]
    counts = report.for_tool("counts")
    assert counts.strict is False
    assert counts.not_strict == ("$.by_name: an open object (dict) cannot be closed without changing its meaning",)
    assert all(r.strict and r.null_defaults == () for r in report.tools if r.name != "counts")


def test_corpus_non_strict_export_is_lossless() -> None:
    """With strict=False every schema is the contract's own, with strict false sent explicitly."""
    export = mistral.export_tools(CORPUS, strict=False)
    for tool_, entry in zip(CORPUS, export.tools, strict=True):
        assert entry["function"]["parameters"] == tool_.definition().input_schema
        assert entry["function"]["strict"] is False
    assert all(r.lossless and r.strict is False for r in export.report.tools)


# -- the strict transform -----------------------------------------------------------------------------

OPEN = {
    "type": "object",
    "title": "Order",
    "$defs": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}},
    "properties": {
        "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
        "note": {"anyOf": [{"type": "object", "properties": {"text": {"type": "string"}}}, {"type": "null"}]},
        "meta": {"type": ["object", "null"], "properties": {}},
        "limit": {"type": "integer", "default": 10, "minimum": 1},
    },
    "required": ["lines"],
}


def test_open_objects_are_not_closed() -> None:
    """Every object without additionalProperties is open: the tool falls back unchanged, each one named."""
    function, report = export_schema(OPEN)
    assert function["strict"] is False
    assert function["parameters"] == OPEN
    assert [reason.split(":")[0] for reason in report.not_strict] == ["$", "$.meta", "$.note.anyOf[0]", "$.$defs.Line"]
    assert all("an open object (without additionalProperties" in reason for reason in report.not_strict)
    assert report.changes == ()
    helper = rec_strict_json_schema(copy.deepcopy(OPEN))  # Mistral's helper closes them: values are lost
    assert helper["additionalProperties"] is False


def closed(schema: Any) -> Any:
    """`schema` with ``additionalProperties: false`` on every object that has none."""
    if isinstance(schema, dict):
        done = {k: closed(v) for k, v in schema.items()}
        kind = schema.get("type")
        if kind == "object" or (isinstance(kind, list) and "object" in kind):
            done.setdefault("additionalProperties", False)
        return done
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    return schema


def test_strict_keeps_everything_else() -> None:
    """Titles, defaults, constraints and required stay as written: optional fields stay optional."""
    function, report = export_schema(closed(OPEN))
    parameters = function["parameters"]
    assert function["strict"] is True
    assert parameters["title"] == "Order"
    assert parameters["required"] == ["lines"]
    assert parameters["properties"]["limit"] == {"type": "integer", "default": 10, "minimum": 1}
    assert report.null_defaults == ()
    assert report.changes == ()
    assert parameters == closed(OPEN)


def test_properties_without_a_type_are_objects_too() -> None:
    """A node with properties but no type is an object too: open, it is not closed."""
    function, report = export_schema(
        {
            "type": "object",
            "properties": {"p": {"properties": {"x": {"type": "string"}}}},
            "additionalProperties": False,
        }
    )
    assert function["strict"] is False
    assert [reason.split(":")[0] for reason in report.not_strict] == ["$.p"]


@pytest.mark.parametrize("extra", [True, {"type": "integer"}, {}])
def test_open_dicts_are_not_closed(extra: Any) -> None:
    """A dict cannot be closed without becoming "always empty": the tool falls back, unchanged, and says why."""
    schema = {
        "type": "object",
        "properties": {
            "d": {"type": "object", "additionalProperties": extra},
            "o": {"type": "object", "additionalProperties": False},
        },
        "additionalProperties": False,
    }
    function, report = export_schema(schema)
    assert function["strict"] is False
    assert function["parameters"] == schema
    assert report.not_strict == ("$.d: an open object (dict) cannot be closed without changing its meaning",)
    assert report.changes == ()


def test_already_closed_schema_is_unchanged() -> None:
    """A schema whose objects are all closed is strict with no change."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    function, report = export_schema(schema)
    assert function["parameters"] == schema
    assert function["strict"] is True and report.lossless


def test_transform_never_changes_its_input() -> None:
    """The transform works on a copy."""
    before = json.dumps(OPEN, sort_keys=True)
    mistral_strict(OPEN)
    assert json.dumps(OPEN, sort_keys=True) == before


def test_strict_false_sends_the_schema_as_is() -> None:
    """Without strict mode nothing is transformed and strict false is explicit."""
    function, report = export_schema(OPEN, strict=False)
    assert function == {"name": "t", "parameters": OPEN, "strict": False}
    assert report.lossless


# -- names and descriptions ------------------------------------------------------------------------


def test_name_rule() -> None:
    """A 64-character name is exported; a name breaking the rule is refused, naming the tool and the rule."""
    export = mistral.export_tools(Definition(name="n" * 64, input_schema={"type": "object"}))
    assert export.tools[0]["function"]["name"] == "n" * 64
    forged = Definition(name="ok", input_schema={"type": "object"})
    forged._name = "bad/name"  # a definition from elsewhere may hold any name
    with pytest.raises(ProviderError, match=r"'bad/name' cannot be exported to mistral: names must match"):
        mistral.export_tools(forged)
    assert re.fullmatch(mistral.NAME_PATTERN, "n" * 65) is None


def test_descriptions_are_sent_whole_without_notes() -> None:
    """Mistral has no known description limit: a long description is sent and not noted."""
    export = mistral.export_tools(Definition(name="long", description="d" * 5000, input_schema={"type": "object"}))
    assert export.tools[0]["function"]["description"] == "d" * 5000
    assert export.report.for_tool("long").notes == ()
    bare = mistral.export_tools(Definition(name="bare", input_schema={"type": "object"}))
    assert "description" not in bare.tools[0]["function"]


def test_module_example_runs() -> None:
    """The module docstring's example prints what it says."""
    match = re.search(r"```python\n(.*?)```", mistral.__doc__ or "", re.S)
    assert match is not None
    code = textwrap.dedent(match.group(1))
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
    raise RuntimeError(f"token {SECRET} expired")


RECORDED_CALLS = [
    ("D681PevKs", "search", '{"query": "tea"}'),
    ("a7Qm2XbW1", "transfer", '{"amount": 500}'),
    ("Zk9pL0qR3", "search", '{"query": "tea", "limit": "many"}'),
    ("Hf4tY8uN2", "refund", '{"order": "A1"}'),
    ("Pq2wE6rT9", "explode", "{}"),
]
RECORDED_RESPONSE: dict[str, Any] = {
    "id": "cmpl-e5cc70bb28c444948073e77776eb30ef",
    "object": "chat.completion",
    "model": "mistral-large-latest",
    "created": 1702256327,
    "usage": {"prompt_tokens": 90, "completion_tokens": 40, "total_tokens": 130},
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}, "index": index}
                    for index, (id_, name, arguments) in enumerate(RECORDED_CALLS)
                ],
            },
        }
    ],
}
MESSAGE = RECORDED_RESPONSE["choices"][0]["message"]


def test_recorded_response_is_the_sdk_wire_format() -> None:
    """The recorded payload is a valid ChatCompletionResponse with an AssistantMessage."""
    response = ChatCompletionResponse.model_validate(RECORDED_RESPONSE)
    assert len(response.choices[0].message.tool_calls or []) == 5
    AssistantMessage.model_validate(MESSAGE)


def test_parse_tool_calls_of_an_assistant_message() -> None:
    """Each call keeps Mistral's nine-character id, its name and its raw argument text."""
    calls = mistral.parse_tool_calls(MESSAGE)
    assert [(c.id, c.name, c.request.arguments) for c in calls] == RECORDED_CALLS


def test_parse_tool_calls_of_a_list_and_of_a_message_without_calls() -> None:
    """A bare tool_calls list works too; a text answer has no calls."""
    assert [c.id for c in mistral.parse_tool_calls(MESSAGE["tool_calls"][1:3])] == ["a7Qm2XbW1", "Zk9pL0qR3"]
    assert mistral.parse_tool_calls({"role": "assistant", "content": "Done."}) == []
    assert mistral.parse_tool_calls({"role": "assistant", "content": "Done.", "tool_calls": None}) == []


def test_object_arguments_are_encoded() -> None:
    """Mistral's FunctionCall may carry arguments as an object: they become JSON text."""
    payload = [{"id": "abc123XYZ", "function": {"name": "search", "arguments": {"query": "tea"}}}]
    AssistantMessage.model_validate({"role": "assistant", "tool_calls": payload})
    [call] = mistral.parse_tool_calls(payload)
    assert json.loads(call.request.arguments) == {"query": "tea"}


@pytest.mark.parametrize(
    "payload",
    [
        {"tool_calls": ["D681PevKs"]},
        {"tool_calls": {"id": "D681PevKs"}},
        {"tool_calls": [{"id": "x", "type": "retrieval", "function": {"name": "t", "arguments": "{}"}}]},
        {"tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]},
        {"tool_calls": [{"id": "x", "function": {"name": "", "arguments": "{}"}}]},
        {"tool_calls": [{"id": "x", "function": "search"}]},
        {"tool_calls": [{"id": "x", "function": {"name": "t", "arguments": 1.5}}]},
        "tool_calls",
        None,
    ],
)
def test_malformed_tool_calls_raise(payload: Any) -> None:
    """Anything that is not a function call with a name and JSON arguments is a ProviderError."""
    with pytest.raises(ProviderError):
        mistral.parse_tool_calls(payload)


def test_export_of_another_provider_is_refused() -> None:
    """Reading calls with an export made for another provider is a mistake, reported as such."""
    with pytest.raises(ProviderError, match="openai-chat"):
        mistral.parse_tool_calls(MESSAGE, openai_chat.export_tools([search]))


def test_nulls_are_left_to_the_contract() -> None:
    """Mistral's strict mode keeps optional fields optional, so no null is repaired: the contract decides."""
    export = mistral.export_tools([search])
    [call] = mistral.parse_tool_calls(
        [{"id": "x", "function": {"name": "search", "arguments": '{"query": "a", "limit": null}'}}], export
    )
    assert call.request.arguments == '{"query": "a", "limit": null}'


# -- results and the round trip ----------------------------------------------------------------------


async def run(registry: Registry, call: ToolCall) -> Result | BaseException:
    """Resolve, admit and run one call, as a driver does (the library's `run_call`)."""
    return await run_call(registry, call)


async def test_round_trip_of_a_recorded_response() -> None:
    """Recorded calls -> parse -> resolve -> prepare -> call -> tool messages the SDK accepts."""
    registry = Registry(search, transfer, explode)
    export = mistral.export_tools(registry)
    calls = mistral.parse_tool_calls(MESSAGE, export)
    messages = [mistral.result_message(call, await run(registry, call)) for call in calls]
    for message in messages:
        check_model(message, ToolMessage)
        assert message["role"] == "tool"
    assert [(m["tool_call_id"], m["name"]) for m in messages] == [(i, n) for i, n, _ in RECORDED_CALLS]
    success, failure, rejection, unknown, secret = (m["content"] for m in messages)
    assert json.loads(success) == ["tea 0", "tea 1", "tea 2"]
    assert failure == "transfers above 100 need approval"
    assert rejection.startswith("invalid arguments for tool 'search'") and "$.limit" in rejection
    assert unknown == 'error: tool "refund" is not available'
    assert secret == 'error: tool "explode" failed'
    assert all(SECRET not in json.dumps(m) for m in messages)


def test_name_is_left_out_when_it_breaks_the_rule() -> None:
    """A call naming an invalid tool is answered without a name member, which must match the rule."""
    call = ToolCall(id="abc123XYZ", request=Request(name="shop.refund"))
    message = mistral.result_message(call, UnknownToolError("shop.refund"))
    check_model(message, ToolMessage)
    assert "name" not in message
    assert message["content"] == 'error: tool "shop.refund" is not available'


def test_media_are_named_in_text() -> None:
    """Tool messages carry text: media are named, never dropped silently; details go as JSON."""
    call = ToolCall(id="abc123XYZ", request=Request(name="snap"))
    output = Output(content=(TextBlock("see "), MediaBlock(mime_type="image/png", data=b"\x89PNG")))
    message = mistral.result_message(call, Result(output=output))
    check_model(message, ToolMessage)
    assert message["content"] == "see [image/png media]"
    assert mistral.result_message(call, Result(output=Output.from_json("[1, 2]")))["content"] == "[1, 2]"


def test_result_needs_a_call_id() -> None:
    """Mistral requires tool_call_id: a call without an id cannot be answered."""
    with pytest.raises(ProviderError, match="id"):
        mistral.result_message(ToolCall(id=None, request=Request(name="t")), Result())
