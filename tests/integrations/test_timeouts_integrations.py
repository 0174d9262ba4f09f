"""Timed-out calls inside the frameworks' own loops: pydantic-ai's Agent and the Agents SDK's Runner."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from scopetool import Effect, Registry, overrunning_calls, tool

GATE = threading.Event()
"""The sync tools wait on it; set at the end of each test so no abandoned thread outlives it."""
STARTS: list[str] = []


@tool(effect=Effect.SAFE)
async def slow_read() -> str:
    """Read, too slowly."""
    STARTS.append("slow_read")
    await asyncio.Event().wait()
    return "read"


@tool
async def slow_write() -> str:
    """Write with no promise, too slowly."""
    STARTS.append("slow_write")
    await asyncio.Event().wait()
    return "written"


@tool(effect=Effect.SAFE)
def slow_sync_read() -> str:
    """Read in a sync function, too slowly."""
    STARTS.append("slow_sync_read")
    GATE.wait(10)
    return "read"


@tool
def slow_sync_write() -> str:
    """Write in a sync function with no promise, too slowly."""
    STARTS.append("slow_sync_write")
    GATE.wait(10)
    return "written"


NAMES = ["slow_read", "slow_write", "slow_sync_read", "slow_sync_write"]
SHOWN = [
    'error: tool "slow_read" timed out',
    'error: tool "slow_write" timed out; its outcome is unknown',
    'error: tool "slow_sync_read" timed out',
    'error: tool "slow_sync_write" timed out; its outcome is unknown',
]


@pytest.fixture
def registry() -> Iterator[Registry]:
    """The four slow tools under a registry default timeout of 50 ms; their abandoned threads released after."""
    STARTS.clear()
    GATE.clear()
    yield Registry(slow_read, slow_write, slow_sync_read, slow_sync_write, timeout=0.05)
    GATE.set()
    for _ in range(2000):
        if not overrunning_calls():
            break
        time.sleep(0.005)


async def test_pydantic_ai_shows_the_fixed_texts_and_retries_nothing(registry: Registry) -> None:
    """Each timed-out call is a failed tool return with its effect's text; the agent runs each tool once."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from scopetool.integrations.pydantic_ai import ScopetoolToolset

    seen: list[tuple[str, str, str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart(name, "{}", tool_call_id=f"c{i}") for i, name in enumerate(NAMES)])
        seen.extend((p.tool_name, p.outcome, p.model_response_str()) for p in returns)
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), toolsets=[ScopetoolToolset(registry)])
    assert (await agent.run("go")).output == "done"
    assert [(name, outcome) for name, outcome, _ in seen] == [(name, "failed") for name in NAMES]
    for (_, _, text), expected in zip(seen, SHOWN, strict=True):
        assert expected.replace('"', '\\"') in text
    assert sorted(STARTS) == sorted(NAMES)  # each ran once: a timeout is not a retry prompt


async def test_the_agents_sdk_shows_the_fixed_texts(registry: Registry) -> None:
    """Runner.run's next model call sees each timed-out call's fixed text as its function_call_output."""
    pytest.importorskip("agents")
    from agents import Agent, RunConfig, Runner
    from agents.testing import ScriptedModel, assistant_message, function_call

    from scopetool.integrations.openai_agents import function_tools

    model = ScriptedModel(
        [[function_call(name, "{}", call_id=f"c{i}") for i, name in enumerate(NAMES)], [assistant_message("done")]]
    )
    agent = Agent(name="t", model=model, tools=list(function_tools(registry)))
    result = await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "done"
    outputs = [item["output"] for item in model.calls[1].input if item.get("type") == "function_call_output"]
    assert outputs == SHOWN
    assert sorted(STARTS) == sorted(NAMES)
