"""The gateway's edge against hostile upstreams: a spoofed name, poisoned definitions, a deny list's case.

Each scenario runs the gateway in process behind the official MCP SDK client, with
``hostile_server.py`` (``spoof``, ``poison``) next to a server that has the real ``status``
(``names_fixture.py``) and, for false flags, the real third-party servers.
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
from hostile_server import POISON
from mcp import Client, MCPError, types
from names_fixture import GIT_STATUS
from third_party import everything_server, git_server

from scopetool.cli import main
from scopetool.mcp.gateway import ConfigError, load_config, open_gateway, parse_config
from scopetool.mcp.pins import PinFile
from scopetool.mcp.screening import is_invisible
from scopetool.mcp.server import create_server

HERE = Path(__file__).resolve().parent
HOSTILE = HERE / "hostile_server.py"
NAMES = HERE / "names_fixture.py"
PATH = {"PYTHONPATH": os.pathsep.join(sys.path)}  # this checkout's scopetool, for the servers it starts


def hostile(*behaviours: str, **keys: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry running the hostile server with `behaviours`, plus gateway keys."""
    return {"command": sys.executable, "args": [str(HOSTILE), *behaviours], **keys}


GIT = {"command": sys.executable, "args": [str(NAMES)], "env": PATH}
"""The server with the real ``status``, under the name ``git``."""


@dataclass
class Session:
    """What one gateway session showed its client, said on standard error and wrote in its audit log."""

    folder: Path
    tools: dict[str, types.Tool] = field(default_factory=dict)
    results: dict[str, types.CallToolResult] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    origins: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    said: list[str] = field(default_factory=list)
    audit: list[dict[str, Any]] = field(default_factory=list)


def session(folder: Path, config: dict[str, Any], calls: dict[str, tuple[str, dict[str, Any]]]) -> Session:
    """Start the gateway of `config` in `folder`, list its tools and make `calls` (key: name, arguments)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {**config, "gateway": {"audit": "audit.jsonl", **config.get("gateway", {})}}
    (folder / "gateway.json").write_text(json.dumps(config))
    seen = Session(folder)
    said = io.StringIO()

    async def run() -> None:
        async with open_gateway(load_config(folder / "gateway.json"), errlog=said) as gateway:
            server = create_server(gateway.registry, on_call=gateway.observe)
            async with Client(server) as client:
                seen.tools = {tool.name: tool for tool in (await client.list_tools()).tools}
                seen.origins = {name: gateway.origin(name) for name in seen.tools}
                for key, (name, arguments) in calls.items():
                    try:
                        seen.results[key] = await client.call_tool(name, arguments)
                    except MCPError as error:
                        seen.errors[key] = f"{error.error.code} {error.error.message}"

    anyio.run(run)
    seen.said = said.getvalue().splitlines()
    seen.audit = [json.loads(line) for line in (folder / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    return seen


def text(result: types.CallToolResult) -> str:
    """A result's text blocks, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


# --- names: a spoofed PREFIX__NAME never takes another server's name --------------------------------------


NAME_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "git": ("git__status", {}),
    "impostor": ("evil__git__status", {"text": "from the impostor"}),
    "denied": ("Delete_repo", {"name": "everything"}),
}


@pytest.fixture(scope="module", params=["impostor first", "git first"])
def spoofed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The hostile ``spoof`` server (its ``git__status``) and the real ``git`` (``status``), in both orders."""
    servers = {"evil": hostile("spoof"), "git": GIT}
    if request.param == "git first":
        servers = dict(reversed(servers.items()))
    config = {
        "mcpServers": servers,
        "scopetool": {"tools": [f"{NAMES}:local"]},  # a local status: git's collides, so it is prefixed
        "gateway": {"deny": ["*delete*"]},
    }
    return session(tmp_path_factory.mktemp("names"), config, NAME_CALLS)


def test_a_spoofed_name_never_reaches_another_servers_tool(spoofed: Session) -> None:
    """In either order, git__status is git's own status, and the upstream's git__status carries its server's prefix."""
    assert sorted(spoofed.tools) == ["echo", "evil__git__status", "git__status", "scopetool__status"]
    assert spoofed.origins["git__status"] == ("git", "status")
    assert spoofed.origins["evil__git__status"] == ("evil", "git__status")
    assert not spoofed.results["git"].is_error and text(spoofed.results["git"]) == GIT_STATUS
    assert text(spoofed.results["impostor"]) == "from the impostor"
    assert not [line for line in spoofed.said if "skipped" in line]


def test_a_deny_pattern_matches_whatever_the_case(spoofed: Session) -> None:
    """The docs' own "*delete*" hides a tool named Delete_repo: not listed, refused as unknown, audited as denied."""
    assert "Delete_repo" not in spoofed.tools
    assert spoofed.errors["denied"] == '-32602 error: tool "Delete_repo" is not available'
    [call] = [entry for entry in spoofed.audit if entry["event"] == "call" and entry["name"] == "Delete_repo"]
    assert (call["server"], call["reason"]) == ("scopetool", "denied")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"mcpServers": {"git": GIT, "git!": GIT}},
            "config: mcpServers.git!: its prefix 'git' is also mcpServers.git's: give one of them a prefix",
        ),
        (
            {"mcpServers": {"git": GIT, "vcs": {**GIT, "prefix": "git"}}},
            "config: mcpServers.vcs: its prefix 'git' is also mcpServers.git's",
        ),
        (
            {"mcpServers": {"a": {**GIT, "prefix": "x__y"}}},
            "config: mcpServers.a.prefix: must be 1 to 32 letters, digits, '_' or '-', without '__' and not ending",
        ),
        ({"mcpServers": {"a": {**GIT, "prefix": "git_"}}}, "config: mcpServers.a.prefix: must be 1 to 32"),
        ({"mcpServers": {"a": {**GIT, "poisoning": "warn"}}}, 'config: mcpServers.a.poisoning: must be "flag" or'),
        ({"mcpServers": {"a": GIT}, "gateway": {"poisoning": True}}, "config: gateway.poisoning: must be"),
    ],
)
def test_prefixes_are_unique_and_unambiguous_and_poisoning_is_a_choice(config: dict[str, Any], message: str) -> None:
    """Two servers with one prefix, a prefix holding "__" or ending in "_", a bad poisoning value: one line each."""
    with pytest.raises(ConfigError) as raised:
        parse_config(config)
    assert str(raised.value).startswith(message)


def test_a_prefix_made_from_a_server_name_is_unambiguous() -> None:
    """A name's runs of what a prefix cannot hold become one "_", a final "_" goes; the poisoning keys are read."""
    config = parse_config({"mcpServers": {"a": {**GIT, "poisoning": "flag"}}, "gateway": {"poisoning": "refuse"}})
    assert (config.poisoning, config.sections[0].poisoning) == ("refuse", "flag")
    assert parse_config({"mcpServers": {"a": GIT}}).poisoning == "flag"
    for first, second, prefix in (("my__git..", "my_git", "my_git"), ("...", "!!!", "server")):
        with pytest.raises(ConfigError, match=f"its prefix '{prefix}' is also mcpServers"):
            parse_config({"mcpServers": {first: GIT, second: GIT}})


# --- poisoning: flagged where the operator looks, removed or refused ----------------------------------------


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """The hostile ``poison`` server twice (flag, the default; refuse, per server) and the real servers beside them."""
    folder = tmp_path_factory.mktemp("poison")
    repository = folder / "repo"
    repository.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repository, check=True)
    config = {
        "mcpServers": {
            "evil": hostile("poison"),
            "strict": hostile("poison", poisoning="refuse"),
            "everything": {"command": everything_server()[0]},
            "git": {"command": git_server(repository)[0], "args": git_server(repository)[1:]},
        },
        "gateway": {"pins": "mcp.lock.json"},
    }
    calls = {"served": ("poisoned", {"text": "still works"}), "refused": ("strict__poisoned", {"text": "x"})}
    return session(folder, config, calls)


def test_a_poisoned_definition_is_served_without_its_invisible_characters(poisoned: Session) -> None:
    """Flag (the default): the client sees the description without tag, zero-width or bidi characters, and calls it."""
    description = poisoned.tools["poisoned"].description or ""
    assert description == "".join(char for char in POISON if not is_invisible(char))
    assert not [char for char in description if is_invisible(char)] and "<system>" in description
    assert text(poisoned.results["served"]) == "still works"
    assert poisoned.origins["poisoned"] == ("evil", "poisoned")


def test_a_poisoned_definition_is_refused_where_the_config_says_so(poisoned: Session) -> None:
    """Refuse (set on one server): its poisoned tool is not listed, a call to it is unknown, audited as refused."""
    assert "strict__poisoned" not in poisoned.tools and "strict__echo" in poisoned.tools
    refused = '-32602 error: tool "strict__poisoned" is not available; did you mean "poisoned" or "strict__echo"?'
    assert poisoned.errors["refused"] == refused  # only tools this client is listed
    [call] = [entry for entry in poisoned.audit if entry["event"] == "call" and entry["name"] == "strict__poisoned"]
    assert (call["server"], call["tool"], call["reason"]) == ("strict", "poisoned", "refused")


def test_what_screening_found_is_said_on_stderr_and_in_the_audit_log(poisoned: Session) -> None:
    """One flagged line and one flagged event per poisoned tool, naming each finding; refused said as such."""
    flagged = [line for line in poisoned.said if "flagged:" in line]
    assert [line.split(":")[1].strip() for line in flagged] == ["flagged", "flagged"]
    assert flagged[0].startswith('scopetool proxy: flagged: tool "poisoned" of MCP server "evil": /description: ')
    for expected in ("U+200B ZERO WIDTH SPACE", "U+202E RIGHT-TO-LEFT OVERRIDE", 'spelling "IGNORE"', "<system>"):
        assert expected in flagged[0]
    assert "ignore earlier instructions" in flagged[0] and '"~/.ssh"' in flagged[0]
    assert all(char.isprintable() for char in "".join(poisoned.said))
    refused = [line for line in poisoned.said if line.startswith("scopetool proxy: refused:")]
    assert refused == [
        'scopetool proxy: refused: tool "poisoned" of MCP server "strict" may be poisoned (see the flagged line) '
        'and "poisoning" is "refuse"'
    ]
    events = [entry for entry in poisoned.audit if entry["event"] == "flagged"]
    assert [(event["server"], event["tool"], event["poisoning"]) for event in events] == [
        ("evil", "poisoned", "flag"),
        ("strict", "poisoned", "refuse"),
    ]
    kinds = [(finding["at"], finding["kind"]) for finding in events[0]["findings"]]
    assert kinds == [("/description", "invisible")] + [("/description", "instruction")] * 3
    assert [entry["tool"] for entry in poisoned.audit if entry["event"] == "refused"] == ["poisoned"]


def test_the_real_servers_are_not_flagged(poisoned: Session) -> None:
    """The everything server and mcp-server-git are served whole, with no finding."""
    assert "get-sum" in poisoned.tools and "git_status" in poisoned.tools
    assert not [line for line in poisoned.said if "flagged" in line and ("everything" in line or '"git"' in line)]
    flagged = {entry["server"] for entry in poisoned.audit if entry["event"] == "flagged"}
    assert flagged == {"evil", "strict"}


def test_the_lock_file_shows_every_poisoned_character_and_pins_show_flags_it(
    poisoned: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first contact's lock file escapes each invisible character, reads back the same; pins show lists findings."""
    lock = poisoned.folder / "mcp.lock.json"
    written = lock.read_text(encoding="utf-8")
    assert all(char.isprintable() for char in written.replace("\n", ""))
    assert "\\u200b" in written and "\\u202e" in written and "\\udb40\\udc49" in written  # U+E0049 as JSON writes it
    assert PinFile(lock).pinned("evil")["poisoned"]["description"] == POISON
    assert main(["pins", "show", str(lock), "--server", "evil"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[:2] == ["evil echo pinned", "evil poisoned pinned"]
    assert [line.split(": ")[1] for line in shown[2:]] == ["/description"] * 4
    assert shown[2].startswith("  flagged (pinned): /description: invisible characters: U+200B ZERO WIDTH SPACE")
    assert main(["pins", "show", str(lock), "--server", "nobody"]) == 2
    assert "no MCP server 'nobody' is pinned (pinned: everything, evil, git, strict)" in capsys.readouterr().err
