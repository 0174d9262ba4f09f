"""Code mode in pydantic-ai's Temporal agent, on a real dev server: nested calls are Temporal calls of their own."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

import pytest

pytest.importorskip("pydantic_monty")

from temporalio import workflow
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHistory
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():  # what a user's workflow module does with its non-workflow imports
    import jsonschema_rs  # noqa: F401 - scopetool loads it when an answer is checked (in workflow code)
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.tools import DeferredToolRequests

    from scopetool import Effect, Registry, tool
    from scopetool.code import CodeLimits
    from scopetool.driver.temporal import TemporalBackend
    from scopetool.integrations.pydantic_ai import answer_requests, input_requests
    from scopetool.integrations.pydantic_ai_temporal import temporal_toolset

PATIENCE = 30.0  # seconds before a stuck step fails the test (a guard, not a measurement)
SECRET = b"test-key-secret-0123456789abcdef"
NESTED_QUEUE = f"pydantic-ai-code-nested-{uuid.uuid4().hex[:8]}"
RUNS: Counter[str] = Counter()
"""What the nested tools did (they run in activities of this process's nested-call worker)."""

CODE = """
receipt = await charge(amount=5)
sent = await send(to='ACME')
[receipt, sent, await ship()]
"""


@tool
def charge(amount: int) -> str:
    """Charge the customer (no effect promise: never run twice)."""
    RUNS["charge"] += 1
    return f"charged {amount}"


def invoice_prompt(to: str) -> str:
    """What a person is asked before `send` runs."""
    return f"send the invoice to {to}?"


@tool(approval=invoice_prompt)
def send(to: str) -> str:
    """Send the invoice, once a person approves."""
    RUNS["send"] += 1
    return f"sent to {to}"


@tool
def ship() -> str:
    """Ship the order."""
    RUNS["ship"] += 1
    return "shipped"


TOOLS = Registry(charge, send, ship)


def coder(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """An offline model: writes one snippet, then says what it was shown."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    returns = [part.model_response_str() for part in last.parts if isinstance(part, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(" ".join(returns))])
    assert [definition.name for definition in info.function_tools] == ["run_code"]
    return ModelResponse(parts=[ToolCallPart("run_code", {"code": CODE}, tool_call_id="k1")])


billing = Agent(
    FunctionModel(coder),
    name="scopetool_coder",
    toolsets=[
        temporal_toolset(
            TOOLS, id="billing", key_secret=SECRET, code_mode=CodeLimits(nested_calls=5), code_task_queue=NESTED_QUEUE
        )
    ],
    output_type=[str, DeferredToolRequests],
    capabilities=[TemporalDurability()],
)


@workflow.defn
class CodeApprovalWorkflow(PydanticAIWorkflow):
    """A run whose code asks a person mid-snippet (a signal answers), then resumes the same code call."""

    __pydantic_ai_agents__ = (billing,)

    def __init__(self) -> None:
        self.asked: dict[str, dict[str, str]] = {}
        self.answers: dict[str, bool] = {}

    @workflow.run
    async def run(self, prompt: str) -> str:
        first = await billing.run(prompt)
        assert isinstance(first.output, DeferredToolRequests)
        self.asked = {
            call_id: {"prompt": request.prompt, "nested": request.continuation_state["nested"]}
            for call_id, request in input_requests(first.output).items()
        }
        await workflow.wait_condition(lambda: self.answers.keys() == self.asked.keys())
        results = answer_requests(first.output, self.answers)
        second = await billing.run(message_history=first.all_messages(), deferred_tool_results=results)
        assert isinstance(second.output, str)
        return second.output

    @workflow.query
    def pending(self) -> dict[str, dict[str, str]]:
        return self.asked

    @workflow.signal
    def answer(self, call_id: str, approved: bool) -> None:
        self.answers[call_id] = approved


async def test_an_approval_mid_code_waits_in_temporal_and_resumes_without_rerunning_nested_calls(
    temporal_target: str,
) -> None:
    """The nested approval waits in its own workflow; the answered run resumes the code, each tool ran once."""
    RUNS.clear()
    client = await Client.connect(temporal_target, plugins=[PydanticAIPlugin()])
    queue = f"pydantic-ai-code-{uuid.uuid4().hex[:8]}"
    nested = TemporalBackend(TOOLS, client, task_queue=NESTED_QUEUE)
    async with (
        Worker(client, task_queue=queue, workflows=[CodeApprovalWorkflow], plugins=[AgentPlugin(billing)]),
        nested.worker(),
    ):
        handle = await client.start_workflow(
            CodeApprovalWorkflow.run, "bill ACME", id=f"code-approval-{uuid.uuid4()}", task_queue=queue
        )
        asked: dict[str, dict[str, str]] = {}
        for _ in range(500):  # bounded: 10 s
            asked = await asyncio.wait_for(handle.query(CodeApprovalWorkflow.pending), PATIENCE)
            if asked:
                break
            await asyncio.sleep(0.02)
        assert list(asked) == ["k1"] and asked["k1"]["prompt"] == "send the invoice to ACME?"
        assert RUNS == {"charge": 1}  # charge ran before the question; send waits for the answer
        waiting = await client.get_workflow_handle(asked["k1"]["nested"]).describe()
        assert waiting.workflow_type == "scopetool.driver.call" and waiting.status is WorkflowExecutionStatus.RUNNING
        await handle.signal(CodeApprovalWorkflow.answer, args=["k1", True])
        output = await asyncio.wait_for(handle.result(), PATIENCE)
        history = (await handle.fetch_history()).to_json()
    assert '"result":["charged 5","sent to ACME","shipped"]' in output
    assert RUNS == {"charge": 1, "send": 1, "ship": 1}  # charge, done before the approval, did not run again
    assert "scopetool_coder__dynamic_toolset__billing__call_tool" in history  # the code call ran as an activity
    assert '"maximumAttempts": 10' in history  # run_code is IDEMPOTENT: its lost attempt is retried
    assert '"startToCloseTimeout": "150s"' in history  # an attempt may take the snippet's 120 s, and a margin


SLOW_SECONDS = 2.5
"""How long the nested `lookup` runs: past the code call's activity timeout, so that activity is retried."""
CODE_ACTIVITY_SECONDS = 1.0

SLOW_CODE = """
receipt = await charge(amount=7)
found = await lookup(order='SO-1')
[receipt, found, await ship()]
"""


@tool(effect=Effect.SAFE)
async def lookup(order: str) -> str:
    """Look an order up (slowly)."""
    RUNS["lookup"] += 1
    await asyncio.sleep(SLOW_SECONDS)
    return f"found {order}"


SLOW_TOOLS = Registry(charge, lookup, ship)


def slow_coder(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """An offline model: writes one snippet whose code call outlives its activity's first attempt."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    returns = [part.model_response_str() for part in last.parts if isinstance(part, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(" ".join(returns))])
    return ModelResponse(parts=[ToolCallPart("run_code", {"code": SLOW_CODE}, tool_call_id="s1")])


retrier = Agent(
    FunctionModel(slow_coder),
    name="scopetool_retrier",
    toolsets=[
        temporal_toolset(
            SLOW_TOOLS,
            id="lookups",
            key_secret=SECRET,
            retry={"initial_interval": 0.1},
            code_mode=True,
            code_task_queue=NESTED_QUEUE + "-slow",
            code_timeout=CODE_ACTIVITY_SECONDS,
        )
    ],
    capabilities=[TemporalDurability()],
)


@workflow.defn
class RetriedCodeWorkflow(PydanticAIWorkflow):
    """A run whose code call's first activity attempt times out mid-snippet."""

    __pydantic_ai_agents__ = (retrier,)

    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await retrier.run(prompt)).output


async def test_a_retried_code_activity_attaches_to_the_nested_calls_of_its_first_attempt(temporal_target: str) -> None:
    """The code call's activity times out mid-snippet; its retry finds charge done and waits on lookup, not rerun."""
    RUNS.clear()
    client = await Client.connect(temporal_target, plugins=[PydanticAIPlugin()])
    queue = f"pydantic-ai-code-{uuid.uuid4().hex[:8]}"
    nested = TemporalBackend(SLOW_TOOLS, client, task_queue=NESTED_QUEUE + "-slow")
    async with (
        Worker(client, task_queue=queue, workflows=[RetriedCodeWorkflow], plugins=[AgentPlugin(retrier)]),
        nested.worker(),
    ):
        handle = await client.start_workflow(
            RetriedCodeWorkflow.run, "look SO-1 up", id=f"code-retry-{uuid.uuid4()}", task_queue=queue
        )
        output = await asyncio.wait_for(handle.result(), PATIENCE)
        history = await handle.fetch_history()
    assert '"result":["charged 7","found SO-1","shipped"]' in output
    assert attempts(history, "scopetool_retrier__dynamic_toolset__lookups__call_tool") >= 2  # the code call's retried
    assert RUNS == {"charge": 1, "lookup": 1, "ship": 1}  # no nested call ran twice


def attempts(history: WorkflowHistory, activity: str) -> int:
    """The attempt at which the (one) activity whose type ends with `activity` last started."""
    scheduled = {
        event.event_id
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.activity_task_scheduled_event_attributes.activity_type.name.endswith(activity)
    }
    (attempt,) = [
        event.activity_task_started_event_attributes.attempt
        for event in history.events
        if event.HasField("activity_task_started_event_attributes")
        and event.activity_task_started_event_attributes.scheduled_event_id in scheduled
    ]
    return attempt


def test_code_mode_on_temporal_needs_its_task_queue() -> None:
    """Code mode without a task queue for the nested calls (or a queue without code mode) is refused."""
    with pytest.raises(ValueError, match="code_mode and code_task_queue together"):
        temporal_toolset(TOOLS, id="billing", key_secret=SECRET, code_mode=True)
    with pytest.raises(ValueError, match="code_mode and code_task_queue together"):
        temporal_toolset(TOOLS, id="billing", key_secret=SECRET, code_task_queue="nested")


async def test_code_mode_on_temporal_fails_closed_outside_a_workflow() -> None:
    """Run outside a workflow, a code call has no activity to record its nested calls from: it fails, nothing ran."""
    RUNS.clear()
    result = await billing.run("bill ACME")
    assert result.output == '{"error":"error: tool \\"run_code\\" failed"}'
    assert RUNS == {}
