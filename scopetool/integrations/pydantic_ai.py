"""scopetool tools as a pydantic-ai toolset: every call admitted by `Contract.prepare`.

Install with ``pip install 'scopetool[pydantic-ai]'``. An `Agent` takes a `ScopetoolToolset` as it
takes any toolset. The model's raw argument text is admitted by the tool's contract, once per call in
pydantic-ai's validation stage, not by pydantic-ai's lax validator: a rejection makes the model retry
with scopetool's message (within the tool's retry budget), a `Failure` and a refused `Guard` are the
tool's failed answer, any other error is redacted, and an `InputRequest` becomes pydantic-ai's
approval flow, resumed through the same call's `Continuation` (see `input_requests` and
`answer_requests`). Tools that are not `Effect.SAFE` run as barriers: alone, in the model's order.
With ``code_mode``, the toolset offers one tool, ``run_code`` (`scopetool.code`), whose snippets call
the registry's tools, each nested call admitted and run at most once; the sandbox is imported only then.

Example:
    ```python
    import asyncio
    import json

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from scopetool import Registry, tool
    from scopetool.integrations.pydantic_ai import ScopetoolToolset

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:  # the first turn: call the tool with a coerced value
            return ModelResponse(parts=[ToolCallPart("add", '{"a": 2, "b": "3"}')])
        return ModelResponse(parts=[TextPart(messages[-1].parts[0].model_response_str())])

    agent = Agent(FunctionModel(model), toolsets=[ScopetoolToolset(Registry(add))])
    print(json.loads(asyncio.run(agent.run("add")).output)["error"].splitlines()[1])
    #> - $.b: Input should be a valid integer (got a string)
    ```
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, Generic, NoReturn

import jiter
from typing_extensions import TypeVar

from .._extras import missing_dependency

try:
    from pydantic_ai import RunContext
    from pydantic_ai.exceptions import ApprovalRequired, ModelRetry, ToolFailed
    from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_ai.toolsets.abstract import SchemaValidatorProt
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

from .. import _observe
from .._binding import Binding
from .._contract import Admission, Contract, Invocation, Request
from .._definition import Effect
from .._errors import InvalidInvocationError
from .._input import Continuation, InputRequest
from .._registry import Registry
from .._rejection import classify_input_rejection
from ..providers._common import ProviderError, UnknownToolError, callable_names, is_mapping, object_arguments
from ._common import CallKeys, Tools, is_deferred, registry_of, shown, shown_names

if TYPE_CHECKING:
    from ..code import CodeLimits
    from ..driver._backend import Backend

__all__ = ["METADATA_KEY", "ScopetoolToolset", "answer_requests", "input_requests"]

METADATA_KEY: Final = "scopetool"
"""The key of scopetool's entry in a deferred call's metadata (the input request, then its answer)."""

AgentDepsT = TypeVar("AgentDepsT", default=None, contravariant=True)  # noqa: PLC0105 - pydantic-ai's own name


class AdmittedArguments(dict[str, Any]):
    """A call's arguments as pydantic-ai's hooks see them: read-only, and admitted once they hold values.

    pydantic-ai's argument validator only wraps the model's raw text in one (empty); the tool's
    ``args_validator_func``, which pydantic-ai calls next with the call's context, prepares the call
    from that text with its key and continuation, and fills in the admitted values and the
    `Invocation` that `call_tool` runs. A hook that wants other arguments returns a new dict, which
    `prepare` admits before the tool runs.
    """

    __slots__ = ("arguments", "invocation")

    def __init__(self, arguments: str | bytes) -> None:
        super().__init__()
        self.arguments: Final = arguments
        self.invocation: Invocation | None = None

    def _admitted(self, invocation: Invocation) -> None:
        super().update(jiter.from_json(invocation.arguments))
        self.invocation = invocation


def _read_only(self: AdmittedArguments, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError("admitted arguments are read-only; return a new dict to change them")


for _method in ("__setitem__", "__delitem__", "__ior__", "clear", "pop", "popitem", "setdefault", "update"):
    setattr(AdmittedArguments, _method, _read_only)


def _refusal(name: str, error: Exception) -> ModelRetry | ToolFailed:
    """What pydantic-ai is told of an error: a retry for a rejection the model can fix, else a failure."""
    rejection = classify_input_rejection(error)
    if rejection is not None:
        return ModelRetry(rejection.message)
    return ToolFailed(shown(name, error)[0])


_PENDING: Final[ContextVar[AdmittedArguments | None]] = ContextVar("scopetool_pydantic_ai_pending", default=None)
"""The arguments the validator just wrapped, for the ``args_validator_func`` pydantic-ai calls next."""


class _Wrap:
    """The `args_validator` pydantic-ai calls: it checks nothing, it hands the raw text on to `_Admit`."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def validate_json(self, input: str | bytes | bytearray, **_: Any) -> AdmittedArguments:  # noqa: A002
        """Keep the model's argument text exactly as it sent it, for `prepare`."""
        return _pending(AdmittedArguments(bytes(input) if isinstance(input, bytearray) else input))

    def validate_python(self, input: Any, **_: Any) -> AdmittedArguments:  # noqa: A002
        """Keep arguments the provider already parsed as their JSON (duplicate members are already gone)."""
        try:
            text = object_arguments(input, f"tool {self._name!r}")
        except ProviderError as error:  # not a JSON object: the model can fix that
            raise ModelRetry(str(error)) from error
        return _pending(AdmittedArguments(text))


def _pending(arguments: AdmittedArguments) -> AdmittedArguments:
    _PENDING.set(arguments)
    return arguments


class _Admit:
    """The ``args_validator_func`` pydantic-ai calls right after the validator, with the call's context.

    It is where the call is admitted, once: `Contract.prepare` on the raw text, with the key minted
    from the call id and, on a resumed call, the answer's continuation. A rejection is a `ModelRetry`
    of pydantic-ai's validation stage (the tool's retry budget, ``on_tool_validate_error``).
    """

    __slots__ = ("_contract", "_keys", "_name")

    def __init__(self, contract: Contract, keys: CallKeys) -> None:
        self._contract = contract
        self._name = contract.name
        self._keys = keys

    def __call__(self, ctx: RunContext[Any], **values: Any) -> None:
        arguments = _PENDING.get()
        _PENDING.set(None)
        if arguments is None or values:  # not the validator's own wrapping: admit what was passed
            arguments = AdmittedArguments(object_arguments(values, f"tool {self._name!r}"))
        arguments._admitted(self.prepare(arguments.arguments, ctx))  # pyright: ignore[reportPrivateUsage]

    def prepare(self, arguments: str | bytes, ctx: RunContext[Any]) -> Invocation:
        """The call admitted from `arguments`, under the key and continuation of the call in `ctx`."""
        admission = Admission(
            idempotency_key=self._keys.key(ctx.conversation_id, ctx.tool_call_id),
            continuation=_continuation(ctx.tool_call_metadata) if ctx.tool_call_approved else None,
        )
        try:
            observer = _observe.current
            if observer is None:
                return self._contract.prepare(Request(name=self._name, arguments=arguments), admission)
            return observer.admit(
                self._contract, Request(name=self._name, arguments=arguments), admission, ctx.tool_call_id
            )
        except InvalidInvocationError as error:
            raise _refusal(self._name, error) from error


class ScopetoolToolset(AbstractToolset[AgentDepsT], Generic[AgentDepsT]):
    """A pydantic-ai toolset of scopetool tools, each call admitted by its tool's contract.

    Args:
        tools: A `Registry` (served as it is, tools registered later included), or tools and
            bindings for a new one.
        id: The toolset's id, unique among an agent's toolsets (durable execution needs one).
        max_retries: How many rejected calls each tool allows before the run fails, as
            pydantic-ai's own ``retries``.
        key_secret: The secret each call's idempotency key is minted under, from the run's
            conversation id and the call id; pass the same one to every process that may resume a
            call (a random one otherwise).
        defer_loading: Hide the tools from the model until pydantic-ai's tool search (its `ToolSearch`
            capability, in every agent) reveals them: the provider's native search where the model
            has one, a local ``search_tools`` tool elsewhere. A revealed tool's call is admitted by
            its contract as any other.
        always_show: With `defer_loading`, the tools (by name) shown from the start all the same.
        code_mode: Offer one tool, ``run_code``, instead of the tools: the model writes a Python
            snippet that calls them (`scopetool.code.code_tool`), each nested call admitted by its
            tool's contract. True for the default `CodeLimits`, or the limits to use. The tools are
            not offered directly as well: give the agent a second `ScopetoolToolset` of them for that.
        code_backend: With `code_mode`, where the nested calls run and are recorded (a driver
            backend, such as the `Driver`'s); in memory, for this process, by default.

    Raises:
        ValueError: `always_show` is given without `defer_loading`, `defer_loading` with
            `code_mode`, or `code_backend` without `code_mode`.
        TypeError: `code_mode` is neither a bool nor `CodeLimits`.
    """

    def __init__(
        self,
        tools: Tools,
        *,
        id: str | None = None,  # noqa: A002 - as pydantic-ai's toolsets name it
        max_retries: int = 1,
        key_secret: bytes | None = None,
        defer_loading: bool = False,
        always_show: Iterable[str] = (),
        code_mode: bool | CodeLimits = False,
        code_backend: Backend | None = None,
    ) -> None:
        self._registry = registry_of(tools)
        if code_mode is not False:
            if defer_loading:
                raise ValueError("code mode offers one tool, run_code: there is nothing to defer (defer_loading)")
            self._registry = _code_registry(self._registry, code_mode, code_backend)
        elif code_backend is not None:
            raise ValueError("code_backend applies only with code_mode")
        self._id = id
        self._max_retries = max_retries
        self._keys = CallKeys(key_secret)
        self._tools: dict[Binding, ToolsetTool[AgentDepsT]] = {}
        self._shown = shown_names(always_show, defer_loading)
        self._defer = defer_loading

    @property
    def id(self) -> str | None:
        """The toolset's id, as given."""
        return self._id

    @property
    def registry(self) -> Registry:
        """The registry of the tools offered: the one given, or in code mode the code tool's own."""
        return self._registry

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """Each tool's definition, its contract as the argument validator, and its retry budget."""
        return {binding.name: self._tool(binding) for binding in self._registry}

    def _tool(self, binding: Binding) -> ToolsetTool[AgentDepsT]:
        made = self._tools.get(binding)
        if made is None:
            definition = binding.definition()
            validator: SchemaValidatorProt = _Wrap(binding.name)
            made = ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=definition.name,
                    parameters_json_schema=definition.input_schema,
                    description=definition.description or None,
                    sequential=definition.effect is not Effect.SAFE,
                    defer_loading=is_deferred(self._registry, binding, self._defer, self._shown),
                ),
                max_retries=self._max_retries,
                args_validator=validator,
                args_validator_func=_Admit(binding.contract, self._keys),
            )
            self._tools[binding] = made
        return made

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> str:
        """Run the admitted call (or admit the arguments a hook put in its place) and render its outcome.

        Raises:
            ToolFailed: the outcome is a `Failure` (its public output) or another error (a generic text).
            ModelRetry: a hook replaced the arguments with ones the contract rejects.
            ApprovalRequired: the tool asked for input; the metadata holds the request.
        """
        binding = self._registry.resolve(name)
        if binding is None:
            raise ToolFailed(shown(name, UnknownToolError(name, callable_names(self._registry)))[0])
        if isinstance(tool_args, AdmittedArguments):
            # Not admitted yet when a durable engine validated the call in another process and only the
            # validator ran here (pydantic-ai's Temporal activities): admit the model's text now.
            invocation = tool_args.invocation or _Admit(binding.contract, self._keys).prepare(tool_args.arguments, ctx)
        else:
            replaced = object_arguments(tool_args, f"tool {name!r}")
            invocation = _Admit(binding.contract, self._keys).prepare(replaced, ctx)
        try:
            observer = _observe.current
            result = await (binding.call(invocation) if observer is None else observer.call(binding, invocation))
        except Exception as error:
            raise _refusal(name, error) from error
        if result.input_request is not None:
            raise ApprovalRequired(metadata={METADATA_KEY: {"input_request": result.input_request.to_json().decode()}})
        return shown(name, result)[0]


def _code_registry(tools: Registry, code_mode: bool | CodeLimits, backend: Backend | None) -> Registry:
    """A registry of the one code tool over `tools` (the sandbox is imported here, not with this module)."""
    from ..code import CodeLimits, code_tool  # noqa: PLC0415 - only code mode needs the sandbox

    if code_mode is not True and not isinstance(code_mode, CodeLimits):
        raise TypeError(f"code_mode must be True, False or CodeLimits, not {type(code_mode).__name__}")
    return Registry(code_tool(tools, limits=None if code_mode is True else code_mode, backend=backend))


def _entry(metadata: object) -> Mapping[str, Any] | None:
    """The scopetool entry of a deferred call's metadata, or None."""
    entry = metadata.get(METADATA_KEY) if is_mapping(metadata) else None
    return entry if is_mapping(entry) else None


def _continuation(metadata: object) -> Continuation | None:
    """The continuation `answer_requests` put in a resumed call's metadata, or None."""
    entry = _entry(metadata)
    if entry is None or "response" not in entry:
        return None
    request = InputRequest.from_json(entry["input_request"])
    return request.continuation_from_json(entry["response"])


def input_requests(requests: DeferredToolRequests) -> dict[str, InputRequest]:
    """The scopetool input requests among a run's deferred calls, by tool call id.

    Show each request's `prompt` to whoever answers; the rest of `requests` (other toolsets'
    approvals and external calls) is left to the application.
    """
    found: dict[str, InputRequest] = {}
    for call in requests.approvals:
        entry = _entry(requests.metadata.get(call.tool_call_id))
        if entry is not None and "input_request" in entry:
            found[call.tool_call_id] = InputRequest.from_json(entry["input_request"])
    return found


def answer_requests(requests: DeferredToolRequests, answers: Mapping[str, Any]) -> DeferredToolResults:
    """The `DeferredToolResults` that resume the answered calls, each with its validated answer.

    Pass them to the next run (``agent.run(message_history=..., deferred_tool_results=...)``): each
    answered call is prepared again with a `Continuation` of its request and the answer, under the
    key of its first attempt.

    Raises:
        KeyError: an answer names a call that is not a pending scopetool input request.
        InvalidInputRequestError: an answer does not satisfy its request's response schema.
    """
    pending = input_requests(requests)
    approvals: dict[str, bool | ToolApproved] = {}
    metadata: dict[str, dict[str, Any]] = {}
    for call_id, response in answers.items():
        request = pending.get(call_id)
        if request is None:
            raise KeyError(f"no pending scopetool input request has call id {call_id!r}")
        continuation = request.continuation(response)
        approvals[call_id] = ToolApproved()
        metadata[call_id] = {
            METADATA_KEY: {
                "input_request": request.to_json().decode(),
                "response": continuation.response_json.decode(),
            }
        }
    return DeferredToolResults(approvals=dict(approvals), metadata=metadata)
