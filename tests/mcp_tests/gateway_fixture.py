"""Local tools and a policy for the gateway tests (named in the test configs as file targets)."""

from __future__ import annotations

import asyncio
import json

from scopetool import Authorization, Registry, current_principal, tool


@tool
def echo(message: str) -> str:
    """Echo the message back, locally (its name collides with the everything server's echo)."""
    return f"local: {message}"


registry = Registry(echo)


def policy(authorization: Authorization) -> bool:
    """Refuse any call whose ``message`` is "forbidden"."""
    arguments = json.loads(authorization.arguments)
    return arguments.get("message") != "forbidden"


def broken_policy(authorization: Authorization) -> bool:
    """A policy that cannot decide: it raises (with a secret in its message)."""
    raise RuntimeError("SECRET-POLICY-DETAIL")


@tool
def a_tool_whose_name_is_already_as_long_as_providers_accept_it() -> str:
    """A tool whose name, 59 characters, cannot take a prefix (64 at most)."""
    return "long"


long_names = Registry(a_tool_whose_name_is_already_as_long_as_providers_accept_it)


@tool
def read_notes() -> str:
    """Read the team's notes."""
    return "notes"


@tool
def write_note(text: str) -> str:
    """Write a note."""
    return f"written: {text}"


@tool
def delete_note(owner: str) -> str:
    """Delete a note of `owner`'s."""
    return f"deleted {owner}'s note"


@tool
def whoami() -> str:
    """Say who the caller is, as the server sees it."""
    caller = current_principal()
    return "nobody" if caller is None else f"{caller.subject} via {caller.client_id} with {sorted(caller.scopes)}"


team = Registry(read_notes, write_note, delete_note, whoami)


def owners_only(authorization: Authorization) -> bool:
    """Let a caller delete only its own notes (any other call passes): a policy that reads the caller."""
    if authorization.definition.name != "delete_note":
        return True
    caller = current_principal()
    return caller is not None and json.loads(authorization.arguments)["owner"] == caller.subject


@tool
async def slow() -> str:
    """Take a little while (for the concurrency limits)."""
    await asyncio.sleep(0.5)
    return "done"


slow_tools = Registry(slow, read_notes)
