"""What an upstream's tool list changes cost the gateway, at its default settings (``relistInterval`` 1 s).

``scopetool proxy CONFIG --http`` runs as a child process, in front of tests/mcp_tests/changing_server.py
(the MCP SDK's own server, whose tools change when its control tools are called, on a 2025 session);
the official MCP client speaks to the gateway over a 2025 HTTP session and counts the
``notifications/tools/list_changed`` it is told. Measured:

- the time from a client's call that adds an upstream tool to the gateway's notice of it (the upstream
  says its tools changed, the gateway re-lists, builds and swaps its served set, tells the client),
  each change made once the last re-list's interval has passed;
- a flood: the upstream says its tools changed without end (a burst, then bursts every 0.1 s), with
  nothing changed: how many times the gateway re-listed, what CPU time it spent and how its resident
  memory moved (read from /proc, Linux), and how many notices its client got.

    python benchmarks/list_changes.py           # full run: prints the figures, writes them into docs/mcp-gateway.md
    python benchmarks/list_changes.py --quick   # a smoke run (CI): fewer changes, a shorter flood, no docs
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import harness
from mcp import Client, types

from scopetool.mcp.client import RELIST_INTERVAL

ROOT = harness.ROOT
CHANGING = ROOT / "tests" / "mcp_tests" / "changing_server.py"
PAGE = harness.Page(
    harness.DOCS / "mcp-gateway.md",
    "<!-- benchmarks/list_changes.py writes from here -->",
    "<!-- to here -->",
)


class Gateway:
    """``scopetool proxy CONFIG --http 127.0.0.1:0`` as a child process: its URL, CPU time and memory."""

    def __init__(self, folder: Path) -> None:
        env = {"PYTHONPATH": os.pathsep.join(sys.path)}
        upstream = {"command": sys.executable, "args": [str(CHANGING), "legacy"], "env": env}
        (folder / "gateway.json").write_text(json.dumps({"mcpServers": {"up": upstream}}))
        command = [sys.executable, "-m", "scopetool", "proxy", str(folder / "gateway.json"), "--http", "127.0.0.1:0"]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    def url(self) -> str:
        """The gateway's endpoint, once it said it (within 30 s)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for line in self.lines:
                if " at http://" in line:
                    return line.split(" at ")[-1].split()[0]
            time.sleep(0.05)
        raise SystemExit("the gateway did not start within 30 s:\n" + "".join(self.lines))

    def cpu_seconds(self) -> float:
        """User and system CPU time of the gateway process so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        """The gateway process's resident memory."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        """End the gateway (and, with it, its upstream)."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Notices:
    """The client's count of ``notifications/tools/list_changed``."""

    def __init__(self) -> None:
        self.count = 0

    async def __call__(self, message: object) -> None:
        """Count one notice."""
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1


def number(result: types.CallToolResult) -> int:
    """The integer a control tool answered with."""
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return int(block.text)


async def measure(url: str, gateway: Gateway, changes: int, flood_seconds: float) -> dict[str, Any]:
    """The figures of one run (see the module)."""
    notices = Notices()
    latencies: list[float] = []
    async with Client(url, mode="legacy", message_handler=notices) as client:
        for index in range(changes):
            await anyio.sleep(RELIST_INTERVAL + 0.1)  # the last re-list's interval is over
            seen, started = notices.count, time.perf_counter()
            await client.call_tool("add", {"name": f"tool_{index}"})
            with anyio.fail_after(30):
                while notices.count == seen:
                    await anyio.sleep(0.001)
            latencies.append(time.perf_counter() - started)
        await anyio.sleep(RELIST_INTERVAL + 0.1)
        listed, told = number(await client.call_tool("listings", {})), notices.count
        cpu, rss = gateway.cpu_seconds(), gateway.rss_mib()
        said = 0
        started = time.monotonic()
        await client.call_tool("flood", {"count": 10_000})
        said += 10_000
        while time.monotonic() - started < flood_seconds:
            await client.call_tool("flood", {"count": 100})
            said += 100
            await anyio.sleep(0.1)
        elapsed = time.monotonic() - started
        await anyio.sleep(RELIST_INTERVAL + 0.5)  # the last re-list of the flood is made
        relisted = number(await client.call_tool("listings", {})) - listed - 1  # this call's own listing is not one
        return {
            "latencies": latencies,
            "said": said,
            "seconds": elapsed,
            "relisted": relisted,
            "cpu": gateway.cpu_seconds() - cpu,
            "rss_before": rss,
            "rss_after": gateway.rss_mib(),
            "told": notices.count - told,
        }


def report(options: harness.Options) -> str:
    """Run the gateway, measure, and say it as the doc page shows it."""
    changes, flood_seconds = (3, 2.0) if options.quick else (15, 20.0)
    with tempfile.TemporaryDirectory() as folder:
        gateway = Gateway(Path(folder))
        try:
            found = anyio.run(measure, gateway.url(), gateway, changes, flood_seconds)
        finally:
            gateway.stop()
    latencies = sorted(found["latencies"])
    bound = found["seconds"] / RELIST_INTERVAL + 2
    how = (
        f"The gateway at its defaults (`relistInterval` {RELIST_INTERVAL:g} s), its upstream on stdio, its client "
        "on a 2025 HTTP session, all on this machine."
    )
    return "\n".join(
        [
            harness.header(options, "mcp", how=how),
            "",
            "| what | figure |",
            "|---|---|",
            f"| an upstream tool added, until the gateway's client is told (median of {len(latencies)}) | "
            f"{statistics.median(latencies) * 1000:.0f} ms (slowest {latencies[-1] * 1000:.0f} ms) |",
            f"| a flood: announcements the upstream made, in {found['seconds']:.1f} s | {found['said']:,} |",
            f"| re-lists the gateway made of it (at most {bound:.0f}: one per interval, and the last) | "
            f"{found['relisted']} |",
            f"| the gateway's CPU time over the flood | {found['cpu']:.2f} s |",
            f"| the gateway's resident memory before and after it | {found['rss_before']:.0f} MiB, "
            f"{found['rss_after']:.0f} MiB |",
            f"| notices its client got (nothing it serves changed) | {found['told']} |",
        ]
    )


def main() -> None:
    """Measure and publish (see the module)."""
    harness.run(__doc__, report, PAGE)


if __name__ == "__main__":
    main()
