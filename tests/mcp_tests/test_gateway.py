"""The MCP gateway in front of real third-party servers: the reference "everything" server and the git server.

Two scenarios, each run once per module (`hostile`, `guarded`), and the tests read what they saw:

* `hostile`: ``scopetool proxy CONFIG`` as a subprocess, spoken to over raw stdio (duplicate keys
  cannot be sent by any SDK client), with the everything server behind `recorder.py`, which tees
  what reaches the server to a file: the hostile calls are answered by the gateway and never reach it.
  A second server whose command does not exist shows a failed start.
* `guarded`: the gateway in process, driven by the official MCP SDK client, in front of the
  everything server, the git server and local tools: deny lists, a policy, a pin change, name
  prefixing, a server killed mid-session; then its audit log, line by line.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, types
from third_party import everything_server, git_server

from scopetool.mcp.gateway import load_config, open_gateway
from scopetool.mcp.pins import fingerprint
from scopetool.mcp.server import create_server

HERE = Path(__file__).resolve().parent
RECORDER = HERE / "recorder.py"
FIXTURE = HERE / "gateway_fixture.py"
MARK = "HOSTILE-7f3a"
"""In every hostile argument set: no line that reached the server may hold it."""


def recorded(command: list[str], log: Path) -> dict[str, Any]:
    """An ``mcpServers`` entry running `command` behind the recorder (its process id goes to ``LOG.pid``)."""
    return {"command": sys.executable, "args": [str(RECORDER), str(log), *command]}


def lines(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file's objects."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def calls_received(log: Path) -> list[dict[str, Any]]:
    """The ``tools/call`` requests that reached the recorded server."""
    return [message for message in lines(log) if message.get("method") == "tools/call"]


def without_time(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Audit lines without their (varying) time."""
    for entry in entries:
        assert entry.pop("time").endswith("Z")
    return entries


def text(result: types.CallToolResult) -> str:
    """A result's text blocks, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's scratch folder."""
    return tmp_path_factory.mktemp("gateway")


@pytest.fixture(scope="module")
def repository(folder: Path) -> Path:
    """A git repository with one commit, for the git server."""
    repo = folder / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    (repo / "README").write_text("hello\n")
    for command in (["init", "-q"], ["add", "README"], ["commit", "-qm", "first"]):
        subprocess.run(["git", *command], cwd=repo, env=env, check=True)
    return repo


# --- the hostile scenario: raw stdio to `scopetool proxy` ---------------------------------------


@dataclass
class Hostile:
    """What the raw-stdio session saw."""

    answers: dict[int, dict[str, Any]]
    stderr: str
    audit: list[dict[str, Any]]
    received: Path
    lock: Path


def _request(request_id: int, method: str, params: dict[str, Any] | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def _call(request_id: int, name: str, arguments: str) -> str:
    """A tools/call line with `arguments` as raw JSON text (which may break I-JSON)."""
    params = f'{{"name":"{name}","arguments":{arguments}}}'
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}}}'


HOSTILE_CALLS = {
    10: ("echo", f'{{"message":"{MARK}","message":"second"}}'),  # a repeated member name
    11: ("echo", f'{{"message":"{MARK}\\ud800"}}'),  # a lone surrogate
    12: ("echo", json.dumps({"message": MARK + "a" * (1 << 20)})),  # over the 1 MiB cap
    13: ("echo", f'{{"message":"{MARK}","extra":1}}'),  # a member the schema does not have
    14: ("get-env", "{}"),  # denied by the config
    15: ("no-such-tool", "{}"),  # unknown
    16: ("echo", '{"message":"fine"}'),  # the one call that is sent on
}


@pytest.fixture(scope="module")
def hostile(folder: Path) -> Hostile:
    """``scopetool proxy`` over raw stdio: hostile calls, a denied and an unknown tool, one good call."""
    here = folder / "hostile"
    here.mkdir()
    received, lock = here / "received.jsonl", folder / "mcp.lock.json"
    config = {
        "mcpServers": {
            "everything": {**recorded(everything_server(), received), "deny": ["get-env"]},
            "broken": {"command": str(here / "no-such-server")},
        },
        "gateway": {"audit": "audit.jsonl", "pins": str(lock)},
    }
    (here / "gateway.json").write_text(json.dumps(config))
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    sent = [
        _request(1, "initialize", initialize),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        *(_call(request_id, name, arguments) for request_id, (name, arguments) in HOSTILE_CALLS.items()),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "scopetool", "proxy", str(here / "gateway.json")],
        input=("\n".join(sent) + "\n").encode(),
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(HERE.parents[1])},
    )
    assert done.returncode == 0, done.stderr.decode()
    answers = {message["id"]: message for message in map(json.loads, done.stdout.decode().splitlines())}
    return Hostile(answers, done.stderr.decode(), lines(here / "audit.jsonl"), received, lock)


def test_hostile_arguments_are_answered_at_the_gateway_and_nothing_reaches_the_server(hostile: Hostile) -> None:
    """Duplicate keys, a lone surrogate, an oversize payload, a schema break: refused; only the good call is sent on."""
    texts = {
        request_id: hostile.answers[request_id]["result"]["content"][0]["text"] for request_id in (10, 11, 12, 13, 16)
    }
    assert all(hostile.answers[request_id]["result"]["isError"] for request_id in range(10, 14))
    assert "the same member name twice" in texts[10]
    assert "surrogate" in texts[11]
    assert "the limit is 1048576 bytes" in texts[12]
    assert "extra" in texts[13]
    assert all(MARK not in texts[request_id] for request_id in (10, 11, 12, 13))  # input values are never echoed
    for request_id, name in ((14, "get-env"), (15, "no-such-tool")):  # denied or unknown: not a tool here
        assert hostile.answers[request_id]["error"] == {
            "code": -32602,
            "message": f'error: tool "{name}" is not available',
        }
    assert (hostile.answers[16]["result"]["isError"], texts[16]) == (False, "Echo: fine")
    received = calls_received(hostile.received)
    assert [(call["params"]["name"], call["params"]["arguments"]) for call in received] == [
        ("echo", {"message": "fine"})
    ]
    assert MARK not in hostile.received.read_text(encoding="utf-8")


def test_a_server_that_does_not_start_is_reported_and_the_others_are_served(hostile: Hostile) -> None:
    """The missing command is one stderr line and one audit event; everything is still served."""
    said = [line for line in hostile.stderr.splitlines() if line.startswith("scopetool proxy: ")]
    assert any(line.startswith("scopetool proxy: broken: not served: ") for line in said)
    assert "scopetool proxy: everything: 15 tools listed, 14 served" in said
    assert "Traceback" not in hostile.stderr
    started = [entry for entry in hostile.audit if entry["event"] == "server"]
    assert [(entry["server"], "error" in entry) for entry in started] == [("everything", False), ("broken", True)]


def test_the_hostile_sessions_audit_names_each_reason_and_no_argument(hostile: Hostile) -> None:
    """One line per call: the rejection kind for each hostile one, denied, unknown, then the result."""
    calls = [entry for entry in without_time(hostile.audit) if entry["event"] == "call"]
    assert [(entry["id"], entry["admitted"], entry["reason"], entry["outcome"]) for entry in calls] == [
        ("10", False, "not_i_json", None),
        ("11", False, "not_i_json", None),
        ("12", False, "too_large", None),
        ("13", False, "invalid", None),
        ("14", False, "denied", None),
        ("15", False, "unknown", None),
        ("16", True, None, "result"),
    ]
    assert calls[4] == {
        "event": "call",
        "id": "14",
        "server": "everything",
        "tool": "get-env",
        "name": "get-env",
        "issuer": None,
        "subject": None,
        "clientId": None,
        "admitted": False,
        "reason": "denied",
        "outcome": None,
    }
    assert all("arguments" not in entry for entry in calls)
    assert MARK not in json.dumps(hostile.audit) and "fine" not in json.dumps(hostile.audit)
    assert hostile.audit[-1]["event"] == "stop"


# --- the guarded scenario: the official client, in process ---------------------------------------


@dataclass
class Guarded:
    """What the SDK session saw."""

    names: list[str]
    results: dict[str, types.CallToolResult] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    said: str = ""
    audit: list[dict[str, Any]] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)


def _tamper(lock: Path, server: str, tool: str) -> None:
    """Change one pinned definition's description (with a matching digest): the listing no longer matches it."""
    document = json.loads(lock.read_text())
    pin = document["servers"][server]["tools"][tool]
    pin["definition"]["description"] = "A definition that was pinned before the server changed it."
    pin["sha256"] = fingerprint(pin["definition"])
    lock.write_text(json.dumps(document))


@pytest.fixture(scope="module")
def guarded(folder: Path, repository: Path, hostile: Hostile) -> Iterator[Guarded]:
    """The gateway in process: everything (denies, a policy, a changed pin), git (an allow list), local tools."""
    here = folder / "guarded"
    here.mkdir()
    received = here / "received.jsonl"
    _tamper(hostile.lock, "everything", "get-tiny-image")  # pinned by the hostile session's first contact
    config = {
        "mcpServers": {
            "everything": {
                **recorded(everything_server(), received),
                "deny": ["trigger-*", "toggle-*"],
                "policy": f"{FIXTURE}:policy",
            },
            "git": {
                **recorded(git_server(repository), here / "git.jsonl"),
                "allow": ["git_status"],
                "policy": f"{FIXTURE}:policy",  # it permits every git call: a failure passes through it
            },
        },
        "scopetool": {"tools": [f"{FIXTURE}:registry"]},
        "gateway": {"deny": ["*env*"], "pins": str(hostile.lock), "audit": "audit.jsonl", "name": "guarded"},
    }
    (here / "gateway.json").write_text(json.dumps(config))
    said = io.StringIO()
    seen: Guarded | None = None

    async def session() -> None:
        nonlocal seen
        async with open_gateway(load_config(here / "gateway.json"), errlog=said) as gateway:
            server = create_server(gateway.registry, name="guarded", on_call=gateway.observe)
            async with Client(server, mode="legacy") as client:
                seen = Guarded(sorted(tool.name for tool in (await client.list_tools()).tools))

                async def call(key: str, name: str, arguments: dict[str, Any]) -> None:
                    assert seen is not None
                    try:
                        seen.results[key] = await client.call_tool(name, arguments)
                    except MCPError as error:
                        seen.errors[key] = f"{error.error.code} {error.error.message}"

                await call("remote", "everything__echo", {"message": "hello"})
                await call("local", "scopetool__echo", {"message": "hello"})
                await call("policy", "everything__echo", {"message": "forbidden"})
                await call("sum", "get-sum", {"a": 2, "b": 3})
                await call("string sum", "get-sum", {"a": "2", "b": 3})
                await call("surrogate", "everything__echo", {"message": "\ud800"})  # in memory: not sent as JSON
                await call("oversize", "everything__echo", {"message": "a" * (1 << 20)})
                await call("denied", "trigger-long-running-operation", {"duration": 1, "steps": 1})
                await call("global deny", "get-env", {})
                await call("pin", "get-tiny-image", {})
                await call("status", "git_status", {"repo_path": str(repository)})
                assert (here / "git.jsonl.pid").exists(), said.getvalue()
                os.kill(int((here / "git.jsonl.pid").read_text()), signal.SIGKILL)
                await call("dead", "git_status", {"repo_path": str(repository)})
                await call("alive", "everything__echo", {"message": "still here"})
        assert seen is not None
        seen.said = said.getvalue()

    anyio.run(session)
    assert seen is not None
    seen.audit = lines(here / "audit.jsonl")
    seen.received = calls_received(received)
    yield seen


def test_denied_and_refused_tools_are_not_listed_and_collisions_are_prefixed(guarded: Guarded) -> None:
    """Deny patterns, a global deny, an allow list and a changed pin hide tools; both echos get a prefix."""
    assert "everything__echo" in guarded.names and "scopetool__echo" in guarded.names and "echo" not in guarded.names
    assert [name for name in guarded.names if name.startswith("git")] == ["git_status"]
    assert not [name for name in guarded.names if name.startswith(("trigger-", "toggle-")) or "env" in name]
    assert "get-tiny-image" not in guarded.names
    assert "get-sum" in guarded.names and "get-structured-content" in guarded.names


def test_calls_go_through_and_hidden_tools_are_refused(guarded: Guarded) -> None:
    """Remote and local calls work; a call to a denied or pin-refused tool is refused like an unknown one."""
    assert text(guarded.results["remote"]) == "Echo: hello"
    assert text(guarded.results["local"]) == "local: hello"
    assert text(guarded.results["sum"]) == "The sum of 2 and 3 is 5."
    assert guarded.results["string sum"].is_error and "a" in text(guarded.results["string sum"])
    assert guarded.results["surrogate"].is_error and "surrogate" in text(guarded.results["surrogate"])
    assert guarded.results["oversize"].is_error and "the limit is 1048576 bytes" in text(guarded.results["oversize"])
    assert guarded.errors == {
        "denied": '-32602 error: tool "trigger-long-running-operation" is not available',
        "global deny": '-32602 error: tool "get-env" is not available',
        "pin": '-32602 error: tool "get-tiny-image" is not available',
    }


def test_the_policy_refuses_before_anything_is_sent(guarded: Guarded) -> None:
    """The policy's refusal is the Guard's generic text, and the server never saw the call."""
    assert guarded.results["policy"].is_error
    assert text(guarded.results["policy"]) == 'error: tool "everything__echo" is not authorized'
    assert [call["params"]["arguments"] for call in guarded.received if call["params"]["name"] == "echo"] == [
        {"message": "hello"},
        {"message": "still here"},
    ]


def test_a_changed_pin_is_refused_and_said_at_start(guarded: Guarded) -> None:
    """The tampered pin: one stderr line naming the tool and what changed."""
    said = [line for line in guarded.said.splitlines() if "get-tiny-image" in line]
    assert len(said) == 1
    assert said[0].startswith('scopetool proxy: refused: tool "get-tiny-image" of MCP server "everything" changed')
    assert "description" in said[0]


def test_a_server_killed_mid_session_fails_its_calls_and_the_gateway_goes_on(guarded: Guarded) -> None:
    """After git dies its call is a failure with a fixed text; the everything server still answers."""
    assert not guarded.results["status"].is_error and "On branch" in text(guarded.results["status"])
    assert guarded.results["dead"].is_error
    assert text(guarded.results["dead"]).startswith('error: tool "git_status" failed: its MCP server ')
    assert text(guarded.results["alive"]) == "Echo: still here"


def test_the_audit_log_line_by_line(guarded: Guarded) -> None:
    """Start events, the refused pin, one line per call in order (reasons, outcomes), then stop; no argument value."""
    audit = without_time(guarded.audit)
    assert audit[:4] == [
        {"event": "server", "server": "scopetool", "listed": 1, "served": 1},
        {"event": "server", "server": "everything", "listed": 15, "served": 8},
        {"event": "server", "server": "git", "listed": 12, "served": 1},
        {
            "event": "refused",
            "server": "everything",
            "tool": "get-tiny-image",
            "why": audit[3]["why"],
        },
    ]
    calls = [(e["server"], e["tool"], e["name"], e["admitted"], e["reason"], e["outcome"]) for e in audit[4:-1]]
    assert calls == [
        ("everything", "echo", "everything__echo", True, None, "result"),
        ("scopetool", "echo", "scopetool__echo", True, None, "result"),
        ("everything", "echo", "everything__echo", False, "policy", None),
        ("everything", "get-sum", "get-sum", True, None, "result"),
        ("everything", "get-sum", "get-sum", False, "invalid", None),
        ("everything", "echo", "everything__echo", False, "not_i_json", None),
        ("everything", "echo", "everything__echo", False, "too_large", None),
        ("everything", "trigger-long-running-operation", "trigger-long-running-operation", False, "denied", None),
        ("everything", "get-env", "get-env", False, "denied", None),
        ("everything", "get-tiny-image", "get-tiny-image", False, "refused", None),
        ("git", "git_status", "git_status", True, None, "result"),
        ("git", "git_status", "git_status", True, None, "failed"),
        ("everything", "echo", "everything__echo", True, None, "result"),
    ]
    assert audit[-1] == {"event": "stop"}
    assert "hello" not in json.dumps(audit) and "forbidden" not in json.dumps(audit)
