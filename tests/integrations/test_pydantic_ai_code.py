"""Code mode in the pydantic-ai integration, run by pydantic-ai's own Agent loop on a scripted FunctionModel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("pydantic_monty")

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from scopetool import Effect, Registry, tool
from scopetool.code import CodeLimits
from scopetool.driver import MemoryBackend
from scopetool.integrations.pydantic_ai import ScopetoolToolset, answer_requests, input_requests

FIRST_TRY = """
total = 0
for city in ['Oslo', 'Lyon']:
    total += await population(city=city)
await convert(amount=total, currency=42)
"""

SECOND_TRY = """
total = 0
for city in ['Oslo', 'Lyon']:
    total += await population(city=city)
await convert(amount=total, currency='EUR')
"""

APPROVED_MID_CODE = """
receipt = await charge(amount=5)
sent = await send(to='ACME')
[receipt, sent, await ship()]
"""


class Script:
    """A FunctionModel sending each turn's code to run_code; it records the tools offered and the returns shown."""

    def __init__(self, *snippets: str) -> None:
        self.snippets = list(snippets)
        self.offered: list[str] = []
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.offered = [definition.name for definition in info.function_tools]
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart):  # a failed return is pydantic-ai's {"error": <the report's JSON>}
                shown = json.loads(part.model_response_str())
                self.seen.append((part.outcome, json.loads(shown["error"]) if part.outcome == "failed" else shown))
        if self.snippets:
            call_id = f"call-{len(self.snippets)}"
            return ModelResponse(parts=[ToolCallPart("run_code", {"code": self.snippets.pop(0)}, tool_call_id=call_id)])
        return ModelResponse(parts=[TextPart("done")])


def counted_tools(runs: Counter[str]) -> Registry:
    """Tools that count each run: lookups, a charge, a send asking a person first, and a shipment."""

    @tool(effect=Effect.SAFE)
    def population(city: str) -> int:
        """The population of a city, in thousands."""
        runs[f"population {city}"] += 1
        return {"Oslo": 700, "Lyon": 520}[city]

    @tool(effect=Effect.SAFE)
    def convert(amount: int, currency: str) -> str:
        """Write an amount in a currency."""
        runs[f"convert {currency}"] += 1
        return f"{amount} {currency}"

    @tool
    def charge(amount: int) -> str:
        """Charge the customer (no effect promise: never run twice)."""
        runs["charge"] += 1
        return f"charged {amount}"

    def prompt(to: str) -> str:
        return f"send the invoice to {to}?"

    @tool(approval=prompt)
    def send(to: str) -> str:
        """Send the invoice, once a person approves."""
        runs["send"] += 1
        return f"sent to {to}"

    @tool
    def ship() -> str:
        """Ship the order."""
        runs["ship"] += 1
        return "shipped"

    return Registry(population, convert, charge, send, ship)


def agent_for(script: Script, toolset: ScopetoolToolset[None]) -> Agent[None, str | DeferredToolRequests]:
    return Agent(FunctionModel(script), toolsets=[toolset], output_type=[str, DeferredToolRequests])


async def test_the_model_fixes_its_code_from_a_nested_rejection() -> None:
    """Only run_code is offered; a bad nested call is rejected with the tool's message and fixed next turn."""
    runs: Counter[str] = Counter()
    script = Script(FIRST_TRY, SECOND_TRY)
    result = await agent_for(script, ScopetoolToolset(counted_tools(runs), code_mode=True)).run("population in EUR")
    assert result.output == "done"
    assert script.offered == ["run_code"]
    (outcome, report), (fixed_outcome, fixed) = script.seen
    assert outcome == "failed"
    assert "ValueError: invalid arguments for tool 'convert'" in report["error"] and "$.currency" in report["error"]
    assert [call["outcome"] for call in report["calls"]] == ["returned", "returned", "rejected"]
    assert fixed_outcome == "success" and fixed["result"] == "1220 EUR"
    assert [call["outcome"] for call in fixed["calls"]] == ["returned"] * 3
    assert runs == {"population Oslo": 2, "population Lyon": 2, "convert EUR": 1}  # the rejected call never ran


@pytest.mark.parametrize(
    ("approved", "shown", "backend"),
    [(True, "success", MemoryBackend()), (False, "failed", None)],
    ids=["approved, a backend given", "declined, the code tool's own records"],
)
async def test_an_approval_mid_code_is_deferred_and_resumes_the_same_code_call(
    approved: bool, shown: str, backend: MemoryBackend | None
) -> None:
    """The nested approval becomes pydantic-ai's deferred approval; the answer resumes the code, nothing twice."""
    runs: Counter[str] = Counter()
    script = Script(APPROVED_MID_CODE)
    toolset = ScopetoolToolset(counted_tools(runs), code_mode=CodeLimits(nested_calls=5), code_backend=backend)
    agent = agent_for(script, toolset)
    first = await agent.run("bill ACME")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    assert script.seen == [] and runs == {"charge": 1}  # asked before send ran; the model was shown nothing yet
    ((call_id, request),) = input_requests(requests).items()
    assert request.prompt == "send the invoice to ACME?"
    second = await agent.run(
        message_history=first.all_messages(), deferred_tool_results=answer_requests(requests, {call_id: approved})
    )
    assert second.output == "done"
    ((outcome, report),) = script.seen
    assert outcome == shown
    if approved:
        assert report["result"] == ["charged 5", "sent to ACME", "shipped"]
        assert runs == {"charge": 1, "send": 1, "ship": 1}  # charge, done before the approval, did not run again
    else:
        assert 'PermissionError: error: tool "send" was not run: approval was declined' in report["error"]
        assert runs == {"charge": 1}
    assert report["calls"][0] == {"tool": "charge", "outcome": "returned"}


async def test_the_limits_given_bound_each_snippet() -> None:
    """code_mode=CodeLimits(...) is the snippets' bounds: past its nested-call budget a call is refused."""
    runs: Counter[str] = Counter()
    script = Script("[await ship(), await ship()]")
    await agent_for(script, ScopetoolToolset(counted_tools(runs), code_mode=CodeLimits(nested_calls=1))).run("go")
    ((outcome, report),) = script.seen
    assert outcome == "failed" and "used its 1 nested tool calls" in report["error"]
    assert runs == {"ship": 1}


def test_code_mode_options_are_checked() -> None:
    """A code_mode that is not a bool or CodeLimits, or options that do not go with it, are clear errors."""
    registry = counted_tools(Counter())
    with pytest.raises(TypeError, match="code_mode must be True, False or CodeLimits, not str"):
        ScopetoolToolset(registry, code_mode="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="code_backend applies only with code_mode"):
        ScopetoolToolset(registry, code_backend=MemoryBackend())
    with pytest.raises(ValueError, match="nothing to defer"):
        ScopetoolToolset(registry, code_mode=True, defer_loading=True)


def test_importing_the_integration_does_not_import_the_sandbox() -> None:
    """The sandbox is imported only when a toolset turns code mode on."""
    probe = (
        "import sys\n"
        "from scopetool import Registry\n"
        "from scopetool.integrations.pydantic_ai import ScopetoolToolset\n"
        "ScopetoolToolset(Registry())\n"
        "before = 'pydantic_monty' in sys.modules\n"
        "ScopetoolToolset(Registry(), code_mode=True)\n"
        "print(before, 'pydantic_monty' in sys.modules)\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    assert done.stdout.split() == ["False", "True"]
