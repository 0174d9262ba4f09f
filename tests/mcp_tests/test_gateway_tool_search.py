"""The gateway with ``"toolSearch"``: the official SDK client finds and calls the real "everything" server's tools.

The gateway runs in process in front of the reference everything server (behind `recorder.py`, which
logs what reaches it) and the local fixture tools, with a deny list, a policy and a lock file whose
pin of one tool was changed. Through ``call_tool`` every inner call is the inner tool's: admitted by
its contract at the gateway, refused when denied or its pin no longer holds, guarded by the policy,
and audited under its served name.
"""

from __future__ import annotations

import io
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types
from third_party import everything_server

from scopetool.mcp.gateway import ConfigError, load_config, open_gateway, parse_config, serve_gateway
from scopetool.mcp.pins import fingerprint
from scopetool.mcp.server import ToolSearch, create_server

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "recorder.py"
FIXTURE = HERE / "gateway_fixture.py"


def text(result: types.CallToolResult) -> str:
    """A result's text blocks, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def lines(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file's objects."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Seen:
    """What the SDK session through the gateway saw."""

    names: list[str] = field(default_factory=list[str])
    results: dict[str, types.CallToolResult] = field(default_factory=dict[str, types.CallToolResult])
    said: str = ""
    audit: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    received: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Seen:
    """Pin the everything server's tools, change one pin, then search and call through the gateway."""
    here = tmp_path_factory.mktemp("gateway-search")
    received, lock = here / "received.jsonl", here / "mcp.lock.json"
    config = {
        "mcpServers": {
            "everything": {
                "command": sys.executable,
                "args": [str(RECORDER), str(received), *everything_server()],
                "deny": ["get-env", "trigger-*", "toggle-*"],
                "policy": f"{FIXTURE}:policy",
            }
        },
        "scopetool": {"tools": [f"{FIXTURE}:registry"]},
        "gateway": {
            "pins": str(lock),
            "audit": "audit.jsonl",
            "toolSearch": {"alwaysShow": ["get-sum", "no-such-tool"]},
        },
    }
    (here / "gateway.json").write_text(json.dumps(config))
    said = io.StringIO()
    found = Seen()

    async def pin() -> None:
        async with open_gateway(load_config(here / "gateway.json"), errlog=io.StringIO()):
            pass

    async def session() -> None:
        async with open_gateway(load_config(here / "gateway.json"), errlog=said) as gateway:
            server = create_server(gateway.registry, on_call=gateway.observe, tool_search=gateway.tool_search)
            async with Client(server, mode="legacy") as client:
                found.names = [tool.name for tool in (await client.list_tools()).tools]

                async def call(key: str, name: str, arguments: dict[str, Any]) -> None:
                    found.results[key] = await client.call_tool(name, arguments)

                await call("search echo", "search_tools", {"query": "echo a message back"})
                await call("search env", "search_tools", {"query": "environment variables", "limit": 20})
                await call("search image", "search_tools", {"query": "tiny image", "limit": 20})
                await call("echo", "call_tool", {"name": "everything__echo", "arguments": {"message": "hello"}})
                await call("local", "call_tool", {"name": "scopetool__echo", "arguments": {"message": "hi"}})
                await call("sum", "call_tool", {"name": "get-sum", "arguments": {"a": 2, "b": 3}})
                await call("bad sum", "call_tool", {"name": "get-sum", "arguments": {"a": "2", "b": 3}})
                await call("policy", "call_tool", {"name": "everything__echo", "arguments": {"message": "forbidden"}})
                await call("denied", "call_tool", {"name": "get-env", "arguments": {}})
                await call("pin", "call_tool", {"name": "get-tiny-image", "arguments": {}})
                await call("direct", "get-sum", {"a": 1, "b": 1})

    anyio.run(pin)
    document = json.loads(lock.read_text())
    tampered = document["servers"]["everything"]["tools"]["get-tiny-image"]
    tampered["definition"]["description"] = "A definition pinned before the server changed it."
    tampered["sha256"] = fingerprint(tampered["definition"])
    lock.write_text(json.dumps(document))
    anyio.run(session)
    found.said = said.getvalue()
    found.audit = lines(here / "audit.jsonl")
    found.received = [message for message in lines(received) if message.get("method") == "tools/call"]
    return found


def found_names(result: types.CallToolResult) -> list[str]:
    """The names a search_tools result lists."""
    assert result.structured_content is not None, text(result)
    return [entry["name"] for entry in result.structured_content["tools"]]


def test_the_list_is_the_two_tools_and_the_served_always_shown_one(seen: Seen) -> None:
    """search_tools, call_tool and get-sum; an always-shown name that is not served is said at start."""
    assert seen.names == ["search_tools", "call_tool", "get-sum"]
    assert "scopetool proxy: gateway.toolSearch.alwaysShow: no tool 'no-such-tool' is served" in seen.said


def test_search_finds_served_tools_and_never_a_denied_or_refused_one(seen: Seen) -> None:
    """Both echos are found under their served names; get-env (denied) and get-tiny-image (changed pin) never are."""
    assert set(found_names(seen.results["search echo"])[:2]) == {"everything__echo", "scopetool__echo"}
    assert "get-env" not in found_names(seen.results["search env"])
    assert "get-tiny-image" not in found_names(seen.results["search image"])


def test_inner_calls_are_admitted_guarded_and_refused_as_the_inner_tool(seen: Seen) -> None:
    """Good calls run; the upstream contract rejects a bad one at the gateway; policy, deny and pin refuse theirs."""
    results = seen.results
    assert (text(results["echo"]), text(results["local"])) == ("Echo: hello", "local: hi")
    assert text(results["sum"]) == text(results["direct"]).replace("1 and 1 is 2", "2 and 3 is 5")
    assert results["bad sum"].is_error
    assert text(results["bad sum"]).startswith("invalid arguments for tool 'get-sum'") and "$.a" in text(
        results["bad sum"]
    )
    assert text(results["policy"]) == 'error: tool "everything__echo" is not authorized'
    assert (
        text(results["denied"]) == 'error: tool "get-env" is not available (search_tools finds tools by what they do)'
    )
    assert results["pin"].is_error and text(results["pin"]).startswith('error: tool "get-tiny-image" is not available')
    assert [(call["params"]["name"], call["params"]["arguments"]) for call in seen.received] == [
        ("echo", {"message": "hello"}),
        ("get-sum", {"a": 2, "b": 3}),
        ("get-sum", {"a": 1, "b": 1}),
    ]


def test_the_audit_names_each_inner_tool_and_no_search(seen: Seen) -> None:
    """One line per inner call, under its served name with its reason; searches write none; no argument value."""
    calls = [
        (entry["server"], entry["name"], entry["admitted"], entry["reason"], entry["outcome"])
        for entry in seen.audit
        if entry["event"] == "call"
    ]
    assert calls == [
        ("everything", "everything__echo", True, None, "result"),
        ("scopetool", "scopetool__echo", True, None, "result"),
        ("everything", "get-sum", True, None, "result"),
        ("everything", "get-sum", False, "invalid", None),
        ("everything", "everything__echo", False, "policy", None),
        ("everything", "get-env", False, "denied", None),
        ("everything", "get-tiny-image", False, "refused", None),
        ("everything", "get-sum", True, None, "result"),
    ]
    assert "hello" not in json.dumps(seen.audit) and "forbidden" not in json.dumps(seen.audit)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, ToolSearch()),
        (False, None),
        ({"alwaysShow": ["git_status"]}, ToolSearch(always_show=("git_status",))),
        ({}, ToolSearch()),
        ({"reveal": True}, ToolSearch(reveal=True)),
    ],
)
def test_tool_search_config_values(value: object, expected: ToolSearch | None) -> None:
    """``gateway.toolSearch`` is true, false or an object with ``alwaysShow``."""
    config = parse_config({"mcpServers": {"git": {"command": "git"}}, "gateway": {"toolSearch": value}})
    assert config.tool_search == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("yes", 'config: gateway.toolSearch: must be true, false or {"alwaysShow": [...]}, not a string'),
        (
            {"alwaysshow": []},
            "config: gateway.toolSearch: unknown key 'alwaysshow'; did you mean \"alwaysShow\"? "
            "(expected alwaysShow, reveal)",
        ),
        ({"reveal": "yes"}, "config: gateway.toolSearch.reveal: must be true or false, not a string"),
        ({"alwaysShow": "git_status"}, "config: gateway.toolSearch.alwaysShow: must be a list of strings"),
    ],
)
def test_a_bad_tool_search_config_is_one_line_naming_the_key(value: object, message: str) -> None:
    """A wrong value names ``gateway.toolSearch`` (or its ``alwaysShow``) and what it must be."""
    with pytest.raises(ConfigError) as error:
        parse_config({"mcpServers": {"git": {"command": "git"}}, "gateway": {"toolSearch": value}})
    assert str(error.value) == message


async def test_a_served_tool_named_like_a_tool_search_tool_is_skipped(tmp_path: Path) -> None:
    """A local tool named call_tool is not served under tool search (said at start); without it, it is."""
    target = tmp_path / "tools.py"
    target.write_text(
        "from scopetool import tool\n\n@tool\ndef call_tool(q: str) -> str:\n    '''Mine.'''\n    return q\n"
    )
    said = io.StringIO()
    config = parse_config({"scopetool": {"tools": [f"{target}:call_tool"]}, "gateway": {"toolSearch": True}})
    async with open_gateway(config, errlog=said) as gateway:
        assert gateway.registry.names() == [] and gateway.tool_search == ToolSearch()
    assert "skipped: tool 'call_tool' of 'scopetool'" in said.getvalue()
    plain = parse_config({"scopetool": {"tools": [f"{target}:call_tool"]}})
    async with open_gateway(plain, errlog=io.StringIO()) as gateway:
        assert gateway.registry.names() == ["call_tool"] and gateway.tool_search is False


def test_serve_gateway_over_http_serves_tool_search(tmp_path: Path) -> None:
    """serve_gateway with http and toolSearch: the SDK client over HTTP sees the two tools and calls through them."""
    config = parse_config(
        {"scopetool": {"tools": [f"{FIXTURE}:registry"]}, "gateway": {"toolSearch": True, "audit": "audit.jsonl"}},
        base=tmp_path,
    )
    said = io.StringIO()
    seen: list[Any] = []

    async def session() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: serve_gateway(config, http=("127.0.0.1", 0), errlog=said))
            with anyio.fail_after(30):
                while " at http://" not in said.getvalue():
                    await anyio.sleep(0.05)
            url = said.getvalue().split(" at ")[-1].split()[0]
            async with Client(url) as client:
                seen.append([tool.name for tool in (await client.list_tools()).tools])
                seen.append(await client.call_tool("call_tool", {"name": "echo", "arguments": {"message": "hi"}}))
            group.cancel_scope.cancel()

    anyio.run(session)
    assert seen[0] == ["search_tools", "call_tool"]
    assert text(seen[1]) == "local: hi"
    audit = lines(tmp_path / "audit.jsonl")
    assert [(entry["event"], entry.get("name")) for entry in audit] == [
        ("server", None),
        ("call", "echo"),
        ("stop", None),
    ]


async def test_scopetool_proxy_serves_tool_search_over_stdio(tmp_path: Path) -> None:
    """``scopetool proxy CONFIG`` run as a client runs it: the everything server's tools behind search over stdio."""
    config = {
        "mcpServers": {"everything": {"command": everything_server()[0], "deny": ["get-env"]}},
        "gateway": {"toolSearch": {"alwaysShow": ["echo"]}},
    }
    (tmp_path / "gateway.json").write_text(json.dumps(config))
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "scopetool", "proxy", str(tmp_path / "gateway.json")],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    async with Client(server) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        found = await client.call_tool("search_tools", {"query": "sum two numbers"})
        summed = await client.call_tool("call_tool", {"name": "get-sum", "arguments": {"a": 2, "b": 3}})
        rejected = await client.call_tool("call_tool", {"name": "get-sum", "arguments": {"a": 2}})
        denied = await client.call_tool("call_tool", {"name": "get-env", "arguments": {}})
    assert names == ["search_tools", "call_tool", "echo"]
    assert found_names(found)[0] == "get-sum"
    assert text(summed) == "The sum of 2 and 3 is 5."
    assert text(rejected) == "invalid arguments for tool 'get-sum' (1 problem):\n- $.b: missing required field"
    assert text(denied) == 'error: tool "get-env" is not available (search_tools finds tools by what they do)'
