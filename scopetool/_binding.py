"""`Tool`, `bind` and `Binding`: one frozen contract joined to the tool that executes it."""

from __future__ import annotations

import functools
import types
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final, Protocol, TypeAlias, cast, final, runtime_checkable

from ._context import NO_DEPS
from ._contract import Contract, InputValidator, Invocation, Request
from ._definition import Definition, Effect
from ._errors import InvalidDefinitionError, InvalidInvocationError, InvalidOutputError, InvalidToolError
from ._func import Func
from ._outcome import Failure, FailureKind, classify_failure
from ._output import Output, Result
from ._search import check_defer_loading
from ._size import MAX_OUTPUT_BYTES, check_output_limit, refuse_oversize
from ._timeout import check_timeout, timed

__all__ = ["Binding", "CallMiddleware", "Caller", "InputValidatingTool", "Tool", "bind"]


class Caller(Protocol):
    """Executes one admitted invocation: ``await caller(invocation) -> Result``."""

    def __call__(self, invocation: Invocation, /) -> Awaitable[Result]: ...


_Run: TypeAlias = Callable[[Invocation], Coroutine[Any, Any, Result]]

CallMiddleware: TypeAlias = Callable[[Invocation, Caller], Awaitable[Result]]
"""Decorates execution: ``async def middleware(invocation, call_next) -> Result``.

A middleware may reject (raise) or forward the same invocation to ``call_next`` at most once, and
must finish forwarding before it returns. Forwarding another invocation, forwarding twice, or
returning without having forwarded raises `InvalidInvocationError`. It cannot change the tool's
schema or effect: those stay with the contract.
"""


@runtime_checkable
class Tool(Protocol):
    """An executable tool: a frozen definition and an async call of admitted invocations."""

    def definition(self) -> Definition:
        """A detached, valid snapshot of the tool's definition (read once, at `bind`)."""
        ...

    async def call(self, invocation: Invocation, /) -> Result:
        """Execute one invocation admitted by this tool's exact contract."""
        ...


@runtime_checkable
class InputValidatingTool(Protocol):
    """A tool with admission rules beyond its JSON Schema (read once, at `bind`)."""

    def input_validator(self) -> InputValidator | None:
        """The validator `Contract.prepare` runs after the schema, or None for schema only."""
        ...


@final
class Binding:
    """One immutable `Contract` joined to the tool that executes it, with middlewares composed once.

    Calls may run concurrently when the tool supports it.
    """

    # Module-private: only `bind` (below) writes these; nothing outside this module reads them.
    __slots__ = ("_call", "_contract", "_defer_loading", "_direct", "_middlewares", "_timeout", "_tool")

    _call: Caller
    _contract: Contract
    _defer_loading: bool | None
    _direct: _Run | None  # the whole call when it needs no checking layer (see `bind`)
    _middlewares: tuple[CallMiddleware, ...]
    _timeout: float | None
    _tool: Tool

    def __init__(self) -> None:
        raise TypeError("a Binding is made by bind(tool, *middlewares)")

    @property
    def contract(self) -> Contract:
        """The exact contract that admits this binding's invocations."""
        return self._contract

    @property
    def name(self) -> str:
        """The tool's frozen name."""
        return self._contract.name

    @property
    def tool(self) -> Tool:
        """The executable tool."""
        return self._tool

    @property
    def timeout(self) -> float | None:
        """Seconds the tool's call may run before it is cancelled, or None for no timeout."""
        return self._timeout

    @property
    def defer_loading(self) -> bool | None:
        """Deferred (True: found by a search first), always shown (False), or left to the registry's rule (None)."""
        return self._defer_loading

    @property
    def max_output_bytes(self) -> int:
        """The cap on one result's size in bytes: a larger one is a `FAILED` `Failure` (see `bind`)."""
        return self._contract._output_limit  # pyright: ignore[reportPrivateUsage]

    def definition(self) -> Definition:
        """The frozen definition, as advertised and enforced."""
        return self._contract.definition()

    def call(self, invocation: Invocation, /) -> Coroutine[Any, Any, Result]:
        """Run one invocation admitted by this binding's contract, through its middlewares (await it).

        An invocation admitted by any other contract, even of an identical tool, is refused when awaited.
        """
        # The invocation's module-private contract slot, read without the property call.
        if invocation.__class__ is not Invocation or invocation._contract is not self._contract:  # pyright: ignore[reportPrivateUsage]
            return _refused(_misplaced(invocation, self.name))
        direct = self._direct
        if direct is not None:
            return direct(invocation)
        return self._checked(invocation)

    async def _checked(self, invocation: Invocation) -> Result:
        if self._middlewares:
            result = await _Step(self._middlewares, self._call, 0, invocation)(invocation)
        else:
            result = await self._call(invocation)
        if result.__class__ is not Result:
            raise InvalidOutputError(f"tool {self.name!r} returned {type(result).__name__}, not a Result")
        refuse_oversize(result, self._contract._output_limit, self.name)  # pyright: ignore[reportPrivateUsage]
        return result

    def with_deps(self, deps: object, /) -> Binding:
        """This binding with other application deps for its `CallContext` (per run, say: the user's id).

        The new binding shares this one's contract (an invocation either admits runs on both) and its
        middlewares; nothing is read from the tool again but its ``call``.

        Raises:
            InvalidToolError: the tool's ``CallContext[Deps]`` names a class `deps` is not an instance of.
        """
        binding = _assemble(
            self._contract, self._tool, self._tool.call, self._middlewares, deps=deps, limit=self._timeout
        )
        binding._defer_loading = self._defer_loading  # pyright: ignore[reportPrivateUsage]
        return binding

    def __repr__(self) -> str:
        return f"Binding(name={self.name!r}, middlewares={len(self._middlewares)})"


_FRESH: Final = 0
_RUNNING: Final = 1
_DONE: Final = 2
_CLOSED: Final = 3


@final
class _Step:
    """The `call_next` of one middleware layer of one call (the root one runs the outermost layer).

    It forwards at most once; awaiting it runs the next layer in its own coroutine.
    """

    __slots__ = ("_call", "_index", "_invocation", "_middlewares", "_state")

    def __init__(
        self, middlewares: tuple[CallMiddleware, ...], call: Caller, index: int, invocation: Invocation
    ) -> None:
        self._middlewares = middlewares
        self._call = call
        self._index = index
        self._invocation = invocation
        self._state = _FRESH

    async def __call__(self, invocation: Invocation, /) -> Result:
        if invocation is not self._invocation:
            raise InvalidInvocationError("a middleware forwarded a different invocation")
        if self._state == _CLOSED:
            raise InvalidInvocationError("a middleware forwarded after it returned")
        if self._state != _FRESH:
            raise InvalidInvocationError("a middleware forwarded the invocation twice")
        self._state = _RUNNING
        try:
            middlewares = self._middlewares
            index = self._index
            if index == len(middlewares):
                return await self._call(invocation)
            middleware = middlewares[index]
            forward = _Step(middlewares, self._call, index + 1, invocation)
            try:
                result = await middleware(invocation, forward)
            finally:
                state = forward._state
                forward._state = _CLOSED  # a call_next kept past this point can never run the tool
            if state != _DONE:
                what = "without forwarding the invocation" if state == _FRESH else "before its forward finished"
                raise InvalidInvocationError(f"middleware {_label(middleware)} returned {what}")
            return result
        finally:
            if self._state == _RUNNING:
                self._state = _DONE


async def _refused(error: InvalidInvocationError) -> Result:
    raise error


def _misplaced(given: object, name: str) -> InvalidInvocationError:
    """The error for a `Binding.call` of something that is not an invocation this binding's contract admitted."""
    if isinstance(given, Invocation):
        return InvalidInvocationError(
            f"the invocation of {given.name!r} does not belong to this binding of {name!r}: "
            "another contract admitted it"
        )
    if isinstance(given, Request):
        return InvalidInvocationError(
            "Binding.call needs an admitted Invocation, not a Request: admit the request first with "
            "binding.contract.prepare(request), then call the Invocation it returns"
        )
    return InvalidInvocationError(
        f"Binding.call needs an Invocation, not {type(given).__name__}: "
        "binding.contract.prepare(Request(name=..., arguments=json_text)) makes one"
    )


def _definite_failures(call: Caller, name: str) -> _Run:
    """Make a safe call's ordinary error a definite `FAILED` outcome (the call changed nothing).

    Cancellation is not an outcome: `asyncio.CancelledError` is a BaseException and passes through.
    """
    public = Output.from_text(f'error: tool "{name}" failed')

    async def safe_call(invocation: Invocation, /) -> Result:
        try:
            return await call(invocation)
        except Exception as error:
            import asyncio  # noqa: PLC0415 - loaded already by the running loop; importing scopetool stays light

            task = asyncio.current_task()
            if classify_failure(error) is not None or (task is not None and task.cancelling()):
                raise  # already an outcome, or the call was cancelled: no definite outcome to claim
            raise Failure(kind=FailureKind.FAILED, output=public, cause=error) from None

    return safe_call


def _makes_results(call: object) -> bool:
    """Whether `call` is `Func.call` of a plain `Func`: a coroutine function that returns exactly a `Result`."""
    own = Func.__dict__["call"]  # the function itself (pyright cannot type a generic class's method unbound)
    return getattr(call, "__func__", None) is own and type(getattr(call, "__self__", None)) is Func


def _label(middleware: object) -> str:
    return repr(getattr(middleware, "__qualname__", type(middleware).__qualname__))


def bind(
    tool: Tool,
    /,
    *middlewares: CallMiddleware,
    deps: object = NO_DEPS,
    timeout: float | None = None,
    max_output_bytes: int | None = None,
    defer_loading: bool | None = None,
) -> Binding:
    """Freeze `tool` into a `Binding`.

    The definition is read exactly once, the schema compiled once and `middlewares` composed once
    (the first is outermost). `deps` are the application's dependencies a `@tool` function's
    `CallContext` hands it (a tool without a context parameter ignores them).

    `timeout` (seconds) bounds the tool's call, inside the middlewares; None keeps the tool's own
    declaration (``call_timeout()``, as ``@tool(timeout=...)`` gives), if any. Past it the call is
    cancelled: a SAFE tool's outcome is a `FAILED` Failure, any other's is unknown (`ToolTimeoutError`).

    `max_output_bytes` caps the size of the tool's result (UTF-8 text, media, details), inside the
    middlewares; None keeps the tool's own declaration (``max_output_bytes()``, as
    ``@tool(max_output_bytes=...)`` gives), else `MAX_OUTPUT_BYTES` (8 MiB). A larger result is a
    `FAILED` Failure whose public text says the result was over the cap (the content is never shown).

    `defer_loading` True keeps the tool out of what a model is first shown (it finds the tool with a search;
    see `Registry`), False always shows it; None keeps the tool's own declaration (``defer_loading()``, as
    ``@tool(defer_loading=...)`` gives), else leaves it to the registry's rule.

    Raises:
        InvalidToolError: the tool is missing or broken: no definition or call, an invalid definition,
            an uncompilable schema, a failing validator or timeout declaration, a middleware that is not
            callable, a timeout that is not a positive number of seconds, a `max_output_bytes` that is not a
            positive integer, a `defer_loading` that is not a bool or None, or deps that are not of the class
            the tool's ``CallContext[Deps]`` names.
    """
    return bind_with(
        tool, middlewares, timeout, None, deps, max_output_bytes=max_output_bytes, defer_loading=defer_loading
    )


def bind_with(
    tool: Tool,
    middlewares: tuple[CallMiddleware, ...],
    timeout: float | None,
    default_timeout: float | None,
    deps: object = NO_DEPS,
    *,
    max_output_bytes: int | None = None,
    defer_loading: bool | None = None,
) -> Binding:
    """`bind`, with `default_timeout` for a tool that declares no timeout (a `Registry`'s default)."""
    if tool is None:
        raise InvalidToolError("tool is None")
    call: Caller | None = getattr(tool, "call", None)  # read defensively: the caller may not be typed
    declare = getattr(tool, "definition", None)
    if not callable(call) or not callable(declare):
        if isinstance(tool, types.FunctionType | types.MethodType | types.BuiltinFunctionType):
            name = tool.__name__
            raise InvalidToolError(f"{name} is a plain function: decorate it with @tool (or pass tool({name}))")
        if isinstance(tool, str):
            raise InvalidToolError(f"{tool[:80]!r} is a str, not a tool: pass the @tool function itself, not its name")
        raise InvalidToolError(f"{type(tool).__name__} is not a Tool: it needs definition() and async call()")
    for index, middleware in enumerate(middlewares):
        if not callable(middleware):
            raise InvalidToolError(f"middlewares[{index}] is not callable")
        if isinstance(middleware, Func):
            raise InvalidToolError(
                f"middlewares[{index}] is a tool, not a middleware: bind takes one tool; "
                "put several in one Registry(*tools)"
            )
    try:
        definition = declare()
    except InvalidDefinitionError as error:
        raise InvalidToolError(f"definition: {error}") from error
    except Exception as error:
        raise InvalidToolError(f"definition: reading it raised {type(error).__name__}") from error
    if not isinstance(definition, Definition):
        raise InvalidToolError(f"definition: {type(tool).__name__}.definition() returned {type(definition).__name__}")
    validator: InputValidator | None = None
    declaration = getattr(tool, "input_validator", None)
    if declaration is not None:
        try:
            validator = declaration()
        except Exception as error:
            raise InvalidToolError(f"input validation: the declaration raised {type(error).__name__}") from error
    limit = check_timeout(timeout, "bind")
    if limit is None:
        limit = _declared_timeout(tool)
    if limit is None:
        limit = default_timeout
    contract = Contract(definition, validator)
    # The contract carries the cap to a `@tool` function's call, which checks the result it builds.
    contract._output_limit = (  # pyright: ignore[reportPrivateUsage]
        check_output_limit(max_output_bytes, "bind") or _declared_output_limit(tool) or MAX_OUTPUT_BYTES
    )
    mark = check_defer_loading(defer_loading, "bind")
    binding = _assemble(contract, tool, call, tuple(middlewares), deps=deps, limit=limit)
    binding._defer_loading = _declared_defer_loading(tool) if mark is None else mark  # pyright: ignore[reportPrivateUsage]
    return binding


def _assemble(
    contract: Contract,
    tool: Tool,
    call: Caller,
    middlewares: tuple[CallMiddleware, ...],
    *,
    deps: object,
    limit: float | None,
) -> Binding:
    """A new Binding of `contract` to `tool`, whose `call` runs with `deps` within `limit` seconds."""
    definition = contract.definition()
    # The module-private slots of a new Binding (pyright checks privacy per class, not per module).
    binding = object.__new__(Binding)
    binding._contract = contract  # pyright: ignore[reportPrivateUsage]
    binding._tool = tool  # pyright: ignore[reportPrivateUsage]
    target = call
    if deps is not NO_DEPS and isinstance(tool, Func) and tool._in_context is not None:  # pyright: ignore[reportPrivateUsage]
        problem = tool._deps_problem(deps)  # pyright: ignore[reportPrivateUsage]
        if problem is not None:
            raise InvalidToolError(problem)
        target = functools.partial(tool._call_in_context, deps)  # pyright: ignore[reportPrivateUsage]
    safe = definition.effect is Effect.SAFE
    inner = target if limit is None else timed(target, limit, definition.name, definition.effect)
    run = _definite_failures(inner, definition.name) if safe else inner
    binding._call = run  # pyright: ignore[reportPrivateUsage]
    # With no middleware, a call that makes its own exact Result, under its contract's size cap (and
    # `_definite_failures`'s wrapper of it), is awaited as it is, without a checking layer around it.
    direct = not middlewares and _makes_results(call)
    binding._direct = cast("_Run", run) if direct else None  # pyright: ignore[reportPrivateUsage]
    binding._middlewares = tuple(middlewares)  # pyright: ignore[reportPrivateUsage]
    binding._timeout = limit  # pyright: ignore[reportPrivateUsage]
    binding._defer_loading = None  # pyright: ignore[reportPrivateUsage]
    return binding


def _declared_timeout(tool: Tool) -> float | None:
    """The timeout the tool declares with an optional ``call_timeout()`` method (read once), or None."""
    declaration = getattr(tool, "call_timeout", None)
    if declaration is None:
        return None
    try:
        declared = declaration()
    except Exception as error:
        raise InvalidToolError(f"timeout: the declaration raised {type(error).__name__}") from error
    return check_timeout(declared, f"timeout: {type(tool).__name__}.call_timeout()")


def _declared_defer_loading(tool: Tool) -> bool | None:
    """The deferral the tool declares with an optional ``defer_loading()`` method (read once), or None."""
    declaration = getattr(tool, "defer_loading", None)
    if declaration is None:
        return None
    try:
        declared = declaration()
    except Exception as error:
        raise InvalidToolError(f"defer_loading: the declaration raised {type(error).__name__}") from error
    return check_defer_loading(declared, f"defer_loading: {type(tool).__name__}.defer_loading()")


def _declared_output_limit(tool: Tool) -> int | None:
    """The result cap the tool declares with an optional ``max_output_bytes()`` method (read once), or None."""
    declaration = getattr(tool, "max_output_bytes", None)
    if declaration is None:
        return None
    try:
        declared = declaration()
    except Exception as error:
        raise InvalidToolError(f"max_output_bytes: the declaration raised {type(error).__name__}") from error
    return check_output_limit(declared, f"max_output_bytes: {type(tool).__name__}.max_output_bytes()")
