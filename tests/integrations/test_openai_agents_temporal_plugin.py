"""scopetool's activity tools under the Agents SDK's own Temporal plugin (``temporalio-openai-agents``).

The plugin runs the SDK's `Runner` in the workflow on its Temporal runner and each model call as an
activity. It requires openai-agents 0.22, older than the suite's, so ``.ci/run`` runs this file in a
virtual environment of its own (``SCOPETOOL_AGENTS_PLUGIN=1`` there makes a missing plugin a failure);
elsewhere it is skipped, saying so.
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

PLUGIN = importlib.util.find_spec("temporalio") is not None and (
    importlib.util.find_spec("temporalio.openai_agents") is not None
)
if not PLUGIN and os.environ.get("SCOPETOOL_AGENTS_PLUGIN") != "1":
    pytest.skip(
        "the Agents SDK's Temporal plugin (temporalio-openai-agents) needs openai-agents 0.22; .ci/run runs this "
        "file in a virtual environment of its own",
        allow_module_level=True,
    )

from agents import Agent, Model, ModelResponse, Runner, Usage  # noqa: E402 - after the skip
from openai.types.responses import ResponseFunctionToolCall  # noqa: E402
from temporalio import workflow  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.openai_agents.testing import AgentEnvironment, ResponseBuilders  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from scopetool import Effect, Registry, tool  # noqa: E402
from scopetool.driver.temporal import call_activities  # noqa: E402
from scopetool.integrations.openai_agents_temporal import activity_tools  # noqa: E402

RUNS: list[str] = []
"""What `note` did (a tool with no effect promise), across attempts: the worker runs in this process."""
SEEN: list[str] = []
"""The tool outputs the model was sent on its last turn (the model runs as an activity, in this process)."""


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def note(text: str) -> str:
    """Write a note (no effect promise: never run twice)."""
    RUNS.append(text)
    return f"noted {text}"


TOOLS = Registry(add, note)


def _call(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        arguments=arguments, call_id=call_id, name=name, type="function_call", id=f"fc_{call_id}", status="completed"
    )


class ScriptedModel(Model):
    """Calls the three tools in one turn, then answers with what it was sent."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:  # noqa: A002
        outputs = [item for item in input if isinstance(item, dict) and item.get("type") == "function_call_output"]
        if not outputs:
            calls = [
                _call("add", '{"a": 2, "b": 3}', "c1"),
                _call("add", '{"a": 2, "b": "x"}', "c2"),
                _call("note", '{"text": "hello"}', "c3"),
            ]
            return ModelResponse(output=list(calls), usage=Usage(), response_id=None)
        SEEN[:] = [f"{item['call_id']}={item['output']}" for item in outputs]
        return ResponseBuilders.output_message("done")

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


@workflow.defn(sandboxed=False)
class PluginWorkflow:
    """The SDK's Runner on the plugin's Temporal runner: the model call and every tool call are activities."""

    @workflow.run
    async def run(self, prompt: str) -> str:
        tools = activity_tools(TOOLS, key_secret=b"test-key-secret", retry={"initial_interval": 0.1})
        agent = Agent(name="calc", tools=list(tools))
        result = await Runner.run(agent, prompt)
        return str(result.final_output)


async def test_activity_tools_run_under_the_agents_sdk_temporal_plugin(temporal_target: str) -> None:
    """Under the SDK's own plugin, each tool call is an activity admitted by its contract on the worker."""
    RUNS.clear()
    SEEN.clear()
    async with AgentEnvironment(model=ScriptedModel()) as env:
        client = env.applied_on_client(await Client.connect(temporal_target))
        queue = f"plugin-{uuid.uuid4().hex[:8]}"
        async with Worker(
            client, task_queue=queue, workflows=[PluginWorkflow], activities=list(call_activities(TOOLS))
        ):
            handle = await client.start_workflow(
                PluginWorkflow.run, "go", id=f"plugin-{uuid.uuid4()}", task_queue=queue
            )
            assert await handle.result() == "done"
        history = (await handle.fetch_history()).to_json()
    assert SEEN[0] == "c1=5"
    assert SEEN[1].startswith("c2=invalid arguments for tool 'add' (1 problem):")
    assert SEEN[2] == "c3=noted hello"
    assert RUNS == ["hello"]
    assert history.count('"name": "scopetool.driver.call"') == 3  # the tools' activities
    assert "invoke_model_activity" in history  # and the plugin's model activity
