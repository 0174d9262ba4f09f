"""The gateway's config (one-line errors naming the key and where), its names, filters and audit, in process."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types

from scopetool.mcp.client import HttpServer, StdioServer
from scopetool.mcp.gateway import (
    ConfigError,
    ToolFilter,
    load_config,
    open_gateway,
    parse_config,
    serve_gateway,
    served_names,
)
from scopetool.mcp.server import create_server

FIXTURE = Path(__file__).resolve().with_name("gateway_fixture.py")
LOCAL = {"scopetool": {"tools": [f"{FIXTURE}:registry"]}}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ([], "config: the config: must be a JSON object, not an array"),
        (
            {"servers": {}},
            "config: the config: unknown key 'servers'; did you mean \"mcpServers\"? (expected gateway, mcpServers,",
        ),
        ({}, "config: no servers: add mcpServers entries or a 'scopetool' section of local tools"),
        ({"mcpServers": {"git": "uvx"}}, "config: mcpServers.git: must be a JSON object, not a string"),
        (
            {"mcpServers": {"git": {"command": "uvx", "alow": []}}},
            "config: mcpServers.git: unknown key 'alow'; did you mean \"allow\"? "
            "(expected allow, args, callTimeout, command, cwd, deny, env, "
            "limits, listTimeout, poisoning, policy, prefix, relistInterval, scopes, startTimeout, toolScopes, "
            "trusted, type)",
        ),
        (
            {"mcpServers": {"web": {"url": "http://127.0.0.1:1/mcp", "command2": 1}}},
            "config: mcpServers.web: unknown key 'command2' (expected allow, callTimeout, deny, headers, limits, "
            "listTimeout, poisoning, policy, prefix, relistInterval, scopes, startTimeout, toolScopes, trusted, type, "
            "url)",
        ),
        ({"mcpServers": {"git": {}}}, 'config: mcpServers.git: an MCP server entry needs "command"'),
        (
            {"mcpServers": {"git": {"command": "x", "deny": "git_commit"}}},
            "config: mcpServers.git.deny: must be a list",
        ),
        ({"mcpServers": {"git": {"command": "x", "allow": [""]}}}, "config: mcpServers.git.allow: must be a list"),
        ({"mcpServers": {"git": {"command": "x", "trusted": "yes"}}}, "config: mcpServers.git.trusted: must be true"),
        ({"mcpServers": {"git": {"command": "x", "prefix": "g it"}}}, "config: mcpServers.git.prefix: must be 1 to 32"),
        ({"mcpServers": {"git": {"command": "x", "policy": "nocolon"}}}, "config: mcpServers.git.policy: must be mod"),
        ({"mcpServers": {"scopetool": {"command": "x"}}}, "config: mcpServers.scopetool: 'scopetool' is the local"),
        ({"scopetool": {"tools": []}}, "config: scopetool.tools: must be a non-empty list"),
        ({"scopetool": {"tools": ["a:b"], "trusted": True}}, "config: scopetool: unknown key 'trusted'"),
        (
            {**LOCAL, "gateway": {"audit_arguments": True}},
            "config: gateway: unknown key 'audit_arguments'; did you mean \"auditArguments\"? (expected",
        ),
        ({**LOCAL, "gateway": {"prefix": "sometimes"}}, 'config: gateway.prefix: must be "collisions" or "always"'),
        ({**LOCAL, "gateway": {"startTimeout": 0}}, "config: gateway.startTimeout: must be a number of seconds > 0"),
        ({**LOCAL, "gateway": {"startTimeout": True}}, "config: gateway.startTimeout: must be a number of seconds"),
        ({**LOCAL, "gateway": {"name": ""}}, "config: gateway.name: must be a non-empty string, not a string"),
        ({**LOCAL, "gateway": {"pins": 3}}, "config: gateway.pins: must be a non-empty string, not a number"),
        ({**LOCAL, "gateway": {"instructions": None, "auditArguments": 1}}, "config: gateway.auditArguments: must be"),
    ],
)
def test_a_bad_config_is_one_line_naming_the_key_and_where(config: object, message: str) -> None:
    """Each mistake is a ConfigError whose one line starts with the source and the key's path."""
    with pytest.raises(ConfigError) as raised:
        parse_config(config)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_a_config_reads_every_key_and_resolves_paths_from_its_folder(tmp_path: Path) -> None:
    """Servers in order (local first), connection keys for the client, gateway keys, paths from the file's folder."""
    config_file = tmp_path / "gateway.json"
    config_file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "git": {
                        "command": "uvx",
                        "args": ["mcp-server-git"],
                        "cwd": "repo",
                        "trusted": True,
                        "prefix": "g",
                    },
                    "web": {
                        "type": "http",
                        "url": "http://127.0.0.1:9/mcp",
                        "allow": ["fetch*"],
                        "policy": "pol:check",
                    },
                },
                "scopetool": {"tools": ["tools.py:registry", "pkg.tools:registry"], "deny": ["rm"]},
                "gateway": {
                    "name": "front",
                    "instructions": "Be careful.",
                    "pins": "mcp.lock.json",
                    "audit": "logs/audit.jsonl",
                    "auditArguments": True,
                    "deny": ["*delete*"],
                    "policy": "policies/main.py:decide",
                    "prefix": "always",
                    "startTimeout": 5,
                },
            }
        )
    )
    config = load_config(config_file)
    local, git, web = config.sections
    assert (local.name, local.targets) == ("scopetool", (f"{tmp_path}/tools.py:registry", "pkg.tools:registry"))
    assert local.filter == ToolFilter(allow=None, deny=("rm",)) and local.spec is None
    assert git.spec == StdioServer(command="uvx", args=("mcp-server-git",), cwd=str(tmp_path / "repo"))
    assert (git.trusted, git.prefix, web.trusted, web.prefix) == (True, "g", False, None)
    assert web.spec == HttpServer(url="http://127.0.0.1:9/mcp")
    assert (web.filter.allow, web.policy) == (("fetch*",), "pol:check")
    assert (config.name, config.instructions, config.audit_arguments, config.prefix) == (
        "front",
        "Be careful.",
        True,
        "always",
    )
    assert (config.pins, config.audit) == (tmp_path / "mcp.lock.json", tmp_path / "logs" / "audit.jsonl")
    assert (config.filter.deny, config.policy, config.start_timeout) == (
        ("*delete*",),
        f"{tmp_path}/policies/main.py:decide",
        5.0,
    )


def test_a_config_file_that_cannot_be_read_or_is_not_strict_json(tmp_path: Path) -> None:
    """A missing file and a repeated key are one line each, naming the file."""
    with pytest.raises(ConfigError, match=r"^cannot read '.*missing\.json': No such file"):
        load_config(tmp_path / "missing.json")
    duplicated = tmp_path / "dup.json"
    duplicated.write_text('{"mcpServers": {}, "mcpServers": {}}')
    with pytest.raises(ConfigError, match=r"dup\.json: not a JSON object: .*same member name twice"):
        load_config(duplicated)


def test_served_names_prefix_collisions_and_give_up_on_what_cannot_be_served() -> None:
    """Colliding names and names holding "__" get their prefix; always prefixes all; an invalid name is None."""
    assert served_names([("a", "x"), ("b", "x"), ("a", "y")]) == {
        ("a", "x"): "a__x",
        ("b", "x"): "b__x",
        ("a", "y"): "y",
    }
    assert served_names([("a", "x"), ("a", "y")], always=True) == {("a", "x"): "a__x", ("a", "y"): "a__y"}
    assert served_names([("a", "b__x"), ("a", "x"), ("b", "x")]) == {
        ("a", "b__x"): "a__b__x",
        ("a", "x"): "a__x",
        ("b", "x"): "b__x",
    }
    assert served_names([("p" * 30, "t" * 40)], always=True) == {("p" * 30, "t" * 40): None}  # over 64 characters


def test_a_tool_filter_denies_first_and_an_empty_allow_list_allows_nothing() -> None:
    """Deny wins over allow; patterns are shell-style; allow is case-sensitive."""
    assert ToolFilter().passes("anything")
    assert not ToolFilter(allow=()).passes("anything")
    assert [
        ToolFilter(allow=("git_*",), deny=("git_c*",)).passes(name) for name in ("git_log", "git_commit", "Git_log")
    ] == [
        True,
        False,
        False,
    ]


def _local_config(tmp_path: Path, **gateway: Any) -> Path:
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({**LOCAL, "gateway": {"audit": "audit.jsonl", **gateway}}))
    return path


def test_local_tools_with_a_broken_policy_audited_with_arguments(tmp_path: Path) -> None:
    """A policy that raises: the call ends with the Guard's generic error, and the audit says policy_error."""
    config = load_config(_local_config(tmp_path, policy=f"{FIXTURE}:broken_policy", auditArguments=True))
    said = io.StringIO()
    results: list[types.CallToolResult] = []

    async def session() -> None:
        async with open_gateway(config, errlog=said) as gateway:
            server = create_server(gateway.registry, on_call=gateway.observe)
            async with Client(server) as client:
                results.append(await client.call_tool("echo", {"message": "hello"}))

    anyio.run(session)
    [result] = results
    assert result.is_error and "SECRET" not in str(result.content)
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    [call] = [entry for entry in audit if entry["event"] == "call"]
    assert (call["admitted"], call["reason"], call["outcome"]) == (False, "policy_error", None)
    assert call["arguments"] == '{"message":"hello"}'  # asked for: the text as received
    assert said.getvalue() == "scopetool proxy: scopetool: 1 tool listed, 1 served\n"


@pytest.mark.parametrize(
    ("gateway", "message"),
    [
        ({"policy": f"{FIXTURE}:missing"}, "policy: "),
        ({"policy": f"{FIXTURE}:registry"}, "policy: "),
        ({"pins": "lock.json"}, "lock.json: not a scopetool MCP lock file"),
    ],
)
def test_a_policy_or_lock_file_that_cannot_be_loaded_stops_the_start(
    tmp_path: Path, gateway: dict[str, Any], message: str
) -> None:
    """A missing or non-callable policy and a broken lock file are ConfigErrors before anything is served."""
    (tmp_path / "lock.json").write_text("{}")
    config = load_config(_local_config(tmp_path, **gateway))

    async def start() -> None:
        async with open_gateway(config, errlog=io.StringIO()):
            pass  # pragma: no cover - never reached

    with pytest.raises(ConfigError, match=message):
        anyio.run(start)


def test_local_tools_that_cannot_be_loaded_stop_the_start(tmp_path: Path) -> None:
    """A local target naming no tools is a ConfigError naming the config file and the key."""
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({"scopetool": {"tools": [f"{FIXTURE}:policy"]}}))

    async def start() -> None:
        async with open_gateway(load_config(path), errlog=io.StringIO()):
            pass  # pragma: no cover - never reached

    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: scopetool\.tools\[0\]: .*must name a Registry"):
        anyio.run(start)


def test_servers_that_do_not_start_or_not_in_time_are_reported_and_the_rest_served(tmp_path: Path) -> None:
    """A missing command and a server that never answers (after startTimeout): one line each; local tools served."""
    path = tmp_path / "gateway.json"
    silent = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}
    missing = {"command": str(tmp_path / "no-such-server")}
    servers = {"silent": silent, "missing": missing}
    path.write_text(json.dumps({**LOCAL, "mcpServers": servers, "gateway": {"startTimeout": 0.5}}))
    names: list[str] = []

    async def start() -> None:
        with (tmp_path / "said.txt").open("w") as said:  # a real file: the servers' stderr can go there too
            async with open_gateway(load_config(path), errlog=said) as gateway:
                names.extend(gateway.registry.names())

    anyio.run(start)
    said = (tmp_path / "said.txt").read_text().splitlines()
    assert names == ["echo"]
    assert "scopetool proxy: silent: not served: MCP server 'silent' did not start within 0.5 s" in said
    assert [line for line in said if line.startswith("scopetool proxy: missing: not served: cannot connect")]


def test_a_name_that_cannot_take_its_prefix_is_skipped_and_said(tmp_path: Path) -> None:
    """With prefix "always", a 59-character name cannot take its prefix: one stderr line and a skipped event."""
    path = tmp_path / "gateway.json"
    local = {"tools": [f"{FIXTURE}:registry", f"{FIXTURE}:long_names"]}
    path.write_text(json.dumps({"scopetool": local, "gateway": {"prefix": "always", "audit": "audit.jsonl"}}))
    said = io.StringIO()
    names: list[str] = []

    async def start() -> None:
        async with open_gateway(load_config(path), errlog=said) as gateway:
            names.extend(gateway.registry.names())
            assert gateway.origin("scopetool__echo") == ("scopetool", "echo")
            assert gateway.origin("echo") is None

    anyio.run(start)
    assert names == ["scopetool__echo"]
    long = "a_tool_whose_name_is_already_as_long_as_providers_accept_it"
    assert said.getvalue().splitlines()[1] == (
        f"scopetool proxy: skipped: tool {long!r} of 'scopetool': its served name is taken or invalid (set a prefix)"
    )
    events = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert events[1] == {"time": events[1]["time"], "event": "skipped", "server": "scopetool", "tool": long}


def test_the_gateway_serves_over_streamable_http(tmp_path: Path) -> None:
    """serve_gateway with http: the official client lists and calls over HTTP; cancelling stops it."""
    config = load_config(_local_config(tmp_path))
    said = io.StringIO()
    seen: list[Any] = []

    async def session() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: serve_gateway(config, http=("127.0.0.1", 0), errlog=said))
            while " at http://" not in said.getvalue():
                await anyio.sleep(0.05)
            url = said.getvalue().split(" at ")[-1].split()[0]
            async with Client(url) as client:
                seen.append([tool.name for tool in (await client.list_tools()).tools])
                seen.append(await client.call_tool("echo", {"message": "over http"}))
            group.cancel_scope.cancel()

    anyio.run(session)
    assert seen[0] == ["echo"]
    assert seen[1].content[0].text == "local: over http"
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [entry["event"] for entry in audit] == ["server", "call", "stop"]


def test_the_proxy_command_says_a_config_problem_in_one_line(tmp_path: Path) -> None:
    """``scopetool proxy`` with a bad config: exit 2, one line on stderr, no traceback."""
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({"mcpServers": {"git": {"command": "uvx", "alow": []}}}))
    done = subprocess.run(
        [sys.executable, "-m", "scopetool", "proxy", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"scopetool: {path}: mcpServers.git: unknown key 'alow'")
    assert len(done.stderr.splitlines()) == 1


def test_the_proxy_command_passes_its_options_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--pins, --audit and --http reach run_gateway; a port that cannot be bound is one line."""
    from scopetool.cli import main
    from scopetool.mcp import gateway

    seen: list[tuple[Any, Any]] = []
    monkeypatch.setattr(gateway, "run_gateway", lambda config, http: seen.append((config, http)))
    path = _local_config(tmp_path)
    code = main(["proxy", str(path), "--pins", "other.lock.json", "--audit", "other.jsonl", "--http", "8123"])
    assert code == 0
    [(config, http)] = seen
    assert (config.pins, config.audit, http) == (Path("other.lock.json"), Path("other.jsonl"), ("127.0.0.1", 8123))

    def busy(config: object, http: object) -> None:
        raise OSError(98, "Address already in use")

    monkeypatch.setattr(gateway, "run_gateway", busy)
    errors = io.StringIO()
    monkeypatch.setattr(sys, "stderr", errors)
    assert main(["proxy", str(path), "--http", "8123"]) == 2
    assert (
        errors.getvalue() == "scopetool: --http 8123: cannot listen there: OSError: [Errno 98] Address already in use\n"
    )
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**LOCAL, "gateway": {"pins": 1}}))
    assert main(["proxy", str(bad)]) == 2
    assert (
        errors.getvalue().splitlines()[-1]
        == f"scopetool: {bad}: gateway.pins: must be a non-empty string, not a number"
    )
