"""Cold starts: how long a fresh process takes to do the first useful thing, against its baseline.

* ``scopetool definitions tools.py:add`` (a fresh ``python -m scopetool``: start-up, the command, the
  user's module and its one tool, the JSON printed) against ``python -c "import pydantic"``; beside
  them, ``python -c "import tools"`` (the user's module alone: what any program using the tool pays).
* ``scopetool serve tools.py:registry`` over stdio, from the process's start to its answer to the
  first ``tools/list`` (initialize, initialized and tools/list are written at once), against a server
  built with the MCP SDK's ``MCPServer`` serving the same tool in the same way.

Each command runs once first (so bytecode is written and files are cached), then in ``--rounds``
interleaved rounds; the medians are reported. The children run with bytecode writing allowed, as a
user's install has it.

    python benchmarks/cold_start.py            # 21 rounds
    python benchmarks/cold_start.py --quick    # a smoke run (CI): 3 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOOLS = '''
from scopetool import Registry, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


registry = Registry(add)
'''

MCP_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("calculator")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


server.run("stdio")
'''

_REQUESTS = b"".join(
    json.dumps(message, separators=(",", ":")).encode() + b"\n"
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "cold-start", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
)


def _environment(folder: Path) -> dict[str, str]:
    """The children's environment: this one, with bytecode writing allowed (a user's install has its .pyc files)."""
    environment = dict(os.environ)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    here = str(Path(__file__).resolve().parent.parent)
    environment["PYTHONPATH"] = os.pathsep.join(p for p in (here, environment.get("PYTHONPATH", "")) if p)
    environment["PWD"] = str(folder)
    return environment


def _run(command: list[str], folder: Path, environment: dict[str, str]) -> float:
    """Seconds from the start of `command` to its end (its output discarded)."""
    start = time.perf_counter()
    subprocess.run(command, cwd=folder, env=environment, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _first_list(command: list[str], folder: Path, environment: dict[str, str]) -> float:
    """Seconds from the start of the server `command` to its answer to the first tools/list."""
    start = time.perf_counter()
    with subprocess.Popen(
        command, cwd=folder, env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(_REQUESTS)
        server.stdin.flush()
        while True:
            line = server.stdout.readline()
            if not line:
                raise RuntimeError(f"{command} ended before it answered tools/list")
            answer = json.loads(line)
            if answer.get("id") == 2:
                elapsed = time.perf_counter() - start
                if [tool["name"] for tool in answer["result"]["tools"]] != ["add"]:
                    raise RuntimeError(f"{command} listed {answer['result']['tools']}")
                break
        server.stdin.close()
        server.wait(timeout=60)
    return elapsed


def _has_mcp() -> bool:
    try:
        import mcp.server.mcpserver  # noqa: F401 - only to know whether the peer can run
    except ImportError:
        return False
    return True


def measure(rounds: int) -> dict[str, Any]:
    """The median seconds of every command (interleaved rounds, after one warm-up run each), JSON-ready."""
    python = sys.executable
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        (folder / "tools.py").write_text(TOOLS, encoding="utf-8")
        (folder / "mcpserver_add.py").write_text(MCP_SERVER, encoding="utf-8")
        environment = _environment(folder)
        runners: dict[str, Callable[[], float]] = {
            "import pydantic": lambda: _run([python, "-c", "import pydantic"], folder, environment),
            "import tools": lambda: _run([python, "-c", "import tools"], folder, environment),
            "scopetool definitions": lambda: _run(
                [python, "-m", "scopetool", "definitions", "tools.py:add"], folder, environment
            ),
        }
        notes = []
        if _has_mcp():
            runners["scopetool serve"] = lambda: _first_list(
                [python, "-m", "scopetool", "serve", "tools.py:registry"], folder, environment
            )
            runners["MCPServer"] = lambda: _first_list([python, "mcpserver_add.py"], folder, environment)
        else:
            notes.append("the serve rows were skipped: the MCP SDK is not installed (pip install 'scopetool[mcp]')")
        for runner in runners.values():
            runner()  # warm-up: bytecode written, files cached
        times: dict[str, list[float]] = {name: [] for name in runners}
        for _ in range(rounds):
            for name, runner in runners.items():
                times[name].append(runner())
    return {
        "rounds": rounds,
        "seconds": {name: statistics.median(values) for name, values in times.items()},
        "notes": notes,
    }


def table(figures: dict[str, Any]) -> list[str]:
    """Markdown: each command's median time and its ratio to its baseline."""
    seconds = figures["seconds"]
    rows = [
        ('`python -c "import pydantic"`', "import pydantic", "import pydantic"),
        ('`python -c "import tools"` (the user\'s module alone)', "import tools", "import pydantic"),
        ("`scopetool definitions tools.py:add`", "scopetool definitions", "import pydantic"),
        ("`MCPServer` (MCP SDK) to its first `tools/list` answer", "MCPServer", "MCPServer"),
        ("`scopetool serve` to its first `tools/list` answer", "scopetool serve", "MCPServer"),
    ]
    lines = ["| command | median ms | ratio to its baseline |", "|---|---:|---:|"]
    for label, key, base in rows:
        if key in seconds and base in seconds:
            lines.append(f"| {label} | {seconds[key] * 1000:.0f} | {seconds[key] / seconds[base]:.2f}x |")
    lines.extend(f"\n{note}" for note in figures["notes"])
    return lines


def targets(figures: dict[str, Any]) -> list[tuple[str, float, float]]:
    """The cold-start targets: (what, measured ratio, the most it may be)."""
    seconds = figures["seconds"]
    found = [
        (
            '`scopetool definitions` at most 1.5x `python -c "import pydantic"`',
            seconds["scopetool definitions"] / seconds["import pydantic"],
            1.5,
        )
    ]
    if "scopetool serve" in seconds:
        found.append(
            (
                "`scopetool serve` to its first `tools/list` no slower than `MCPServer`",
                seconds["scopetool serve"] / seconds["MCPServer"],
                1.0,
            )
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 rounds")
    parser.add_argument("--rounds", type=int, default=21)
    options = parser.parse_args()
    figures = measure(3 if options.quick else options.rounds)
    print(f"cold starts: median of {figures['rounds']} interleaved rounds, fresh processes")
    print(f"python {platform.python_version()}, {platform.machine()}, {platform.system()}")
    print()
    print("\n".join(table(figures)))
    print()
    for what, value, limit in targets(figures):
        print(f"- {what}: {value:.2f}x ({'met' if value <= limit else 'not met'})")


if __name__ == "__main__":
    main()
