"""LangChain / LangGraph: its native tools and the same tools through `langchain_tools`, on the hostile cases.

Each case is one LangGraph agent loop: a fake chat model node whose first reply carries the case's
call, ``tools_condition``, a ``ToolNode`` and a checkpointer. The reply is built the way an
OpenAI-style chat model integration builds it (the raw argument text kept in
``additional_kwargs["tool_calls"]``, parsed by LangChain's own ``parse_tool_call``); the cell shows
what the model was given at its next turn. The scopetool side runs the ToolNode with
``awrap_tool_call=raw_arguments``; the extra last row shows the duplicate key when a message keeps no
raw text (the arguments only as the parsed dict). An input request is answered with
``Command(resume=True)``, as LangGraph's human-in-the-loop is. The overhead cases time one tool turn
of a one-node graph (``START -> ToolNode -> END``) on the same AIMessage.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers.openai_tools import parse_tool_call
from langchain_core.tools import BaseTool, ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

from scopetool import Effect, Registry
from scopetool import tool as scopetool_tool
from scopetool.integrations.langchain import langchain_tools, raw_arguments

from ._cases import CASES, CONNECT_ERROR, REFUND_FAILURE, TRANSFER_PROMPT, Case, outcome, ran, registry

FRAMEWORK = "LangChain / LangGraph"


@tool("add")
def _add(a: int, b: int) -> int:
    """Add two integers."""
    ran("add", a=a, b=b)
    return a + b


@tool("connect")
def _connect() -> str:
    """Open a connection to the database."""
    ran("connect")
    raise RuntimeError(CONNECT_ERROR)


@tool("refund")
def _refund(order: str) -> str:
    """Refund an order."""
    ran("refund", order=order)
    raise ToolException(REFUND_FAILURE)


_refund.handle_tool_error = True  # LangChain's idiom for an error meant for the model


@tool("delete_account")
def _delete_account(user: str) -> str:
    """Delete a user's account."""
    ran("delete_account", user=user)
    return f"deleted {user}"


@tool("transfer")
def _transfer(to: str, cents: int) -> str:
    """Move money to an account, after a person approves it."""
    if interrupt(TRANSFER_PROMPT) is not True:  # LangGraph's human-in-the-loop
        return "the transfer was declined"
    ran("transfer", to=to, cents=cents)
    return f"sent {cents} cents to {to}"


def native_tools() -> list[BaseTool]:
    """The same tools, written as LangChain tools."""
    return [_add, _connect, _refund, _delete_account, _transfer]


def openai_message(name: str, arguments: str, call_id: str = "call-1", *, keep_raw: bool = True) -> AIMessage:
    """The AIMessage an OpenAI-style chat model integration makes of one tool call."""
    raw = {"id": call_id, "function": {"name": name, "arguments": arguments}, "type": "function"}
    parsed = parse_tool_call(raw, return_id=True)
    assert parsed is not None
    kept: dict[str, Any] = {"tool_calls": [raw]} if keep_raw else {}
    return AIMessage("", additional_kwargs=kept, tool_calls=[parsed])


def _agent_graph(first: AIMessage, tools: list[BaseTool], seen: list[str], **node: Any) -> Any:
    model = GenericFakeChatModel(messages=iter([first, AIMessage("done")]))

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        answers = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        if answers:
            seen.append(str(answers[-1].content))
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools, **node))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())


async def run_case(case: Case, *, through_scopetool: bool, keep_raw: bool = True) -> str:
    """Run one case through a full agent loop (resumed once for an input request); its table cell."""
    seen: list[str] = []
    first = openai_message(case.tool, case.arguments, keep_raw=keep_raw)
    if through_scopetool:
        graph = _agent_graph(first, list(langchain_tools(registry())), seen, awrap_tool_call=raw_arguments)
    else:
        graph = _agent_graph(first, native_tools(), seen)
    config: Any = {"configurable": {"thread_id": "case"}}
    try:
        result = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
        if "__interrupt__" in result:
            await graph.ainvoke(Command(resume=True), config)
    except Exception as error:
        return outcome(None, error)
    return outcome(seen[0] if seen else None)


async def hostile_rows_async() -> list[tuple[str, str, str]]:
    """Every case, native then through scopetool; then the duplicate key when no raw text is kept."""
    rows = [
        (case.name, await run_case(case, through_scopetool=False), await run_case(case, through_scopetool=True))
        for case in CASES
    ]
    (duplicate,) = (case for case in CASES if case.name == "duplicate key")
    rows.append(
        (
            "duplicate key, in a message that keeps no raw text",
            await run_case(duplicate, through_scopetool=False, keep_raw=False),
            await run_case(duplicate, through_scopetool=True, keep_raw=False),
        )
    )
    return rows


def hostile_rows() -> list[tuple[str, str, str]]:
    """(case, what the native tool did and the model saw, the same through scopetool)."""
    return asyncio.run(hostile_rows_async())


async def _quiet_add(a: int, b: int) -> int:
    """Add two integers (async on both sides: the turn, not a worker thread's hand-off, is timed)."""
    return a + b


_quiet_native_add = tool("add")(_quiet_add)


def _tool_turn(tools: list[BaseTool], **node: Any) -> Callable[[], Awaitable[object]]:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(tools, **node))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    graph = builder.compile()
    state = {"messages": [openai_message("add", '{"a": 2, "b": 3}')]}

    async def turn() -> object:
        return await graph.ainvoke(state)

    return turn


def overhead_cases() -> list[tuple[str, Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]]:
    """(label, one native tool turn, the same turn through scopetool): a ``ToolNode`` graph on one AIMessage."""
    scopetool_add = Registry(scopetool_tool(name="add", effect=Effect.SAFE)(_quiet_add))
    return [
        (
            "add(2, 3): one valid call, one ToolNode turn",
            _tool_turn([_quiet_native_add]),
            _tool_turn(list(langchain_tools(scopetool_add)), awrap_tool_call=raw_arguments),
        )
    ]
