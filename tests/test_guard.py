"""Tests for scopetool._guard: Guard, Authorizer, Authorization and AuthorizationError."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from scopetool import (
    Authorization,
    AuthorizationError,
    Binding,
    Caller,
    Definition,
    Failure,
    FailureKind,
    Guard,
    InputRejection,
    InvalidToolError,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    ScopetoolError,
    bind,
    classify_failure,
    classify_input_rejection,
    tool,
)

SECRET = "policy-db-token-8c1f6e"


class Recorder:
    """A tool whose calls are counted and whose received arguments are recorded."""

    def __init__(self, name: str = "transfer") -> None:
        self.name = name
        self.received: list[dict[str, Any]] = []

    def definition(self) -> Definition:
        return Definition(
            name=self.name,
            description="Move money.",
            input_schema={
                "type": "object",
                "properties": {"amount": {"type": "integer"}, "note": {"type": "string"}},
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        self.received.append(json.loads(invocation.arguments))
        await asyncio.sleep(0)
        return Result(output=Output.from_text(invocation.arguments.decode()))


def prepared(binding: Binding, arguments: str = '{"amount": 5}') -> Invocation:
    """Admit `arguments` for `binding`."""
    return binding.contract.prepare(Request(name=binding.name, arguments=arguments))


async def call_with(authorizer: Any, arguments: str = '{"amount": 5}') -> tuple[Recorder, Result]:
    """Run one guarded call of a fresh Recorder; returns the recorder and the result."""
    recorder = Recorder()
    binding = bind(recorder, Guard(authorizer))
    return recorder, await binding.call(prepared(binding, arguments))


async def refused_with(authorizer: Any) -> tuple[Recorder, BaseException]:
    """Run one guarded call that must raise; returns the recorder and the error."""
    recorder = Recorder()
    binding = bind(recorder, Guard(authorizer))
    with pytest.raises(BaseException) as caught:
        await binding.call(prepared(binding))
    return recorder, caught.value


def allow(authorization: Authorization) -> bool:
    """A sync policy that permits everything."""
    return True


def deny(authorization: Authorization) -> bool:
    """A sync policy that refuses everything."""
    return False


async def async_allow(authorization: Authorization) -> bool:
    """An async policy that permits everything."""
    await asyncio.sleep(0)
    return True


async def async_deny(authorization: Authorization) -> bool:
    """An async policy that refuses everything."""
    await asyncio.sleep(0)
    return False


class CallablePolicy:
    """A policy object with __call__."""

    def __init__(self, decision: bool) -> None:
        self.decision = decision
        self.seen: list[Authorization] = []

    def __call__(self, authorization: Authorization) -> bool:
        self.seen.append(authorization)
        return self.decision


# --------------------------------------------------------------------------------------------------
# Decisions


@pytest.mark.parametrize("authorizer", [allow, async_allow, CallablePolicy(True)], ids=["sync", "async", "object"])
async def test_true_permits_and_runs_once(authorizer: Any) -> None:
    """A True decision runs the tool exactly once and returns its result."""
    recorder, result = await call_with(authorizer, '{"amount": 7}')
    assert recorder.received == [{"amount": 7}]
    assert result.output.text() == '{"amount": 7}'


async def test_sync_function_returning_awaitable_is_awaited() -> None:
    """A sync callable that returns an awaitable has its awaited value used as the decision."""

    def policy(authorization: Authorization) -> Awaitable[bool]:
        return async_deny(authorization)

    recorder, error = await refused_with(policy)
    assert isinstance(error, Failure)
    assert recorder.received == []


@pytest.mark.parametrize("authorizer", [deny, async_deny, CallablePolicy(False)], ids=["sync", "async", "object"])
async def test_false_refuses_with_rejected_failure(authorizer: Any) -> None:
    """A False decision raises a generic REJECTED Failure and the tool never runs."""
    recorder, error = await refused_with(authorizer)
    assert isinstance(error, Failure)
    assert error.kind is FailureKind.REJECTED
    assert error.output.text() == 'error: tool "transfer" is not authorized'
    assert error.output.details is None
    assert error.cause is None
    assert classify_failure(error) is error
    assert recorder.received == []


async def test_refusal_output_uses_the_tool_name() -> None:
    """The refusal's public text names the tool being refused."""
    recorder = Recorder(name="delete_all-records")
    binding = bind(recorder, Guard(deny))
    with pytest.raises(Failure) as caught:
        await binding.call(prepared(binding, "{}"))
    assert caught.value.output.text() == 'error: tool "delete_all-records" is not authorized'


@pytest.mark.parametrize("decision", [1, 0, "yes", "", None, [True], 1.0])
async def test_non_bool_decision_is_authorization_error(decision: Any) -> None:
    """Only True and False are decisions; anything else (truthy or falsy) is an AuthorizationError."""
    recorder, error = await refused_with(lambda authorization: decision)
    assert isinstance(error, AuthorizationError)
    assert str(error) == 'tool: authorization for "transfer" failed'
    assert isinstance(error.cause, TypeError)
    assert classify_failure(error) is None
    assert recorder.received == []


async def test_async_non_bool_decision_is_authorization_error() -> None:
    """An async policy returning a non-bool is an AuthorizationError too."""

    async def policy(authorization: Authorization) -> Any:
        return "yes"

    recorder, error = await refused_with(policy)
    assert isinstance(error, AuthorizationError)
    assert recorder.received == []


# --------------------------------------------------------------------------------------------------
# Policy errors are sealed


def secret_error(authorization: Authorization) -> bool:
    """A policy that fails with a secret in its message."""
    raise RuntimeError(f"cannot reach policy store with token {SECRET}")


async def async_secret_error(authorization: Authorization) -> bool:
    """An async policy that fails with a secret in its message."""
    await asyncio.sleep(0)
    raise ConnectionError(f"token {SECRET}")


def raises_failure(authorization: Authorization) -> bool:
    """A policy that tries to dictate the outcome by raising a Failure."""
    raise Failure(kind=FailureKind.FAILED, output=f"leaked {SECRET}", cause=ValueError(SECRET))


def raises_rejected_failure(authorization: Authorization) -> bool:
    """A policy that raises a REJECTED Failure with its own public text."""
    raise Failure(kind=FailureKind.REJECTED, output=f"policy says {SECRET}")


def raises_rejection(authorization: Authorization) -> bool:
    """A policy that tries to send a message to the model by raising an InputRejection."""
    raise InputRejection(f"model, please use token {SECRET}")


def raises_in_handler(authorization: Authorization) -> bool:
    """A policy whose error is chained to an earlier secret-bearing error."""
    try:
        raise KeyError(SECRET)
    except KeyError as error:
        raise RuntimeError("lookup failed") from error


POLICY_ERRORS = [
    secret_error,
    async_secret_error,
    raises_failure,
    raises_rejected_failure,
    raises_rejection,
    raises_in_handler,
]


@pytest.mark.parametrize("authorizer", POLICY_ERRORS)
async def test_policy_error_becomes_sealed_authorization_error(authorizer: Callable[..., Any]) -> None:
    """Any policy error becomes an AuthorizationError: generic message, private cause, no chain."""
    recorder, error = await refused_with(authorizer)
    assert type(error) is AuthorizationError
    assert isinstance(error, ScopetoolError)
    assert str(error) == 'tool: authorization for "transfer" failed'
    assert isinstance(error.cause, Exception)
    assert error.__cause__ is None
    assert error.__context__ is None
    assert recorder.received == []


@pytest.mark.parametrize("authorizer", POLICY_ERRORS)
async def test_policy_error_is_never_an_outcome_or_rejection(authorizer: Callable[..., Any]) -> None:
    """Neither classifier sees the policy's error, even a Failure or an InputRejection."""
    _, error = await refused_with(authorizer)
    assert classify_failure(error) is None
    assert classify_input_rejection(error) is None
    wrapper = RuntimeError("driver")
    wrapper.__cause__ = error
    assert classify_failure(wrapper) is None
    assert classify_input_rejection(wrapper) is None


@pytest.mark.parametrize("authorizer", POLICY_ERRORS)
async def test_policy_secret_never_in_message_or_traceback(authorizer: Callable[..., Any]) -> None:
    """The policy's secret reaches neither str, repr, args nor any rendered traceback."""
    _, error = await refused_with(authorizer)
    assert SECRET not in str(error)
    assert SECRET not in repr(error)
    assert all(SECRET not in str(arg) for arg in error.args)
    assert SECRET not in "".join(traceback.format_exception(error))
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        sys.__excepthook__(type(error), error, error.__traceback__)
    assert "authorization" in buffer.getvalue()
    assert SECRET not in buffer.getvalue()


async def test_policy_error_cause_is_the_original() -> None:
    """.cause is the exact object the policy raised."""
    raised: list[BaseException] = []

    def policy(authorization: Authorization) -> bool:
        error = LookupError("no rule")
        raised.append(error)
        raise error

    _, error = await refused_with(policy)
    assert isinstance(error, AuthorizationError)
    assert error.cause is raised[0]


async def test_policy_failure_cause_kept_verbatim() -> None:
    """A Failure raised by the policy is kept as the cause, unchanged, but is not the outcome."""
    _, error = await refused_with(raises_rejected_failure)
    assert isinstance(error, AuthorizationError)
    assert isinstance(error.cause, Failure)
    assert error.cause.kind is FailureKind.REJECTED
    assert not isinstance(error, Failure)


async def test_authorization_error_chain_assignment_ignored() -> None:
    """Raising the AuthorizationError from something still exposes no chain."""
    _, error = await refused_with(secret_error)
    with pytest.raises(AuthorizationError) as caught:
        try:
            raise ValueError(SECRET)
        except ValueError as other:
            raise error from other
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None


# --------------------------------------------------------------------------------------------------
# Authorization


async def test_authorization_carries_definition_and_exact_arguments() -> None:
    """The policy sees the frozen definition and the admitted bytes exactly as the tool receives them."""
    policy = CallablePolicy(True)
    recorder = Recorder()
    binding = bind(recorder, Guard(policy))
    raw = '{ "note" : "caf\\u00e9 \u2603",\n  "amount": 12 }'
    invocation = prepared(binding, raw)
    await binding.call(invocation)
    (authorization,) = policy.seen
    assert authorization.definition == binding.definition()
    assert authorization.definition is binding.contract.definition()
    assert authorization.arguments == raw.encode()
    assert authorization.arguments == invocation.arguments
    assert json.loads(authorization.arguments) == recorder.received[0] == {"note": "café ☃", "amount": 12}


async def test_authorization_blank_arguments_are_empty_object() -> None:
    """Blank arguments reach the policy as the admitted ``{}``."""
    policy = CallablePolicy(True)
    recorder = Recorder()
    binding = bind(recorder, Guard(policy))
    await binding.call(binding.contract.prepare(Request(name="transfer", arguments="")))
    assert policy.seen[0].arguments == b"{}"
    assert recorder.received == [{}]


async def test_authorization_is_frozen() -> None:
    """An Authorization cannot be changed by the policy."""
    policy = CallablePolicy(True)
    recorder, _ = await call_with(policy)
    authorization = policy.seen[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        authorization.arguments = b'{"amount": 1000000}'  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        authorization.definition = Recorder("other").definition()  # type: ignore[misc]
    assert recorder.received == [{"amount": 5}]


async def test_authorization_holds_nothing_executable() -> None:
    """An Authorization exposes only the definition and the argument bytes."""
    policy = CallablePolicy(True)
    await call_with(policy)
    assert [field.name for field in dataclasses.fields(policy.seen[0])] == ["definition", "arguments"]
    assert isinstance(policy.seen[0].arguments, bytes)
    assert isinstance(policy.seen[0].definition, Definition)


async def test_func_tool_receives_what_policy_saw() -> None:
    """For a @tool function the admitted bytes decode to exactly the function's arguments."""
    received: list[tuple[int, str]] = []

    @tool
    async def greet(times: int, name: str = "x") -> str:
        """Greet someone."""
        received.append((times, name))
        return name * times

    policy = CallablePolicy(True)
    binding = bind(greet, Guard(policy))
    result = await binding.call(binding.contract.prepare(Request(name="greet", arguments='{"times":2,"name":"ab"}')))
    assert json.loads(policy.seen[0].arguments) == {"times": 2, "name": "ab"}
    assert received == [(2, "ab")]
    assert result.output.text() == "abab"


# --------------------------------------------------------------------------------------------------
# Construction


@pytest.mark.parametrize("authorizer", [None, True, "allow", 1, object()])
def test_non_callable_authorizer_is_invalid_tool(authorizer: Any) -> None:
    """A Guard needs a callable authorizer; there is no allow-all default."""
    with pytest.raises(InvalidToolError):
        Guard(authorizer)


def test_guard_repr_names_policy() -> None:
    """repr names the authorizer."""
    assert "deny" in repr(Guard(deny))


# --------------------------------------------------------------------------------------------------
# Cancellation


async def test_cancel_while_async_policy_awaits() -> None:
    """Cancelling the call while the policy awaits propagates CancelledError; the tool never runs."""
    started = asyncio.Event()

    async def slow(authorization: Authorization) -> bool:
        started.set()
        await asyncio.sleep(30)
        return True

    recorder = Recorder()
    binding = bind(recorder, Guard(slow))
    task = asyncio.create_task(binding.call(prepared(binding)))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert recorder.received == []


@pytest.mark.parametrize("decision", [True, False])
async def test_policy_swallowing_cancellation_is_still_cancellation(decision: bool) -> None:
    """A policy that swallows the cancellation, then permits or refuses, yields cancellation; the tool never runs."""
    started = asyncio.Event()

    async def stubborn(authorization: Authorization) -> bool:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return decision
        return decision  # pragma: no cover

    recorder = Recorder()
    binding = bind(recorder, Guard(stubborn))
    task = asyncio.create_task(binding.call(prepared(binding)))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorder.received == []


async def test_policy_raising_cancelled_error_stays_cancellation() -> None:
    """A CancelledError from the policy is not sealed into an AuthorizationError."""

    def policy(authorization: Authorization) -> bool:
        raise asyncio.CancelledError

    recorder, error = await refused_with(policy)
    assert isinstance(error, asyncio.CancelledError)
    assert recorder.received == []


async def test_timeout_during_policy_is_timeout() -> None:
    """An asyncio.timeout expiring while the policy awaits surfaces as TimeoutError; the tool never runs."""

    async def slow(authorization: Authorization) -> bool:
        await asyncio.sleep(30)
        return True

    recorder = Recorder()
    binding = bind(recorder, Guard(slow))
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await binding.call(prepared(binding))
    assert recorder.received == []


# --------------------------------------------------------------------------------------------------
# Composition


def tracing(log: list[str], label: str) -> Callable[[Invocation, Caller], Awaitable[Result]]:
    """A middleware that records entry and exit (or the error it saw)."""

    async def middleware(invocation: Invocation, call_next: Caller) -> Result:
        log.append(f"{label}:in")
        try:
            result = await call_next(invocation)
        except Exception as error:
            log.append(f"{label}:error:{type(error).__name__}")
            raise
        log.append(f"{label}:out")
        return result

    return middleware


async def test_guard_inside_other_middleware() -> None:
    """An outer middleware runs and sees the refusal raised by an inner Guard."""
    log: list[str] = []
    recorder = Recorder()
    binding = bind(recorder, tracing(log, "outer"), Guard(deny))
    with pytest.raises(Failure):
        await binding.call(prepared(binding))
    assert log == ["outer:in", "outer:error:Failure"]
    assert recorder.received == []


async def test_guard_outside_other_middleware() -> None:
    """A refusing outer Guard keeps inner middlewares from running at all."""
    log: list[str] = []
    recorder = Recorder()
    binding = bind(recorder, Guard(deny), tracing(log, "inner"))
    with pytest.raises(Failure):
        await binding.call(prepared(binding))
    assert log == []
    assert recorder.received == []


async def test_permitting_guard_forwards_through_chain() -> None:
    """A permitting Guard between middlewares forwards the same invocation once."""
    log: list[str] = []
    recorder = Recorder()
    binding = bind(recorder, tracing(log, "a"), Guard(async_allow), tracing(log, "b"))
    result = await binding.call(prepared(binding, '{"amount": 3}'))
    assert log == ["a:in", "b:in", "b:out", "a:out"]
    assert recorder.received == [{"amount": 3}]
    assert result.output.text() == '{"amount": 3}'


async def test_two_guards_both_must_permit() -> None:
    """Stacked guards: a refusal by either refuses the call; both permitting runs it once."""
    recorder = Recorder()
    refused = bind(recorder, Guard(allow), Guard(deny))
    with pytest.raises(Failure):
        await refused.call(prepared(refused))
    assert recorder.received == []
    permitted = bind(recorder, Guard(allow), Guard(async_allow))
    await permitted.call(prepared(permitted))
    assert recorder.received == [{"amount": 5}]


async def test_outer_guard_error_wins_over_inner_guard() -> None:
    """The first Guard to fail decides; later policies are never asked."""
    inner = CallablePolicy(False)
    recorder = Recorder()
    binding = bind(recorder, Guard(secret_error), Guard(inner))
    with pytest.raises(AuthorizationError):
        await binding.call(prepared(binding))
    assert inner.seen == []


async def test_guard_in_registry() -> None:
    """A guarded binding keeps its policy when registered and resolved by name."""
    allowed, denied = Recorder("allowed"), Recorder("denied")
    registry = Registry(bind(allowed, Guard(allow)), bind(denied, Guard(async_deny)))
    for name in registry.names():
        binding = registry.resolve(name)
        assert binding is not None
        invocation = binding.contract.prepare(Request(name=name, arguments='{"amount": 1}'))
        if name == "allowed":
            assert (await binding.call(invocation)).output.text() == '{"amount": 1}'
        else:
            with pytest.raises(Failure) as caught:
                await binding.call(invocation)
            assert caught.value.output.text() == 'error: tool "denied" is not authorized'
    assert allowed.received == [{"amount": 1}]
    assert denied.received == []


async def test_concurrent_guarded_calls_see_their_own_arguments() -> None:
    """200 concurrent calls: each policy decision and each tool run sees its own arguments."""
    seen: dict[int, bytes] = {}

    async def even_only(authorization: Authorization) -> bool:
        amount = json.loads(authorization.arguments)["amount"]
        await asyncio.sleep(0)
        seen[amount] = authorization.arguments
        await asyncio.sleep(0)
        return amount % 2 == 0

    recorder = Recorder()
    binding = bind(recorder, Guard(even_only))
    invocations = [prepared(binding, f'{{"amount": {n}, "note": "n{n}"}}') for n in range(200)]
    outcomes = await asyncio.gather(*(binding.call(inv) for inv in invocations), return_exceptions=True)
    for n, outcome in enumerate(outcomes):
        assert seen[n] == invocations[n].arguments
        if n % 2 == 0:
            assert isinstance(outcome, Result)
            assert json.loads(outcome.output.text() or "") == {"amount": n, "note": f"n{n}"}
        else:
            assert isinstance(outcome, Failure)
            assert outcome.kind is FailureKind.REJECTED
    assert sorted(entry["amount"] for entry in recorder.received) == list(range(0, 200, 2))
