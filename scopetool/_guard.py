"""Authorization at the call boundary: `Guard`, `Authorizer`, `Authorization`, `AuthorizationError`."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol, final

from ._binding import Caller
from ._chain import Sealed
from ._contract import Invocation
from ._definition import Definition
from ._errors import InvalidToolError, ScopetoolError
from ._outcome import Failure, FailureKind
from ._output import Output, Result

__all__ = ["Authorization", "AuthorizationError", "Authorizer", "Guard"]


@final
@dataclass(frozen=True, slots=True)
class Authorization:
    """What a policy sees: the frozen, model-visible definition and the validated arguments, nothing more.

    It holds nothing executable, so policy code can neither run the tool nor get around the contract.
    """

    definition: Definition
    """The tool's frozen definition (immutable; its accessors hand out copies)."""
    arguments: bytes
    """The admitted arguments: one I-JSON object, exactly as the tool receives it."""


class Authorizer(Protocol):
    """A policy: ``True`` permits the call, ``False`` refuses it; it may be sync or async.

    Raising means no decision could be reached; the tool then never runs. Identity, consent, tenancy
    and policy storage stay with the caller (closures, context variables).
    """

    def __call__(self, authorization: Authorization, /) -> bool | Awaitable[bool]: ...


@final
class AuthorizationError(Sealed, ScopetoolError):
    """The policy could not reach a decision; the tool was not executed.

    The policy's own error is sealed: it is available only as `cause`, never as `__cause__` or
    `__context__`, and never in the message, so neither a secret in it nor a `Failure` it raised can
    reach the model or change the outcome.
    """

    __slots__ = ("_cause",)

    def __init__(self, name: str, cause: BaseException | None) -> None:
        super().__init__(f'tool: authorization for "{name}" failed' if name else "tool: authorization failed")
        self._cause = cause

    @property
    def cause(self) -> BaseException | None:
        """The policy's diagnostic, for explicit inspection only."""
        return self._cause


@final
class Guard:
    """A `CallMiddleware` that asks an `Authorizer` before the tool runs: ``bind(tool, Guard(policy))``.

    Refusal raises a `REJECTED` `Failure` whose public output is generic
    (``error: tool "<name>" is not authorized``); a tool that owns richer feedback raises its own
    Failure. A policy error becomes `AuthorizationError`. Cancellation stays cancellation: if the call
    is cancelled while the policy runs, the tool does not run and `asyncio.CancelledError` propagates.
    The tool never runs after a refusal, a policy error or a cancellation.

    Example:
        ```python
        import asyncio
        from scopetool import Guard, Request, bind, classify_failure, tool

        @tool
        def inspect() -> str:
            \"\"\"Inspect the system.\"\"\"
            return "inspected"

        binding = bind(inspect, Guard(lambda authorization: False))
        invocation = binding.contract.prepare(Request(name="inspect"))
        try:
            asyncio.run(binding.call(invocation))
        except Exception as error:
            print(classify_failure(error).kind)
        #> rejected
        ```
    """

    __slots__ = ("_authorizer",)

    def __init__(self, authorizer: Authorizer) -> None:
        if not callable(authorizer):
            raise InvalidToolError("a Guard needs a callable authorizer")
        self._authorizer = authorizer

    async def __call__(self, invocation: Invocation, call_next: Caller, /) -> Result:
        """Authorize `invocation`, then forward it once, or refuse it."""
        definition = invocation.definition
        authorization = Authorization(definition=definition, arguments=invocation.arguments)
        try:
            decision = self._authorizer(authorization)
            if inspect.isawaitable(decision):
                decision = await decision
        except Exception as error:  # noqa: BLE001 - sealed below, outside the handler
            policy_error: BaseException | None = error
            decision = None  # never read: the policy error is raised below
        else:
            policy_error = None
        if policy_error is not None:
            raise AuthorizationError(definition.name, policy_error)
        import asyncio  # noqa: PLC0415 - loaded already by the running loop; importing scopetool stays light

        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError  # the call was cancelled while the policy decided
        if decision is True:
            return await call_next(invocation)
        if decision is False:
            raise Failure(
                kind=FailureKind.REJECTED, output=Output.from_text(f'error: tool "{definition.name}" is not authorized')
            )
        raise AuthorizationError(
            definition.name, TypeError(f"the authorizer returned {type(decision).__name__}, not a bool")
        )

    def __repr__(self) -> str:
        return f"Guard({getattr(self._authorizer, '__qualname__', type(self._authorizer).__qualname__)})"
