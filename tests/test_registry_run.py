"""Tests for `Registry.run` and `Registry.run_sync`: one call a model proposed, admitted and run, to its outcome."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scopetool import (
    Admission,
    InvalidInvocationError,
    Registry,
    Result,
    ToolNotFoundError,
    _observe,
    classify_input_rejection,
    tool,
)
from scopetool.providers import openai_chat, outcome_output

ran: list[int] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append(a + b)
    return a + b


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool
def explode() -> str:
    """Fail."""
    raise ValueError("secret detail")


@tool(approval=lambda: "Go ahead?")
def guarded() -> str:
    """Act after a person says yes."""
    return "done"


REGISTRY = Registry(add, ping, explode, guarded)


def test_a_good_call_is_admitted_and_run() -> None:
    """The arguments are admitted by the tool's contract and the tool's result is the outcome."""
    outcome = REGISTRY.run_sync("add", '{"a": 2, "b": 3}')
    assert isinstance(outcome, Result)
    assert outcome.output.text() == "5"


def test_bytes_and_blank_arguments_are_accepted() -> None:
    """Arguments may be bytes, and blank (the default) means `{}`, as for `Request`."""
    pong, two = REGISTRY.run_sync("ping"), REGISTRY.run_sync("add", b'{"a": 1, "b": 1}')
    assert isinstance(pong, Result) and pong.output.text() == "pong"
    assert isinstance(two, Result) and two.output.text() == "2"


def test_a_rejected_call_is_returned_and_never_runs() -> None:
    """A call the contract rejects is its `InvalidInvocationError`, returned, and the tool does not run."""
    ran.clear()
    outcome = REGISTRY.run_sync("add", '{"a": 2, "b": "3"}')
    assert isinstance(outcome, InvalidInvocationError)
    rejection = classify_input_rejection(outcome)
    assert rejection is not None
    assert "$.b: Input should be a valid integer (got a string)" in rejection.message
    assert ran == []


def test_an_unknown_name_is_a_tool_not_found_error_with_the_nearest_names() -> None:
    """An unknown name is returned as a `ToolNotFoundError` saying "did you mean"; the model is told the same text."""
    outcome = REGISTRY.run_sync("ad", "{}")
    assert isinstance(outcome, ToolNotFoundError)
    assert (outcome.name, outcome.near) == ("ad", ("add",))
    assert str(outcome) == 'error: tool "ad" is not available; did you mean "add"?'
    shown, is_error = outcome_output("ad", outcome)
    assert is_error and shown.text() == str(outcome)


def test_a_tools_error_is_returned_and_the_model_sees_none_of_it() -> None:
    """What the tool raises is the outcome, not raised; a provider's answer shows only the generic text."""
    outcome = REGISTRY.run_sync("explode")
    assert isinstance(outcome, ValueError)
    call = openai_chat.parse_tool_calls(
        [{"id": "c1", "type": "function", "function": {"name": "explode", "arguments": "{}"}}]
    )[0]
    message = openai_chat.result_message(call, outcome)
    assert "secret" not in str(message) and 'error: tool "explode" failed' in str(message)


def test_the_admission_reaches_the_contract() -> None:
    """An approval asks first; the same call with the answer as its continuation runs."""
    asked = REGISTRY.run_sync("guarded")
    assert isinstance(asked, Result) and asked.input_request is not None
    assert asked.input_request.prompt == "Go ahead?"
    approved = Admission(continuation=asked.input_request.continuation(True))
    done = REGISTRY.run_sync("guarded", admission=approved)
    assert isinstance(done, Result) and done.output.text() == "done"


async def test_run_is_awaited_in_async_code_and_run_sync_refuses_there() -> None:
    """`await registry.run(...)` works inside a loop; `run_sync` there says to await `run` instead."""
    outcome = await REGISTRY.run("add", '{"a": 4, "b": 5}')
    assert isinstance(outcome, Result) and outcome.output.text() == "9"
    with pytest.raises(RuntimeError, match=r"await registry\.run\(\.\.\.\)"):
        REGISTRY.run_sync("add", '{"a": 4, "b": 5}')


def test_an_observer_is_told_of_an_unknown_name() -> None:
    """With an observer installed (tracing), an unknown name is reported to it, with no call id."""
    seen: list[tuple[str, str | None]] = []

    class Unknowns:
        def unknown(self, name: str, call_id: str | None) -> None:
            seen.append((name, call_id))

        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"only unknown() is expected, not {name}")

    previous = _observe.install(Unknowns())  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    try:
        asyncio.run(REGISTRY.run("nothing"))
    finally:
        _observe.install(previous)
    assert seen == [("nothing", None)]
