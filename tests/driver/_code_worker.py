"""A worker process for code mode's durability test: drives one code call on a DBOS database.

Usage::

    python _code_worker.py URL LOG RUN_ID CODE

It logs ``ready`` once DBOS is up, then prints one JSON line: the code call's status and model-visible
text. Tools append lines to LOG, flushed at once: ``count`` (no effect promise) logs ``count <label>``;
``ship`` (IDEMPOTENT) and ``write`` (no effect promise) log ``ship <label>`` or ``write <label>``, then
block while the file LOG.hold exists.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from scopetool import Effect, Registry, Request, bind, tool
from scopetool.code import code_tool
from scopetool.driver import Driver
from scopetool.driver.dbos import DbosBackend
from scopetool.providers import ToolCall, outcome_output


def main(url: str, log: Path, run_id: str, code: str) -> None:
    def append(line: str) -> None:
        with log.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
            file.flush()

    @tool
    def count(label: str) -> str:
        """Count a label (no replay promise)."""
        append(f"count {label}")
        return f"counted {label}"

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

    bindings = [bind(count), bind(ship), bind(write)]
    registry = Registry(*bindings)  # the backend recovers calls with the very bindings the code tool calls
    with DbosBackend(registry, url, poll_interval=0.05) as backend:
        registry.register(code_tool(Registry(*bindings), backend=backend))
        append("ready")
        call = ToolCall(id="code-1", request=Request(name="run_code", arguments=json.dumps({"code": code})))
        turn = asyncio.run(Driver(registry, backend).run(run_id, [call]))
        (result,) = turn.results
        assert result.outcome is not None
        output, error = outcome_output("run_code", result.outcome)
        print(json.dumps({"status": result.status.value, "error": error, "text": output.text()}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4])
