"""OpenAI Agents SDK: its native `function_tool`s and the same tools through scopetool, on the hostile cases.

Each case is one `Runner.run` on the SDK's own `ScriptedModel`, which sends the case's call and then
records the input of the next model call: the ``function_call_output`` it shows is what the model
saw. The native input request is the SDK's ``needs_approval`` (the run is interrupted, approved on its
`RunState` and run again); scopetool's is answered by the ``answer`` function and resumes the same
call. The overhead cases time one call of each `FunctionTool`'s ``on_invoke_tool`` (the SDK's own
argument parsing, validation and failure handling for the native tool), not a whole run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from agents import Agent, FunctionTool, RunConfig, Runner, function_tool
from agents.function_schema import function_schema
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

from scopetool import Effect, InputRequest, Registry, Request, tool
from scopetool.integrations.openai_agents import function_tools
from scopetool.providers import openai_responses
from scopetool.providers._common import repair_nulls

from ._cases import CASES, CONNECT_ERROR, REFUND_FAILURE, Case, outcome, ran, registry

FRAMEWORK = "OpenAI Agents SDK"
NO_TRACING = RunConfig(tracing_disabled=True)


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran("add", a=a, b=b)
    return a + b


@function_tool
def connect() -> str:
    """Open a connection to the database."""
    ran("connect")
    raise RuntimeError(CONNECT_ERROR)


@function_tool
def refund(order: str) -> str:
    """Refund an order."""
    ran("refund", order=order)
    raise ValueError(REFUND_FAILURE)  # the SDK shows the model an error's text: its way to fail a call


@function_tool
def delete_account(user: str) -> str:
    """Delete a user's account."""
    ran("delete_account", user=user)
    return f"deleted {user}"


@function_tool(needs_approval=True)
def transfer(to: str, cents: int) -> str:
    """Move money to an account, after a person approves it."""
    ran("transfer", to=to, cents=cents)
    return f"sent {cents} cents to {to}"


def native_tools() -> list[FunctionTool]:
    """The same tools, written as the SDK's function tools."""
    return [add, connect, refund, delete_account, transfer]


async def approve(request: InputRequest, context: ToolContext[Any]) -> bool:
    """The person who answers: approves, a little later."""
    await asyncio.sleep(0)
    return True


async def run_case(case: Case, *, through_scopetool: bool) -> str:
    """Run one case through a full `Runner.run` loop (interrupted and resumed for an approval); its cell."""
    model = ScriptedModel([[function_call(case.tool, case.arguments, call_id="call-1")], [assistant_message("done")]])
    tools = function_tools(registry(), answer=approve) if through_scopetool else native_tools()
    agent = Agent(name="cases", model=model, tools=list(tools))
    try:
        result = await Runner.run(agent, "go", run_config=NO_TRACING)
        if result.interruptions:
            state = result.to_state()
            for item in result.interruptions:
                state.approve(item)
            await Runner.run(agent, state, run_config=NO_TRACING)
    except Exception as error:
        return outcome(None, error)
    seen = [item["output"] for item in model.calls[-1].input if item.get("type") == "function_call_output"]
    return outcome(seen[0] if seen and len(model.calls) > 1 else None)


async def hostile_rows_async() -> list[tuple[str, str, str]]:
    """Every case, native then through scopetool."""
    return [
        (case.name, await run_case(case, through_scopetool=False), await run_case(case, through_scopetool=True))
        for case in CASES
    ]


def hostile_rows() -> list[tuple[str, str, str]]:
    """(case, what the native tool did and the model saw, the same through scopetool)."""
    return asyncio.run(hostile_rows_async())


def overhead_cases() -> list[tuple[str, Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]]:
    """(label, one native tool call, the same call through scopetool), each through ``on_invoke_tool``."""

    def native_add_function(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    native_add = function_tool(native_add_function, name_override="add")

    @tool(name="add", effect=Effect.SAFE)
    def quiet_add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    (through_add,) = function_tools(Registry(quiet_add))
    arguments = '{"a": 2, "b": 3}'
    context = ToolContext(context=None, tool_name="add", tool_call_id="call-1", tool_arguments=arguments)

    async def native() -> object:
        return await native_add.on_invoke_tool(context, arguments)

    async def through() -> object:
        return await through_add.on_invoke_tool(context, arguments)

    schema = function_schema(native_add_function)
    export = openai_responses.export_tools(Registry(quiet_add), strict=True, output_schema=False)
    contract = Registry(quiet_add).resolve("add")
    assert contract is not None

    async def native_validation() -> object:
        return schema.params_pydantic_model(**json.loads(arguments))

    async def scopetool_validation() -> object:
        return contract.contract.prepare(Request(name="add", arguments=repair_nulls(arguments, export, "add")))

    return [
        ("add(2, 3): one valid call", native, through),
        ("add(2, 3): the argument validation alone", native_validation, scopetool_validation),
    ]
