"""scopetool tools inside LangChain and LangGraph, and LangChain tools admitted by a scopetool contract.

`langchain_tools(registry)` gives one LangChain `BaseTool` per tool of a `Registry`, for LangGraph's
``ToolNode``, a LangChain agent or ``tool.ainvoke`` of your own. Every call goes through the tool's
`Contract.prepare` before anything runs, and every outcome is answered to the model as a tool message:

* a result: its text (or its details' JSON);
* an input rejection, a `Failure`, a refused `Guard`: scopetool's model-facing text, as an error
  ``ToolMessage`` (``status="error"``), never an exception that ends the graph;
* any other error: the generic ``error: tool "<name>" failed``, with the error logged (with its
  traceback) on the ``scopetool.integrations.langchain`` logger, never shown to the model;
* an input request: LangGraph's ``interrupt()``. The graph stops (it needs a checkpointer), the
  application answers with ``Command(resume=answer)``, and the same call is admitted again with the
  answer as its `Continuation` (validated against the request's response schema first). Outside a
  graph run, the call ends with an error text saying that input cannot be requested there.
  LangGraph resumes a task from its start: with ``tools_condition`` the whole ``ToolNode`` is one
  task, so every other call of that turn runs again. Route with `send_tool_calls` instead: each call
  is a task of its own, and only the one that asked runs again.

Keys: each call's idempotency key (`Invocation.idempotency_key`) is minted with `CallKeys` from
the tool call's id (the ``id`` of the ``ToolCall`` LangChain runs) in the scope of the LangGraph
thread (``configurable.thread_id`` of the run's config), under `langchain_tools`'s ``key_secret``:
a call resumed after an interrupt carries the key of its first attempt. A call without an id gets
no key.

Arguments: LangChain chat models parse the model's JSON before a tool sees it, so a tool receives a
dict. Its canonical JSON is what `prepare` admits: unknown members and coerced values (``"5"`` for an
integer) are rejected, but a repeated member name was already collapsed by the parser (Python's
``json`` keeps the last) and cannot be seen in the dict. Where the model's message kept the raw
argument text (OpenAI-style chat model integrations keep each call's ``function.arguments`` in
``additional_kwargs["tool_calls"]``; LangGraph's message reducer drops a streamed chunk's
``tool_call_chunks``, so that is the one place it survives in a graph's state), pass
``ToolNode(tools, awrap_tool_call=raw_arguments)`` (``wrap_tool_call=raw_arguments_sync`` for a
synchronous graph): that exact text is admitted instead, so a repeated member is rejected too. The
text is used only when it parses to the very arguments LangChain handed the tool.

`from_langchain(tool)` goes the other way: a LangChain tool as a scopetool `Tool`, whose JSON Schema
(the one LangChain shows the model, closed to unknown members) is enforced by the contract.

This module imports ``langchain-core`` and ``langgraph``: ``pip install 'scopetool[langchain]'``.

Example:
    ```python
    import asyncio
    from scopetool import Registry, tool
    from scopetool.integrations.langchain import langchain_tools

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    (add_tool,) = langchain_tools(Registry(add))  # for ToolNode([...]) or an agent
    call = {"name": "add", "args": {"a": 2, "b": "3"}, "id": "call_1", "type": "tool_call"}
    message = asyncio.run(add_tool.ainvoke(call))
    print(message.status, message.content)
    #> error invalid arguments for tool 'add' (1 problem):
    #> - $.b: Input should be a valid integer (got a string)
    ```
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Final, TypeAlias, cast, final

from .._extras import missing_dependency

try:
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, ToolException
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.constants import END
    from langgraph.errors import GraphBubbleUp
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command, Send, interrupt
    from pydantic import PrivateAttr
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

from .._contract import Admission, IdempotencyKey, Invocation, Request
from .._definition import Definition, Effect
from .._input import InvalidInputRequestError
from .._json import is_object
from .._outcome import Failure, FailureKind, classify_failure
from .._output import Output, Result
from .._registry import Registry
from .._rejection import classify_input_rejection
from ..providers._common import ProviderError, ToolCall, object_arguments, outcome_output, output_text, run_call
from ._common import CallKeys

__all__ = [
    "MAX_INPUT_ROUNDS",
    "LangChainTool",
    "ScopetoolTool",
    "from_langchain",
    "langchain_tools",
    "raw_arguments",
    "raw_arguments_sync",
    "send_tool_calls",
]

MAX_INPUT_ROUNDS: Final = 8
"""How many input requests one call may make before it ends with an error message."""

NOT_JSON: Final = 'error: the arguments for tool "{name}" are not JSON'
NO_INPUT: Final = 'error: tool "{name}" needs input, which can only be requested inside a LangGraph run'
BAD_ANSWER: Final = 'error: the answer to tool "{name}"\'s request for input is not valid'
TOO_MANY: Final = 'error: tool "{name}" asked for input too many times'

logger: Final = logging.getLogger("scopetool.integrations.langchain")
_RAW: Final[ContextVar[str | None]] = ContextVar("scopetool_raw_arguments", default=None)
"""The model's raw argument text of the tool call `raw_arguments` is running, if its message kept it."""
_CALL: Final[ContextVar[tuple[str | None, str | None]]] = ContextVar("scopetool_langchain_call", default=(None, None))
"""The scope (the LangGraph thread id) and the tool call id of the call a `ScopetoolTool` is running."""


def langchain_tools(registry: Registry, *, key_secret: bytes | None = None) -> list[ScopetoolTool]:
    """One LangChain tool per tool of `registry`, sorted by name, each admitting its calls with `prepare`.

    Each tool shows the model the contract's own input schema (``args_schema`` is that JSON Schema,
    which LangChain passes on unchanged) and resolves its binding in `registry` on every call.

    Args:
        registry: The tools to serve.
        key_secret: The secret each call's idempotency key is minted under, from the LangGraph
            thread id and the tool call id; pass the same one to every process that may resume a
            thread, or a random one is drawn (see `CallKeys`).

    Raises:
        TypeError: `registry` is not a `Registry`, or `key_secret` is not non-empty bytes.
    """
    if not isinstance(registry, Registry):
        raise TypeError(f"langchain_tools needs a Registry, not {type(registry).__name__}")
    keys = CallKeys(key_secret)
    return [ScopetoolTool(registry, definition, keys) for definition in registry.definitions()]


@final
class ScopetoolTool(BaseTool):
    """A LangChain `BaseTool` whose calls are admitted by a scopetool contract (made by `langchain_tools`).

    It never raises for a bad call or a failing tool: the error text is the content of an error
    ``ToolMessage`` (LangChain's ``handle_tool_error``), so a graph goes on to the model's next turn.
    """

    _registry: Registry = PrivateAttr()
    _keys: CallKeys = PrivateAttr()

    def __init__(self, registry: Registry, definition: Definition, keys: CallKeys | None = None) -> None:
        super().__init__(
            name=definition.name,
            description=definition.description,
            args_schema=definition.input_schema,
            handle_tool_error=True,
        )
        self._registry = registry
        self._keys = CallKeys() if keys is None else keys

    def run(
        self,
        tool_input: str | dict[str, Any],
        *args: Any,
        config: RunnableConfig | None = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """LangChain's ``BaseTool.run``, with the call's thread id and tool call id kept for its key."""
        token = _CALL.set((_thread_id(config), tool_call_id))
        try:
            return super().run(tool_input, *args, config=config, tool_call_id=tool_call_id, **kwargs)
        finally:
            _CALL.reset(token)

    async def arun(
        self,
        tool_input: str | dict[str, Any],
        *args: Any,
        config: RunnableConfig | None = None,
        tool_call_id: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """LangChain's ``BaseTool.arun``, with the call's thread id and tool call id kept for its key."""
        token = _CALL.set((_thread_id(config), tool_call_id))
        try:
            return await super().arun(tool_input, *args, config=config, tool_call_id=tool_call_id, **kwargs)
        finally:
            _CALL.reset(token)

    def _run(self, **arguments: Any) -> str:
        """Admit and run one call from synchronous code (a thread without a running event loop)."""
        return asyncio.run(self._arun(**arguments))

    async def _arun(self, **arguments: Any) -> str:
        """Admit and run one call: the model-facing text, or a `ToolException` carrying it."""
        name = self.name
        try:
            text = object_arguments(arguments, f"tool {name!r}")
        except ProviderError:
            raise ToolException(NOT_JSON.format(name=name)) from None
        scope, call_id = _CALL.get()
        key: IdempotencyKey | None = self._keys.key(scope, call_id)
        call = ToolCall(call_id, Request(name, _raw_for(text) or text))
        admission, rounds = Admission(idempotency_key=key), 0
        while True:
            outcome = await run_call(self._registry, call, admission)
            request = outcome.input_request if isinstance(outcome, Result) else None
            if request is None:
                output, is_error = outcome_output(name, outcome)
                if not is_error:
                    return output_text(output)
                if isinstance(outcome, BaseException) and not _explained(outcome):
                    logger.error("tool %r raised; the model was told only that it failed", name, exc_info=outcome)
                raise ToolException(output_text(output))
            rounds += 1
            if rounds > MAX_INPUT_ROUNDS:
                raise ToolException(TOO_MANY.format(name=name))
            response_schema: object = request.response_schema
            schema = cast("dict[str, Any]", response_schema) if isinstance(response_schema, dict) else None
            try:
                answer = interrupt({"tool": name, "prompt": request.prompt}, response_schema=schema)
            except GraphBubbleUp:
                raise
            except (RuntimeError, KeyError):  # not inside a graph run (no config, or no graph's): no one to ask
                raise ToolException(NO_INPUT.format(name=name)) from None
            try:
                admission = Admission(idempotency_key=key, continuation=request.continuation(answer))
            except InvalidInputRequestError:
                raise ToolException(BAD_ANSWER.format(name=name)) from None


ToolAnswer: TypeAlias = "ToolMessage | Command[Any]"
"""What a ``ToolNode`` makes of one call."""


async def raw_arguments(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[ToolAnswer]]
) -> ToolAnswer:
    """A ``ToolNode`` ``awrap_tool_call``: scopetool tools admit the model's raw argument text where it was kept.

    Other tools run as they would without it.
    """
    token = _RAW.set(_raw_text(request.state, request.tool_call.get("id")))
    try:
        return await execute(request)
    finally:
        _RAW.reset(token)


def raw_arguments_sync(request: ToolCallRequest, execute: Callable[[ToolCallRequest], ToolAnswer]) -> ToolAnswer:
    """`raw_arguments` for a synchronous graph (``ToolNode(tools, wrap_tool_call=raw_arguments_sync)``)."""
    token = _RAW.set(_raw_text(request.state, request.tool_call.get("id")))
    try:
        return execute(request)
    finally:
        _RAW.reset(token)


def _messages(state: object, key: str = "messages") -> list[object]:
    """The messages of a graph state (a dict, a list of messages, or an object with the attribute)."""
    if isinstance(state, list):
        return cast("list[object]", state)
    found: object = cast("dict[str, object]", state).get(key) if isinstance(state, dict) else getattr(state, key, None)
    return cast("list[object]", found) if isinstance(found, list) else []


def _raw_text(state: object, call_id: str | None) -> str | None:
    """The raw argument text of call `call_id` in the graph state's messages, or None where none was kept."""
    if call_id is None:
        return None
    for message in reversed(_messages(state)):
        if not isinstance(message, AIMessage):
            continue
        kept: object = message.additional_kwargs.get("tool_calls")
        for raw in cast("list[object]", kept) if isinstance(kept, list) else ():
            if is_object(raw) and raw.get("id") == call_id and is_object(function := raw.get("function")):
                found = function.get("arguments")
                return found if isinstance(found, str) else None
    return None


def _raw_for(text: str) -> str | None:
    """The kept raw text of the running call, when it parses to exactly the arguments (`text`) LangChain gave."""
    raw = _RAW.get()
    if raw is None:
        return None
    try:
        same = object_arguments(json.loads(raw), "raw arguments") == text  # the text LangChain's arguments gave
    except (ValueError, ProviderError):
        return None
    return raw if same else None


def send_tool_calls(node: str = "tools", *, messages_key: str = "messages") -> Callable[[Any], list[Send] | str]:
    """A conditional edge sending each tool call of the last message to `node` as a task of its own.

    Use it where ``tools_condition`` would go: ``builder.add_conditional_edges("agent",
    send_tool_calls(), ["tools", END])``. Each call runs in its own ``ToolNode`` task, so when one asks
    for input and the graph is resumed, only that call runs again; the others' answers were kept by
    the checkpointer. A message without tool calls routes to ``END``.
    """

    def route(state: Any) -> list[Send] | str:
        messages = _messages(state, messages_key)
        last = messages[-1] if messages else None
        calls = last.tool_calls if isinstance(last, AIMessage) else []
        if not calls:
            return END
        return [Send(node, {"__type": "tool_call_with_context", "tool_call": call, "state": state}) for call in calls]

    return route


def _thread_id(config: RunnableConfig | None) -> str | None:
    """The LangGraph thread a run's config names (``configurable.thread_id``), or None."""
    thread: object = (config or {}).get("configurable", {}).get("thread_id")
    return None if thread is None else str(thread)


def _explained(error: BaseException) -> bool:
    """Whether the model was told what happened (a Failure or a rejection), so nothing needs logging."""
    return classify_failure(error) is not None or classify_input_rejection(error) is not None


@final
class LangChainTool:
    """A LangChain tool as a scopetool `Tool` (made by `from_langchain`): the contract enforces its schema.

    The input schema is the one LangChain shows a model for the tool, with unknown members closed
    where the root does not say (LangChain would drop them silently). An admitted call runs the tool
    with ``ainvoke`` on a tool call; an error message it answers (a ``ToolException`` it handles) is a
    `Failure` whose output is that message (LangChain made it for the model; its cause is a
    ``ToolException`` of the same text, since LangChain keeps no other), and any other error
    propagates as the tool's error.
    """

    __slots__ = ("_definition", "_tool")

    def __init__(self, tool: BaseTool, effect: Effect | None = None) -> None:
        function = cast("dict[str, Any]", convert_to_openai_tool(tool)["function"])
        shown: dict[str, Any] = function.get("parameters") or {}
        parameters = copy.deepcopy(shown)
        parameters.setdefault("type", "object")
        parameters.setdefault("properties", {})
        parameters.setdefault("additionalProperties", False)
        self._tool = tool
        self._definition = Definition(
            name=tool.name, description=tool.description, input_schema=parameters, effect=effect
        )

    def definition(self) -> Definition:
        """The tool's definition, built once from the LangChain tool."""
        return self._definition

    async def call(self, invocation: Invocation) -> Result:
        """Run the LangChain tool on the admitted arguments."""
        arguments: dict[str, Any] = json.loads(invocation.arguments or "{}")
        message = await self._tool.ainvoke(
            {"name": self._tool.name, "args": arguments, "id": "scopetool", "type": "tool_call"}
        )
        content = message.content if isinstance(message, ToolMessage) else message
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
        if isinstance(message, ToolMessage) and message.status == "error":
            raise Failure(kind=FailureKind.FAILED, output=text, cause=ToolException(text))
        return Result(output=Output.from_text(text))


def from_langchain(tool: BaseTool, *, effect: Effect | None = None) -> LangChainTool:
    """A LangChain tool as a scopetool `Tool`, for a `Registry`, a provider adapter or ``scopetool serve``.

    Args:
        tool: Any LangChain ``BaseTool`` (``@tool`` functions, ``StructuredTool``, your own classes).
        effect: The replay promise the tool keeps, if any (LangChain has no such notion).

    Raises:
        TypeError: `tool` is not a LangChain ``BaseTool``.
    """
    if not isinstance(tool, BaseTool):
        raise TypeError(f"from_langchain needs a LangChain BaseTool, not {type(tool).__name__}")
    return LangChainTool(tool, effect)
