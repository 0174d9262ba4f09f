"""Code mode (scopetool.code): nested calls admitted like direct ones, bounds, and no nested call run twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

import scopetool.code as code_module
from scopetool import (
    Admission,
    Binding,
    CallContext,
    Contract,
    Effect,
    Guard,
    IdempotencyKey,
    Invocation,
    Principal,
    Registry,
    Request,
    Result,
    acting_as,
    bind,
    classify_failure,
    current_principal,
    tool,
)
from scopetool import _observe as observe
from scopetool.code import CodeLimits, CodeTool, code_tool
from scopetool.driver import Driver
from scopetool.driver._backend import MemoryBackend
from scopetool.providers import ToolCall

SECRET = "hunter2-secret"


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(effect=Effect.SAFE)
def lookup(city: str) -> dict[str, Any]:
    """Look up a city."""
    return {"city": city, "people": len(city) * 1000}


@tool
def wipe() -> str:
    """Wipe everything (never allowed)."""
    raise AssertionError("the guard lets no call of wipe through")


def _denied(name: str) -> Binding:
    return bind(wipe, Guard(lambda authorization: False))


def _text(outcome: Result | BaseException) -> str:
    if isinstance(outcome, Result):
        text = outcome.output.text()
    else:
        failure = classify_failure(outcome)
        assert failure is not None, repr(outcome)
        text = failure.output.text()
    assert text is not None
    return text


def _run(registry: Registry, code: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(_text(registry.run_sync("run_code", json.dumps({"code": code}))))
    return report


def _registry(limits: CodeLimits | None = None) -> Registry:
    return Registry(code_tool(Registry(add, lookup, _denied("wipe")), limits=limits))


def test_nested_calls_return_values_and_are_listed() -> None:
    """Tools are async keyword functions in the snippet; structured results are dicts; each call is listed."""
    report = _run(_registry(), "total = await add(a=1, b=2)\ninfo = await lookup(city='Oslo')\n[total, info['people']]")
    assert report["result"] == [3, 4000]
    assert report["calls"] == [{"tool": "add", "outcome": "returned"}, {"tool": "lookup", "outcome": "returned"}]


def test_rejection_reaches_the_code_with_the_tools_message_and_no_value() -> None:
    """A nested call its contract refuses raises ValueError with the tool's own message, never the value."""
    code = f"try:\n    await add(a='{SECRET}', b=1)\nexcept ValueError as error:\n    caught = str(error)\ncaught"
    report = _run(_registry(), code)
    assert "$.a" in report["result"] and "valid integer" in report["result"]
    assert report["calls"][0]["outcome"] == "rejected"
    assert SECRET not in json.dumps(report)
    uncaught = _run(_registry(), f"total = 1\nawait add(a='{SECRET}', b=total)")
    assert uncaught["error"].startswith("ValueError: invalid arguments for tool 'add'")
    assert uncaught["error"].endswith("(at line 2 in <module>)")
    assert SECRET not in json.dumps(uncaught)  # the source line that holds it is not quoted


def test_guard_refusal_is_a_permission_error_with_the_public_text() -> None:
    """A guard's refusal of a nested call reaches the code as PermissionError with the refusal's public text."""
    report = _run(_registry(), "await wipe()")
    assert "PermissionError" in report["error"] and 'tool "wipe" is not authorized' in report["error"]
    assert report["calls"] == [{"tool": "wipe", "outcome": "rejected", "error": 'error: tool "wipe" is not authorized'}]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import os\nos.listdir('/')", "PermissionError: the code sandbox has no filesystem"),
        ("open('/etc/passwd').read()", "PermissionError: the code sandbox has no filesystem"),
        ("import socket", "PermissionError"),
        ("while True:\n    pass", "TimeoutError"),
        ("x = [0] * 10**8", "MemoryError"),
        ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
        ("await add(1, 2)", "TypeError: call tool add() with keyword arguments only"),
        ("await add(a={1, 2}, b=1)", "TypeError: the arguments of tool add() must be JSON values"),
        ("await nope(a=1)", "NameError"),
        ("for i in range(10):\n    await add(a=i, b=1)", "RuntimeError: this snippet used its 3 nested tool calls"),
        ("print('x' * 5000)", "MemoryError"),
    ],
)
def test_hostile_snippets_end_with_a_clear_error_and_the_host_keeps_serving(code: str, expected: str) -> None:
    """Files, network, endless loops, memory bombs, deep recursion and misuse end the snippet, not the host."""
    registry = _registry(CodeLimits(cpu_seconds=0.3, memory_bytes=8 * 1024 * 1024, nested_calls=3, output_bytes=1024))
    report = _run(registry, code)
    assert expected in report["error"]
    assert _run(registry, "await add(a=2, b=2)")["result"] == 4


def test_a_result_over_the_output_cap_is_replaced() -> None:
    """A snippet whose result is over the output cap gets an error in its place."""
    report = _run(_registry(CodeLimits(output_bytes=100)), "'y' * 500")
    assert report["result"] == "error: the snippet's result is over 100 bytes of JSON"


@pytest.mark.parametrize("code", ["float('nan')", "x = []\nfor i in range(3000):\n    x = [x]\nx"])
def test_a_result_that_is_not_strict_json_is_replaced(code: str) -> None:
    """A NaN result, or one nested too deep for strict JSON, gets an error in its place; the host is unharmed."""
    assert _run(_registry(), code)["result"] == code_module.NOT_A_RESULT


def test_wall_time_bounds_the_snippet_with_nested_calls() -> None:
    """The wall limit counts time in nested calls, which the sandbox's own clock does not."""

    @tool(effect=Effect.SAFE)
    async def slow() -> str:
        """Take a while."""
        await asyncio.sleep(5)
        return "late"

    registry = Registry(code_tool(Registry(slow), limits=CodeLimits(wall_seconds=0.2)))
    report = _run(registry, "await slow()")
    assert report["error"] == "error: the snippet ran past its 0.2 s limit (nested calls included)"


def test_limits_are_checked() -> None:
    """A limit that is not a positive number names itself."""
    with pytest.raises(ValueError, match="cpu_seconds"):
        CodeLimits(cpu_seconds=0)
    with pytest.raises(ValueError, match="nested_calls"):
        CodeLimits(nested_calls=True)
    with pytest.raises(TypeError, match="Registry"):
        CodeTool([add], name="run_code")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="CodeLimits"):
        code_tool(Registry(add), limits={"cpu_seconds": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="backend"):
        code_tool(Registry(add), backend=object())  # type: ignore[arg-type]


def test_the_description_lists_each_tool_as_a_signature() -> None:
    """The code tool's description names each tool with its parameters and summary, and how to await them."""

    @tool(name="not-python")
    def dashed() -> str:
        """Have a name code cannot call."""
        return ""

    description = code_tool(Registry(add, lookup, dashed)).definition().description
    assert "not-python" not in description
    assert "- add(a, b): Add two integers." in description
    assert "- lookup(city): Look up a city." in description
    assert "async functions" in description and "await name(key=value)" in description  # the convention the code keeps
    assert "asyncio.gather" in description


class _Counted:
    """Tools with a side-effect counter, and a third that blocks until cancelled."""

    def __init__(self, effect: Effect | None) -> None:
        self.runs: dict[str, int] = {"charge": 0, "ship": 0}
        self.block = True
        counted = self

        @tool
        def charge(amount: int) -> str:
            """Charge an amount (not idempotent)."""
            counted.runs["charge"] += 1
            return f"charged {amount}"

        @tool(effect=effect)
        async def ship() -> str:
            """Ship the order."""
            counted.runs["ship"] += 1
            if counted.block:
                await asyncio.sleep(60)  # cancelled by the test: the code call "crashes" here
            return "shipped"

        self.registry = Registry(charge, ship)


CHARGE_TWICE_THEN_SHIP = "a = await charge(amount=1)\nb = await charge(amount=2)\n[a, b, await ship()]"


async def _cancel_when_shipping(binding: Binding, invocation: Any, counted: _Counted) -> None:
    task = asyncio.ensure_future(binding.call(invocation))
    for _ in range(500):
        if counted.runs["ship"]:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_code_call_run_again_runs_no_completed_nested_call_twice() -> None:
    """After a crash mid-snippet, the same code call returns recorded nested results and runs only the rest."""
    counted = _Counted(Effect.IDEMPOTENT)
    binding = code_tool(counted.registry)
    invocation = binding.contract.prepare(
        Request(name="run_code", arguments=json.dumps({"code": CHARGE_TWICE_THEN_SHIP})),
        Admission(IdempotencyKey("code-call-1")),
    )
    await _cancel_when_shipping(binding, invocation, counted)
    assert counted.runs == {"charge": 2, "ship": 1}
    counted.block = False
    again = binding.contract.prepare(
        Request(name="run_code", arguments=json.dumps({"code": CHARGE_TWICE_THEN_SHIP})),
        Admission(IdempotencyKey("code-call-1")),
    )
    report = json.loads(_text(await binding.call(again)))
    assert report["result"] == ["charged 1", "charged 2", "shipped"]
    assert counted.runs == {"charge": 2, "ship": 2}  # charge ran once per position; ship (idempotent) again


async def test_a_nested_call_of_unknown_outcome_stops_the_run() -> None:
    """A nested call with no effect promise interrupted mid-run is not guessed at: the run again stops there."""
    counted = _Counted(None)
    binding = code_tool(counted.registry)
    arguments = json.dumps({"code": CHARGE_TWICE_THEN_SHIP})
    await _cancel_when_shipping(
        binding, binding.contract.prepare(Request("run_code", arguments), Admission(IdempotencyKey("k"))), counted
    )
    counted.block = False
    outcome = await asyncio.create_task(_call(binding, arguments, "k"))
    report = json.loads(_text(outcome))
    assert report["error"].startswith('error: the snippet was stopped: nested call 3 of tool "ship" was interrupted')
    assert counted.runs == {"charge": 2, "ship": 1}


async def _call(binding: Binding, arguments: str, key: str) -> Result | BaseException:
    try:
        return await binding.call(
            binding.contract.prepare(Request("run_code", arguments), Admission(IdempotencyKey(key)))
        )
    except Exception as error:
        return error


async def test_another_call_at_a_recorded_position_stops_the_run() -> None:
    """The same code call key with another nested call at a recorded position is refused, not run."""
    counted = _Counted(Effect.IDEMPOTENT)
    binding = code_tool(counted.registry)
    first = await _call(binding, json.dumps({"code": "await charge(amount=1)"}), "same")
    assert json.loads(_text(first))["result"] == "charged 1"
    second = json.loads(_text(await _call(binding, json.dumps({"code": "await charge(amount=5)"}), "same")))
    assert second["error"].startswith('error: the snippet was stopped: nested call 1 of tool "charge" differs')
    assert counted.runs["charge"] == 1


async def test_under_the_driver_nested_calls_use_its_backend() -> None:
    """A code call driven by the Driver records its nested calls in the driver's backend, under derived keys."""
    counted = _Counted(Effect.IDEMPOTENT)
    counted.block = False
    backend = MemoryBackend()
    driver = Driver(Registry(code_tool(counted.registry, backend=backend)), backend)
    call = ToolCall(id="call_1", request=Request("run_code", json.dumps({"code": CHARGE_TWICE_THEN_SHIP})))
    turn = await driver.run("run-1", [call])
    assert json.loads(_text(turn.results[0].outcome or Result()))["result"][2] == "shipped"
    assert len(backend._calls) == 4  # pyright: ignore[reportPrivateUsage] - the code call and its 3 nested calls
    await driver.run("run-1", [call])
    assert counted.runs == {"charge": 2, "ship": 1}


def test_a_name_read_without_a_call_is_not_defined() -> None:
    """A tool is a function to call, not a host name the snippet can read."""
    assert "NameError" in _run(_registry(), "f = add\nf")["error"]


def test_a_snippet_over_its_byte_limit_is_refused() -> None:
    """The snippet's size is bounded in UTF-8 bytes, beside the schema's length in characters."""
    binding = code_tool(Registry(add), limits=CodeLimits(code_bytes=10))
    assert isinstance(binding.tool, CodeTool) and binding.tool.limits.code_bytes == 10
    outcome = Registry(binding).run_sync("run_code", json.dumps({"code": "'ééééé'"}))
    assert _text(outcome) == "error: the snippet is over 10 bytes"


async def test_a_nested_input_request_is_asked_and_the_same_run_resumes() -> None:
    """An approval asked mid-code becomes the code call's request; answered, the run resumes, nothing runs twice."""
    counted = _Counted(Effect.IDEMPOTENT)
    counted.block = False

    @tool
    def approve(ctx: CallContext, label: str) -> str:
        """Ask a human."""
        return f"{label}: " + ("yes" if ctx.ask(f"approve {label}?", bool) else "no")

    inner = Registry(*counted.registry, approve)
    backend = MemoryBackend()
    driver = Driver(Registry(code_tool(inner, backend=backend)), backend)
    code = "[await charge(amount=1), await approve(label='x'), await approve(label='y'), await ship()]"
    call = ToolCall(id="call_1", request=Request("run_code", json.dumps({"code": code})))
    turn = await driver.run("run-1", [call])
    (waiting,) = turn.waiting
    assert waiting.request is not None and waiting.request.prompt == "approve x?"
    assert await driver.answer(waiting.key, True)
    turn = await driver.run("run-1", [call])
    (waiting,) = turn.waiting
    assert waiting.request is not None and waiting.request.prompt == "approve y?"
    assert await driver.answer(waiting.key, False)
    turn = await driver.run("run-1", [call])
    assert turn.complete
    assert json.loads(_text(turn.results[0].outcome or Result()))["result"] == [
        "charged 1",
        "x: yes",
        "y: no",
        "shipped",
    ]
    assert counted.runs == {"charge": 1, "ship": 1}


async def test_an_answer_without_a_driver_key_resumes_the_run_it_was_asked_in() -> None:
    """Without a driver's key, the request carries the run's own key, so the answer resumes that run."""

    @tool
    def approve(ctx: CallContext) -> str:
        """Ask a human."""
        return "yes" if ctx.ask("ok?", bool) else "no"

    binding = code_tool(Registry(approve))
    arguments = json.dumps({"code": "await approve()"})
    asked = await binding.call(binding.contract.prepare(Request("run_code", arguments)))
    assert asked.input_request is not None
    admission = Admission(continuation=asked.input_request.continuation(True))
    resumed = await binding.call(binding.contract.prepare(Request("run_code", arguments), admission))
    assert json.loads(_text(resumed))["result"] == "yes"


def _kill_sandbox_workers() -> int:
    """Kill this process's Monty worker children (as a crash would); how many were killed."""
    killed = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = stat.read_text().split("(", 1)[1].rsplit(")", 1)[0]
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and "monty" in command:
            os.kill(int(stat.parent.name), signal.SIGKILL)
            killed += 1
    return killed


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the sandbox worker through /proc (Linux)")
def test_a_crashed_worker_ends_the_snippet_and_the_host_keeps_serving() -> None:
    """A sandbox worker killed mid-snippet ends that snippet with a clear error; the next snippet runs."""

    @tool
    def crash() -> int:
        """Kill the sandbox worker."""
        return _kill_sandbox_workers()

    registry = Registry(code_tool(Registry(crash, add)))
    assert _run(registry, "await crash()")["error"] == "error: the sandbox stopped the snippet: its worker stopped"
    assert _run(registry, "await add(a=1, b=1)")["result"] == 2


async def test_without_a_backend_the_least_recently_run_code_calls_are_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In memory, the nested records of at most KEPT_RUNS code calls are kept: memory stays bounded."""
    monkeypatch.setattr(code_module, "KEPT_RUNS", 2)
    counted = _Counted(Effect.IDEMPOTENT)
    binding = code_tool(counted.registry)
    arguments = json.dumps({"code": "await charge(amount=1)"})
    for key in ("k1", "k2", "k3", "k3"):
        await _call(binding, arguments, key)
    assert counted.runs["charge"] == 3  # k3's second run found its record
    await _call(binding, arguments, "k1")
    assert counted.runs["charge"] == 4  # k1's record was forgotten when k3 came


class _Seen:
    """An observer that records what it is shown and does what the runner would have done."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def admit(self, contract: Contract, request: Request, admission: Admission, call_id: str | None) -> Invocation:
        self.seen.append(f"admit {request.name}")
        return contract.prepare(request, admission)

    def unknown(self, name: str, call_id: str | None) -> None:
        self.seen.append(f"unknown {name}")

    async def call(self, binding: Binding, invocation: Invocation) -> Result:
        self.seen.append(f"call {invocation.name}")
        return await binding.call(invocation)


def test_an_observer_sees_nested_admissions_and_calls() -> None:
    """A tracer installed in the process sees each nested call's admission and run, as a direct call's."""
    seen = _Seen()
    previous = observe.install(seen)
    try:
        assert _run(_registry(), "await add(a=1, b=2)")["result"] == 3
    finally:
        observe.install(previous)
    assert seen.seen == ["admit run_code", "call run_code", "admit add", "call add"]


def test_a_nested_call_is_authorized_as_the_caller_of_the_code_call() -> None:
    """A guard of a nested call reads the principal the code call runs as: allowed for one caller, not another."""

    def admins_only(authorization: object) -> bool:
        principal = current_principal()
        return principal is not None and principal.has_scopes(["admin"])

    registry = Registry(code_tool(Registry(bind(add, Guard(admins_only)))))
    with acting_as(Principal("alice", scopes=frozenset({"admin"}))):
        assert _run(registry, "await add(a=1, b=1)")["result"] == 2
    with acting_as(Principal("bob")):
        assert 'tool "add" is not authorized' in _run(registry, "await add(a=1, b=1)")["error"]


@pytest.mark.parametrize("workers", [1, 2])
async def test_sandbox_workers_at_once_are_bounded(workers: int) -> None:
    """Snippets past the `workers` bound wait their turn: never more sandboxes at once than the bound."""
    active = [0, 0]  # now, most

    @tool(effect=Effect.SAFE)
    async def probe() -> int:
        """Hold a sandbox for a moment."""
        active[0] += 1
        active[1] = max(active)
        await asyncio.sleep(0.05)
        active[0] -= 1
        return 1

    registry = Registry(code_tool(Registry(probe), limits=CodeLimits(workers=workers)))
    arguments = json.dumps({"code": "await probe()"})
    outcomes = await asyncio.gather(*(registry.run("run_code", arguments) for _ in range(3)))
    assert all(json.loads(_text(outcome))["result"] == 1 for outcome in outcomes)
    assert active[1] == workers


class _Gate:
    """A host's gate: hides `hidden`, refuses every call past `budget`, and records what it is told."""

    def __init__(self, hidden: set[str], budget: int) -> None:
        self.hidden, self.budget, self.open = hidden, budget, 0
        self.seen: list[tuple[str, str]] = []

    def allows(self, name: str) -> bool:
        return name not in self.hidden

    async def enter(self, name: str) -> Any:
        if self.budget == 0:
            return f"tool {name} is over its limit"
        self.budget -= 1
        self.open += 1

        def release() -> None:
            self.open -= 1

        return release

    def observe(self, call: ToolCall, outcome: Result | BaseException) -> None:
        self.seen.append((call.name, "result" if isinstance(outcome, Result) else type(outcome).__name__))


def test_a_gate_hides_tools_refuses_calls_and_is_told_each_outcome() -> None:
    """A hidden tool is a name not defined; a refused call raises its reason; every admitted outcome is observed."""
    gate = _Gate({"lookup"}, budget=2)
    registry = Registry(code_tool(Registry(add, lookup), gate=gate))
    code = (
        "out = []\n"
        "for step in [lambda: lookup(city='Oslo'), lambda: add(a='x', b=1), lambda: add(a=1, b=2), "
        "lambda: add(a=3, b=4)]:\n"
        "    try:\n        out.append(await step())\n    except Exception as error:\n"
        "        out.append(type(error).__name__ + ': ' + str(error))\nout"
    )
    report = _run(registry, code)
    assert report["result"][0] == "NameError: name 'lookup' is not defined"
    assert report["result"][1].startswith("ValueError: invalid arguments for tool 'add'")
    assert report["result"][2:] == [3, "RuntimeError: tool add is over its limit"]
    assert gate.seen == [("lookup", "UnknownToolError"), ("add", "InvalidInvocationError"), ("add", "result")]
    assert gate.open == 0


def _gather(*calls: str) -> str:
    return "import asyncio\nawait asyncio.gather(" + ", ".join(calls) + ")"


async def test_gathered_safe_calls_run_at_once() -> None:
    """SAFE calls in a gather are all in flight together: each waits until every one has started."""
    expected = 4
    started: list[int] = []
    everyone_in = asyncio.Event()

    @tool(effect=Effect.SAFE)
    async def meet(i: int) -> int:
        """Wait until every call of the batch is in flight."""
        started.append(i)
        if len(started) == expected:
            everyone_in.set()
        async with asyncio.timeout(5):  # a bound: calls run one at a time would wait here in vain
            await everyone_in.wait()
        return i

    registry = Registry(code_tool(Registry(meet)))
    outcome = await registry.run("run_code", json.dumps({"code": _gather(*(f"meet(i={i})" for i in range(expected)))}))
    assert json.loads(_text(outcome))["result"] == [0, 1, 2, 3]
    assert sorted(started) == [0, 1, 2, 3]


async def test_gathered_calls_of_tools_with_effects_run_alone_in_the_order_made() -> None:
    """In a gather, a call of a tool that is not SAFE never overlaps another call, and runs in position order."""
    events: list[str] = []
    in_flight: list[str] = []

    async def visit(label: str) -> str:
        in_flight.append(label)
        events.append(f"start {label} with {sorted(in_flight)}")
        await asyncio.sleep(0.01)
        in_flight.remove(label)
        return label

    @tool(effect=Effect.SAFE)
    async def peek(label: str) -> str:
        """Read something."""
        return await visit(label)

    @tool
    async def write(label: str) -> str:
        """Write something."""
        return await visit(label)

    registry = Registry(code_tool(Registry(peek, write)))
    code = _gather("peek(label='a')", "peek(label='b')", "write(label='c')", "write(label='d')", "peek(label='e')")
    report = json.loads(_text(await registry.run("run_code", json.dumps({"code": code}))))
    assert report["result"] == ["a", "b", "c", "d", "e"]
    assert events[2:] == ["start c with ['c']", "start d with ['d']", "start e with ['e']"]
    assert sorted(events[:2]) == ["start a with ['a']", "start b with ['a', 'b']"]  # a and b overlap


async def test_a_call_the_snippet_never_waits_for_never_runs() -> None:
    """A call made when the snippet awaits nothing after it never runs, and is listed so; one made earlier ran."""
    counted = _Counted(Effect.IDEMPOTENT)
    binding = code_tool(counted.registry)
    code = "first = charge(amount=1)\nsecond = await charge(amount=2)\nunused = charge(amount=3)\nsecond"
    report = json.loads(_text(await _call(binding, json.dumps({"code": code}), "k")))
    assert report["result"] == "charged 2"
    assert report["calls"] == [
        {"tool": "charge", "outcome": "returned"},  # started, like a task, when the snippet first waited
        {"tool": "charge", "outcome": "returned"},
        {"tool": "charge", "outcome": code_module.NOT_AWAITED},
    ]
    assert counted.runs["charge"] == 2


KEPT = "async def kept(call):\n    try:\n        return await call\n    except ValueError:\n        return 'bad'\n"


def test_a_rejection_in_a_gather_reaches_the_code_and_the_other_calls_return() -> None:
    """One call of a gather not admitted raises ValueError where it is awaited; the others run and return."""
    code = (
        "import asyncio\n"
        + KEPT
        + "await asyncio.gather(kept(add(a=1, b=1)), kept(add(a='x', b=1)), kept(add(a=2, b=2)))"
    )
    report = _run(_registry(), code)
    assert report["result"] == [2, "bad", 4]
    assert [call["outcome"] for call in report["calls"]] == ["returned", "rejected", "returned"]
    uncaught = _run(_registry(), _gather("add(a=1, b=1)", "add(a='x', b=1)", "lookup(city='Oslo')"))
    assert uncaught["error"].startswith("ValueError: invalid arguments for tool 'add'")
    assert [call["outcome"] for call in uncaught["calls"]] == ["returned", "rejected", "returned"]


class _Batch:
    """SAFE tools with a side-effect counter; `peek(label='slow')` blocks while `block` is set."""

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}
        self.block = True
        batch = self

        @tool(effect=Effect.SAFE)
        async def peek(label: str) -> str:
            """Read a label."""
            batch.runs[label] = batch.runs.get(label, 0) + 1
            if label == "slow" and batch.block:
                await asyncio.sleep(60)  # cancelled by the test: the code call "crashes" here
            return f"peeked {label}"

        @tool
        def approve(ctx: CallContext, label: str) -> str:
            """Ask a human."""
            batch.runs[label] = batch.runs.get(label, 0) + 1
            return f"{label}: " + ("yes" if ctx.ask(f"approve {label}?", bool) else "no")

        self.registry = Registry(peek, approve)


async def test_a_code_call_run_again_runs_no_completed_call_of_a_parallel_batch_twice() -> None:
    """Cancelled while one call of a gather runs, the code call run again reruns none of the batch's finished calls."""
    batch = _Batch()
    backend = MemoryBackend()
    binding = code_tool(batch.registry, backend=backend)
    arguments = json.dumps({"code": _gather("peek(label='slow')", "peek(label='a')", "peek(label='b')")})
    task = asyncio.ensure_future(_call(binding, arguments, "code-call-1"))
    for _ in range(500):  # until the slow call runs and the two others are recorded
        recorded = [entry for entry in backend._calls.values() if isinstance(entry, tuple)]  # pyright: ignore[reportPrivateUsage]
        if batch.runs.get("slow") and len(recorded) == 2:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert batch.runs == {"slow": 1, "a": 1, "b": 1}
    batch.block = False
    report = json.loads(_text(await _call(binding, arguments, "code-call-1")))
    assert report["result"] == ["peeked slow", "peeked a", "peeked b"]
    assert batch.runs == {"slow": 2, "a": 1, "b": 1}  # only the interrupted call ran again


async def test_an_input_request_in_a_parallel_batch_is_asked_and_the_others_are_kept() -> None:
    """A call of a gather that asks for input makes the code call ask; the batch's other calls run once, in all."""
    batch = _Batch()
    batch.block = False
    backend = MemoryBackend()
    driver = Driver(Registry(code_tool(batch.registry, backend=backend)), backend)
    code = _gather("peek(label='a')", "approve(label='x')", "peek(label='b')")
    call = ToolCall(id="call_1", request=Request("run_code", json.dumps({"code": code})))
    turn = await driver.run("run-1", [call])
    (waiting,) = turn.waiting
    assert waiting.request is not None and waiting.request.prompt == "approve x?"
    assert batch.runs == {"a": 1, "x": 1, "b": 1}  # the calls after the waiting one ran too
    assert await driver.answer(waiting.key, True)
    turn = await driver.run("run-1", [call])
    assert turn.complete
    assert json.loads(_text(turn.results[0].outcome or Result()))["result"] == ["peeked a", "x: yes", "peeked b"]
    assert batch.runs == {"a": 1, "x": 2, "b": 1}  # approve resumed (its function runs again with the answer)


async def test_the_schedule_does_not_depend_on_which_gathered_call_finishes_first() -> None:
    """The calls a snippet makes after a gather come in the same order whichever of the gathered calls ends first."""
    delays: dict[str, float] = {}
    notes: list[str] = []

    @tool(effect=Effect.SAFE)
    async def fetch(label: str) -> str:
        """Fetch a label, slowly or not."""
        await asyncio.sleep(delays[label])
        return label

    @tool
    def note(text: str) -> str:
        """Note a text (runs alone, in the order the calls were made)."""
        notes.append(text)
        return text

    binding = code_tool(Registry(fetch, note))
    code = (
        "import asyncio\nasync def step(label):\n    got = await fetch(label=label)\n    return await note(text=got)\n"
        "await asyncio.gather(step('a'), step('b'))"
    )
    orders: list[list[str]] = []
    for key, slow in (("first", "a"), ("second", "b")):
        delays.update({"a": 0.0, "b": 0.0, slow: 0.05})
        notes.clear()
        report = json.loads(_text(await _call(binding, json.dumps({"code": code}), key)))
        assert report["result"] == ["a", "b"]
        orders.append(list(notes))
    assert orders[0] == orders[1]  # given as each call ended, the later calls would come in the order they ended


EXIT_SCRIPT = """
import json
from scopetool import Registry, tool
from scopetool.code import code_tool

@tool
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

result = Registry(code_tool(Registry(add))).run_sync("run_code", json.dumps({"code": "await add(a=1, b=2)"}))
print(result.output.text())
"""


RESULT = '{"result":3,"calls":[{"tool":"add","outcome":"returned"}],"printed":""}'


def test_a_process_that_ran_a_snippet_exits_cleanly() -> None:
    """Exiting right after a snippet does not abort (the sandbox pool's threads are given their moment)."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(code_module.__file__).parents[1])}
    for _ in range(8):  # without the settle at exit about one run in five aborted
        done = subprocess.run(
            [sys.executable, "-c", EXIT_SCRIPT], check=False, capture_output=True, text=True, timeout=60, env=env
        )
        assert (done.returncode, done.stdout.strip()) == (0, RESULT), done.stderr[-500:]


@tool(name="get-sum", effect=Effect.SAFE)
def get_sum_tool(a: int, b: int) -> int:
    """Add two integers (a dashed name, as many MCP servers name their tools)."""
    return a + b


@tool(name="get_total", effect=Effect.SAFE)
def get_total(a: int) -> int:
    """Return a number."""
    return a


@tool(name="get-total", effect=Effect.SAFE)
def get_total_dashed(a: int) -> int:
    """A tool whose made name another tool takes."""
    return -a


def test_snippet_names_make_identifiers_and_leave_out_a_taken_one() -> None:
    """Dashes and dots become underscores, a keyword gets one after it, a leading digit one before; clashes go."""
    found = code_module.snippet_names(["add", "get-sum", "2fa.check", "import", "get_total", "get-total", "a-b", "a.b"])
    assert found == {
        "add": "add",
        "get_sum": "get-sum",
        "_2fa_check": "2fa.check",
        "import_": "import",
        "get_total": "get_total",
    }


def test_a_tool_with_a_dashed_name_is_called_by_its_made_name() -> None:
    """get-sum is get_sum in the snippet; the nested call is get-sum's, and a taken made name is not described."""
    registry = Registry(code_tool(Registry(get_sum_tool, get_total, get_total_dashed)))
    description = registry.definitions()[0].description
    assert "- get_sum(a, b):" in description and "- get_total(a):" in description
    assert description.count("get_total") == 1  # get-total is left out: its made name is get_total's
    report = _run(registry, "await get_sum(a=1, b=2)")
    assert report == {"result": 3, "calls": [{"tool": "get-sum", "outcome": "returned"}], "printed": ""}
    assert _run(registry, "await get_total(a=4)")["result"] == 4  # the tool named get_total, never get-total


def test_an_undefined_name_near_a_tool_suggests_it() -> None:
    """A misspelt tool, called or read, is a NameError naming the nearest tool; a far name gets no suggestion."""
    called = _run(_registry(), "await lokup(city='Oslo')")["error"]
    read = _run(_registry(), "f = lookpu")["error"]
    far = _run(_registry(), "zzzzzz")["error"]
    assert called.startswith("NameError: name 'lokup' is not defined; did you mean \"lookup\"? (at line 1")
    assert read.startswith("NameError: name 'lookpu' is not defined; did you mean \"lookup\"? (at line 1")
    assert far.startswith("NameError: name 'zzzzzz' is not defined (at line 1")
