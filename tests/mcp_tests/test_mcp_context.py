"""The MCP server with CallContext tools, through the official SDK client: approvals and questions as elicitations.

Both protocol generations: 2025-11-25 (``elicitation/create`` from the server) and 2026-07-28
(``input_required`` results the client retries).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from mcp import Client, types
from mcp.client.session import ClientRequestContext

from scopetool import CallContext, Registry, tool
from scopetool.mcp.server import create_server

MODES = ["legacy", "2026-07-28"]


@dataclass
class Store:
    """The application's dependency: what the tools change, and who they act for."""

    user: str
    deleted: list[str] = field(default_factory=list)


@tool(approval=lambda path: f"Delete {path}?")
def remove(ctx: CallContext[Store], path: str) -> str:
    """Delete a file."""
    ctx.deps.deleted.append(path)
    return f"{ctx.deps.user} deleted {path}"


@tool(approval=True)
async def rename(ctx: CallContext[Store], path: str) -> str:
    """Rename a file to the name a person gives, once they approve the rename."""
    name = ctx.ask(f"New name for {path}?", str)
    return f"{ctx.deps.user} renamed {path} to {name}"


class Person:
    """Answers elicitations in order, and remembers what it was asked."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[types.ElicitRequestFormParams] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params)
        return self.answers.pop(0)


def accept(**content: Any) -> types.ElicitResult:
    """An accepted form with `content`."""
    return types.ElicitResult(action="accept", content=content)


@asynccontextmanager
async def connect(mode: str, person: Person, store: Store) -> AsyncGenerator[Client]:
    """The real SDK client, in process, against a server of a registry holding `store` as its deps."""
    server = create_server(Registry(remove, rename, deps=store), name="context-tools")
    async with Client(server, mode=mode, raise_exceptions=True, elicitation_callback=person) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    """The result's one text block."""
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", MODES)
async def test_an_approved_call_runs_once_with_the_servers_deps(mode: str) -> None:
    """The approval is asked as a boolean form with the tool's prompt; accepted, the tool runs once."""
    person, store = Person(accept(answer=True)), Store("ada")
    async with connect(mode, person, store) as client:
        listed = await client.list_tools()
        result = await client.call_tool("remove", {"path": "a.txt"})
    assert [sorted(t.input_schema["properties"]) for t in listed.tools] == [["path"], ["path"]]
    [asked] = person.asked
    assert asked.message == "Delete a.txt?"
    assert asked.requested_schema["properties"]["answer"]["type"] == "boolean"
    assert (result.is_error, text(result)) == (False, "ada deleted a.txt")
    assert store.deleted == ["a.txt"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_refused_approval_is_the_fixed_rejection_and_nothing_runs(mode: str) -> None:
    """Answered false, the call ends as an error result with the fixed text; the tool never ran."""
    person, store = Person(accept(answer=False)), Store("ada")
    async with connect(mode, person, store) as client:
        result = await client.call_tool("remove", {"path": "a.txt"})
    assert (result.is_error, text(result)) == (True, 'error: tool "remove" was not run: approval was declined')
    assert store.deleted == []


@pytest.mark.parametrize("mode", MODES)
async def test_approval_then_a_question_take_two_rounds_of_the_same_call(mode: str) -> None:
    """The default approval prompt, then the function's own question; both answers reach the one call."""
    person = Person(accept(answer=True), accept(answer="b.txt"))
    async with connect(mode, person, Store("grace")) as client:
        result = await client.call_tool("rename", {"path": "a.txt"})
    assert [p.message for p in person.asked] == [
        'Allow the tool "rename" to run with the arguments {"path":"a.txt"}?',
        "New name for a.txt?",
    ]
    assert (result.is_error, text(result)) == (False, "grace renamed a.txt to b.txt")


async def test_a_declined_form_ends_the_call_without_running_it() -> None:
    """A person who declines the form (not answering false) ends the call with the server's fixed text."""
    person, store = Person(types.ElicitResult(action="decline")), Store("ada")
    async with connect("2026-07-28", person, store) as client:
        result = await client.call_tool("remove", {"path": "a.txt"})
    assert result.is_error and "declined" in text(result)
    assert store.deleted == []
