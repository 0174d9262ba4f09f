"""MCP tasks (``io.modelcontextprotocol/tasks``) in `scopetool serve`: raw exchanges checked against its schema.

The official MCP client (SDK 2.3.0) does not speak the extension, so these tests write the JSON-RPC
messages themselves, over stdio (``scopetool serve --tasks`` as a subprocess) and over Streamable HTTP
(the ASGI app in process), and check every task message the server sends against the extension's
published JSON Schema (``tests/data/mcp_tasks/schema.json``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, cast

import httpx
import jsonschema
import pytest
from mcp import Client, MCPError, types
from pydantic import BaseModel
from tasks_fixture_tools import registry
from test_http import _lifespan  # pyright: ignore[reportPrivateUsage]

from scopetool import Admission, CallContext, Effect, Failure, Principal, Registry, Request, acting_as, tool
from scopetool.cli._common import UsageError
from scopetool.cli._main import build_parser
from scopetool.cli._tasks import task_options
from scopetool.driver import AdmittedCall, CallState
from scopetool.driver.dbos import DbosBackend, _sqlite_problem  # pyright: ignore[reportPrivateUsage]
from scopetool.mcp._task_client import TaskCancelledError, TaskCreated, TasksClientExtension, answer_task, follow_task
from scopetool.mcp.auth import STATIC_ISSUER
from scopetool.mcp.client import REFUSED, MCPClient, StdioServer, connect
from scopetool.mcp.gateway import load_config, open_gateway
from scopetool.mcp.server import MAX_INPUT_ROUNDS, create_server, http_app
from scopetool.mcp.tasks import EXTENSION, MISSING_CAPABILITY, TaskOptions
from scopetool.providers import ToolCall

FIXTURE = Path(__file__).with_name("tasks_fixture_tools.py")
SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "mcp_tasks" / "schema.json").read_text(encoding="utf-8"))
MODERN = "2026-07-28"
CLIENT = {"name": "raw", "version": "1"}
DECLARING: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": CLIENT,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}, "elicitation": {}},
}
PLAIN: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": CLIENT,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def conforms(definition: str, instance: dict[str, Any]) -> dict[str, Any]:
    """`instance`, after checking it against the extension schema's `definition`."""
    validator = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": SCHEMA["$defs"]})
    errors: list[Any] = list(validator.iter_errors(instance))  # pyright: ignore[reportUnknownMemberType]
    problems = [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in errors]
    assert not problems, f"{definition}: {problems}"
    return instance


def request(
    request_id: int, method: str, params: dict[str, Any], meta: dict[str, Any] = DECLARING, *, valid: bool = True
) -> dict[str, Any]:
    """A JSON-RPC request with the 2026-07-28 envelope in its ``_meta``; a `valid` ``tasks/*`` one is checked too."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}
    kinds = {"tasks/get": "GetTaskRequest", "tasks/update": "UpdateTaskRequest", "tasks/cancel": "CancelTaskRequest"}
    if valid and method in kinds:
        conforms(kinds[method], message)
    return message


class Stdio:
    """A server subprocess spoken to line by line; every read waits at most `timeout` seconds."""

    def __init__(self, command: list[str], timeout: float = 30.0) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self.timeout = timeout
        self.lines: queue.Queue[str] = queue.Queue()
        self.next_id = 0
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def ask(self, method: str, params: dict[str, Any], meta: dict[str, Any] = DECLARING) -> dict[str, Any]:
        """Send one request; its response (other messages are skipped)."""
        self.next_id += 1
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request(self.next_id, method, params, meta)) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + self.timeout
        while True:
            message = json.loads(self.lines.get(timeout=max(0.0, deadline - time.monotonic())))
            if message.get("id") == self.next_id:
                return dict(message)

    def result(self, method: str, params: dict[str, Any], meta: dict[str, Any] = DECLARING) -> dict[str, Any]:
        """The result of one request (it must not be an error)."""
        answer = self.ask(method, params, meta)
        assert "result" in answer, answer
        return dict(answer["result"])

    def poll(self, task_id: str, *, until: str, bound: float = 30.0) -> dict[str, Any]:
        """``tasks/get`` every 0.1 s until the task is no longer `until`-or-working; its last state."""
        deadline = time.monotonic() + bound
        while True:
            got = conforms("GetTaskResult", self.result("tasks/get", {"taskId": task_id}))
            if got["status"] not in ("working", until) or time.monotonic() > deadline:
                return got
            time.sleep(0.1)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self._release()

    def _release(self) -> None:
        """Close the pipes once the output has been read to its end."""
        self.pump.join(30)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None and not pipe.closed:
                with contextlib.suppress(BrokenPipeError):
                    pipe.close()

    def close(self) -> None:
        """End the input and wait for the server to exit."""
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        self._release()


@contextmanager
def serving(*flags: str) -> Generator[Stdio]:
    """``scopetool serve tasks_fixture_tools.py:registry --tasks FLAGS`` over stdio."""
    server = Stdio([sys.executable, "-m", "scopetool", "serve", f"{FIXTURE}:registry", "--tasks", *flags])
    try:
        yield server
    finally:
        server.close()


def is_ack(result: dict[str, Any]) -> bool:
    """Whether `result` is an empty acknowledgement (``resultType`` and the SDK's ``_meta`` alone)."""
    return result.get("resultType") == "complete" and set(result) <= {"resultType", "_meta"}


def text_of(result: dict[str, Any]) -> str:
    """The one text block of a ``CallToolResult``."""
    [block] = result["content"]
    return str(block["text"])


def test_a_long_call_becomes_a_task_that_completes_and_a_quick_one_does_not() -> None:
    """Over stdio: advertised; a quick call answered inline; a long one a task, polled to its exact result."""
    with serving() as server:
        discovered = server.result("server/discover", {})
        assert discovered["capabilities"]["extensions"] == {EXTENSION: {}}
        quick = server.result("tools/call", {"name": "slow", "arguments": {"seconds": 0.01}})
        assert (quick["resultType"], text_of(quick)) == ("complete", "slept 0.01s")
        created = conforms(
            "CreateTaskResult", server.result("tools/call", {"name": "slow", "arguments": {"seconds": 1.5}})
        )
        assert created["status"] == "working" and created["ttlMs"] == 3_600_000 and len(created["taskId"]) >= 43
        done = server.poll(created["taskId"], until="working")
        assert done["status"] == "completed" and done["resultType"] == "complete"
        assert done["result"] == {
            "content": [{"type": "text", "text": "slept 1.5s"}],
            "isError": False,
            "resultType": "complete",
        }
        assert done["createdAt"] == created["createdAt"] and done["lastUpdatedAt"] > created["createdAt"]
        unknown = server.ask("tasks/get", {"taskId": "not-a-task"})
        assert unknown["error"] == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
        assert (
            server.ask("tasks/result", {"taskId": created["taskId"]})["error"]["code"] == -32601
        )  # removed by the SEP


def test_a_client_that_did_not_declare_the_extension_never_gets_a_task() -> None:
    """Over stdio: the same long call answered inline; ``tasks/*`` refused with -32021 and the capability."""
    with serving() as server:
        inline = server.result("tools/call", {"name": "slow", "arguments": {"seconds": 1.2}}, PLAIN)
        assert (inline["resultType"], text_of(inline)) == ("complete", "slept 1.2s")
        created = server.result("tools/call", {"name": "slow", "arguments": {"seconds": 1.2}})
        refused = server.ask("tasks/get", {"taskId": created["taskId"]}, PLAIN)
        assert refused["error"]["code"] == MISSING_CAPABILITY
        assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}


def test_a_tool_without_an_effect_promise_is_answered_inline() -> None:
    """A slow call of a tool with no effect promise (it may not be run twice) is never a task."""
    with serving() as server:
        booked = server.result("tools/call", {"name": "book", "arguments": {"seat": "12A", "seconds": 1.3}})
        assert (booked["resultType"], text_of(booked)) == ("complete", "booked 12A")


def test_an_input_request_is_answered_through_tasks_update() -> None:
    """input_required with an elicitation; an answer off its schema refused; the right one resumes the call."""
    with serving() as server:
        created = conforms(
            "CreateTaskResult", server.result("tools/call", {"name": "label", "arguments": {"item": "box"}})
        )
        task_id = created["taskId"]
        asked = server.poll(task_id, until="working")
        assert asked["status"] == "input_required"
        [(key, elicitation)] = asked["inputRequests"].items()
        assert elicitation["method"] == "elicitation/create" and elicitation["params"]["message"] == "A label for box?"
        wrong = server.ask(
            "tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": "accept", "content": {"answer": 7}}}}
        )
        assert wrong["error"]["code"] == -32602 and "schema" in wrong["error"]["message"]
        stale = {"taskId": task_id, "inputResponses": {"input-99": {"action": "accept", "content": {"answer": "x"}}}}
        assert is_ack(conforms("UpdateTaskResult", server.result("tasks/update", stale)))
        answer = {"taskId": task_id, "inputResponses": {key: {"action": "accept", "content": {"answer": "red"}}}}
        assert is_ack(conforms("UpdateTaskResult", server.result("tasks/update", answer)))
        done = server.poll(task_id, until="input_required")
        assert done["status"] == "completed" and text_of(done["result"]) == "box: red"


def test_a_declined_input_request_completes_the_task_with_an_error_result() -> None:
    """Declining the elicitation ends the call: completed, with the fixed isError text."""
    with serving() as server:
        task_id = server.result("tools/call", {"name": "label", "arguments": {"item": "jar"}})["taskId"]
        key = next(iter(server.poll(task_id, until="working")["inputRequests"]))
        server.result("tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": "decline"}}})
        done = server.poll(task_id, until="input_required")
        assert done["status"] == "completed" and done["result"]["isError"] is True
        assert text_of(done["result"]) == 'error: tool "label" needs input, and the request for it was declined'


def test_a_task_is_cancelled() -> None:
    """``tasks/cancel`` is acknowledged and the task reads cancelled; its result never arrives."""
    with serving() as server:
        task_id = server.result("tools/call", {"name": "slow", "arguments": {"seconds": 30}})["taskId"]
        assert is_ack(conforms("CancelTaskResult", server.result("tasks/cancel", {"taskId": task_id})))
        got = conforms("GetTaskResult", server.result("tasks/get", {"taskId": task_id}))
        assert got["status"] == "cancelled" and "result" not in got


def test_task_flags_need_tasks_a_positive_ttl_and_a_sqlite_file(tmp_path: Path) -> None:
    """``--task-store`` without ``--tasks``, a TTL of 0 or a store URL that is not SQLite: one line naming it."""
    cases = [
        (["--task-store", "x.sqlite"], "--task-store applies to --tasks only"),
        (["--task-ttl", "5"], "--task-ttl applies to --tasks only"),
        (["--tasks", "--task-ttl", "0"], "--task-ttl must be a positive number of seconds, not 0.0"),
        (
            ["--tasks", "--task-store", "postgresql://h/db"],
            "--task-store postgresql://h/db: give the path of a SQLite file",
        ),
        (["--tasks", "--task-store", str(tmp_path)], f"--task-store {tmp_path}: cannot open it"),
    ]
    for flags, message in cases:
        args = build_parser().parse_args(["serve", f"{FIXTURE}:registry", *flags])
        with pytest.raises(UsageError) as refused, task_options(args, registry):
            pass
        assert str(refused.value).startswith(message)


def test_task_flags_give_the_options_of_create_server(tmp_path: Path) -> None:
    """No ``--tasks``: none; ``--task-ttl 60``: in memory; ``--task-store``: DBOS and the index in one file."""
    for flags, expected in [([], {}), (["--tasks", "--task-ttl", "60"], {"tasks": TaskOptions(ttl=60.0)})]:
        args = build_parser().parse_args(["serve", f"{FIXTURE}:registry", *flags])
        with task_options(args, registry) as options:
            assert options == expected
    store = tmp_path / "tasks.sqlite"
    problem = _sqlite_problem(f"sqlite:///{store}")
    if problem is not None:
        pytest.skip(problem)
    args = build_parser().parse_args(["serve", f"{FIXTURE}:registry", "--tasks", "--task-store", f"sqlite:///{store}"])
    with task_options(args, registry) as options:
        durable: TaskOptions = options["tasks"]
        assert isinstance(durable.backend, DbosBackend) and durable.store == store.resolve()
    assert store.exists()


# --- over Streamable HTTP, in process, with the caller's principal set by the test's own ASGI layer ---


@asynccontextmanager
async def http_client(
    options: TaskOptions, tools: Registry = registry, told: list[str] | None = None
) -> AsyncGenerator[httpx.AsyncClient]:
    """A client of the app; each request's ``x-subject`` header is its principal (as an auth layer would set).

    The name of each call's tool is appended to `told` when its outcome is known (the server's ``on_call``).
    """

    def on_call(call: ToolCall, outcome: object) -> None:
        if told is not None:
            told.append(call.name)

    app = http_app(tools, tasks=options, on_call=on_call)

    async def as_subject(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", []))
        subject, issuer, client = (headers.get(name) for name in (b"x-subject", b"x-issuer", b"x-client"))
        principal = None
        if subject is not None:
            principal = Principal(
                subject.decode(),
                None if client is None else client.decode(),
                issuer=None if issuer is None else issuer.decode(),
            )
        with acting_as(principal):
            await app(scope, receive, send)

    async with _lifespan(app):
        transport = httpx.ASGITransport(app=as_subject)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as client:
            yield client


async def post(
    client: httpx.AsyncClient,
    subject: str | None,
    method: str,
    params: dict[str, Any],
    *,
    valid: bool = True,
    meta: dict[str, Any] = DECLARING,
    issuer: str | None = None,
    client_id: str | None = None,
) -> dict[str, Any]:
    """One 2026-07-28 POST as `subject` (of `issuer`, via `client_id`), ``Mcp-Name`` the tool or task id; the answer."""
    headers: dict[str, str | bytes] = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
        "mcp-name": str(params.get("name") or params.get("taskId")),
        **({} if subject is None else {"x-subject": subject.encode()}),  # UTF-8: a look-alike's letters
        **({} if issuer is None else {"x-issuer": issuer}),
        **({} if client_id is None else {"x-client": client_id}),
    }
    answer = await client.post("/mcp", json=request(1, method, params, meta, valid=valid), headers=headers)
    return dict(answer.json())


async def refused_to(client: httpx.AsyncClient, subject: str, task_id: str) -> None:
    """Assert that `subject` can neither get, update nor cancel the task: to it, it does not exist (-32602)."""
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("tasks/get", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
        ("tasks/cancel", {"taskId": task_id}),
    ]
    for method, params in attempts:
        refused = await post(client, subject, method, params)
        assert refused["error"] == {"code": -32602, "message": "Failed to retrieve task: Task not found"}


async def test_over_http_a_task_is_only_its_creators() -> None:
    """Over HTTP: alice's task is completed for alice; for bob, get, update and cancel are -32602 (not found)."""
    told: list[str] = []
    async with http_client(TaskOptions(answer_within=0.1), told=told) as client:
        created = await post(client, "alice", "tools/call", {"name": "slow", "arguments": {"seconds": 0.5}})
        task_id = conforms("CreateTaskResult", created["result"])["taskId"]
        await refused_to(client, "bob", task_id)
        got = await poll_http(client, task_id, "working")
        assert got["status"] == "completed" and text_of(got["result"]) == "slept 0.5s"
    assert told == ["slow"]  # the server's call observer (the gateway's audit) is told a task's outcome too


async def test_over_http_a_task_is_its_creators_whole_identity() -> None:
    """ci-bot's JWT task is not the static token ci-bot's, nor another issuer's, client's, or a look-alike's."""
    jwt_bot = {"issuer": "https://auth.example.com", "client_id": "agent"}
    others: list[dict[str, Any]] = [
        {"subject": "ci-bot", "issuer": STATIC_ISSUER},
        {"subject": "ci-bot", "issuer": "https://other.example.com", "client_id": "agent"},
        {"subject": "ci-bot", "issuer": "https://auth.example.com", "client_id": "agent2"},
        {"subject": "ci-bot", "issuer": "https://auth.example.com"},
        {"subject": "CI-bot", **jwt_bot},
        {"subject": "ci\u2010bot", **jwt_bot},  # a Unicode hyphen
    ]
    async with http_client(TaskOptions(answer_within=0)) as client:
        created = await post(client, "ci-bot", "tools/call", {"name": "slow", "arguments": {"seconds": 5}}, **jwt_bot)
        task_id = created["result"]["taskId"]
        for other in others:
            who = other.pop("subject")
            for method in ("tasks/get", "tasks/cancel"):
                refused = await post(client, who, method, {"taskId": task_id}, **other)
                assert refused["error"]["message"] == "Failed to retrieve task: Task not found", (who, other)
        own = await post(client, "ci-bot", "tasks/get", {"taskId": task_id}, **jwt_bot)
        assert own["result"]["status"] == "working"
        await post(client, "ci-bot", "tasks/cancel", {"taskId": task_id}, **jwt_bot)


RUNNING: list[int] = [0]


@tool(effect=Effect.SAFE)
async def forever() -> str:
    """Never end (until cancelled), counting the calls running."""
    RUNNING[0] += 1
    try:
        await asyncio.Event().wait()
    finally:
        RUNNING[0] -= 1
    return "never"


async def test_over_http_a_hostile_callers_never_ending_tasks_end_at_their_ttl_and_are_capped() -> None:
    """Hostile: 40 never-ending tasks over 4 callers of cap 10 run; the 11th is refused; at the TTL every call ends."""
    told: list[str] = []
    async with http_client(TaskOptions(answer_within=0, ttl=1.5, max_running=10), Registry(forever), told) as client:
        answers = [
            await post(client, f"caller-{n % 4}", "tools/call", {"name": "forever", "arguments": {}}) for n in range(44)
        ]
        created = [answer for answer in answers if "result" in answer]
        refused = [answer["error"] for answer in answers if "error" in answer]
        await asyncio.sleep(0.2)
        running = RUNNING[0]
        for _ in range(100):
            if RUNNING[0] == 0 and len(told) == 40:
                break
            await asyncio.sleep(0.05)
        expired = await post(client, "caller-0", "tasks/get", {"taskId": created[0]["result"]["taskId"]})
    assert (len(created), len(refused), running) == (40, 4, 40)
    assert refused[0]["code"] == 429 and "limited to 10 running at once" in refused[0]["message"]
    assert (RUNNING[0], told) == (0, ["forever"] * 40)  # every call cancelled, its outcome told
    assert expired["error"]["message"] == "Failed to retrieve task: Task has expired"


async def test_over_http_an_expired_task_is_gone() -> None:
    """A task past its TTL answers -32602 'expired', then 'not found' (it was purged)."""
    async with http_client(TaskOptions(answer_within=0, ttl=0.3)) as client:
        created = await post(client, "alice", "tools/call", {"name": "slow", "arguments": {"seconds": 0.01}})
        task_id = conforms("CreateTaskResult", created["result"])["taskId"]
        assert created["result"]["ttlMs"] == 300
        await asyncio.sleep(0.4)
        expired = await post(client, "alice", "tasks/get", {"taskId": task_id})
        assert expired["error"] == {"code": -32602, "message": "Failed to retrieve task: Task has expired"}
        gone = await post(client, "alice", "tasks/get", {"taskId": task_id})
        assert gone["error"]["message"] == "Failed to retrieve task: Task not found"


# --- durable: DBOS on SQLite, a server killed mid-task ---


def test_a_server_killed_mid_task_answers_tasks_get_after_a_restart(tmp_path: Path) -> None:
    """kill -9 mid-call; restarted on the same store, the task is another principal's to no one, and completes."""
    store = tmp_path / "tasks.sqlite"
    problem = _sqlite_problem(f"sqlite:///{store}")
    if problem is not None:
        pytest.skip(problem)
    script = [sys.executable, str(FIXTURE), str(store)]
    first = Stdio([*script, "alice"], timeout=60)
    try:
        created = conforms(
            "CreateTaskResult", first.result("tools/call", {"name": "slow", "arguments": {"seconds": 2}})
        )
    finally:
        first.kill()
    intruder = Stdio([*script, "mallory"], timeout=60)
    try:
        refused = intruder.ask("tasks/get", {"taskId": created["taskId"]})
        assert refused["error"] == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
    finally:
        intruder.close()
    again = Stdio([*script, "alice"], timeout=60)
    try:
        done = again.poll(created["taskId"], until="working", bound=60)
    finally:
        again.close()
    assert done["status"] == "completed" and done["createdAt"] == created["createdAt"]
    assert text_of(done["result"]) == "slept 2.0s"


@tool(effect=Effect.IDEMPOTENT)
def survey(ctx: CallContext[None], rounds: int) -> str:
    """Ask `rounds` questions in turn."""
    answers = [ctx.ask(f"Question {number}?", str) for number in range(rounds)]
    return " ".join(answers)


class Place(BaseModel):
    """A place: an object, which an elicitation form cannot ask for inside a form."""

    name: str


@tool(effect=Effect.SAFE)
def places(ctx: CallContext[None], count: int) -> str:
    """Ask for a list of places (no elicitation form can ask for it)."""
    return str(len(ctx.ask("Which places?", list[Place])))


class Broken:
    """A driver backend whose every start fails: the task ends failed, with a JSON-RPC error."""

    async def secret(self) -> bytes:
        return b"k" * 32

    async def start(self, call: AdmittedCall) -> CallState:
        raise RuntimeError("the store is down")

    async def answer(self, key: str, response: Any) -> bool:
        return False


EXTRA = Registry(survey, places)


async def poll_http(client: httpx.AsyncClient, task_id: str, until: str, *, polls: int = 100) -> dict[str, Any]:
    """``tasks/get`` as alice every 0.05 s (at most `polls` times) while the task is working or `until`."""
    got: dict[str, Any] = {}
    for _ in range(polls):
        got = conforms("GetTaskResult", (await post(client, "alice", "tasks/get", {"taskId": task_id}))["result"])
        if got["status"] not in ("working", until):
            break
        await asyncio.sleep(0.05)
    return got


async def test_over_http_input_requests_round_by_round_and_their_bounds() -> None:
    """Each round gets a fresh key; a malformed answer is -32602; past MAX_INPUT_ROUNDS the call ends."""
    async with http_client(TaskOptions(answer_within=0), EXTRA) as client:
        created = await post(client, "alice", "tools/call", {"name": "survey", "arguments": {"rounds": 2}})
        task_id = created["result"]["taskId"]
        keys: list[str] = []
        for word in ("a", "b"):
            asked = await poll_http(client, task_id, "working")
            [key] = asked["inputRequests"]
            keys.append(key)
            malformed = await post(
                client,
                "alice",
                "tasks/update",
                {"taskId": task_id, "inputResponses": {key: {"action": "maybe"}}},
                valid=False,
            )
            assert malformed["error"]["code"] == -32602
            answer = {key: {"action": "accept", "content": {"answer": word}}}
            assert is_ack(
                (await post(client, "alice", "tasks/update", {"taskId": task_id, "inputResponses": answer}))["result"]
            )
        done = await poll_http(client, task_id, "input_required")
        assert keys == ["input-1", "input-2"] and text_of(done["result"]) == "a b"
        late = await post(client, "alice", "tasks/update", {"taskId": task_id, "inputResponses": {}})
        assert is_ack(late["result"])  # nothing outstanding: ignored
        assert is_ack((await post(client, "alice", "tasks/cancel", {"taskId": task_id}))["result"])
        assert (await poll_http(client, task_id, "working"))["status"] == "completed"  # a final task stays final
        endless = await post(client, "alice", "tools/call", {"name": "survey", "arguments": {"rounds": 20}})
        endless_id = endless["result"]["taskId"]
        for _ in range(MAX_INPUT_ROUNDS):
            [key] = (await poll_http(client, endless_id, "working"))["inputRequests"]
            answer = {key: {"action": "accept", "content": {"answer": "x"}}}
            await post(client, "alice", "tasks/update", {"taskId": endless_id, "inputResponses": answer})
        ended = await poll_http(client, endless_id, "input_required")
        assert text_of(ended["result"]) == 'error: tool "survey" asked for input too many times'


async def test_over_http_input_no_form_can_ask_for_and_a_cancelled_form_end_the_call() -> None:
    """A request no elicitation form can express, or a form the person cancels: completed, with the fixed text."""
    async with http_client(TaskOptions(answer_within=0), EXTRA) as client:
        created = await post(client, "alice", "tools/call", {"name": "places", "arguments": {"count": 1}})
        done = await poll_http(client, created["result"]["taskId"], "working")
        assert (
            text_of(done["result"]) == 'error: tool "places" needs input that cannot be requested over this connection'
        )
        created = await post(client, "alice", "tools/call", {"name": "survey", "arguments": {"rounds": 1}})
        task_id = created["result"]["taskId"]
        [key] = (await poll_http(client, task_id, "working"))["inputRequests"]
        await post(client, "alice", "tasks/update", {"taskId": task_id, "inputResponses": {key: {"action": "cancel"}}})
        done = await poll_http(client, task_id, "input_required")
        assert text_of(done["result"]) == 'error: tool "survey" needs input, and the request for it was cancelled'


async def test_over_http_a_backend_that_fails_fails_the_task_with_a_json_rpc_error() -> None:
    """The Driver's backend raises: the task is failed, its error -32603 with no private cause."""
    async with http_client(TaskOptions(backend=Broken(), answer_within=0), EXTRA) as client:
        created = await post(client, "alice", "tools/call", {"name": "survey", "arguments": {"rounds": 1}})
        failed = await poll_http(client, created["result"]["taskId"], "working")
    assert failed["status"] == "failed" and failed["error"] == {"code": -32603, "message": "Internal error"}
    assert "down" not in json.dumps(failed)


def test_task_options_are_checked() -> None:
    """A backend that is not one, a TTL or poll interval that is not positive, a negative wait: each named."""
    cases: list[tuple[dict[str, Any], str]] = [
        ({"backend": object()}, "object is not a driver backend"),
        ({"ttl": 0}, "TaskOptions.ttl must be a positive number of seconds, not 0"),
        ({"poll_interval": True}, "TaskOptions.poll_interval must be"),
        ({"answer_within": -1}, "TaskOptions.answer_within must be a number of seconds >= 0, not -1"),
    ]
    for kwargs, message in cases:
        with pytest.raises((TypeError, ValueError), match=message):
            TaskOptions(**kwargs)


async def test_over_http_an_anonymous_caller_answers_and_cancels_its_own_tasks() -> None:
    """No principal: a quick call inline, a wrong or stale answer, a cancel that stops the call, -32021 undeclared."""
    async with http_client(TaskOptions(answer_within=0.3)) as client:
        quick = await post(client, None, "tools/call", {"name": "slow", "arguments": {"seconds": 0.01}})
        assert text_of(quick["result"]) == "slept 0.01s"
        task_id = (await post(client, None, "tools/call", {"name": "label", "arguments": {"item": "lid"}}))["result"][
            "taskId"
        ]
        [key] = (await post(client, None, "tasks/get", {"taskId": task_id}))["result"]["inputRequests"]
        wrong = {key: {"action": "accept", "content": {"answer": 3}}}
        refused = await post(client, None, "tasks/update", {"taskId": task_id, "inputResponses": wrong})
        assert refused["error"]["message"] == f"inputResponses.{key}: the answer does not satisfy the request's schema"
        stale = await post(client, None, "tasks/update", {"taskId": task_id, "inputResponses": {}})
        assert is_ack(stale["result"])
        slow_id = (await post(client, None, "tools/call", {"name": "slow", "arguments": {"seconds": 30}}))["result"][
            "taskId"
        ]
        assert is_ack((await post(client, None, "tasks/cancel", {"taskId": slow_id}))["result"])
        cancelled = (await post(client, None, "tasks/get", {"taskId": slow_id}))["result"]
        assert cancelled["status"] == "cancelled" and cancelled["statusMessage"] == "The task was cancelled."
        undeclared = await post(client, None, "tasks/get", {"taskId": slow_id}, meta=PLAIN)
        assert undeclared["error"]["code"] == MISSING_CAPABILITY


# --- the client follows an upstream's tasks ---


async def test_the_client_follows_an_upstream_task_and_answers_its_input_request() -> None:
    """`connect` declares the extension: a long call's task is polled to its result; its input request answered."""
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
    spec = StdioServer(sys.executable, ("-m", "scopetool", "serve", f"{FIXTURE}:registry", "--tasks"), env=env)
    async with connect(spec, name="tasky") as client:
        tools = Registry(*client.tools)
        slow = tools["slow"]
        assert (
            await slow.call(slow.contract.prepare(Request("slow", '{"seconds": 1.3}')))
        ).output.text() == "slept 1.3s"
        label = tools["label"]
        asked = (await label.call(label.contract.prepare(Request("label", '{"item": "box"}')))).input_request
        assert asked is not None and asked.prompt == "A label for box?"
        assert asked.continuation_state["kind"] == "task_input"  # asked through the task, not by a retried call
        answer = asked.continuation({"action": "accept", "content": {"answer": "red"}})
        resumed = label.contract.prepare(Request("label", '{"item": "box"}'), Admission(continuation=answer))
        assert (await label.call(resumed)).output.text() == "box: red"


class Upstream:
    """A stand-in for the SDK session: answers each ``tasks/get`` with the next of `states`, records requests."""

    def __init__(self, *states: dict[str, Any]) -> None:
        self.states = list(states)
        self.sent: list[dict[str, Any]] = []

    async def send_request(self, request: Any, result_type: Any) -> Any:
        self.sent.append(request.model_dump(by_alias=True, mode="json", exclude_none=True))
        state = self.states.pop(0) if request.method == "tasks/get" else {}
        return result_type.model_validate({"resultType": "complete", **state})


async def test_following_a_task_ends_in_its_result_its_error_or_a_refusal() -> None:
    """Completed: the CallToolResult; failed: its MCPError; cancelled or an unsupported input request: an error."""
    done = {"status": "completed", "result": {"content": [{"type": "text", "text": "ok"}], "isError": False}}
    upstream = Upstream({"status": "working", "pollIntervalMs": 1}, {"status": "working"}, done)
    result = await follow_task(cast("Any", upstream), "t1", 10)
    assert isinstance(result, types.CallToolResult) and result.content[0].text == "ok"  # type: ignore[union-attr]
    assert [sent["params"]["taskId"] for sent in upstream.sent] == ["t1"] * 3
    failed = Upstream({"status": "failed", "error": {"code": -32603, "message": "Internal error"}})
    with pytest.raises(MCPError) as error:
        await follow_task(cast("Any", failed), "t2", None)
    assert (error.value.code, error.value.message) == (-32603, "Internal error")
    with pytest.raises(TaskCancelledError):
        await follow_task(cast("Any", Upstream({"status": "cancelled"})), "t3", None)
    sampling: dict[str, Any] = {
        "status": "input_required",
        "inputRequests": {"s": {"method": "sampling/createMessage", "params": {}}},
    }
    with pytest.raises(NotImplementedError, match="sampling/createMessage"):
        await follow_task(cast("Any", Upstream(sampling)), "t4", None)
    updates = Upstream()
    await answer_task(cast("Any", updates), "t5", "input-1", types.ElicitResult(action="decline"))
    assert updates.sent[0]["params"] == {"taskId": "t5", "inputResponses": {"input-1": {"action": "decline"}}}


async def test_the_sdk_client_with_the_extension_gets_a_task_s_result() -> None:
    """The SDK's own Client.call_tool, given `TasksClientExtension`, resolves a task to its CallToolResult."""
    server = create_server(registry, tasks=TaskOptions(answer_within=0, poll_interval=0.05))
    async with Client(server, extensions=[TasksClientExtension()]) as client:
        result = await client.call_tool("slow", {"seconds": 0.2})
        asked = await client.call_tool("label", {"item": "cup"})
    assert result.content[0].text == "slept 0.2s"  # type: ignore[union-attr]
    assert asked.is_error and asked.content[0].text.endswith("cannot be requested over this connection")  # type: ignore[union-attr]


async def test_a_2025_session_or_a_quick_call_is_answered_inline() -> None:
    """The extension is 2026-07-28's: a legacy session declaring it gets results; a quick call is never a task."""
    every_call = create_server(registry, tasks=TaskOptions(answer_within=0))
    async with Client(every_call, mode="legacy", extensions=[TasksClientExtension()]) as legacy:
        inline = await legacy.session.call_tool("slow", {"seconds": 0.01}, allow_claimed=True)
        assert isinstance(inline, types.CallToolResult) and inline.content[0].text == "slept 0.01s"  # type: ignore[union-attr]
    async with Client(every_call, extensions=[TasksClientExtension()]) as modern:
        assert isinstance(await modern.session.call_tool("slow", {"seconds": 0.01}, allow_claimed=True), TaskCreated)
    server = create_server(registry, tasks=TaskOptions(answer_within=5.0))
    async with Client(server, extensions=[TasksClientExtension()]) as modern:
        quick = await modern.session.call_tool("slow", {"seconds": 0.01}, allow_claimed=True)
    assert isinstance(quick, types.CallToolResult) and quick.content[0].text == "slept 0.01s"  # type: ignore[union-attr]


def test_an_upstream_task_cancelled_or_asking_what_cannot_be_answered_is_a_refusal() -> None:
    """The client's outcome for a task cancelled upstream, or one asking for sampling: REFUSED, the cause private."""
    client = MCPClient("tasky", cast("Any", None), cast("Any", None), list_timeout=1.0, call_timeout=1.0)
    contract = registry["slow"].contract
    for cause in (TaskCancelledError("the server cancelled task t1..."), NotImplementedError("sampling")):
        with pytest.raises(Failure) as refused:
            client._outcome("slow", contract, cause)  # pyright: ignore[reportPrivateUsage]
        assert refused.value.output.text() == REFUSED.format(name="slow") and refused.value.cause is cause


async def test_the_gateway_follows_an_upstream_task(tmp_path: Path) -> None:
    """The gateway in front of ``serve --tasks``: a long call's task is followed to its result."""
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    upstream = {"command": sys.executable, "args": ["-m", "scopetool", "serve", f"{FIXTURE}:registry", "--tasks"]}
    config = {"mcpServers": {"tasky": {**upstream, "env": env}}, "gateway": {"name": "relay"}}
    (tmp_path / "gateway.json").write_text(json.dumps(config), encoding="utf-8")
    prompts: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        prompts.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": "blue"})

    async with open_gateway(load_config(tmp_path / "gateway.json"), errlog=io.StringIO()) as gateway:
        server = create_server(gateway.registry, name="relay", on_call=gateway.observe)
        async with Client(server, elicitation_callback=person) as client:
            slow = await client.call_tool("slow", {"seconds": 1.3})
            labelled = await client.call_tool("label", {"item": "pen"})
    assert slow.content[0].text == "slept 1.3s"  # type: ignore[union-attr]
    # The gateway does not relay an upstream's input request (the remote tool's answer schema is an ElicitResult,
    # which no elicitation form can ask for): the task's question ends the call, as it does without tasks.
    assert labelled.content[0].text.endswith('"label" needs input that cannot be requested over this connection')  # type: ignore[union-attr]
    assert prompts == []
