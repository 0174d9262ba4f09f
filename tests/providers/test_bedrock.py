"""Tests for the AWS Bedrock Converse adapter: tool specs, toolConfig, tool calls and tool results."""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator
from corpus import CORPUS
from test_anthropic import claude_strict_problems, request_cost

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
from scopetool.providers import ProviderError, ToolCall, anthropic, bedrock, run_call

SECRET = "s3cr3t-db-password-0xDEADBEEF"
SERVICE = botocore.session.get_session().get_service_model("bedrock-runtime")


def problems(params: Any, shape: str) -> str:
    """What botocore's parameter validator reports for `params` against a bedrock-runtime shape ("" when valid)."""
    report = ParamValidator().validate(params, SERVICE.shape_for(shape))
    return report.generate_report() if report.has_errors() else ""


def request_problems(params: dict[str, Any]) -> str:
    """What the validator reports for a whole Converse request."""
    report = ParamValidator().validate(params, SERVICE.operation_model("Converse").input_shape)
    return report.generate_report() if report.has_errors() else ""


def export_schema(schema: dict[str, Any], *, strict: bool = True) -> tuple[dict[str, Any], Any]:
    """Export one hand-written schema as tool ``t``: its toolSpec and its report."""
    export = bedrock.export_tools(Definition(name="t", input_schema=schema), strict=strict)
    return export.tools[0]["toolSpec"], export.report.for_tool("t")


def test_the_validator_catches_what_bedrock_refuses() -> None:
    """The check the tests rely on reports unknown keys, empty descriptions and non-JSON documents."""
    spec = {"name": "t", "description": "", "inputSchema": {"json": {"x": b"1"}}, "strcit": True}
    report = problems({"tools": [{"toolSpec": spec}]}, "ToolConfiguration")
    assert 'Unknown parameter in tools[0].toolSpec: "strcit"' in report
    assert "tools[0].toolSpec.description" in report
    assert "Invalid type for document parameter x" in report


# -- export and toolConfig -----------------------------------------------------------------------


@pytest.mark.parametrize("strict", [True, False])
def test_corpus_tool_configuration_validates(strict: bool) -> None:
    """Every corpus export is a valid ToolConfiguration and a valid Converse request."""
    export = bedrock.export_tools(CORPUS, strict=strict)
    config = bedrock.tool_configuration(export)
    assert len(config["tools"]) == len(CORPUS) >= 30
    assert problems(config, "ToolConfiguration") == ""
    request = {"modelId": "anthropic.claude-sonnet-4-5", "messages": [USER_TURN], "toolConfig": config}
    assert request_problems(request) == ""
    for entry in config["tools"]:
        assert set(entry) == {"toolSpec"}
        assert set(entry["toolSpec"]["inputSchema"]) == {"json"}
        assert entry["toolSpec"].get("strict", True) is True  # only ever sent as true


def test_corpus_non_strict_export_is_lossless() -> None:
    """Without strict each schema is the contract's own and no strict key is sent."""
    export = bedrock.export_tools(CORPUS)
    for definition, entry in zip((t.definition() for t in CORPUS), export.tools, strict=True):
        assert entry == {
            "toolSpec": {
                "name": definition.name,
                "description": definition.description,
                "inputSchema": {"json": definition.input_schema},
            }
        }
    assert all(r.lossless and r.strict is False for r in export.report.tools)
    assert export.report.provider == "bedrock"


def test_strict_export_follows_the_anthropic_rules() -> None:
    """Strict mode (for Claude) gives the same schemas, strictness and report as the Anthropic export."""
    ours = bedrock.export_tools(CORPUS, strict=True)
    theirs = anthropic.export_tools(CORPUS, strict=True)
    for spec, tool_ in zip((e["toolSpec"] for e in ours.tools), theirs.tools, strict=True):
        assert spec["inputSchema"]["json"] == tool_["input_schema"]
        assert spec.get("strict") == tool_.get("strict")
    assert ours.report.to_dict()["tools"] == theirs.report.to_dict()["tools"]


def test_corpus_strict_schemas_meet_claudes_rules_and_limits() -> None:
    """Schemas sent strict meet Claude's strict subset and, together, the per-request limits."""
    export = bedrock.export_tools(CORPUS, strict=True)
    strict = [e["toolSpec"]["inputSchema"]["json"] for e in export.tools if e["toolSpec"].get("strict")]
    assert len(strict) == 20
    for schema in strict:
        assert claude_strict_problems(schema) == []
    optional, unions = request_cost(strict)
    assert optional <= 24 and unions <= 16
    refused = {r.name for r in export.report.tools if r.not_strict and "request limit" not in r.not_strict[0]}
    assert refused == {"mixed_tuple", "counts", "anything", "tree"}


def test_empty_description_is_left_out() -> None:
    """Bedrock refuses an empty description, so a tool without one sends no description member."""
    export = bedrock.export_tools(Definition(name="bare", input_schema={"type": "object"}))
    assert export.tools == [{"toolSpec": {"name": "bare", "inputSchema": {"json": {"type": "object"}}}}]
    assert problems(bedrock.tool_configuration(export), "ToolConfiguration") == ""


def forged(name: str) -> Definition:
    """A definition holding a name scopetool itself would refuse (as one from elsewhere might)."""
    definition = Definition(name="ok", input_schema={"type": "object"})
    definition._name = name
    return definition


def test_name_rule_and_limit() -> None:
    """Names of 1 to 64 characters of [a-zA-Z0-9_-] are exported; others are refused naming the rule."""
    export = bedrock.export_tools([forged("a" * 64), Definition(name="Get-item_2", input_schema={"type": "object"})])
    assert [e["toolSpec"]["name"] for e in export.tools] == ["a" * 64, "Get-item_2"]
    for bad in ("a" * 65, "bad.name", "has space", ""):
        with pytest.raises(
            ProviderError, match=r"'.*' cannot be exported to bedrock: names must match \[a-zA-Z0-9_-\]"
        ):
            bedrock.export_tools(forged(bad))


@pytest.mark.parametrize("strict", [True, False])
def test_root_union_is_sent_with_a_note(strict: bool) -> None:
    """Bedrock serves many model families: a root union is sent, noted (Claude refuses it), never strict."""
    schema = {"type": "object", "anyOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}]}
    spec, report = export_schema(schema, strict=strict)
    assert spec["inputSchema"]["json"] == schema and "strict" not in spec
    assert report.notes == ("the root uses anyOf: Claude models refuse a union at the top level",)
    assert bool(report.not_strict) is strict


def test_strict_transform_changes_are_reported() -> None:
    """A strict export describes bounds, and says so; an open object falls back, with the reason."""
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}
    spec, report = export_schema(schema)
    assert "strict" not in spec and spec["inputSchema"]["json"] == schema
    assert report.strict is False and "an open object" in report.not_strict[0]
    spec, report = export_schema({**schema, "additionalProperties": False})
    assert spec["strict"] is True
    assert spec["inputSchema"]["json"] == {
        "type": "object",
        "properties": {"n": {"type": "integer", "description": "{minimum: 1}"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    assert {f"{c.path} {c.keyword} {c.action}" for c in report.changes} == {"$.n minimum described"}


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (None, None),
        ("auto", {"auto": {}}),
        ("any", {"any": {}}),
        ("add", {"tool": {"name": "add"}}),
    ],
)
def test_tool_choice(choice: str | None, expected: dict[str, Any] | None) -> None:
    """toolChoice is absent by default, auto, any, or one named tool of the export."""
    config = bedrock.tool_configuration(bedrock.export_tools(CORPUS[:3]), choice=choice)
    assert config.get("toolChoice") == expected
    assert problems(config, "ToolConfiguration") == ""


def test_tool_configuration_refuses_what_bedrock_would() -> None:
    """A choice outside the export, an export of another provider, or no tools at all are refused."""
    with pytest.raises(ProviderError, match="not in the export"):
        bedrock.tool_configuration(bedrock.export_tools(CORPUS[:3]), choice="nope")
    with pytest.raises(ProviderError, match="bedrock export"):
        bedrock.tool_configuration(anthropic.export_tools(CORPUS[:3]))
    with pytest.raises(ProviderError, match="at least one tool"):
        bedrock.tool_configuration(bedrock.export_tools([]))


# -- tool calls ------------------------------------------------------------------------------------

USER_TURN = {"role": "user", "content": [{"text": "Find tea, move 500, and check ACME."}]}

RECORDED_RESPONSE = json.loads(
    textwrap.dedent(
        """
        {"ResponseMetadata": {"RequestId": "5d8c1f0e-7b7a-4c63-9f4e-2f0c4c1b9a11", "HTTPStatusCode": 200,
                              "HTTPHeaders": {}, "RetryAttempts": 0},
         "output": {"message": {"role": "assistant", "content": [
           {"reasoningContent": {"reasoningText": {"text": "Several tools.", "signature": "ErcBCkgIAhABGAIiQ"}}},
           {"text": "I'll look those up."},
           {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "search", "input": {"query": "tea"}}},
           {"toolUse": {"toolUseId": "tooluse_2", "name": "transfer", "input": {"amount": 500}}},
           {"toolUse": {"toolUseId": "tooluse_3", "name": "search", "input": {"query": 7, "limit": 2}}},
           {"toolUse": {"toolUseId": "tooluse_4", "name": "delete_everything", "input": {}}},
           {"toolUse": {"toolUseId": "tooluse_5", "name": "explode", "input": {}}},
           {"toolUse": {"toolUseId": "tooluse_6", "name": "quote", "input": {"symbol": "ACME"}}}
         ]}},
         "stopReason": "tool_use",
         "usage": {"inputTokens": 402, "outputTokens": 187, "totalTokens": 589},
         "metrics": {"latencyMs": 1890}}
        """
    )
)
ASSISTANT_TURN = RECORDED_RESPONSE["output"]["message"]
IDS = ["tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "tooluse_2", "tooluse_3", "tooluse_4", "tooluse_5", "tooluse_6"]


def test_recorded_message_is_the_service_wire_format() -> None:
    """The recorded assistant message is a valid bedrock-runtime Message."""
    assert problems(ASSISTANT_TURN, "Message") == ""


def test_parse_tool_calls_of_a_response_a_message_and_a_content_list() -> None:
    """Each toolUse keeps its id, name and input (as JSON text); other blocks are skipped."""
    for payload in (RECORDED_RESPONSE, ASSISTANT_TURN, ASSISTANT_TURN["content"]):
        calls = bedrock.parse_tool_calls(payload)
        assert [c.id for c in calls] == IDS
    calls = bedrock.parse_tool_calls(RECORDED_RESPONSE)
    assert [c.name for c in calls] == ["search", "transfer", "search", "delete_everything", "explode", "quote"]
    assert json.loads(calls[0].request.arguments) == {"query": "tea"}
    assert calls[3].request.arguments == "{}"


def test_parse_skips_server_tools_and_empty_outputs() -> None:
    """Server tool uses run on Bedrock; a response without a message calls nothing."""
    server = {
        "toolUse": {"toolUseId": "tooluse_s", "name": "web_search", "input": {"q": "x"}, "type": "server_tool_use"}
    }
    assert bedrock.parse_tool_calls([server, {"text": "done"}]) == []
    assert bedrock.parse_tool_calls({"output": {}, "stopReason": "guardrail_intervened"}) == []
    assert bedrock.parse_tool_calls({"role": "assistant", "content": [{"text": "Hello"}]}) == []
    assert bedrock.parse_tool_calls({"role": "assistant"}) == []


@pytest.mark.parametrize(
    "payload",
    [
        {"output": "message"},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": []}}]},
        {"role": "assistant", "content": "Hello"},
        {"role": "assistant", "content": ["not a block"]},
        [{"toolUse": "search"}],
        [{"toolUse": {"name": "t", "input": {}}}],
        [{"toolUse": {"toolUseId": "", "name": "t", "input": {}}}],
        [{"toolUse": {"toolUseId": "t1", "input": {}}}],
        [{"toolUse": {"toolUseId": "t1", "name": "t", "input": '{"a": 1}'}}],
        [{"toolUse": {"toolUseId": "t1", "name": "t", "input": [1]}}],
        [{"toolUse": {"toolUseId": "t1", "name": "t", "input": {"x": float("inf")}}}],
        42,
    ],
)
def test_malformed_payloads_raise(payload: Any) -> None:
    """Anything that is not an assistant message with well-formed toolUse blocks is a ProviderError."""
    with pytest.raises(ProviderError):
        bedrock.parse_tool_calls(payload)


# -- results and the full round trip ----------------------------------------------------------------


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
    raise RuntimeError(f"database down: {SECRET}")


@tool
def quote(symbol: str) -> dict[str, Any]:
    """Quote a price."""
    return {"symbol": symbol, "price": 12.5, "volume": 2**70}


async def run(registry: Registry, call: ToolCall) -> Result | BaseException:
    """Resolve, admit and run one call, as a driver does (the library's `run_call`)."""
    return await run_call(registry, call)


async def test_round_trip_of_a_recorded_response() -> None:
    """Recorded toolUse blocks -> parse -> resolve -> prepare -> call -> a user message Bedrock accepts."""
    registry = Registry(search, transfer, explode, quote)
    export = bedrock.export_tools(registry, strict=True)
    calls = bedrock.parse_tool_calls(RECORDED_RESPONSE, export)
    outcomes = [await run(registry, call) for call in calls]
    assert isinstance(outcomes[2], InvalidInvocationError)
    message = bedrock.results_message(zip(calls, outcomes, strict=True))
    assert problems(message, "Message") == ""
    request = {
        "modelId": "anthropic.claude-sonnet-4-5",
        "messages": [USER_TURN, ASSISTANT_TURN, message],
        "toolConfig": bedrock.tool_configuration(export),
    }
    assert request_problems(request) == ""
    results = [block["toolResult"] for block in message["content"]]
    assert [r["toolUseId"] for r in results] == IDS
    success, failure, rejection, unknown, secret, quoted = results
    assert success["status"] == "success"
    assert json.loads(success["content"][0]["text"]) == ["tea 0", "tea 1", "tea 2"]  # not an object: text
    assert quoted == {
        "toolUseId": "tooluse_6",
        "content": [{"json": {"symbol": "ACME", "price": 12.5, "volume": 2**70}}],
        "status": "success",
    }
    assert failure == {
        "toolUseId": "tooluse_2",
        "content": [{"text": "transfers above 100 need approval"}],
        "status": "error",
    }
    assert rejection["status"] == "error"
    assert rejection["content"][0]["text"].startswith("invalid arguments for tool 'search'")
    assert unknown["content"] == [{"text": 'error: tool "delete_everything" is not available'}]
    assert secret["content"] == [{"text": 'error: tool "explode" failed'}] and secret["status"] == "error"
    assert SECRET not in json.dumps(message) and "database" not in json.dumps(message)


def test_status_can_be_left_out() -> None:
    """For model families that refuse status, the error is only in the text."""
    call = bedrock.parse_tool_calls(ASSISTANT_TURN)[1]
    failure = Failure(kind=FailureKind.REJECTED, output="no")
    assert bedrock.result_message(call, failure, status=False) == {
        "toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "no"}]}
    }
    message = bedrock.results_message([(call, failure)], status=False)
    assert "status" not in message["content"][0]["toolResult"]
    assert problems(message, "Message") == ""


def test_results_message_refuses_no_results_and_repeated_ids() -> None:
    """A results message needs at least one result, and answers each toolUseId once."""
    call = bedrock.parse_tool_calls(ASSISTANT_TURN)[0]
    with pytest.raises(ProviderError, match="at least one"):
        bedrock.results_message([])
    with pytest.raises(ProviderError, match=IDS[0]):
        bedrock.results_message([(call, Result()), (call, Result())])


PNG = b"\x89PNG\r\n\x1a\n fake"


@pytest.mark.parametrize(
    ("output", "content"),
    [
        (Output.from_text("plain"), [{"text": "plain"}]),
        (Output.from_json('{"sum": 5}'), [{"json": {"sum": 5}}]),
        (Output.from_json("[1, 2]"), [{"text": "[1, 2]"}]),
        (Output(content=(TextBlock("see:"),), details=b'{"hidden": 1}'), [{"text": "see:"}]),
        (Output(), []),
        (
            Output(content=(TextBlock("chart:"), MediaBlock(mime_type="image/png", data=PNG))),
            [{"text": "chart:"}, {"image": {"format": "png", "source": {"bytes": PNG}}}],
        ),
        (
            Output(content=(MediaBlock(mime_type="image/jpeg", uri="s3://my-bucket/a.jpg"),)),
            [{"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://my-bucket/a.jpg"}}}}],
        ),
        (
            Output(content=(MediaBlock("application/pdf", data=b"%PDF"), MediaBlock("text/plain; q=1", data=b"hi"))),
            [
                {"document": {"format": "pdf", "name": "document-1", "source": {"bytes": b"%PDF"}}},
                {"document": {"format": "txt", "name": "document-2", "source": {"bytes": b"hi"}}},
            ],
        ),
    ],
)  # fmt: skip
def test_result_content_blocks(output: Output, content: list[dict[str, Any]]) -> None:
    """Text, JSON objects, images and documents map to toolResult content blocks Bedrock accepts."""
    call = bedrock.parse_tool_calls(ASSISTANT_TURN)[0]
    block = bedrock.result_message(call, Result(output=output))
    assert problems(block, "ContentBlock") == ""
    assert block["toolResult"]["content"] == content
    assert block["toolResult"]["status"] == "success"


@pytest.mark.parametrize(
    "media",
    [
        MediaBlock(mime_type="audio/wav", data=b"RIFF"),
        MediaBlock(mime_type="image/png", uri="https://example.com/a.png"),
        MediaBlock(mime_type="image/png", reference="file-123"),
    ],
)
def test_media_bedrock_cannot_carry_is_named(media: MediaBlock) -> None:
    """Media a toolResult cannot carry are named in a text block, never dropped silently."""
    call = bedrock.parse_tool_calls(ASSISTANT_TURN)[0]
    block = bedrock.result_message(call, Result(output=Output(content=(media,))))
    assert problems(block, "ContentBlock") == ""
    [text] = block["toolResult"]["content"]
    assert text["text"].startswith(f"[{media.mime_type} media not shown")


def test_result_needs_a_call_id_and_a_finished_result() -> None:
    """A call without an id, or a result waiting for input, cannot become a toolResult."""
    request = bedrock.parse_tool_calls(ASSISTANT_TURN)[0].request
    with pytest.raises(ProviderError, match="toolUseId"):
        bedrock.result_message(ToolCall(id=None, request=request), Result())
    waiting = Result(input_request=InputRequest(prompt="sure?", response_schema={"type": "boolean"}))
    with pytest.raises(ProviderError, match="requests input"):
        bedrock.result_message(ToolCall(id="t", request=request), waiting)


def test_module_example_runs_as_documented() -> None:
    """The module docstring's example runs and prints what its `#>` lines say."""
    [block] = re.findall(r"```python\n(.*?)```", bedrock.__doc__ or "", re.S)
    code = textwrap.dedent(block)
    expected = re.findall(r"^#> (.+)$", code, re.M)
    printed: list[str] = []
    exec(compile(code, "example", "exec"), {"print": lambda *a: printed.append(" ".join(map(str, a)))})
    assert printed == expected


def test_parse_refuses_an_export_of_another_provider() -> None:
    """An Anthropic export, though it follows the same strict rules, cannot drive Bedrock's import."""
    with pytest.raises(ProviderError, match=r"scopetool\.providers\.bedrock, not one for anthropic"):
        bedrock.parse_tool_calls(RECORDED_RESPONSE, anthropic.export_tools(CORPUS[:1]))
    assert len(bedrock.parse_tool_calls(RECORDED_RESPONSE, bedrock.export_tools(CORPUS[:1]))) == 6
