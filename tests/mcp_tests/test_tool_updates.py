"""A server serving a registry that changes (`ToolUpdates`): calls across a swap, tasks and limits after it."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client, MCPError, types
from tasks_fixture_tools import registry as tasks_registry
from tasks_fixture_tools import slow

from scopetool import Effect, Registry, tool
from scopetool.mcp._task_client import TaskCreated, TasksClientExtension
from scopetool.mcp.limits import Limit, Limiter, LimitError, Limits
from scopetool.mcp.server import ToolUpdates, create_server
from scopetool.mcp.tasks import TaskOptions


@tool(effect=Effect.SAFE)
def quick() -> str:
    """Answer at once (a tool served only after the change)."""
    return "quick"


@tool(effect=Effect.IDEMPOTENT)
def label(item: str) -> str:
    """Label an item by itself (the same name as the fixture's, another definition)."""
    return f"{item}: labelled"


def nothing() -> None:
    """A publisher's commit that changes nothing of its own."""


async def test_a_call_running_across_a_swap_ends_on_its_own_tool_and_the_next_sees_the_new_set() -> None:
    """The call that began before the swap returns its tool's result; after it, a removed name is unknown."""
    updates = ToolUpdates()
    server = create_server(tasks_registry, updates=updates)
    results: list[types.CallToolResult] = []
    async with Client(server, mode="legacy") as client, anyio.create_task_group() as group:

        async def running() -> None:
            results.append(await client.call_tool("slow", {"seconds": 0.3}))

        group.start_soon(running)
        await anyio.sleep(0.1)
        await updates.publish(Registry(quick), False, commit=nothing)
        assert [entry.name for entry in (await client.list_tools()).tools] == ["quick"]
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("slow", {"seconds": 0})
        assert unknown.value.error.code == types.INVALID_PARAMS
    assert results[0].content == [types.TextContent(type="text", text="slept 0.3s")]


async def test_after_a_swap_only_tools_the_driver_knows_unchanged_become_tasks() -> None:
    """``slow`` (its definition unchanged) still becomes a task; a new tool and a changed one are answered inline."""
    updates = ToolUpdates()
    server = create_server(tasks_registry, tasks=TaskOptions(answer_within=0, poll_interval=0.05), updates=updates)
    async with Client(server, extensions=[TasksClientExtension()]) as client:
        await updates.publish(Registry(slow, quick, label), False, commit=nothing)
        kept = await client.session.call_tool("slow", {"seconds": 0.01}, allow_claimed=True)
        new = await client.session.call_tool("quick", {}, allow_claimed=True)
        changed = await client.session.call_tool("label", {"item": "cup"}, allow_claimed=True)
    assert isinstance(kept, TaskCreated)
    assert isinstance(new, types.CallToolResult) and new.content == [types.TextContent(type="text", text="quick")]
    assert isinstance(changed, types.CallToolResult)
    assert changed.content == [types.TextContent(type="text", text="cup: labelled")]


async def test_a_limiter_adopting_new_tools_keeps_its_counts() -> None:
    """A tool counted before keeps its slots in flight; a tool served anew gets its own limit at once."""
    limiter = Limiter(Limits(tools={"a": Limit(concurrency=1)}), tools=["a"])
    held = await limiter.enter("a")
    assert not isinstance(held, LimitError)
    unserved = [await limiter.enter("b") for _ in range(3)]  # not served yet: no limit of its own
    assert not any(isinstance(entered, LimitError) for entered in unserved)
    limiter.adopt(Limits(tools={"a": Limit(concurrency=1), "b": Limit(rate="1/minute")}), tools=["a", "b"])
    assert isinstance(await limiter.enter("a"), LimitError)  # a's slot, taken before, is still held
    assert not isinstance(await limiter.enter("b"), LimitError)
    refused = await limiter.enter("b")
    assert isinstance(refused, LimitError) and "1 per minute" in str(refused)
    held.release()
    assert not isinstance(await limiter.enter("a"), LimitError)
