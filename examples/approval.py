"""An approval flow in one line: the call asks a person first, the request is persisted, answered later,
and the same call resumes with the answer.

``@tool(approval=...)`` stops every call before the function runs and asks a person, with a prompt built
from the admitted arguments (the model never sees it). The function takes a `CallContext` for the
call's idempotency key and the application's deps (here, the ledger it changes). Tools that need their
own checkpoint or several questions are in the docs (input requests; `CallContext.ask`).

Run it with ``python examples/approval.py``.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from scopetool import Admission, CallContext, IdempotencyKey, InputRequest, Registry, Request, tool


@tool(approval=lambda to_account, cents: f"Send {cents / 100:.2f} to {to_account}?")
def transfer(ctx: CallContext[dict[str, int]], to_account: str, cents: int) -> str:
    """Move money to an account, after a person approves it."""
    ctx.deps.setdefault(ctx.idempotency_key or "", cents)  # the ledger deduplicates on the call's key
    return f"sent {cents} cents to {to_account}"


async def main() -> None:
    """Drive one call through its approval, persisted to disk between the two attempts."""
    ledger: dict[str, int] = {}  # the external system the tool changes: the registry's deps
    binding = Registry(transfer, deps=ledger).resolve("transfer")
    assert binding is not None
    request = Request(name="transfer", arguments='{"to_account": "ACME-7", "cents": 1250}')
    key = IdempotencyKey("run-1/call-1")

    first = await binding.call(binding.contract.prepare(request, Admission(idempotency_key=key)))
    assert first.input_request is not None and not ledger  # asked; nothing sent yet
    store = Path(tempfile.mkdtemp()) / "pending.json"
    store.write_bytes(first.input_request.to_json())
    print("persisted:", store.read_text())

    # Later, perhaps in another process: load the request, show the prompt, record the answer.
    pending = InputRequest.from_json(store.read_bytes())
    print("asking a person:", pending.prompt)
    continuation = pending.continuation(True)

    resumed = await binding.call(
        binding.contract.prepare(request, Admission(idempotency_key=key, continuation=continuation))
    )
    binding.contract.validate_result(resumed)
    print("result:", resumed.output.text())
    print("ledger:", json.dumps(ledger))


if __name__ == "__main__":
    asyncio.run(main())
