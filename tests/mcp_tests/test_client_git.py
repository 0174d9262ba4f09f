"""The MCP client against ``mcp-server-git`` from PyPI, on a git repository made for the test, and its pins.

The pins tests change what the lock file says a tool was (as a server changing under a pin looks
from the client's side), reconnect, and read the refusal; then accept the change with the CLI.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from client_support import Served, recorded, served, tool_calls
from third_party import git_server

from scopetool import Failure, InvalidInvocationError, Request, classify_failure
from scopetool.cli import main
from scopetool.mcp.pins import PinFile, fingerprint


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    """An event loop in a thread for the module's connections."""
    with start_blocking_portal() as portal:
        yield portal


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with one commit and one unstaged change."""
    folder = tmp_path_factory.mktemp("repository")
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    (folder / "notes.txt").write_text("one\n")
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first notes"], check=True)
    (folder / "notes.txt").write_text("one\ntwo\n")
    return folder


@pytest.fixture(scope="module")
def git(portal: BlockingPortal, repository: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The git server on `repository`, recorded, pinned in a fresh lock file."""
    folder = tmp_path_factory.mktemp("git")
    log, lock = folder / "sent.jsonl", folder / "mcp.lock.json"
    with served(portal, recorded(log, git_server(repository)), name="git", log=log, lock=lock) as server:
        yield server


def test_lists_and_calls(git: Served, repository: Path) -> None:
    """The git tools are listed and called: status and log of the repository."""
    names = {tool.definition().name for tool in git.client.tools}
    assert {"git_status", "git_log", "git_diff_unstaged", "git_show"} <= names
    status = git.call("git_status", json.dumps({"repo_path": str(repository)})).output.text() or ""
    assert "notes.txt" in status
    log = git.call("git_log", json.dumps({"repo_path": str(repository), "max_count": 1})).output.text() or ""
    assert "first notes" in log


@pytest.mark.parametrize(
    "arguments",
    [
        {"context_lines": 3},  # repo_path is required
        {"repo_path": ".", "context_lines": "3"},  # a string for an integer
        {"repo_path": ".", "context_lines": 1.5},
        {"repo_path": ".", "unknown": True},
    ],
)
def test_bad_arguments_never_leave(git: Served, arguments: dict[str, object]) -> None:
    """Arguments the git server's schema refuses are rejected by the contract and never sent."""
    assert git.log is not None
    before = len(tool_calls(git.log))
    with pytest.raises(InvalidInvocationError):
        git.binding("git_diff_unstaged").contract.prepare(Request("git_diff_unstaged", json.dumps(arguments)))
    assert len(tool_calls(git.log)) == before


def test_is_error_is_a_failure(git: Served, repository: Path) -> None:
    """A git error (an unknown revision) comes back as ``isError``: a Failure with the server's text."""
    with pytest.raises(Failure) as caught:
        git.call("git_show", json.dumps({"repo_path": str(repository), "revision": "no-such-revision"}))
    failure = classify_failure(caught.value)
    assert failure is not None
    assert "no-such-revision" in (failure.output.text() or "")


def _rewrite(lock: Path, change: dict[str, object]) -> None:
    """Apply `change` (tool name to new definition, or None to remove the pin) to the lock file's pins."""
    document = json.loads(lock.read_text())
    tools = document["servers"]["git"]["tools"]
    for name, definition in change.items():
        if definition is None:
            del tools[name]
        else:
            tools[name] = {"definition": definition, "sha256": fingerprint(definition)}  # type: ignore[arg-type]
    lock.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def test_a_changed_definition_is_refused_until_accepted(
    git: Served, portal: BlockingPortal, repository: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A changed, a new and a vanished tool: refused, refused, reported; accepted with the CLI, then used."""
    assert git.lock is not None
    lock = tmp_path / "mcp.lock.json"
    lock.write_text(git.lock.read_text())
    status = json.loads(json.dumps(git.client.definitions["git_status"]))
    status["description"] = "Shows the working tree status (an older text)"
    status["inputSchema"]["properties"]["repo_path"]["type"] = "integer"
    gone = {"name": "git_rebase", "inputSchema": {"type": "object"}}
    _rewrite(lock, {"git_status": status, "git_log": None, "git_rebase": gone})
    spec = recorded(tmp_path / "sent.jsonl", git_server(repository))
    with served(portal, spec, name="git", lock=lock) as again:
        refused = dict(again.client.refused)
        assert set(refused) == {"git_status", "git_log"}
        assert refused["git_status"].startswith('tool "git_status" of MCP server "git" changed since it was pinned')
        assert "description" in refused["git_status"]
        assert "inputSchema at /properties/repo_path/type" in refused["git_status"]
        assert "is new since the server was pinned" in refused["git_log"]
        assert again.client.missing == ("git_rebase",)
        names = {tool.definition().name for tool in again.client.tools}
        assert "git_status" not in names and "git_log" not in names and "git_diff" in names
    assert set(PinFile(lock).pending("git")) == {"git_status", "git_log"}
    assert main(["pins", "accept", str(lock), "git", "git_status", "git_log", "git_rebase"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "accepted git git_status",
        "accepted git git_log",
        "accepted git git_rebase",
    ]
    with served(portal, spec, name="git", lock=lock) as accepted:
        assert dict(accepted.client.refused) == {}
        assert accepted.client.missing == ()
        assert "notes.txt" in (
            accepted.call("git_status", json.dumps({"repo_path": str(repository)})).output.text() or ""
        )
    assert PinFile(lock).pinned("git") == dict(git.client.definitions)


def test_pins_cli_usage_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown server, a tool with nothing pending, a broken file: exit 2 and one line each."""
    lock = tmp_path / "mcp.lock.json"
    PinFile(lock).check("git", {"git_status": {"name": "git_status", "inputSchema": {"type": "object"}}})
    assert main(["pins", "accept", str(lock), "github"]) == 2
    assert main(["pins", "accept", str(lock), "git", "git_log"]) == 2
    lock.write_text("{")
    assert main(["pins", "show", str(lock)]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 3
    assert "no MCP server 'github' is pinned (pinned: git)" in errors[0]
    assert "tool 'git_log' of MCP server 'git' has no pending change" in errors[1]
    assert "not JSON" in errors[2]
