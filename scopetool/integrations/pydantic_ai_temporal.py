"""scopetool tools in pydantic-ai's Temporal agent: every call admitted and run in an activity, retried by its effect.

Install with ``pip install 'scopetool[pydantic-ai,temporal]'``. pydantic-ai runs a toolset's tools as
Temporal activities when it knows how to (function, dynamic and MCP toolsets); `temporal_toolset`
gives it scopetool's tools as a dynamic toolset, so listing the tools, admitting a call
(`Contract.prepare`, in pydantic-ai's validation activity) and running it (in its call activity) all
happen on a worker, never in workflow code. Each tool's definition carries the retry policy its effect
allows (``scopetool.driver.temporal.retry_policy``) as pydantic-ai's per-tool activity config (its
``metadata["temporal"]``): a SAFE or IDEMPOTENT tool's lost attempt is retried with backoff, a tool
with no promise gets one attempt, never two.

With ``code_mode``, the toolset offers ``run_code`` (`scopetool.code`) instead of the tools, and each
nested call of a snippet runs as a call of a `TemporalBackend` (a workflow of its own, named by the
nested call's key) on ``code_task_queue``, started from the code call's activity: a retried code
activity, on any worker, and a code call resumed after an approval find the nested calls completed
before and do not run them again. Run a worker of that backend beside the agent's
(``TemporalBackend(registry, client, task_queue=code_task_queue).worker()``).

Example:
    ```python
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import TemporalDurability

    from scopetool import Registry, tool
    from scopetool.integrations.pydantic_ai_temporal import temporal_toolset

    @tool
    def send(to: str, text: str) -> str:
        \"\"\"Send a message (no effect promise: never sent twice).\"\"\"
        return "sent"

    toolset = temporal_toolset(Registry(send), id="messaging", key_secret=b"the same in every worker")
    agent = Agent("test", name="courier", toolsets=[toolset], capabilities=[TemporalDurability()])
    print(toolset.id)
    #> messaging
    ```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, final

from .._extras import missing_dependency

try:
    from pydantic_ai import RunContext
    from pydantic_ai.toolsets import AbstractToolset, DynamicToolset, ToolsetTool, WrapperToolset
    from temporalio import activity
    from temporalio.workflow import ActivityConfig
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

from .._contract import IdempotencyKey
from .._registry import Registry
from ..driver._backend import AdmittedCall, CallState
from ..driver.temporal import TemporalBackend, retry_policy
from ._common import Tools, registry_of
from .pydantic_ai import ScopetoolToolset

if TYPE_CHECKING:
    from ..code import CodeLimits

__all__ = ["CODE_ACTIVITY_MARGIN", "temporal_toolset"]

CODE_ACTIVITY_MARGIN = 30.0
"""Seconds a code call's activity may run past its snippet's `CodeLimits.wall_seconds` (sandbox start, records)."""


def temporal_toolset(
    tools: Tools,
    *,
    id: str,  # noqa: A002 - pydantic-ai's name
    key_secret: bytes,
    max_retries: int = 1,
    retry: Mapping[str, Any] | None = None,
    code_mode: bool | CodeLimits = False,
    code_task_queue: str | None = None,
    code_timeout: float | None = None,
) -> DynamicToolset[Any]:
    """Scopetool's tools as a toolset pydantic-ai's Temporal durability lists, admits and runs in activities.

    Args:
        tools: A `Registry`, or tools and bindings for a new one (build it the same way in every worker).
        id: The toolset's id: stable, and unique among the agent's toolsets (it names the activities).
        key_secret: The secret every call's idempotency key is minted under (from the run's
            conversation id and the call id): the same bytes in every worker, so that a retried
            activity, on any worker, runs the call under the same key.
        max_retries: How many rejected calls each tool allows before the run fails.
        retry: Settings of `retry_policy` (``initial_interval``, ``backoff``, ``maximum_interval``,
            ``maximum_attempts``) for the tools that may be run again.
        code_mode: Offer ``run_code`` over the tools instead of the tools (see `ScopetoolToolset`):
            True for the default `CodeLimits`, or the limits to use.
        code_task_queue: With `code_mode`, the task queue the nested calls run on, as calls of a
            `TemporalBackend` of the same tools (required: their records are kept by Temporal, not in
            one worker's memory).
        code_timeout: With `code_mode`, the seconds one attempt of a code call's activity may run (its
            ``start_to_close_timeout``, set in the tool's own activity config); by default the snippet's
            `CodeLimits.wall_seconds` plus `CODE_ACTIVITY_MARGIN`, so that a snippet within its limits is
            never cut off and retried while it runs.

    Raises:
        ValueError: `key_secret` is empty, or `code_mode` is on without `code_task_queue` (or the reverse).
    """
    if not isinstance(key_secret, bytes) or not key_secret:
        raise ValueError("key_secret must be the same non-empty bytes in every worker")
    if (code_mode is not False) != (code_task_queue is not None):
        raise ValueError(
            "code mode on Temporal runs the nested calls on a task queue of their own: "
            "give code_mode and code_task_queue together"
        )
    registry = registry_of(tools)
    scoped: ScopetoolToolset[Any] = ScopetoolToolset(
        registry,
        id=id,
        max_retries=max_retries,
        key_secret=key_secret,
        code_mode=code_mode,
        code_backend=None if code_task_queue is None else _NestedCalls(registry, code_task_queue),
    )
    timeouts: dict[str, timedelta] = {}
    if code_mode is not False:
        from ..code import CodeLimits  # noqa: PLC0415 - the sandbox is imported only when code mode is on

        limits = CodeLimits() if code_mode is True else code_mode
        # one attempt of the code activity may take the whole snippet, nested calls and all
        seconds = limits.wall_seconds + CODE_ACTIVITY_MARGIN if code_timeout is None else code_timeout
        timeouts[scoped.registry.names()[0]] = timedelta(seconds=seconds)
    toolset = _EffectRetries(scoped, scoped.registry, dict(retry or {}), timeouts)

    def resolve(ctx: RunContext[Any]) -> AbstractToolset[Any]:
        return toolset

    return DynamicToolset(resolve, id=id, per_run_step=False)


class _EffectRetries(WrapperToolset[Any]):
    """Gives each tool's definition the activity config (its retry policy) its effect allows."""

    def __init__(
        self,
        wrapped: ScopetoolToolset[Any],
        registry: Registry,
        retry: dict[str, Any],
        timeouts: Mapping[str, timedelta],
    ) -> None:
        super().__init__(wrapped)
        self._registry = registry
        self._retry = retry
        self._timeouts = timeouts

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The wrapped toolset's tools, each with ``metadata["temporal"]`` holding its retry policy (and timeout)."""
        tools = await super().get_tools(ctx)
        for name, tool in tools.items():
            binding = self._registry.resolve(name)
            effect = None if binding is None else binding.definition().effect
            config = ActivityConfig(retry_policy=retry_policy(effect, **self._retry))
            timeout = self._timeouts.get(name)
            if timeout is not None:
                config["start_to_close_timeout"] = timeout
            metadata = {**(tool.tool_def.metadata or {}), "temporal": config}
            tools[name] = replace(tool, tool_def=replace(tool.tool_def, metadata=metadata))
        return tools


@final
class _NestedCalls:
    """The backend of a code tool's nested calls: a `TemporalBackend` on the client of the code call's activity.

    A code call runs in pydantic-ai's call activity, on a worker; its nested calls are started from there
    as workflows of their own, so that their records outlive the activity and the worker.
    """

    __slots__ = ("_backend", "_registry", "_task_queue")

    def __init__(self, registry: Registry, task_queue: str) -> None:
        self._registry = registry
        self._task_queue = task_queue
        self._backend: TemporalBackend | None = None

    def _temporal(self) -> TemporalBackend:
        if not activity.in_activity():
            raise RuntimeError(
                "code mode on Temporal runs its nested calls from the code call's activity: "
                "run the agent in a workflow (its TemporalDurability capability)"
            )
        client = activity.client()
        backend = self._backend
        if backend is None or backend.client is not client:
            backend = self._backend = TemporalBackend(self._registry, client, task_queue=self._task_queue)
        return backend

    async def secret(self) -> bytes:
        """The key-minting secret of the namespace's `TemporalBackend` calls."""
        return await self._temporal().secret()

    async def start(self, call: AdmittedCall) -> CallState:
        """Start the nested call's workflow, or attach to the one its key names."""
        return await self._temporal().start(call)

    async def answer(self, key: IdempotencyKey, response: Any) -> bool:
        """Deliver the answer to the nested call `key`, which waits in its workflow."""
        return await self._temporal().answer(key, response)
