"""Pins on their own: fingerprints, what a change names, the lock file's layout and its errors; ``pins show``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scopetool.cli import main
from scopetool.mcp.pins import PinError, PinFile, changes, fingerprint

ECHO: dict[str, Any] = {
    "name": "echo",
    "description": "Echo a message",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
}


def test_the_fingerprint_is_canonical() -> None:
    """Member order and white space do not change the digest; any value does."""
    shuffled = json.loads(
        json.dumps({"inputSchema": ECHO["inputSchema"], "name": "echo", "description": "Echo a message"})
    )
    assert fingerprint(shuffled) == fingerprint(ECHO)
    assert fingerprint(ECHO).startswith("sha256:") and len(fingerprint(ECHO)) == 7 + 64
    assert fingerprint({**ECHO, "description": "Echo a message."}) != fingerprint(ECHO)


def test_changes_name_members_and_json_pointers() -> None:
    """Each changed member is named; a schema's change with the pointers where it differs."""
    changed = json.loads(json.dumps(ECHO))
    changed["inputSchema"]["properties"]["message"]["maxLength"] = 10
    changed["inputSchema"]["required"] = ["message", "loud"]
    changed["inputSchema"]["properties"]["a/b~c"] = {"type": "string"}
    changed["annotations"] = {"readOnlyHint": True}
    del changed["description"]
    assert changes(ECHO, changed) == [
        "annotations added",
        "description removed",
        "inputSchema at /properties/a~1b~0c, /properties/message/maxLength, /required",
    ]
    assert changes({**ECHO, "title": "Echo"}, {**ECHO, "title": "Echo!"}) == ["title"]
    many = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(7)}}
    assert changes({"inputSchema": many}, {"inputSchema": {**many, "properties": {}}})[0].endswith(" ...")
    assert changes({"inputSchema": {"enum": [1, 2]}}, {"inputSchema": {"enum": [1, 3]}}) == ["inputSchema at /enum/1"]


def test_check_pins_first_contact_then_refuses_changes_and_new_tools(tmp_path: Path) -> None:
    """First contact pins all; later an unchanged tool passes, a changed or new one waits, a gone one is missing."""
    lock = tmp_path / "sub" / "mcp.lock.json"
    first = PinFile(lock).check("demo", {"echo": ECHO, "ping": {"name": "ping", "inputSchema": {"type": "object"}}})
    assert (first.accepted, first.recorded, dict(first.refused), first.missing) == (
        ("echo", "ping"),
        ("echo", "ping"),
        {},
        (),
    )
    written = lock.read_text()
    assert written.endswith("}\n") and json.loads(written)["version"] == 1
    again = PinFile(lock).check("demo", {"echo": ECHO, "ping": {"name": "ping", "inputSchema": {"type": "object"}}})
    assert again.accepted == ("echo", "ping") and lock.read_text() == written  # nothing new: not rewritten
    later = PinFile(lock).check("demo", {"echo": {**ECHO, "description": "Shout"}, "new": {"name": "new"}})
    assert later.accepted == ()
    assert later.missing == ("ping",)
    assert "changed since it was pinned (description)" in later.refused["echo"]
    assert "is new since the server was pinned" in later.refused["new"]
    pins = PinFile(lock)
    assert set(pins.pending("demo")) == {"echo", "new"}
    assert pins.pinned("demo")["echo"] == ECHO
    assert pins.accept("demo") == ("echo", "new")
    assert PinFile(lock).pinned("demo")["echo"]["description"] == "Shout"
    assert PinFile(lock).pending("demo") == {}
    # A change that goes back to what is pinned clears the pending entry.
    PinFile(lock).check("demo", {"echo": ECHO})
    assert set(PinFile(lock).pending("demo")) == {"echo"}
    PinFile(lock).check("demo", {"echo": {**ECHO, "description": "Shout"}})
    assert PinFile(lock).pending("demo") == {}


def test_each_server_is_pinned_apart(tmp_path: Path) -> None:
    """Two servers in one file: a first contact for the second does not touch the first."""
    lock = tmp_path / "mcp.lock.json"
    PinFile(lock).check("a", {"echo": ECHO})
    PinFile(lock).check("b", {"echo": {**ECHO, "description": "other"}})
    pins = PinFile(lock)
    assert pins.servers() == ("a", "b")
    assert pins.pinned("a")["echo"]["description"] == "Echo a message"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[", "not JSON"),
        ('{"version": 2, "servers": {}}', "not a scopetool MCP lock file"),
        ('{"version": 1, "servers": {"a": {"tools": {"echo": {"sha256": 1}}}}}', "servers.a.tools.echo"),
        ('{"version": 1, "servers": {"a": []}}', "servers.a: expected an object"),
        ('{"version": 1, "servers": {"a": {"tools": []}}}', "servers.a.tools: expected an object"),
        ('{"version": 1, "servers": {"a": {"missing": "echo"}}}', "servers.a.missing: expected a list"),
        (
            '{"version": 1, "servers": {"a": {"tools": {"echo": {"sha256": "sha256:0", "definition": {}}}}}}',
            "does not match the definition",
        ),
    ],
)
def test_a_broken_lock_file_is_refused_by_place(tmp_path: Path, text: str, problem: str) -> None:
    """A lock file that is not JSON, not ours, malformed or edited by hand: PinError naming the file and place."""
    lock = tmp_path / "mcp.lock.json"
    lock.write_text(text)
    with pytest.raises(PinError, match=problem) as caught:
        PinFile(lock)
    assert str(lock) in str(caught.value)


def test_an_unreadable_lock_file(tmp_path: Path) -> None:
    """A lock file path that is a folder is a PinError, not a traceback."""
    with pytest.raises(PinError, match="cannot read the lock file"):
        PinFile(tmp_path)


def test_pins_show_lists_pinned_and_pending(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``scopetool pins show`` prints one line per pinned or pending tool; ``accept`` of nothing says so."""
    lock = tmp_path / "mcp.lock.json"
    PinFile(lock).check("demo", {"echo": ECHO})
    PinFile(lock).check("demo", {"echo": {**ECHO, "title": "Echo"}, "ping": {"name": "ping"}})
    assert main(["pins", "show", str(lock)]) == 0
    assert capsys.readouterr().out.splitlines() == ["demo echo pinned (changed: pending)", "demo ping new (pending)"]
    assert main(["pins", "accept", str(lock), "demo"]) == 0
    assert main(["pins", "accept", str(lock), "demo"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "accepted demo echo",
        "accepted demo ping",
        "nothing pending for demo",
    ]


def test_accepting_one_change_keeps_the_others_pending(tmp_path: Path) -> None:
    """``accept(server, [tool])`` takes that tool's pending definition only."""
    lock = tmp_path / "mcp.lock.json"
    pins = PinFile(lock)
    assert pins.path == lock
    pins.check("demo", {"echo": ECHO})
    PinFile(lock).check("demo", {"echo": {**ECHO, "title": "Echo"}, "ping": {"name": "ping"}})
    assert PinFile(lock).accept("demo", "ping") == ("ping",)
    assert set(PinFile(lock).pending("demo")) == {"echo"}


def test_a_failed_write_leaves_the_lock_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails removes its temporary file and leaves the old lock file whole."""
    lock = tmp_path / "mcp.lock.json"
    PinFile(lock).check("demo", {"echo": ECHO})
    before = lock.read_text()

    def refuse(self: Path, target: Path) -> Path:
        raise OSError("disk full")

    monkeypatch.setattr(Path, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        PinFile(lock).check("other", {"echo": ECHO})
    assert lock.read_text() == before
    assert [path.name for path in tmp_path.iterdir()] == ["mcp.lock.json"]


def test_only_a_tool_noted_missing_can_be_forgotten(tmp_path: Path) -> None:
    """Naming a pinned tool the server still lists is an error, not a silent unpin; a missing one is forgotten."""
    lock = tmp_path / "mcp.lock.json"
    ping = {"name": "ping", "inputSchema": {"type": "object"}}
    PinFile(lock).check("demo", {"echo": ECHO, "ping": ping})
    with pytest.raises(PinError, match="'echo' of MCP server 'demo' has no pending change"):
        PinFile(lock).accept("demo", "echo")
    assert set(PinFile(lock).pinned("demo")) == {"echo", "ping"}
    assert PinFile(lock).check("demo", {"echo": ECHO}).missing == ("ping",)
    assert json.loads(lock.read_text())["servers"]["demo"]["missing"] == ["ping"]
    assert PinFile(lock).accept("demo") == ()  # accepting everything pending forgets nothing
    assert set(PinFile(lock).pinned("demo")) == {"echo", "ping"}
    assert PinFile(lock).accept("demo", "ping") == ("ping",)
    assert set(PinFile(lock).pinned("demo")) == {"echo"}
    assert "missing" not in json.loads(lock.read_text())["servers"]["demo"]
    assert PinFile(lock).check("demo", {"echo": ECHO}).missing == ()
