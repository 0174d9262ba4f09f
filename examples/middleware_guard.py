"""Middleware and a Guard: log every call, and let a policy decide which calls may run.

Run it with ``python examples/middleware_guard.py``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json

from scopetool import (
    Authorization,
    Caller,
    Effect,
    Guard,
    Invocation,
    Registry,
    Request,
    Result,
    bind,
    classify_failure,
    tool,
)

USER: contextvars.ContextVar[str] = contextvars.ContextVar("user")  # identity stays with the caller
LOG: list[str] = []


async def audit(invocation: Invocation, call_next: Caller) -> Result:
    """A middleware: it may reject by raising, or forward the same invocation once."""
    LOG.append(f"{USER.get()} -> {invocation.name}")
    result = await call_next(invocation)
    LOG.append(f"{invocation.name} done")
    return result


def policy(authorization: Authorization) -> bool:
    """Admins may refund anything; others at most 50 (the policy sees the admitted arguments only)."""
    amount = json.loads(authorization.arguments)["amount"]
    return USER.get() == "admin" or amount <= 50


@tool(effect=Effect.IDEMPOTENT)
def refund(order: str, amount: int) -> str:
    """Refund part of an order."""
    return f"refunded {amount} on {order}"


async def main() -> None:
    """Two users try the same refund; the guard lets one through."""
    registry = Registry(bind(refund, audit, Guard(policy)))  # audit runs first, then the guard
    binding = registry.resolve("refund")
    assert binding is not None
    for user in ("admin", "guest"):
        USER.set(user)
        invocation = binding.contract.prepare(Request(name="refund", arguments='{"order": "A-7", "amount": 80}'))
        try:
            print(user, "->", (await binding.call(invocation)).output.text())
        except Exception as error:  # noqa: BLE001 - a refusal is a Failure with a public output
            failure = classify_failure(error)
            print(user, "->", failure.output.text() if failure else "error")
    print("log:", LOG)


if __name__ == "__main__":
    asyncio.run(main())
