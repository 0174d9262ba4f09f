"""Tools every integration test runs through its framework's own agent loop (the fixtures are in conftest)."""

from __future__ import annotations

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

SECRET = "pw-9d81c"


class Log:
    """What the tool bodies ran with, in order."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, Any]] = []


class Transfer(BaseModel):
    """Move money."""

    to: str
    cents: int


def make_registry(log: Log) -> Registry:
    """A SAFE add, a tool leaking a secret in its error, a Failure, a refused Guard and an input request."""

    @tool(effect=Effect.SAFE)
    def add(a: int, b: int = 1) -> int:
        """Add two integers."""
        log.runs.append(("add", (a, b)))
        return a + b

    @tool
    def connect() -> str:
        """Connect."""
        log.runs.append(("connect", None))
        raise RuntimeError(f"login failed for admin:{SECRET}")

    @tool
    def refund(order: str) -> str:
        """Refund an order."""
        log.runs.append(("refund", order))
        raise Failure(kind=FailureKind.FAILED, output="already refunded", cause=LookupError(SECRET))

    @tool
    def wipe(user: str) -> str:
        """Delete a user."""
        log.runs.append(("wipe", user))
        return "wiped"

    class TransferTool:
        signature = Signature(Transfer, str)

        def definition(self) -> Definition:
            return self.signature.definition("transfer", "Move money after approval.", effect=Effect.IDEMPOTENT)

        def input_validator(self) -> InputDecoder[Transfer]:
            return self.signature.input_validator()

        async def call(self, invocation: Invocation) -> Result:
            transfer = self.signature.decode(invocation)
            if invocation.continuation is None:
                log.runs.append(("asked", invocation.idempotency_key))
                return Result(
                    input_request=InputRequest(prompt=f"send {transfer.cents}?", response_schema={"type": "boolean"})
                )
            log.runs.append(
                ("transfer", (transfer.cents, invocation.continuation.response, invocation.idempotency_key))
            )
            if invocation.continuation.response is not True:
                return Result(output=Output.from_text("declined"))
            return Result(output=self.signature.encode(f"sent {transfer.cents}"))

    return Registry(add, connect, refund, bind(wipe, Guard(lambda _: False)), TransferTool())
