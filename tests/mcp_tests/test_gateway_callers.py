"""Who is calling, at the gateway: each caller's tool list and decisions (scopes, a policy), and its audit lines.

In process under `acting_as` (the official SDK client over memory streams), and over stdio with the
caller named by the operator: ``scopetool proxy --principal``, the config's ``gateway.principal`` and
``scopetool serve --principal``, each a subprocess spoken to over raw stdio.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from gateway_fixture import team
from mcp import Client, MCPError, types
from starlette.types import Receive, Scope, Send

from scopetool import Principal, acting_as
from scopetool.cli import main
from scopetool.cli._serve import principal
from scopetool.mcp.gateway import ConfigError, Gateway, GatewayConfig, load_config, open_gateway, parse_config
from scopetool.mcp.server import create_server, http_app

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "gateway_fixture.py"
ROOT_DIR = HERE.parents[1]
TEAM = {
    "tools": [f"{FIXTURE}:team"],
    "scopes": ["notes:read"],
    "toolScopes": {"write_*": ["notes:write"], "DELETE_*": ["notes:admin"]},  # matched whatever the case
    "policy": f"{FIXTURE}:owners_only",
}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_notes", {}),
    ("write_note", {"text": "hi"}),
    ("delete_note", {"owner": "alice"}),
    ("whoami", {}),
]
ALICE = Principal("alice", "cli-a", frozenset({"notes:read", "notes:write"}))
BOB = Principal("bob", None, frozenset({"notes:read"}))
ROOT = Principal("root", "ops", frozenset({"notes:read", "notes:write", "notes:admin"}))
UNKNOWN = "-32602"
"""How a call to a tool the caller may not see is answered: as an unknown tool."""
EXPECTED: dict[str, tuple[set[str], list[str]]] = {
    "alice": (
        {"read_notes", "write_note", "whoami"},
        ["notes", "written: hi", UNKNOWN, "alice via cli-a with ['notes:read', 'notes:write']"],
    ),
    "bob": ({"read_notes", "whoami"}, ["notes", UNKNOWN, UNKNOWN, "bob via None with ['notes:read']"]),
    "root": (
        {"read_notes", "write_note", "delete_note", "whoami"},
        [
            "notes",
            "written: hi",
            'isError: error: tool "delete_note" is not authorized',
            "root via ops with ['notes:admin', 'notes:read', 'notes:write']",
        ],
    ),
    "nobody": (set(), [UNKNOWN] * 4),
}


def text(result: types.CallToolResult) -> str:
    """A result's text, marked when it is an error result."""
    joined = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    return f"isError: {joined}" if result.is_error else joined


async def as_caller(gateway: Gateway, caller: Principal | None) -> tuple[set[str], list[str]]:
    """The tools `caller` is listed, and what each of `CALLS` gives it, through the SDK client in process."""
    outcomes: list[str] = []
    with acting_as(caller):
        async with Client(create_server(gateway.registry, on_call=gateway.observe, visible=gateway.allows)) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            for name, arguments in CALLS:
                try:
                    outcomes.append(text(await client.call_tool(name, arguments)))
                except MCPError as error:
                    outcomes.append(str(error.code))
    return listed, outcomes


async def test_each_caller_sees_and_may_call_only_what_its_scopes_and_the_policy_give(tmp_path: Path) -> None:
    """Four callers, four lists and four sets of decisions; with no caller, scopes required means nothing is served."""
    audit = tmp_path / "audit.jsonl"
    config = parse_config({"scopetool": TEAM, "gateway": {"audit": str(audit)}})
    seen: dict[str, tuple[set[str], list[str]]] = {}
    async with open_gateway(config, errlog=io.StringIO()) as gateway:
        for caller in (ALICE, BOB, ROOT, None):
            seen["nobody" if caller is None else caller.subject] = await as_caller(gateway, caller)
    assert seen == EXPECTED
    calls = [json.loads(line) for line in audit.read_text().splitlines() if '"event":"call"' in line]
    summary = [(c["subject"], c["clientId"], c["name"], c["reason"]) for c in calls]
    assert summary[4:8] == [  # bob's
        ("bob", None, "read_notes", None),
        ("bob", None, "write_note", "scope"),
        ("bob", None, "delete_note", "scope"),
        ("bob", None, "whoami", None),
    ]
    assert summary[10] == ("root", "ops", "delete_note", "policy")
    assert summary[12:] == [(None, None, name, "scope") for name, _ in CALLS]
    assert "notes:" not in audit.read_text()  # no scope, no claim, no token: the subject and client id only


def raw_session(command: list[str], calls: list[dict[str, Any]] | None = None) -> tuple[dict[int, dict[str, Any]], str]:
    """Run `command` (a stdio MCP server), send it initialize, tools/list and `calls`; its answers by id, its stderr.

    The calls (`CALLS` by default) have the ids 10, 11, ...
    """
    if calls is None:
        calls = [{"name": name, "arguments": arguments} for name, arguments in CALLS]
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    sent = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        *(
            {"jsonrpc": "2.0", "id": 10 + index, "method": "tools/call", "params": call}
            for index, call in enumerate(calls)
        ),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "scopetool", *command],
        input="".join(json.dumps(message) + "\n" for message in sent).encode(),
        capture_output=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT_DIR)},
    )
    assert done.returncode == 0, done.stderr.decode()
    return {answer["id"]: answer for answer in map(json.loads, done.stdout.decode().splitlines())}, done.stderr.decode()


def summary(answers: dict[int, dict[str, Any]]) -> tuple[set[str], list[str]]:
    """The tools listed and each call's outcome, as `as_caller` gives them."""
    listed = {tool["name"] for tool in answers[2]["result"]["tools"]}
    outcomes: list[str] = []
    for index in range(len(CALLS)):
        answer = answers[10 + index]
        if "error" in answer:
            outcomes.append(str(answer["error"]["code"]))
            continue
        result = answer["result"]
        joined = "\n".join(block["text"] for block in result["content"])
        outcomes.append(f"isError: {joined}" if result.get("isError") else joined)
    return listed, outcomes


def test_over_stdio_the_operator_names_the_caller_by_flag_or_config(tmp_path: Path) -> None:
    """``proxy --principal`` (alice) and ``gateway.principal`` (bob): each its own list, decisions and audit subject."""
    bob = {"subject": "bob", "scopes": ["notes:read"]}
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"scopetool": TEAM, "gateway": {"audit": "audit.jsonl", "principal": bob}}))
    flags = ["--principal", "alice", "--principal-client", "cli-a", "--principal-scope", "notes:read"]
    as_alice, _ = raw_session(["proxy", str(config), *flags, "--principal-scope", "notes:write"])
    as_bob, _ = raw_session(["proxy", str(config)])
    assert (summary(as_alice), summary(as_bob)) == (EXPECTED["alice"], EXPECTED["bob"])
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    calls = sorted((entry["subject"], entry["id"], entry["reason"]) for entry in audit if entry["event"] == "call")
    assert calls == [  # by request id: calls over stdio run at once, and their lines come as they end
        ("alice", "10", None),
        ("alice", "11", None),
        ("alice", "12", "scope"),
        ("alice", "13", None),
        ("bob", "10", None),
        ("bob", "11", "scope"),
        ("bob", "12", "scope"),
        ("bob", "13", None),
    ]


def test_serve_runs_every_request_as_the_named_caller() -> None:
    """``serve --principal`` reaches the tool itself (`current_principal`); without it, nobody is calling."""
    named, _ = raw_session(["serve", f"{FIXTURE}:team", "--principal", "carol", "--principal-scope", "x"])
    anonymous, _ = raw_session(["serve", f"{FIXTURE}:team"])
    assert summary(named)[1][3] == "carol via None with ['x']"
    assert summary(anonymous)[1][3] == "nobody"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["serve", "x:y", "--principal-scope", "a"], "scopetool: --principal-scope needs --principal SUBJECT"),
        (["serve", "x:y", "--principal-client", "c"], "scopetool: --principal-client needs --principal SUBJECT"),
        (["serve", "x:y", "--principal", " "], "scopetool: --principal needs a non-empty SUBJECT"),
        (
            ["proxy", "c.json", "--principal", "a", "--http", "0"],
            "scopetool: --principal applies to stdio only: over --http each caller is authenticated",
        ),
    ],
)
def test_a_principal_flag_mistake_is_one_line(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --principal-* flag alone, a blank subject, or --principal with --http: one line, the usage exit code."""
    assert main(arguments) == 2
    assert capsys.readouterr().err.strip() == message


def test_a_config_principal_over_http_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``gateway.principal`` names a stdio caller: ``proxy --http`` refuses it in one line, before serving."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"scopetool": TEAM, "gateway": {"principal": {"subject": "bob"}}}))
    assert load_config(config).principal == Principal("bob")
    assert main(["proxy", str(config), "--http", "127.0.0.1:0"]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "gateway.json: gateway.principal: names the caller over stdio only; over HTTP each caller is authenticated"
        )
    )


def test_a_config_auth_over_stdio_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``gateway.auth`` authenticates HTTP callers: ``proxy`` over stdio refuses it in one line (fail closed)."""
    (tmp_path / "team.tokens").write_text("alice alice-token-0123456789abcdef\n", encoding="utf-8")
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"scopetool": TEAM, "gateway": {"auth": {"tokenFile": "team.tokens"}}}))
    assert main(["proxy", str(config)]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "gateway.json: gateway.auth: authenticates callers over HTTP only (proxy --http); over stdio the operator "
            "names the caller (gateway.principal)"
        )
    )


@pytest.mark.parametrize(
    ("section", "gateway", "message"),
    [
        ({"scopes": "notes:read"}, {}, "config: scopetool.scopes: must be a list of scopes (OAuth scope tokens"),
        ({"scopes": ["notes read"]}, {}, "config: scopetool.scopes: must be a list of scopes"),
        ({"toolScopes": ["a"]}, {}, "config: scopetool.toolScopes: must be a JSON object, not an array"),
        ({"toolScopes": {"": ["a"]}}, {}, "config: scopetool.toolScopes: a tool-name pattern must be a non-empty"),
        ({"toolScopes": {"w*": [""]}}, {}, "config: scopetool.toolScopes.w*: must be a list of scopes"),
        ({}, {"principal": "bob"}, "config: gateway.principal: must be a JSON object, not a string"),
        ({}, {"principal": {}}, "config: gateway.principal.subject: must be a non-empty string, not null"),
        ({}, {"principal": {"subject": "b", "scope": []}}, "config: gateway.principal: unknown key 'scope'"),
        ({}, {"principal": {"subject": "b", "scopes": [1]}}, "config: gateway.principal.scopes: must be a list"),
    ],
)
def test_a_bad_scope_or_principal_key_is_one_line_naming_it(
    section: dict[str, Any], gateway: dict[str, Any], message: str
) -> None:
    """Scopes must be OAuth scope tokens; a principal needs a subject and no other keys than its own."""
    with pytest.raises(ConfigError) as raised:
        parse_config({"scopetool": {"tools": ["a:b"], **section}, "gateway": gateway})
    assert str(raised.value).startswith(message)


def test_a_server_entry_takes_scopes_and_tool_scopes() -> None:
    """An mcpServers entry's scopes apply to each of its tools, its toolScopes patterns to the tools they match."""
    entry = {"command": "x", "scopes": ["repo:read"], "toolScopes": {"git_commit": ["repo:write"], "git_*": ["git"]}}
    (git,) = parse_config({"mcpServers": {"git": entry}}).sections
    assert git.required_scopes("git_status") == {"repo:read", "git"}
    assert git.required_scopes("GIT_COMMIT") == {"repo:read", "repo:write", "git"}
    assert git.required_scopes("log") == {"repo:read"}


def test_the_principal_flags_make_one_principal() -> None:
    """--principal with its client and scopes is one Principal; without --principal there is none."""
    flags = {"http": None, "principal_client": "cli", "principal_scope": ["a", "b", "a"]}
    assert principal(argparse.Namespace(principal="carol", **flags)) == Principal("carol", "cli", frozenset("ab"))
    assert principal(argparse.Namespace(principal=None, http=None, principal_client=None, principal_scope=None)) is None


def test_proxy_principal_takes_the_place_of_the_configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``proxy --principal`` overrides ``gateway.principal``, and the config is otherwise the file's."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"scopetool": TEAM, "gateway": {"principal": {"subject": "bob"}, "stateless": True}}))
    served: list[GatewayConfig] = []

    def run_gateway(config: GatewayConfig, *, http: tuple[str, int] | None = None) -> None:
        served.append(config)

    monkeypatch.setattr("scopetool.mcp.gateway.run_gateway", run_gateway)
    assert main(["proxy", str(config), "--principal", "alice", "--principal-scope", "notes:read"]) == 0
    assert main(["proxy", str(config)]) == 0
    alice = Principal("alice", None, frozenset({"notes:read"}))
    assert [entry.principal for entry in served] == [alice, Principal("bob")]
    assert served[0].http_settings.stateless is True


def test_stateless_is_true_or_false() -> None:
    """``gateway.stateless`` is a boolean, named when it is not."""
    with pytest.raises(ConfigError, match=r"^config: gateway.stateless: must be true or false, not a string"):
        parse_config({"scopetool": TEAM, "gateway": {"stateless": "yes"}})


async def test_a_callers_list_is_paged_over_its_own_tools() -> None:
    """With pages, a caller's cursors walk its own list: every tool it may see once, in order, and no other."""
    server = create_server(team, page_size=2, visible=lambda name: name != "write_note")
    pages: list[list[str]] = []
    async with Client(server) as client:
        page = await client.list_tools()
        pages.append([tool.name for tool in page.tools])
        while page.next_cursor is not None and len(pages) < 5:
            page = await client.list_tools(cursor=page.next_cursor)
            pages.append([tool.name for tool in page.tools])
        with pytest.raises(MCPError, match="unknown cursor"):
            await client.list_tools(cursor="4")  # past this caller's three tools
    seen = [name for name in team.names() if name != "write_note"]
    assert pages == [seen[:2], seen[2:]]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_over_http_each_request_sees_the_caller_its_front_set(mode: str) -> None:
    """The interface HTTP authentication fills: a front that runs each request inside `acting_as` decides its list."""
    config = parse_config({"scopetool": TEAM})
    callers = {"alice": ALICE, "bob": BOB}
    seen: dict[str, tuple[set[str], list[str]]] = {}
    async with open_gateway(config, errlog=io.StringIO()) as gateway:
        app = http_app(gateway.registry, on_call=gateway.observe, visible=gateway.allows)

        async def front(scope: Scope, receive: Receive, send: Send) -> None:
            """What an authenticating front does: the caller of each request (here named in the query)."""
            name = bytes(scope.get("query_string", b"")).decode().removeprefix("caller=")
            with acting_as(callers.get(name)):
                await app(scope, receive, send)

        with socket.create_server(("127.0.0.1", 0)) as listening:
            server = uvicorn.Server(uvicorn.Config(front, log_config=None, log_level="warning"))
            port = listening.getsockname()[1]
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: server.serve(sockets=[listening]))
                with anyio.fail_after(10):
                    while not server.started:
                        await anyio.sleep(0.02)
                for name in ("alice", "bob", "nobody"):
                    outcomes: list[str] = []
                    async with Client(f"http://127.0.0.1:{port}/mcp?caller={name}", mode=mode) as client:
                        listed = {tool.name for tool in (await client.list_tools()).tools}
                        for tool, arguments in CALLS:
                            try:
                                outcomes.append(text(await client.call_tool(tool, arguments)))
                            except MCPError as error:
                                outcomes.append(str(error.code))
                    seen[name] = (listed, outcomes)
                server.should_exit = True
    assert seen == {name: EXPECTED[name] for name in ("alice", "bob", "nobody")}
