"""scopetool tools as OpenAI Agents SDK `FunctionTool`s: every call admitted by `Contract.prepare`.

Install with ``pip install 'scopetool[openai-agents]'``. `function_tools(registry)` gives one
`FunctionTool` per tool, for ``Agent(tools=...)``. Each schema is scopetool's OpenAI Responses export
(strict where the export is strict); each call's raw argument string is read with that export (a
``null`` the strict export introduced means "omitted") and admitted by the tool's contract. The model
is shown a rejection's message, a `Failure`'s public output or a generic text, never an error's own.
A tool's `InputRequest` is answered by the ``answer`` function you pass and the same call resumes
through its `Continuation`; the SDK's own approval (``needs_approval``) can gate any tool before it runs.
Calls of tools that are not `Effect.SAFE` never overlap (the SDK starts a turn's calls together).

Example:
    ```python
    import asyncio

    from agents import Agent, RunConfig, Runner
    from agents.testing import ScriptedModel, assistant_message, function_call

    from scopetool import Registry, tool
    from scopetool.integrations.openai_agents import function_tools

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    turns = [[function_call("add", '{"a": 2, "b": 3, "c": 4}', call_id="c1")], [assistant_message("done")]]
    model = ScriptedModel(turns)
    agent = Agent(name="calc", model=model, tools=function_tools(Registry(add)))
    asyncio.run(Runner.run(agent, "add", run_config=RunConfig(tracing_disabled=True)))
    print(model.calls[1].input[-1]["output"].splitlines()[1])
    #> - $.c: unknown field; expected one of 'a', 'b'
    ```
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, TypeAlias

from .._extras import missing_dependency

try:
    from agents import FunctionTool, RunContextWrapper, tool_namespace
    from agents.tool_context import ToolContext
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

from .. import _observe
from .._binding import Binding
from .._contract import Admission, Request
from .._definition import Effect
from .._input import InputRequest
from .._output import Result
from ..providers import openai_responses
from ..providers._common import Export, repair_nulls
from ._common import Barrier, CallKeys, Tools, is_deferred, registry_of, shown, shown_names

__all__ = ["MAX_INPUT_ROUNDS", "Answer", "NeedsApproval", "function_tools"]

MAX_INPUT_ROUNDS: Final = 8
"""How many input requests one call may make before it is refused (a tool that never stops asking)."""

Answer: TypeAlias = Callable[[InputRequest, ToolContext[Any]], Awaitable[Any]]
"""Answers a tool's input request (ask a person, another agent): the response, as JSON values."""

NeedsApproval: TypeAlias = bool | Callable[[RunContextWrapper[Any], dict[str, Any], str], Awaitable[bool]]
"""The SDK's ``needs_approval`` setting of one tool."""

NO_ANSWER: Final = 'error: tool "{name}" needs input that this run cannot ask for'
TOO_MANY_ROUNDS: Final = 'error: tool "{name}" asked for input too many times'


def function_tools(
    tools: Tools,
    *,
    answer: Answer | None = None,
    needs_approval: Mapping[str, NeedsApproval] | None = None,
    key_secret: bytes | None = None,
    defer_loading: bool = False,
    always_show: Iterable[str] = (),
    namespace: tuple[str, str] | None = None,
) -> list[FunctionTool]:
    """One `FunctionTool` per tool, in name order, each admitting its calls through the tool's contract.

    Args:
        tools: A `Registry`, or tools and bindings for a new one.
        answer: Answers a tool's input request; the same call is then prepared again with the answer
            (validated against the request's schema) and the key of its first attempt. Without it the
            model is told the tool needs input this run cannot ask for.
        needs_approval: The SDK's ``needs_approval`` per tool name: the run is interrupted for a
            person's approval before the call runs (see the SDK's `RunState.approve`).
        key_secret: The secret each call's idempotency key is minted under, from the call id; pass the
            same one to every process that may resume a call (a random one otherwise).
        defer_loading: Hide the tools' definitions until the Responses API's tool search loads them
            (the SDK's ``defer_loading``; give the agent a `ToolSearchTool` too). A loaded tool's call
            is admitted by its contract as any other.
        always_show: With `defer_loading`, the tools (by name) whose definitions are sent from the start.
        namespace: ``(name, description)``: group the tools in one Responses namespace (the SDK's
            `tool_namespace`), which tool search can load as a whole.

    Raises:
        ProviderError: a tool cannot be exported to the OpenAI Responses API (its name, say).
        KeyError: `needs_approval` or `always_show` names a tool that is not among `tools`.
        ValueError: `always_show` is given without `defer_loading`.
    """
    registry = registry_of(tools)
    export = openai_responses.export_tools(registry, strict=True, output_schema=False)
    approvals = dict(needs_approval or {})
    unknown = sorted(set(approvals) - set(registry.names()))
    if unknown:
        raise KeyError(f"needs_approval names tools that are not registered: {', '.join(unknown)}")
    shown_from_start = shown_names(always_show, defer_loading)
    unknown = sorted(shown_from_start - set(registry.names()))
    if unknown:
        raise KeyError(f"always_show names tools that are not registered: {', '.join(unknown)}")
    keys = CallKeys(key_secret)
    serial = Barrier()
    made: list[FunctionTool] = []
    for entry in export.tools:
        if entry.get("type") != "function":  # the hosted tool_search: the agent's own ToolSearchTool stands for it
            continue
        name: str = entry["name"]
        binding = registry.resolve(name)
        assert binding is not None  # exported from this registry
        made.append(
            FunctionTool(
                name=name,
                description=entry.get("description", ""),
                params_json_schema=entry["parameters"],
                on_invoke_tool=_Invoke(
                    binding, export, keys, answer, None if binding.definition().effect is Effect.SAFE else serial
                ),
                strict_json_schema=entry["strict"],
                needs_approval=approvals.get(name, False),
                defer_loading=is_deferred(registry, binding, defer_loading, shown_from_start),
            )
        )
    if namespace is not None:
        return tool_namespace(name=namespace[0], description=namespace[1], tools=made)
    return made


class _Invoke:
    """A tool's ``on_invoke_tool``: admit the raw argument string, run the call, render its outcome."""

    __slots__ = ("_answer", "_binding", "_export", "_keys", "_name", "_serial")

    def __init__(
        self, binding: Binding, export: Export, keys: CallKeys, answer: Answer | None, serial: Barrier | None
    ) -> None:
        self._binding = binding
        self._name = binding.name
        self._export = export
        self._keys = keys
        self._answer = answer
        self._serial = serial

    async def __call__(self, context: ToolContext[Any], arguments: str) -> str:
        if self._serial is None:
            return await self._run(context, arguments)
        return await self._serial.run(lambda: self._run(context, arguments))

    async def _run(self, context: ToolContext[Any], arguments: str) -> str:
        name = self._name
        contract = self._binding.contract
        request = Request(name=name, arguments=repair_nulls(arguments, self._export, name))
        key = self._keys.key(None, context.tool_call_id)
        admission = Admission(idempotency_key=key)
        try:
            rounds = 0
            while True:
                observer = _observe.current
                if observer is None:
                    result = await self._binding.call(contract.prepare(request, admission))
                else:
                    admitted = observer.admit(contract, request, admission, context.tool_call_id)
                    result = await observer.call(self._binding, admitted)
                asked = result.input_request
                if asked is None:
                    break
                if self._answer is None:
                    return NO_ANSWER.format(name=name)
                if rounds == MAX_INPUT_ROUNDS:
                    return TOO_MANY_ROUNDS.format(name=name)
                rounds += 1
                response = await self._answer(asked, context)
                admission = Admission(idempotency_key=key, continuation=asked.continuation(response))
            outcome: Result | BaseException = result
        except Exception as error:  # noqa: BLE001 - the model is told only what scopetool shows of it
            outcome = error
        return shown(name, outcome)[0]
