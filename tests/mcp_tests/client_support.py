"""What the MCP client tests share: one event loop in a thread holding each connection, and the recorder.

A connection (`scopetool.mcp.client.connect`) is entered and left in one task; an anyio blocking
portal runs it, in a thread of its own, for a whole test module, and each test runs its coroutines
there with ``portal.call``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal

from scopetool import Binding, Invocation, Registry, Request, Result
from scopetool.mcp.client import MCPClient, ServerSpec, StdioServer, connect
from scopetool.mcp.pins import PinFile

RECORDER = Path(__file__).with_name("recorder.py")
"""The script that copies what a client sends a stdio server to a log (see its docstring)."""


def recorded(log: Path, command: list[str]) -> StdioServer:
    """`command` run under the recorder, which logs every line the client sends it to `log`."""
    return StdioServer(command=sys.executable, args=(str(RECORDER), str(log), *command))


def sent(log: Path) -> list[dict[str, Any]]:
    """The JSON-RPC messages the client sent, as the recorder logged them."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def tool_calls(log: Path) -> list[dict[str, Any]]:
    """The ``tools/call`` requests among them."""
    return [message for message in sent(log) if message.get("method") == "tools/call"]


@dataclass
class Served:
    """One connected server of a test module, and where to run its coroutines."""

    client: MCPClient
    portal: BlockingPortal
    log: Path | None = None
    lock: Path | None = None

    @property
    def registry(self) -> Registry:
        """A registry of the server's accepted tools."""
        return Registry(*self.client.tools)

    def binding(self, name: str) -> Binding:
        """The bound tool `name`."""
        binding = self.registry.resolve(name)
        assert binding is not None, name
        return binding

    def call(self, name: str, arguments: str = "{}") -> Result:
        """Admit `arguments` for tool `name` and run the call on the server."""
        binding = self.binding(name)
        return self.run(binding, binding.contract.prepare(Request(name, arguments)))

    def run(self, binding: Binding, invocation: Invocation) -> Result:
        """Run one admitted invocation in the connection's event loop."""
        return self.portal.call(binding.call, invocation)


@contextmanager
def served(
    portal: BlockingPortal,
    spec: ServerSpec,
    *,
    name: str,
    log: Path | None = None,
    lock: Path | None = None,
    trusted: bool = False,
) -> Iterator[Served]:
    """Connect to `spec` inside `portal` for the ``with`` block."""
    with open(os.devnull, "w") as quiet:  # the servers standard error
        pins = None if lock is None else PinFile(lock)
        manager = connect(spec, name=name, pins=pins, trusted=trusted, errlog=quiet)
        with portal.wrap_async_context_manager(manager) as client:
            yield Served(client, portal, log, lock)
