"""Deferred scopetool tools in pydantic-ai and the OpenAI Agents SDK, each through the framework's own loop.

pydantic-ai's tool search (its `ToolSearch` capability, in every agent) hides the deferred tools until
the model's ``search_tools`` call reveals them; the Agents SDK sends them with ``defer_loading`` in a
namespace and the Responses API's tool search (scripted here, as the server would answer) loads
them. Either way a revealed tool's call is admitted by its own contract: a bad call never runs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")

from agents import Agent as AgentsAgent
from agents import RunConfig, Runner, ToolSearchTool
from agents.models.openai_responses import Converter
from agents.testing import ScriptedModel, assistant_message, function_call
from integration_support import SECRET, Log
from openai.types.responses import ResponseToolSearchCall, ResponseToolSearchOutputItem
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from scopetool import Registry
from scopetool.integrations.openai_agents import function_tools
from scopetool.integrations.pydantic_ai import ScopetoolToolset


class Script:
    """A FunctionModel sending each turn's calls in order; it records the tools offered and the returns shown."""

    def __init__(self, *turns: list[ToolCallPart]) -> None:
        self.turns = list(turns)
        self.offered: list[list[str]] = []
        self.seen: list[tuple[str, str]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.offered.append(sorted(tool.name for tool in info.function_tools))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        self.seen += [(p.tool_name, p.model_response_str()) for p in last.parts if isinstance(p, ToolReturnPart)]
        if self.turns:
            return ModelResponse(parts=self.turns.pop(0))
        return ModelResponse(parts=[TextPart("done")])


async def test_pydantic_ai_reveals_a_deferred_tool_by_search_and_admits_its_calls(registry: Registry, log: Log) -> None:
    """Only add is offered at first; search reveals refund; its bad call is rejected, its good one runs."""
    script = Script(
        [ToolCallPart("search_tools", {"queries": ["refund an order"]}, tool_call_id="s1")],
        [ToolCallPart("refund", '{"order": 7}', tool_call_id="r1")],
        [ToolCallPart("refund", '{"order": "A1"}', tool_call_id="r2")],
    )
    toolset = ScopetoolToolset(registry, defer_loading=True, always_show=["add"])
    result = await Agent(FunctionModel(script), toolsets=[toolset]).run("go")
    assert result.output == "done"
    assert script.offered[0] == ["add"]
    assert "refund" in script.offered[1] and "wipe" not in script.offered[1]
    assert script.seen[0][0] == "search_tools" and '"refund"' in script.seen[0][1]
    assert script.seen[1][0] == "refund" and "invalid arguments for tool 'refund'" in script.seen[1][1]
    assert "$.order: Input should be a valid string" in script.seen[1][1]
    assert script.seen[2] == ("refund", '{"error":"already refunded"}') and SECRET not in repr(script.seen)
    assert log.runs == [("refund", "A1")]


async def test_pydantic_ai_without_deferral_offers_every_tool(registry: Registry) -> None:
    """The default toolset defers nothing: every tool is offered on the first turn, and no search."""
    script = Script()
    await Agent(FunctionModel(script), toolsets=[ScopetoolToolset(registry)]).run("go")
    assert script.offered == [sorted(registry.names())]


def test_always_show_needs_deferral_and_names(registry: Registry) -> None:
    """always_show without deferral, as a string or naming no tool: a clear error from either framework's option."""
    with pytest.raises(ValueError, match=r"always_show applies only when tools are deferred \(defer_loading=True\)"):
        ScopetoolToolset(registry, always_show=["add"])
    with pytest.raises(TypeError, match="always_show must be a list of tool names, not str"):
        ScopetoolToolset(registry, defer_loading=True, always_show="add")
    with pytest.raises(TypeError, match="always_show must hold tool names"):
        function_tools(registry, defer_loading=True, always_show=[1])  # type: ignore[list-item]
    with pytest.raises(KeyError, match="always_show names tools that are not registered: nope"):
        function_tools(registry, defer_loading=True, always_show=["nope"])


def on_the_wire(tools: list[Any]) -> list[dict[str, Any]]:
    """The tools as the SDK's Responses model sends them (its own converter), as plain JSON."""
    converted: list[dict[str, Any]] = json.loads(json.dumps(Converter.convert_tools(tools, []).tools))
    return converted


def _search_and_load(*loaded: dict[str, Any]) -> list[Any]:
    """The two items the Responses API's server-side tool search adds to a response: its call and what it loaded."""
    return [
        ResponseToolSearchCall(
            id="ts1",
            call_id="ts1",
            arguments={"query": "refund an order"},
            execution="server",
            status="completed",
            type="tool_search_call",
        ),
        ResponseToolSearchOutputItem.model_validate(
            {
                "id": "to1",
                "call_id": "ts1",
                "execution": "server",
                "status": "completed",
                "type": "tool_search_output",
                "tools": list(loaded),
            }
        ),
    ]


async def test_the_agents_sdk_defers_tools_in_a_namespace_and_admits_each_loaded_call(
    registry: Registry, log: Log
) -> None:
    """On the wire the tools are one namespace, all but add deferred; a loaded tool's calls pass its contract."""
    tools = function_tools(registry, defer_loading=True, always_show=["add"], namespace=("shop", "The shop's tools."))
    [wire, search] = on_the_wire([*tools, ToolSearchTool()])
    assert (wire["type"], wire["name"], search["type"]) == ("namespace", "shop", "tool_search")
    deferred = {entry["name"]: entry.get("defer_loading", False) for entry in wire["tools"]}
    assert deferred == {name: name != "add" for name in registry.names()}
    refund = next(entry for entry in wire["tools"] if entry["name"] == "refund")
    model = ScriptedModel(
        [
            [*_search_and_load(refund), function_call("refund", '{"order": 7}', call_id="c1", namespace="shop")],
            [function_call("wipe", '{"user": "ada"}', call_id="c2", namespace="shop")],
            [function_call("refund", '{"order": "A1"}', call_id="c3", namespace="shop")],
            [assistant_message("done")],
        ]
    )
    agent = AgentsAgent(name="shop", model=model, tools=[*tools, ToolSearchTool()])
    result = await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "done"
    seen = [call.input[-1]["output"] for call in model.calls[1:]]
    assert seen[0].startswith("invalid arguments for tool 'refund'") and "$.order" in seen[0]
    assert seen[1] == 'error: tool "wipe" is not authorized'
    assert seen[2] == "already refunded" and SECRET not in repr(seen)
    assert log.runs == [("refund", "A1")]


def test_the_agents_sdk_tools_are_not_deferred_by_default(registry: Registry) -> None:
    """Without the options every tool's definition is sent from the start, outside any namespace."""
    wire = on_the_wire(list(function_tools(registry)))
    assert [(entry["type"], entry.get("defer_loading")) for entry in wire] == [("function", None)] * len(registry)


def test_a_tools_own_mark_and_the_registrys_rule_decide_without_the_switch() -> None:
    """A tool's own mark and the registry's rule defer in both frameworks; a False mark shows the tool."""
    from scopetool import tool

    @tool(defer_loading=True)
    def hidden() -> str:
        """Hidden until found."""
        return "found"

    @tool(defer_loading=False)
    def shown() -> str:
        """Always shown."""
        return "here"

    @tool
    def plain() -> str:
        """Left to the registry."""
        return "plain"

    rules: list[tuple[bool, set[str]]] = [(False, {"hidden"}), (True, {"hidden", "plain"})]
    for rule, deferred in rules:
        registry = Registry(hidden, shown, plain, defer_loading=rule)
        wire = on_the_wire([*function_tools(registry), ToolSearchTool()])
        assert {entry["name"] for entry in wire if entry.get("defer_loading")} == deferred
        toolset = ScopetoolToolset(registry)
        made = [toolset._tool(binding) for binding in registry]  # pyright: ignore[reportPrivateUsage]
        assert {tool.tool_def.name for tool in made if tool.tool_def.defer_loading} == deferred
