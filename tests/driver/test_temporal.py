"""The Temporal backend in this process, on a real dev server: replay, conflicts, failures, input waits, retries."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import Client

from scopetool import Effect, Failure, FailureKind, IdempotencyKey, InvalidInputRequestError, Registry, Request, tool
from scopetool.driver import CallStatus, Driver, Turn
from scopetool.driver import temporal as temporal_module
from scopetool.driver.temporal import SECRET_WORKFLOW_ID, CallWorkflow, TemporalBackend
from scopetool.providers import ToolCall, openai_chat

RUNS: dict[str, int] = {}
"""How many times each tool body ran, by a label in its arguments."""


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers."""
    RUNS[f"add {a} {b}"] = RUNS.get(f"add {a} {b}", 0) + 1
    return a + b


@tool
def refuse(reason: str) -> str:
    """Fail with a public text and a private cause."""
    RUNS[f"refuse {reason}"] = RUNS.get(f"refuse {reason}", 0) + 1
    raise Failure(kind=FailureKind.FAILED, output=f"refused: {reason}", cause=RuntimeError("private-cause-4417"))


@tool
async def dawdle(seconds: float) -> str:
    """Take a while (no effect promise)."""
    RUNS["dawdle"] = RUNS.get("dawdle", 0) + 1
    await asyncio.sleep(seconds)
    return "done"


@tool(effect=Effect.IDEMPOTENT)
async def dawdle_again(seconds: float) -> str:
    """Take a while (idempotent: may be run again)."""
    RUNS["dawdle_again"] = RUNS.get("dawdle_again", 0) + 1
    await asyncio.sleep(seconds)
    return "done"


def confirm_prompt(item: str) -> str:
    """What a person is asked before `delete` runs."""
    return f"Delete {item}?"


@tool(approval=confirm_prompt)
def delete(item: str) -> str:
    """Delete an item, once a person approves it."""
    RUNS[f"delete {item}"] = RUNS.get(f"delete {item}", 0) + 1
    return f"deleted {item}"


TOOLS = Registry(add, refuse, dawdle, dawdle_again, delete)


@pytest.fixture
async def client(temporal_target: str) -> Client:
    return await Client.connect(temporal_target)


@pytest.fixture
async def backend(client: Client) -> AsyncIterator[TemporalBackend]:
    """A backend on a queue of its own, with a worker in this process and short timeouts."""
    made = TemporalBackend(
        TOOLS,
        client,
        task_queue=f"in-process-{uuid.uuid4().hex[:8]}",
        start_to_close_timeout=0.5,
        heartbeat_timeout=0.5,
        retry_initial_interval=0.05,
        retry_maximum_attempts=2,
    )
    async with made.worker(sticky_queue_schedule_to_start_timeout=timedelta(seconds=0.5)):
        yield made


def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:8]}"


def call(call_id: str, name: str, arguments: str) -> ToolCall:
    return ToolCall(id=call_id, request=Request(name=name, arguments=arguments))


def contents(turn: Turn) -> list[Any]:
    return [message["content"] for message in turn.messages(openai_chat)]


async def test_a_finished_call_is_replayed_from_its_workflow_and_other_arguments_are_refused(
    backend: TemporalBackend,
) -> None:
    """Driving a turn again returns the stored outcome without running the tool; other arguments conflict."""
    driver, run = Driver(TOOLS, backend), run_id()
    turn = [call("1", "add", '{"a": 40, "b": 2}')]
    assert contents(await driver.run(run, turn)) == ["42"]
    assert contents(await Driver(TOOLS, backend).run(run, turn)) == ["42"]
    assert RUNS["add 40 2"] == 1
    refused = await driver.run(run, [call("1", "add", '{"a": 40, "b": 3}')])
    assert refused.results[0].status is CallStatus.REFUSED
    assert "add 40 3" not in RUNS


async def test_a_failure_is_final_and_only_its_public_output_leaves_the_worker(
    backend: TemporalBackend, client: Client
) -> None:
    """The activity fails non-retryably with the public output; the private cause is in no history event."""
    driver, run = Driver(TOOLS, backend), run_id()
    turn = [call("1", "refuse", '{"reason": "r1"}')]
    assert contents(await driver.run(run, turn)) == ["refused: r1"]
    assert contents(await driver.run(run, turn)) == ["refused: r1"]
    assert RUNS["refuse r1"] == 1
    key = (await driver.run(run, turn)).results[0].key
    history = (await client.get_workflow_handle(key).fetch_history()).to_json()
    assert "refused: r1" in history and "scopetool.Failure" in history
    assert "private-cause-4417" not in history
    assert '"nonRetryable": true' in history


async def test_the_effect_chooses_the_retry_policy(backend: TemporalBackend, client: Client) -> None:
    """A SAFE tool's activity may be attempted again; a tool with no promise gets exactly one attempt."""
    driver, run = Driver(TOOLS, backend), run_id()
    turn = await driver.run(run, [call("s", "add", '{"a": 1, "b": 1}'), call("n", "refuse", '{"reason": "r2"}')])
    safe, once = [(await client.get_workflow_handle(result.key).fetch_history()).to_json() for result in turn.results]
    assert '"maximumAttempts": 2' in safe
    assert '"maximumAttempts": 1' in once


async def test_a_lost_attempt_is_unknown_without_a_promise_and_retried_with_one(backend: TemporalBackend) -> None:
    """Attempts past their timeout: a tool with no promise ends unknown after one run, an idempotent one is retried."""
    driver, run = Driver(TOOLS, backend), run_id()
    RUNS.pop("dawdle", None)
    RUNS.pop("dawdle_again", None)
    turn = await asyncio.wait_for(
        driver.run(run, [call("d", "dawdle", '{"seconds": 3}'), call("i", "dawdle_again", '{"seconds": 3}')]), 30
    )
    assert contents(turn) == [
        'error: tool "dawdle" was interrupted; its outcome is unknown',
        'error: tool "dawdle_again" failed',
    ]
    assert RUNS["dawdle"] == 1
    assert RUNS["dawdle_again"] == 2


async def test_an_input_request_waits_for_one_valid_answer(backend: TemporalBackend, client: Client) -> None:
    """The call waits; a bad answer is refused by its schema, the first good one resumes it, a duplicate is refused."""
    driver, run = Driver(TOOLS, backend), run_id()
    turn = [call("1", "delete", '{"item": "x1"}')]
    waiting = await driver.run(run, turn)
    result = waiting.results[0]
    assert result.status is CallStatus.WAITING and result.request is not None
    assert result.request.prompt == "Delete x1?"
    assert (await driver.run(run, turn)).results[0].status is CallStatus.WAITING  # still waits, nothing ran
    state = await client.get_workflow_handle(result.key).query(CallWorkflow.state)  # what an operator can ask
    assert state["state"] == "waiting" and "Delete x1?" in state["request"]
    with pytest.raises(InvalidInputRequestError, match="response schema"):
        await driver.answer(result.key, "yes")
    with pytest.raises(InvalidInputRequestError, match="not a JSON value"):
        await driver.answer(result.key, {1, 2})
    assert await driver.answer(result.key, True)
    assert not await driver.answer(result.key, True)
    assert contents(await driver.run(run, turn)) == ["deleted x1"]
    assert RUNS["delete x1"] == 1
    assert not await driver.answer(result.key, True)  # the call has finished
    assert not await driver.answer(IdempotencyKey("no-such-call"), True)


async def test_a_terminated_call_ends_as_failed(backend: TemporalBackend, client: Client) -> None:
    """A call whose workflow an operator terminated is read back as failed (its digest kept in the memo)."""
    driver, run = Driver(TOOLS, backend), run_id()
    turn = [call("1", "delete", '{"item": "x2"}')]
    key = (await driver.run(run, turn)).results[0].key
    await client.get_workflow_handle(key).terminate("an operator stopped it")
    assert contents(await driver.run(run, turn)) == ['error: tool "delete" failed']
    assert (await driver.run(run, [call("1", "delete", '{"item": "x3"}')])).results[0].status is CallStatus.REFUSED


async def test_the_key_secret_is_drawn_once_per_namespace(client: Client) -> None:
    """Two backends on one namespace mint with the same drawn secret; a given secret is used as given."""
    first = await TemporalBackend(TOOLS, client, task_queue="secret-a").secret()
    second = await TemporalBackend(TOOLS, client, task_queue="secret-b").secret()
    assert first == second and len(first) == 32
    assert (await client.get_workflow_handle(SECRET_WORKFLOW_ID).describe()).status is not None
    assert await TemporalBackend(TOOLS, client, secret=b"s" * 32).secret() == b"s" * 32


async def test_a_call_of_another_registry_is_refused(backend: TemporalBackend) -> None:
    """The backend runs calls only with the registry its workers run them with."""
    with pytest.raises(ValueError, match="not bound in the registry"):
        await Driver(Registry(add), backend).run(run_id(), [call("1", "add", '{"a": 1, "b": 2}')])


async def test_settings_are_checked_and_exposed(client: Client) -> None:
    """Bad settings are refused with their name; the backend exposes what a worker of your own registers."""
    backend = TemporalBackend(TOOLS, client, task_queue="q")
    assert backend.registry is TOOLS and backend.client is client and backend.task_queue == "q"
    assert [w.__name__ for w in backend.workflows] == ["CallWorkflow", "SecretWorkflow"]
    assert len(backend.activities) == 1
    bad: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"registry": object()}, TypeError, "needs a Registry"),
        ({"client": object()}, TypeError, "temporalio Client"),
        ({"task_queue": ""}, ValueError, "task_queue"),
        ({"secret": b"short"}, ValueError, "at least 32 bytes"),
        ({"heartbeat_timeout": 0}, ValueError, "heartbeat_timeout"),
        ({"answer_timeout": -1}, ValueError, "answer_timeout"),
        ({"retry_backoff": 0.5}, ValueError, "retry_backoff"),
        ({"retry_maximum_attempts": True}, TypeError, "retry_maximum_attempts"),
        ({"retry_maximum_attempts": 0}, ValueError, "retry_maximum_attempts"),
    ]
    for override, error, message in bad:
        settings: dict[str, Any] = {"registry": TOOLS, "client": client, **override}
        with pytest.raises(error, match=message):
            TemporalBackend(settings.pop("registry"), settings.pop("client"), **settings)


async def test_no_heartbeat_timeout_means_no_heartbeats() -> None:
    """Run outside a heartbeat timeout (a workflow of your own scheduling the activity), the activity does not beat."""
    await temporal_module._heartbeat(None)  # pyright: ignore[reportPrivateUsage]


async def test_an_answer_no_worker_takes_times_out(client: Client) -> None:
    """With no worker polling the queue, `answer` gives up after its timeout, naming the queue."""
    queue = f"no-worker-{uuid.uuid4().hex[:8]}"
    backend = TemporalBackend(TOOLS, client, task_queue=queue, answer_timeout=0.5)
    driver, run = Driver(TOOLS, backend), run_id()
    async with backend.worker():
        waiting = await driver.run(run, [call("1", "delete", '{"item": "x4"}')])
    with pytest.raises(TimeoutError, match=queue):
        await driver.answer(waiting.results[0].key, True)
