"""What a hostile HTTP client can hold of `serve_http`: idle sessions, and workers of sync calls left hanging.

Three figures, each against a server in a process of its own on a loopback port:

* ``session``: the memory (RSS) one idle 2025 session costs, from opening ``--sessions`` of them
  (initialize, then initialized) and dividing the growth of the server's RSS by their number;
* ``loop``: a client that opens sessions in a loop for ``--seconds``, against a server with
  ``--max-sessions`` and ``--idle`` seconds: how many it got, how many were refused (503), the
  server's RSS, and how long after the loop stops a new client is admitted;
* ``hung``: as many 2026-07-28 calls of a sync tool that hangs as the worker pool has threads, each
  client leaving after 0.2 s, then one call of ``add``: the seconds ``add`` waits.

    python benchmarks/http_edge.py                 # all three, printed
    python benchmarks/http_edge.py --quick         # small numbers (a smoke run)

Run it with ``PYTHONPATH`` naming the scopetool to measure (an older checkout gives the "before" figures:
the ``loop`` figure needs `HttpSettings`, the others do not).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Generator
from pathlib import Path

import httpx

SERVER = """
import sys, threading, time
from scopetool import Registry, tool
from scopetool.mcp import server

@tool
def hang() -> str:
    \"\"\"Hang for a while.\"\"\"
    time.sleep(float(sys.argv[1]))
    return "late"

@tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

options = {}
if len(sys.argv) > 2 and hasattr(server, "HttpSettings"):  # an older scopetool has no settings: its defaults
    options["settings"] = server.HttpSettings(max_sessions=int(sys.argv[2]), session_idle_timeout=float(sys.argv[3]))
server.run_http(Registry(hang, add), port=0, ready=lambda url: print(url, flush=True), **options)
"""
HERE = Path(__file__).resolve().parent
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


@contextlib.contextmanager
def server(*args: str) -> Generator[tuple[str, int]]:
    """The URL and process id of a server started with `args` (hang seconds, then max sessions and idle)."""
    command = [sys.executable, "-c", SERVER, *args]
    # run from this folder, so that the scopetool measured is PYTHONPATH's, not one in the working directory
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=HERE)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip(), process.pid
    finally:
        process.terminate()
        process.wait(30)


def rss_kib(pid: int) -> int:
    """The resident memory of process `pid`, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def open_session(client: httpx.Client, url: str) -> int:
    """Open one 2025 session; the initialize answer's status."""
    answer = client.post(url, json=INITIALIZE, headers=ACCEPT)
    if answer.status_code == 200:
        headers = {**ACCEPT, "mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
        client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return answer.status_code


def session_cost(sessions: int) -> str:
    """The memory one idle session costs."""
    with server("1", str(sessions + 50), "3600") as (url, pid), httpx.Client(timeout=30) as client:
        for _ in range(20):  # the first sessions warm caches up: not counted
            open_session(client, url)
        time.sleep(0.5)
        before = rss_kib(pid)
        for _ in range(sessions):
            open_session(client, url)
        time.sleep(0.5)
        after = rss_kib(pid)
    return f"session: {sessions} idle sessions grew the server's RSS by {(after - before) / sessions:.1f} KiB each"


def session_loop(seconds: float, max_sessions: int, idle: float) -> str:
    """What a client opening sessions in a loop gets, and how soon another client gets in after it stops."""
    with server("1", str(max_sessions), str(idle)) as (url, pid), httpx.Client(timeout=30) as client:
        statuses: list[int] = []
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            statuses.append(open_session(client, url))
        rss = rss_kib(pid)
        stopped = time.monotonic()
        while open_session(client, url) != 200 and time.monotonic() - stopped < 10 * idle:
            time.sleep(0.05)
        admitted = time.monotonic() - stopped
    return (
        f"loop: in {seconds:g} s a client opened {statuses.count(200)} sessions and was refused {statuses.count(503)} "
        f"times (max_sessions={max_sessions}, idle {idle:g} s); server RSS {rss / 1024:.0f} MiB; "
        f"a new client was admitted {admitted:.2f} s after the loop stopped"
    )


def hung_calls(hang: float) -> str:
    """How long `add` waits behind as many hanging sync calls as the pool has workers, their clients gone."""
    from scopetool._threads import MAX_THREADS

    def call(name: str, arguments: dict[str, int], timeout: float) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        body["params"]["_meta"] = META  # type: ignore[index]
        headers = {**ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name}
        return httpx.post(url, content=json.dumps(body), headers=headers, timeout=timeout)

    with server(str(hang)) as (url, _):
        for _ in range(MAX_THREADS):
            with contextlib.suppress(httpx.TimeoutException):
                call("hang", {}, 0.2)
        started = time.monotonic()
        call("add", {"a": 1, "b": 2}, 120).raise_for_status()
        waited = time.monotonic() - started
    return (
        f"hung: {MAX_THREADS} sync calls hanging {hang:g} s, their clients gone: an unrelated add waited {waited:.2f} s"
    )


def main() -> None:
    """Print the figures asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figures", nargs="*", help="session, loop and/or hung (default: all three)")
    parser.add_argument("--quick", action="store_true", help="small numbers: a smoke run")
    parser.add_argument("--sessions", type=int, default=500, help="idle sessions opened for the session figure")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the loop figure's client loops")
    parser.add_argument("--max-sessions", type=int, default=50, help="the loop figure's server's max_sessions")
    parser.add_argument("--idle", type=float, default=5.0, help="the loop figure's server's session_idle_timeout")
    parser.add_argument("--hang", type=float, default=10.0, help="seconds each hung call hangs")
    args = parser.parse_args()
    unknown = set(args.figures) - {"session", "loop", "hung"}
    if unknown:
        parser.error(f"unknown figure {sorted(unknown)[0]!r}: give session, loop or hung")
    args.figures = args.figures or ["session", "loop", "hung"]
    if args.quick:
        args.sessions, args.seconds, args.max_sessions, args.idle, args.hang = 20, 2.0, 5, 0.5, 2.0
    for figure in args.figures:
        if figure == "session":
            print(session_cost(args.sessions), flush=True)
        elif figure == "loop":
            print(session_loop(args.seconds, args.max_sessions, args.idle), flush=True)
        else:
            print(hung_calls(args.hang), flush=True)


if __name__ == "__main__":
    main()
