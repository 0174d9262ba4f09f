r"""Pins: MCP tool definitions fingerprinted in a lock file, so a silent change is refused.

The lock file is JSON, meant to be committed: for each server (by the name it was connected under),
each accepted tool's definition exactly as the server listed it and its fingerprint, the SHA-256 of
its canonical JSON (members sorted as RFC 8785 sorts them, no whitespace). Every member of the
listing counts: ``description``, ``inputSchema``, ``outputSchema``, ``annotations``, ``title``,
``_meta`` and whatever else it carries. The file is written with sorted keys and a stable layout,
so a change reads well in a diff, and every character that does not print (a control, format or
tag character, a zero-width or bidirectional one, an unusual space: `scopetool.mcp.screening`) is
written as its ``\uXXXX`` escape, so nothing hides from the review; reading it gives the same text.

What `PinFile.check` decides when a server's tools are listed:

* first contact (the server is not in the file): every tool is accepted and recorded;
* a pinned tool listed unchanged: accepted;
* a pinned tool listed changed: refused, with a line naming what changed (the members, and for a
  schema the JSON Pointers where it differs); the new definition is recorded as pending;
* a tool new to a server already pinned: refused until accepted (recorded as pending). A server
  that grows a tool is a change like any other;
* a pinned tool the server no longer lists: reported (`PinCheck.missing`), kept in the file and
  noted there as missing.

`PinFile.accept(server, tool)` (or ``scopetool pins accept LOCKFILE SERVER [TOOL ...]``) makes a
pending definition the pinned one, or forgets a tool noted as missing (only when named).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

from .._json import canonical_json, is_array, is_object
from .screening import _class_of, is_invisible  # pyright: ignore[reportPrivateUsage] - one package

__all__ = ["LOCK_VERSION", "PinCheck", "PinError", "PinFile", "changes", "fingerprint"]

LOCK_VERSION: Final = 1
"""The lock file format this module writes and reads."""
_MAX_POINTERS: Final = 5


class PinError(ValueError):
    """A lock file cannot be read, or an accept names nothing pending; the message says which and where."""


def fingerprint(definition: Mapping[str, Any]) -> str:
    """The ``sha256:`` digest of a tool definition's canonical JSON."""
    return "sha256:" + hashlib.sha256(canonical_json(dict(definition))).hexdigest()


def changes(pinned: Mapping[str, Any], listed: Mapping[str, Any]) -> list[str]:
    """What differs between two definitions: each member by name, a schema's with its JSON Pointers."""
    found: list[str] = []
    for member in sorted(set(pinned) | set(listed)):
        if member not in listed:
            found.append(f"{member} removed")
        elif member not in pinned:
            found.append(f"{member} added")
        elif canonical_json(pinned[member]) != canonical_json(listed[member]):
            if is_object(pinned[member]) and is_object(listed[member]):
                pointers = _pointers(pinned[member], listed[member], "")
                shown = ", ".join(pointers[:_MAX_POINTERS]) + (" ..." if len(pointers) > _MAX_POINTERS else "")
                found.append(f"{member} at {shown}")
            else:
                found.append(member)
    return found


def _pointers(old: Any, new: Any, at: str) -> list[str]:
    if is_object(old) and is_object(new):
        found: list[str] = []
        for key in sorted(set(old) | set(new)):
            here = f"{at}/{_escape(key)}"
            if key not in old or key not in new:
                found.append(here)
            else:
                found.extend(_pointers(old[key], new[key], here))
        return found
    if is_array(old) and is_array(new) and len(old) == len(new):
        return [pointer for index in range(len(old)) for pointer in _pointers(old[index], new[index], f"{at}/{index}")]
    return [] if canonical_json(old) == canonical_json(new) else [at or "/"]


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


@final
@dataclass(frozen=True, slots=True)
class PinCheck:
    """What `PinFile.check` decided for one server's listing."""

    accepted: tuple[str, ...]
    """The tools that may be used: unchanged pins, and every tool on first contact."""
    refused: Mapping[str, str]
    """Each tool refused, with one line naming the tool and what changed."""
    missing: tuple[str, ...]
    """Pinned tools the server no longer lists."""
    recorded: tuple[str, ...]
    """Tools newly pinned by this check (first contact)."""


@final
class PinFile:
    """A lock file of pinned MCP tool definitions (missing file: nothing pinned yet).

    Example:
        ```python
        import tempfile, pathlib
        from scopetool.mcp.pins import PinFile

        path = pathlib.Path(tempfile.mkdtemp()) / "mcp.lock.json"
        pins = PinFile(path)
        echo = {"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}}
        print(pins.check("demo", {"echo": echo}).accepted)
        #> ('echo',)
        changed = {**echo, "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}
        print(PinFile(path).check("demo", {"echo": changed}).refused["echo"].split(";")[0])
        #> tool "echo" of MCP server "demo" changed since it was pinned (inputSchema at /properties)
        ```
    """

    __slots__ = ("_data", "_path")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        self._data = self._load()

    @property
    def path(self) -> Path:
        """Where the lock file is."""
        return self._path

    def servers(self) -> tuple[str, ...]:
        """The names of the pinned servers."""
        return tuple(sorted(self._data))

    def pinned(self, server: str) -> dict[str, dict[str, Any]]:
        """A copy of each pinned definition of `server`, by tool name."""
        tools = self._data.get(server, {}).get("tools", {})
        return {name: json.loads(json.dumps(entry["definition"])) for name, entry in tools.items()}

    def pending(self, server: str) -> dict[str, dict[str, Any]]:
        """A copy of each definition of `server` seen but not accepted, by tool name."""
        tools = self._data.get(server, {}).get("pending", {})
        return {name: json.loads(json.dumps(entry["definition"])) for name, entry in tools.items()}

    def check(self, server: str, listed: Mapping[str, Mapping[str, Any]]) -> PinCheck:
        """Check one server's listing (tool name to definition JSON) against the pins; record what is new.

        The file is written when something was recorded (a first contact, a new pending definition).
        """
        known: dict[str, Any] | None = self._data.get(server)
        before = canonical_json(known or {})
        first = known is None
        entry: dict[str, Any] = {"tools": {}, "pending": {}} if known is None else known
        tools: dict[str, Any] = entry.setdefault("tools", {})
        pending: dict[str, Any] = entry.setdefault("pending", {})
        accepted: list[str] = []
        refused: dict[str, str] = {}
        recorded: list[str] = []
        for name, definition in listed.items():
            digest = fingerprint(definition)
            pin = tools.get(name)
            if first:
                tools[name] = _entry(definition, digest)
                recorded.append(name)
                accepted.append(name)
            elif pin is not None and pin["sha256"] == digest:
                accepted.append(name)
                pending.pop(name, None)
            else:
                pending[name] = _entry(definition, digest)
                if pin is None:
                    what = "is new since the server was pinned"
                else:
                    what = f"changed since it was pinned ({'; '.join(changes(pin['definition'], definition))})"
                refused[name] = (
                    f'tool "{name}" of MCP server "{server}" {what}; '
                    f"accept it with: scopetool pins accept LOCKFILE {server} {name}"
                )
        missing = tuple(sorted(set(tools) - set(listed)))
        if missing:
            entry["missing"] = list(missing)
        else:
            entry.pop("missing", None)
        if not pending:
            entry.pop("pending", None)
        self._data[server] = entry
        if canonical_json(entry) != before:
            self.save()
        return PinCheck(tuple(accepted), refused, missing, tuple(recorded))

    def accept(self, server: str, tools: str | Iterable[str] | None = None) -> tuple[str, ...]:
        """Accept pending definitions of `server` (all, or the named `tools`); a named missing tool is forgotten.

        `tools` is one tool's name, several, or None for every pending one.

        Returns the names accepted (or forgotten), and writes the file.

        Raises:
            PinError: the server is not in the file, or a named tool is neither pending nor missing.
        """
        entry = self._data.get(server)
        if entry is None:
            raise PinError(
                f"{self._path}: no MCP server {server!r} is pinned (pinned: {', '.join(self.servers()) or 'none'})"
            )
        pinned: dict[str, Any] = entry.setdefault("tools", {})
        pending: dict[str, Any] = entry.get("pending", {})
        gone: list[str] = entry.get("missing", [])
        if isinstance(tools, str):
            tools = (tools,)
        names = sorted(pending) if tools is None else list(dict.fromkeys(tools))
        for name in names:
            if name not in pending and (tools is None or name not in gone):
                raise PinError(
                    f"{self._path}: tool {name!r} of MCP server {server!r} has no pending change to accept "
                    f"(pending: {', '.join(sorted(pending)) or 'none'}; no longer listed: {', '.join(gone) or 'none'})"
                )
        for name in names:
            if name in pending:
                pinned[name] = pending.pop(name)
            else:  # forgetting a pin the server no longer lists: only by name, never by "accept all"
                pinned.pop(name, None)
                gone.remove(name)
        for key, value in (("pending", pending), ("missing", gone)):
            if not value:
                entry.pop(key, None)
        self.save()
        return tuple(names)

    def save(self) -> None:
        """Write the file (sorted keys, two-space indents, non-printing characters escaped), atomically."""
        document = {"version": LOCK_VERSION, "servers": self._data}
        text = _unprintable().sub(_escaped, json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)) + "\n"
        self._path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=self._path.name, suffix=".tmp", dir=self._path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
            Path(temporary).replace(self._path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def _load(self) -> dict[str, Any]:
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise PinError(f"{self._path}: cannot read the lock file: {error.strerror or error}") from None
        try:
            document = json.loads(text)
        except ValueError as error:
            raise PinError(f"{self._path}: not JSON: {error}") from None
        if not is_object(document) or document.get("version") != LOCK_VERSION or not is_object(document.get("servers")):
            expected = f'{{"version": {LOCK_VERSION}, "servers": {{...}}}}'
            raise PinError(f"{self._path}: not a scopetool MCP lock file (expected {expected})")
        servers: dict[str, Any] = document["servers"]
        for server, entry in servers.items():
            if not is_object(entry):
                raise PinError(f"{self._path}: servers.{server}: expected an object of tools")
            gone: object = entry.get("missing", [])
            if not is_array(gone) or not all(isinstance(name, str) for name in gone):
                raise PinError(f"{self._path}: servers.{server}.missing: expected a list of tool names")
            for part in ("tools", "pending"):
                pins: object = entry.get(part, {})
                if not is_object(pins):
                    raise PinError(f"{self._path}: servers.{server}.{part}: expected an object of tools")
                for name, pin in pins.items():
                    where = f"{self._path}: servers.{server}.{part}.{name}"
                    if (
                        not is_object(pin)
                        or not is_object(pin.get("definition"))
                        or not isinstance(pin.get("sha256"), str)
                    ):
                        raise PinError(f"{where}: expected sha256 and definition")
                    if fingerprint(pin["definition"]) != pin["sha256"]:
                        raise PinError(
                            f"{where}: the sha256 does not match the definition "
                            "(edited by hand?): restore it, or delete the entry to pin the tool again"
                        )
        return servers


@functools.cache
def _unprintable() -> re.Pattern[str]:
    """A character that may not print: every one of the BMP's that does not, and any beyond it (`_escaped` decides)."""
    return re.compile(f"{_class_of(_hidden, range(0x7F, 0x10000))}|[\U00010000-\U0010ffff]")


def _hidden(char: str) -> bool:
    return not char.isprintable() or is_invisible(char)


def _escaped(match: re.Match[str]) -> str:
    r"""The character as it is if it prints, else its JSON escape (``\uXXXX``; two beyond U+FFFF, as JSON has it)."""
    char = match.group()
    return json.dumps(char)[1:-1] if _hidden(char) else char


def _entry(definition: Mapping[str, Any], digest: str) -> dict[str, Any]:
    return {"definition": json.loads(json.dumps(dict(definition))), "sha256": digest}
