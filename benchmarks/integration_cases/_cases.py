"""The hostile tool calls every framework integration is run on, and the tools they call.

Each `case_<framework>.py` module runs every case of `CASES` twice through its framework's own agent
loop: once on the framework's native tools, once on the same tools through scopetool, and reports
what ran and what the model was shown next. The tools here are scopetool's; each case module writes
the native twin of each in its framework's own idiom, recording its runs in the same `RAN` log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from scopetool import (
    Definition,
    Effect,
    Failure,
    FailureKind,
    Guard,
    InputDecoder,
    InputRequest,
    Invocation,
    Output,
    Registry,
    Result,
    Signature,
    bind,
    tool,
)

SECRET = "sk-live-7f3a"
"""The secret a failing tool's error carries: it must never reach the model."""
CONNECT_ERROR = f"cannot reach db://admin:{SECRET}@10.0.0.5"
REFUND_FAILURE = "order SO-1 was already refunded"
TRANSFER_PROMPT = "Send 12.50 to ACME?"


@dataclass(frozen=True)
class Case:
    """One hostile (or plain) call: what the model sends."""

    name: str
    tool: str
    arguments: str


CASES: tuple[Case, ...] = (
    Case("valid call", "add", '{"a": 2, "b": 3}'),
    Case("duplicate key", "add", '{"a": 2, "b": 3, "b": 30}'),
    Case("unknown field", "add", '{"a": 2, "b": 3, "admin": true}'),
    Case('coerced value ("5" for an int)', "add", '{"a": 2, "b": "5"}'),
    Case("secret in a tool error", "connect", "{}"),
    Case("Failure", "refund", '{"order": "SO-1"}'),
    Case("refused Guard", "delete_account", '{"user": "u-7"}'),
    Case("input request", "transfer", '{"to": "ACME", "cents": 1250}'),
)

RAN: list[str] = []
"""Every tool body that ran, native or scopetool, as ``name(arguments)``; the cases clear it."""


def ran(name: str, **arguments: Any) -> None:
    """Record that a tool body ran, with what it was given."""
    RAN.append(f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})")


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran("add", a=a, b=b)
    return a + b


@tool(effect=Effect.SAFE)
def connect() -> str:
    """Open a connection to the database."""
    ran("connect")
    raise RuntimeError(CONNECT_ERROR)


@tool
def refund(order: str) -> str:
    """Refund an order."""
    ran("refund", order=order)
    raise Failure(kind=FailureKind.FAILED, output=REFUND_FAILURE, cause=LookupError(order))


@tool
def delete_account(user: str) -> str:
    """Delete a user's account."""
    ran("delete_account", user=user)
    return f"deleted {user}"


class Transfer(BaseModel):
    """Move money to an account, after a person approves it."""

    to: str
    cents: int


class TransferTool:
    """Asks a person before it moves money, then resumes the same call."""

    signature = Signature(Transfer, str)

    def definition(self) -> Definition:
        return self.signature.definition("transfer", "Move money to an account, after a person approves it.")

    def input_validator(self) -> InputDecoder[Transfer]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        transfer = self.signature.decode(invocation)
        if invocation.continuation is None:
            return Result(input_request=InputRequest(prompt=TRANSFER_PROMPT, response_schema={"type": "boolean"}))
        if invocation.continuation.response is not True:
            return Result(output=Output.from_text("the transfer was declined"))
        ran("transfer", to=transfer.to, cents=transfer.cents, key=bool(invocation.idempotency_key))
        return Result(output=self.signature.encode(f"sent {transfer.cents} cents to {transfer.to}"))


def registry() -> Registry:
    """The scopetool tools of every case; the Guard refuses every call to ``delete_account``."""
    return Registry(add, connect, refund, bind(delete_account, Guard(lambda _: False)), TransferTool())


def outcome(seen: str | None, error: BaseException | None = None) -> str:
    """One table cell: which tool bodies ran (from `RAN`), then what the model was shown next (or the error)."""
    bodies = ", ".join(RAN) if RAN else "nothing"
    shown = f"the run failed: {type(error).__name__}: {error}" if error is not None else f"the model saw {seen!r}"
    RAN.clear()
    return f"ran {bodies}; {shown}"
