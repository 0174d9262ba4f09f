"""The gateway in code mode over the real ``mcp-server-git``: ``scopetool proxy CONFIG --code-mode`` over stdio.

The official SDK client runs snippets through the gateway (a subprocess) in front of the git server
(behind `recorder.py`, which logs what reaches it). Each nested call is a call of its served tool in
every respect: admitted by the git server's own ``inputSchema`` at the gateway, refused when the config
denies the tool or the caller lacks its scope (a name not defined in the snippet, and not in the
caller's ``run_code`` description), counted against the tool's limit, and audited with its caller.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types
from third_party import everything_server, git_server

from scopetool.code import CodeLimits
from scopetool.mcp.gateway import ConfigError, GatewayConfig, open_gateway, parse_config

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "recorder.py"

SNIPPET_TWO_TOOLS = (
    "status = await git_status(repo_path=REPO)\nlog = await git_log(repo_path=REPO, max_count=1)\n"
    "['notes.txt' in status, 'first notes' in str(log)]"
)
SNIPPET_BAD_CALL = "await git_log(repo_path=REPO, max_count='one')"
SNIPPET_NOT_DEFINED = (
    "out = []\n"
    "for step in [lambda: git_commit(repo_path=REPO, message='x'), lambda: git_branch(repo_path=REPO, "
    "branch_type='local')]:\n"
    "    try:\n        out.append(await step())\n    except NameError as error:\n        out.append(str(error))\nout"
)
SNIPPET_OVER_LIMIT = (
    "out = []\n"
    "for step in [lambda: git_show(repo_path=REPO, revision='HEAD'), lambda: git_show(repo_path=REPO, "
    "revision='HEAD')]:\n"
    "    try:\n        out.append('first notes' in str(await step()))\n    except RuntimeError as error:\n"
    "        out.append(str(error))\nout"
)


def text(result: types.CallToolResult) -> str:
    """The result's one text block."""
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def lines(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file's objects."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Seen:
    """What the client saw through the gateway, and what the audit log and the git server got."""

    description: str = ""
    names: list[str] = field(default_factory=list[str])
    results: dict[str, types.CallToolResult] = field(default_factory=dict[str, types.CallToolResult])
    audit: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    received: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Seen:
    """A repository, the gateway config, and the snippets run through ``scopetool proxy --code-mode``."""
    here = tmp_path_factory.mktemp("gateway-code")
    repository = here / "repository"
    repository.mkdir()
    git = ["git", "-C", str(repository), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repository / "notes.txt").write_text("one\n")
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first notes"], check=True)
    (repository / "notes.txt").write_text("one\ntwo\n")
    received = here / "received.jsonl"
    config = {
        "mcpServers": {
            "git": {
                "command": sys.executable,
                "args": [str(RECORDER), str(received), *git_server(repository)],
                "deny": ["git_commit", "git_add", "git_reset", "git_create_branch", "git_checkout", "git_init"],
                "toolScopes": {"git_branch": ["repo:admin"]},
            }
        },
        "gateway": {
            "principal": {"subject": "ada", "scopes": ["repo:read"]},
            "audit": "audit.jsonl",
            "limits": {"tools": {"git_show": {"rate": "1/minute"}}},
        },
    }
    (here / "gateway.json").write_text(json.dumps(config))
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "scopetool", "proxy", str(here / "gateway.json"), "--code-mode", "--code-calls", "5"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    found = Seen()

    async def session() -> None:
        async with Client(server) as client:
            listed = (await client.list_tools()).tools
            found.names = [tool.name for tool in listed]
            found.description = listed[0].description or ""
            for key, snippet in [
                ("two", SNIPPET_TWO_TOOLS),
                ("bad", SNIPPET_BAD_CALL),
                ("not defined", SNIPPET_NOT_DEFINED),
                ("limited", SNIPPET_OVER_LIMIT),
            ]:
                code = f"REPO = {str(repository)!r}\n{snippet}"
                found.results[key] = await client.call_tool("run_code", {"code": code})

    anyio.run(session)
    found.audit = [entry for entry in lines(here / "audit.jsonl") if entry["event"] == "call"]
    found.received = [message for message in lines(received) if message.get("method") == "tools/call"]
    return found


def report(result: types.CallToolResult) -> dict[str, Any]:
    """The code call's JSON report."""
    value: dict[str, Any] = json.loads(text(result))
    return value


def test_run_code_is_listed_with_the_callers_tools_only(seen: Seen) -> None:
    """run_code alone; its description names the served tools this caller has, not the denied or scoped ones."""
    assert seen.names == ["run_code"]
    assert "- git_status(repo_path): " in seen.description and "- git_log(" in seen.description
    assert "git_commit" not in seen.description and "git_branch" not in seen.description


def test_a_snippet_calls_two_tools_of_the_git_server(seen: Seen) -> None:
    """git_status and git_log run on the server; the snippet reads both results."""
    assert report(seen.results["two"])["result"] == [True, True]


def test_a_bad_nested_call_is_rejected_by_the_upstream_schema_and_never_sent(seen: Seen) -> None:
    """max_count as a string: the git server's own schema rejects it at the gateway; the server never gets it."""
    bad = seen.results["bad"]
    assert bad.is_error and "invalid arguments for tool 'git_log'" in text(bad) and "$.max_count" in text(bad)
    assert [(call["params"]["name"]) for call in seen.received] == ["git_status", "git_log", "git_show"]


def test_a_denied_tool_and_a_tool_the_caller_lacks_the_scope_for_are_not_defined(seen: Seen) -> None:
    """git_commit (denied) and git_branch (needs repo:admin) are NameErrors in the snippet."""
    assert report(seen.results["not defined"])["result"] == [
        "name 'git_commit' is not defined",
        "name 'git_branch' is not defined",
    ]


def test_a_limit_refuses_the_nested_call(seen: Seen) -> None:
    """git_show at 1 a minute: the second nested call raises the limit's text and is not sent."""
    result = report(seen.results["limited"])["result"]
    assert result[0] is True
    assert result[1].startswith('Rate limit exceeded: calls of tool "git_show" are limited to 1 per minute')


def test_the_audit_has_one_line_per_nested_call_with_its_caller(seen: Seen) -> None:
    """Each nested call under its served name with its caller, a name it may not call too; each code call too."""
    calls = [
        (entry["server"], entry["name"], entry["subject"], entry["admitted"], entry["reason"], entry["outcome"])
        for entry in seen.audit
    ]
    assert calls == [
        ("git", "git_status", "ada", True, None, "result"),
        ("git", "git_log", "ada", True, None, "result"),
        ("scopetool", "run_code", "ada", True, None, "result"),
        ("git", "git_log", "ada", False, "invalid", None),
        ("scopetool", "run_code", "ada", True, None, "failed"),
        ("git", "git_commit", "ada", False, "denied", None),  # a name the snippet may not call: as a direct call
        ("git", "git_branch", "ada", False, "scope", None),
        ("scopetool", "run_code", "ada", True, None, "result"),
        ("git", "git_show", "ada", True, None, "result"),
        ("git", "git_show", "ada", False, "limited", None),
        ("scopetool", "run_code", "ada", True, None, "result"),
    ]
    assert all("arguments" not in entry for entry in seen.audit)


@pytest.mark.parametrize(
    ("value", "limits"),
    [
        (True, CodeLimits()),
        ({}, CodeLimits()),
        ({"nestedCalls": 20, "wallSeconds": 30}, CodeLimits(nested_calls=20, wall_seconds=30)),
    ],
)
def test_code_mode_config_values(value: object, limits: CodeLimits) -> None:
    """``gateway.codeMode`` is true or an object of CodeLimits fields in camelCase; false turns it off."""
    config = parse_config({"mcpServers": {"git": {"command": "git"}}, "gateway": {"codeMode": value}})
    assert config.code_mode == limits
    off = parse_config({"mcpServers": {"git": {"command": "git"}}, "gateway": {"codeMode": False}})
    assert off.code_mode is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "yes",
            'config: gateway.codeMode: must be true, false or an object of limits such as {"nestedCalls": 20}, '
            "not a string",
        ),
        (
            {"nestedcalls": 3},
            "config: gateway.codeMode: unknown key 'nestedcalls'; did you mean \"nestedCalls\"? (expected codeBytes,",
        ),
        ({"nestedCalls": 0}, "config: gateway.codeMode.nestedCalls: must be a positive int, not 0"),
        ({"wallSeconds": "1"}, "config: gateway.codeMode.wallSeconds: must be a positive number of seconds, not '1'"),
    ],
)
def test_a_bad_code_mode_config_is_one_line_naming_the_key(value: object, message: str) -> None:
    """A wrong value names ``gateway.codeMode`` (or its field) and what it must be."""
    with pytest.raises(ConfigError) as error:
        parse_config({"mcpServers": {"git": {"command": "git"}}, "gateway": {"codeMode": value}})
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


async def test_a_served_tool_named_run_code_is_skipped_in_code_mode(tmp_path: Path) -> None:
    """A local tool named run_code is not served in code mode (said at start)."""
    target = tmp_path / "tools.py"
    target.write_text(
        "from scopetool import tool\n\n@tool\ndef run_code(code: str) -> str:\n    '''Mine.'''\n    return code\n"
    )
    said = io.StringIO()
    config = parse_config({"scopetool": {"tools": [f"{target}:run_code"]}, "gateway": {"codeMode": True}})
    async with open_gateway(config, errlog=said) as gateway:
        assert gateway.registry.names() == []
    assert "skipped: tool 'run_code' of 'scopetool'" in said.getvalue()


def test_the_proxy_code_flags_set_the_configs_code_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--code-calls sets the config's codeMode's nestedCalls (its other bounds kept); --code-mode turns it on."""
    from scopetool.cli import main
    from scopetool.mcp import gateway

    seen: list[Any] = []

    def run_gateway(config: GatewayConfig, http: object) -> None:
        seen.append(config.code_mode)

    monkeypatch.setattr(gateway, "run_gateway", run_gateway)
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"git": {"command": "git"}}, "gateway": {"codeMode": {"workers": 2}}}))
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"mcpServers": {"git": {"command": "git"}}}))
    assert main(["proxy", str(config), "--code-calls", "7"]) == 0
    assert main(["proxy", str(plain), "--code-mode"]) == 0
    assert main(["proxy", str(plain)]) == 0
    assert (seen[0].nested_calls, seen[0].workers) == (7, 2)
    assert seen[1].nested_calls == 50 and seen[2] is None


async def test_in_process_the_gateways_server_gates_and_audits_nested_calls(tmp_path: Path) -> None:
    """open_gateway + create_server with tool search: three tools listed; a nested call and the code call audited."""
    from scopetool.mcp.server import create_server

    config = parse_config(
        {
            "scopetool": {"tools": [f"{HERE / 'gateway_fixture.py'}:registry"]},
            "gateway": {"codeMode": True, "toolSearch": True, "audit": "audit.jsonl"},
        },
        base=tmp_path,
    )
    async with open_gateway(config, errlog=io.StringIO()) as gateway:
        server = create_server(
            gateway.registry,
            on_call=gateway.observe,
            visible=gateway.allows,
            limiter=gateway.limiter,
            tool_search=gateway.tool_search,
            code_mode=config.code_mode or False,
        )
        async with Client(server, mode="legacy") as client:
            listed = (await client.list_tools()).tools
            ran = await client.call_tool("run_code", {"code": "await echo(message='hi')"})
    assert [tool.name for tool in listed] == ["search_tools", "call_tool", "run_code"]
    assert report(ran)["result"] == "local: hi"
    audit = [entry for entry in lines(tmp_path / "audit.jsonl") if entry["event"] == "call"]
    assert [(entry["server"], entry["tool"], entry["outcome"]) for entry in audit] == [
        ("scopetool", "echo", "result"),
        ("scopetool", "run_code", "result"),
    ]


SNIPPET_APPROVAL = "t = await tick()\n[await add(a=t, b=10), await approve(item='invoice-7')]"


async def test_an_approval_asked_mid_code_through_the_gateway_resumes_the_same_run(tmp_path: Path) -> None:
    """scopetool proxy over stdio (its lean path): a nested approval is the code call's elicitation; tick runs once."""
    config = tmp_path / "gateway.json"
    tools = HERE / "code_fixture_tools.py"
    config.write_text(json.dumps({"scopetool": {"tools": [f"{tools}:registry"]}, "gateway": {"codeMode": True}}))
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "scopetool", "proxy", str(config)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])},
    )
    prompts: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        prompts.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": True})

    async with Client(server, mode="legacy", elicitation_callback=person) as client:
        approved = await client.call_tool("run_code", {"code": SNIPPET_APPROVAL})
        ticks = await client.call_tool("tick", {})
    result = report(approved)["result"]
    assert prompts == ["Approve the transfer?"]
    assert result[0] == 11 and json.loads(result[1])["answer"] is True
    assert text(ticks) == "2"  # once in the snippet (not again when it resumed), once now


def test_code_over_the_everything_server_calls_its_dashed_tools_by_made_names(tmp_path: Path) -> None:
    """The reference server's get-sum is get_sum in a snippet; the nested call is get-sum's, admitted by its schema."""
    config = {"mcpServers": {"everything": {"command": everything_server()[0], "args": everything_server()[1:]}}}
    (tmp_path / "gateway.json").write_text(json.dumps(config))
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "scopetool", "proxy", str(tmp_path / "gateway.json"), "--code-mode"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    snippet = (
        "import asyncio\nsums = await asyncio.gather(get_sum(a=1, b=2), get_sum(a=3, b=4))\n"
        "try:\n    await get_sum(a='one', b=2)\nexcept ValueError as error:\n"
        "    rejected = str(error)\n[sums, rejected]"
    )

    async def session() -> tuple[str, str]:
        async with Client(server) as client:
            [entry] = (await client.list_tools()).tools
            return entry.description or "", text(await client.call_tool("run_code", {"code": snippet}))

    description, answer = anyio.run(session)
    assert "- get_sum(a, b):" in description and "get-sum" not in description
    report = json.loads(answer)
    sums, rejected = report["result"]
    assert ["3" in json.dumps(sums[0]), "7" in json.dumps(sums[1])] == [True, True]
    assert rejected.startswith("invalid arguments for tool 'get-sum'") and "one" not in rejected
    assert [call["tool"] for call in report["calls"]] == ["get-sum", "get-sum", "get-sum"]
