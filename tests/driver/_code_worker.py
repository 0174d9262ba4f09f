"""A worker process for code mode's durability test: drives one code call on a DBOS database.

Usage::

    python _code_worker.py URL LOG RUN_ID CODE
    python _code_worker.py URL LOG --answer KEY RESPONSE_JSON

It logs ``ready`` once DBOS is up, then prints one JSON line: the code call's status, key, and model-visible
text (or prompt, when it waits for input); ``--answer`` prints ``true`` or ``false``. Tools append lines
to LOG, flushed at once: ``count`` (no effect promise) logs ``count <label>``, ``peek`` (SAFE) ``peek <label>``;
``ship`` (IDEMPOTENT) and ``write`` (no effect promise) log ``ship <label>`` or ``write <label>``, then
block while the file LOG.hold exists; ``approve`` (no effect promise) asks a yes or no first, then
logs ``approved <label>`` or ``declined <label>``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from scopetool import CallContext, Effect, IdempotencyKey, Registry, Request, bind, tool
from scopetool.code import code_tool
from scopetool.driver import Driver
from scopetool.driver.dbos import DbosBackend
from scopetool.providers import ToolCall, outcome_output


def main(url: str, log: Path, run_id: str, code: str, answer: str = "") -> None:
    def append(line: str) -> None:
        with log.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
            file.flush()

    @tool
    def count(label: str) -> str:
        """Count a label (no replay promise)."""
        append(f"count {label}")
        return f"counted {label}"

    @tool(effect=Effect.SAFE)
    async def peek(label: str) -> str:
        """Read a label (safe)."""
        append(f"peek {label}")
        return f"peeked {label}"

    @tool(effect=Effect.IDEMPOTENT)
    async def ship(label: str) -> str:
        """Ship a label (idempotent)."""
        append(f"ship {label}")
        while log.with_suffix(".hold").exists():
            await asyncio.sleep(0.01)
        return f"shipped {label}"

    @tool
    async def write(label: str) -> str:
        """Write a label (no replay promise)."""
        append(f"write {label}")
        while log.with_suffix(".hold").exists():
            await asyncio.sleep(0.01)
        return f"wrote {label}"

    @tool
    def approve(ctx: CallContext, label: str) -> str:
        """Act on a label once a person approves it."""
        verdict = "approved" if ctx.ask(f"approve {label}?", bool) else "declined"
        append(f"{verdict} {label}")
        return f"{verdict} {label}"

    bindings = [bind(count), bind(peek), bind(ship), bind(write), bind(approve)]
    registry = Registry(*bindings)  # the backend recovers calls with the very bindings the code tool calls
    with DbosBackend(registry, url, poll_interval=0.05) as backend:
        registry.register(code_tool(Registry(*bindings), backend=backend))
        append("ready")
        driver = Driver(registry, backend)
        if run_id == "--answer":
            print(json.dumps(asyncio.run(driver.answer(IdempotencyKey(code), json.loads(answer)))), flush=True)
            return
        call = ToolCall(id="code-1", request=Request(name="run_code", arguments=json.dumps({"code": code})))
        (result,) = asyncio.run(driver.run(run_id, [call])).results
        if result.request is not None:
            text, error = result.request.prompt, False
        else:
            assert result.outcome is not None
            output, error = outcome_output("run_code", result.outcome)
            text = output.text()
        print(json.dumps({"status": result.status.value, "key": result.key, "error": error, "text": text}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), *sys.argv[3:])
