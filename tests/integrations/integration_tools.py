"""The tools every framework integration test runs: one per hostile case, each noting when it ran."""

from __future__ import annotations

import json

from scopetool import (
    Authorization,
    Definition,
    Failure,
    FailureKind,
    Guard,
    InputRequest,
    Invocation,
    Output,
    Registry,
    Result,
    bind,
    tool,
)

SECRET = "hunter2-db-password"
"""A secret carried by errors: it must never reach the model."""

RAN: list[str] = []
"""The tools that ran, with their admitted arguments, in order (cleared by each test)."""


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    RAN.append(f"add {a} {b}")
    return a + b


@tool
def leaky(account: str) -> str:
    """Look an account up (and fail with a secret in the error)."""
    RAN.append(f"leaky {account}")
    raise RuntimeError(f"cannot connect with password {SECRET}")


@tool
def rate(base: str, quote: str) -> float:
    """An exchange rate (a Failure: the output is public, the cause private)."""
    RAN.append(f"rate {base}/{quote}")
    raise Failure(kind=FailureKind.FAILED, output=f"no rate for {base}/{quote}", cause=RuntimeError(SECRET))


@tool
def transfer(cents: int) -> str:
    """Move money (the Guard refuses every call)."""
    RAN.append(f"transfer {cents}")
    return "moved"


def refuse(authorization: Authorization) -> bool:
    """A policy that permits nothing."""
    return False


class Refund:
    """Asks a person before refunding; the answer arrives later, as a continuation."""

    def definition(self) -> Definition:
        return Definition(
            name="refund",
            description="Refund an order, once a person approves.",
            input_schema={
                "type": "object",
                "properties": {"order": {"type": "string"}},
                "required": ["order"],
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        order = json.loads(invocation.arguments)["order"]
        if invocation.continuation is None:
            RAN.append(f"refund {order} asked")
            return Result(input_request=InputRequest(prompt=f"Refund {order}?", response_schema={"type": "boolean"}))
        approved = invocation.continuation.response is True
        RAN.append(f"refund {order} {'approved' if approved else 'refused'}")
        return Result(output=Output.from_text(f"refunded {order}" if approved else "the refund was not approved"))


def registry() -> Registry:
    """A fresh registry of every hostile-case tool."""
    return Registry(add, leaky, rate, bind(transfer, Guard(refuse)), Refund())
