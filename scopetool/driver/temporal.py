"""A durable backend on Temporal: every call is a workflow, its tool an activity, both named by the call's key.

Install it with ``pip install 'scopetool[temporal]'``. Only this module imports ``temporalio``.

`TemporalBackend` is the client half (the `Backend` a `Driver` drives); `TemporalBackend.worker` is the
worker half, which any number of processes run on one task queue. One workflow runs each call, under
the call's `IdempotencyKey` as its workflow id: it runs the tool as an activity whose id is that key,
keeps the outcome (a record of ``scopetool.driver._records``: JSON, never a private cause), and when
the tool asks for input it waits, durably, for an answer delivered by a workflow update. See
``docs/driver.md`` for what is guaranteed.

Where admission runs. `Contract.prepare` runs in the `Driver` (the caller, before the workflow starts)
and again in the activity, on the worker, which mints the `Invocation` the tool receives (with the key
and, on a resumed call, its `Continuation`). It never runs in workflow code: admission runs the tool's
validators and policies, which may read the clock, the caller or anything else, and workflow code must
replay the same way every time. The workflow only carries the admitted JSON text and the records.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Final, final

from .._extras import missing_dependency

try:
    from temporalio import activity, workflow
    from temporalio.client import (
        Client,
        WithStartWorkflowOperation,
        WorkflowFailureError,
        WorkflowUpdateFailedError,
        WorkflowUpdateRPCTimeoutOrCancelledError,
    )
    from temporalio.common import RetryPolicy, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import (
        ActivityError,
        ApplicationError,
        ApplicationErrorCategory,
        WorkflowAlreadyStartedError,
    )
    from temporalio.service import RPCError
    from temporalio.worker import Worker
except ImportError as missing:  # pragma: no cover - the extra is installed wherever the tests run
    raise missing_dependency(__name__, missing) from missing

from .._contract import Admission, IdempotencyKey
from .._definition import Effect
from .._input import InputRequest, InvalidInputRequestError
from .._json import canonical_json
from .._registry import Registry
from ._backend import AdmittedCall, CallState, Conflict, Finished, Waiting
from ._records import Record, decode_outcome, interrupted_record, is_input, lost_record, run_request

__all__ = [
    "CALL_ACTIVITY",
    "CALL_WORKFLOW",
    "SECRET_WORKFLOW_ID",
    "CallWorkflow",
    "SecretWorkflow",
    "TemporalBackend",
    "call_activities",
    "execute_call",
    "retry_policy",
]

CALL_WORKFLOW: Final = "scopetool.driver.call"
"""The workflow type that runs one call (its workflow id is the call's key)."""
CALL_ACTIVITY: Final = "scopetool.driver.call"
"""The activity type that runs one attempt of a call's tool (its activity id is the call's key)."""
SECRET_WORKFLOW_ID: Final = "scopetool.driver.secret"
"""The id of the workflow whose memo keeps the key-minting secret of a namespace (it runs, idle, for good)."""

_FAILURE: Final = "scopetool.Failure"
_NOT_WAITING: Final = "scopetool.NotWaiting"
_INVALID_ANSWER: Final = "scopetool.InvalidAnswer"


@final
class TemporalBackend:
    """A durable `Backend` on Temporal: calls run as workflows on any worker polling the task queue.

    The effect a tool promised chooses its activity's retry policy: a SAFE or IDEMPOTENT tool is run
    again, with backoff, when its worker is lost mid-call (its heartbeats stop) or the attempt times
    out; a tool with no promise gets one attempt, and a lost attempt is final, its outcome unknown
    ("interrupted"). A tool's own error is never retried: the activity fails, non-retryable, with
    only the outcome the model is shown (a `Failure`'s public output); the cause is logged on the
    worker and goes no further.

    Args:
        registry: The tools; workers run calls with the binding this registry holds for each name.
        client: A connected ``temporalio.client.Client`` (its namespace keeps the calls).
        task_queue: The task queue calls are started on and workers poll.
        secret: The key-minting secret (at least 32 bytes). None: drawn once per namespace and kept
            in the memo of the idle workflow `SECRET_WORKFLOW_ID`; give one of your own (from your
            secret store) if that workflow may be terminated or the namespace reset.
        start_to_close_timeout: Seconds one attempt of a tool may run.
        heartbeat_timeout: Seconds without a heartbeat after which an attempt counts as lost (a
            worker heartbeats every third of it while a tool runs).
        retry_initial_interval: Seconds before the first retry of a lost SAFE or IDEMPOTENT attempt.
        retry_backoff: What each later wait is multiplied by.
        retry_maximum_interval: The longest wait between retries, in seconds.
        retry_maximum_attempts: Attempts of a SAFE or IDEMPOTENT tool, the first included, before the
            call ends as failed.
        answer_timeout: Seconds `answer` waits for a worker to take an answer before it raises
            `TimeoutError` (no worker polls the task queue).

    Example:
        ```python
        from temporalio.client import Client
        from scopetool.driver import Driver
        from scopetool.driver.temporal import TemporalBackend

        async def main(registry, calls):
            client = await Client.connect("localhost:7233")
            backend = TemporalBackend(registry, client, task_queue="tools")
            async with backend.worker():  # or run workers elsewhere, on the same task queue
                turn = await Driver(registry, backend).run("conversation-1", calls)
        ```
    """

    __slots__ = (
        "_activities",
        "_activity_settings",
        "_answer_timeout",
        "_client",
        "_registry",
        "_secret",
        "_task_queue",
    )

    def __init__(
        self,
        registry: Registry,
        client: Client,
        *,
        task_queue: str = "scopetool",
        secret: bytes | None = None,
        start_to_close_timeout: float = 600.0,
        heartbeat_timeout: float = 30.0,
        retry_initial_interval: float = 1.0,
        retry_backoff: float = 2.0,
        retry_maximum_interval: float = 60.0,
        retry_maximum_attempts: int = 10,
        answer_timeout: float = 60.0,
    ) -> None:
        if not isinstance(registry, Registry):
            raise TypeError(f"a TemporalBackend needs a Registry, not {type(registry).__name__}")
        if not isinstance(client, Client):
            raise TypeError(f"a TemporalBackend needs a temporalio Client, not {type(client).__name__}")
        if not isinstance(task_queue, str) or not task_queue:
            raise ValueError("task_queue must name a Temporal task queue")
        if secret is not None and (not isinstance(secret, bytes) or len(secret) < 32):
            raise ValueError("secret must be at least 32 bytes")
        for name, seconds in (
            ("start_to_close_timeout", start_to_close_timeout),
            ("heartbeat_timeout", heartbeat_timeout),
            ("retry_initial_interval", retry_initial_interval),
            ("retry_maximum_interval", retry_maximum_interval),
            ("answer_timeout", answer_timeout),
        ):
            if not seconds > 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {seconds!r}")
        if not retry_backoff >= 1:
            raise ValueError(f"retry_backoff must be at least 1, not {retry_backoff!r}")
        if isinstance(retry_maximum_attempts, bool) or not isinstance(retry_maximum_attempts, int):
            raise TypeError("retry_maximum_attempts must be an int")
        if retry_maximum_attempts < 1:
            raise ValueError(f"retry_maximum_attempts must be at least 1, not {retry_maximum_attempts}")
        self._registry = registry
        self._client = client
        self._task_queue = task_queue
        self._secret = secret
        self._answer_timeout = answer_timeout
        # What every call's workflow is started with: the workflow's history keeps it, so a replay of the
        # workflow on another worker (or after a redeploy with other settings) schedules what it scheduled.
        self._activity_settings: dict[str, float | int] = {
            "start_to_close_timeout": start_to_close_timeout,
            "heartbeat_timeout": heartbeat_timeout,
            "retry_initial_interval": retry_initial_interval,
            "retry_backoff": retry_backoff,
            "retry_maximum_interval": retry_maximum_interval,
            "retry_maximum_attempts": retry_maximum_attempts,
        }
        self._activities = call_activities(registry)

    @property
    def registry(self) -> Registry:
        """The registry workers run calls with."""
        return self._registry

    @property
    def client(self) -> Client:
        """The Temporal client calls are started with."""
        return self._client

    @property
    def task_queue(self) -> str:
        """The task queue calls are started on."""
        return self._task_queue

    @property
    def workflows(self) -> Sequence[type]:
        """The workflow classes a worker of this backend registers (for a `Worker` of your own)."""
        return (CallWorkflow, SecretWorkflow)

    @property
    def activities(self) -> Sequence[Any]:
        """The activities a worker of this backend registers (for a `Worker` of your own)."""
        return self._activities

    def worker(self, **options: Any) -> Worker:
        """A Temporal `Worker` that runs this backend's calls on its task queue; use it as ``async with``.

        `options` go to ``temporalio.worker.Worker`` (say, ``max_concurrent_activities``); its client,
        task queue, workflows and activities are the backend's.
        """
        return Worker(
            self._client,
            task_queue=self._task_queue,
            workflows=list(self.workflows),
            activities=list(self.activities),
            **options,
        )

    async def secret(self) -> bytes:
        """The key-minting secret: the one given, or the namespace's (drawn by the first backend to ask)."""
        if self._secret is None:
            handle = await self._client.start_workflow(
                SecretWorkflow.run,
                id=SECRET_WORKFLOW_ID,
                task_queue=self._task_queue,
                memo={"secret": secrets.token_hex(32)},
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
            memo = await (await handle.describe()).memo()
            self._secret = bytes.fromhex(memo["secret"])
        return self._secret

    async def start(self, call: AdmittedCall) -> CallState:
        """Start the call's workflow, or attach to the one its key names; wait until it finishes or waits."""
        if self._registry.resolve(call.name) is not call.binding:
            raise ValueError(
                f"tool {call.name!r} is not bound in the registry this TemporalBackend runs calls with: "
                "drive it with that registry"
            )
        spec = {
            "name": call.name,
            "arguments": call.arguments,
            "digest": call.digest,
            "replayable": call.replayable,
            "activity": self._activity_settings,
        }
        operation = WithStartWorkflowOperation(
            CallWorkflow.run,
            spec,
            id=call.key,
            task_queue=self._task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            memo={"digest": call.digest},  # read back when the workflow ended without a result (terminated)
        )
        try:
            # (the SDK's overloads leave a parameter unknown to pyright: the one for many arguments)
            state: dict[str, Any] = await self._client.execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
                CallWorkflow.settled, start_workflow_operation=operation
            )
        except (WorkflowAlreadyStartedError, WorkflowUpdateFailedError, RPCError):
            # The call's workflow has closed (it cannot take an update): its result is the final state.
            with contextlib.suppress(WorkflowAlreadyStartedError, RPCError):
                await operation.workflow_handle()  # retrieved, so asyncio does not report it as never retrieved
            state = await self._final_state(call.key, call.name)
        if state["digest"] != call.digest:
            return Conflict()
        if state["state"] == "waiting":
            return Waiting(InputRequest.from_json(state["request"]))
        return Finished(decode_outcome(state["outcome"]))

    async def answer(self, key: IdempotencyKey, response: Any) -> bool:
        """Deliver the answer to the input request `key` waits on; False when it waits on none.

        The call's workflow checks the answer against the request's response schema and takes the
        first valid one (later ones, and answers to a call that waits on nothing, return False). A
        worker on the task queue must be running for the workflow to take it. Run the turn again for
        the resumed call's outcome.

        Raises:
            InvalidInputRequestError: the response does not satisfy the response schema.
            TimeoutError: no worker took the answer within `answer_timeout` seconds.
        """
        try:
            response_text = canonical_json(response).decode("utf-8")
        except (TypeError, ValueError) as problem:
            raise InvalidInputRequestError(f"response: not a JSON value: {problem}") from None
        handle = self._client.get_workflow_handle(key)
        try:
            accepted: bool = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
                CallWorkflow.answer, response_text, rpc_timeout=timedelta(seconds=self._answer_timeout)
            )
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == _INVALID_ANSWER:
                raise InvalidInputRequestError(cause.message) from None
            return False
        except RPCError:  # no such call, or it has closed
            return False
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            raise TimeoutError(
                f"no worker took the answer within {self._answer_timeout} s: is one polling {self._task_queue!r}?"
            ) from None
        return accepted

    async def _final_state(self, key: str, name: str) -> dict[str, Any]:
        try:
            state: dict[str, Any] = await self._client.get_workflow_handle(key).result()
        except WorkflowFailureError:  # terminated, or failed outside the tool: the engine gave up on it
            description = await self._client.get_workflow_handle(key).describe()
            digest = (await description.memo()).get("digest", "")
            return {"state": "done", "digest": digest, "outcome": lost_record(name)}
        return state


def retry_policy(
    effect: Effect | None,
    *,
    initial_interval: float = 1.0,
    backoff: float = 2.0,
    maximum_interval: float = 60.0,
    maximum_attempts: int = 10,
) -> RetryPolicy:
    """The Temporal retry policy of a tool's activity, chosen by the tool's effect, as `TemporalBackend` sets it.

    SAFE and IDEMPOTENT: up to `maximum_attempts` attempts, waiting `initial_interval` seconds before the
    first retry and `backoff` times longer before each next one (at most `maximum_interval`). No effect
    promise: one attempt, never retried (a lost attempt's outcome is unknown). For the frameworks' own
    Temporal integrations (see ``scopetool.integrations.pydantic_ai_temporal``).
    """
    return _policy(
        effect is not None and effect.replayable,
        initial_interval=initial_interval,
        backoff=backoff,
        maximum_interval=maximum_interval,
        maximum_attempts=maximum_attempts,
    )


def _policy(
    replayable: bool, *, initial_interval: float, backoff: float, maximum_interval: float, maximum_attempts: int
) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=timedelta(seconds=initial_interval),
        backoff_coefficient=backoff,
        maximum_interval=timedelta(seconds=maximum_interval),
        maximum_attempts=maximum_attempts if replayable else 1,
    )


async def execute_call(
    name: str,
    arguments: str,
    *,
    key: str,
    replayable: bool,
    request: str | None = None,
    response: str | None = None,
    activity_id: str | None = None,
    start_to_close_timeout: timedelta,
    heartbeat_timeout: timedelta,
    retry_policy: RetryPolicy,
    task_queue: str | None = None,
) -> Record:
    """From workflow code: run one attempt of a call as the `CALL_ACTIVITY` activity; the record of its outcome.

    The activity admits `arguments` under `key` (with the answer `response` to `request`, when
    resumed) and runs the tool. A tool's error comes back as its record; an attempt lost for good
    ends as unknown ("interrupted") for a tool that is not `replayable`, and as failed for one that is.
    """
    try:
        record: Record = await workflow.execute_activity(
            CALL_ACTIVITY,
            {"name": name, "arguments": arguments, "key": key, "request": request, "response": response},
            activity_id=activity_id,
            task_queue=task_queue,
            start_to_close_timeout=start_to_close_timeout,
            heartbeat_timeout=heartbeat_timeout,
            retry_policy=retry_policy,
            result_type=dict,
        )
    except ActivityError as error:
        cause = error.cause
        if isinstance(cause, ApplicationError) and cause.type == _FAILURE and cause.details:
            return dict(cause.details[0])  # the tool's error outcome, as the model is shown it
        # Every attempt was lost (a worker died, an attempt timed out): one attempt of a tool with no
        # promise may have had its effect, so its outcome is unknown; a replayable tool ran out of retries.
        return lost_record(name) if replayable else interrupted_record(name)
    return record


def call_activities(registry: Registry) -> Sequence[Any]:
    """The activities that run calls of `registry`'s tools (`CALL_ACTIVITY`), for a Temporal worker."""
    return (_Activities(registry).call,)


# -- the workflows: deterministic code on plain JSON data (not sandboxed: they import nothing and touch no I/O)


@workflow.defn(name=CALL_WORKFLOW, sandboxed=False)
class CallWorkflow:
    """One call, start to finish: its attempts, input waits and continuations, under the call's key.

    Its state (a JSON object) is ``{"state": "running" | "waiting" | "done", "digest": ...}`` with the
    input request's JSON text while it waits and the outcome's record once done; the workflow's result
    is its final state.
    """

    @workflow.init
    def __init__(self, spec: dict[str, Any]) -> None:
        self._state: dict[str, Any] = {"state": "running", "digest": spec["digest"]}
        self._answer: str | None = None

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Run attempts until the call has an outcome, waiting for an answer whenever the tool asks for one."""
        request: str | None = None
        response: str | None = None
        round_ = 0
        while True:
            record = await self._attempt(spec, round_, request, response)
            if not is_input(record):
                self._state = {"state": "done", "digest": spec["digest"], "outcome": record}
                await workflow.wait_condition(workflow.all_handlers_finished)
                return self._state
            request = record["request"]
            self._state = {"state": "waiting", "digest": spec["digest"], "request": request}
            await workflow.wait_condition(lambda: self._answer is not None)
            response, self._answer = self._answer, None
            self._state = {"state": "running", "digest": spec["digest"]}
            round_ += 1

    async def _attempt(self, spec: dict[str, Any], round_: int, request: str | None, response: str | None) -> Record:
        settings = spec["activity"]
        replayable: bool = spec["replayable"]
        retry = _policy(
            replayable,
            initial_interval=settings["retry_initial_interval"],
            backoff=settings["retry_backoff"],
            maximum_interval=settings["retry_maximum_interval"],
            maximum_attempts=settings["retry_maximum_attempts"],
        )
        key = workflow.info().workflow_id
        return await execute_call(
            spec["name"],
            spec["arguments"],
            key=key,
            replayable=replayable,
            request=request,
            response=response,
            activity_id=key if round_ == 0 else f"{key}.{round_}",
            start_to_close_timeout=timedelta(seconds=settings["start_to_close_timeout"]),
            heartbeat_timeout=timedelta(seconds=settings["heartbeat_timeout"]),
            retry_policy=retry,
        )

    @workflow.update
    async def settled(self) -> dict[str, Any]:
        """The call's state once it is done or waits for an answer nobody has given yet."""
        await workflow.wait_condition(
            lambda: self._state["state"] == "done" or (self._state["state"] == "waiting" and self._answer is None)
        )
        return self._state

    @workflow.update
    def answer(self, response: str) -> bool:
        """Take the answer to the input request the call waits on (the validator checked it)."""
        self._answer = response
        return True

    @answer.validator
    def _check_answer(self, response: str) -> None:
        """Reject an answer when the call waits on nothing (or is answered), or the response schema refuses it."""
        if self._state["state"] != "waiting" or self._answer is not None:
            raise ApplicationError("the call waits for no answer", type=_NOT_WAITING, non_retryable=True)
        try:
            InputRequest.from_json(self._state["request"]).continuation_from_json(response)
        except InvalidInputRequestError as problem:
            raise ApplicationError(str(problem), type=_INVALID_ANSWER, non_retryable=True) from None

    @workflow.query
    def state(self) -> dict[str, Any]:
        """The call's state now."""
        return self._state


@workflow.defn(name="scopetool.driver.secret", sandboxed=False)
class SecretWorkflow:
    """Keeps a namespace's key-minting secret in its memo: it waits, idle, for as long as the namespace lives."""

    @workflow.run
    async def run(self) -> None:
        """Wait for good (a running workflow is never removed by the namespace's retention)."""
        await workflow.wait_condition(lambda: False)


# -- the activity: one attempt of a call's tool, on a worker


@final
class _Activities:
    """The activities of a worker, bound to the registry it runs calls with."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    @activity.defn(name=CALL_ACTIVITY)
    async def call(self, task: Mapping[str, Any]) -> Record:
        """Admit the call's arguments (with its continuation, when resumed) and run the tool once."""
        info = activity.info()
        name: str = task["name"]
        request, response = task["request"], task["response"]
        continuation = None if request is None else InputRequest.from_json(request).continuation_from_json(response)
        admission = Admission(idempotency_key=IdempotencyKey(task["key"]), continuation=continuation)
        beat = asyncio.create_task(_heartbeat(info.heartbeat_timeout))
        try:
            record = await run_request(self._registry.resolve(name), name, task["arguments"], admission)
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        if record["kind"] == "error":
            text = "".join(block.get("text", "") for block in record["output"]["content"])
            # BENIGN: the worker logged a defect already (`error_record`); a tool's Failure is an outcome, not an alarm.
            raise ApplicationError(
                text, record, type=_FAILURE, non_retryable=True, category=ApplicationErrorCategory.BENIGN
            )
        return record


async def _heartbeat(timeout: timedelta | None) -> None:
    """Heartbeat every third of the heartbeat timeout while the tool runs, so a lost worker is seen as lost."""
    if timeout is None:
        return
    interval = timeout.total_seconds() / 3
    while True:
        activity.heartbeat()
        await asyncio.sleep(interval)
