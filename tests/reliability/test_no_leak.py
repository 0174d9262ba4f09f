"""No leak to the model: a secret swept through every failure path never reaches a model-visible message.

Model-visible means what `outcome_output` renders and what every provider's `result_message` sends.
Member names are echoed in JSON paths on purpose (clipped to 48 characters), so secrets ride in values.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import pkgutil
import traceback
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel, TypeAdapter, field_validator, model_validator

import scopetool.providers
from scopetool import (
    MAX_INPUT_BYTES,
    Binding,
    CallError,
    Definition,
    Effect,
    Failure,
    FailureKind,
    Guard,
    InputRejection,
    InvalidInvocationError,
    Invocation,
    Output,
    Request,
    Result,
    Signature,
    bind,
    classify_input_rejection,
    tool,
)
from scopetool.providers import ToolCall, outcome_output
from scopetool.providers._common import output_text

from ._corpus import all_bindings
from ._support import RELIABLE, dumps, from_schema, near_misses, prepare

SECRET = "sk-live-4f9c1e7a0b3d"
"""The value swept through every failure path."""

PROVIDERS = [
    importlib.import_module(f"scopetool.providers.{module.name}")
    for module in pkgutil.iter_modules(scopetool.providers.__path__)
    if not module.name.startswith("_")
]
RESULT_MESSAGES = [module for module in PROVIDERS if callable(getattr(module, "result_message", None))]


def visible(name: str, outcome: Result | BaseException) -> list[str]:
    """Everything a model can be shown for `outcome`: the neutral rendering and every provider's message."""
    output, _ = outcome_output(name, outcome)
    shown = [output_text(output)]
    call = ToolCall(id="call_1", request=Request(name=name, arguments="{}"))
    shown.extend(
        json.dumps(module.result_message(call, outcome), default=repr, ensure_ascii=False) for module in RESULT_MESSAGES
    )
    return shown


def assert_no_secret(name: str, outcome: Result | BaseException, secret: str = SECRET) -> None:
    """No model-visible rendering of `outcome` holds `secret`."""
    for text in visible(name, outcome):
        assert secret not in text, f"the secret reached the model: {text!r}"


def assert_clean_rejection(error: InvalidInvocationError, name: str) -> None:
    """A rejection hides the secret from the model, from its own text and from its printed traceback."""
    assert_no_secret(name, error)
    assert SECRET not in str(error)
    assert SECRET not in "".join(traceback.format_exception(error))


def test_every_provider_module_is_swept() -> None:
    """The sweep covers every provider module with a result message, not only the first one written."""
    names = {module.__name__.rsplit(".", 1)[1] for module in RESULT_MESSAGES}
    assert {"openai_chat", "anthropic"} <= names
    assert len(RESULT_MESSAGES) >= 2


# ---------------------------------------------------------------------------------------------------
# Rejections at the boundary.


@tool
def carry(payload: Any = None, count: int = 0, when: str = "") -> str:
    """Carry a value."""
    return "ok"


CARRY = bind(carry).contract

SYNTAX = {
    "oversize": '{"payload": "' + SECRET + "x" * MAX_INPUT_BYTES + '"}',
    "truncated": '{"payload": "' + SECRET,
    "trailing data": '{"payload": 1} ' + SECRET,
    "lone surrogate escape": '{"payload": "' + SECRET + '\\ud800"}',
    "lone surrogate char": '{"payload": "' + SECRET + '\ud800"}',
    "raw control character": '{"payload": "' + SECRET + '\x01"}',
    "invalid UTF-8": b'{"payload": "' + SECRET.encode() + b'\xff"}',
    "NaN": '{"payload": NaN, "when": "' + SECRET + '"}',
    "duplicate member": '{"payload": "' + SECRET + '", "payload": "' + SECRET + '"}',
    "escaped duplicate member": '{"payload": "' + SECRET + '", "\\u0070ayload": 1}',
    "a string, not an object": '"' + SECRET + '"',
    "an array, not an object": '["' + SECRET + '"]',
    "too large a number": '{"payload": ["' + SECRET + '", 1e400]}',
    "bare word": SECRET,
    "bare word in an object": "{" + SECRET + "}",
    "single quotes": "{'payload': '" + SECRET + "'}",
    "wrong type": '{"count": "' + SECRET + '"}',
    "unknown member": '{"colour": "' + SECRET + '"}',
    "BOM": "\ufeff" + '{"payload": "' + SECRET + '"}',
    "UTF-16": ('{"payload": "' + SECRET + '"}').encode("utf-16"),
}


@pytest.mark.parametrize("case", sorted(SYNTAX))
def test_syntax_and_shape_rejections_hide_values(case: str) -> None:
    """Every kind of syntax or shape rejection keeps the rejected values out of what the model sees."""
    outcome = prepare(CARRY, SYNTAX[case])
    assert isinstance(outcome, InvalidInvocationError)
    assert classify_input_rejection(outcome) is not None
    assert_clean_rejection(outcome, "carry")


def test_long_member_names_are_clipped_in_paths() -> None:
    """Member names are echoed in paths, but never past 48 characters: a secret after them stays hidden."""
    name = "k" * 48 + SECRET
    outcome = prepare(CARRY, json.dumps({name: 1}))
    assert isinstance(outcome, InvalidInvocationError)
    assert_clean_rejection(outcome, "carry")


SECRETIVE = st.sampled_from([SECRET, SECRET + " ", "x" + SECRET, SECRET * 3])


def _secretize(value: Any, secret: str) -> Any:
    """Every string value replaced by one holding the secret (member names are kept)."""
    if isinstance(value, dict):
        return {key: _secretize(member, secret) for key, member in value.items()}
    if isinstance(value, list):
        return [_secretize(item, secret) for item in value]
    if isinstance(value, str):
        return secret + value
    return value


BINDINGS = all_bindings()


@settings(RELIABLE, max_examples=1000)
@given(name=st.sampled_from(sorted(BINDINGS)), secret=SECRETIVE, data=st.data())
def test_schema_rejections_of_the_whole_corpus_hide_values(name: str, secret: str, data: st.DataObject) -> None:
    """Schema-shaped documents with secrets in every string, and their near misses, never echo a secret."""
    contract = BINDINGS[name].contract
    schema = contract.definition().input_schema
    value = _secretize(data.draw(from_schema(schema) | near_misses(from_schema(schema))), secret)
    value = data.draw(st.sampled_from([value, {"payload": secret, **value} if isinstance(value, dict) else value]))
    outcome = prepare(contract, dumps(value))
    if isinstance(outcome, InvalidInvocationError):
        neutral = output_text(outcome_output(name, outcome)[0])
        if SECRET in neutral and any(form in neutral for form in _repr_escaped(value)):
            return  # the repr-echo bug, pinned by test_repr_quoted_values_are_hidden below
        assert_no_secret(name, outcome)
        assert SECRET not in str(outcome)


def _repr_escaped(value: Any) -> list[str]:
    """The repr() spellings of the string leaves of `value` that differ from the strings themselves."""
    if isinstance(value, dict):
        return [form for member in value.values() for form in _repr_escaped(member)]
    if isinstance(value, list):
        return [form for item in value for form in _repr_escaped(item)]
    if isinstance(value, str) and repr(value)[1:-1] != value:
        return [repr(value)[1:-1]]
    return []


@pytest.mark.parametrize("token", [SECRET + "\x1f", SECRET + "\t", SECRET + "\u200b"])
def test_repr_quoted_values_are_hidden(token: str) -> None:
    """An IPv4 member given a secret with a character repr() escapes gets a message without the secret."""
    outcome = prepare(BINDINGS["address"].contract, json.dumps({"ip": token}))
    assert isinstance(outcome, InvalidInvocationError)
    assert_no_secret("address", outcome)


class Checked(BaseModel):
    """Validators that quote the value they refuse, in the ways pydantic lets them."""

    token: str = ""
    code: int = 0

    @field_validator("token")
    @classmethod
    def no_live_tokens(cls, value: str) -> str:
        """Refuse live tokens, quoting the value (scalar: the contract hides it)."""
        if value.startswith("sk-live"):
            raise ValueError(f"token {value!r} is a live key")
        return value

    @field_validator("code")
    @classmethod
    def small(cls, value: int) -> int:
        """Refuse big codes, quoting the number."""
        if value > 10_000:
            raise ValueError(f"code {value} is too large")
        return value


class Defective(BaseModel):
    """A validator with a defect whose text holds the secret."""

    token: str

    @field_validator("token")
    @classmethod
    def broken(cls, value: str) -> str:
        """Fail with a defect."""
        raise RuntimeError(f"database down while checking {value}")


class Public(BaseModel):
    """A validator whose InputRejection message is public by design (it must not quote the value)."""

    token: str

    @field_validator("token")
    @classmethod
    def refuse(cls, value: str) -> str:
        """Refuse with a public message."""
        raise InputRejection("this token is not accepted", cause=ValueError(value))


def _signature_contract(model: type[BaseModel]) -> Any:
    signature = Signature(model, str)

    class Typed:
        def definition(self) -> Definition:
            return signature.definition("checked")

        def input_validator(self) -> Any:
            return signature.input_validator()

        async def call(self, invocation: Invocation) -> Result:
            return Result()

    return bind(Typed()).contract


@pytest.mark.parametrize(
    ("model", "document"),
    [
        (Checked, {"token": SECRET}),
        (Checked, {"code": 987654321}),
        (Defective, {"token": SECRET}),
        (Public, {"token": SECRET}),
    ],
)
def test_validator_messages_hide_values(model: type[BaseModel], document: dict[str, Any]) -> None:
    """A field validator quoting its value, a validator defect and a public rejection never show the value."""
    outcome = prepare(_signature_contract(model), json.dumps(document))
    assert isinstance(outcome, InvalidInvocationError)
    assert_clean_rejection(outcome, "checked")
    assert "987654321" not in "".join(visible("checked", outcome))


class Pair(BaseModel):
    """A model validator that quotes a member value."""

    token: str
    confirm: str

    @model_validator(mode="after")
    def same(self) -> Pair:
        """Refuse a mismatch, quoting the token."""
        if self.token != self.confirm:
            raise ValueError(f"{self.token} does not match the confirmation")
        return self


class Before(BaseModel):
    """A before-validator that quotes the whole input."""

    token: str

    @model_validator(mode="before")
    @classmethod
    def inspect(cls, data: Any) -> Any:
        """Refuse, quoting the input."""
        raise ValueError(f"cannot use {data}")


def _refuse_list(items: list[str]) -> list[str]:
    raise ValueError(f"refused {items}")


class Listed(BaseModel):
    """A list validator that quotes the list."""

    tokens: Annotated[list[str], AfterValidator(_refuse_list)]


@pytest.mark.parametrize(
    ("model", "document"),
    [
        (Pair, {"token": SECRET, "confirm": "other"}),
        (Before, {"token": SECRET}),
        (Listed, {"tokens": [SECRET]}),
    ],
)
def test_container_validator_messages_hide_member_values(model: type[BaseModel], document: dict[str, Any]) -> None:
    """A validator of an object or array that quotes one of its members does not show that member."""
    outcome = prepare(_signature_contract(model), json.dumps(document))
    assert isinstance(outcome, InvalidInvocationError)
    assert_no_secret("checked", outcome)


def test_hand_written_input_validator_defect_hides_its_text() -> None:
    """A hand-written tool's input validator that fails with the secret in its error shows nothing of it."""

    class Hooked:
        def definition(self) -> Definition:
            return Definition(
                name="hooked", input_schema={"type": "object", "properties": {"token": {"type": "string"}}}
            )

        def input_validator(self) -> Callable[[bytes], Any]:
            def hook(raw: bytes) -> Any:
                raise KeyError(raw.decode())

            return hook

        async def call(self, invocation: Invocation) -> Result:
            return Result()

    outcome = prepare(bind(Hooked()).contract, json.dumps({"token": SECRET}))
    assert isinstance(outcome, InvalidInvocationError)
    assert_clean_rejection(outcome, "hooked")


# ---------------------------------------------------------------------------------------------------
# Failures during the call.


def _tool(name: str, body: Callable[[], Awaitable[Any]], effect: Effect | None = None) -> Any:
    class Scripted:
        def definition(self) -> Definition:
            return Definition(
                name=name, input_schema={"type": "object", "properties": {"token": {"type": "string"}}}, effect=effect
            )

        async def call(self, invocation: Invocation) -> Result:
            return await body()  # type: ignore[no-any-return]

    return Scripted()


async def _raise(error: BaseException) -> Any:
    raise error


def _chained() -> BaseException:
    try:
        raise Failure(kind=FailureKind.FAILED, output="the export failed", cause=RuntimeError(SECRET))
    except Failure as failure:
        wrapper = RuntimeError(f"while exporting {SECRET}")
        wrapper.__cause__ = failure
        return wrapper


def _inner_rejection() -> BaseException:
    outcome = prepare(CARRY, json.dumps({"count": SECRET}))
    assert isinstance(outcome, InvalidInvocationError)
    wrapper = RuntimeError(f"nested call failed with {SECRET}")
    wrapper.__cause__ = outcome
    return wrapper


def _pydantic_error() -> BaseException:
    try:
        TypeAdapter(int).validate_python(SECRET)
    except ValueError as error:
        return error
    raise AssertionError("unreachable")


CALL_FAILURES: dict[str, Callable[[], BaseException]] = {
    "ordinary error": lambda: RuntimeError(SECRET),
    "key error": lambda: KeyError(SECRET),
    "call error with evidence": lambda: CallError(RuntimeError(SECRET), evidence=f"wrote {SECRET}"),
    "exception group": lambda: ExceptionGroup("many", [ValueError(SECRET), KeyError(SECRET)]),
    "failure with a secret cause": lambda: Failure(
        kind=FailureKind.FAILED, output="it failed", cause=ValueError(SECRET)
    ),
    "rejected failure": lambda: Failure(kind=FailureKind.REJECTED, output="not allowed", cause=PermissionError(SECRET)),
    "error chained from a failure": _chained,
    "error chained from an inner rejection": _inner_rejection,
    "pydantic validation error": _pydantic_error,
    "two failures in a group": lambda: ExceptionGroup(
        "two",
        [
            Failure(kind=FailureKind.FAILED, output="a", cause=ValueError(SECRET)),
            Failure(kind=FailureKind.FAILED, output="b", cause=ValueError(SECRET)),
        ],
    ),
    "two rejections in a group": lambda: ExceptionGroup("two", [InputRejection("a"), InputRejection("b")]),
    "cancellation": lambda: asyncio.CancelledError(SECRET),
}


async def _outcome(binding: Binding, arguments: str = '{"token": "' + SECRET + '"}') -> Result | BaseException:
    invocation = binding.contract.prepare(Request(name=binding.name, arguments=arguments))
    try:
        return await binding.call(invocation)
    except BaseException as error:
        return error


@pytest.mark.parametrize("effect", [None, Effect.SAFE, Effect.IDEMPOTENT])
@pytest.mark.parametrize("case", sorted(CALL_FAILURES))
async def test_call_failures_hide_their_text(case: str, effect: Effect | None) -> None:
    """Every way a call can fail, safe or not, shows the model only a Failure's output or a generic text."""
    error = CALL_FAILURES[case]()
    binding = bind(_tool("scripted", lambda: _raise(error), effect))
    outcome = await _outcome(binding)
    assert isinstance(outcome, BaseException)
    assert_no_secret("scripted", outcome)


async def test_middleware_errors_hide_their_text() -> None:
    """A middleware that fails with the secret shows the model a generic text."""

    async def failing(invocation: Invocation, call_next: Any) -> Result:
        raise RuntimeError(SECRET)

    binding = bind(_tool("scripted", lambda: _raise(AssertionError("the tool must not run"))), failing)
    outcome = await _outcome(binding)
    assert isinstance(outcome, RuntimeError)
    assert_no_secret("scripted", outcome)


async def _policy_error(authorization: Any) -> bool:
    raise RuntimeError(f"policy store refused {authorization.arguments.decode()}")


async def _policy_failure(authorization: Any) -> bool:
    raise Failure(kind=FailureKind.REJECTED, output=f"refused {SECRET}")


def _policy_rejection(authorization: Any) -> bool:
    raise InputRejection(f"bad token {SECRET}")


POLICIES: dict[str, Callable[[Any], Any]] = {
    "refusal": lambda authorization: False,
    "async refusal": lambda authorization: asyncio.sleep(0, result=False),
    "policy error quoting the arguments": _policy_error,
    "policy raising a Failure": _policy_failure,
    "policy raising an InputRejection": _policy_rejection,
    "policy returning a non-bool": lambda authorization: SECRET,
}


@pytest.mark.parametrize("case", sorted(POLICIES))
async def test_guard_refusals_and_policy_errors_hide_values(case: str) -> None:
    """Guard refusals and every kind of policy error show a generic text, never the arguments or the error."""
    ran: list[bool] = []

    async def body() -> Result:
        ran.append(True)
        return Result()

    binding = bind(_tool("guarded", body), Guard(POLICIES[case]))
    outcome = await _outcome(binding)
    assert isinstance(outcome, BaseException)
    assert ran == []
    assert_no_secret("guarded", outcome)


async def test_output_contract_errors_hide_the_value() -> None:
    """A tool returning a value its declared output type cannot encode shows a generic text."""

    @tool
    def counts() -> int:
        """Count."""
        return SECRET  # type: ignore[return-value]

    outcome = await _outcome(bind(counts), "{}")
    assert isinstance(outcome, BaseException)
    assert_no_secret("counts", outcome)


async def test_the_sweep_can_see_a_leak() -> None:
    """The sweep itself works: a Failure whose public output holds the secret is caught by it."""
    error = Failure(kind=FailureKind.REJECTED, output=f"not for {SECRET}")
    with pytest.raises(AssertionError, match="reached the model"):
        assert_no_secret("scripted", error)
    assert all(SECRET in text for text in visible("scripted", Result(output=Output.from_text(SECRET))))
