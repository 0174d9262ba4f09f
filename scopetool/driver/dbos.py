"""The durable backend: every call is a DBOS Transact workflow, on SQLite (embedded) or PostgreSQL.

Install it with ``pip install 'scopetool[dbos]'``. Only this module imports ``dbos``.

One generic workflow runs every call, keyed by the call's `IdempotencyKey`: the tool runs as a step,
a finished call's stored outcome is returned when it is started again, an `InputRequest` is committed
as a JSON workflow event and the call waits for its answer with ``DBOS.recv``, and a process that
died mid-call or mid-wait recovers the call when it opens the backend again. What DBOS stores is JSON
(its portable JSON serializer), never pickle. See ``docs/driver.md`` for what is guaranteed.

DBOS runs one instance per process, so a process opens at most one `DbosBackend`, with the registry
it recovers calls with.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import logging
import secrets
import sqlite3
import sys
import threading
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, ParamSpec, TypeVar, cast, final

from .._extras import missing_dependency

try:
    import sqlalchemy
    from dbos import (
        DBOS,
        DBOSConfig,
        DBOSPortableJSONSerializer,
        SetWorkflowID,
        StepOptions,
        WorkflowHandleAsync,
        WorkflowStatus,
    )
    from dbos import error as dbos_error
except ImportError as missing:  # pragma: no cover - the extra is installed wherever the tests run
    raise missing_dependency(__name__, missing) from missing

from .._binding import Binding
from .._contract import Admission, IdempotencyKey
from .._input import Continuation, InputRequest
from .._registry import Registry
from .._turnrules import Grant
from ._backend import AdmittedCall, CallState, Conflict, Finished, Waiting
from ._records import (
    Record,
    decode_outcome,
    interrupted_record,
    is_input,
    lost_record,
    record_request,
    run_request,
)

__all__ = ["APPLICATION_VERSION", "MAX_GRANT_RECORDS", "MAX_REVEALS", "DbosBackend"]

logger: Final = logging.getLogger("scopetool.driver")

APPLICATION_VERSION: Final = "scopetool-driver-1"
"""The DBOS application version the backend pins by default.

DBOS recovers only the workflows of its own application version. Pinning one that does not change
when your code does means an upgrade recovers the calls an older deployment left pending. Change it
only when the calls pending under the old value must not be resumed by the new code."""

_STATE: Final = "scopetool.state."
_TOPIC: Final = "scopetool.answer."
_SECRET_ID: Final = "scopetool.driver.secret"
_REVEAL_ID: Final = "scopetool.driver.reveal.{run}.{index}"
MAX_REVEALS: Final = 1024
"""The searches per run whose reveals a `DbosBackend` keeps (one record each): a run past it keeps no more."""
_GRANT_ID: Final = "scopetool.driver.grant.{run}.{index}"
MAX_GRANT_RECORDS: Final = 4096
"""The turns per run whose granted calls (`GrantStore`) a `DbosBackend` keeps (one record each): a run past it
keeps no more, and its later turns count only what the first ones granted."""
_WAIT_SECONDS: Final = 86_400.0  # one durable wait for an answer; the call waits again when it ends
_ENDED: Final = frozenset({"ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})
_BEGIN_STEP: Final[StepOptions] = {"name": "scopetool.driver.begin"}
_CALL_STEP: Final[StepOptions] = {"name": "scopetool.driver.call"}
_SECRET_STEP: Final[StepOptions] = {"name": "scopetool.driver.secret"}

P = ParamSpec("P")
T = TypeVar("T")

_open: DbosBackend | None = None
_open_lock: Final = threading.Lock()


@final
class DbosBackend:
    """A durable `Backend` on DBOS Transact: SQLite for one machine, PostgreSQL for many workers.

    Open it before driving calls (``with DbosBackend(...) as backend:`` or `open`): that configures
    and launches DBOS, which recovers the calls this executor left pending. `open` blocks while DBOS
    launches (in a thread of its own, so that no caller's event loop becomes the one calls run on).

    Args:
        registry: The tools; a call is recovered with the binding this registry holds for its name.
        database_url: DBOS's system database, such as ``sqlite:///calls.sqlite`` or
            ``postgresql://user@host:5432/calls`` (DBOS creates it when it is missing).
        application_version: The pinned DBOS application version (see `APPLICATION_VERSION`).
        executor_id: This process's stable name among workers sharing one database. A restarted
            worker recovers the calls left pending under its name, so give every concurrent worker
            its own and keep it across restarts. DBOS's default (``"local"``) suits one process.
        app_name: DBOS's application name.
        poll_interval: Seconds between checks for progress made by another process (and, on
            SQLite, for answers to a waiting call); progress made in this process is seen at once.
        config: More ``DBOSConfig`` entries (say, ``sys_db_pool_size`` or ``log_level``); the
            backend's own settings (name, database, serializer, version, executor) win.
    """

    __slots__ = ("_config", "_poll_interval", "_pool", "_registry", "_secret", "_url")

    def __init__(
        self,
        registry: Registry,
        database_url: str,
        *,
        application_version: str = APPLICATION_VERSION,
        executor_id: str | None = None,
        app_name: str = "scopetool",
        poll_interval: float = 0.1,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(registry, Registry):
            raise TypeError(f"a DbosBackend needs a Registry, not {type(registry).__name__}")
        if not isinstance(database_url, str) or not database_url:
            raise ValueError("database_url must name DBOS's system database")
        if not poll_interval > 0:
            raise ValueError("poll_interval must be a positive number of seconds")
        settings: dict[str, Any] = {"log_level": "ERROR", **(config or {})}
        settings.update(
            name=app_name,
            system_database_url=database_url,
            serializer=DBOSPortableJSONSerializer(),
            application_version=application_version,
            notification_listener_polling_interval_sec=poll_interval,
        )
        if executor_id is not None:
            settings["executor_id"] = executor_id
        self._config: DBOSConfig = settings  # type: ignore[assignment]  # DBOS checks its own config
        self._registry = registry
        self._url = database_url
        self._poll_interval = poll_interval
        self._secret: bytes | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    @property
    def registry(self) -> Registry:
        """The registry calls are run and recovered with."""
        return self._registry

    def open(self) -> DbosBackend:
        """Configure and launch DBOS for this process (recovering this executor's pending calls).

        Raises:
            RuntimeError: another `DbosBackend` is open in this process, or the database is SQLite and
                DBOS cannot keep its records in it on this Python (SQLite before 3.42 on Python 3.12+).
        """
        global _open  # noqa: PLW0603 - DBOS itself is one instance per process
        problem = _sqlite_problem(self._url)
        if problem is not None:
            raise RuntimeError(problem)
        with _open_lock:
            if _open is not None:
                raise RuntimeError("a DbosBackend is already open in this process (DBOS runs one instance per process)")
            _use_write_ahead_log(self._url)
            DBOS(config=self._config)
            _open = self
        try:
            # Launched from a thread of its own: DBOS adopts a loop running in the launching thread as the
            # one it runs workflows on, and a caller's loop may end while calls still wait for answers.
            _in_thread(DBOS.launch)
            self._secret = bytes.fromhex(_in_thread(_on_dbos_loop, _read_secret))
            # Starts block a thread each (see _on_dbos_loop). Not the loop's default executor: DBOS's async
            # calls make that its own executor, which a close shuts down.
            self._pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="scopetool-dbos")
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Shut DBOS down in this process; calls still running or waiting are recovered by the next open."""
        global _open  # noqa: PLW0603 - see open
        with _open_lock:
            if _open is not self:
                return
            _open = None
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None
            DBOS.destroy()

    def __enter__(self) -> DbosBackend:
        return self.open()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    async def secret(self) -> bytes:
        """The key-minting secret, drawn once and kept in the database (every worker shares it)."""
        if self._secret is None or _open is not self:
            raise RuntimeError("the DbosBackend is not open")
        return self._secret

    async def start(self, call: AdmittedCall) -> CallState:
        """Start the call's workflow, or attach to the one its key names; wait until it finishes or waits."""
        self._check(call.binding)
        spec = {
            "name": call.name,
            "arguments": call.arguments,
            "digest": call.digest,
            "replayable": call.replayable,
        }
        with _SIGNALS.watch(call.key) as watch:
            if not await self._on_dbos_loop(_start_call, call.key, spec):
                status = await DBOS.get_workflow_status_async(call.key)
                if _digest(status) != call.digest:
                    return Conflict()
            return await self._settle(call.key, call.name, watch)

    async def revealed(self, run_id: str) -> tuple[str, ...]:
        """The tools the run's searches revealed, in the order revealed, as the database keeps them."""
        self._check(None)
        return tuple(dict.fromkeys(await self._on_dbos_loop(_read_reveals, _run_digest(run_id))))

    async def reveal(self, run_id: str, names: Sequence[str]) -> None:
        """Keep `names` as the run's next reveal: one record in the database (`MAX_REVEALS` a run)."""
        self._check(None)
        if not await self._on_dbos_loop(_write_reveal, _run_digest(run_id), list(names)):
            logger.warning("dbos backend: run past %d searches; its later reveals are not kept", MAX_REVEALS)

    async def granted(self, run_id: str) -> tuple[Grant, ...]:
        """The calls the run's turn rules granted, in the order granted, as the database keeps them."""
        self._check(None)
        rows = await self._on_dbos_loop(_read_grants, _run_digest(run_id))
        return tuple(Grant(key, str(tool), digest) for key, tool, digest in rows)

    async def grant(self, run_id: str, grants: Sequence[Grant]) -> None:
        """Keep `grants` as the run's next record of granted calls: one record a turn (`MAX_GRANT_RECORDS` a run)."""
        self._check(None)
        rows = [[grant.key, grant.tool, grant.digest] for grant in grants]
        if not await self._on_dbos_loop(_write_grants, _run_digest(run_id), rows):
            logger.warning(
                "dbos backend: run past %d turns with grants; its later grants are not kept", MAX_GRANT_RECORDS
            )

    async def answer(self, key: IdempotencyKey, response: Any) -> bool:
        """Validate the answer and send it to the waiting call (from any process on the same database).

        Each input request is answered once: the first answer resumes the call, later ones return
        False. The resumed call runs in the process that holds it; run the turn again for its outcome.
        """
        self._check(None)
        round_, state = _latest(await DBOS.get_all_events_async(key))
        if state is None or state["state"] != "waiting":
            return False
        continuation = InputRequest.from_json(state["request"]).continuation(response)
        response_text = continuation.response_json.decode("utf-8")
        return await self._on_dbos_loop(_start_answer, key, round_, response_text)

    def _check(self, binding: Binding | None) -> None:
        if _open is not self:
            raise RuntimeError("the DbosBackend is not open")
        if binding is not None and self._registry.resolve(binding.name) is not binding:
            raise ValueError(
                f"tool {binding.name!r} is not bound in the registry this DbosBackend recovers calls with: "
                "drive it with that registry"
            )

    async def _on_dbos_loop(self, function: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """Run a coroutine on DBOS's event loop from this backend's threads, and wait for it."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, _on_dbos_loop, function, *args)

    async def _settle(self, key: str, name: str, watch: _Watch) -> CallState:
        """Wait until the call has a final outcome or waits for an answer nobody has given yet."""
        while True:
            round_, state = _latest(await DBOS.get_all_events_async(key))
            if state is not None:
                if state["state"] == "done":
                    return Finished(decode_outcome(state["outcome"]))
                if await DBOS.get_workflow_status_async(_answer_id(key, round_)) is None:
                    return Waiting(InputRequest.from_json(state["request"]))
            if not await watch.wait(self._poll_interval):  # nothing happened here: did the call end elsewhere?
                status = await DBOS.get_workflow_status_async(key)
                if status is not None and status.status in _ENDED:
                    return Finished(decode_outcome(lost_record(name)))


# -- the workflows (registered when this module is imported, so recovery finds them)


@DBOS.workflow(name="scopetool.driver.call", max_recovery_attempts=None)
async def _call_workflow(spec: dict[str, Any]) -> Record:
    """One call, start to finish: attempts, input waits and continuations, all under the workflow's key."""
    backend = _open
    if backend is None:  # pragma: no cover - DBOS runs workflows only between open and close
        raise RuntimeError("no DbosBackend is open")
    key = IdempotencyKey(DBOS.workflow_id or "")
    name: str = spec["name"]
    continuation: Continuation | None = None
    round_ = 0
    while True:
        binding = backend.registry.resolve(name)
        admission = Admission(idempotency_key=key, continuation=continuation)
        record = await _attempt(binding, name, spec["arguments"], admission, replayable=spec["replayable"])
        if not is_input(record):
            await _publish(key, round_, {"state": "done", "outcome": record})
            return record
        await _publish(key, round_, {"state": "waiting", "request": record["request"]})
        response: str | None = None
        while response is None:
            response = await DBOS.recv_async(_TOPIC + str(round_), timeout_seconds=_WAIT_SECONDS)
        continuation = record_request(record).continuation_from_json(response)
        round_ += 1


async def _attempt(
    binding: Binding | None, name: str, arguments: str, admission: Admission, *, replayable: bool
) -> Record:
    """Run one attempt as a step; a tool with no replay promise is never run again after a crash.

    Steps are at-least-once: a step interrupted by a crash runs again on recovery. So a tool without a
    promise first records a "begin" step; when recovery replays that step from the database instead of
    running it, the body may have started before the crash, and the attempt ends as interrupted.
    """
    if replayable:
        return await DBOS.run_step_async(_CALL_STEP, run_request, binding, name, arguments, admission)
    began_now = False

    async def begin() -> str:
        nonlocal began_now
        began_now = True
        return "began"

    async def body() -> Record:
        if not began_now:
            return interrupted_record(name)
        return await run_request(binding, name, arguments, admission)

    await DBOS.run_step_async(_BEGIN_STEP, begin)
    return await DBOS.run_step_async(_CALL_STEP, body)


async def _publish(key: str, round_: int, state: dict[str, Any]) -> None:
    await DBOS.set_event_async(_STATE + str(round_), state)
    _SIGNALS.notify(key)


@DBOS.workflow(name="scopetool.driver.answer", max_recovery_attempts=None)
async def _answer_workflow(key: str, round_: int, response: str) -> None:
    """Send one answer; its workflow id makes each input request's answer unique."""
    await DBOS.send_async(key, response, _TOPIC + str(round_))


@DBOS.workflow(name="scopetool.driver.secret")
async def _secret_workflow() -> str:
    """Draw the key-minting secret once per database; every later start returns the stored one."""
    return await DBOS.run_step_async(_SECRET_STEP, _new_secret)


async def _new_secret() -> str:
    return secrets.token_hex(32)


@DBOS.workflow(name="scopetool.driver.reveal")
async def _reveal_workflow(names: list[str]) -> list[str]:
    """One search's reveals, kept as the workflow's output."""
    return names


@DBOS.workflow(name="scopetool.driver.grant")
async def _grant_workflow(rows: list[list[str | None]]) -> list[list[str | None]]:
    """One turn's granted calls (key, tool, digest), kept as the workflow's output."""
    return rows


async def _write_grants(run: str, rows: list[list[str | None]]) -> bool:
    """Record `rows` as the run's next grants, after the records there are; False past `MAX_GRANT_RECORDS`."""
    statuses = await DBOS.list_workflows_async(
        workflow_id_prefix=_GRANT_ID.format(run=run, index=""), load_input=False, load_output=False
    )
    for index in range(len(statuses), MAX_GRANT_RECORDS):
        try:
            with SetWorkflowID(_GRANT_ID.format(run=run, index=index), workflow_id_reuse_policy="reject"):
                handle = await DBOS.start_workflow_async(_grant_workflow, rows)
        except dbos_error.DBOSWorkflowIDInUseError:
            continue  # another process wrote this one first
        await handle.get_result()
        return True
    return False


async def _read_grants(run: str) -> list[list[str | None]]:
    """Every grant the run's records hold, in the order recorded."""
    prefix = _GRANT_ID.format(run=run, index="")
    statuses = await DBOS.list_workflows_async(workflow_id_prefix=prefix, load_input=False, limit=MAX_GRANT_RECORDS)
    rows: list[list[str | None]] = []
    for status in sorted(statuses, key=lambda status: int(status.workflow_id[len(prefix) :])):
        output = status.output
        if output is None:  # a record whose workflow has not finished yet (recovered after a crash)
            handle: WorkflowHandleAsync[list[list[str | None]]] = await DBOS.retrieve_workflow_async(status.workflow_id)
            output = await handle.get_result()
        rows.extend(output)
    return rows


def _run_digest(run_id: str) -> str:
    """A run id as a workflow id part: its SHA-256 (a run id is the application's own text)."""
    return hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()


async def _write_reveal(run: str, names: list[str]) -> bool:
    """Record `names` as the run's next reveal; False when the run has `MAX_REVEALS` already."""
    for index in range(MAX_REVEALS):
        try:
            with SetWorkflowID(_REVEAL_ID.format(run=run, index=index), workflow_id_reuse_policy="reject"):
                handle = await DBOS.start_workflow_async(_reveal_workflow, names)
        except dbos_error.DBOSWorkflowIDInUseError:
            continue
        await handle.get_result()
        return True
    return False


async def _read_reveals(run: str) -> list[str]:
    """Every name the run's reveal records hold, in the order recorded."""
    names: list[str] = []
    for index in range(MAX_REVEALS):
        workflow_id = _REVEAL_ID.format(run=run, index=index)
        if await DBOS.get_workflow_status_async(workflow_id) is None:
            break
        handle: WorkflowHandleAsync[list[str]] = await DBOS.retrieve_workflow_async(workflow_id)
        names.extend(await handle.get_result())
    return names


def _on_dbos_loop(function: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    """Run a coroutine on DBOS's own event loop and wait for it (call from a thread without a running loop).

    Outside a workflow ``DBOS.run_step`` runs a coroutine function there as a plain call. Workflows
    started from that loop run on it as tasks: they outlive the caller's loop, and shutting DBOS down
    cancels them without recording an outcome, so the next launch recovers them.
    """
    # pyright cannot pick run_step's overload for a Callable[..., Coroutine]; mypy can, and calls the cast redundant.
    return cast("T", DBOS.run_step(None, function, *args))  # type: ignore[redundant-cast]


def _in_thread(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run `function` in a new thread and return its result (or raise its error)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function, *args, **kwargs).result()


async def _start_call(key: str, spec: dict[str, Any]) -> bool:
    """Start the call's workflow; False when a workflow with this key already exists."""
    try:
        with SetWorkflowID(key, workflow_id_reuse_policy="reject"):
            await DBOS.start_workflow_async(_call_workflow, spec)
    except dbos_error.DBOSWorkflowIDInUseError:
        return False
    return True


async def _start_answer(key: str, round_: int, response: str) -> bool:
    """Send an answer once per input request; False when one was already sent."""
    try:
        with SetWorkflowID(_answer_id(key, round_), workflow_id_reuse_policy="reject"):
            handle = await DBOS.start_workflow_async(_answer_workflow, key, round_, response)
    except dbos_error.DBOSWorkflowIDInUseError:
        return False
    await handle.get_result()
    return True


async def _read_secret() -> str:
    """The database's key-minting secret, drawn by the first process to ask."""
    with SetWorkflowID(_SECRET_ID):
        handle = await DBOS.start_workflow_async(_secret_workflow)
    return await handle.get_result()


def _answer_id(key: str, round_: int) -> str:
    return f"{key}.answer.{round_}"


def _digest(status: WorkflowStatus | None) -> str | None:
    spec: dict[str, Any] = status.input["args"][0] if status is not None and status.input is not None else {}
    return spec.get("digest")


def _latest(events: Mapping[str, Any]) -> tuple[int, dict[str, Any] | None]:
    """The last state the call published, and its round; (-1, None) before the first."""
    rounds = [int(name.removeprefix(_STATE)) for name in events if name.startswith(_STATE)]
    if not rounds:
        return -1, None
    last = max(rounds)
    state: dict[str, Any] = events[_STATE + str(last)]
    return last, state


def _sqlite_problem(database_url: str) -> str | None:
    """Why DBOS cannot keep its records in this SQLite database on this Python; None when it can.

    On Python 3.12 and later DBOS's SQLite tables default their timestamps to ``unixepoch('subsec')``,
    which SQLite before 3.42 does not know: every launch would then fail on a NOT NULL constraint deep
    inside DBOS. Other databases, and older Pythons, are never a problem here.
    """
    if sys.version_info < (3, 12) or sqlalchemy.make_url(database_url).get_backend_name() != "sqlite":
        return None
    if _subsecond_unixepoch():
        return None
    return (
        f"DBOS on Python {sys.version_info[0]}.{sys.version_info[1]} needs SQLite 3.42 or newer for a SQLite "
        f"database, and this Python uses SQLite {sqlite3.sqlite_version}: give a PostgreSQL database_url, or "
        "use a Python built with a newer SQLite"
    )


def _subsecond_unixepoch() -> bool:
    """Whether this Python's SQLite evaluates ``unixepoch('subsec')`` (SQLite 3.42 and later)."""
    with contextlib.closing(sqlite3.connect(":memory:")) as probe:
        try:
            return probe.execute("SELECT unixepoch('subsec')").fetchone()[0] is not None
        except sqlite3.OperationalError:  # before 3.38 there is no unixepoch at all
            return False


def _use_write_ahead_log(url: str) -> None:
    """Switch a SQLite database file to write-ahead logging (durable, and far faster per commit)."""
    parsed = sqlalchemy.make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return
    Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(parsed.database)) as connection:
        connection.execute("PRAGMA journal_mode=WAL")


# -- waking waiters in this process as soon as a call of theirs publishes a state


@final
class _Watch:
    """One waiter's wake-up, raised from any thread."""

    __slots__ = ("_event", "_loop", "_notified")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self._notified = False

    def notify(self) -> None:
        with contextlib.suppress(RuntimeError):  # the waiter's loop has closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._note)

    def _note(self) -> None:
        self._notified = True
        self._event.set()

    async def wait(self, timeout: float) -> bool:
        """Wait for a notification; False when `timeout` seconds passed without one."""
        timer = self._loop.call_later(timeout, self._event.set)  # a timer, not a cancellation
        await self._event.wait()  # at once when a notification came since the last wait
        timer.cancel()
        notified, self._notified = self._notified, False
        self._event.clear()
        return notified


@final
class _Signals:
    """The waiters of this process, by key."""

    __slots__ = ("_lock", "_watches")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watches: dict[str, set[_Watch]] = {}

    @contextlib.contextmanager
    def watch(self, key: str) -> Generator[_Watch, None, None]:
        watch = _Watch()
        with self._lock:
            self._watches.setdefault(key, set()).add(watch)
        try:
            yield watch
        finally:
            with self._lock:
                group = self._watches[key]
                group.discard(watch)
                if not group:
                    del self._watches[key]

    def notify(self, key: str) -> None:
        with self._lock:
            watches = list(self._watches.get(key, ()))
        for watch in watches:
            watch.notify()


_SIGNALS: Final = _Signals()
