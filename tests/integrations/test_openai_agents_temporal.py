"""scopetool tools as the OpenAI Agents SDK's activity tools: the SDK's Runner in a workflow on a real dev server.

The Agents SDK's Temporal plugin (``temporalio-openai-agents``) needs openai-agents < 0.23, so the agent
runs here in workflow code with an offline scripted model (deterministic), and its tool calls run as
real Temporal activities on the worker.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from agents import Agent, RunConfig, Runner, Tool
from agents.testing import ScriptedModel, assistant_message, function_call
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

from scopetool import Effect, Failure, FailureKind, Registry, tool
from scopetool.driver.temporal import call_activities
from scopetool.integrations.openai_agents_temporal import activity_tools

COUNTER = Path(__file__).with_name(".openai_agents_temporal.count")
"""Where `note` counts its runs (a file: what a tool with no effect promise did, across attempts)."""


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def note(text: str) -> str:
    """Write a note (no effect promise: never run twice)."""
    count = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
    COUNTER.write_text(str(count))
    if text == "secret":
        raise Failure(kind=FailureKind.FAILED, output="notes may not say that", cause=RuntimeError("cause-5523"))
    return f"noted {text}"


def wipe_prompt(path: str) -> str:
    """What a person would be asked before `wipe` runs."""
    return f"Wipe {path}?"


@tool(approval=wipe_prompt)
def wipe(path: str) -> str:
    """Wipe a path, once a person approves it."""
    return f"wiped {path}"


TOOLS = Registry(add, note, wipe)


@workflow.defn(sandboxed=False)
class AgentWorkflow:
    """An Agents SDK run in workflow code: its model is scripted, its tools are activities."""

    @workflow.run
    async def run(self, prompt: str) -> list[str]:
        calls = [
            function_call("add", '{"a": 2, "b": 3}', call_id="c1"),
            function_call("add", '{"a": 2, "b": "x"}', call_id="c2"),
            function_call("note", '{"text": "hello"}', call_id="c3"),
            function_call("note", '{"text": "secret"}', call_id="c4"),
            function_call("wipe", '{"path": "/srv"}', call_id="c5"),
        ]
        model = ScriptedModel([calls, [assistant_message("done")]])
        tools: list[Tool] = [*activity_tools(TOOLS, key_secret=b"test-key-secret", retry={"initial_interval": 0.1})]
        agent = Agent(name="calc", model=model, tools=tools)
        await Runner.run(agent, prompt, run_config=RunConfig(tracing_disabled=True))
        return [
            f"{item['call_id']}={item['output']}"
            for item in model.calls[1].input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]


async def test_scopetool_tools_run_as_activities_of_an_agents_sdk_run(temporal_target: str) -> None:
    """The SDK's own loop calls the tools; each call is an activity admitted by its contract on the worker."""
    COUNTER.unlink(missing_ok=True)
    client = await Client.connect(temporal_target)
    queue = f"agents-{uuid.uuid4().hex[:8]}"
    try:
        async with Worker(client, task_queue=queue, workflows=[AgentWorkflow], activities=list(call_activities(TOOLS))):
            handle = await client.start_workflow(AgentWorkflow.run, "go", id=f"agent-{uuid.uuid4()}", task_queue=queue)
            outputs = await handle.result()
        history = (await handle.fetch_history()).to_json()
    finally:
        count = COUNTER.read_text() if COUNTER.exists() else "0"
        COUNTER.unlink(missing_ok=True)
    assert outputs[0] == "c1=5"
    assert outputs[1].startswith("c2=invalid arguments for tool 'add' (1 problem):")
    assert outputs[2:] == [
        "c3=noted hello",
        "c4=notes may not say that",
        'c5=error: tool "wipe" needs input that this run cannot ask for',
    ]
    assert count == "2"  # each note ran once
    assert "cause-5523" not in history  # the private cause stayed on the worker
    # one activity per call, the rejected one too: admission runs on the worker
    assert history.count('"name": "scopetool.driver.call"') == 5
    assert '"maximumAttempts": 1' in history and '"maximumAttempts": 10' in history


def test_a_key_secret_is_required() -> None:
    """Without a shared key secret the calls' keys could not be minted again: refused."""
    with pytest.raises(ValueError, match="key_secret"):
        activity_tools(TOOLS, key_secret=b"")
