"""scopetool tools in a LangGraph agent loop (fake chat model, ``ToolNode``, checkpointer); LangChain tools wrapped."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from integration_tools import RAN, SECRET, registry
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers.openai_tools import parse_tool_call
from langchain_core.tools import ToolException
from langchain_core.tools import tool as langchain_tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from scopetool import (
    Definition,
    Effect,
    InputRequest,
    InvalidInvocationError,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    classify_input_rejection,
)
from scopetool.integrations.langchain import (
    BAD_ANSWER,
    MAX_INPUT_ROUNDS,
    NO_INPUT,
    NOT_JSON,
    TOO_MANY,
    LangChainTool,
    from_langchain,
    langchain_tools,
    raw_arguments,
    raw_arguments_sync,
    send_tool_calls,
)
from scopetool.providers import ToolCall, outcome_output, run_call


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    RAN.clear()
    yield
    RAN.clear()


PROBLEM = "invalid arguments for tool 'add' (1 problem):"


def call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A tool call as a chat model's parser hands it to LangChain."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def openai_message(*calls: tuple[str, str, str]) -> AIMessage:
    """An AIMessage as an OpenAI-style chat model builds it: raw calls kept, each parsed by LangChain's parser."""
    raw = [{"id": i, "function": {"name": n, "arguments": a}, "type": "function"} for n, a, i in calls]
    parsed = [parse_tool_call(r, return_id=True) for r in raw]
    return AIMessage("", additional_kwargs={"tool_calls": raw}, tool_calls=[p for p in parsed if p is not None])


class Loop:
    """A LangGraph agent: a fake chat model node, ``tools_condition`` and a ``ToolNode``, with a checkpointer.

    `seen` holds the messages the model was given at each of its turns.
    """

    def __init__(self, *replies: AIMessage, tools: list[Any] | None = None, send: bool = False, **node: Any) -> None:
        self.model = GenericFakeChatModel(messages=iter(replies))
        self.seen: list[list[BaseMessage]] = []
        builder = StateGraph(MessagesState)
        builder.add_node("agent", self.agent)
        builder.add_node("tools", ToolNode(langchain_tools(registry()) if tools is None else tools, **node))
        builder.add_edge(START, "agent")
        if send:
            builder.add_conditional_edges("agent", send_tool_calls(), ["tools", END])
        else:
            builder.add_conditional_edges("agent", tools_condition)
        builder.add_edge("tools", "agent")
        self.graph: CompiledStateGraph[Any] = builder.compile(checkpointer=InMemorySaver())
        self.config: Any = {"configurable": {"thread_id": "t1"}}

    def agent(self, state: MessagesState) -> dict[str, list[BaseMessage]]:
        self.seen.append(list(state["messages"]))
        return {"messages": [self.model.invoke(state["messages"])]}

    async def run(self, start: Any = None) -> dict[str, Any]:
        begin = {"messages": [HumanMessage("go")]} if start is None else start
        result: dict[str, Any] = await self.graph.ainvoke(begin, self.config)
        return result

    def answers(self, turn: int = -1) -> dict[str, ToolMessage]:
        """The tool messages the model saw at a turn, by call id."""
        return {m.tool_call_id: m for m in self.seen[turn] if isinstance(m, ToolMessage)}


async def test_every_hostile_call_is_answered_to_the_model_and_nothing_runs_that_should_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Seven calls in one turn: the next turn sees each outcome as a tool message, no secret; the graph goes on."""
    calls = openai_message(
        ("add", '{"a": 2, "b": 3}', "valid"),
        ("add", '{"a": 1, "b": 3, "a": 40}', "duplicate"),
        ("add", '{"a": 2, "b": 3, "c": 4}', "unknown"),
        ("add", '{"a": "5", "b": 3}', "coerced"),
        ("leaky", '{"account": "ada"}', "secret"),
        ("rate", '{"base": "EUR", "quote": "JPY"}', "failure"),
        ("transfer", '{"cents": 100}', "guard"),
    )
    loop = Loop(calls, AIMessage("done"))
    with caplog.at_level(logging.ERROR, logger="scopetool.integrations.langchain"):
        result = await loop.run()

    (logged,) = caplog.records  # only the unexpected error is logged, with its traceback, for the operator
    assert logged.exc_info is not None and SECRET in str(logged.exc_info[1])
    assert result["messages"][-1].content == "done"  # the graph reached the model's next turn
    seen = loop.answers()
    assert {key: (m.status, m.content) for key, m in seen.items()} == {
        "valid": ("success", "5"),
        "duplicate": ("success", "43"),  # the parser kept the last "a": the repetition never reached the tool
        "unknown": ("error", f"{PROBLEM}\n- $.c: unknown field; expected one of 'a', 'b'"),
        "coerced": ("error", f"{PROBLEM}\n- $.a: Input should be a valid integer (got a string)"),
        "secret": ("error", 'error: tool "leaky" failed'),
        "failure": ("error", "no rate for EUR/JPY"),
        "guard": ("error", 'error: tool "transfer" is not authorized'),
    }  # fmt: skip
    assert sorted(RAN) == [
        "add 2 3",
        "add 40 3",
        "leaky ada",
        "rate EUR/JPY",
    ]  # no transfer, no coerced or unknown call
    assert SECRET not in json.dumps([m.model_dump() for m in result["messages"]], default=str)


async def test_with_raw_arguments_a_repeated_member_is_rejected_from_the_text_the_model_wrote() -> None:
    """``awrap_tool_call=raw_arguments``: the kept raw text is admitted, so ``"a"`` twice is refused."""
    calls = openai_message(("add", '{"a": 1, "b": 3, "a": 40}', "duplicate"), ("add", '{"a": 2,  "b": 3}', "valid"))
    loop = Loop(calls, AIMessage("done"), awrap_tool_call=raw_arguments)
    await loop.run()
    seen = loop.answers()
    assert seen["duplicate"].status == "error"
    assert "same member name twice" in str(seen["duplicate"].content)
    assert seen["valid"].content == "5"
    assert RAN == ["add 2 3"]


def test_raw_arguments_in_a_synchronous_graph_and_text_that_does_not_match_is_not_used() -> None:
    """``raw_arguments_sync`` admits the raw text; a raw text that disagrees with the parsed call is ignored."""
    calls = openai_message(("add", '{"a": 1, "a": 2, "b": 3}', "duplicate"), ("add", '{"a": 2, "b": 3}', "changed"))
    calls.tool_calls[1]["args"] = {"a": 5, "b": 3}  # a wrapper or the app changed the call after parsing
    calls.additional_kwargs["tool_calls"].append({"id": "other", "function": None})
    loop = Loop(calls, AIMessage("done"), wrap_tool_call=raw_arguments_sync)
    loop.graph.invoke({"messages": [HumanMessage("go")]}, loop.config)
    seen = loop.answers()
    assert seen["duplicate"].status == "error" and seen["changed"].content == "8"
    assert RAN == ["add 5 3"]


async def test_an_input_request_interrupts_the_graph_and_the_answer_resumes_the_same_call() -> None:
    """The refund asks: the graph interrupts with prompt and schema; Command(resume=True) runs it with the answer."""
    loop = Loop(AIMessage("", tool_calls=[call("refund", {"order": "SO-1"}, "r1")]), AIMessage("done"))
    paused = await loop.run()

    (pending,) = paused["__interrupt__"]
    assert pending.value == {"tool": "refund", "prompt": "Refund SO-1?"}
    assert pending.response_schema == {"type": "boolean"}
    assert RAN == ["refund SO-1 asked"] and len(loop.seen) == 1  # nothing approved, the model not called again

    resumed = await loop.run(Command(resume=True))
    assert resumed["messages"][-1].content == "done"
    assert loop.answers()["r1"].content == "refunded SO-1"
    assert RAN == ["refund SO-1 asked", "refund SO-1 asked", "refund SO-1 approved"]  # asking again is no effect


class Keyed:
    """An idempotent tool that records the key of every attempt and asks for approval when told to."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, bool, str | None]] = []

    def definition(self) -> Definition:
        return Definition(
            name="charge",
            description="Charge once, asking first when told to.",
            input_schema={
                "type": "object",
                "properties": {"ask": {"type": "boolean"}},
                "required": ["ask"],
                "additionalProperties": False,
            },
            effect=Effect.IDEMPOTENT,
        )

    async def call(self, invocation: Invocation) -> Result:
        ask = json.loads(invocation.arguments)["ask"]
        self.keys.append(("ask" if ask else "plain", invocation.continuation is None, invocation.idempotency_key))
        if ask and invocation.continuation is None:
            return Result(input_request=InputRequest(prompt="Charge?", response_schema={"type": "boolean"}))
        return Result(output=Output.from_text("charged"))


async def test_a_resumed_call_carries_the_key_of_its_first_attempt_and_each_call_has_its_own() -> None:
    """Through interrupt and resume, each call's key stays the same; calls, threads and secrets part keys."""
    keyed = Keyed()
    calls = [call("charge", {"ask": True}, "c1"), call("charge", {"ask": False}, "c2")]
    loop = Loop(
        AIMessage("", tool_calls=calls), AIMessage("done"), tools=langchain_tools(Registry(keyed), key_secret=b"s")
    )
    await loop.run()
    await loop.run(Command(resume=True))
    assert {k: m.content for k, m in loop.answers().items()} == {"c1": "charged", "c2": "charged"}
    asked = [key for kind, _, key in keyed.keys if kind == "ask"]
    plain = {key for kind, _, key in keyed.keys if kind == "plain"}
    assert [first for kind, first, _ in keyed.keys if kind == "ask"] == [True, True, False]  # asked, asked, approved
    assert len(set(asked)) == 1 and asked[0] is not None  # the first attempt's key, on every attempt
    assert len(plain) == 1 and None not in plain and plain.isdisjoint(asked)  # rerun on resume: same key, its own

    def first_key(secret: bytes, thread: str) -> str | None:
        other = Keyed()
        again = Loop(
            AIMessage("", tool_calls=calls[1:]),
            AIMessage("done"),
            tools=langchain_tools(Registry(other), key_secret=secret),
        )
        again.config = {"configurable": {"thread_id": thread}}
        again.graph.invoke({"messages": [HumanMessage("go")]}, again.config)
        return other.keys[0][2]

    assert {first_key(b"s", "t1")} == plain  # the same secret, thread and call id: the same key, in any process
    assert first_key(b"s", "t2") not in plain and first_key(b"other", "t1") not in plain


@pytest.mark.parametrize(("send", "runs"), [(False, 2), (True, 1)])
async def test_on_resume_only_the_call_that_asked_runs_again_when_each_call_is_sent_as_its_own_task(
    send: bool, runs: int
) -> None:
    """Resumed, tools_condition runs every call of the turn again; send_tool_calls runs only the refund again."""
    calls = [call("add", {"a": 2, "b": 3}, "sum"), call("refund", {"order": "SO-9"}, "r9")]
    loop = Loop(AIMessage("", tool_calls=calls), AIMessage("done"), send=send)
    await loop.run()
    resumed = await loop.run(Command(resume=True))
    assert resumed["messages"][-1].content == "done"
    assert {k: m.content for k, m in loop.answers().items()} == {"sum": "5", "r9": "refunded SO-9"}
    assert RAN.count("add 2 3") == runs and RAN.count("refund SO-9 approved") == 1


async def test_an_answer_outside_the_response_schema_ends_the_call_with_an_error_message() -> None:
    """Resuming with "yes" where a boolean is asked for: the model is told the answer is invalid; no refund."""
    loop = Loop(AIMessage("", tool_calls=[call("refund", {"order": "SO-2"}, "r2")]), AIMessage("done"))
    await loop.run()
    await loop.run(Command(resume="yes"))
    message = loop.answers()["r2"]
    assert (message.status, message.content) == ("error", BAD_ANSWER.format(name="refund"))
    assert "refund SO-2 approved" not in RAN


async def test_a_tool_that_keeps_asking_ends_with_an_error_message() -> None:
    """A tool asking for input more than MAX_INPUT_ROUNDS times in one call is ended."""

    class Nagging:
        def definition(self) -> Definition:
            return Definition(name="nag", description="Always asks.", input_schema={"type": "object"})

        async def call(self, invocation: Invocation) -> Result:
            return Result(input_request=InputRequest(prompt="again?", response_schema={"type": "boolean"}))

    loop = Loop(
        AIMessage("", tool_calls=[call("nag", {}, "n")]), AIMessage("done"), tools=langchain_tools(Registry(Nagging()))
    )
    result = await loop.run()
    for _ in range(MAX_INPUT_ROUNDS):  # each request is asked; the one after the last round is not
        assert "__interrupt__" in result
        result = await loop.run(Command(resume=True))
    assert result["messages"][-1].content == "done"
    assert loop.answers()["n"].content == TOO_MANY.format(name="nag")


def test_the_synchronous_graph_runs_the_same_admission() -> None:
    """``graph.invoke`` (ToolNode's thread pool) admits and answers exactly as the async loop does."""
    calls = [call("add", {"a": 2, "b": 3}, "ok"), call("add", {"a": "2", "b": 3}, "bad")]
    loop = Loop(AIMessage("", tool_calls=calls), AIMessage("done"))
    loop.graph.invoke({"messages": [HumanMessage("go")]}, loop.config)
    seen = loop.answers()
    assert seen["ok"].content == "5" and seen["bad"].status == "error"
    assert RAN == ["add 2 3"]


async def test_outside_a_graph_a_call_is_answered_and_an_input_request_cannot_be_made() -> None:
    """``tool.ainvoke`` with no graph: results as text; an input request answers that input cannot be asked here."""
    tools = {t.name: t for t in langchain_tools(registry())}
    assert await tools["add"].ainvoke({"a": 2, "b": 3}) == "5"
    assert await tools["refund"].ainvoke({"order": "SO-3"}) == NO_INPUT.format(name="refund")
    message = await tools["add"].ainvoke(call("add", {"a": float("nan"), "b": 1}, "nan"))
    assert (message.status, message.content) == ("error", NOT_JSON.format(name="add"))
    assert RAN == ["add 2 3", "refund SO-3 asked"]


async def test_each_tool_shows_the_model_the_contract_schema_and_errors_are_logged_not_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``args_schema`` is the contract's input schema; an unexpected error goes to the log with its traceback."""
    reg = registry()
    tools = {t.name: t for t in langchain_tools(reg)}
    assert sorted(tools) == ["add", "leaky", "rate", "refund", "transfer"]
    binding = reg.resolve("add")
    assert binding is not None
    assert tools["add"].args_schema == binding.contract.definition().input_schema
    shown = convert_to_openai_tool(tools["add"])["function"]  # what a chat model's bind_tools sends
    assert shown["parameters"] == binding.contract.definition().input_schema
    assert shown["description"] == "Add two integers."
    with caplog.at_level(logging.ERROR, logger="scopetool.integrations.langchain"):
        assert await tools["leaky"].ainvoke({"account": "x"}) == 'error: tool "leaky" failed'
        assert await tools["rate"].ainvoke({"base": "A", "quote": "B"}) == "no rate for A/B"
    (record,) = caplog.records  # the Failure was explained to the model: not logged
    assert record.exc_info is not None and SECRET in str(record.exc_info[1])
    with pytest.raises(TypeError, match="needs a Registry"):
        langchain_tools([])  # type: ignore[arg-type]


@langchain_tool
def multiply(x: int, y: int) -> int:
    """Multiply two integers."""
    return x * y


@langchain_tool
def lookup(key: str) -> str:
    """Look a key up."""
    if key == "missing":
        raise ToolException(f"no entry {key}")
    raise KeyError(SECRET)


lookup.handle_tool_error = True


async def test_a_langchain_tool_wrapped_as_a_scopetool_tool_has_its_schema_enforced() -> None:
    """from_langchain: the schema LangChain shows the model, closed, is enforced before the tool runs."""
    wrapped = Registry(from_langchain(multiply, effect=Effect.SAFE), from_langchain(lookup))
    binding = wrapped.resolve("multiply")
    assert binding is not None
    schema = binding.contract.definition().input_schema
    assert schema["additionalProperties"] is False and sorted(schema["required"]) == ["x", "y"]
    assert binding.contract.definition().effect is Effect.SAFE

    async def outcome(name: str, arguments: str) -> Result | BaseException:
        return await run_call(wrapped, ToolCall("c", Request(name, arguments)))

    done = await outcome("multiply", '{"x": 6, "y": 7}')
    assert isinstance(done, Result) and done.output.text() == "42"
    for bad, problem in (
        ('{"x": "6", "y": 7}', "$.x"),
        ('{"x": 6, "y": 7, "z": 1}', "z"),
        ('{"x": 6, "x": 1, "y": 7}', "same member name twice"),
    ):
        refused = await outcome("multiply", bad)
        assert isinstance(refused, InvalidInvocationError)
        rejection = classify_input_rejection(refused)
        assert rejection is not None and problem in rejection.message
    failed = await outcome("lookup", '{"key": "missing"}')
    assert outcome_output("lookup", failed)[0].text() == "no entry missing"
    crashed = await outcome("lookup", '{"key": "other"}')
    assert isinstance(crashed, KeyError)
    assert outcome_output("lookup", crashed)[0].text() == 'error: tool "lookup" failed'
    assert isinstance(from_langchain(multiply), LangChainTool)
    with pytest.raises(TypeError, match="BaseTool"):
        from_langchain(len)  # type: ignore[arg-type]


def test_the_integration_imports_nothing_into_scopetool() -> None:
    """``import scopetool`` imports neither LangChain nor LangGraph (checked in a fresh interpreter)."""
    import subprocess
    import sys

    code = (
        "import sys, scopetool, scopetool.integrations; "
        "print(sorted(m for m in sys.modules if m.startswith(('langchain', 'langgraph'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_import_without_langchain_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the integration without langchain-core says how to install it."""
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "langchain_core.messages", None)
    monkeypatch.delitem(sys.modules, "scopetool.integrations.langchain")
    with pytest.raises(ImportError, match=r"scopetool\[langchain\]"):
        importlib.import_module("scopetool.integrations.langchain")


def test_the_raw_text_is_found_only_for_its_own_call_and_only_when_it_is_json() -> None:
    """The raw-text lookup reads list, dict or attribute states, skips other messages, ignores text not JSON."""
    from types import SimpleNamespace

    from scopetool.integrations import langchain as integration

    kept = openai_message(("add", '{"a": 1, "a": 2}', "c1"))
    older = AIMessage("", tool_calls=[call("add", {"a": 1}, "c0")])  # parsed only: no raw text kept
    messages = [older, kept, HumanMessage("next")]
    assert integration._raw_text(messages, "c1") == '{"a": 1, "a": 2}'
    assert integration._raw_text({"messages": messages}, "c1") == '{"a": 1, "a": 2}'
    assert integration._raw_text(SimpleNamespace(messages=messages), "c1") == '{"a": 1, "a": 2}'
    assert integration._raw_text(messages, "c0") is None
    assert integration._raw_text(messages, None) is None
    assert integration._raw_text(object(), "c1") is None
    token = integration._RAW.set("{not json")
    try:
        assert integration._raw_for('{"a": 1}') is None
    finally:
        integration._RAW.reset(token)
