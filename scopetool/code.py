"""Code mode: one tool, ``run_code``, that runs a model's Python snippet calling the registry's tools.

Install it with ``pip install 'scopetool[code]'``. Only this module imports ``pydantic_monty``, and
``import scopetool`` does not import this module.

The snippet runs in Monty (`pydantic-monty`), a Python-subset interpreter in a worker subprocess with no
filesystem, network, environment or host modules: every OS call it makes is refused here, and a worker
that crashes takes nothing of the host with it. Inside the snippet each tool of the registry is an async
function called with keyword arguments and awaited (``await add(a=1, b=2)``). A call starts, like a
task, when the snippet next waits; calls gathered with ``asyncio.gather`` run at once when their tools
are `Effect.SAFE` (any other tool's call runs alone, in the order the calls were made), and a call made
when the snippet waits for nothing afterwards never runs. Every nested call is admitted as a direct call
is: its JSON arguments pass the tool's own `Contract.prepare`, then the binding runs with its guards and
middlewares. A rejection or a failure reaches the snippet as an exception whose message is what the
model would be shown for a direct call, never the input values or a private cause.

No nested call runs twice: each gets an idempotency key derived from the code call's key and its
position in the run (the order the snippet made its calls, the same on every run: the sandbox gets the
answers of all the calls it waits on at once, so its schedule does not depend on how their runs
interleave), and runs through a driver backend (the Driver's, given as `backend`, or one in memory),
which runs a key at most once and keeps its outcome. When the same code call is run again, completed
nested calls return their recorded outcomes and only the rest run; a nested call of a tool with no
effect promise whose outcome is unknown stops the run instead of guessing. A nested call that asks for
input makes the code call ask the same; the answer resumes that nested call when the snippet runs again.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import keyword
import re
import secrets
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol, cast, final

from ._extras import missing_dependency

try:
    from pydantic_monty import (
        AsyncFunctionSnapshot,
        AsyncFutureSnapshot,
        AsyncMonty,
        CollectString,
        MontyComplete,
        MontyCrashedError,
        MontyError,
        MontyRuntimeError,
        MontySyntaxError,
        ResourceLimits,
    )
except ImportError as missing:  # pragma: no cover - the extra is installed wherever the tests run
    raise missing_dependency(__name__, missing) from missing

from . import _observe
from ._binding import Binding, bind
from ._contract import Admission, IdempotencyKey, Invocation, Request
from ._definition import Definition, Effect
from ._errors import InvalidInvocationError
from ._feedback import did_you_mean, nearest
from ._input import InputRequest
from ._outcome import Failure, FailureKind
from ._output import Output, Result
from ._registry import Registry
from .driver._backend import Backend, Conflict, MemoryBackend, Waiting, new_admitted_call
from .driver._driver import barrier_segments
from .driver._identity import mint_key
from .driver._records import INTERRUPTED
from .providers._common import ToolCall, UnknownToolError, outcome_output

__all__ = ["CodeLimits", "CodeTool", "NestedGate", "code_tool", "snippet_names"]

KEPT_RUNS: Final = 1024
"""Code calls whose nested calls a code tool without a backend keeps in memory (the least recently run forgotten)."""
NO_OS: Final = "the code sandbox has no filesystem, network or operating system access"
POSITIONAL: Final = "call tool {name}() with keyword arguments only, as in {name}(key=value)"
NOT_JSON: Final = "the arguments of tool {name}() must be JSON values (str, int, float, bool, None, list, dict)"
BUDGET: Final = "this snippet used its {budget} nested tool calls; do fewer calls per snippet"
STOPPED_UNKNOWN: Final = (
    'error: the snippet was stopped: nested call {position} of tool "{name}" was interrupted and its outcome is '
    "unknown; it is not run again"
)
STOPPED_CONFLICT: Final = (
    'error: the snippet was stopped: nested call {position} of tool "{name}" differs from the call recorded at that '
    "position when this code call ran before"
)
NOT_A_RESULT: Final = "error: the snippet's result is not strict JSON (NaN or Infinity, or nested too deep)"
TIMED_OUT: Final = "error: the snippet ran past its {seconds:g} s limit (nested calls included)"
CRASHED: Final = "error: the sandbox stopped the snippet: {why}"
NOT_AWAITED: Final = "not awaited"
"""The outcome listed for a nested call the snippet made, then waited for nothing more: it did not run."""


@final
@dataclass(frozen=True, slots=True)
class CodeLimits:
    """The bounds of one snippet; each default is meant for production. Past one, the snippet ends with an error."""

    cpu_seconds: float = 10.0
    """The sandbox's own running time for the snippet (time spent in nested calls not counted)."""
    wall_seconds: float = 120.0
    """The whole snippet, nested calls included."""
    memory_bytes: int = 64 * 1024 * 1024
    """The sandbox's heap."""
    output_bytes: int = 64 * 1024
    """What the snippet prints, and separately its result as JSON text."""
    nested_calls: int = 50
    """Tool calls one snippet may make."""
    recursion_depth: int = 200
    """The sandbox's call stack depth."""
    code_bytes: int = 64 * 1024
    """The snippet's source (the tool's input schema advertises it as a length in characters)."""
    workers: int = 4
    """Sandbox workers (processes) a code tool runs at once on one event loop; more snippets wait their turn,
    within their `wall_seconds`."""

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "wall_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"code limits: {name} must be a positive number of seconds, not {value!r}")
        for name in ("memory_bytes", "output_bytes", "nested_calls", "recursion_depth", "code_bytes", "workers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"code limits: {name} must be a positive int, not {value!r}")


class NestedGate(Protocol):
    """What a host checks around each nested call, as around a direct one (the MCP server's: tools, limits, audit).

    Every method runs in the code call's context: `scopetool.current_principal` is the code call's caller.
    """

    def allows(self, name: str) -> bool:
        """Whether the caller may call tool `name`: a tool it may not is, to the snippet, a name not defined."""
        ...

    async def enter(self, name: str) -> Callable[[], None] | str:
        """Count a nested call of `name`: the function that ends it, or the public reason it is refused."""
        ...

    def observe(self, call: ToolCall, outcome: Result | BaseException) -> None:
        """Told each nested call's outcome (its id is the nested call's idempotency key).

        A call of a name the snippet may not call is told too, as an unknown tool's call: its id None, its
        outcome an `UnknownToolError`.
        """
        ...


class _Stop(Exception):  # noqa: N818 - a control-flow signal, not an error of its own
    """Ends a snippet early with the text the model is shown."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _Waiting(Exception):  # noqa: N818 - a control-flow signal, not an error of its own
    """Ends a snippet early: a nested call (its key) waits for input."""

    def __init__(self, request: InputRequest, key: IdempotencyKey) -> None:
        super().__init__(key)
        self.request = request
        self.key = key


@final
class CodeTool:
    """The ``run_code`` tool over a registry (make its binding with `code_tool`)."""

    __slots__ = ("_backend", "_definition", "_gate", "_in_memory", "_limits", "_names", "_registry", "_turns")

    def __init__(
        self,
        registry: Registry,
        *,
        limits: CodeLimits | None = None,
        backend: Backend | None = None,
        gate: NestedGate | None = None,
        name: str,
    ) -> None:
        if not isinstance(registry, Registry):
            raise TypeError(f"code mode needs a Registry, not {type(registry).__name__}")
        if limits is not None and not isinstance(limits, CodeLimits):
            raise TypeError(f"limits must be CodeLimits, not {type(limits).__name__}")
        if backend is not None and not isinstance(backend, Backend):
            raise TypeError(f"{type(backend).__name__} is not a driver backend")
        self._registry = registry
        self._limits = CodeLimits() if limits is None else limits
        self._backend = backend
        self._gate = gate
        self._names = snippet_names(registry.names())
        # without a backend: one in memory per code call key, the least recently used forgotten past KEPT_RUNS
        self._in_memory: OrderedDict[str, MemoryBackend] = OrderedDict()
        self._turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        schema = {
            "type": "object",
            "properties": {"code": {"type": "string", "maxLength": self._limits.code_bytes}},
            "required": ["code"],
            "additionalProperties": False,
        }
        # IDEMPOTENT: a code call run again under its key reruns only the sandbox, which has no effects, and
        # each nested call under the key derived from it, which the backend runs at most once.
        self._definition = Definition(
            name=name, input_schema=schema, description=self.describe(), effect=Effect.IDEMPOTENT
        )

    def describe(self, visible: Callable[[str], bool] | None = None) -> str:
        """What the model is told: how to call tools from code, and each tool (that `visible` allows) as a signature.

        A tool is listed under the name the snippet calls it by (`snippet_names`); a tool with no such name
        is left out.
        """
        lines = [_HOW_TO]
        for snippet_name, tool_name in self._names.items():
            if visible is not None and not visible(tool_name):
                continue
            binding = self._registry.resolve(tool_name)
            assert binding is not None  # named from this registry
            definition = binding.definition()
            properties = definition.input_schema.get("properties", {})
            names = ", ".join(cast("dict[str, Any]", properties)) if isinstance(properties, dict) else ""
            summary = definition.description.strip().splitlines()[0] if definition.description.strip() else ""
            lines.append(f"- {snippet_name}({names}): {summary}")
        return "\n".join(lines)

    @property
    def limits(self) -> CodeLimits:
        """The bounds of each snippet."""
        return self._limits

    def _backend_of(self, key: IdempotencyKey) -> Backend:
        """Where the nested calls of the code call `key` run: the given backend, or that call's own in memory."""
        if self._backend is not None:
            return self._backend
        kept = self._in_memory
        backend = kept.pop(key, None) or MemoryBackend()
        kept[key] = backend
        if len(kept) > KEPT_RUNS:
            kept.popitem(last=False)
        return backend

    def _turn(self) -> asyncio.Semaphore:
        """The bound on this event loop's sandbox workers at once (a semaphore belongs to one loop)."""
        loop = asyncio.get_running_loop()
        turns = self._turns.get(loop)
        if turns is None:
            turns = self._turns[loop] = asyncio.Semaphore(self._limits.workers)
        return turns

    def definition(self) -> Definition:
        """The tool's definition: the snippet's schema, and the tools' signatures in its description."""
        return self._definition

    async def call(self, invocation: Invocation, /) -> Result:
        """Run the admitted snippet; its result and the list of its nested calls, as JSON."""
        code: str = json.loads(invocation.arguments)["code"]
        if len(code.encode("utf-8")) > self._limits.code_bytes:
            raise Failure(
                kind=FailureKind.REJECTED, output=f"error: the snippet is over {self._limits.code_bytes} bytes"
            )
        key = invocation.idempotency_key
        continuation = invocation.continuation
        if continuation is not None:  # the answer to a nested call's input request: hand it to that call
            state: dict[str, str] = continuation.state  # our own request's state (the runtime keeps it, not the model)
            key = key or IdempotencyKey(state["code_key"])
            await self._backend_of(key).answer(IdempotencyKey(state["nested"]), continuation.response)
        key = key or IdempotencyKey(f"code-{secrets.token_hex(16)}")
        run = _Run(
            self._registry,
            names=self._names,
            backend=self._backend_of(key),
            limits=self._limits,
            key=key,
            gate=self._gate,
        )
        try:
            async with asyncio.timeout(self._limits.wall_seconds), self._turn():
                value = await run.execute(code)
        except TimeoutError:
            raise run.failure(TIMED_OUT.format(seconds=self._limits.wall_seconds), None) from None
        except _Stop as stop:
            raise run.failure(stop.text, None) from None
        except _Waiting as waiting:  # the code call asks the same; answered, it runs again and the call resumes
            request = waiting.request
            state = {"code_key": key, "nested": waiting.key}
            asked = InputRequest(
                prompt=request.prompt, response_schema=request.response_schema, continuation_state=state
            )
            return Result(input_request=asked)
        except (MontySyntaxError, MontyRuntimeError) as error:
            raise run.failure(_capped(run.hinted(_error_text(error)), self._limits.output_bytes), error) from None
        except MontyError as error:  # a crashed or timed-out worker: the host is unharmed
            why = "its worker was killed past the time limit" if _timed_out(error) else "its worker stopped"
            raise run.failure(CRASHED.format(why=why), error) from None
        return Result(run.report(value))


def code_tool(
    registry: Registry,
    *,
    limits: CodeLimits | None = None,
    backend: Backend | None = None,
    gate: NestedGate | None = None,
    name: str = "run_code",
) -> Binding:
    """A binding of the code tool over `registry`: register it beside (or instead of) the tools.

    `backend` is where nested calls run and are recorded: pass the `Driver`'s (``driver.backend``) when
    the code call runs under the Driver, so that a code call run again after a crash or a restart finds
    its completed nested calls; by default they are recorded in memory, for this process only. `gate`
    is what the host checks around each nested call (`NestedGate`; the MCP server gives its own).

    Example:
        ```python
        import json
        from scopetool import Registry, tool
        from scopetool.code import code_tool

        @tool
        def add(a: int, b: int) -> int:
            \"\"\"Add two integers.\"\"\"
            return a + b

        registry = Registry(code_tool(Registry(add)))
        result = registry.run_sync("run_code", json.dumps({"code": "await add(a=await add(a=1, b=2), b=3)"}))
        print(result.output.text())
        #> {"result":6,"calls":[{"tool":"add","outcome":"returned"},{"tool":"add","outcome":"returned"}],"printed":""}
        ```
    """
    return bind(CodeTool(registry, limits=limits, backend=backend, gate=gate, name=name))


@final
@dataclass(frozen=True, slots=True)
class _Nested:
    """A nested call the snippet made: its position in the run, its tool, its request and its key."""

    position: int
    binding: Binding
    request: Request
    key: IdempotencyKey


@final
class _Run:
    """One run of one snippet: its nested calls, in order."""

    __slots__ = (
        "_backend",
        "_calls",
        "_gate",
        "_hint",
        "_key",
        "_limits",
        "_made",
        "_names",
        "_printed",
        "_registry",
        "_secret",
    )

    def __init__(
        self,
        registry: Registry,
        *,
        names: dict[str, str],
        backend: Backend,
        limits: CodeLimits,
        key: IdempotencyKey,
        gate: NestedGate | None,
    ) -> None:
        self._registry = registry
        self._names = names
        self._gate = gate
        self._limits = limits
        self._backend = backend
        self._key = key
        self._calls: list[dict[str, str]] = []  # by position: the order the snippet made its calls
        self._made: dict[int, _Nested] = {}  # by the sandbox's call id: calls made, not yet run
        self._printed = CollectString(max_bytes=limits.output_bytes)
        self._secret: bytes | None = None
        self._hint = ("", "")  # the last undefined name's NameError, and its suggestion

    async def execute(self, code: str) -> Any:
        """Run `code` in a fresh sandbox worker, answering its tool calls; the value of its last expression."""
        limits = self._limits
        resource_limits: ResourceLimits = {
            "max_feed_duration_secs": limits.cpu_seconds,
            "max_memory": limits.memory_bytes,
            "max_recursion_depth": limits.recursion_depth,
            # a backstop (each nested call suspends twice: made, then awaited); the budget is counted in `_call`
            "max_suspensions": limits.nested_calls * 4 + 64,
        }
        try:
            return await self._drive(code, resource_limits)
        finally:
            _exit_settle.closed()

    async def _drive(self, code: str, resource_limits: ResourceLimits) -> Any:
        async with (
            AsyncMonty(min_processes=1, max_processes=1, request_timeout=self._limits.cpu_seconds + 5.0) as pool,
            pool.checkout(limits=resource_limits, os_policy={"sleep": "zero"}) as session,
        ):
            snapshot = await session.feed_start(code, print_callback=self._printed)
            while not isinstance(snapshot, MontyComplete):
                if isinstance(snapshot, AsyncFunctionSnapshot):
                    if snapshot.is_os_function:
                        snapshot = await snapshot.resume({"exc_type": "PermissionError", "message": NO_OS})
                    elif (binding := self._tool_named(snapshot.function_name)) is None:
                        self._not_defined(snapshot.function_name)
                        message = self._undefined(snapshot.function_name)
                        snapshot = await snapshot.resume({"exc_type": "NameError", "message": message})
                    else:
                        called = snapshot.function_name
                        made = await self._call(snapshot.call_id, called, binding, snapshot.args, snapshot.kwargs)
                        snapshot = await snapshot.resume(made)  # type: ignore[arg-type] # one of ExternalResult's
                elif isinstance(snapshot, AsyncFutureSnapshot):  # the snippet waits: run its calls, answer all
                    settled = await self._settle(snapshot.pending_call_ids)
                    snapshot = await snapshot.resume(settled)  # type: ignore[arg-type] # ExternalSettledResult's
                else:  # a name lookup: no host names, so a NameError (its text gets `hinted`'s suggestion)
                    if snapshot.object_id is None:
                        self._undefined(snapshot.variable_name)
                    snapshot = await snapshot.resume_auto()
            return snapshot.output

    def _tool_named(self, called: str) -> Binding | None:
        """The tool the snippet calls by the name `called`, if the caller may call it."""
        name = self._names.get(called)
        binding = None if name is None else self._registry.resolve(name)
        if binding is None or isinstance(binding.tool, CodeTool):
            return None
        return binding if self._gate is None or self._gate.allows(binding.name) else None

    def _undefined(self, called: str) -> str:
        """A NameError's text for `called`, naming the nearest tools the snippet may call; kept for `hinted`."""
        near = nearest(called, [known for known in self._names if self._tool_named(known) is not None])
        self._hint = (f"NameError: name {called[:80]!r} is not defined", did_you_mean(near))
        return f"name {called[:80]!r} is not defined{self._hint[1]}"

    def hinted(self, text: str) -> str:
        """The snippet's error `text`, with the suggestion of its undefined name when it is that name's NameError."""
        prefix, hint = self._hint
        if not hint or not text.startswith(prefix) or text.startswith(prefix + hint):
            return text
        return prefix + hint + text[len(prefix) :]

    def _not_defined(self, called: str) -> None:
        """Tell the gate of a call to a name the snippet may not call, as the host is told of an unknown tool's call."""
        if self._gate is not None:
            name = self._names.get(called, called)
            self._gate.observe(ToolCall(None, Request(name=name)), UnknownToolError(name))

    async def _call(
        self, call_id: int, called: str, binding: Binding, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> dict[str, Any]:
        """A nested call made (not yet run): its position and key are fixed now; a future, or an exception."""
        name = binding.name
        position = len(self._calls)
        limits = self._limits
        if position >= limits.nested_calls:
            return self._raised(name, "refused", "RuntimeError", BUDGET.format(budget=limits.nested_calls))
        if args:
            return self._raised(name, "rejected", "TypeError", POSITIONAL.format(name=called))
        try:
            arguments = json.dumps(kwargs, allow_nan=False, ensure_ascii=False)
        except (TypeError, ValueError):
            return self._raised(name, "rejected", "TypeError", NOT_JSON.format(name=called))
        key = await self._nested_key(position)
        self._calls.append({"tool": name, "outcome": NOT_AWAITED})  # until the snippet waits and it runs
        self._made[call_id] = _Nested(position, binding, Request(name=name, arguments=arguments), key)
        return {"future": ...}

    async def _settle(self, call_ids: list[int]) -> dict[int, dict[str, Any]]:
        """Run the calls the snippet waits on, SAFE ones at once, any other alone, in position order; answer all.

        The sandbox gets every answer in one resume, so its schedule (the order of the calls it makes next, and
        so their positions and keys) is the same on each run of the snippet, however the calls' runs interleave.
        A call that stops the run or waits for input ends the snippet once the other calls have finished.
        """
        nested = sorted(((call_id, self._made.pop(call_id)) for call_id in call_ids), key=lambda item: item[1].position)
        answers: dict[int, dict[str, Any] | BaseException] = {}
        # the barrier rule (SAFE calls at once, any other alone); a call ending the snippet does so once the rest ran
        for segment in barrier_segments(nested, lambda item: item[1].binding.definition().effect is Effect.SAFE):
            ran = await asyncio.gather(*(self._answer(call) for _, call in segment), return_exceptions=True)
            answers.update((call_id, answer) for (call_id, _), answer in zip(segment, ran, strict=True))
        settled: dict[int, dict[str, Any]] = {}
        for call_id, _ in nested:  # position order: the first call that ends the snippet is the one reported
            answer = answers[call_id]
            if isinstance(answer, BaseException):
                raise answer
            settled[call_id] = answer
        return dict(sorted(settled.items()))  # by call id: the sandbox wakes its tasks in the answers' order

    async def _answer(self, call: _Nested) -> dict[str, Any]:
        """Run one nested call within the gate: what the snippet gets back (a value, or an exception)."""
        gate = self._gate
        if gate is None:
            return await self._run_nested(call)
        entered = await gate.enter(call.request.name)
        if isinstance(entered, str):
            return self._raised(call.request.name, "refused", "RuntimeError", entered, call.position)
        try:
            return await self._run_nested(call)
        finally:
            entered()

    async def _run_nested(self, call: _Nested) -> dict[str, Any]:
        """Admit the nested call by the tool's contract and run it under its key (at most once); tell the gate."""
        binding, key, position, request = call.binding, call.key, call.position, call.request
        name, gate = request.name, self._gate
        try:
            admission = Admission(key)
            observer = _observe.current  # a tracer sees a nested admission as it sees a direct one
            if observer is None:
                invocation = binding.contract.prepare(request, admission)
            else:
                invocation = observer.admit(binding.contract, request, admission, None)
        except InvalidInvocationError as error:
            if gate is not None:
                gate.observe(ToolCall(key, request), error)
            shown, _ = outcome_output(name, error)
            return self._raised(name, "rejected", "ValueError", _text(shown), position)
        state = await self._backend.start(new_admitted_call(key, binding, invocation))
        if isinstance(state, Conflict):
            self._calls[position] = {"tool": name, "outcome": "conflict"}
            raise _Stop(STOPPED_CONFLICT.format(position=position + 1, name=name))
        if isinstance(state, Waiting):
            self._calls[position] = {"tool": name, "outcome": "waiting"}
            raise _Waiting(state.request, key)
        outcome = state.outcome
        if gate is not None:
            gate.observe(ToolCall(key, request), outcome)
        if isinstance(outcome, Result):
            self._calls[position] = {"tool": name, "outcome": "returned"}
            return {"return_value": _value(outcome.output)}
        text = _text(outcome.output)
        effect = binding.definition().effect
        if text == INTERRUPTED.format(name=name) and (effect is None or not effect.replayable):
            self._calls[position] = {"tool": name, "outcome": "unknown"}
            raise _Stop(STOPPED_UNKNOWN.format(position=position + 1, name=name))
        rejected = outcome.kind is FailureKind.REJECTED
        exc_type = "PermissionError" if rejected else "RuntimeError"
        return self._raised(name, "rejected" if rejected else "raised", exc_type, text, position)

    def _raised(
        self, name: str, outcome: str, exc_type: str, message: str, position: int | None = None
    ) -> dict[str, Any]:
        """Record a call's outcome (at its position, or as a new call) and what the snippet gets: an exception."""
        entry = {"tool": name, "outcome": outcome, "error": message}
        if position is None:
            self._calls.append(entry)
        else:
            self._calls[position] = entry
        return {"exc_type": exc_type, "message": message}

    async def _nested_key(self, position: int) -> IdempotencyKey:
        secret = self._secret
        if secret is None:
            secret = self._secret = await self._backend.secret()
        return mint_key(secret, self._key, None, position)

    def report(self, value: Any) -> Output:
        """The snippet's result, its nested calls and what it printed, as JSON text within the output cap."""
        cap = self._limits.output_bytes
        try:
            result = json.dumps(value, allow_nan=False, ensure_ascii=False, default=repr, separators=(",", ":"))
        except (ValueError, RecursionError):  # NaN or Infinity, or nested past the encoder's depth
            result = json.dumps(NOT_A_RESULT)
        if len(result.encode("utf-8")) > cap:
            result = json.dumps(f"error: the snippet's result is over {cap} bytes of JSON")
        calls = json.dumps(self._calls, ensure_ascii=False, separators=(",", ":"))
        printed = json.dumps(self._printed.output, ensure_ascii=False)
        try:  # the strict JSON a result must be (its nesting depth bounded)
            return Output.from_json(f'{{"result":{result},"calls":{calls},"printed":{printed}}}')
        except ValueError:
            return Output.from_json(f'{{"result":{json.dumps(NOT_A_RESULT)},"calls":{calls},"printed":{printed}}}')

    def failure(self, text: str, cause: BaseException | None) -> Failure:
        """The snippet's error, with its nested calls, as the failed outcome of the code call."""
        report = {"error": text, "calls": self._calls, "printed": self._printed.output}
        output = Output.from_text(json.dumps(report, ensure_ascii=False, separators=(",", ":")))
        return Failure(kind=FailureKind.FAILED, output=output, cause=cause or RuntimeError(text))


@final
class _ExitSettle:
    """Keeps the interpreter from finalizing just after a sandbox pool closed.

    The pool's native threads go on working for a moment after ``AsyncMonty`` exits; an interpreter that
    finalizes in that moment aborts (pydantic-monty 1.4.0: about one exit in five right after a snippet).
    At exit, this waits until `SETTLE_SECONDS` have passed since the last pool closed (no wait otherwise).
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: float | None = None

    def closed(self) -> None:
        self._last = time.monotonic()

    def wait(self) -> None:
        if self._last is not None:
            time.sleep(max(0.0, self._last + SETTLE_SECONDS - time.monotonic()))


SETTLE_SECONDS: Final = 0.2
"""How long the interpreter's exit waits after the last sandbox pool closed (`_ExitSettle`)."""
_exit_settle = _ExitSettle()
atexit.register(_exit_settle.wait)


def _value(output: Output) -> Any:
    """A nested result as the snippet sees it: its details as Python data, else its text."""
    if output.details is not None:
        return json.loads(output.details)
    return _text(output)


def _text(output: Output) -> str:
    text = output.text()
    return text if text is not None else "[a result with media, which code mode does not pass to the snippet]"


def _error_text(error: MontySyntaxError | MontyRuntimeError) -> str:
    """The snippet's error and where it was raised (lines and functions), without the source lines it quotes."""
    frames = error.traceback()[-3:]
    where = ", ".join(
        f"line {frame.line}" + (f" in {frame.function_name}" if frame.function_name else "") for frame in frames
    )
    return error.display("type-msg") + (f" (at {where})" if where else "")


def _capped(text: str, cap: int) -> str:
    data = text.encode("utf-8")
    return text if len(data) <= cap else data[:cap].decode("utf-8", "ignore") + " [cut]"


def _timed_out(error: MontyError) -> bool:
    return isinstance(error, MontyCrashedError) and error.timed_out


_HOW_TO: Final = (
    "Run a Python snippet (a subset of Python: no imports of host modules, no files, no network) and get "
    "the value of its last expression. The tools below are async functions: call them with keyword arguments "
    "and await them (x = await name(key=value)); for independent calls, import asyncio and await "
    "asyncio.gather(...) of them. A tool returns its result (structured results as dicts and lists); a "
    "refused or failed call raises an exception with the reason. Use print() for notes. Tools:"
)


def snippet_names(tool_names: Iterable[str]) -> dict[str, str]:
    """The name a snippet calls each tool by (in the order given): its own, or one made a Python identifier.

    A name that is not an identifier (``get-sum``, ``2fa.check``) is called with each other character made
    ``_`` (``get_sum``, ``_2fa_check``), and a Python keyword with ``_`` after it (``import_``). A made name
    that another tool's name or made name already takes is left out: that tool cannot be called from code.
    """
    names = list(tool_names)
    own = {name for name in names if name.isidentifier() and not keyword.iskeyword(name)}
    made: dict[str, list[str]] = {}
    for name in names:
        if name not in own:
            snippet = re.sub(r"\W", "_", name, flags=re.ASCII)
            snippet = f"_{snippet}" if snippet[:1].isdigit() or not snippet else snippet
            made.setdefault(f"{snippet}_" if keyword.iskeyword(snippet) else snippet, []).append(name)
    found = {name: name for name in own}
    found.update((snippet, taken[0]) for snippet, taken in made.items() if len(taken) == 1 and snippet not in own)
    order = {name: position for position, name in enumerate(names)}
    return dict(sorted(found.items(), key=lambda item: order[item[1]]))
