"""Tool search in every provider: native exports against the SDKs' types, and a scripted loop through each path."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from model_turns import PATHS
from sdk_types import check_typed_dict

from scopetool import Catalog, DeferredToolError, Registry, Result, bind, tool
from scopetool.providers import (
    ProviderError,
    ToolCall,
    anthropic,
    openai_responses,
    outcome_output,
    run_call,
)


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool(defer_loading=True)
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@tool(defer_loading=True)
def send_invoice(customer_id: int, amount: float) -> str:
    """Send an invoice to a customer."""
    return f"invoice of {amount} sent to {customer_id}"


def registry() -> Registry:
    """One shown tool and two deferred ones."""
    return Registry(ping, get_weather, send_invoice)


def test_anthropic_native_export_defers_and_adds_its_search_tool() -> None:
    """Deferred tools carry defer_loading and Anthropic's BM25 or regex search tool comes last (SDK types)."""
    from anthropic.types import ToolUnionParam

    for variant, kind in (("bm25", "tool_search_tool_bm25_20251119"), ("regex", "tool_search_tool_regex_20251119")):
        tools = anthropic.export_tools(registry(), tool_search=variant).tools  # type: ignore[arg-type]
        for entry in tools:
            check_typed_dict(entry, ToolUnionParam)
        assert [(t["name"], t.get("defer_loading")) for t in tools[:3]] == [
            ("get_weather", True),
            ("ping", None),
            ("send_invoice", True),
        ]
        assert tools[3]["type"] == kind
    assert "defer_loading" not in json.dumps(anthropic.export_tools(Registry(ping)).tools)
    with pytest.raises(ProviderError, match="tool_search must be 'bm25' or 'regex'"):
        anthropic.export_tools(registry(), tool_search="glob")  # type: ignore[arg-type]


def test_bindings_marked_deferred_are_deferred_without_a_registry() -> None:
    """A list of bindings defers those marked so; definitions alone defer nothing."""
    tools = anthropic.export_tools([bind(ping), bind(get_weather)]).tools
    assert [t.get("defer_loading") for t in tools] == [None, True, None]
    assert len(anthropic.export_tools([ping.definition(), get_weather.definition()]).tools) == 2
    assert anthropic.export_tools(bind(get_weather)).tools[0]["defer_loading"] is True


def test_anthropic_server_search_reveals_and_the_found_tool_is_admitted_by_its_contract() -> None:
    """Anthropic's search blocks are not calls to run; their references reveal; the call is admitted strictly."""
    from anthropic.types import Message

    message = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "tool_search_tool_bm25",
                    "input": {"query": "weather"},
                },
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
                    },
                },
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "srvtoolu_2",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [],
                    },
                },
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": 7}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Lyon"}},
            ],
        }
    )
    calls = anthropic.parse_tool_calls(message)
    assert [c.id for c in calls] == ["toolu_1", "toolu_2"]
    assert anthropic.revealed_tools(message) == ["get_weather"]
    catalog = Catalog(registry())
    assert catalog.reveal(anthropic.revealed_tools(message)) == ["get_weather"]
    rejected, done = (asyncio.run(run_call(catalog, call)) for call in calls)
    assert "get_weather" in outcome_output("get_weather", rejected)[0].text()  # type: ignore[operator]
    assert "$.city" in outcome_output("get_weather", rejected)[0].text()  # type: ignore[operator]
    assert isinstance(done, Result) and done.output.text() == "sunny in Lyon"
    with pytest.raises(ProviderError, match="expected a Messages response"):
        anthropic.revealed_tools(3)


def test_openai_responses_native_export_defers_groups_and_adds_tool_search() -> None:
    """defer_loading, namespaces and the hosted tool_search: every entry is accepted by the SDK's ToolParam."""
    from openai.types.responses import ToolParam

    space = openai_responses.Namespace("billing", "Invoices and payments.", ("send_invoice",))
    export = openai_responses.export_tools(registry(), namespaces=[space])
    tools = export.tools
    for entry in tools:
        check_typed_dict(entry, ToolParam)
    assert [(t["type"], t["name"], t.get("defer_loading")) for t in tools[:2]] == [
        ("function", "get_weather", True),
        ("function", "ping", None),
    ]
    assert tools[2]["type"] == "namespace" and tools[2]["tools"][0]["name"] == "send_invoice"
    assert tools[2]["tools"][0]["defer_loading"] is True
    assert tools[3] == {"type": "tool_search"}
    for bad, problem in (
        (openai_responses.Namespace("n", "d", ("nothing",)), "tool 'nothing' is not exported"),
        (openai_responses.Namespace("n", "d", ("ping", "ping")), "tool 'ping' is in two namespaces"),
        ("billing", "namespaces holds Namespace values, not str"),
    ):
        with pytest.raises(ProviderError, match=problem):
            openai_responses.export_tools(registry(), namespaces=[bad])  # type: ignore[list-item]


def test_openai_responses_search_items_are_skipped_and_namespaced_calls_read_back() -> None:
    """tool_search_call and tool_search_output are not calls; a deferred or namespaced call reads as its tool's name."""
    from openai.types.responses import Response

    space = openai_responses.Namespace("billing", "Invoices and payments.", ("send_invoice",))
    export = openai_responses.export_tools(registry(), namespaces=[space])
    response = Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1764580000,
            "model": "gpt-5.4",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {
                    "type": "tool_search_call",
                    "id": "ts_1",
                    "call_id": "call_s",
                    "execution": "server",
                    "status": "completed",
                    "arguments": {"query": "invoice"},
                },
                {
                    "type": "tool_search_output",
                    "id": "tso_1",
                    "call_id": "call_s",
                    "execution": "server",
                    "status": "completed",
                    "tools": [
                        {"type": "function", "name": "get_weather", "parameters": {}, "strict": True},
                        {
                            "type": "namespace",
                            "name": "billing",
                            "description": "Invoices.",
                            "tools": [{"type": "function", "name": "send_invoice"}],
                        },
                    ],
                },
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "send_invoice",
                    "namespace": "billing",
                    "arguments": '{"customer_id": 4, "amount": 9.5}',
                },
                {
                    "type": "function_call",
                    "call_id": "call_2",
                    "name": "get_weather",
                    "namespace": "get_weather",
                    "arguments": '{"city": "Oslo"}',
                },
                {"type": "function_call", "call_id": "call_3", "name": "ping", "namespace": "other", "arguments": "{}"},
            ],
        }
    )
    calls = openai_responses.parse_tool_calls(response, export)
    assert [c.name for c in calls] == ["send_invoice", "get_weather", "other.ping"]
    assert [c.name for c in openai_responses.parse_tool_calls(response)] == [
        "billing.send_invoice",
        "get_weather",
        "other.ping",
    ]
    assert openai_responses.revealed_tools(response) == ["get_weather", "send_invoice"]
    outcomes = [asyncio.run(run_call(registry(), call)) for call in calls[:2]]
    assert [o.output.text() for o in outcomes if isinstance(o, Result)] == [
        "invoice of 9.5 sent to 4",
        "sunny in Oslo",
    ]


def names_in(tools: Any, known: set[str]) -> list[str]:
    """The tool names an export's entries hold, in order (found wherever the provider nests them)."""
    found: list[str] = []
    if isinstance(tools, dict):
        node: dict[str, Any] = tools  # pyright: ignore[reportUnknownVariableType]
        name = node.get("name")
        if isinstance(name, str) and name in known:
            found.append(name)
        for value in node.values():
            found += names_in(value, known)
    elif isinstance(tools, list):
        items: list[Any] = tools  # pyright: ignore[reportUnknownVariableType]
        for item in items:
            found += names_in(item, known)
    return found


@pytest.mark.parametrize("path", sorted(PATHS))
def test_local_search_loop_through_each_provider(path: str) -> None:
    """A scripted model: refused before searching, searches, sees the tool appended, held to its contract, served."""
    module, payload = PATHS[path]
    catalog = Catalog(registry())
    known = {"ping", "get_weather", "send_invoice", "search_tools"}

    def turn(call_id: str, name: str, arguments: dict[str, Any]) -> tuple[Any, bool]:
        (call,) = module.parse_tool_calls(payload(call_id, name, arguments))
        outcome = asyncio.run(run_call(catalog, call))
        module.result_message(call, outcome)  # every provider can answer it
        output, error = outcome_output(call.name, outcome)
        return output.text(), error

    before = names_in(module.export_tools(catalog).tools, known)
    assert before == ["ping", "search_tools"]
    text, error = turn("c1", "get_weather", {"city": "Lyon"})
    assert error and "not loaded yet: call search_tools" in text
    text, error = turn("c2", "search_tools", {"query": "what is the weather in a city"})
    assert not error and json.loads(text)[0]["name"] == "get_weather"
    after = names_in(module.export_tools(catalog).tools, known)
    assert after[: len(before)] == before and after == ["ping", "search_tools", "get_weather"]
    text, error = turn("c3", "get_weather", {"city": 3})
    assert error and "get_weather" in text and "$.city" in text
    text, error = turn("c4", "get_weather", {"city": "Lyon"})
    assert (text, error) == ("sunny in Lyon", False)
    text, error = turn("c5", "search_tools", {"query": 5})
    assert error and "search_tools" in text and "$.query" in text
    text, error = turn("c6", "send_invoice", {"customer_id": 1, "amount": 2.0})
    assert error and "not loaded yet" in text


def test_catalog_settings_and_edges() -> None:
    """Restored reveals, ignored names, no search without deferred tools, bad settings refused."""
    catalog = Catalog(registry(), ["send_invoice", "ping", "nothing"], limit=1)
    assert catalog.revealed == ("send_invoice",)
    assert catalog.reveal(["send_invoice", 3]) == []  # type: ignore[list-item]
    assert [d.name for d in catalog.search("weather city")] == ["get_weather"]
    assert [d.name for d in catalog.definitions()] == ["ping", "search_tools", "send_invoice", "get_weather"]
    assert catalog.search("zebra") == [] and repr(catalog) == "Catalog(3 tools, 2 revealed)"
    assert catalog.registry.names() == ["get_weather", "ping", "send_invoice"]
    assert catalog.search_tool is not None and catalog.resolve("search_tools") is catalog.search_tool
    plain = Catalog(Registry(ping))
    assert plain.search_tool is None and [d.name for d in plain] == ["ping"] and plain.is_visible("ping")
    assert plain.resolve("search_tools") is None
    outcome = asyncio.run(run_call(plain, ToolCall("x", registry_request("search_tools"))))
    assert outcome_output("search_tools", outcome)[0].text() == 'error: tool "search_tools" is not available'
    with pytest.raises(TypeError, match="a Catalog needs a Registry, not list"):
        Catalog([ping])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit must be a positive int"):
        Catalog(registry(), limit=0)
    with pytest.raises(TypeError, match="revealed is an iterable of tool names, not one str"):
        Catalog(registry(), "get_weather")

    @tool(name="search_tools")
    def own_search(query: str) -> str:
        """The application's own search."""
        return query

    assert Catalog(Registry(own_search, ping)).search_tool is None
    with pytest.raises(ValueError, match="the registry has a tool named 'search_tools'"):
        Catalog(Registry(own_search, get_weather))
    error = DeferredToolError("get_weather")
    assert error.name == "get_weather" and "search_tools" in error.message


def registry_request(name: str) -> Any:
    """A request of `name` with no arguments."""
    from scopetool import Request

    return Request(name=name, arguments="{}")


def test_malformed_search_results_reveal_nothing() -> None:
    """References without a tool name, and entries that are not tools, are passed over."""
    anthropic_blocks = [
        {"type": "text", "text": "hi"},
        {"type": "tool_search_tool_result", "content": {"tool_references": [{"tool_name": 3}, "x"]}},
        {"type": "tool_search_tool_result", "content": {"type": "tool_search_tool_result_error"}},
    ]
    assert anthropic.revealed_tools(anthropic_blocks) == []
    items = [
        {"type": "message"},
        {
            "type": "tool_search_output",
            "tools": ["x", {"type": "function"}, {"type": "namespace", "tools": [{"name": 5}]}],
        },
        {"type": "tool_search_output", "tools": None},
    ]
    assert openai_responses.revealed_tools(items) == []
    assert openai_responses.revealed_tools({"output": items}) == []
