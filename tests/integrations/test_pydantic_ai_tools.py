"""pydantic-ai function tools wrapped as scopetool tools: the contract enforces their schema first."""

from __future__ import annotations

import subprocess
import sys
from datetime import date

import pytest
from pydantic_ai import RunContext, Tool
from pydantic_ai.exceptions import ModelRetry, ToolFailed

from scopetool import Effect, InvalidInvocationError, Registry, Request, Result, classify_input_rejection
from scopetool.integrations.pydantic_ai_tools import PydanticAITool, from_pydantic_ai
from scopetool.providers import ToolCall, outcome_output, run_call

RAN: list[str] = []


def book(restaurant: str, party_size: int, day: date) -> str:
    """Book a table.

    Args:
        restaurant: The restaurant's id.
        party_size: How many people.
        day: The day.
    """
    RAN.append(f"{restaurant} {party_size} {day!r}")
    if party_size > 12:
        raise ModelRetry("tables seat at most 12")
    if restaurant == "closed":
        raise ToolFailed("that restaurant is closed")
    if restaurant == "crash":
        raise RuntimeError("secret-token-9")
    return f"booked {party_size} at {restaurant}"


async def menu(restaurant: str) -> list[str]:
    """The menu."""
    return ["soup", restaurant]


def with_ctx(ctx: RunContext[None], x: int) -> int:
    """Needs a run."""
    return x


async def test_the_pydantic_ai_schema_is_enforced_strictly_before_the_function_runs() -> None:
    """Good calls run with pydantic-ai's own argument types; coerced, unknown or repeated members run nothing."""
    registry = Registry(from_pydantic_ai(Tool(book), effect=Effect.IDEMPOTENT), from_pydantic_ai(Tool(menu)))
    binding = registry.resolve("book")
    assert binding is not None
    definition = binding.contract.definition()
    assert definition.input_schema == Tool(book).tool_def.parameters_json_schema  # what the model is shown
    assert definition.description.startswith("Book a table") and definition.effect is Effect.IDEMPOTENT

    async def outcome(name: str, arguments: str) -> Result | BaseException:
        return await run_call(registry, ToolCall("c", Request(name, arguments)))

    RAN.clear()
    done = await outcome("book", '{"restaurant": "tasca", "party_size": 4, "day": "2026-06-01"}')
    assert isinstance(done, Result) and done.output.text() == "booked 4 at tasca"
    assert RAN == ["tasca 4 datetime.date(2026, 6, 1)"]  # pydantic-ai's validator built the date
    listed = await outcome("menu", '{"restaurant": "tasca"}')
    assert isinstance(listed, Result) and listed.output.details == b'["soup","tasca"]'
    RAN.clear()
    for bad, problem in (
        ('{"restaurant": "tasca", "party_size": "4", "day": "2026-06-01"}', "$.party_size"),
        ('{"restaurant": "tasca", "party_size": 4, "day": "2026-06-01", "vip": true}', "vip"),
        ('{"restaurant": "a", "restaurant": "b", "party_size": 4, "day": "2026-06-01"}', "same member name twice"),
    ):
        refused = await outcome("book", bad)
        assert isinstance(refused, InvalidInvocationError)
        rejection = classify_input_rejection(refused)
        assert rejection is not None and problem in rejection.message
    assert RAN == []


async def test_model_retry_and_tool_failed_become_failures_and_other_errors_stay_private() -> None:
    """ModelRetry and ToolFailed messages reach the model as a Failure's output; another error as a generic text."""
    registry = Registry(from_pydantic_ai(Tool(book)))
    seen = []
    for restaurant, size in (("tasca", 20), ("closed", 2), ("crash", 2)):
        arguments = f'{{"restaurant": "{restaurant}", "party_size": {size}, "day": "2026-06-01"}}'
        found = await run_call(registry, ToolCall("c", Request("book", arguments)))
        seen.append(outcome_output("book", found)[0].text())
    assert seen == ["tables seat at most 12", "that restaurant is closed", 'error: tool "book" failed']


def test_only_plain_function_tools_are_wrapped() -> None:
    """A tool taking a RunContext, or anything but a pydantic-ai Tool, is refused with a TypeError naming why."""
    with pytest.raises(TypeError, match="takes a RunContext"):
        from_pydantic_ai(Tool(with_ctx))
    with pytest.raises(TypeError, match="pydantic-ai Tool"):
        from_pydantic_ai(book)  # type: ignore[arg-type]
    assert isinstance(from_pydantic_ai(Tool(menu)), PydanticAITool)


def test_import_without_pydantic_ai_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the module without pydantic-ai says how to install it; ``import scopetool`` never imports it."""
    import importlib

    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    monkeypatch.delitem(sys.modules, "scopetool.integrations.pydantic_ai_tools")
    with pytest.raises(ImportError, match=r"pip install 'scopetool\[pydantic-ai\]'"):
        importlib.import_module("scopetool.integrations.pydantic_ai_tools")
    code = (
        "import sys, scopetool, scopetool.integrations; print([m for m in sys.modules if m.startswith('pydantic_ai')])"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
