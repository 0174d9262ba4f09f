"""A durable approval flow: the question is asked in one process, answered after a restart in another.

A model asks to transfer money; the tool asks a person first. The first process drives the turn on
DBOS (SQLite, in a temporary folder), shows the question, and stops abruptly without answering, as a
crash or a deploy would stop it. The second process opens the same database, which recovers the
waiting call; it answers, and the same call resumes and moves the money exactly once.

Run it with ``python examples/durable_approval.py`` (needs ``pip install 'scopetool[dbos]'``).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel

from scopetool import Definition, Effect, InputDecoder, InputRequest, Invocation, Output, Registry, Result, Signature
from scopetool.driver import Driver, Turn
from scopetool.driver.dbos import DbosBackend
from scopetool.providers import openai_chat

RUN_ID = "conversation-1"
MODEL_MESSAGE = {  # the assistant message of an OpenAI Chat Completions response
    "role": "assistant",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "transfer", "arguments": '{"to_account": "ACME-7", "cents": 1250}'},
        }
    ],
}


class Transfer(BaseModel):
    """Move money between two accounts."""

    to_account: str
    cents: int


class TransferTool:
    """Asks for approval, then books the transfer in a ledger that deduplicates on the call's key."""

    signature = Signature(Transfer, str)

    def __init__(self, ledger: Path) -> None:
        self.ledger = ledger

    def definition(self) -> Definition:
        return self.signature.definition(
            "transfer", "Move money to an account, after a person approves it.", effect=Effect.IDEMPOTENT
        )

    def input_validator(self) -> InputDecoder[Transfer]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        transfer = self.signature.decode(invocation)
        if invocation.continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt=f"Send {transfer.cents / 100:.2f} to {transfer.to_account}?",
                    response_schema={"type": "boolean"},
                )
            )
        if invocation.continuation.response is not True:
            return Result(output=Output.from_text("the transfer was declined; nothing was sent"))
        # The external system deduplicates on the idempotency key: a replayed step books nothing twice.
        booked = json.loads(self.ledger.read_text()) if self.ledger.exists() else {}
        booked.setdefault(invocation.idempotency_key, {"to": transfer.to_account, "cents": transfer.cents})
        self.ledger.write_text(json.dumps(booked))
        return Result(output=self.signature.encode(f"sent {transfer.cents} cents to {transfer.to_account}"))


def show(turn: Turn) -> str:
    """The first call's state, in a line."""
    result = turn.results[0]
    if result.request is not None:
        return f"{result.status.value}: {result.request.prompt}"
    return f"{result.status.value}: {turn.messages(openai_chat)[0]}"


async def ask(driver: Driver) -> None:
    """Process 1: run the model's turn; the transfer waits for a person's answer."""
    turn = await driver.run(RUN_ID, openai_chat.parse_tool_calls(MODEL_MESSAGE))
    print("process 1:", show(turn))


async def answer(driver: Driver) -> None:
    """Process 2, after the restart: the call still waits; answer it, and the same call finishes."""
    calls = openai_chat.parse_tool_calls(MODEL_MESSAGE)
    turn = await driver.run(RUN_ID, calls)
    print("process 2: after the restart,", show(turn))
    key = turn.results[0].key
    print("process 2: a person approves:", await driver.answer(key, True))
    print("process 2: a second answer is ignored:", not await driver.answer(key, True))
    print("process 2:", show(await driver.run(RUN_ID, calls)))


def half(step: str, folder: Path) -> None:
    """Run one half of the flow in this process."""
    tools = Registry(TransferTool(folder / "ledger.json"))
    backend = DbosBackend(tools, f"sqlite:///{folder / 'calls.sqlite'}").open()
    driver = Driver(tools, backend)
    if step == "ask":
        asyncio.run(ask(driver))
        sys.stdout.flush()
        os._exit(0)  # stop abruptly, as a crash or a deploy would: the waiting call stays in the database
    asyncio.run(answer(driver))
    backend.close()


def main() -> None:
    """Run the two halves as two processes on one database, and show the ledger."""
    folder = Path(tempfile.mkdtemp(prefix="durable-approval-"))
    try:
        for step in ("ask", "answer"):
            subprocess.run([sys.executable, __file__, step, str(folder)], check=True)
        print("ledger:", (folder / "ledger.json").read_text())
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) == 3:
        half(sys.argv[1], Path(sys.argv[2]))
    else:
        main()
