"""scopetool tools in an OpenAI Agents SDK agent, offline: a strict boundary inside the SDK's own loop.

The model (the SDK's own `ScriptedModel`, standing in for an LLM) first sends an unknown field, which
scopetool rejects with a message for the model; the SDK would have dropped it and run the call. The
corrected call asks for approval; the ``answer`` function (a person, here a queue another task
answers) resumes the same call with the same idempotency key.

Run it with ``pip install 'scopetool[openai-agents]'`` then ``python examples/openai_agents_tools.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent, RunConfig, Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

from scopetool import Definition, Effect, Failure, FailureKind, InputRequest, Invocation, Output, Registry, Result, tool
from scopetool.integrations.openai_agents import function_tools

APPROVALS: asyncio.Queue[tuple[InputRequest, asyncio.Future[Any]]] = asyncio.Queue()
"""Input requests waiting for a person, each with the future its answer goes into."""


@tool(effect=Effect.SAFE)
def order_status(order_id: str) -> str:
    """Look an order up.

    Args:
        order_id: The order's id.
    """
    if not order_id.startswith("SO-"):
        raise Failure(kind=FailureKind.FAILED, output=f"no order {order_id}", cause=LookupError(order_id))
    return f"{order_id}: shipped"


class CancelTool:
    """Cancels an order once a person approves."""

    def definition(self) -> Definition:
        schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
        return Definition(name="cancel_order", description="Cancel an order.", input_schema=schema)

    async def call(self, invocation: Invocation) -> Result:
        if invocation.continuation is None:
            return Result(input_request=InputRequest(prompt="Cancel this order?", response_schema={"type": "boolean"}))
        text = "cancelled" if invocation.continuation.response is True else "kept"
        return Result(output=Output.from_text(f"{text} (key {str(invocation.idempotency_key)[:8]}...)"))


async def answer(request: InputRequest, context: ToolContext[Any]) -> Any:
    """Hand the request to whoever answers, and wait for the answer."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    await APPROVALS.put((request, future))
    return await future


async def person() -> None:
    """Someone reading the approvals queue: approves the one request."""
    request, future = await APPROVALS.get()
    print("asked:", request.prompt)
    future.set_result(True)


async def main() -> None:
    """One agent run: a rejected call, a Failure, and an approved call, then the reply."""
    model = ScriptedModel(
        [
            [function_call("order_status", '{"order_id": "SO-88", "verbose": true}', call_id="c1")],
            [
                function_call("order_status", '{"order_id": "88"}', call_id="c2"),
                function_call("cancel_order", '{"order_id": "SO-88"}', call_id="c3"),
            ],
            [assistant_message("Order SO-88 is cancelled.")],
        ]
    )
    tools = function_tools(Registry(order_status, CancelTool()), answer=answer)
    agent = Agent(name="support", model=model, tools=list(tools))
    helper = asyncio.create_task(person())
    result = await Runner.run(agent, "Cancel SO-88.", run_config=RunConfig(tracing_disabled=True))
    await helper
    for item in model.calls[-1].input:  # the whole conversation, as the model is last sent it
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            print(f"the model is shown ({item['call_id']}): {item['output']}")
    print("agent:", result.final_output)


if __name__ == "__main__":
    asyncio.run(main())
