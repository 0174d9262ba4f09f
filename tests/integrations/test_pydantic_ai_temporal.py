"""scopetool tools in pydantic-ai's Temporal durability, run through the agent's own loop on a real dev server."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():  # what a user's workflow module does with its non-workflow imports
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from scopetool import Effect, Failure, FailureKind, Registry, tool
    from scopetool.integrations.pydantic_ai_temporal import temporal_toolset

COUNTER = Path(__file__).with_name(".pydantic_ai_temporal.count")
"""Where `note` counts its runs (a file: what a tool with no effect promise did, across attempts)."""
ADDED: list[tuple[int, int]] = []


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers."""
    ADDED.append((a, b))
    return a + b


@tool
def note(text: str) -> str:
    """Write a note (no effect promise: never run twice)."""
    count = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
    COUNTER.write_text(str(count))
    if text == "secret":
        raise Failure(kind=FailureKind.FAILED, output="notes may not say that", cause=RuntimeError("cause-7731"))
    return f"noted {text}"


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """An offline model: calls the tools (one call rejected, one failing), then says what it was shown."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    if len(messages) == 1:
        return ModelResponse(
            parts=[
                ToolCallPart("add", '{"a": 2, "b": 3}', tool_call_id="c1"),
                ToolCallPart("add", '{"a": 2, "b": "x"}', tool_call_id="c2"),
                ToolCallPart("note", '{"text": "hello"}', tool_call_id="c3"),
                ToolCallPart("note", '{"text": "secret"}', tool_call_id="c4"),
            ]
        )
    shown = [
        f"{part.tool_call_id}={part.model_response_str()}" for part in last.parts if isinstance(part, ToolReturnPart)
    ]
    return ModelResponse(parts=[TextPart(" ".join(sorted(shown)))])


TOOLS = Registry(add, note)
agent = Agent(
    FunctionModel(script),
    name="scopetool_agent",
    toolsets=[temporal_toolset(TOOLS, id="scopetool", key_secret=b"test-key-secret-0123456789abcdef")],
    capabilities=[TemporalDurability()],
)


@workflow.defn
class AgentWorkflow(PydanticAIWorkflow):
    """The agent's run as a workflow: model requests and tool calls are its activities."""

    __pydantic_ai_agents__ = (agent,)

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await agent.run(prompt)
        return result.output


async def test_scopetool_tools_run_as_activities_of_pydantic_ais_temporal_agent(temporal_target: str) -> None:
    """Admission, a rejection the model retries, a Failure's public output and the retry policy per effect."""
    COUNTER.unlink(missing_ok=True)
    ADDED.clear()
    client = await Client.connect(temporal_target, plugins=[PydanticAIPlugin()])
    queue = f"pydantic-ai-{uuid.uuid4().hex[:8]}"
    try:
        async with Worker(client, task_queue=queue, workflows=[AgentWorkflow], plugins=[AgentPlugin(agent)]):
            handle = await client.start_workflow(AgentWorkflow.run, "go", id=f"agent-{uuid.uuid4()}", task_queue=queue)
            output = await handle.result()
        history = (await handle.fetch_history()).to_json()
    finally:
        count = COUNTER.read_text() if COUNTER.exists() else "0"
        COUNTER.unlink(missing_ok=True)
    assert output == (
        "c1=5 "
        'c2={"error":"invalid arguments for tool \'add\' (1 problem):\\n'
        '- $.b: Input should be a valid integer (got a string)"} '
        'c3=noted hello c4={"error":"notes may not say that"}'
    )  # as pydantic-ai shows them without Temporal: the rejection and the Failure's public output only
    assert ADDED == [(2, 3)]  # the rejected call never reached the tool
    assert count == "2"  # each note ran once
    assert "cause-7731" not in history  # the private cause stayed on the worker
    assert '"maximumAttempts": 1' in history  # the notes' activities: one attempt
    assert '"maximumAttempts": 10' in history  # the SAFE add's activity: retried with backoff
    assert "scopetool_agent__dynamic_toolset__scopetool__call_tool" in history  # the tools ran as activities


def test_a_key_secret_is_required() -> None:
    """Without a shared key secret a retried activity would mint another key: refused."""
    with pytest.raises(ValueError, match="key_secret"):
        temporal_toolset(TOOLS, id="scopetool", key_secret=b"")
