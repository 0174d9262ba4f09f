"""CallContext tools in the frameworks' own loops: LangGraph (interrupt) and pydantic-ai (deferred tools)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("pydantic_ai")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from scopetool import CallContext, Registry, tool
from scopetool.integrations.langchain import langchain_tools
from scopetool.integrations.pydantic_ai import ScopetoolToolset, answer_requests, input_requests


@dataclass
class Shop:
    """The application's dependency: the refunds made, and the clerk who makes them."""

    clerk: str
    refunds: list[str] = field(default_factory=list)


@tool(approval=lambda order: f"Refund {order}?")
def refund(ctx: CallContext[Shop], order: str) -> str:
    """Refund an order once a person approves it."""
    ctx.deps.refunds.append(order)
    return f"{ctx.deps.clerk} refunded {order}"


@tool(approval=True)
async def note(ctx: CallContext[Shop], order: str) -> str:
    """Add a note a person writes to an order, once they approve it."""
    text = ctx.ask(f"The note for {order}?", str)
    return f"{ctx.deps.clerk} noted {text!r} on {order}"


REFUSED = 'error: tool "refund" was not run: approval was declined'


def registry(shop: Shop) -> Registry:
    return Registry(refund, note, deps=shop)


# -- LangGraph ---------------------------------------------------------------------------------------


class Graph:
    """A LangGraph agent: a fake chat model node, ``tools_condition`` and a ``ToolNode``, with a checkpointer."""

    def __init__(self, shop: Shop, *replies: AIMessage) -> None:
        self.model = GenericFakeChatModel(messages=iter(replies))
        self.seen: list[list[BaseMessage]] = []
        builder = StateGraph(MessagesState)
        builder.add_node("agent", self.agent)
        builder.add_node("tools", ToolNode(langchain_tools(registry(shop))))
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", tools_condition)
        builder.add_edge("tools", "agent")
        self.graph: Any = builder.compile(checkpointer=InMemorySaver())
        self.config: Any = {"configurable": {"thread_id": "t1"}}

    def agent(self, state: MessagesState) -> dict[str, list[BaseMessage]]:
        self.seen.append(list(state["messages"]))
        return {"messages": [self.model.invoke(state["messages"])]}

    async def run(self, start: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.graph.ainvoke(start, self.config)
        return result

    def tool_messages(self) -> dict[str, str]:
        return {m.tool_call_id: str(m.content) for m in self.seen[-1] if isinstance(m, ToolMessage)}


def lc_call(name: str, order: str, call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": {"order": order}, "id": call_id, "type": "tool_call"}])


async def test_langgraph_interrupts_for_the_approval_and_runs_the_tool_once_resumed_with_yes() -> None:
    """The graph stops with the approval prompt; Command(resume=True) runs the tool once, with the deps."""
    shop = Shop("ada")
    graph = Graph(shop, lc_call("refund", "SO-1", "r1"), AIMessage("done"))
    paused = await graph.run({"messages": [HumanMessage("go")]})
    (pending,) = paused["__interrupt__"]
    assert pending.value == {"tool": "refund", "prompt": "Refund SO-1?"}
    assert shop.refunds == []
    resumed = await graph.run(Command(resume=True))
    assert resumed["messages"][-1].content == "done"
    assert graph.tool_messages() == {"r1": "ada refunded SO-1"}
    assert shop.refunds == ["SO-1"]


async def test_langgraph_shows_the_model_the_fixed_rejection_when_the_answer_is_no() -> None:
    """Resumed with False, the model sees the fixed refusal and the tool never ran."""
    shop = Shop("ada")
    graph = Graph(shop, lc_call("refund", "SO-2", "r2"), AIMessage("done"))
    await graph.run({"messages": [HumanMessage("go")]})
    await graph.run(Command(resume=False))
    assert graph.tool_messages() == {"r2": REFUSED}
    assert shop.refunds == []


async def test_langgraph_asks_the_approval_then_the_functions_question() -> None:
    """Two interrupts of one call: the default approval prompt, then the function's question."""
    graph = Graph(Shop("grace"), lc_call("note", "SO-3", "n1"), AIMessage("done"))
    first = await graph.run({"messages": [HumanMessage("go")]})
    assert first["__interrupt__"][0].value["prompt"].startswith('Allow the tool "note"')
    second = await graph.run(Command(resume=True))
    assert second["__interrupt__"][0].value["prompt"] == "The note for SO-3?"
    await graph.run(Command(resume="fragile"))
    assert graph.tool_messages() == {"n1": "grace noted 'fragile' on SO-3"}


# -- pydantic-ai -------------------------------------------------------------------------------------


class Script:
    """A FunctionModel that sends one call, then says done; it records the tool returns it is shown."""

    def __init__(self, call: ToolCallPart) -> None:
        self.call: ToolCallPart | None = call
        self.seen: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        self.seen += [p.model_response_str() for p in last.parts if isinstance(p, ToolReturnPart)]
        call, self.call = self.call, None
        return ModelResponse(parts=[call] if call is not None else [TextPart("done")])


@pytest.mark.parametrize(("answer", "shown", "refunds"), [(True, "ada refunded SO-4", ["SO-4"]), (False, None, [])])
async def test_pydantic_ai_defers_the_approval_and_the_answer_decides(
    answer: bool, shown: str | None, refunds: list[str]
) -> None:
    """The approval is a deferred tool request; answered, the run resumes the same call (yes runs it once)."""
    shop = Shop("ada")
    script = Script(ToolCallPart("refund", '{"order": "SO-4"}', tool_call_id="p1"))
    agent = Agent(
        FunctionModel(script), toolsets=[ScopetoolToolset(registry(shop))], output_type=[str, DeferredToolRequests]
    )
    first = await agent.run("go")
    assert isinstance(first.output, DeferredToolRequests)
    assert input_requests(first.output)["p1"].prompt == "Refund SO-4?" and shop.refunds == []
    second = await agent.run(
        message_history=first.all_messages(), deferred_tool_results=answer_requests(first.output, {"p1": answer})
    )
    assert second.output == "done"
    assert shop.refunds == refunds
    if shown is not None:
        assert script.seen == [shown]
    else:
        assert [json.loads(seen) for seen in script.seen] == [{"error": REFUSED}]  # ToolFailed, as pydantic-ai shows it
