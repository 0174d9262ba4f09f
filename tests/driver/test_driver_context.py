"""The Driver with CallContext tools: one-line approvals and questions on the memory backend and on DBOS (SQLite)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import pytest
from driver_support import database_url

from scopetool import CallContext, Effect, Registry, Request, tool
from scopetool.driver import CallStatus, Driver, MemoryBackend, Turn
from scopetool.providers import ToolCall, openai_chat


@dataclass
class Ledger:
    """The application's dependency: what the tools did, and the user they act for."""

    user: str
    done: list[str] = field(default_factory=list)


@tool(approval=lambda path: f"Delete {path}?")
def delete(ctx: CallContext[Ledger], path: str) -> str:
    """Delete a file once a person approves it."""
    ctx.deps.done.append(f"deleted {path} {ctx.idempotency_key}")
    return f"{ctx.deps.user} deleted {path}"


@tool(effect=Effect.SAFE)
async def tag(ctx: CallContext[Ledger], path: str) -> str:
    """Tag a file with the word a person gives."""
    word = ctx.ask(f"A tag for {path}?", str)
    ctx.deps.done.append(f"tagged {path} {word}")
    return f"tagged {path} {word}"


LEDGER = Ledger("ada")
REGISTRY = Registry(delete, tag, deps=LEDGER)


def calls(*specs: tuple[str, str]) -> list[ToolCall]:
    """Calls with ids c0, c1, ... of (tool, path) pairs."""
    return [
        ToolCall(id=f"c{i}", request=Request(name=name, arguments=json.dumps({"path": path})))
        for i, (name, path) in enumerate(specs)
    ]


def texts(turn: Turn) -> list[str]:
    return [m["content"] for m in turn.messages(openai_chat)]


@pytest.fixture(params=["memory", "dbos-sqlite"])
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Driver]:
    """A driver on the memory backend, then on a DBOS backend with a fresh SQLite database."""
    if request.param == "memory":
        yield Driver(REGISTRY, MemoryBackend())
        return
    pytest.importorskip("dbos")
    from scopetool.driver.dbos import DbosBackend

    url = database_url("sqlite", tmp_path_factory.mktemp("dbos"), request)
    with DbosBackend(REGISTRY, url, executor_id="in-process", poll_interval=0.05) as backend:
        yield Driver(REGISTRY, backend)


@pytest.fixture
async def run_id() -> AsyncIterator[str]:
    """A fresh run id (and the ledger cleared)."""
    LEDGER.done.clear()
    yield uuid.uuid4().hex


async def test_an_approval_waits_then_runs_once_with_the_answer(driver: Driver, run_id: str) -> None:
    """The call waits with the tool's prompt, holds the next call, and runs once when approved."""
    turn_calls = calls(("delete", "/a"), ("tag", "/b"))
    waiting = await driver.run(run_id, turn_calls)
    assert [r.status for r in waiting.results] == [CallStatus.WAITING, CallStatus.HELD]
    request = waiting.results[0].request
    assert request is not None and request.prompt == "Delete /a?" and LEDGER.done == []
    key = waiting.results[0].key
    assert await driver.answer(key, True)
    asked = await driver.run(run_id, turn_calls)
    assert [r.status for r in asked.results] == [CallStatus.DONE, CallStatus.WAITING]
    assert asked.results[1].request is not None and asked.results[1].request.prompt == "A tag for /b?"
    assert await driver.answer(asked.results[1].key, "red")
    done = await driver.run(run_id, turn_calls)
    assert texts(done) == ["ada deleted /a", "tagged /b red"]
    assert texts(await driver.run(run_id, turn_calls)) == texts(done)
    assert LEDGER.done == [f"deleted /a {key}", "tagged /b red"]


async def test_a_refused_approval_is_the_fixed_rejection(driver: Driver, run_id: str) -> None:
    """Answered False, the model is shown the fixed text as an error; the tool never ran."""
    turn_calls = calls(("delete", "/a"))
    waiting = await driver.run(run_id, turn_calls)
    assert await driver.answer(waiting.results[0].key, False)
    refused = await driver.run(run_id, turn_calls)
    assert texts(refused) == ['error: tool "delete" was not run: approval was declined']
    assert LEDGER.done == []
