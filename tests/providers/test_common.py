"""Tests for what every provider adapter shares: reading the SDKs' own objects, and one set of functions.

Each SDK object here is what that SDK's real client returns: the client runs offline against a mock
HTTP transport that answers with a recorded body, so its own parsing and construction build the
object (boto3's dicts come out of botocore's parser the same way).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

import anthropic as anthropic_sdk
import botocore.session
import httpx
import httpx2
import mcp.types as mcp_types
import ollama as ollama_sdk
import openai
import pytest
from botocore.awsrequest import AWSResponse
from google import genai
from google.genai import types as genai_types
from mistralai.client import Mistral

from scopetool import Registry, Result, tool
from scopetool.providers import (
    ProviderError,
    anthropic,
    bedrock,
    gemini,
    mcp,
    mistral,
    ollama,
    openai_chat,
    openai_responses,
    run_call,
)
from scopetool.providers._common import plain

MODULES = [openai_chat, openai_responses, anthropic, bedrock, gemini, mcp, mistral, ollama]

ARGUMENTS = '{"query": "caf\\u00e9",  "limit": 2}'
"""Argument text as a model wrote it: an escape and two spaces that re-encoding would not keep."""
PARSED = '{"query":"café","limit":2}'
"""The same arguments where the SDK hands them over parsed: encoded again, canonically (compact)."""


def transport(body: dict[str, Any]) -> httpx.MockTransport:
    """An HTTP transport that answers every request with `body` as JSON."""
    return httpx.MockTransport(lambda request: httpx.Response(200, json=body))


# -- what each API sends back, recorded ------------------------------------------------------------

CHAT_COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-Bq1",
    "object": "chat.completion",
    "created": 1764580000,
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
                    {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": ARGUMENTS}}
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 52, "completion_tokens": 18, "total_tokens": 70},
}
RESPONSE: dict[str, Any] = {
    "id": "resp_68a1",
    "object": "response",
    "created_at": 1764580000,
    "status": "completed",
    "model": "gpt-4.1-2025-04-14",
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "search",
            "arguments": ARGUMENTS,
            "status": "completed",
        },
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
MESSAGE: dict[str, Any] = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"query": "café", "limit": 2}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 40, "output_tokens": 22},
}
GENERATE_CONTENT: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Looking."},
                    {
                        "functionCall": {"id": "fc_1", "name": "search", "args": {"query": "café", "limit": 2}},
                        "thoughtSignature": "c2lnbmF0dXJl",
                    },
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 12, "totalTokenCount": 52},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "r-1",
}
MISTRAL_COMPLETION: dict[str, Any] = {
    "id": "cmpl-e5cc",
    "object": "chat.completion",
    "model": "mistral-large-latest",
    "created": 1764580000,
    "usage": {"prompt_tokens": 40, "completion_tokens": 20, "total_tokens": 60},
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "D681PevKs",
                        "type": "function",
                        "function": {"name": "search", "arguments": ARGUMENTS},
                        "index": 0,
                    }
                ],
            },
        }
    ],
}
OLLAMA_CHAT: dict[str, Any] = {
    "model": "qwen3",
    "created_at": "2026-12-01T10:00:00.000000Z",
    "message": {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "search", "arguments": {"query": "café", "limit": 2}}}],
    },
    "done": True,
    "done_reason": "stop",
}
CONVERSE: dict[str, Any] = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"text": "Looking."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "search", "input": {"query": "café", "limit": 2}}},
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 40, "outputTokens": 20, "totalTokens": 60},
    "metrics": {"latencyMs": 800},
}
TOOLS_CALL = (
    b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call",'
    b' "params": {"name": "search", "arguments": {"query": "caf\\u00e9", "limit": 2}}}'
)


# -- the SDKs' own clients, offline ----------------------------------------------------------------


def openai_client(body: dict[str, Any]) -> openai.OpenAI:
    """An OpenAI client whose every request gets `body` back."""
    return openai.OpenAI(api_key="sk-test", http_client=httpx.Client(transport=transport(body)))


def chat_completion() -> Any:
    """The ``ChatCompletion`` ``client.chat.completions.create`` returns for the recorded body."""
    return openai_client(CHAT_COMPLETION).chat.completions.create(model="gpt-4.1", messages=[])


def response() -> Any:
    """The ``Response`` ``client.responses.create`` returns for the recorded body."""
    return openai_client(RESPONSE).responses.create(model="gpt-4.1", input="Find cafés")


def message() -> Any:
    """The ``Message`` ``client.messages.create`` returns for the recorded body."""
    answer = httpx2.MockTransport(lambda request: httpx2.Response(200, json=MESSAGE))
    client = anthropic_sdk.Anthropic(api_key="sk-test", http_client=httpx2.Client(transport=answer))
    return client.messages.create(model="claude-sonnet-4-6", max_tokens=512, messages=[])


def generate_content() -> Any:
    """The ``GenerateContentResponse`` ``client.models.generate_content`` returns for the recorded body."""
    options = genai_types.HttpOptions(httpx_client=httpx.Client(transport=transport(GENERATE_CONTENT)))
    return genai.Client(api_key="test", http_options=options).models.generate_content(
        model="gemini-2.5-flash", contents="Find cafés"
    )


def mistral_completion() -> Any:
    """The ``ChatCompletionResponse`` ``client.chat.complete`` returns for the recorded body."""
    client = Mistral(api_key="test", client=httpx.Client(transport=transport(MISTRAL_COMPLETION)))
    return client.chat.complete(model="mistral-large-latest", messages=[{"role": "user", "content": "Find cafés"}])


def ollama_chat() -> Any:
    """The ``ChatResponse`` ``client.chat`` returns for the recorded body."""
    client = ollama_sdk.Client(host="http://ollama.test", transport=transport(OLLAMA_CHAT))
    return client.chat(model="qwen3", messages=[])


class _Body:
    """A raw HTTP body for botocore."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Any:
        yield self.data

    def read(self, *_: Any, **__: Any) -> bytes:
        return self.data


def converse() -> Any:
    """What boto3's ``converse`` returns for the recorded body: botocore's parser builds the dicts."""
    client = botocore.session.get_session().create_client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="AKIDTEST", aws_secret_access_key="test"
    )
    data = json.dumps(CONVERSE).encode()

    def send(request: Any, **_: Any) -> AWSResponse:
        return AWSResponse(request.url, 200, {"content-type": "application/json"}, _Body(data))

    client.meta.events.register("before-send.bedrock-runtime.Converse", send)
    return client.converse(modelId="anthropic.claude-sonnet-4-6", messages=[])


def tools_call() -> Any:
    """The ``JSONRPCRequest`` the MCP SDK reads from the wire."""
    return mcp_types.jsonrpc_message_adapter.validate_json(TOOLS_CALL)


def call_tool_request() -> Any:
    """The ``CallToolRequest`` the MCP SDK makes of that request."""
    request = tools_call()
    return mcp_types.client_request_adapter.validate_python({"method": request.method, "params": request.params})


# Per provider: every shape of a turn, each with the (id, name, arguments) of its one call.
SHAPES: dict[str, list[tuple[str, Callable[[], Any], tuple[str | None, str, str]]]] = {
    "openai_chat": [
        ("ChatCompletion", chat_completion, ("call_1", "search", ARGUMENTS)),
        ("its choice", lambda: chat_completion().choices[0], ("call_1", "search", ARGUMENTS)),
        ("its message", lambda: chat_completion().choices[0].message, ("call_1", "search", ARGUMENTS)),
        ("its tool_calls", lambda: chat_completion().choices[0].message.tool_calls, ("call_1", "search", ARGUMENTS)),
        ("the JSON", lambda: CHAT_COMPLETION, ("call_1", "search", ARGUMENTS)),
        ("its model_dump()", lambda: chat_completion().model_dump(), ("call_1", "search", ARGUMENTS)),
    ],
    "openai_responses": [
        ("Response", response, ("call_1", "search", ARGUMENTS)),
        ("its output", lambda: response().output, ("call_1", "search", ARGUMENTS)),
        ("the function_call item", lambda: response().output[1:], ("call_1", "search", ARGUMENTS)),
        ("the JSON", lambda: RESPONSE, ("call_1", "search", ARGUMENTS)),
    ],
    "anthropic": [
        ("Message", message, ("toolu_1", "search", PARSED)),
        ("its content", lambda: message().content, ("toolu_1", "search", PARSED)),
        ("the JSON", lambda: MESSAGE, ("toolu_1", "search", PARSED)),
        ("its content JSON", lambda: MESSAGE["content"], ("toolu_1", "search", PARSED)),
    ],
    "gemini": [
        ("GenerateContentResponse", generate_content, ("fc_1", "search", PARSED)),
        ("its content", lambda: generate_content().candidates[0].content, ("fc_1", "search", PARSED)),
        ("its parts", lambda: generate_content().candidates[0].content.parts, ("fc_1", "search", PARSED)),
        ("one Part", lambda: generate_content().candidates[0].content.parts[1], ("fc_1", "search", PARSED)),
        ("the JSON", lambda: GENERATE_CONTENT, ("fc_1", "search", PARSED)),
        ("its snake_case model_dump()", lambda: generate_content().model_dump(), ("fc_1", "search", PARSED)),
    ],
    "mistral": [
        ("ChatCompletionResponse", mistral_completion, ("D681PevKs", "search", ARGUMENTS)),
        ("its message", lambda: mistral_completion().choices[0].message, ("D681PevKs", "search", ARGUMENTS)),
        (
            "its tool_calls",
            lambda: mistral_completion().choices[0].message.tool_calls,
            ("D681PevKs", "search", ARGUMENTS),
        ),
        ("the JSON", lambda: MISTRAL_COMPLETION, ("D681PevKs", "search", ARGUMENTS)),
    ],
    "ollama": [
        ("ChatResponse", ollama_chat, (None, "search", PARSED)),
        ("its message", lambda: ollama_chat().message, (None, "search", PARSED)),
        ("its tool_calls", lambda: ollama_chat().message.tool_calls, (None, "search", PARSED)),
        ("the JSON", lambda: OLLAMA_CHAT, (None, "search", PARSED)),
    ],
    "bedrock": [
        ("converse's response", converse, ("tooluse_1", "search", PARSED)),
        ("its message", lambda: converse()["output"]["message"], ("tooluse_1", "search", PARSED)),
        ("its content", lambda: converse()["output"]["message"]["content"], ("tooluse_1", "search", PARSED)),
        ("the JSON", lambda: CONVERSE, ("tooluse_1", "search", PARSED)),
    ],
    "mcp": [
        ("JSONRPCRequest", tools_call, ("7", "search", PARSED)),
        ("CallToolRequest", call_tool_request, (None, "search", PARSED)),
        ("CallToolRequestParams", lambda: call_tool_request().params, (None, "search", PARSED)),
        ("a batch", lambda: [tools_call()], ("7", "search", PARSED)),
        ("the JSON", lambda: json.loads(TOOLS_CALL), ("7", "search", PARSED)),
    ],
}
CASES = [
    pytest.param(provider, build, expected, id=f"{provider}: {label}")
    for provider, shapes in SHAPES.items()
    for label, build, expected in shapes
]


@pytest.mark.parametrize(("provider", "build", "expected"), CASES)
def test_parse_tool_calls_reads_every_shape_a_client_returns(
    provider: str, build: Callable[[], Any], expected: tuple[str | None, str, str]
) -> None:
    """The SDK's response object, its message, its list of calls and the plain JSON give the same call."""
    module = globals()[provider]
    calls = module.parse_tool_calls(build())
    assert [(c.id, c.name, c.request.arguments) for c in calls] == [expected]


def test_sdk_objects_are_the_real_types() -> None:
    """The objects the tests read are the SDKs' own response types, not dicts."""
    names = [type(build()).__name__ for build in (chat_completion, response, message, generate_content)]
    names += [type(build()).__name__ for build in (mistral_completion, ollama_chat, tools_call, call_tool_request)]
    assert names == [
        "ChatCompletion",
        "Response",
        "Message",
        "GenerateContentResponse",
        "ChatCompletionResponse",
        "ChatResponse",
        "JSONRPCRequest",
        "CallToolRequest",
    ]
    assert type(converse()) is dict and "ResponseMetadata" in converse()


def test_a_strict_export_repairs_nulls_read_from_an_sdk_object() -> None:
    """A null standing for an omitted field is read as "omitted" from the SDK object too."""

    @tool
    def search(query: str, limit: int = 3) -> list[str]:
        """Search the catalogue."""
        return [query] * limit

    body = json.loads(json.dumps(CHAT_COMPLETION))
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"query": "tea", "limit": null}'
    completion = openai_client(body).chat.completions.create(model="gpt-4.1", messages=[])
    export = openai_chat.export_tools(Registry(search))
    [call] = openai_chat.parse_tool_calls(completion, export)
    assert call.request.arguments == '{"query":"tea"}'


# -- the shared reader -----------------------------------------------------------------------------


class ToDict:
    """An SDK-like object that serializes itself with ``to_dict()`` (as protobuf-based SDKs do)."""

    def to_dict(self) -> dict[str, Any]:
        return {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "search", "input": {}}]}


class Broken:
    """An SDK-like object whose serializer fails."""

    def model_dump(self, **_: Any) -> dict[str, Any]:
        raise TypeError("cannot serialize a socket")


def test_plain_reads_to_dict_and_leaves_json_alone() -> None:
    """``to_dict()`` objects are read through it; plain JSON comes back as the same object."""
    [call] = anthropic.parse_tool_calls(ToDict())
    assert (call.id, call.name) == ("t1", "search")
    value = {"a": [1]}
    assert plain(value, "x") is value
    assert plain(dict, "x") is dict  # a class is not an SDK object to dump


def test_plain_names_an_object_whose_serializer_fails() -> None:
    """A serializer failure is a ProviderError naming the node and the object's type."""
    with pytest.raises(ProviderError, match=r"^tool_calls\[0\]: cannot read Broken as JSON: cannot serialize"):
        openai_chat.parse_tool_calls([Broken()])


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_parse_tool_calls_refuses_an_export_of_another_provider(module: ModuleType) -> None:
    """Every adapter refuses an export made for another provider (its null repairs would not fit)."""
    other = ollama if module is not ollama else mcp

    @tool
    def search(query: str) -> str:
        """Search."""
        return query

    short = module.__name__.rsplit(".", 1)[-1]
    with pytest.raises(ProviderError, match=rf"needs an export made by scopetool\.providers\.{short}, not one for"):
        module.parse_tool_calls([], other.export_tools([search]))
    with pytest.raises(ProviderError, match=r"not a dict$"):
        module.parse_tool_calls([], {"provider": module.PROVIDER})
    assert module.parse_tool_calls([], module.export_tools([search])) == []


def test_an_object_that_is_no_payload_is_refused_by_name() -> None:
    """Something that is neither JSON nor an SDK object is refused with its type's name."""
    for module in MODULES:
        with pytest.raises(ProviderError, match="object"):
            module.parse_tool_calls(object())


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"choices": {"index": 0}}, "choices must be a list, not dict"),
        ({"choices": ["x"]}, r"choices\[0\] must be an object, not str"),
        ({"choices": [{"index": 0, "message": "hi"}]}, "message must be an object, not str"),
        ({"tool_calls": {"id": "c"}}, "tool_calls must be a list, not dict"),
        ("tool_calls", "expected a chat completion, an assistant message or its tool_calls, not str"),
    ],
)
def test_malformed_chat_payloads_are_named(payload: Any, message: str) -> None:
    """The OpenAI-style chat readers (OpenAI Chat, Mistral, Ollama) name what is wrong where."""
    for module in (openai_chat, mistral, ollama):
        with pytest.raises(ProviderError, match=message):
            module.parse_tool_calls(payload)


def test_chat_payloads_without_calls_give_none() -> None:
    """No choices, a choice without a message, or a message without calls: no calls, no error."""
    for payload in ({"choices": []}, {"choices": [{"index": 0, "message": None}]}, {"role": "assistant"}):
        for module in (openai_chat, mistral, ollama):
            assert module.parse_tool_calls(payload) == []


def test_a_completion_is_read_from_its_first_choice() -> None:
    """With several choices (``n`` > 1), the first one's calls are read, as Gemini's first candidate is."""
    body = json.loads(json.dumps(CHAT_COMPLETION))
    second = json.loads(json.dumps(body["choices"][0]))
    second["message"]["tool_calls"][0]["id"] = "call_2"
    body["choices"].append(second)
    assert [c.id for c in openai_chat.parse_tool_calls(body)] == ["call_1"]


# -- the same functions in every module ------------------------------------------------------------

CORE = {
    "export_tools": ["tools"],
    "parse_tool_calls": ["payload", "export"],
    "run_call": ["registry", "call", "admission"],
    "result_message": ["call", "outcome"],
}
"""The functions docs/providers/index.md promises in every provider module, with their leading parameters."""
BATCHED = {"anthropic", "bedrock", "gemini"}
"""The providers that answer a whole turn in one message, and so have ``results_message(pairs)``."""


def leading(function: Callable[..., Any], count: int) -> list[str]:
    """The names of a function's first `count` parameters."""
    return list(inspect.signature(function).parameters)[:count]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_provider_module_has_the_same_functions(module: ModuleType) -> None:
    """Each adapter exports export_tools, parse_tool_calls, run_call and result_message, called alike."""
    exported = set(module.__all__)
    assert set(CORE) <= exported
    for name in module.__all__:
        assert hasattr(module, name), name
    for name, parameters in CORE.items():
        assert leading(getattr(module, name), len(parameters)) == parameters, name
    assert list(inspect.signature(module.parse_tool_calls).parameters) == ["payload", "export"]
    assert module.run_call is run_call
    short = module.__name__.rsplit(".", 1)[-1]
    assert ("results_message" in exported) == (short in BATCHED)
    if short in BATCHED:
        assert leading(module.results_message, 1) == ["pairs"]


async def test_each_modules_run_call_runs_its_own_calls() -> None:
    """``<provider>.run_call`` admits and runs a call that module parsed."""

    @tool
    def search(query: str, limit: int = 3) -> list[str]:
        """Search the catalogue."""
        return [query] * limit

    registry = Registry(search)
    for module, payload in ((openai_chat, chat_completion()), (gemini, generate_content()), (mcp, tools_call())):
        [call] = module.parse_tool_calls(payload)
        outcome = await module.run_call(registry, call)
        assert isinstance(outcome, Result) and json.loads(outcome.output.text() or "") == ["café", "café"]


def test_a_number_beyond_a_double_in_parsed_arguments_is_refused_not_nulled() -> None:
    """Anthropic's client parses ``1e400`` into infinity: it is refused, never read as a null."""
    body = json.dumps(MESSAGE).replace('"limit": 2', '"limit": 1e400').encode()
    answer = httpx2.MockTransport(lambda request: httpx2.Response(200, content=body))
    client = anthropic_sdk.Anthropic(api_key="sk-test", http_client=httpx2.Client(transport=answer))
    sent = client.messages.create(model="claude-sonnet-4-6", max_tokens=512, messages=[])
    with pytest.raises(ProviderError, match=r"content\[1\]: tool_use input is not JSON"):
        anthropic.parse_tool_calls(sent)


def test_an_outcome_is_sorted_without_asyncio_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no asyncio in the process (a loop of another library), an error is the call's outcome, not raised."""
    import sys

    from scopetool._run import _outcome_of  # pyright: ignore[reportPrivateUsage]

    monkeypatch.delitem(sys.modules, "asyncio")
    error = ValueError("boom")
    assert _outcome_of(error) is error
    with pytest.raises(GeneratorExit):
        _outcome_of(GeneratorExit())
