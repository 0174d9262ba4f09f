"""scopetool tools in pydantic-ai's Temporal durability, run through the agent's own loop on a real dev server."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():  # what a user's workflow module does with its non-workflow imports
    import jsonschema_rs  # noqa: F401 - scopetool loads it when an answer is checked (in workflow code)
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
    from pydantic_ai.tools import DeferredToolRequests

    from scopetool import CallContext, Effect, Failure, FailureKind, Registry, tool
    from scopetool.integrations.pydantic_ai import answer_requests, input_requests
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


PATIENCE = 30.0  # seconds before a stuck step fails the test (a guard, not a measurement)
REMOVED = Path(__file__).with_name(".pydantic_ai_temporal.removed")
"""Where `remove` logs what it removed, under which key (a file: the activity runs on the worker)."""


def removal_prompt(path: str) -> str:
    """What a person is asked before `remove` runs."""
    return f"Remove {path}?"


@tool(approval=removal_prompt)
def remove(ctx: CallContext[None], path: str) -> str:
    """Remove a path, once a person approves it."""
    with REMOVED.open("a", encoding="utf-8") as log:
        log.write(f"{path} {ctx.idempotency_key}\n")
    return f"removed {path}"


def remover(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """An offline model: asks to remove a path, then says what it was shown."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    returns = [part.model_response_str() for part in last.parts if isinstance(part, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(" ".join(returns))])
    return ModelResponse(parts=[ToolCallPart("remove", '{"path": "/srv/old"}', tool_call_id="r1")])


approver = Agent(
    FunctionModel(remover),
    name="scopetool_approver",
    toolsets=[temporal_toolset(Registry(remove), id="removal", key_secret=b"test-key-secret-0123456789abcdef")],
    output_type=[str, DeferredToolRequests],
    capabilities=[TemporalDurability()],
)


@workflow.defn
class ApprovalWorkflow(PydanticAIWorkflow):
    """A run that stops for a person's answer (a signal) and resumes the same call with it."""

    __pydantic_ai_agents__ = (approver,)

    def __init__(self) -> None:
        self.prompts: dict[str, str] = {}
        self.answers: dict[str, bool] = {}

    @workflow.run
    async def run(self, prompt: str) -> str:
        first = await approver.run(prompt)
        assert isinstance(first.output, DeferredToolRequests)
        self.prompts = {call_id: request.prompt for call_id, request in input_requests(first.output).items()}
        await workflow.wait_condition(lambda: self.answers.keys() == self.prompts.keys())
        results = answer_requests(first.output, self.answers)
        second = await approver.run(message_history=first.all_messages(), deferred_tool_results=results)
        assert isinstance(second.output, str)
        return second.output

    @workflow.query
    def pending(self) -> dict[str, str]:
        return self.prompts

    @workflow.signal
    def answer(self, call_id: str, approved: bool) -> None:
        self.answers[call_id] = approved


async def test_an_input_request_suspends_the_run_and_resumes_the_same_call(temporal_target: str) -> None:
    """The tool asks in its activity; the workflow waits for the answer and the call runs once, under its key."""
    REMOVED.unlink(missing_ok=True)
    client = await Client.connect(temporal_target, plugins=[PydanticAIPlugin()])
    queue = f"pydantic-ai-{uuid.uuid4().hex[:8]}"
    try:
        async with Worker(client, task_queue=queue, workflows=[ApprovalWorkflow], plugins=[AgentPlugin(approver)]):
            handle = await client.start_workflow(
                ApprovalWorkflow.run, "tidy up", id=f"approval-{uuid.uuid4()}", task_queue=queue
            )
            pending: dict[str, str] = {}
            for _ in range(500):  # bounded: 10 s
                pending = await asyncio.wait_for(handle.query(ApprovalWorkflow.pending), PATIENCE)
                if pending:
                    break
                await asyncio.sleep(0.02)
            assert pending == {"r1": "Remove /srv/old?"}
            assert not REMOVED.exists()  # nothing ran before the answer
            await handle.signal(ApprovalWorkflow.answer, args=["r1", True])
            output = await asyncio.wait_for(handle.result(), PATIENCE)
        removed = REMOVED.read_text(encoding="utf-8").splitlines()
    finally:
        REMOVED.unlink(missing_ok=True)
    assert output == "removed /srv/old"
    assert len(removed) == 1 and removed[0].startswith("/srv/old ")


def test_a_key_secret_is_required() -> None:
    """Without a shared key secret a retried activity would mint another key: refused."""
    with pytest.raises(ValueError, match="key_secret"):
        temporal_toolset(TOOLS, id="scopetool", key_secret=b"")
