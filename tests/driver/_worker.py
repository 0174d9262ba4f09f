"""A worker process for the durability tests: drives calls on a DBOS database, with tools that log effects.

Usage::

    python _worker.py URL LOG EXECUTOR run RUN_ID CALLS_JSON [--after-waiting=hang]
    python _worker.py URL LOG EXECUTOR answer KEY RESPONSE_JSON

``run`` logs ``ready EXECUTOR`` once DBOS is up, then prints one JSON line: the turn's results (status,
key, model-visible text). With ``--after-waiting=hang`` it then blocks forever, so the parent can kill
it during the input wait. ``answer`` prints ``true`` or ``false``. Tools append lines to LOG, flushed at once:

* ``write`` (no effect promise): ``write <text>``, then blocks while the file LOG.hold exists;
* ``charge`` (IDEMPOTENT): ``attempt <key>``, then ``charge <key>`` unless that line is already there
  (the external system deduplicates on the key), then blocks while LOG.hold exists;
* ``approve`` (no effect promise): asks for a boolean first; approved, it logs ``approved <key>``;
* ``remove`` (a ``@tool(approval=...)`` function taking a `CallContext` of the registry's deps, the log):
  asks a person first; approved, it logs ``removed <path> <key>``.

While the file LOG.barrier exists, every tool first waits for LOG.go, so two workers reach their
calls at the same moment.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from pydantic import BaseModel

from scopetool import (
    CallContext,
    Definition,
    Effect,
    InputDecoder,
    InputRequest,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    Signature,
    tool,
)
from scopetool.driver import Driver
from scopetool.driver.dbos import DbosBackend
from scopetool.providers import ToolCall, outcome_output


class Text(BaseModel):
    """Some text."""

    text: str


class Amount(BaseModel):
    """An amount in cents."""

    cents: int


class Logged:
    """A tool that logs what it does to the shared effect log."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def append(self, line: str) -> None:
        with self.log.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
            file.flush()

    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []

    def hold(self) -> None:
        while self.log.with_suffix(".hold").exists():
            time.sleep(0.01)

    def barrier(self) -> None:
        if self.log.with_suffix(".barrier").exists():
            while not self.log.with_suffix(".go").exists():
                time.sleep(0.005)
            time.sleep(0.02)  # long enough for both workers to reach every call at once


class Write(Logged):
    signature = Signature(Text, str)

    def definition(self) -> Definition:
        return self.signature.definition("write", "Write a line (no replay promise).")

    def input_validator(self) -> InputDecoder[Text]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        text = self.signature.decode(invocation).text
        await asyncio.to_thread(self.barrier)
        self.append(f"write {text}")
        await asyncio.to_thread(self.hold)
        return Result(output=self.signature.encode(f"wrote {text}"))


class Charge(Logged):
    signature = Signature(Amount, str)

    def definition(self) -> Definition:
        return self.signature.definition("charge", "Charge an amount once per call.", effect=Effect.IDEMPOTENT)

    def input_validator(self) -> InputDecoder[Amount]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        cents = self.signature.decode(invocation).cents
        key = invocation.idempotency_key
        await asyncio.to_thread(self.barrier)
        self.append(f"attempt {key}")
        if f"charge {key}" not in self.lines():
            self.append(f"charge {key}")
        await asyncio.to_thread(self.hold)
        return Result(output=self.signature.encode(f"charged {cents}"))


class Approve(Logged):
    signature = Signature(Text, str)

    def definition(self) -> Definition:
        return self.signature.definition("approve", "Do something once a person approves it.")

    def input_validator(self) -> InputDecoder[Text]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        text = self.signature.decode(invocation).text
        if invocation.continuation is None:
            return Result(input_request=InputRequest(prompt=f"approve {text}?", response_schema={"type": "boolean"}))
        if invocation.continuation.response is not True:
            return Result(output=Output.from_text("declined"))
        self.append(f"approved {invocation.idempotency_key}")
        return Result(output=Output.from_text(f"approved {text}"))


@tool(approval=lambda path: f"Remove {path}?")
def remove(ctx: CallContext[Logged], path: str) -> str:
    """Remove a path, once a person approves it."""
    ctx.deps.append(f"removed {path} {ctx.idempotency_key}")
    return f"removed {path}"


def registry(log: Path) -> Registry:
    return Registry(Write(log), Charge(log), Approve(log), remove, deps=Logged(log))


def summary(call: ToolCall, status: str, key: str, outcome: object) -> dict[str, object]:
    text = None
    if isinstance(outcome, Result | BaseException):
        output, error = outcome_output(call.name, outcome)
        text = ("error: " if error else "") + (output.text() or "")
    return {"id": call.id, "status": status, "key": key, "text": text}


async def run(driver: Driver, run_id: str, calls_json: str) -> list[dict[str, object]]:
    calls = [
        ToolCall(id=c["id"], request=Request(name=c["name"], arguments=c["arguments"])) for c in json.loads(calls_json)
    ]
    turn = await driver.run(run_id, calls)
    return [summary(r.call, r.status.value, r.key, r.outcome) for r in turn.results]


def main(argv: list[str]) -> None:
    url, log, executor, command, *rest = argv
    tools = registry(Path(log))
    with DbosBackend(tools, url, executor_id=executor, poll_interval=0.05) as backend:
        driver = Driver(tools, backend)
        if command == "run":
            run_id, calls_json, *flags = rest
            Logged(Path(log)).append(f"ready {executor}")
            print(json.dumps(asyncio.run(run(driver, run_id, calls_json))), flush=True)
            if "--after-waiting=hang" in flags:
                time.sleep(3600)
        else:
            key, response = rest
            print(json.dumps(asyncio.run(driver.answer(key, json.loads(response)))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
