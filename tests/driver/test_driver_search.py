"""The driver and tool search: a run's reveals, their order, their refusal before a search, and what keeps them."""

from __future__ import annotations

import json
from typing import Any

import pytest

import scopetool.driver._driver as driver_module
from scopetool import Effect, IdempotencyKey, Registry, Request, tool
from scopetool.driver import AdmittedCall, CallState, Driver, MemoryBackend, RevealStore, Turn
from scopetool.providers import ToolCall, anthropic, openai_chat

RAN: list[str] = []


@tool(effect=Effect.SAFE)
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool(defer_loading=True)
def get_weather(city: str) -> str:
    """Current weather for a city."""
    RAN.append(city)
    return f"sunny in {city}"


@tool(defer_loading=True)
def convert_currency(amount: float, currency: str) -> str:
    """Convert an amount of money to another currency."""
    return f"{amount} {currency}"


REGISTRY = Registry(ping, get_weather, convert_currency)


def call(call_id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
    """A tool call with JSON arguments."""
    return ToolCall(id=call_id, request=Request(name=name, arguments=json.dumps(arguments)))


def texts(turn: Turn) -> list[str]:
    """What the model is shown for each call."""
    return [m["content"] for m in turn.messages(openai_chat)]


async def test_a_run_searches_then_calls_what_it_found() -> None:
    """Refused before the search, admitted by its own contract after; the catalog grows at its end only."""
    driver = Driver(REGISTRY)
    before = [d.name for d in await driver.catalog("run")]
    assert before == ["ping", "search_tools"]
    first = await driver.run("run", [call("a", "get_weather", {"city": "Oslo"}), call("b", "ping", {})])
    assert texts(first)[0].startswith('error: tool "get_weather" is not loaded yet')
    assert texts(first)[1] == "pong"
    found = await driver.run("run", [call("c", "search_tools", {"query": "weather in a city"})])
    assert [t["name"] for t in json.loads(texts(found)[0])] == ["get_weather"]
    catalog = await driver.catalog("run")
    assert [d.name for d in catalog] == [*before, "get_weather"]
    assert anthropic.export_tools(catalog).tools[-1]["name"] == "get_weather"
    RAN.clear()
    served = await driver.run(
        "run", [call("d", "get_weather", {"city": 5}), call("e", "get_weather", {"city": "Oslo"})]
    )
    assert "$.city" in texts(served)[0] and texts(served)[1] == "sunny in Oslo" and RAN == ["Oslo"]
    other = await driver.run("other", [call("a", "get_weather", {"city": "Oslo"})])
    assert "not loaded yet" in texts(other)[0]


async def test_reveals_outlive_the_driver_on_the_same_backend() -> None:
    """A new driver on the same memory backend finds the run's reveals, in the order they were made."""
    backend = MemoryBackend()
    driver = Driver(REGISTRY, backend)
    await driver.run("run", [call("a", "search_tools", {"query": "convert money currency"})])
    await driver.run("run", [call("b", "search_tools", {"query": "weather"})])
    assert await backend.revealed("run") == ("convert_currency", "get_weather")
    again = Driver(REGISTRY, backend)
    assert (await again.catalog("run")).revealed == ("convert_currency", "get_weather")
    turn = await again.run("run", [call("c", "convert_currency", {"amount": 2, "currency": "EUR"})])
    assert texts(turn) == ["2.0 EUR"]


class Forgetful:
    """A backend that keeps calls but no reveals (not a RevealStore)."""

    def __init__(self) -> None:
        self.inner = MemoryBackend()

    async def secret(self) -> bytes:
        return await self.inner.secret()

    async def start(self, call: AdmittedCall) -> CallState:
        return await self.inner.start(call)

    async def answer(self, key: IdempotencyKey, response: Any) -> bool:
        return await self.inner.answer(key, response)


async def test_a_backend_without_a_reveal_store_keeps_reveals_in_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reveals stay in the driver's memory, which forgets the least recently driven runs past KEPT_RUNS."""
    backend = Forgetful()
    assert not isinstance(backend, RevealStore)
    driver = Driver(REGISTRY, backend)
    await driver.run("one", [call("a", "search_tools", {"query": "weather"})])
    assert (await driver.catalog("one")).revealed == ("get_weather",)
    monkeypatch.setattr(driver_module, "KEPT_RUNS", 1)
    await driver.catalog("two")
    assert (await driver.catalog("one")).revealed == ()
    assert (await Driver(REGISTRY, backend).catalog("two")).revealed == ()
    with pytest.raises(ValueError, match="run_id must be a non-empty string"):
        await driver.catalog("")


async def test_a_registry_without_deferred_tools_is_driven_as_before() -> None:
    """No search tool is offered or run: a search_tools call is an unknown tool."""
    driver = Driver(Registry(ping))
    turn = await driver.run("run", [call("a", "search_tools", {"query": "x"})])
    assert texts(turn) == ['error: tool "search_tools" is not available']
