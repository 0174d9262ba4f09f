"""The DBOS backend in this process, on SQLite and on PostgreSQL: replay, input waits, recovery, storage."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy
from dbos import DBOS
from driver_support import DATABASES, database_url
from pydantic import BaseModel

from scopetool import (
    Definition,
    Effect,
    InputDecoder,
    InputRequest,
    InvalidInputRequestError,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    Signature,
    tool,
)
from scopetool.driver import CallStatus, Driver, Turn, mint_key
from scopetool.driver import dbos as dbos_module
from scopetool.driver.dbos import DbosBackend
from scopetool.providers import ToolCall, openai_chat

EFFECTS: list[str] = []
"""What the tools did, across tests (each test uses its own run id, so its keys are its own)."""
GATES: dict[str, threading.Event] = {}
"""Tools block while a gate named by their label exists and is not set."""
ENTERED: dict[str, threading.Event] = {}


class Label(BaseModel):
    """A label."""

    label: str


async def pass_gate(label: str) -> None:
    """Tell the test the tool is running, then wait (cancellably) for its gate."""
    ENTERED.setdefault(label, threading.Event()).set()
    gate = GATES.get(label)
    while gate is not None and not gate.is_set():
        await asyncio.sleep(0.005)


@tool(effect=Effect.SAFE)
def echo(label: str) -> str:
    """Say the label back."""
    EFFECTS.append(f"echo {label}")
    return label


@tool
async def write(label: str) -> str:
    """Write (no replay promise)."""
    EFFECTS.append(f"write {label}")
    await pass_gate(label)
    return f"wrote {label}"


class Charge:
    """Charge once per key: the external system deduplicates on it (IDEMPOTENT)."""

    signature = Signature(Label, str)

    def definition(self) -> Definition:
        return self.signature.definition("charge", "Charge.", effect=Effect.IDEMPOTENT)

    def input_validator(self) -> InputDecoder[Label]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        label = self.signature.decode(invocation).label
        EFFECTS.append(f"attempt {label}")
        if f"charge {invocation.idempotency_key}" not in EFFECTS:
            EFFECTS.append(f"charge {invocation.idempotency_key}")
        await pass_gate(label)
        return Result(output=Output.from_text(f"charged {label}"))


class Approve:
    """Asks a person first; acts once approved."""

    signature = Signature(Label, str)

    def definition(self) -> Definition:
        return self.signature.definition("approve", "Act once approved.")

    def input_validator(self) -> InputDecoder[Label]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        label = self.signature.decode(invocation).label
        if invocation.continuation is None:
            return Result(input_request=InputRequest(prompt=f"approve {label}?", response_schema={"type": "boolean"}))
        EFFECTS.append(f"approved {label}")
        return Result(output=Output.from_text(f"approved {label}"))


@tool(effect=Effect.SAFE, defer_loading=True)
def look_up(label: str) -> str:
    """Look a shipment label up in the warehouse ledger."""
    return f"found {label}"


REGISTRY = Registry(echo, write, Charge(), Approve(), look_up)


@dataclass
class Durable:
    """An open backend and a driver on it."""

    url: str
    backend: DbosBackend
    driver: Driver

    def reopen(self) -> None:
        self.backend.close()
        self.backend.open()


@pytest.fixture(scope="module", params=DATABASES)
def durable(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Durable]:
    url = database_url(request.param, tmp_path_factory.mktemp("dbos"), request)
    backend = DbosBackend(REGISTRY, url, executor_id="in-process", poll_interval=0.05)
    with backend:
        yield Durable(url, backend, Driver(REGISTRY, backend))


def calls(*specs: tuple[str, str]) -> list[ToolCall]:
    """Calls with ids c0, c1, ... of (tool, label) pairs."""
    return [
        ToolCall(id=f"c{i}", request=Request(name=name, arguments=json.dumps({"label": label})))
        for i, (name, label) in enumerate(specs)
    ]


def texts(turn: Turn) -> list[str]:
    return [m["content"] for m in turn.messages(openai_chat)]


def fresh() -> str:
    return uuid.uuid4().hex


async def test_a_finished_call_returns_its_stored_outcome(durable: Durable) -> None:
    """Each call runs once; driving the turn again returns the stored outcomes."""
    label = fresh()
    turn_calls = calls(("echo", label), ("write", label), ("charge", label))
    first = await durable.driver.run(label, turn_calls)
    again = await durable.driver.run(label, turn_calls)
    assert texts(first) == texts(again) == [label, f"wrote {label}", f"charged {label}"]
    assert EFFECTS.count(f"write {label}") == 1 and EFFECTS.count(f"attempt {label}") == 1


async def test_an_input_wait_is_answered_once(durable: Durable) -> None:
    """The request is committed, a bad answer is refused, the first answer resumes, a duplicate is ignored."""
    label = fresh()
    turn_calls = calls(("approve", label), ("write", label))
    waiting = await durable.driver.run(label, turn_calls)
    assert [r.status for r in waiting.results] == [CallStatus.WAITING, CallStatus.HELD]
    key = waiting.results[0].key
    assert waiting.results[0].request == InputRequest(prompt=f"approve {label}?", response_schema={"type": "boolean"})
    with pytest.raises(InvalidInputRequestError):
        await durable.driver.answer(key, "yes")
    assert await durable.driver.answer(key, True)
    assert not await durable.driver.answer(key, True)
    done = await durable.driver.run(label, turn_calls)
    assert texts(done) == [f"approved {label}", f"wrote {label}"]
    assert not await durable.driver.answer(key, False)
    assert EFFECTS.count(f"approved {label}") == 1


async def test_a_call_listed_twice_runs_once(durable: Durable) -> None:
    """Two entries with one call id, started at once, share one workflow: one effect, one outcome for both."""
    label = fresh()
    turn = await durable.driver.run(label, [calls(("echo", label))[0]] * 2)
    assert texts(turn) == [label] * 2
    assert EFFECTS.count(f"echo {label}") == 1


async def test_a_replay_with_other_arguments_is_refused(durable: Durable) -> None:
    """The workflow's stored digest differs: the call is refused and not run."""
    label = fresh()
    await durable.driver.run(label, calls(("write", label)))
    turn = await durable.driver.run(label, calls(("write", label + "-other")))
    assert turn.results[0].status is CallStatus.REFUSED
    assert f"write {label}-other" not in EFFECTS


async def test_what_dbos_stores_is_json(durable: Durable) -> None:
    """Inputs, step outputs, events and messages are portable JSON, never pickle."""
    label = fresh()
    turn_calls = calls(("approve", label))
    key = (await durable.driver.run(label, turn_calls)).results[0].key
    await durable.driver.answer(key, True)
    await durable.driver.run(label, turn_calls)
    url = sqlalchemy.make_url(durable.url)
    schema = "" if url.get_backend_name() == "sqlite" else "dbos."
    engine = sqlalchemy.create_engine(url if not schema else url.set(drivername="postgresql+psycopg"))
    try:
        with engine.connect() as connection:
            formats = {
                row[0]
                for table in ("operation_outputs", "workflow_events", "workflow_status", "notifications")
                for row in connection.execute(sqlalchemy.text(f"select distinct serialization from {schema}{table}"))
            }
            inputs = connection.execute(
                sqlalchemy.text(f"select inputs from {schema}workflow_input where workflow_uuid = :key"), {"key": key}
            ).scalar_one()
            event = connection.execute(
                sqlalchemy.text(
                    f"select value from {schema}workflow_events where workflow_uuid = :key and key = :name"
                ),
                {"key": key, "name": "scopetool.state.1"},
            ).scalar_one()
    finally:
        engine.dispose()
    assert formats <= {"portable_json", None}
    spec = json.loads(inputs)["positionalArgs"][0]
    assert spec["name"] == "approve" and json.loads(spec["arguments"]) == {"label": label}
    assert json.loads(event)["outcome"]["output"]["content"] == [{"type": "text", "text": f"approved {label}"}]


async def test_a_waiting_call_survives_a_restart(durable: Durable) -> None:
    """Closed while it waits, the call is recovered on open; keys stay the same (the secret is stored)."""
    label = fresh()
    turn_calls = calls(("approve", label))
    secret = await durable.backend.secret()
    key = (await durable.driver.run(label, turn_calls)).results[0].key
    await asyncio.to_thread(durable.reopen)
    assert await durable.backend.secret() == secret
    assert await durable.driver.answer(key, True)
    assert texts(await durable.driver.run(label, turn_calls)) == [f"approved {label}"]


async def test_calls_interrupted_mid_step_recover_by_their_promise(durable: Durable) -> None:
    """Shut down while tools run: the IDEMPOTENT step runs again (its key dedupes), the unpromised one does not."""
    label = fresh()
    for name in ("write", "charge"):
        GATES[f"{label}-{name}"] = threading.Event()
    runs = [
        asyncio.create_task(durable.driver.run(f"{label}-{name}", calls((name, f"{label}-{name}"))))
        for name in ("write", "charge")
    ]
    for name in ("write", "charge"):
        await asyncio.to_thread(ENTERED.setdefault(f"{label}-{name}", threading.Event()).wait)
    for task in runs:
        task.cancel()
    await asyncio.gather(*runs, return_exceptions=True)
    await asyncio.to_thread(durable.reopen)  # the tools' steps are cancelled mid-call, as a crash would stop them
    for gate in GATES.values():
        gate.set()
    wrote = await durable.driver.run(f"{label}-write", calls(("write", f"{label}-write")))
    charged = await durable.driver.run(f"{label}-charge", calls(("charge", f"{label}-charge")))
    assert texts(wrote) == ['error: tool "write" was interrupted; its outcome is unknown']
    assert EFFECTS.count(f"write {label}-write") == 1
    assert texts(charged) == [f"charged {label}-charge"]
    assert EFFECTS.count(f"attempt {label}-charge") == 2
    assert EFFECTS.count(f"charge {charged.results[0].key}") == 1


async def test_a_call_whose_workflow_was_cancelled_fails(durable: Durable) -> None:
    """A workflow cancelled in DBOS ends its call with a generic failure instead of waiting forever."""
    label = fresh()
    GATES[label] = threading.Event()
    key = mint_key(await durable.backend.secret(), label, "c0", 0)
    task = asyncio.create_task(durable.driver.run(label, calls(("write", label))))
    await asyncio.to_thread(ENTERED.setdefault(label, threading.Event()).wait)
    await DBOS.cancel_workflow_async(key)
    turn = await task
    GATES[label].set()
    assert texts(turn) == ['error: tool "write" failed']


async def test_a_failed_open_leaves_dbos_closed(durable: Durable) -> None:
    """When DBOS cannot launch, open raises and DBOS is shut down again, so a later open works."""

    def fail_then_reopen() -> None:
        durable.backend.close()
        with pytest.raises(sqlalchemy.exc.OperationalError):
            DbosBackend(REGISTRY, "postgresql://postgres@127.0.0.1:1/unreachable").open()
        durable.backend.open()

    await asyncio.to_thread(fail_then_reopen)
    label = fresh()
    assert texts(await durable.driver.run(label, calls(("echo", label)))) == [label]


async def test_misuse_is_refused(durable: Durable, tmp_path: Any) -> None:
    """One backend per process, only while open, only with its own registry's bindings."""
    with pytest.raises(RuntimeError, match="already open"):
        DbosBackend(REGISTRY, durable.url).open()
    other = Driver(Registry(echo), durable.backend)
    with pytest.raises(ValueError, match="'echo' is not bound in the registry"):
        await other.run(fresh(), calls(("echo", "x")))
    closed = DbosBackend(REGISTRY, f"sqlite:///{tmp_path / 'closed.sqlite'}")
    closed.close()  # closing a backend that is not open does nothing
    with pytest.raises(RuntimeError, match="not open"):
        await closed.secret()
    with pytest.raises(RuntimeError, match="not open"):
        await Driver(REGISTRY, closed).answer(mint_key(b"k", "r", "c", 0), True)
    assert durable.backend.registry is REGISTRY


def test_bad_settings_are_refused() -> None:
    """The constructor checks its arguments."""
    with pytest.raises(TypeError, match="Registry"):
        DbosBackend(object(), "sqlite:///x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="database_url"):
        DbosBackend(REGISTRY, "")
    with pytest.raises(ValueError, match="poll_interval"):
        DbosBackend(REGISTRY, "sqlite:///x", poll_interval=0)


def test_sqlite_too_old_for_dbos_on_this_python_is_refused_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """On Python 3.12+ with SQLite before 3.42, open says why instead of failing inside DBOS."""
    url = f"sqlite:///{tmp_path / 'calls.sqlite'}"
    monkeypatch.setattr(dbos_module.sys, "version_info", (3, 12, 0, "final", 0))
    monkeypatch.setattr(dbos_module, "_subsecond_unixepoch", lambda: False)
    backend = DbosBackend(REGISTRY, url)
    with pytest.raises(RuntimeError, match=r"DBOS on Python 3\.12 needs SQLite 3\.42 or newer") as refused:
        backend.open()
    assert "PostgreSQL" in str(refused.value)
    assert not (tmp_path / "calls.sqlite").exists()  # nothing was created
    with pytest.raises(RuntimeError, match="not open"):
        asyncio.run(backend.secret())
    # A SQLite that knows unixepoch('subsec'), another database, or an older Python: no problem.
    monkeypatch.setattr(dbos_module, "_subsecond_unixepoch", lambda: True)
    assert dbos_module._sqlite_problem(url) is None  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(dbos_module, "_subsecond_unixepoch", lambda: False)
    assert dbos_module._sqlite_problem("postgresql://u@h:5432/calls") is None  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(dbos_module.sys, "version_info", (3, 11, 9, "final", 0))
    assert dbos_module._sqlite_problem(url) is None  # pyright: ignore[reportPrivateUsage]


def test_the_sqlite_probe_matches_this_sqlite_version() -> None:
    """The probe answers True exactly where SQLite is 3.42 or newer (unixepoch('subsec'))."""
    expected = sqlite3.sqlite_version_info >= (3, 42, 0)
    assert dbos_module._subsecond_unixepoch() is expected  # pyright: ignore[reportPrivateUsage]


async def test_a_runs_reveals_survive_a_restart(durable: Durable) -> None:
    """A search's reveals are kept in the database: after a restart a new driver admits the revealed tool."""
    run = fresh()

    def call(call_id: str, name: str, arguments: dict[str, Any]) -> list[ToolCall]:
        return [ToolCall(id=call_id, request=Request(name=name, arguments=json.dumps(arguments)))]

    refused = await durable.driver.run(run, call("s0", "look_up", {"label": "x"}))
    assert "not loaded yet" in texts(refused)[0]
    found = await durable.driver.run(run, call("s1", "search_tools", {"query": "warehouse shipment label"}))
    assert json.loads(texts(found)[0])[0]["name"] == "look_up"
    await asyncio.to_thread(durable.reopen)
    driver = Driver(REGISTRY, durable.backend)
    assert (await driver.catalog(run)).revealed == ("look_up",)
    assert texts(await driver.run(run, call("s2", "look_up", {"label": "x"}))) == ["found x"]
    assert (await driver.catalog(fresh())).revealed == ()
    await durable.backend.reveal(run, ["look_up", "echo"])
    assert await durable.backend.revealed(run) == ("look_up", "echo")


async def test_a_run_past_the_reveal_cap_keeps_no_more(
    durable: Durable, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Past MAX_REVEALS records a run's later reveals are not kept, with a warning; the kept ones read back."""
    monkeypatch.setattr(dbos_module, "MAX_REVEALS", 2)
    run = fresh()
    for names in (["a"], ["b"], ["c"]):
        await durable.backend.reveal(run, names)
    assert await durable.backend.revealed(run) == ("a", "b")
    assert "its later reveals are not kept" in caplog.text
