"""Code mode through provider loops: a scripted model's code calls tools in a loop, then in parallel once fixed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from model_turns import PATHS

from scopetool import Effect, Registry, tool
from scopetool.code import code_tool
from scopetool.providers import ToolCall, run_call
from scopetool.providers._common import outcome_output

FIRST_TRY = """
total = 0
for city in ['Oslo', 'Lyon']:
    total += await population(city=city)
await convert(amount=total, currency=42)
"""

SECOND_TRY = """
import asyncio
sizes = await asyncio.gather(*[population(city=city) for city in ['Oslo', 'Lyon']])
await convert(amount=sum(sizes), currency='EUR')
"""


def _registry(runs: list[str]) -> Registry:
    @tool(effect=Effect.SAFE)
    def population(city: str) -> int:
        """The population of a city, in thousands."""
        runs.append(f"population {city}")
        return {"Oslo": 700, "Lyon": 520}[city]

    @tool(effect=Effect.SAFE)
    def convert(amount: int, currency: str) -> str:
        """Write an amount in a currency."""
        runs.append(f"convert {currency}")
        return f"{amount} {currency}"

    return Registry(code_tool(Registry(population, convert)))


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_scripted_model_fixes_its_code_from_the_nested_rejection(path: str) -> None:
    """The bad nested call's rejection names the tool and the field; the fixed code runs every call."""
    module, payload = PATHS[path]
    runs: list[str] = []
    registry = _registry(runs)
    exported = json.dumps(module.export_tools(registry).tools)
    assert "run_code" in exported and "population(city)" in exported and "convert(amount, currency)" in exported

    def turn(call_id: str, code: str) -> tuple[dict[str, Any], bool]:
        calls: list[ToolCall] = module.parse_tool_calls(payload(call_id, "run_code", {"code": code}))
        (call,) = calls
        outcome = asyncio.run(run_call(registry, call))
        module.result_message(call, outcome)  # every provider can answer it
        output, error = outcome_output(call.name, outcome)
        text = output.text()
        assert text is not None
        return json.loads(text), error

    report, error = turn("c1", FIRST_TRY)
    assert (
        error
        and "ValueError: invalid arguments for tool 'convert'" in report["error"]
        and "$.currency" in report["error"]
    )
    assert [call["outcome"] for call in report["calls"]] == ["returned", "returned", "rejected"]
    assert runs == ["population Oslo", "population Lyon"]  # the rejected call never ran
    report, error = turn("c2", SECOND_TRY)
    assert not error and report["result"] == "1220 EUR"
    assert [call["outcome"] for call in report["calls"]] == ["returned"] * 3
    assert sorted(runs[2:4]) == ["population Lyon", "population Oslo"] and runs[4:] == ["convert EUR"]  # gathered
