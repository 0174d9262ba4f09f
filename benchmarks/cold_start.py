"""Cold starts: how long a fresh process takes to do the first useful thing, against its baseline.

* ``scopetool definitions tools.py:add`` (a fresh ``python -m scopetool``: start-up, the command, the
  user's module and its one tool, the JSON printed) against ``python -c "import pydantic"``; beside
  them, ``python -c "import tools"`` (the user's module alone: what any program using the tool pays)
  and ``python -c "import pydantic_add"``, the same arguments as a plain pydantic model whose JSON
  Schema is printed: the floor any pydantic user pays for one model.
* Where the time goes: ``-X importtime`` of those commands (the least self time of each module over a
  few runs), the modules ``definitions`` loads beyond the floor grouped by package, the user's module
  body against the model's, and pydantic's plugin lookup (which every pydantic model pays once).
* ``scopetool serve tools.py:registry`` over stdio, from the process's start to its answer to the
  first ``tools/list`` (initialize, initialized and tools/list are written at once), against a server
  built with the MCP SDK's ``MCPServer`` serving the same tool in the same way.

Each command runs once first (so bytecode is written and files are cached), then in ``--rounds``
interleaved rounds (`harness.take_turns`); the medians are reported. The children run with bytecode
writing allowed, as a user's install has it.

    python benchmarks/cold_start.py            # 21 rounds
    python benchmarks/cold_start.py --quick    # a smoke run (CI): 3 rounds
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness

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

PYDANTIC_ADD = """
from pydantic import BaseModel


class Add(BaseModel):
    a: int
    b: int


print(Add.model_json_schema())
"""

_PLUGIN_LOOKUP = """
import time
import pydantic
from importlib.metadata import distributions, entry_points

start = time.perf_counter()
entry_points(group="pydantic")
print(time.perf_counter() - start, len(list(distributions())))
"""

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


_DEFINITIONS_LIMIT = 1.5
"""The target: `scopetool definitions` at most this many times `python -c "import pydantic"`."""


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
        (folder / "pydantic_add.py").write_text(PYDANTIC_ADD, encoding="utf-8")
        environment = _environment(folder)
        runners: dict[str, Callable[[], float]] = {
            "import pydantic": lambda: _run([python, "-c", "import pydantic"], folder, environment),
            "pydantic model": lambda: _run([python, "-c", "import pydantic_add"], folder, environment),
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
        times = harness.take_turns(runners, rounds)
        where = profile(folder, environment, 3 if rounds < 5 else 7)
    return {
        "rounds": rounds,
        "seconds": {name: statistics.median(values) for name, values in times.items()},
        "profile": where,
        "notes": notes,
    }


def _stderr(command: list[str], folder: Path, environment: dict[str, str]) -> str:
    """What `command`, run in `folder`, wrote to standard error (its standard output dropped)."""
    return subprocess.run(
        command,
        cwd=folder,
        env=environment,
        check=True,
        stdin=subprocess.DEVNULL,  # a server reads no request and ends
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ).stderr


def _importtime(
    command: list[str], folder: Path, environment: dict[str, str], runs: int
) -> tuple[dict[str, int], dict[str, int]]:
    """Each module's least self time and least cumulative time (µs) over `runs` runs of `command` under
    ``-X importtime``."""
    own: dict[str, int] = {}
    whole: dict[str, int] = {}
    for _ in range(runs):
        for line in _stderr([command[0], "-X", "importtime", *command[1:]], folder, environment).splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            alone, together, name = line.removeprefix("import time:").split("|")
            module = name.strip()
            own[module] = min(own.get(module, int(alone)), int(alone))
            whole[module] = min(whole.get(module, int(together)), int(together))
    return own, whole


def profile(folder: Path, environment: dict[str, str], runs: int) -> dict[str, Any]:
    """Where `definitions`' time goes beyond the pydantic model's, and `serve`'s beside `MCPServer`'s:
    ``-X importtime`` self times, in µs.

    ``definitions`` and ``serve`` load the user's module from its file, which ``-X importtime`` does not
    list, so the module's own body (decorating and binding its tool) is read from ``python -c "import tools"``.
    """
    python = sys.executable
    floor, floor_whole = _importtime([python, "-c", "import pydantic_add"], folder, environment, runs)
    tools, _ = _importtime([python, "-c", "import tools"], folder, environment, runs)
    command, _ = _importtime([python, "-m", "scopetool", "definitions", "tools.py:add"], folder, environment, runs)
    # -X importtime does not list every module the floor loads (pydantic.main, read through pydantic's
    # lazy attributes, may be missing), so the floor's modules are those its process holds at the end.
    held = _stderr(
        [python, "-c", "import pydantic_add, sys; print(*sys.modules, file=sys.stderr)"], folder, environment
    ).split()
    beyond = {module: us for module, us in command.items() if module not in floor and module not in held}
    lookups = []
    for _ in range(runs):
        done = subprocess.run(
            [python, "-c", _PLUGIN_LOOKUP], cwd=folder, env=environment, check=True, capture_output=True, text=True
        )
        seconds, distributions = done.stdout.split()
        lookups.append(float(seconds))
    return {
        "runs": runs,
        "beyond_floor": beyond,
        "floor_total": sum(floor.values()),
        "floor_body": floor.get("pydantic_add", 0),
        "tools_body": tools.get("tools", 0),
        "plugin_import": floor_whole.get("pydantic.plugin._loader", 0),
        "plugin_lookup": min(lookups) * 1e6,
        "distributions": int(distributions),
        "serve": _serve_imports(folder, environment, runs) if _has_mcp() else None,
    }


def _serve_imports(folder: Path, environment: dict[str, str], runs: int) -> dict[str, Any]:
    """The import self times (µs) of `serve` and `MCPServer`: the modules both load, and each one's own."""
    python = sys.executable
    serve, _ = _importtime([python, "-m", "scopetool", "serve", "tools.py:registry"], folder, environment, runs)
    sdk, _ = _importtime([python, "mcpserver_add.py"], folder, environment, runs)
    # As for the floor above: some modules the SDK loads through lazy attributes are not listed.
    held = _stderr(
        [python, "-c", "import mcp.server.mcpserver, sys; print(*sys.modules, file=sys.stderr)"], folder, environment
    ).split()
    return {
        "both": sum(min(us, sdk[module]) for module, us in serve.items() if module in sdk),
        "serve_only": {module: us for module, us in serve.items() if module not in sdk and module not in held},
        "mcpserver_only": {module: us for module, us in sdk.items() if module not in serve},
    }


def table(figures: dict[str, Any]) -> list[str]:
    """Markdown: each command's median time and its ratio to its baseline."""
    seconds = figures["seconds"]
    rows = [
        ('`python -c "import pydantic"`', "import pydantic", "import pydantic"),
        (
            '`python -c "import pydantic_add"` (the same arguments as a pydantic model, its schema printed)',
            "pydantic model",
            "import pydantic",
        ),
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
    lines.extend(f"\n{line}" for line in explain(figures))
    lines.extend(f"\n{line}" for line in explain_serve(figures))
    return lines


def _group(module: str) -> str:
    """The package a module's import time is counted under."""
    top = module.split(".", maxsplit=1)[0]
    if module.startswith(("scopetool.cli", "scopetool.mcp")):
        return "scopetool's CLI"
    if top == "scopetool":
        return "scopetool's core"
    if top in sys.stdlib_module_names or top.startswith("_"):
        return "the standard library"
    return top


def explain(figures: dict[str, Any]) -> list[str]:
    """Markdown paragraphs: `definitions` against its target and the pydantic floor, and where its time goes."""
    seconds = figures["seconds"]
    if "pydantic model" not in seconds:  # a saved run from before the floor was measured
        return []
    base, floor, command = seconds["import pydantic"], seconds["pydantic model"], seconds["scopetool definitions"]
    met = command / base <= _DEFINITIONS_LIMIT
    lines = [
        f"`scopetool definitions` took {command / base:.2f}x `import pydantic` (the target is at most "
        f"{_DEFINITIONS_LIMIT}x: {'met' if met else f'not met, by {command / base - _DEFINITIONS_LIMIT:.2f}x'}); "
        f"the same arguments as a plain pydantic model, its schema printed, took {floor / base:.2f}x, and "
        f"`definitions` took {command / floor:.2f}x that floor ({(command - floor) * 1000:.0f} ms more)."
        + (
            f" A program that builds one pydantic model and prints its schema cannot start within "
            f"{_DEFINITIONS_LIMIT}x `import pydantic` on this install."
            if floor / base > _DEFINITIONS_LIMIT
            else ""
        )
    ]
    where = figures.get("profile")
    if where is None:
        return lines
    lines.append(
        f"Where the time beyond the floor goes (`-X importtime`, each module's least self time over "
        f"{where['runs']} runs): the modules `definitions` imports that the floor does not, "
        + _groups(where["beyond_floor"])
        + f". The user's module body (decorating and binding its one tool) took {where['tools_body'] / 1000:.1f} ms "
        f"against {where['floor_body'] / 1000:.1f} ms for the model's (building `Add` and printing its schema). "
        f"Both include pydantic's plugin lookup, which the first model of any process pays: reading the "
        f"entry points of the {where['distributions']} distributions installed took "
        f"{where['plugin_lookup'] / 1000:.1f} ms, "
        f"beside {where['plugin_import'] / 1000:.1f} ms importing `importlib.metadata` for it."
    )
    return lines


def _groups(modules: dict[str, int]) -> str:
    """The import self times of `modules` by package, largest first, each with its three largest modules."""
    groups: dict[str, dict[str, int]] = {}
    for module, us in modules.items():
        groups.setdefault(_group(module), {})[module] = us
    parts = []
    for group, members in sorted(groups.items(), key=lambda item: -sum(item[1].values())):
        largest = sorted(members, key=lambda m: -members[m])[:3]
        named = ", ".join(f"`{m}` {members[m] / 1000:.1f}" for m in largest)
        count = f"{len(members)} module{'' if len(members) == 1 else 's'}"
        parts.append(f"{group} {sum(members.values()) / 1000:.1f} ms ({count}; {named})")
    return "; ".join(parts)


def explain_serve(figures: dict[str, Any]) -> list[str]:
    """A Markdown paragraph: `serve` against `MCPServer`, and what each loads that the other does not."""
    seconds = figures["seconds"]
    where = (figures.get("profile") or {}).get("serve")
    if where is None or "scopetool serve" not in seconds:
        return []
    serve, sdk = seconds["scopetool serve"], seconds["MCPServer"]
    own = sum(where["serve_only"].values()) + figures["profile"]["tools_body"]
    verdict = "no later than" if serve <= sdk else f"{(serve - sdk) * 1000:.0f} ms ({serve / sdk:.2f}x) later than"
    return [
        f"`scopetool serve` answered its first `tools/list` {verdict} `MCPServer`. Both serve with the MCP "
        f"SDK, and `import mcp` loads the SDK's client, server and `MCPServer` whichever part is used: the "
        f"modules both processes import took {where['both'] / 1000:.0f} ms (`-X importtime` self times, each "
        f"module's least over {figures['profile']['runs']} runs), {where['both'] / (sdk * 1e6):.0%} of "
        f"`MCPServer`'s time to its answer. What `serve` adds is its own start-up, {own / 1000:.1f} ms: the "
        f"modules only it imports, "
        + _groups(where["serve_only"])
        + f"; and the user's module body (decorating and binding its tool), "
        f"{figures['profile']['tools_body'] / 1000:.1f} ms. The modules only `MCPServer` imports took "
        f"{sum(where['mcpserver_only'].values()) / 1000:.1f} ms."
        + (
            ""
            if serve <= sdk
            else " `serve` could answer before `MCPServer` only by not importing the SDK (a JSON-RPC loop of its "
            "own over stdio), which it does not do."
        )
    ]


def targets(figures: dict[str, Any]) -> list[tuple[str, float, float]]:
    """The cold-start targets: (what, measured ratio, the most it may be)."""
    seconds = figures["seconds"]
    found = [
        (
            '`scopetool definitions` at most 1.5x `python -c "import pydantic"`',
            seconds["scopetool definitions"] / seconds["import pydantic"],
            _DEFINITIONS_LIMIT,
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


def report(options: harness.Options) -> str:
    """Every cold start, timed: the table, where the time goes, and the targets met or not."""
    figures = measure(options.rounds)
    how = f"Fresh processes: medians of {figures['rounds']} interleaved rounds after one warm-up run each."
    lines = [harness.header(options, "pydantic", "mcp", how=how), "", *table(figures), ""]
    for what, value, limit in targets(figures):
        lines.append(f"- {what}: {value:.2f}x ({'met' if value <= limit else 'not met'})")
    return "\n".join(lines)


def main() -> None:
    """Time every cold start and print the report."""
    harness.run(__doc__, report, full=harness.Plan(rounds=21))


if __name__ == "__main__":
    main()
