"""scopetool tools in a pydantic-ai agent, offline: a strict boundary inside pydantic-ai's own loop.

The model (a `FunctionModel` standing in for an LLM) first sends ``"5"`` for an integer: scopetool
rejects it and pydantic-ai asks the model to retry with scopetool's message. The corrected call asks
for a person's approval, which pydantic-ai defers; the answer resumes the same call.

Run it with ``pip install 'scopetool[pydantic-ai]'`` then ``python examples/pydantic_ai_toolset.py``.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from scopetool import Definition, Effect, InputDecoder, InputRequest, Invocation, Output, Registry, Result, Signature
from scopetool.integrations.pydantic_ai import ScopetoolToolset, answer_requests, input_requests


class Refund(BaseModel):
    """Refund part of an order."""

    order_id: str
    cents: int


class RefundTool:
    """Asks a person before it refunds; the approved call resumes with the same idempotency key."""

    signature = Signature(Refund, str)

    def definition(self) -> Definition:
        return self.signature.definition("refund", "Refund part of an order.", effect=Effect.IDEMPOTENT)

    def input_validator(self) -> InputDecoder[Refund]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        refund = self.signature.decode(invocation)
        if invocation.continuation is None:
            prompt = f"Refund {refund.cents} cents on {refund.order_id}?"
            return Result(input_request=InputRequest(prompt=prompt, response_schema={"type": "boolean"}))
        if invocation.continuation.response is not True:
            return Result(output=Output.from_text("the refund was not approved"))
        return Result(output=self.signature.encode(f"refunded {refund.cents} cents on {refund.order_id}"))


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The stand-in LLM: a coerced value first, then the corrected call, then a reply."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    returns = [part for part in last.parts if isinstance(part, ToolReturnPart)]
    for part in returns:
        print(f"the model is shown ({part.outcome}): {part.model_response_str()}")
    if not returns:
        return ModelResponse(parts=[ToolCallPart("refund", '{"order_id": "SO-88", "cents": "1500"}')])
    if returns[0].outcome == "retried":
        return ModelResponse(parts=[ToolCallPart("refund", '{"order_id": "SO-88", "cents": 1500}', tool_call_id="c2")])
    return ModelResponse(parts=[TextPart("Your refund is on its way.")])


async def main() -> None:
    """Run the agent until it asks for approval, answer, and run it again."""
    agent = Agent(
        FunctionModel(model),
        toolsets=[ScopetoolToolset(Registry(RefundTool()))],
        output_type=[str, DeferredToolRequests],
    )
    first = await agent.run("Refund 15 euros on SO-88.")
    assert isinstance(first.output, DeferredToolRequests)
    for call_id, request in input_requests(first.output).items():
        print(f"asking a person about {call_id}: {request.prompt}")
    answers = answer_requests(first.output, {"c2": True})
    final = await agent.run(message_history=first.all_messages(), deferred_tool_results=answers)
    print("agent:", final.output)


if __name__ == "__main__":
    asyncio.run(main())
