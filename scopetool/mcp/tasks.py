"""MCP tasks (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663) for `scopetool.mcp.server`, on the Driver.

A server made with ``create_server(registry, tasks=TaskOptions(...))`` (``scopetool serve --tasks``)
advertises the extension and may answer a ``tools/call`` with a task (``resultType: "task"``): the
client polls ``tasks/get``, answers an input request with ``tasks/update`` and may ``tasks/cancel``.

Which calls become tasks (the rule): only calls from a client that declared the extension on that
request (a 2026-07-28 connection), to a tool whose effect is `Effect.SAFE` or `Effect.IDEMPOTENT`,
that have not finished within `TaskOptions.answer_within` seconds. Those are the calls a backend may
run again after a crash and get the same outcome, so a task recovered after a restart always comes to
its real outcome; a call with no effect promise is answered inline as before (a crash mid-call would
leave its task's outcome unknown). Every other call, and every call from a client that did not declare
the extension, is answered as it always was.

Each task is one `Driver` call: its run id is ``mcp-task:<task id>``, so the call's idempotency key
(its durable identity on the backend) is minted from the task id. On `scopetool.driver.dbos.DbosBackend`
the task survives a restart: the task index (owner, status, result) is a table in a SQLite file, and a
``tasks/get`` after a restart attaches to the call DBOS recovered. A task is written to the index
before the reply that names it.

Task ids are 256-bit random (`secrets`). A task is read, answered and cancelled only by the principal
that created it (`scopetool.current_principal`, compared by its whole `scopetool.Principal.identity`:
issuer, subject and client); a caller with no principal is the store's anonymous
owner (over stdio, the one client of the server; over HTTP without authentication, every
unauthenticated caller holding the id: there, authenticate callers for tasks of their own). A task
expires `TaskOptions.ttl` seconds after it was created: then, as for an unknown id or another owner's,
``tasks/*`` answers ``-32602``, and a call still running then is cancelled, its outcome recorded (to
the server's call observer, the gateway's audit) as a call past its timeout's is. At most
`TaskOptions.max_running` tasks of one caller run at once (`DEFAULT_MAX_RUNNING`); one more is refused
with `scopetool.mcp.limits.RATE_LIMITED`. Cancellation is cooperative: the task is marked ``cancelled`` and the
running attempt in this process is cancelled (as a crash would end it); a call DBOS runs goes on, and
its outcome is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import secrets
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from os import PathLike, fspath
from typing import Any, Final, final

from .._extras import missing_dependency

try:
    from mcp import types as mcp_types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing
from pydantic import Field

from .._contract import Request
from .._definition import Effect
from .._input import InputRequest, InvalidInputRequestError
from .._outcome import Failure, FailureKind
from .._output import Output, Result
from .._principal import current_principal
from .._registry import Registry
from .._timeout import TIMED_OUT, ToolTimeoutError
from ..driver import Backend, CallStatus, Driver
from ..providers._common import Export, ToolCall
from ..providers.mcp import result_message
from ._elicitation import ANSWER, requested_schema
from .limits import RATE_LIMITED

__all__ = [
    "DEFAULT_ANSWER_WITHIN",
    "DEFAULT_MAX_RUNNING",
    "DEFAULT_POLL_INTERVAL",
    "DEFAULT_TTL",
    "EXTENSION",
    "MISSING_CAPABILITY",
    "TaskOptions",
]

EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The extension's identifier, as the client declares it and the server advertises it."""

MISSING_CAPABILITY: Final = -32021
"""The JSON-RPC error code for a ``tasks/*`` request from a client that did not declare the extension."""

DEFAULT_TTL: Final = 3600.0
"""Seconds a task is kept after it was created, by default."""

DEFAULT_POLL_INTERVAL: Final = 1.0
"""Seconds the client is asked to wait between two ``tasks/get``, by default."""

DEFAULT_ANSWER_WITHIN: Final = 1.0
"""Seconds a call may take, by default, before its answer becomes a task."""

DEFAULT_MAX_RUNNING: Final = 16
"""Tasks of one caller whose calls may run at once, by default."""

logger: Final = logging.getLogger("scopetool.mcp.tasks")

_Context = ServerRequestContext[Any, Any]

_NO_INPUT: Final = 'error: tool "{name}" needs input that cannot be requested over this connection'
_DECLINED: Final = 'error: tool "{name}" needs input, and the request for it was declined'
_CANCELLED: Final = 'error: tool "{name}" needs input, and the request for it was cancelled'
_TOO_MANY: Final = 'error: tool "{name}" asked for input too many times'
_TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
_NOT_FOUND: Final = "Failed to retrieve task: Task not found"
_EXPIRED: Final = "Failed to retrieve task: Task has expired"
_TOO_MANY_TASKS: Final = (
    "Too many running tasks: this caller's tasks are limited to {cap} running at once; the call was not run"
)
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS scopetool_mcp_tasks (
    task_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    ttl_ms INTEGER NOT NULL,
    status TEXT NOT NULL,
    message TEXT,
    payload TEXT,
    round INTEGER NOT NULL DEFAULT 0
)
"""
_OWNER_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS scopetool_mcp_task_owner (id INTEGER PRIMARY KEY CHECK (id = 1), secret TEXT)"
)
_COLUMNS: Final = "task_id, owner, name, arguments, created_ms, updated_ms, ttl_ms, status, message, payload, round"


@final
@dataclass(frozen=True, slots=True)
class TaskOptions:
    """How a server runs calls as MCP tasks (pass it as ``create_server(..., tasks=...)``).

    Args:
        backend: The Driver backend the tasks' calls run on; a new `MemoryBackend` by default (tasks
            then last as long as the process). An open `scopetool.driver.dbos.DbosBackend` built on
            the served registry makes them survive a restart (give `store` too).
        store: The SQLite file the task index is kept in (None: in memory). With a DBOS backend on
            SQLite, the same file as its database is fine: the index is a table of its own.
        ttl: Seconds a task is kept after it was created.
        poll_interval: Seconds the client is asked to wait between two ``tasks/get``.
        answer_within: Seconds a call may run before the server answers with a task; a call that
            finishes sooner is answered with its result, as without tasks (0: every eligible call
            becomes a task).
        max_running: The most tasks of one caller (one `scopetool.Principal.identity`) whose calls run
            at once in this process; a call that would start one more is refused with the JSON-RPC
            error `scopetool.mcp.limits.RATE_LIMITED` and never runs.
    """

    backend: Backend | None = None
    store: str | PathLike[str] | None = None
    ttl: float = DEFAULT_TTL
    poll_interval: float = DEFAULT_POLL_INTERVAL
    answer_within: float = DEFAULT_ANSWER_WITHIN
    max_running: int = DEFAULT_MAX_RUNNING

    def __post_init__(self) -> None:
        running = self.max_running
        if isinstance(running, bool) or not isinstance(running, int) or running < 1:
            raise ValueError(f"TaskOptions.max_running must be a whole number >= 1, not {running!r}")
        if self.backend is not None and not isinstance(self.backend, Backend):
            raise TypeError(f"{type(self.backend).__name__} is not a driver backend")
        for name in ("ttl", "poll_interval"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
                raise ValueError(f"TaskOptions.{name} must be a positive number of seconds, not {value!r}")
        within = self.answer_within
        if isinstance(within, bool) or not isinstance(within, int | float) or not 0 <= within < math.inf:
            raise ValueError(f"TaskOptions.answer_within must be a number of seconds >= 0, not {within!r}")


class _TaskParams(mcp_types.RequestParams):
    """The params of ``tasks/get`` and ``tasks/cancel``."""

    task_id: str = Field(max_length=200)


class _UpdateParams(_TaskParams):
    """The params of ``tasks/update``."""

    input_responses: dict[str, Any]


@final
@dataclass(slots=True)
class _Record:
    """One task as the index keeps it."""

    task_id: str
    owner: str
    name: str
    arguments: str
    created_ms: int
    updated_ms: int
    ttl_ms: int
    status: str
    message: str | None
    payload: str | None
    """The result (completed), the error (failed) or the input request and its key (input_required), as JSON."""
    round: int
    """How many input requests the call has made so far."""


@final
class _Index:
    """The task index: a SQLite table, written before each reply that depends on it."""

    __slots__ = ("__weakref__", "_connection", "_lock", "anonymous")

    def __init__(self, store: str | PathLike[str] | None) -> None:
        path = ":memory:" if store is None else fspath(store)
        self._connection = sqlite3.connect(path, timeout=30.0, check_same_thread=False, isolation_level=None)
        weakref.finalize(self, self._connection.close)  # closed with its server, whenever that is dropped
        self._lock = threading.Lock()
        with self._lock:
            self._connection.execute("PRAGMA busy_timeout = 30000")
            self._connection.execute(_SCHEMA)
            self._connection.execute(_OWNER_SCHEMA)
            self._connection.execute(
                "INSERT OR IGNORE INTO scopetool_mcp_task_owner (id, secret) VALUES (1, ?)", (secrets.token_hex(16),)
            )
            [(secret,)] = self._connection.execute("SELECT secret FROM scopetool_mcp_task_owner").fetchall()
        self.anonymous: str = secret
        """The owner of the tasks created with no principal: drawn once per store, kept across restarts."""

    async def insert(self, record: _Record) -> None:
        values = (
            record.task_id,
            record.owner,
            record.name,
            record.arguments,
            record.created_ms,
            record.updated_ms,
            record.ttl_ms,
            record.status,
            record.message,
            record.payload,
            record.round,
        )
        await self._run(f"INSERT INTO scopetool_mcp_tasks ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)", values)

    async def get(self, task_id: str) -> _Record | None:
        rows = await self._run(f"SELECT {_COLUMNS} FROM scopetool_mcp_tasks WHERE task_id = ?", (task_id,))
        return _Record(*rows[0]) if rows else None

    async def move(self, task_id: str, status: str, payload: str | None, message: str | None, round_: int) -> None:
        """Set a task's status (unless it is already final), payload, message and round."""
        await self._run(
            "UPDATE scopetool_mcp_tasks SET status = ?, payload = ?, message = ?, round = ?, updated_ms = ? "
            "WHERE task_id = ? AND status NOT IN ('completed', 'failed', 'cancelled')",
            (status, payload, message, round_, _now_ms(), task_id),
        )

    async def delete(self, task_id: str) -> None:
        await self._run("DELETE FROM scopetool_mcp_tasks WHERE task_id = ?", (task_id,))

    async def purge(self, now_ms: int) -> None:
        """Forget the tasks past their time to live."""
        await self._run("DELETE FROM scopetool_mcp_tasks WHERE created_ms + ttl_ms <= ?", (now_ms,))

    async def _run(self, sql: str, values: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return await asyncio.to_thread(self._execute, sql, values)

    def _execute(self, sql: str, values: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._connection.execute(sql, values).fetchall()


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _iso(milliseconds: int) -> str:
    return datetime.fromtimestamp(milliseconds / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _declared(ctx: _Context) -> bool:
    """Whether the client declared the extension on this request (the SEP: 2026 protocol versions only)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    extensions = None if capabilities is None else capabilities.extensions
    return extensions is not None and EXTENSION in extensions


def _missing_capability() -> MCPError:
    return MCPError(
        MISSING_CAPABILITY,
        "Missing required client capability",
        {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )


@final
class TaskService:
    """The tasks of one server: creates them from ``tools/call`` and serves ``tasks/get|update|cancel``.

    Made by `scopetool.mcp.server.create_server`; not meant to be made by hand.
    """

    __slots__ = (
        "_driver",
        "_export",
        "_index",
        "_max_rounds",
        "_on_call",
        "_options",
        "_owners",
        "_registry",
        "_running",
        "_served",
    )

    def __init__(
        self,
        registry: Registry,
        export: Export,
        options: TaskOptions,
        on_call: Callable[[ToolCall, Result | BaseException], None] | None,
        max_rounds: int,
    ) -> None:
        self._registry = registry
        self._served = registry
        self._max_rounds = max_rounds
        self._export = export
        self._options = options
        self._on_call = on_call
        self._driver = Driver(registry, options.backend)
        self._index = _Index(options.store)
        self._running: dict[str, asyncio.Task[None]] = {}
        self._owners: dict[str, str] = {}  # the owner of each task in `_running`

    def register(self, server: Server[Any]) -> None:
        """Serve ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` on `server`."""
        server.add_request_handler("tasks/get", _TaskParams, self.get)
        server.add_request_handler("tasks/update", _UpdateParams, self.update)
        server.add_request_handler("tasks/cancel", _TaskParams, self.cancel)

    def adopt(self, registry: Registry) -> None:
        """The server serves `registry` now: only its tools the Driver knows, unchanged, may still become tasks.

        The Driver (and its backend) run the registry the service was made with: a tool served since, or
        changed since, is answered inline; the tasks already made run on as they were.
        """
        self._served = registry

    def eligible(self, ctx: _Context, name: str) -> bool:
        """Whether this call may become a task: a declaring client, a tool that may be run again safely."""
        if not _declared(ctx):
            return False
        binding, known = self._served.resolve(name), self._registry.resolve(name)
        if binding is None or known is None or (binding is not known and binding.definition() != known.definition()):
            return False
        effect = binding.definition().effect
        return effect is not None and effect.replayable

    async def call(self, call: ToolCall) -> dict[str, Any]:
        """Start `call` as a task; its result if it finishes within ``answer_within``, else the task."""
        now = _now_ms()
        await self._index.purge(now)
        task_id = secrets.token_urlsafe(32)
        arguments = call.request.arguments
        text = arguments.decode("utf-8") if isinstance(arguments, bytes) else arguments
        ttl_ms = math.ceil(self._options.ttl * 1000)
        record = _Record(task_id, self._owner(), call.name, text, now, now, ttl_ms, "working", None, None, 0)
        await self._index.insert(record)  # durably created before any reply names it
        if self._owned(record.owner) >= self._options.max_running:
            await self._index.delete(task_id)
            raise MCPError(
                RATE_LIMITED, _TOO_MANY_TASKS.format(cap=self._options.max_running), {"retryAfterSeconds": 1}
            )
        runner = self._drive(record, call, 0)
        done, _ = await asyncio.wait({runner}, timeout=self._options.answer_within)
        stored = await self._index.get(task_id)
        if done and stored is not None and stored.status == "completed" and stored.payload is not None:
            await self._index.delete(task_id)  # never named to the client: answered as a plain result
            return dict(json.loads(stored.payload))
        return {"resultType": "task", **self._task(stored or record)}

    async def get(self, ctx: _Context, params: _TaskParams) -> dict[str, Any]:
        """``tasks/get``: the task's status, with its input requests, result or error."""
        record = await self._find(ctx, params.task_id)
        if record.status == "working" and record.task_id not in self._running:  # recovered after a restart
            self._drive(record, self._call_of(record), record.round)
        return {"resultType": "complete", **self._task(record)}

    async def update(self, ctx: _Context, params: _UpdateParams) -> dict[str, Any]:
        """``tasks/update``: deliver the answer to the outstanding input request, and resume the call."""
        record = await self._find(ctx, params.task_id)
        if record.status != "input_required" or record.payload is None:
            return {"resultType": "complete"}  # nothing outstanding: stale answers are ignored
        waiting = json.loads(record.payload)
        answer = params.input_responses.get(waiting["key"])
        if answer is None:
            return {"resultType": "complete"}
        try:
            elicited = mcp_types.ElicitResult.model_validate(answer)
        except ValueError:
            raise MCPError(
                mcp_types.INVALID_PARAMS, f"inputResponses.{waiting['key']} is not an ElicitResult"
            ) from None
        if elicited.action != "accept":
            text = _DECLINED if elicited.action == "decline" else _CANCELLED
            await self._index.move(record.task_id, "completed", _error_json(text, record.name), None, record.round)
            return {"resultType": "complete"}
        values = {key: value for key, value in (elicited.content or {}).items() if value is not None}
        response = values.get(ANSWER) if waiting["wrapped"] else values
        try:
            accepted = await self._driver.answer(waiting["driver_key"], response)
        except InvalidInputRequestError:
            raise MCPError(
                mcp_types.INVALID_PARAMS,
                f"inputResponses.{waiting['key']}: the answer does not satisfy the request's schema",
            ) from None
        if accepted:
            await self._index.move(record.task_id, "working", None, None, record.round)
            self._drive(record, self._call_of(record), record.round)
        return {"resultType": "complete"}

    async def cancel(self, ctx: _Context, params: _TaskParams) -> dict[str, Any]:
        """``tasks/cancel``: mark the task cancelled and stop its attempt in this process (cooperative)."""
        record = await self._find(ctx, params.task_id)
        if record.status not in _TERMINAL:
            await self._index.move(record.task_id, "cancelled", None, "The task was cancelled.", record.round)
            runner = self._running.pop(record.task_id, None)
            if runner is not None:
                runner.cancel()
        return {"resultType": "complete"}

    def _owner(self) -> str:
        principal = current_principal()
        if principal is None:
            return f"anonymous:{self._index.anonymous}"
        return "principal:" + principal.identity.key

    async def _find(self, ctx: _Context, task_id: str) -> _Record:
        """The caller's task; ``-32602`` for an unknown one, another owner's or an expired one."""
        if not _declared(ctx):
            raise _missing_capability()
        record = await self._index.get(task_id)
        if record is None or not secrets.compare_digest(record.owner, self._owner()):
            raise MCPError(mcp_types.INVALID_PARAMS, _NOT_FOUND)
        if record.created_ms + record.ttl_ms <= _now_ms():
            await self._index.delete(task_id)
            raise MCPError(mcp_types.INVALID_PARAMS, _EXPIRED)
        return record

    def _task(self, record: _Record) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": record.task_id,
            "status": record.status,
            "createdAt": _iso(record.created_ms),
            "lastUpdatedAt": _iso(record.updated_ms),
            "ttlMs": record.ttl_ms,
            "pollIntervalMs": math.ceil(self._options.poll_interval * 1000),
        }
        if record.message is not None:
            task["statusMessage"] = record.message
        if record.payload is not None:
            payload = json.loads(record.payload)
            if record.status == "completed":
                task["result"] = payload
            elif record.status == "failed":
                task["error"] = payload
            elif record.status == "input_required":
                task["inputRequests"] = {payload["key"]: payload["elicitation"]}
        return task

    async def _expired(self, task_id: str, call: ToolCall, round_: int, elapsed: float) -> None:
        """The task expired with its call running: the call was cancelled; its outcome is a timeout's."""
        binding = self._registry.resolve(call.name)
        effect = None if binding is None else binding.definition().effect
        outcome = _timed_out(effect, call.name, self._options.ttl, elapsed)
        logger.warning("mcp tasks: task %s expired with its call running; the call was cancelled", task_id[:8])
        if self._on_call is not None:
            self._on_call(call, outcome)
        message = result_message(call, outcome, self._export)
        await self._index.move(task_id, "completed", json.dumps(message), None, round_)

    @staticmethod
    def _call_of(record: _Record) -> ToolCall:
        return ToolCall(record.task_id, Request(record.name, record.arguments))

    def _owned(self, owner: str) -> int:
        """How many of `owner`'s tasks run in this process now."""
        return sum(1 for found in self._owners.values() if found == owner)

    def _drive(self, record: _Record, call: ToolCall, round_: int) -> asyncio.Task[None]:
        """Run (or attach to, or resume) the task's Driver call in the background until it ends, waits or expires."""
        task_id = record.task_id
        deadline = (record.created_ms + record.ttl_ms) / 1000
        runner = asyncio.get_running_loop().create_task(self._run(task_id, call, round_, deadline))
        self._running[task_id] = runner
        self._owners[task_id] = record.owner

        def forget(done: asyncio.Task[None]) -> None:
            if self._running.get(task_id) is done:
                del self._running[task_id]
                self._owners.pop(task_id, None)

        runner.add_done_callback(forget)
        return runner

    async def _run(self, task_id: str, call: ToolCall, round_: int, deadline: float) -> None:
        try:
            started = time.time()
            scope = asyncio.timeout(max(0.0, deadline - started))  # the task expires: its call ends
            try:
                async with scope:
                    turn = await self._driver.run(f"mcp-task:{task_id}", [ToolCall(task_id, call.request)])
            except TimeoutError:
                if not scope.expired():
                    raise
                await self._expired(task_id, call, round_, time.time() - started)
                return
            [result] = turn.results
            if result.status is CallStatus.WAITING and result.request is not None:
                waiting = _waiting(result.request, round_ + 1, result.key)
                if waiting is None or round_ + 1 > self._max_rounds:
                    text = _NO_INPUT if waiting is None else _TOO_MANY
                    await self._index.move(task_id, "completed", _error_json(text, call.name), None, round_)
                else:
                    await self._index.move(task_id, "input_required", json.dumps(waiting), None, round_ + 1)
                return
            outcome = result.outcome if result.outcome is not None else RuntimeError("no outcome")
            if self._on_call is not None:
                self._on_call(call, outcome)
            message = result_message(call, outcome, self._export)
            await self._index.move(task_id, "completed", json.dumps(message), None, round_)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("mcp tasks: task %s failed", task_id[:8])
            error = {"code": mcp_types.INTERNAL_ERROR, "message": "Internal error"}
            with contextlib.suppress(Exception):
                await self._index.move(task_id, "failed", json.dumps(error), "The call failed.", round_)


def _timed_out(binding_effect: Effect | None, name: str, ttl: float, elapsed: float) -> BaseException:
    """A task's call ended by its task's expiry, as a call past its timeout ends (`scopetool._timeout`)."""
    error = ToolTimeoutError(name, ttl, elapsed)
    if binding_effect is Effect.SAFE:
        return Failure(kind=FailureKind.FAILED, output=Output.from_text(TIMED_OUT.format(name=name)), cause=error)
    return error


def _waiting(request: InputRequest, round_: int, driver_key: str) -> dict[str, Any] | None:
    """What the index keeps of an outstanding input request: its key, the elicitation asking it, and more."""
    found = requested_schema(request.response_schema)
    if found is None:
        return None
    schema, wrapped = found
    prompt = request.prompt
    message = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)
    return {
        "key": f"input-{round_}",
        "driver_key": driver_key,
        "wrapped": wrapped,
        "elicitation": {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": message, "requestedSchema": schema},
        },
    }


def _error_json(template: str, name: str) -> str:
    """An ``isError`` result with one fixed text, as JSON."""
    result = {"content": [{"type": "text", "text": template.format(name=name)}], "isError": True}
    return json.dumps({**result, "resultType": "complete"})
