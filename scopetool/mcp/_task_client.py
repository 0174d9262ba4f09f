"""Following MCP tasks an upstream server returns (``io.modelcontextprotocol/tasks``), for `scopetool.mcp.client`.

The client declares the extension (`TasksClientExtension`, an SDK ``ClientExtension`` whose one claim
parses a ``resultType: "task"`` answer to ``tools/call`` as `TaskCreated`). A call answered with a
task is followed by `follow_task`: ``tasks/get`` every ``pollIntervalMs`` (within `MIN_POLL` and
`MAX_POLL`) until the task completes (its ``CallToolResult``), fails (its JSON-RPC error, as an
``MCPError``), is cancelled, or asks for input (`TaskInput`: one form elicitation, which the client
hands out as an `InputRequest`; `answer_task` sends the answer with ``tasks/update``). The caller bounds
the whole wait (the client's call timeout).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, final

import anyio
import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from .._json import is_object
from .tasks import EXTENSION

__all__ = ["MAX_POLL", "MIN_POLL", "TaskCreated", "TaskInput", "TasksClientExtension", "answer_task", "follow_task"]

MIN_POLL: Final = 0.05
"""The shortest wait between two ``tasks/get``, in seconds, whatever the server suggests."""

MAX_POLL: Final = 5.0
"""The longest wait between two ``tasks/get``, in seconds, whatever the server suggests."""


class _TaskState(types.Result):
    """A ``tasks/get`` result, as far as following the task needs it."""

    status: str
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None


class TaskCreated(types.Result):
    """A ``CreateTaskResult``: the server answered ``tools/call`` with a task to poll."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


@final
@dataclass(frozen=True, slots=True)
class TaskInput:
    """A task waiting for the answer to one form elicitation."""

    task_id: str
    key: str
    params: types.ElicitRequestFormParams


class _TaskParams(types.RequestParams):
    task_id: str


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any]


class _GetTask(types.Request[_TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: _TaskParams
    name_param = "taskId"  # SEP-2663: Mcp-Name carries the task id over HTTP


class _UpdateTask(types.Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: _UpdateParams
    name_param = "taskId"


class TaskCancelledError(RuntimeError):
    """The upstream server cancelled the task the call became."""


class TasksClientExtension(ClientExtension):
    """Declares ``io.modelcontextprotocol/tasks`` and parses a task answer to ``tools/call``."""

    identifier = EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        """The one claim: ``resultType: "task"`` on ``tools/call``."""
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=_resolve)]


async def _resolve(created: TaskCreated, context: ClaimContext) -> types.CallToolResult:
    """For the SDK's own ``Client.call_tool``: follow the task; an input request cannot be answered there."""
    outcome = await follow_task(context.session, created.task_id, created.poll_interval_ms)
    if isinstance(outcome, TaskInput):
        text = f'error: tool "{context.tool_name}" needs input that cannot be requested over this connection'
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
    return outcome


async def follow_task(
    session: ClientSession, task_id: str, interval_ms: int | None
) -> types.CallToolResult | TaskInput:
    """Poll ``tasks/get`` until the task ends or asks for input (the caller bounds the wait).

    Raises:
        MCPError: the task failed (its error), or a ``tasks/get`` was refused.
        TaskCancelledError: the task was cancelled.
        NotImplementedError: the task asks for something other than one form elicitation.
    """
    while True:
        got = await session.send_request(_GetTask(params=_TaskParams(task_id=task_id)), _TaskState)
        if got.status == "completed":
            return types.CallToolResult.model_validate(got.result)
        if got.status == "failed":
            error = got.error or {}
            raise MCPError(int(error.get("code", types.INTERNAL_ERROR)), str(error.get("message", "task failed")))
        if got.status == "cancelled":
            raise TaskCancelledError(f"the server cancelled task {task_id[:8]}...")
        if got.status == "input_required":
            return _input(task_id, got.input_requests or {})
        suggested = got.poll_interval_ms if got.poll_interval_ms is not None else interval_ms
        seconds = MIN_POLL if suggested is None else suggested / 1000
        await anyio.sleep(min(max(seconds, MIN_POLL), MAX_POLL))


async def answer_task(session: ClientSession, task_id: str, key: str, answer: types.ElicitResult) -> None:
    """Send the answer to the task's input request `key` (``tasks/update``)."""
    response = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
    params = _UpdateParams(task_id=task_id, input_responses={key: response})
    await session.send_request(_UpdateTask(params=params), types.Result)


def _input(task_id: str, requests: dict[str, Any]) -> TaskInput:
    """The task's one form elicitation.

    Raises:
        NotImplementedError: the task asks for anything else (several requests, sampling, a URL form).
    """
    asked = [(key, request) for key, request in requests.items() if is_object(request)]
    if len(asked) == 1 == len(requests):
        key, request = asked[0]
        params = request.get("params")
        if request.get("method") == "elicitation/create" and is_object(params) and params.get("mode", "form") == "form":
            return TaskInput(task_id, key, types.ElicitRequestFormParams.model_validate(params))
    methods = sorted(str(request.get("method")) for _, request in asked)
    raise NotImplementedError(f"scopetool answers one form elicitation per task input request, not {methods}")
