"""Concurrency: registries under many threads, hundreds of guarded calls, cancellation, no reruns or crossings."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections import Counter
from typing import Any

import pytest
from pydantic import BaseModel

from scopetool import (
    Authorization,
    Binding,
    Definition,
    DuplicateToolError,
    Effect,
    Guard,
    InvalidInvocationError,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    Signature,
    bind,
    tool,
)

THREADS = 8


class Recorded:
    """A tool that records, thread-safely, which invocation ran on which instance."""

    def __init__(self, name: str, effect: Effect | None = None) -> None:
        self._definition = Definition(
            name=name,
            input_schema={
                "type": "object",
                "properties": {"id": {"type": "integer"}},
                "required": ["id"],
                "additionalProperties": False,
            },
            effect=effect,
        )
        self.runs: list[int] = []
        self._lock = threading.Lock()

    def definition(self) -> Definition:
        return self._definition

    async def call(self, invocation: Invocation) -> Result:
        ident = json.loads(invocation.arguments)["id"]
        await asyncio.sleep(random.uniform(0, 0.002))
        with self._lock:
            self.runs.append(ident)
        return Result(output=Output.from_text(str(ident)))


def _start_together(workers: list[threading.Thread]) -> None:
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
        assert not worker.is_alive()


def test_registration_and_resolution_from_many_threads() -> None:
    """Threads registering batches while others resolve: batches are atomic, names unique, views consistent."""
    registry = Registry()
    barrier = threading.Barrier(THREADS * 2)
    errors: list[BaseException] = []
    won: list[int] = []
    stop = threading.Event()

    def writer(index: int) -> None:
        try:
            barrier.wait()
            for batch in range(10):
                names = [f"w{index}_b{batch}_{part}" for part in "xyz"]
                registry.register(*(Recorded(name) for name in names))
            try:  # every writer races for the same name; its batch's other names live or die with it
                registry.register(Recorded(f"w{index}_shared_companion"), Recorded("shared"))
                won.append(index)
            except DuplicateToolError:
                pass
        except BaseException as error:
            errors.append(error)

    def reader() -> None:
        try:
            barrier.wait()
            while not stop.is_set():
                names = registry.names()
                assert names == sorted(names)
                present = set(names)
                for name in names:
                    binding = registry.resolve(name)
                    assert binding is not None and binding.name == name
                    if "_b" in name:  # a batch is seen whole or not at all
                        stem = name[: name.rindex("_") + 1]
                        assert {stem + part for part in "xyz"} <= present
                definitions = registry.definitions()
                assert [d.name for d in definitions] == sorted(d.name for d in definitions)
        except BaseException as error:
            errors.append(error)

    writers = [threading.Thread(target=writer, args=(index,)) for index in range(THREADS)]
    readers = [threading.Thread(target=reader) for _ in range(THREADS)]
    for thread in [*writers, *readers]:
        thread.start()
    for thread in writers:
        thread.join(timeout=60)
    stop.set()
    for thread in readers:
        thread.join(timeout=60)
    assert errors == []
    assert len(won) == 1
    assert len(registry) == THREADS * 30 + 2
    assert f"w{won[0]}_shared_companion" in registry
    assert all(f"w{index}_shared_companion" not in registry for index in range(THREADS) if index != won[0])


def test_duplicate_registration_races_have_one_winner_per_name() -> None:
    """Many threads registering the same names: each name is taken exactly once, the rest are refused."""
    registry = Registry()
    barrier = threading.Barrier(THREADS)
    accepted: Counter[str] = Counter()
    lock = threading.Lock()

    def racer() -> None:
        barrier.wait()
        for index in range(25):
            name = f"tool_{index}"
            try:
                registry.register(Recorded(name))
            except DuplicateToolError:
                continue
            with lock:
                accepted[name] += 1

    _start_together([threading.Thread(target=racer) for _ in range(THREADS)])
    assert accepted == Counter({f"tool_{index}": 1 for index in range(25)})
    assert registry.names() == sorted(f"tool_{index}" for index in range(25))


class Payload(BaseModel):
    """A decoded input whose identity is checked across threads."""

    id: int
    tags: list[str]


def test_prepare_from_many_threads_keeps_each_value_with_its_invocation() -> None:
    """One contract admitting from many threads: each invocation decodes to its own document, never another's."""
    signature = Signature(Payload, str)

    class Typed:
        def definition(self) -> Definition:
            return signature.definition("typed")

        def input_validator(self) -> Any:
            return signature.input_validator()

        async def call(self, invocation: Invocation) -> Result:
            return Result()

    contract = bind(Typed()).contract
    barrier = threading.Barrier(THREADS)
    mismatches: list[tuple[int, Any]] = []

    def admit(worker: int) -> None:
        barrier.wait()
        for index in range(300):
            ident = worker * 1000 + index
            invocation = contract.prepare(
                Request(name="typed", arguments=json.dumps({"id": ident, "tags": [str(ident)]}))
            )
            value = signature.decode(invocation)
            if value.id != ident or value.tags != [str(ident)]:
                mismatches.append((ident, value))

    _start_together([threading.Thread(target=admit, args=(worker,)) for worker in range(THREADS)])
    assert mismatches == []


def _guarded(tool_: Recorded, seen: list[int], lock: threading.Lock) -> Binding:
    async def policy(authorization: Authorization) -> bool:
        await asyncio.sleep(random.uniform(0, 0.002))
        with lock:
            seen.append(json.loads(authorization.arguments)["id"])
        return True

    return bind(tool_, Guard(policy))


async def test_hundreds_of_concurrent_guarded_calls_run_once_on_their_own_binding() -> None:
    """500 concurrent calls over two identical guarded bindings: each runs once, on the binding that admitted it."""
    random.seed(8)
    lock = threading.Lock()
    left, right = Recorded("twin"), Recorded("twin")
    seen_left: list[int] = []
    seen_right: list[int] = []
    bindings = {"left": _guarded(left, seen_left, lock), "right": _guarded(right, seen_right, lock)}
    plan = {ident: random.choice(["left", "right"]) for ident in range(500)}
    invocations = {
        ident: bindings[side].contract.prepare(Request(name="twin", arguments=json.dumps({"id": ident})))
        for ident, side in plan.items()
    }
    results = await asyncio.gather(*(bindings[plan[i]].call(invocation) for i, invocation in invocations.items()))
    assert [result.output.text() for result in results] == [str(ident) for ident in invocations]
    expected_left = sorted(i for i, side in plan.items() if side == "left")
    expected_right = sorted(i for i, side in plan.items() if side == "right")
    assert sorted(left.runs) == sorted(seen_left) == expected_left
    assert sorted(right.runs) == sorted(seen_right) == expected_right

    crossed = await asyncio.gather(
        *(bindings["right" if plan[i] == "left" else "left"].call(inv) for i, inv in invocations.items()),
        return_exceptions=True,
    )
    assert all(isinstance(outcome, InvalidInvocationError) for outcome in crossed)
    assert len(left.runs) + len(right.runs) == 500


async def test_concurrent_sync_tools_get_their_own_arguments() -> None:
    """300 concurrent calls of a sync tool (worker threads) each receive exactly their own decoded arguments."""
    received: list[tuple[int, list[int]]] = []
    lock = threading.Lock()

    @tool
    def echo(id: int, items: list[int]) -> int:  # noqa: A002 - the member name the model sees
        """Echo."""
        time.sleep(random.uniform(0, 0.001))
        items.append(id)  # mutating its own copy must never show up in another call
        with lock:
            received.append((id, list(items)))
        return id

    binding = bind(echo)
    invocations = [
        binding.contract.prepare(Request(name="echo", arguments=json.dumps({"id": i, "items": [i, i]})))
        for i in range(300)
    ]
    results = await asyncio.gather(*(binding.call(invocation) for invocation in invocations))
    assert [result.output.text() for result in results] == [str(i) for i in range(300)]
    assert sorted(received) == [(i, [i, i, i]) for i in range(300)]


async def test_a_middleware_forwarding_twice_concurrently_runs_the_tool_once() -> None:
    """A middleware racing two forwards of one invocation: one runs the tool, the other is refused."""
    recorded = Recorded("once")

    async def twice(invocation: Invocation, call_next: Any) -> Result:
        outcomes = await asyncio.gather(call_next(invocation), call_next(invocation), return_exceptions=True)
        refused = [outcome for outcome in outcomes if isinstance(outcome, InvalidInvocationError)]
        results = [outcome for outcome in outcomes if isinstance(outcome, Result)]
        assert len(refused) == 1 and len(results) == 1
        return results[0]

    binding = bind(recorded, twice)
    invocations = [binding.contract.prepare(Request(name="once", arguments=json.dumps({"id": i}))) for i in range(100)]
    await asyncio.gather(*(binding.call(invocation) for invocation in invocations))
    assert sorted(recorded.runs) == list(range(100))


class Blocking:
    """A tool that signals when it starts and then waits to be released (or cancelled)."""

    def __init__(self, effect: Effect | None = None) -> None:
        self._definition = Definition(name="blocking", input_schema={"type": "object"}, effect=effect)
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.runs = 0
        self.cancelled = 0
        self.finished = 0

    def definition(self) -> Definition:
        return self._definition

    async def call(self, invocation: Invocation) -> Result:
        self.runs += 1
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.finished += 1
        return Result()


@pytest.mark.parametrize("effect", [None, Effect.SAFE])
async def test_cancellation_mid_call_stays_cancellation_and_never_reruns(effect: Effect | None) -> None:
    """A call cancelled while the tool runs ends in CancelledError (not a Failure), and the tool ran once."""
    blocking = Blocking(effect)
    binding = bind(blocking, Guard(lambda authorization: True))
    invocation = binding.contract.prepare(Request(name="blocking"))
    task = asyncio.ensure_future(binding.call(invocation))
    await blocking.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (blocking.runs, blocking.cancelled, blocking.finished) == (1, 1, 0)


async def test_cancellation_of_a_sync_tool_leaves_it_to_finish_once() -> None:
    """A cancelled call of a sync tool returns CancelledError; its worker thread finishes the one run."""
    started, release = threading.Event(), threading.Event()
    runs: list[str] = []

    @tool
    def slow() -> str:
        """Wait for release."""
        runs.append("start")
        started.set()
        release.wait(timeout=10)
        runs.append("end")
        return "done"

    binding = bind(slow)
    task = asyncio.ensure_future(binding.call(binding.contract.prepare(Request(name="slow"))))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    for _ in range(200):
        if runs == ["start", "end"]:
            break
        await asyncio.sleep(0.01)
    assert runs == ["start", "end"]


async def test_cancellation_mid_authorization_never_runs_the_tool() -> None:
    """A call cancelled while its async policy decides ends in CancelledError; the tool never runs."""
    blocking = Blocking()
    deciding, decided = asyncio.Event(), asyncio.Event()

    async def policy(authorization: Authorization) -> bool:
        deciding.set()
        await decided.wait()
        return True

    binding = bind(blocking, Guard(policy))
    task = asyncio.ensure_future(binding.call(binding.contract.prepare(Request(name="blocking"))))
    await deciding.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert blocking.runs == 0


async def test_a_policy_that_swallows_cancellation_still_stops_the_call() -> None:
    """A policy that catches the cancellation and permits the call: the Guard still refuses to run the tool."""
    blocking = Blocking()
    deciding = asyncio.Event()

    async def stubborn(authorization: Authorization) -> bool:
        deciding.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return True  # swallowed
        return True

    binding = bind(blocking, Guard(stubborn))
    task = asyncio.ensure_future(binding.call(binding.contract.prepare(Request(name="blocking"))))
    await deciding.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert blocking.runs == 0


async def test_timeouts_during_authorization_of_many_calls_run_no_tool() -> None:
    """200 guarded calls timing out while their policies decide: every one times out, no tool runs."""
    recorded = Recorded("timed")

    async def slow_policy(authorization: Authorization) -> bool:
        await asyncio.sleep(5)
        return True

    binding = bind(recorded, Guard(slow_policy))

    async def one(ident: int) -> BaseException | None:
        invocation = binding.contract.prepare(Request(name="timed", arguments=json.dumps({"id": ident})))
        try:
            async with asyncio.timeout(0.05):
                await binding.call(invocation)
        except TimeoutError as error:
            return error
        return None

    outcomes = await asyncio.gather(*(one(i) for i in range(200)))
    assert all(isinstance(outcome, TimeoutError) for outcome in outcomes)
    assert recorded.runs == []


async def test_cancelling_half_of_many_calls_runs_the_rest_exactly_once() -> None:
    """Of 300 concurrent calls, the cancelled ones end cancelled and the others each complete exactly once."""
    recorded = Recorded("mixed")
    binding = bind(recorded, Guard(lambda authorization: asyncio.sleep(0.001, result=True)))
    tasks = {
        i: asyncio.ensure_future(
            binding.call(binding.contract.prepare(Request(name="mixed", arguments=json.dumps({"id": i}))))
        )
        for i in range(300)
    }
    await asyncio.sleep(0)
    for i in range(0, 300, 2):
        tasks[i].cancel()
    outcomes = await asyncio.gather(*tasks.values(), return_exceptions=True)
    completed = [i for i, outcome in zip(tasks, outcomes, strict=True) if isinstance(outcome, Result)]
    cancelled = [i for i, outcome in zip(tasks, outcomes, strict=True) if isinstance(outcome, asyncio.CancelledError)]
    assert sorted(completed + cancelled) == list(range(300))
    assert sorted(recorded.runs) == sorted(completed)
    assert set(range(1, 300, 2)) <= set(completed)
