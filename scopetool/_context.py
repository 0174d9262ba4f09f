"""`CallContext`: what a `@tool` function may know of its own call, and the application's dependencies."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Generic, cast, final

from typing_extensions import TypeVar

from ._codec import type_adapter
from ._errors import ScopetoolError
from ._input import Continuation, InputRequest
from ._json import canonical_json
from ._progress import Progress, report_progress

if TYPE_CHECKING:
    from ._contract import IdempotencyKey, Invocation  # a context is made for an admitted call: `prepare` loaded them

__all__ = ["APPROVAL_DECLINED", "CONTEXT_TOKEN", "NO_DEPS", "CallContext", "InputNeeded", "close_context"]

Deps_co = TypeVar("Deps_co", default=None, covariant=True)
T = TypeVar("T")


NO_DEPS: Final[Any] = object()
"""The deps of a binding that was given none (distinct from None, which is a value a tool may declare)."""

APPROVAL_DECLINED: Final = 'error: tool "{name}" was not run: approval was declined'
"""The fixed text the model is shown when a person refuses a ``@tool(approval=...)`` call."""

_ANSWERS: Final = "scopetool.answers"
"""The one member of a context's continuation state: the answers to the call's earlier questions."""


@final
class CallContext(Generic[Deps_co]):
    """What a `@tool` function receives about its own call, through a parameter annotated with this type.

    The parameter is left out of the input schema (the model never sees or fills it). Everything comes
    from the `Invocation` that `Contract.prepare` admitted and from the binding, never from a global:

    * `idempotency_key` and `continuation`: the call's identity and its earlier input request's answer;
    * `deps`: the application's dependencies (a database handle, the user's id) given to `bind`,
      `Registry` or `with_deps`, typed by the annotation, ``CallContext[Database]``;
    * `report_progress`: progress to whoever drives the call;
    * `ask`: a question for a person. Without an answer yet it ends the call with an `InputRequest`;
      the next run of the same call (with the answer as its continuation) gets the answer back.

    A context belongs to one call: it is made for it and is spent when the call returns.

    Example:
        ```python
        import asyncio
        from scopetool import Admission, CallContext, Registry, Request, tool

        @tool
        def rename(ctx: CallContext[dict[str, str]], old: str, new: str) -> str:
            \"\"\"Rename a file, once a person confirms it.\"\"\"
            if not ctx.ask(f"Rename {old} to {new}?", bool):
                return "kept the old name"
            ctx.deps[new] = ctx.deps.pop(old)
            return f"renamed; {len(ctx.deps)} files"

        files = {"a.txt": "hello"}
        binding = Registry(rename, deps=files).resolve("rename")
        request = Request(name="rename", arguments='{"old": "a.txt", "new": "b.txt"}')
        first = asyncio.run(binding.call(binding.contract.prepare(request)))
        print(first.input_request.prompt)
        #> Rename a.txt to b.txt?
        admission = Admission(continuation=first.input_request.continuation(True))
        print(asyncio.run(binding.call(binding.contract.prepare(request, admission))).output.text(), files)
        #> renamed; 1 files {'b.txt': 'hello'}
        ```
    """

    # Made once per call, so it sets only what every call needs; `_asks` exists once the function asks.
    __slots__ = ("_asks", "_deps", "_done", "_invocation")

    def __init__(self, invocation: Invocation, deps: Any, token: object = None, /) -> None:
        if token is not CONTEXT_TOKEN:
            raise TypeError("a CallContext is made by scopetool for one call of a @tool function")
        self._invocation = invocation
        self._deps: Any = deps
        self._asks: _Asks | None = None
        self._done = False

    @property
    def deps(self) -> Deps_co:
        """The application's dependencies for this call (None when the binding was given none)."""
        return self._deps  # type: ignore[no-any-return]

    @property
    def tool_name(self) -> str:
        """The name of the tool being called."""
        return self._invocation.name

    @property
    def idempotency_key(self) -> IdempotencyKey | None:
        """The driver's identity for this logical call, if any (the same in every run of the call)."""
        return self._invocation.idempotency_key

    @property
    def continuation(self) -> Continuation | None:
        """The answer to this call's earlier input request, if this run resumes it (`ask` reads it for you)."""
        return self._invocation.continuation

    def report_progress(self, completed: float, total: float = 0, message: str = "") -> None:
        """Report how far the call has advanced (see `Progress`); a no-op when the runner takes no progress."""
        report_progress(Progress(completed, total, message))

    def ask(self, prompt: str, answer_type: type[T], /) -> T:
        """The person's answer to `prompt`, of `answer_type`; without one yet, the call ends and asks for it.

        Ending the call makes it return an `InputRequest` (the prompt, the JSON Schema of `answer_type`)
        to whoever drives it; run the same call again with the answer as its continuation and this
        `ask` returns the answer. A call may ask several questions in turn: each run replays the
        answers given so far, so the function must ask them in the same order every time, and anything
        it did before the last question runs again (ask before any effect).

        The call ends by raising an internal signal that derives from `BaseException`, so ``except
        Exception`` never catches it; a function that catches it anyway (``except BaseException``, a
        bare ``except``) and returns makes the call fail with `InvalidOutputError` rather than lose
        the question. Answers are validated against `answer_type`.

        Raises:
            InvalidInputRequestError: the prompt is not a string, or `answer_type` has no JSON Schema.
        """
        if self._done:
            raise ScopetoolError("CallContext.ask: this call has ended; a context belongs to one call")
        asks = self._asks
        if asks is None:
            asks = self._asks = _Asks(self._invocation.continuation)
        if asks.stop is not None:
            raise asks.stop  # the call has already ended: asking again changes nothing
        from ._input import InvalidInputRequestError  # noqa: PLC0415 - the same module as InputRequest

        try:
            adapter = type_adapter(answer_type, None)
            schema = adapter.json_schema()
        except Exception as error:  # noqa: BLE001 - pydantic refuses types in several ways
            first = str(error).splitlines()[0]
            raise InvalidInputRequestError(f"CallContext.ask: {answer_type!r} cannot be an answer: {first}") from None
        answers = asks.answers
        index = asks.asked
        asks.asked += 1
        if index < len(answers):
            answer: T = adapter.validate_json(answers[index])
            return answer
        if not isinstance(prompt, str):
            raise InvalidInputRequestError(f"CallContext.ask: the prompt must be a str, not {type(prompt).__name__}")
        state = {_ANSWERS: [_loads(answer) for answer in answers]} if answers else None
        request = InputRequest(prompt=prompt, response_schema=schema, continuation_state=state)
        asks.stop = InputNeeded(self, request)
        raise asks.stop

    def __repr__(self) -> str:
        return f"CallContext(tool_name={self.tool_name!r})"


CONTEXT_TOKEN: Final = object()
"""What `Func` passes to make a `CallContext` (user code cannot make one)."""


@final
class _Asks:
    """The questions of one call: the answers it has had (oldest first), how many it asked, the one that ended it."""

    __slots__ = ("answers", "asked", "stop")

    def __init__(self, continuation: Continuation | None) -> None:
        self.answers: list[bytes] = []
        if continuation is not None:
            self.answers.extend(_earlier_answers(continuation.state))
            self.answers.append(continuation.response_json)
        self.asked = 0
        self.stop: InputNeeded | None = None


def close_context(context: CallContext[Any]) -> InputNeeded | None:
    """End the context's call; the question that ended it, if one did."""
    context._done = True  # pyright: ignore[reportPrivateUsage] - this module's own class
    asks = context._asks  # pyright: ignore[reportPrivateUsage]
    return None if asks is None else asks.stop


def _earlier_answers(state: Any) -> list[bytes]:
    """The answers a context's continuation state holds (none in another tool's state)."""
    plain = cast("dict[str, Any]", state) if isinstance(state, dict) else {}
    given: Any = plain.get(_ANSWERS)
    if not isinstance(given, list):
        return []
    return [canonical_json(answer) for answer in cast("list[object]", given)]


def _loads(answer: bytes) -> Any:
    import jiter  # noqa: PLC0415 - loaded already by scopetool's JSON module

    return jiter.from_json(answer)


@final
class InputNeeded(BaseException):
    """Unwinds a `@tool` function from `CallContext.ask` to its `Func`, which returns the request.

    A `BaseException`, so ``except Exception`` in the tool leaves it alone; `Func.call` checks that the
    function did not swallow it (see `CallContext.ask`).
    """

    __slots__ = ("context", "request")

    def __init__(self, context: CallContext[Any], request: InputRequest) -> None:
        super().__init__("scopetool: the call asks for input (CallContext.ask); it is not an error")
        self.context = context
        self.request = request
