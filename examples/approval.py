"""An approval flow: a tool asks for confirmation, the driver persists the request, answers it later,
and the same call resumes with the answer.

Run it with ``python examples/approval.py``.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from pydantic import BaseModel

from scopetool import (
    Admission,
    Definition,
    IdempotencyKey,
    InputDecoder,
    InputRequest,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    Signature,
)

LEDGER: dict[str, int] = {}  # the external system the tool changes


class Transfer(BaseModel):
    """Move money between two accounts."""

    to_account: str
    cents: int


class TransferTool:
    """A Tool around a Signature: it needs the call's continuation, so it is not a plain function."""

    signature = Signature(Transfer, str)

    def definition(self) -> Definition:
        return self.signature.definition("transfer", "Move money to an account, after a person approves it.")

    def input_validator(self) -> InputDecoder[Transfer]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        transfer = self.signature.decode(invocation)
        if invocation.continuation is None:
            # First attempt: ask before any external effect, keeping what re-entry needs.
            return Result(
                input_request=InputRequest(
                    prompt=f"Send {transfer.cents / 100:.2f} to {transfer.to_account}?",
                    response_schema={"type": "boolean"},
                    continuation_state={"to_account": transfer.to_account, "cents": transfer.cents},
                )
            )
        if invocation.continuation.response is not True:
            return Result(output=Output.from_text("the transfer was declined; nothing was sent"))
        key = invocation.idempotency_key or ""
        LEDGER.setdefault(key, transfer.cents)  # deduplicated on the call's idempotency key
        return Result(output=self.signature.encode(f"sent {transfer.cents} cents to {transfer.to_account}"))


async def main() -> None:
    """Drive one call through its input request, persisted to disk between the two attempts."""
    registry = Registry(TransferTool())
    binding = registry.resolve("transfer")
    assert binding is not None
    request = Request(name="transfer", arguments='{"to_account": "ACME-7", "cents": 1250}')
    key = IdempotencyKey("run-1/call-1")

    first = await binding.call(binding.contract.prepare(request, Admission(idempotency_key=key)))
    assert first.input_request is not None
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
    print("ledger:", json.dumps(LEDGER))


if __name__ == "__main__":
    asyncio.run(main())
