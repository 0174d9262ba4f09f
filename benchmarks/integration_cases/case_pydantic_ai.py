"""pydantic-ai: its native tools and the same tools through `ScopetoolToolset`, on the hostile cases.

Each case is one `Agent.run` on a `FunctionModel` that sends the case's call and then records what the
next request shows it (each part's ``model_response_str()``, what pydantic-ai sends the provider). An
input request is answered in a second run, as pydantic-ai's deferred tools are. The overhead cases
time one tool call through pydantic-ai's `ToolManager.handle_call` (validation, hooks, execution),
not a whole run, whose cost the fake model and the graph would dominate.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.exceptions import ApprovalRequired, ToolFailed
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RunUsage

from scopetool import Effect, Registry, tool
from scopetool.integrations.pydantic_ai import ScopetoolToolset, answer_requests

from ._cases import CASES, CONNECT_ERROR, REFUND_FAILURE, Case, outcome, ran, registry

FRAMEWORK = "pydantic-ai"


def _add(a: int, b: int) -> int:
    """Add two integers."""
    ran("add", a=a, b=b)
    return a + b


def _connect() -> str:
    """Open a connection to the database."""
    ran("connect")
    raise RuntimeError(CONNECT_ERROR)


def _refund(order: str) -> str:
    """Refund an order."""
    ran("refund", order=order)
    raise ToolFailed(REFUND_FAILURE)


def _delete_account(user: str) -> str:
    """Delete a user's account."""
    ran("delete_account", user=user)
    return f"deleted {user}"


def _transfer(ctx: RunContext[None], to: str, cents: int) -> str:
    """Move money to an account, after a person approves it."""
    if not ctx.tool_call_approved:
        raise ApprovalRequired()
    ran("transfer", to=to, cents=cents)
    return f"sent {cents} cents to {to}"


def native_tools() -> list[Tool[None]]:
    """The same tools, written as pydantic-ai tools."""
    return [
        Tool(_add, name="add"),
        Tool(_connect, name="connect"),
        Tool(_refund, name="refund"),
        Tool(_delete_account, name="delete_account"),
        Tool(_transfer, name="transfer", takes_ctx=True),
    ]


def _model(case: Case, seen: list[str]) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(message, ModelResponse) for message in messages):
            return ModelResponse(parts=[ToolCallPart(case.tool, case.arguments, tool_call_id="call-1")])
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        seen.append("\n".join(p.model_response_str() for p in last.parts if isinstance(p, ToolReturnPart)))
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


async def run_case(case: Case, *, through_scopetool: bool) -> str:
    """Run one case through a full agent loop (two runs for an input request); its table cell."""
    seen: list[str] = []
    model = _model(case, seen)
    if through_scopetool:
        agent: Agent[None, str | DeferredToolRequests] = Agent(
            model, toolsets=[ScopetoolToolset(registry())], output_type=[str, DeferredToolRequests]
        )
    else:
        agent = Agent(model, tools=native_tools(), output_type=[str, DeferredToolRequests])
    try:
        result = await agent.run("go")
        if isinstance(result.output, DeferredToolRequests):
            requests = result.output
            answers = (
                answer_requests(requests, {"call-1": True})
                if through_scopetool
                else DeferredToolResults(approvals={"call-1": True})
            )
            await agent.run(message_history=result.all_messages(), deferred_tool_results=answers)
    except Exception as error:
        return outcome(None, error)
    return outcome(seen[0] if seen else None)


async def hostile_rows_async() -> list[tuple[str, str, str]]:
    """Every case, native then through scopetool."""
    return [
        (case.name, await run_case(case, through_scopetool=False), await run_case(case, through_scopetool=True))
        for case in CASES
    ]


def hostile_rows() -> list[tuple[str, str, str]]:
    """(case, what the native tool did and the model saw, the same through scopetool)."""
    import asyncio

    return asyncio.run(hostile_rows_async())


def overhead_cases() -> list[tuple[str, Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]]:
    """(label, one native tool call, the same call through scopetool), each through `ToolManager.handle_call`."""

    def manager(toolset: Any) -> ToolManager[None]:
        ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), run_id="run-1", conversation_id="conv-1")
        return ToolManager(toolset=toolset, ctx=ctx)  # as the agent graph makes one for a run step

    native_set: FunctionToolset[None] = FunctionToolset([Tool(_quiet_add, name="add")])
    scopetool_set = ScopetoolToolset(Registry(tool(name="add", effect=Effect.SAFE)(_quiet_add)))
    prepared: dict[str, ToolManager[None]] = {}
    call = ToolCallPart("add", '{"a": 2, "b": 3}', tool_call_id="call-1")

    async def native() -> object:
        tm = prepared.get("native") or await _prepare(prepared, "native", manager(native_set))
        return await tm.handle_call(call)

    async def through() -> object:
        tm = prepared.get("scopetool") or await _prepare(prepared, "scopetool", manager(scopetool_set))
        return await tm.handle_call(call)

    arguments = call.args
    assert isinstance(arguments, str)
    native_validator = Tool(_quiet_add, name="add").function_schema.validator

    async def native_validation() -> object:
        return native_validator.validate_json(arguments)

    validation_ctx = RunContext(
        deps=None, model=TestModel(), usage=RunUsage(), conversation_id="conv-1", tool_call_id="call-1"
    )

    async def scopetool_validation() -> object:
        tm = prepared.get("scopetool") or await _prepare(prepared, "scopetool", manager(scopetool_set))
        assert tm.tools is not None
        tool = tm.tools["add"]
        assert tool.args_validator_func is not None
        validated = tool.args_validator.validate_json(arguments)
        tool.args_validator_func(validation_ctx, **validated)  # where scopetool admits the call, once
        return validated

    return [
        ("add(2, 3): one valid call", native, through),
        ("add(2, 3): the argument validation alone", native_validation, scopetool_validation),
    ]


def _quiet_add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def _prepare(cache: dict[str, ToolManager[None]], label: str, tm: ToolManager[None]) -> ToolManager[None]:
    assert tm.ctx is not None
    cache[label] = await tm.for_run_step(tm.ctx)
    return cache[label]
