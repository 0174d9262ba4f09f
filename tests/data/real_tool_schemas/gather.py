"""Regenerate ``servers.json``: the tools real MCP servers from npm and PyPI list, as they list them.

Not run by the test suite (it needs the registries); the tests read the JSON it writes. Each server is
installed with its registry's own client into a scratch directory, started on stdio, and asked for
``tools/list`` through the official MCP Python SDK client; nothing it does reaches the network (API
keys are dummies: listing tools needs none, and no tool is called). A server that takes a directory
gets an empty temporary one.

Run it with ``python tests/data/real_tool_schemas/gather.py [SCRATCH_DIR]`` (the venv's Python, which
has ``mcp``; ``npm`` and ``python3 -m venv`` must work).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

NPM_SERVERS = {
    # package: (extra arguments, environment)
    "@modelcontextprotocol/server-everything": ([], {}),
    "@modelcontextprotocol/server-filesystem": (["{tmp}"], {}),
    "@modelcontextprotocol/server-memory": ([], {"MEMORY_FILE_PATH": "{tmp}/memory.jsonl"}),
    "@modelcontextprotocol/server-sequential-thinking": ([], {}),
    "@modelcontextprotocol/server-github": ([], {"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy"}),
    "@modelcontextprotocol/server-gitlab": ([], {"GITLAB_PERSONAL_ACCESS_TOKEN": "dummy"}),
    "@modelcontextprotocol/server-brave-search": ([], {"BRAVE_API_KEY": "dummy"}),
    "@modelcontextprotocol/server-google-maps": ([], {"GOOGLE_MAPS_API_KEY": "dummy"}),
    "@modelcontextprotocol/server-slack": ([], {"SLACK_BOT_TOKEN": "dummy", "SLACK_TEAM_ID": "dummy"}),
    "@modelcontextprotocol/server-everart": ([], {"EVERART_API_KEY": "dummy"}),
}
PYPI_SERVERS = {
    # package: (module, extra arguments)
    "mcp-server-git": ("mcp_server_git", ["--repository", "{tmp}"]),
    "mcp-server-fetch": ("mcp_server_fetch", []),
    "mcp-server-time": ("mcp_server_time", ["--local-timezone", "UTC"]),
}
OUT = Path(__file__).with_name("servers.json")


async def list_tools(params: StdioServerParameters) -> list[dict[str, Any]]:
    """The server's ``tools/list`` result, each tool as the wire has it (aliases, no nulls)."""
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools]


def fill(values: list[str] | dict[str, str], tmp: str) -> Any:
    if isinstance(values, dict):
        return {k: v.format(tmp=tmp) for k, v in values.items()}
    return [v.format(tmp=tmp) for v in values]


async def main(scratch: Path) -> None:
    """Install every server, list its tools and write the corpus."""
    npm_dir = scratch / "npm"
    npm_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(["npm", "init", "-y"], cwd=npm_dir, check=True, capture_output=True)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", *NPM_SERVERS], cwd=npm_dir, check=True)
    venv = scratch / "pyvenv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PYPI_SERVERS], check=True)
    servers: list[dict[str, Any]] = []
    for package, (args, env) in NPM_SERVERS.items():
        with tempfile.TemporaryDirectory() as tmp:
            root = npm_dir / "node_modules" / package
            manifest = json.loads((root / "package.json").read_text())
            bins = manifest["bin"]
            entry = bins if isinstance(bins, str) else next(iter(bins.values()))
            params = StdioServerParameters(
                command="node",
                args=[str(root / entry), *fill(args, tmp)],
                env={"PATH": "/usr/bin:/bin", **fill(env, tmp)},
            )
            tools = await list_tools(params)
        servers.append({"registry": "npm", "package": package, "version": manifest["version"], "tools": tools})
        print(f"{package} {manifest['version']}: {len(tools)} tools")
    for package, (module, args) in PYPI_SERVERS.items():
        with tempfile.TemporaryDirectory() as tmp:
            if package == "mcp-server-git":
                subprocess.run(["git", "init", "-q", tmp], check=True)
            version = subprocess.run(
                [str(venv / "bin" / "python"), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            params = StdioServerParameters(command=str(venv / "bin" / "python"), args=["-m", module, *fill(args, tmp)])
            tools = await list_tools(params)
        servers.append({"registry": "pypi", "package": package, "version": version, "tools": tools})
        print(f"{package} {version}: {len(tools)} tools")
    corpus = {
        "about": "tools/list results of real MCP servers, gathered by gather.py (see its docstring); "
        "each tool exactly as the server listed it",
        "servers": servers,
    }
    OUT.write_text(json.dumps(corpus, indent=1, ensure_ascii=False, sort_keys=False) + "\n")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())))
