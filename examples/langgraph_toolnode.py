"""A LangGraph agent whose tools are scopetool tools: a ToolNode admits every call with Contract.prepare.

The chat model is LangChain's offline fake, replying as an OpenAI-style model would (the raw argument
text kept beside the parsed call), so this runs with no network and no key. The model asks for a rate
three times (once well, once with a string for a number, once with a field that does not exist) and
asks for a refund, which needs a person's approval: the graph stops at LangGraph's interrupt, and the
answer resumes the same call. Each call is a task of its own (`send_tool_calls`), so resuming runs
only the refund again. Run it with ``python examples/langgraph_toolnode.py``; it needs
``pip install 'scopetool[langchain]'``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers.openai_tools import parse_tool_call
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from scopetool import Definition, Effect, InputRequest, Invocation, Output, Registry, Result, tool
from scopetool.integrations.langchain import langchain_tools, raw_arguments, send_tool_calls

RATES = {("EUR", "USD"): 1.08}
REFUNDED: list[str] = []
CONVERSIONS: list[int] = []


@tool(effect=Effect.SAFE)
def exchange_rate(base: str, quote: str, amount: int = 1) -> float:
    """Convert an amount at today's rate.

    Args:
        base: ISO 4217 code to convert from.
        quote: ISO 4217 code to convert to.
        amount: How much to convert, in whole units.
    """
    CONVERSIONS.append(amount)
    return RATES[(base, quote)] * amount


class Refund:
    """Refunds an order once a person approves; asking changes nothing."""

    def definition(self) -> Definition:
        return Definition(
            name="refund",
            description="Refund an order (a person approves it first).",
            input_schema={
                "type": "object",
                "properties": {"order": {"type": "string", "description": "The order to refund."}},
                "required": ["order"],
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        order = json.loads(invocation.arguments)["order"]
        if invocation.continuation is None:
            return Result(input_request=InputRequest(prompt=f"Refund {order}?", response_schema={"type": "boolean"}))
        if invocation.continuation.response is not True:
            return Result(output=Output.from_text("the refund was not approved"))
        REFUNDED.append(order)
        return Result(output=Output.from_text(f"refunded {order}"))


registry = Registry(exchange_rate, Refund())


def model_reply(*calls: tuple[str, str, str]) -> AIMessage:
    """An AIMessage as an OpenAI-style chat model integration builds it from the model's tool calls."""
    raw = [{"id": i, "function": {"name": n, "arguments": a}, "type": "function"} for n, a, i in calls]
    parsed = [call for call in (parse_tool_call(r, return_id=True) for r in raw) if call is not None]
    return AIMessage("", additional_kwargs={"tool_calls": raw}, tool_calls=parsed)


model = GenericFakeChatModel(
    messages=iter(
        [
            model_reply(
                ("exchange_rate", '{"base": "EUR", "quote": "USD", "amount": 20}', "good"),
                ("exchange_rate", '{"base": "EUR", "quote": "USD", "amount": "20"}', "coerced"),
                ("exchange_rate", '{"base": "EUR", "quote": "USD", "amuont": 20}', "misspelled"),
                ("refund", '{"order": "SO-88"}', "refund"),
            ),
            AIMessage("20 EUR is 21.60 USD, and SO-88 is refunded."),
        ]
    )
)


def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
    """The model's turn: it sees every message so far, tool answers included."""
    return {"messages": [model.invoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_node("tools", ToolNode(langchain_tools(registry), awrap_tool_call=raw_arguments))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", send_tool_calls(), ["tools", END])  # one task per call
builder.add_edge("tools", "agent")
graph = builder.compile(checkpointer=InMemorySaver())  # an interrupt needs a checkpointer


async def main() -> None:
    """Run the turn, answer the approval, and print what the model was told."""
    config: Any = {"configurable": {"thread_id": "support-1"}}
    paused = await graph.ainvoke({"messages": [HumanMessage("Convert 20 EUR and refund SO-88.")]}, config)
    (pending,) = paused["__interrupt__"]
    print(f"paused: {pending.value['prompt']} (answer: {json.dumps(pending.response_schema)})")
    print(f"refunded so far: {REFUNDED}")
    done = await graph.ainvoke(Command(resume=True), config)  # later: the person approved
    for message in done["messages"]:
        if isinstance(message, ToolMessage):
            print(f"{message.tool_call_id} ({message.status}): {message.content}")
    print(f"model: {done['messages'][-1].content}")
    print(f"conversions run: {CONVERSIONS}")  # once: resuming ran only the refund again


if __name__ == "__main__":
    asyncio.run(main())
