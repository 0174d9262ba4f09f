"""scopetool tools as OpenAI Agents SDK activity tools: an agent run in a Temporal workflow calls them as activities.

Install with ``pip install 'scopetool[openai-agents,temporal]'``. The Temporal integration of the
Agents SDK turns an activity into a tool with ``activity_as_tool``, which takes the tool's schema from
the Python signature and validates the arguments in workflow code. `activity_tools` does the same for
scopetool's tools with scopetool's own schema (its OpenAI Responses export, as `function_tools`) and
its own admission: the tool's `FunctionTool` runs the call as the activity `CALL_ACTIVITY` (register
`call_activities` on your workers), which admits the raw arguments with `Contract.prepare` and runs the
tool on the worker. The activity id is the call's idempotency key (minted from the workflow id and
the call id under `key_secret`), and the retry policy is the one the tool's effect allows
(`retry_policy`): a SAFE or IDEMPOTENT tool's lost attempt is retried with backoff, a tool with no
effect promise gets one attempt, and a lost one is shown to the model as an unknown outcome. The
calls of tools that are not `Effect.SAFE` never overlap (the SDK starts a turn's calls together). The
model sees what `function_tools` shows it: a result, a rejection's message or a `Failure`'s public
output, never a private cause. A tool's input request is not asked in a workflow: the model is told
the tool needs input this run cannot ask for.

Example:
    ```python
    from scopetool import Effect, Registry, tool
    from scopetool.integrations.openai_agents_temporal import activity_tools

    @tool(effect=Effect.SAFE)
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    tools = activity_tools(Registry(add), key_secret=b"the same bytes in every worker")
    print([t.name for t in tools])  # for Agent(tools=...) inside a workflow
    #> ['add']
    ```
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from .._extras import missing_dependency

try:
    from agents import FunctionTool
    from agents.tool_context import ToolContext
    from temporalio import workflow
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

from .._binding import Binding
from .._definition import Effect
from ..driver._identity import KeyMinter
from ..driver._records import decode_outcome, is_input
from ..driver.temporal import execute_call, retry_policy
from ..providers import openai_responses
from ..providers._common import Export, repair_nulls
from ._common import Barrier, Tools, registry_of, shown
from .openai_agents import NO_ANSWER

__all__ = ["activity_tools"]


def activity_tools(
    tools: Tools,
    *,
    key_secret: bytes,
    start_to_close_timeout: float = 600.0,
    heartbeat_timeout: float = 30.0,
    task_queue: str | None = None,
    retry: Mapping[str, Any] | None = None,
) -> list[FunctionTool]:
    """One `FunctionTool` per tool, in name order, whose calls run as Temporal activities (use them in a workflow).

    Args:
        tools: A `Registry`, or tools and bindings for a new one (the workers run calls with
            ``call_activities`` of the same tools).
        key_secret: The secret each call's idempotency key is minted under, from the workflow id and
            the call id: the key is the activity id and reaches the tool as its invocation's key.
        start_to_close_timeout: Seconds one attempt of a tool may run.
        heartbeat_timeout: Seconds without a heartbeat after which an attempt counts as lost.
        task_queue: The task queue of the workers that run the calls; the workflow's own by default.
        retry: Settings of `retry_policy` (``initial_interval``, ``backoff``, ``maximum_interval``,
            ``maximum_attempts``) for the tools that may be run again.

    Raises:
        ProviderError: a tool cannot be exported to the OpenAI Responses API (its name, say).
    """
    if not isinstance(key_secret, bytes) or not key_secret:
        raise ValueError("key_secret must be the same non-empty bytes in every worker")
    registry = registry_of(tools)
    export = openai_responses.export_tools(registry, strict=True, output_schema=False)
    invoke = _Settings(
        KeyMinter(key_secret),
        timedelta(seconds=start_to_close_timeout),
        timedelta(seconds=heartbeat_timeout),
        task_queue,
        dict(retry or {}),
    )
    serial = Barrier()
    made: list[FunctionTool] = []
    for entry in export.tools:
        name: str = entry["name"]
        binding = registry.resolve(name)
        assert binding is not None  # exported from this registry
        made.append(
            FunctionTool(
                name=name,
                description=entry.get("description", ""),
                params_json_schema=entry["parameters"],
                on_invoke_tool=_ActivityInvoke(
                    binding, export, invoke, None if binding.definition().effect is Effect.SAFE else serial
                ),
                strict_json_schema=entry["strict"],
            )
        )
    return made


class _Settings:
    """What every tool's activity is scheduled with."""

    __slots__ = ("heartbeat_timeout", "minter", "retry", "start_to_close_timeout", "task_queue")

    def __init__(
        self,
        minter: KeyMinter,
        start_to_close_timeout: timedelta,
        heartbeat_timeout: timedelta,
        task_queue: str | None,
        retry: dict[str, Any],
    ) -> None:
        self.minter = minter
        self.start_to_close_timeout = start_to_close_timeout
        self.heartbeat_timeout = heartbeat_timeout
        self.task_queue = task_queue
        self.retry = retry


class _ActivityInvoke:
    """A tool's ``on_invoke_tool`` in workflow code: run the call as an activity, render its outcome."""

    __slots__ = ("_binding", "_export", "_serial", "_settings")

    def __init__(self, binding: Binding, export: Export, settings: _Settings, serial: Barrier | None) -> None:
        self._binding = binding
        self._export = export
        self._settings = settings
        self._serial = serial

    async def __call__(self, context: ToolContext[Any], arguments: str) -> str:
        if self._serial is None:
            return await self._run(context, arguments)
        return await self._serial.run(lambda: self._run(context, arguments))

    async def _run(self, context: ToolContext[Any], arguments: str) -> str:
        name = self._binding.name
        settings = self._settings
        effect = self._binding.definition().effect
        key = settings.minter.key(workflow.info().workflow_id, context.tool_call_id, 0)
        record = await execute_call(
            name,
            repair_nulls(arguments, self._export, name),
            key=key,
            replayable=effect is not None and effect.replayable,
            activity_id=key,
            start_to_close_timeout=settings.start_to_close_timeout,
            heartbeat_timeout=settings.heartbeat_timeout,
            retry_policy=retry_policy(effect, **settings.retry),
            task_queue=settings.task_queue,
        )
        if is_input(record):
            return NO_ANSWER.format(name=name)
        return shown(name, decode_outcome(record))[0]
