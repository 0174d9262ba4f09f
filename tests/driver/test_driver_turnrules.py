"""Turn rules under the driver, in memory and on DBOS with SQLite: replays count once, a restart forgets nothing."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from driver_support import database_url

from scopetool import Registry, Request, TurnRules, tool
from scopetool.driver import Backend, Driver, MemoryBackend, Turn
from scopetool.providers import ToolCall, openai_chat

RAN: list[str] = []
RULES = TurnRules(limits={"send": 2}, per_turn=3, refuse_repeats=True)


@tool
def send(to: str) -> str:
    """Send a note (no replay promise)."""
    RAN.append(to)
    return f"sent {to}"


REGISTRY = Registry(send)


@dataclass
class Setup:
    """A backend, a driver with the rules on it, and how to make the backend's process start again."""

    backend: Backend
    driver: Driver
    reopen: Any


@pytest.fixture(scope="module", params=["memory", "dbos-sqlite"])
def setup(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    if request.param == "memory":
        backend = MemoryBackend()
        yield Setup(backend, Driver(REGISTRY, backend, rules=RULES), lambda: None)
        return
    dbos = pytest.importorskip("scopetool.driver.dbos")
    url = database_url("sqlite", tmp_path_factory.mktemp("turnrules"), request)
    with dbos.DbosBackend(REGISTRY, url, executor_id="turnrules", poll_interval=0.05) as durable:

        def reopen() -> None:
            durable.close()
            durable.open()

        yield Setup(durable, Driver(REGISTRY, durable, rules=RULES), reopen)


def calls(*specs: tuple[str, str]) -> list[ToolCall]:
    """Calls of send, each (call id, recipient)."""
    return [ToolCall(id=i, request=Request(name="send", arguments=json.dumps({"to": to}))) for i, to in specs]


def texts(turn: Turn) -> list[str]:
    return [m["content"] for m in turn.messages(openai_chat)]


async def test_a_replayed_turn_counts_nothing_twice(setup: Setup) -> None:
    """The same turn driven again returns the same outcomes and spends no budget; the next turn is refused."""
    run, a, b = uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex
    turn = calls(("c1", a), ("c2", b))
    first = await setup.driver.run(run, turn)
    again = await setup.driver.run(run, turn)
    assert texts(first) == texts(again) == [f"sent {a}", f"sent {b}"]
    assert RAN.count(a) == RAN.count(b) == 1
    refused = texts(await setup.driver.run(run, calls(("c3", uuid.uuid4().hex))))
    assert refused == [
        'error: tool "send" was not run: its budget in this run is spent (2 of 2 calls); '
        "do not call it again in this run: use the results you have, or another tool"
    ]


async def test_a_repeat_in_the_turn_is_refused_and_stays_refused_on_replay(setup: Setup) -> None:
    """A second call with the same arguments (other spacing) is refused, in the first drive and the replay."""
    run, a = uuid.uuid4().hex, uuid.uuid4().hex
    turn = [*calls(("c1", a)), ToolCall(id="c2", request=Request(name="send", arguments=f'{{ "to" :  "{a}" }}'))]
    for _ in range(2):
        shown = texts(await setup.driver.run(run, turn))
        assert shown[0] == f"sent {a}" and "the same call (the same arguments) already ran in this run" in shown[1]
        assert a not in shown[1]
    assert RAN.count(a) == 1


async def test_a_driver_made_again_after_a_restart_forgets_nothing(setup: Setup) -> None:
    """After the backend's process starts again, a new driver refuses a repeat and a call past the budget."""
    run, a, b = uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex
    await setup.driver.run(run, calls(("c1", a)))
    await asyncio.to_thread(setup.reopen)
    driver = Driver(REGISTRY, setup.backend, rules=RULES)
    assert "already ran in this run" in texts(await driver.run(run, calls(("c2", a))))[0]
    assert texts(await driver.run(run, calls(("c3", b)))) == [f"sent {b}"]
    assert "(2 of 2 calls)" in texts(await driver.run(run, calls(("c4", uuid.uuid4().hex))))[0]
    assert RAN.count(a) == 1


async def test_the_turns_budget_counts_each_turn_and_rules_off_cost_nothing(setup: Setup) -> None:
    """per_turn=1 refuses the second call of one turn; a driver with rules all off runs every call, repeats too."""
    run = uuid.uuid4().hex
    wide = Driver(REGISTRY, setup.backend, rules=TurnRules(per_turn=1))
    shown = texts(await wide.run(run, calls(("c1", "x1"), ("c2", "x2"))))
    assert shown[0] == "sent x1" and "this turn's budget of tool calls is spent (1 of 1)" in shown[1]
    plain = Driver(REGISTRY, setup.backend, rules=TurnRules())
    other = uuid.uuid4().hex
    assert texts(await plain.run(other, calls(("c1", "y"), ("c2", "y")))) == ["sent y", "sent y"]
