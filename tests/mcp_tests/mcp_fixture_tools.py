"""The tools the MCP server tests serve: ``scopetool serve mcp_fixture_tools.py:registry``.

Run as a script, the file serves the same registry itself, through `run_stdio`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from pydantic import BaseModel

from scopetool import (
    Definition,
    Effect,
    Failure,
    FailureKind,
    InputRequest,
    Invocation,
    Output,
    Progress,
    Registry,
    Result,
    report_progress,
    tool,
)
from scopetool.mcp.server import run_stdio

SECRET = "s3cr3t-db-password-0xDEADBEEF"


class Forecast(BaseModel):
    """A day's weather."""

    city: str
    high: int


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(effect=Effect.IDEMPOTENT)
def forecast(city: str) -> Forecast:
    """Tomorrow's forecast for a city."""
    return Forecast(city=city, high=21)


@tool
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"hello {name}"


@tool
def chatty(name: str) -> str:
    """Greet someone, printing to stdout on the way (the server keeps stdout for the protocol)."""
    print(f"debug: greeting {name}")
    return f"hello {name}"


@tool
def reserve(seat: str) -> str:
    """Reserve a seat on the flight."""
    raise Failure(kind=FailureKind.FAILED, output="the flight is full", cause=RuntimeError(SECRET))


@tool
def connect(host: str) -> str:
    """Connect to a database host."""
    raise ConnectionError(f"login failed for {host} with password {SECRET}")


@tool
def count(steps: int) -> str:
    """Count up, reporting each step (a sync tool: it reports from a worker thread)."""
    for step in range(1, steps + 1):
        report_progress(Progress(step, steps, f"step {step}"))
        report_progress(Progress(step, steps, "repeated"))  # does not advance: never sent
    return f"counted to {steps}"


@tool
async def count_async(steps: int) -> str:
    """Count up, reporting each step (an async tool: it reports from the event loop)."""
    for step in range(1, steps + 1):
        report_progress(Progress(step, 0, ""))
    return f"counted to {steps}"


@tool
async def nap(seconds: float) -> str:
    """Sleep, then say so: a call still running when the client closes its input."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}s"


@tool
async def cancel_itself(why: str) -> str:
    """Raise CancelledError though nobody cancelled the call (an async tool)."""
    raise asyncio.CancelledError(why)


@tool
def cancel_in_thread(why: str) -> str:
    """Raise CancelledError from a worker thread (a sync tool)."""
    raise asyncio.CancelledError(why)


@tool
def interrupt(why: str) -> str:
    """Raise KeyboardInterrupt from a worker thread (a sync tool)."""
    raise KeyboardInterrupt(why)


@tool
async def interrupt_async(why: str) -> str:
    """Raise KeyboardInterrupt in the event loop (an async tool)."""
    raise KeyboardInterrupt(why)


@tool
def leave(code: int) -> str:
    """Call sys.exit from a worker thread (a sync tool)."""
    sys.exit(code)


@tool
async def leave_async(code: int) -> str:
    """Call sys.exit in the event loop (an async tool)."""
    sys.exit(code)


HOSTILE = {
    "cancel_itself": {"why": SECRET},
    "cancel_in_thread": {"why": SECRET},
    "interrupt": {"why": SECRET},
    "interrupt_async": {"why": SECRET},
    "leave": {"code": 3},
    "leave_async": {"code": 0},
}
"""The tools that raise past `Exception`, and their arguments."""


class Asker:
    """A tool that asks for input with one response schema, then shows what it was given."""

    def __init__(self, name: str, prompt: Any, schema: dict[str, Any] | bool, *, forever: bool = False) -> None:
        self.name, self.prompt, self.schema, self.forever = name, prompt, schema, forever

    def definition(self) -> Definition:
        return Definition(
            name=self.name,
            description=f"Ask for input ({self.name}).",
            input_schema={
                "type": "object",
                "properties": {"item": {"type": "string"}},
                "required": ["item"],
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        item = json.loads(invocation.arguments)["item"]
        continuation = invocation.continuation
        if continuation is None or self.forever:
            return Result(
                input_request=InputRequest(
                    prompt=self.prompt, response_schema=self.schema, continuation_state={"item": item}
                )
            )
        seen = {"answer": continuation.response, "state": continuation.state, "item": item}
        return Result(output=Output.from_text(json.dumps(seen, sort_keys=True)))


PROFILE_SCHEMA = {
    "type": "object",
    "title": "Profile",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Email"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "plan": {"type": "string", "enum": ["free", "pro"]},
    },
    "required": ["email", "plan"],
    "additionalProperties": False,
}

registry = Registry(
    add,
    forecast,
    greet,
    chatty,
    reserve,
    connect,
    count,
    count_async,
    nap,
    cancel_itself,
    cancel_in_thread,
    interrupt,
    interrupt_async,
    leave,
    leave_async,
    Asker("approve", "Approve the transfer?", {"type": "boolean", "title": "Approve"}),
    Asker("profile", {"ask": "your profile"}, PROFILE_SCHEMA),
    Asker("upload", "Paste the key", {"type": "string", "pattern": "^[A-Z]+$"}),
    Asker("nag", "Again?", {"type": "boolean"}, forever=True),
)

if __name__ == "__main__":
    run_stdio(registry, name="fixture-tools")
