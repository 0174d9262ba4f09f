"""The gateway's config: `load_config` and `parse_config` make a checked `GatewayConfig`.

``scopetool proxy CONFIG`` reads the ``mcpServers`` JSON MCP clients use, with the gateway's own keys
(`scopetool.mcp.gateway` runs what it describes; the reference is ``docs/mcp-gateway.md``). Every
unknown key is an error, and every error is one line naming the key and the file (`ConfigError`).
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, cast, final

from .._feedback import did_you_mean, nearest
from .._json import syntax_problem
from .._principal import Principal
from ._gateway_tasks import GatewayTasks, TaskSettingError, parse_tasks
from .auth import HttpAuth, load_tokens
from .client import (
    CALL_TIMEOUT,
    LIST_TIMEOUT,
    MAX_DESCRIPTION_BYTES,
    MAX_LISTING_BYTES,
    MAX_MESSAGE_BYTES,
    RELIST_INTERVAL,
    START_TIMEOUT,
    ServerSpec,
    server_spec,
)
from .limits import LIMIT_STORE_TIMEOUT, Limit, Limits
from .server import HttpSettings, ToolSearch

if TYPE_CHECKING:
    from ..code import CodeLimits

__all__ = [
    "LOCAL",
    "PREFIX",
    "SEPARATOR",
    "ConfigError",
    "GatewayConfig",
    "Section",
    "ToolFilter",
    "load_config",
    "parse_config",
    "safe_prefix",
    "section_key",
]

LOCAL: Final = "scopetool"
"""The config key of the local tools' section, and their server name in names and the audit log."""
SEPARATOR: Final = "__"
"""What joins a prefix and a tool name: ``git__status``."""

_TIMEOUT_KEYS: Final = ("startTimeout", "listTimeout", "callTimeout", "relistInterval")
"""The time bounds of a remote server, in the ``gateway`` section and in each ``mcpServers`` entry."""
_SECTION_KEYS: Final = frozenset(
    {"allow", "deny", "policy", "prefix", "trusted", "poisoning", "scopes", "toolScopes", "limits", *_TIMEOUT_KEYS}
)
_LOCAL_KEYS: Final = frozenset({"tools", "allow", "deny", "policy", "prefix", "scopes", "toolScopes", "limits"})
_LIMIT_KEYS: Final = frozenset({"rate", "concurrency"})
_LIMITS_KEYS: Final = frozenset({"caller", "tool", "tools", "redis", "storeTimeout"})
_PRINCIPAL_KEYS: Final = frozenset({"subject", "clientId", "scopes"})
_SCOPE: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
"""An OAuth scope token (RFC 6749, section 3.3): printable ASCII but space, double quote and backslash."""
_GATEWAY_KEYS: Final = frozenset(
    {
        "name",
        "principal",
        "limits",
        "instructions",
        "pins",
        "audit",
        "auditArguments",
        "allow",
        "deny",
        "policy",
        "prefix",
        "poisoning",
        *_TIMEOUT_KEYS,
        "maxMessageBytes",
        "maxDescriptionBytes",
        "maxListingBytes",
        "toolSearch",
        "auth",
        "tasks",
        "codeMode",
    }
)
_CODE_KEYS: Final = {
    "cpuSeconds": "cpu_seconds",
    "wallSeconds": "wall_seconds",
    "memoryBytes": "memory_bytes",
    "outputBytes": "output_bytes",
    "nestedCalls": "nested_calls",
    "recursionDepth": "recursion_depth",
    "codeBytes": "code_bytes",
    "workers": "workers",
}
"""The keys of ``gateway.codeMode``, and the `scopetool.code.CodeLimits` field each sets."""
_HTTP_KEYS: Final = {
    "sessionIdleTimeout": "session_idle_timeout",
    "maxSessions": "max_sessions",
    "headerTimeout": "header_timeout",
    "bodyTimeout": "body_timeout",
    "keepAliveTimeout": "keep_alive_timeout",
    "maxConnections": "max_connections",
    "allowedHosts": "allowed_hosts",
    "allowedOrigins": "allowed_origins",
    "stateless": "stateless",
}
"""The ``gateway`` keys of its HTTP server's settings (``proxy --http``), and the `HttpSettings` field of each."""
_AUTH_KEYS: Final = {"issuer": "issuer", "audience": "audience", "scopes": "scopes", "tokenFile": "tokens"}
"""The keys of ``gateway.auth``, and the `HttpAuth` setting each gives (what its errors start with)."""
_TOP_KEYS: Final = frozenset({"mcpServers", LOCAL, "gateway"})
PREFIX: Final = re.compile(r"(?!.*__)[A-Za-z0-9_-]{0,31}[A-Za-z0-9-]")
"""1 to 32 of ``A-Z a-z 0-9 _ -``, no ``__`` and no final ``_``: a served name splits at its first ``__``."""
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_-]+")


class ConfigError(ValueError):
    """The gateway config is not usable; the message is one line naming the key and where it is."""


# -- the config --------------------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class ToolFilter:
    """Which tool names pass: any ``allow`` pattern (every name when `allow` is None) and no ``deny`` one.

    Patterns are shell-style (`fnmatch.fnmatchcase`: ``*``, ``?``, ``[seq]``), matched against the
    name the tool's server gives it. ``deny`` wins over ``allow``; ``"allow": []`` lets nothing pass.
    Both fail closed: a ``deny`` pattern matches whatever the case (pattern and name compared after
    NFKC normalisation and `str.casefold`, so ``*delete*`` denies ``Delete_repo``), an ``allow``
    pattern only in the exact case it is written (``git_*`` does not allow ``GIT_PUSH``).

    Example:
        ```python
        from scopetool.mcp.gateway import ToolFilter

        only_reads = ToolFilter(allow=("git_status", "git_log", "git_show"), deny=("*commit*",))
        print(only_reads.passes("git_log"), only_reads.passes("git_commit"), only_reads.passes("git_add"))
        #> True False False
        print(ToolFilter(deny=("*delete*",)).passes("Delete_repo"), only_reads.passes("GIT_LOG"))
        #> False False
        ```
    """

    allow: tuple[str, ...] | None = None
    """The patterns a name must match one of, or None to allow every name."""
    deny: tuple[str, ...] = ()
    """The patterns no name may match."""

    def passes(self, name: str) -> bool:
        """Whether `name` is allowed and not denied."""
        folded = _folded(name)
        if any(fnmatch.fnmatchcase(folded, _folded(pattern)) for pattern in self.deny):
            return False
        return self.allow is None or any(fnmatch.fnmatchcase(name, pattern) for pattern in self.allow)


def _folded(text: str) -> str:
    """`text` as a case-blind comparison sees it: NFKC-normalised (full-width letters are letters), case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


@final
@dataclass(frozen=True, slots=True)
class Section:
    """One server of the config: an ``mcpServers`` entry, or the local tools (`LOCAL`)."""

    name: str
    """The key in the config: the server's name in pins, names and the audit log."""
    spec: ServerSpec | None = None
    """How to reach the MCP server; None for the local section."""
    targets: tuple[str, ...] = ()
    """The local section's tools: ``module:attr`` or ``path/to/file.py:attr`` targets."""
    filter: ToolFilter = field(default_factory=ToolFilter)
    """The section's own allow / deny lists."""
    policy: str | None = None
    """The section's policy target (``module:function``), or None."""
    prefix: str | None = None
    """The prefix its tools get when their names collide; None: the section name, made safe."""
    trusted: bool = False
    """Whether the server's annotations become effects (`scopetool.mcp.client.connect`)."""
    start_timeout: float | None = None
    """Seconds the server gets to start and complete the MCP handshake; None: the gateway's."""
    list_timeout: float | None = None
    """Seconds the server gets to list its tools (every page); None: the gateway's."""
    call_timeout: float | None = None
    """Seconds each call waits for the server's answer; None: the gateway's."""
    relist_interval: float | None = None
    """The least seconds between two re-lists the server's tool list changes prompt; None: the gateway's."""
    poisoning: Literal["flag", "refuse"] | None = None
    """What a screening finding does to this server's tools; None: the gateway's `GatewayConfig.poisoning`."""
    scopes: frozenset[str] = frozenset()
    """The scopes a caller needs for every tool of this server (``scopes``)."""
    tool_scopes: tuple[tuple[str, frozenset[str]], ...] = ()
    """``toolScopes``: per tool-name pattern (matched as a ``deny`` pattern is: whatever the case), the
    scopes a caller needs, besides `scopes`, for each tool it matches."""

    limits: Limit | None = None
    """The limit of each of this server's tools (``limits``), unless ``gateway.limits.tools`` names it."""

    def required_scopes(self, tool: str) -> frozenset[str]:
        """The scopes a caller needs for this server's tool `tool` (its own name): `scopes`, and each match's."""
        folded = _folded(tool)
        matching = (scopes for pattern, scopes in self.tool_scopes if fnmatch.fnmatchcase(folded, _folded(pattern)))
        return self.scopes.union(*matching)


@final
@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """A parsed gateway config (`load_config`); relative paths are already resolved against its folder."""

    sections: tuple[Section, ...]
    """The servers in config order, the local section (when there is one) first."""
    name: str = "scopetool-gateway"
    """The server name the gateway's clients are told."""
    instructions: str | None = None
    """Instructions for the clients' model, or None."""
    principal: Principal | None = None
    """The caller every request runs as over stdio (``gateway.principal``); None: no caller is known there."""
    limits: Limits = field(default_factory=Limits)
    """``gateway.limits``: per caller, per tool (every tool, and by served name), and where rates are counted."""
    pins: Path | None = None
    """The lock file the remote tools are pinned in, or None to pin nothing."""
    audit: Path | None = None
    """The audit log (JSON lines, appended), or None for none."""
    audit_arguments: bool = False
    """Whether the audit log records each call's arguments (never, unless this is true)."""
    filter: ToolFilter = field(default_factory=ToolFilter)
    """The allow / deny lists every tool must pass, whatever its server."""
    policy: str | None = None
    """The policy target every call must pass, or None."""
    prefix: Literal["collisions", "always"] = "collisions"
    """``collisions``: prefix only names that collide; ``always``: prefix every name."""
    start_timeout: float = START_TIMEOUT
    """Seconds each server gets to start and complete the MCP handshake, unless its entry says otherwise."""
    list_timeout: float = LIST_TIMEOUT
    """Seconds each server gets to list its tools (every page), unless its entry says otherwise."""
    call_timeout: float = CALL_TIMEOUT
    """Seconds each call waits for its server's answer, unless the server's entry says otherwise."""
    relist_interval: float = RELIST_INTERVAL
    """The least seconds between two re-lists of a server whose tools change, unless its entry says otherwise."""
    max_message_bytes: int = MAX_MESSAGE_BYTES
    """The cap on one message read from a server (``connect``'s ``max_message_bytes``)."""
    max_description_bytes: int = MAX_DESCRIPTION_BYTES
    """The cap on each text of a server's tool definitions (``connect``'s ``max_description_bytes``)."""
    max_listing_bytes: int = MAX_LISTING_BYTES
    """The cap on one whole listing of a server's tools, every page (``connect``'s ``max_listing_bytes``)."""
    http_settings: HttpSettings = field(default_factory=HttpSettings)
    """The bounds and allowed hosts of the gateway's HTTP server (``proxy --http``)."""
    auth: HttpAuth | None = None
    """How the gateway's HTTP server authenticates its callers (``gateway.auth``), or None: no authentication."""
    poisoning: Literal["flag", "refuse"] = "flag"
    """A tool with a screening finding: ``flag`` serves it without its invisible characters and says what was
    found; ``refuse`` does not serve it (`scopetool.mcp.screening`)."""
    tool_search: ToolSearch | None = None
    """``toolSearch``: serve ``search_tools`` and ``call_tool`` (and the served tools its ``alwaysShow`` names) in
    place of the whole list (`scopetool.mcp.server.ToolSearch`); None serves the whole list."""
    tasks: GatewayTasks | None = None
    """``tasks``: answer long calls of SAFE and IDEMPOTENT tools with MCP tasks (`GatewayTasks`); None: never."""
    code_mode: CodeLimits | None = None
    """``codeMode``: serve ``run_code`` in place of the list, its snippets bounded by these limits
    (`scopetool.code.CodeLimits`); None: no code mode."""
    base: Path = Path()
    """The folder relative paths and targets were resolved against (the config file's)."""
    source: str = "config"
    """The config file's path as given (what errors found after loading name it by), or ``config``."""


def load_config(path: str | Path) -> GatewayConfig:
    """Read and check the gateway config at `path` (a JSON file); see `parse_config`.

    Raises:
        ConfigError: the file cannot be read, is not strict JSON, or its content is not a valid config.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read {str(path)!r}: {error.strerror or error}") from None
    problem = syntax_problem(raw)
    if problem is not None:
        raise ConfigError(f"{path}: not a JSON object: {problem.message}")
    return parse_config(json.loads(raw), base=path.resolve().parent, source=str(path))


def parse_config(data: object, *, base: Path = Path(), source: str = "config") -> GatewayConfig:
    """Check a config's JSON value and make it a `GatewayConfig`; every unknown key is an error.

    The shape: ``{"mcpServers": {NAME: ENTRY, ...}, "scopetool": {...}, "gateway": {...}}``. Each ENTRY
    is what MCP clients take (``command`` / ``args`` / ``env`` / ``cwd``, or ``url`` / ``headers``) plus
    the gateway's ``allow``, ``deny``, ``policy``, ``prefix``, ``trusted``, ``poisoning``, ``scopes`` (a
    list of OAuth scopes), ``toolScopes`` (``{PATTERN: [SCOPE, ...]}``) and the server's own
    ``startTimeout``, ``listTimeout``, ``callTimeout`` and ``relistInterval``; ``scopetool`` lists local
    ``tools`` targets (with ``allow``, ``deny``, ``policy``, ``prefix``, ``scopes``, ``toolScopes``); ``gateway`` holds
    ``name``, ``instructions``, ``principal`` (``{"subject", "clientId", "scopes"}``: the caller over
    stdio), ``limits`` (``{"caller": LIMIT, "tool": LIMIT, "tools": {NAME: LIMIT}, "redis": URL,
    "storeTimeout": SECONDS}``, each LIMIT ``{"rate": "10/second", "concurrency": 4}``; a server entry's
    ``limits`` is one LIMIT for each of its tools), ``pins``, ``audit``, ``auditArguments``, ``allow``,
    ``deny``, ``policy``, ``prefix`` (``"collisions"`` or ``"always"``), ``poisoning`` (``"flag"`` or
    ``"refuse"``), the timeouts every server gets unless its entry says otherwise: ``startTimeout``,
    ``listTimeout``, ``callTimeout``, ``relistInterval`` (seconds > 0), the caps ``maxMessageBytes``,
    ``maxDescriptionBytes`` and ``maxListingBytes``, ``toolSearch`` (true, or ``{"alwaysShow": [SERVED_NAME, ...]}``:
    ``search_tools`` and ``call_tool`` in place of the list), its HTTP server's settings
    (`scopetool.mcp.server.HttpSettings`): ``sessionIdleTimeout``, ``maxSessions``, ``headerTimeout``,
    ``bodyTimeout``, ``keepAliveTimeout``, ``maxConnections``, ``allowedHosts``, ``allowedOrigins``,
    ``stateless``, and ``auth``: how its callers are authenticated (`scopetool.mcp.auth.HttpAuth`:
    ``issuer``, ``audience``, ``scopes``, ``tokenFile``), ``tasks`` (true, or ``{"store": PATH, "ttl":
    SECONDS}``: long calls answered with MCP tasks), and ``codeMode`` (true, or an object of
    `scopetool.code.CodeLimits` fields in camelCase, such as ``{"nestedCalls": 20}``: ``run_code`` in
    place of the list). No two servers may have the same prefix.
    Relative paths (pins, audit, file targets, ``cwd``, ``tokenFile``, the tasks' store) are taken from `base`.

    Raises:
        ConfigError: one line naming the key and where it is (`source`).

    Example:
        ```python
        from scopetool.mcp.gateway import ConfigError, parse_config

        config = parse_config({"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"],
                                                      "deny": ["git_commit"]}}})
        print(config.sections[0].name, config.sections[0].filter.deny)
        #> git ('git_commit',)
        try:
            parse_config({"mcpServers": {"git": {"command": "uvx", "alow": ["git_log"]}}})
        except ConfigError as error:
            print(str(error).partition(" (")[0])
        #> config: mcpServers.git: unknown key 'alow'; did you mean "allow"?
        ```
    """
    top = _object(data, source, "the config")
    _known(top, _TOP_KEYS, source, "the config")
    servers = _object(top.get("mcpServers", {}), source, "mcpServers")
    gateway = _object(top.get("gateway", {}), source, "gateway")
    _known(gateway, _GATEWAY_KEYS | _HTTP_KEYS.keys(), source, "gateway")
    sections: list[Section] = []
    if LOCAL in top:
        sections.append(_local(top[LOCAL], base, source))
    for name, entry in servers.items():
        where = f"mcpServers.{name}"
        if name == LOCAL:
            raise ConfigError(f"{source}: {where}: {LOCAL!r} is the local tools' section; name the server otherwise")
        sections.append(_remote(name, entry, base, source, where))
    if not sections:
        raise ConfigError(f"{source}: no servers: add mcpServers entries or a {LOCAL!r} section of local tools")
    owners: dict[str, Section] = {}
    for section in sections:
        other = owners.setdefault(safe_prefix(section), section)
        if other is not section:
            raise ConfigError(
                f"{source}: {section_key(section)}: its prefix {safe_prefix(section)!r} is also "
                f"{section_key(other)}'s: give one of them a prefix of its own"
            )
    prefix = gateway.get("prefix", "collisions")
    if prefix not in ("collisions", "always"):
        raise ConfigError(f'{source}: gateway.prefix: must be "collisions" or "always", not {prefix!r}')
    pins, audit = gateway.get("pins"), gateway.get("audit")
    message_bytes = _byte_count(gateway, "maxMessageBytes", MAX_MESSAGE_BYTES, source)
    description_bytes = _byte_count(gateway, "maxDescriptionBytes", MAX_DESCRIPTION_BYTES, source)
    listing_bytes = _byte_count(gateway, "maxListingBytes", MAX_LISTING_BYTES, source)
    return GatewayConfig(
        sections=tuple(sections),
        name=_string(gateway.get("name", "scopetool-gateway"), source, "gateway.name"),
        instructions=_optional_string(gateway.get("instructions"), source, "gateway.instructions"),
        principal=_principal(gateway.get("principal"), source),
        limits=_limits(gateway.get("limits"), source),
        pins=None if pins is None else base / _string(pins, source, "gateway.pins"),
        audit=None if audit is None else base / _string(audit, source, "gateway.audit"),
        audit_arguments=_bool(gateway.get("auditArguments", False), source, "gateway.auditArguments"),
        filter=_filter(gateway, source, "gateway"),
        policy=_target(gateway.get("policy"), base, source, "gateway.policy"),
        prefix=prefix,
        start_timeout=_seconds(gateway.get("startTimeout", START_TIMEOUT), source, "gateway.startTimeout"),
        list_timeout=_seconds(gateway.get("listTimeout", LIST_TIMEOUT), source, "gateway.listTimeout"),
        call_timeout=_seconds(gateway.get("callTimeout", CALL_TIMEOUT), source, "gateway.callTimeout"),
        relist_interval=_seconds(gateway.get("relistInterval", RELIST_INTERVAL), source, "gateway.relistInterval"),
        max_message_bytes=message_bytes,
        max_description_bytes=description_bytes,
        max_listing_bytes=listing_bytes,
        http_settings=_http_settings(gateway, source),
        auth=None if "auth" not in gateway else _auth(gateway["auth"], base, source),
        poisoning=_poisoning(gateway.get("poisoning"), source, "gateway.poisoning") or "flag",
        tool_search=_tool_search(gateway.get("toolSearch", False), source),
        tasks=_tasks(gateway.get("tasks", False), base, source),
        code_mode=_code_mode(gateway.get("codeMode", False), source),
        base=base,
        source=source,
    )


def _http_settings(gateway: Mapping[str, Any], source: str) -> HttpSettings:
    """The `HttpSettings` of the ``gateway`` section's HTTP keys; a value out of range is named by its key."""
    given: dict[str, Any] = {}
    for key, name in _HTTP_KEYS.items():
        if key in gateway:
            value = gateway[key]
            if name == "stateless":
                value = _bool(value, source, f"gateway.{key}")
            given[name] = _strings(value, source, f"gateway.{key}") if name.startswith("allowed_") else value
            try:
                HttpSettings(**{name: given[name]})  # its checks, for this key alone: the error names it
            except ValueError as error:
                raise ConfigError(f"{source}: gateway.{key}: {str(error).partition(' ')[2]}") from None
    return HttpSettings(**given)


def _tool_search(value: object, source: str) -> ToolSearch | None:
    """``gateway.toolSearch``: true, false, or ``{"alwaysShow": [SERVED_NAME, ...], "reveal": BOOL}``."""
    if isinstance(value, bool):
        return ToolSearch() if value else None
    if not isinstance(value, dict):
        raise ConfigError(
            f'{source}: gateway.toolSearch: must be true, false or {{"alwaysShow": [...]}}, not {_kind(value)}'
        )
    entry = cast("dict[str, Any]", value)
    _known(entry, frozenset({"alwaysShow", "reveal"}), source, "gateway.toolSearch")
    return ToolSearch(
        always_show=_strings(entry.get("alwaysShow", []), source, "gateway.toolSearch.alwaysShow"),
        reveal=_bool(entry.get("reveal", False), source, "gateway.toolSearch.reveal"),
    )


def _code_mode(value: object, source: str) -> CodeLimits | None:
    """``gateway.codeMode``: true, false, or an object of `CodeLimits` fields (``{"nestedCalls": 20, ...}``)."""
    if value is False:
        return None
    if value is not True and not isinstance(value, dict):
        raise ConfigError(
            f'{source}: gateway.codeMode: must be true, false or an object of limits such as {{"nestedCalls": 20}}, '
            f"not {_kind(value)}"
        )
    try:
        from ..code import CodeLimits  # noqa: PLC0415 - only code mode needs the sandbox
    except ImportError as error:  # pragma: no cover - the extra is installed wherever the tests run
        raise ConfigError(f"{source}: gateway.codeMode: {error}") from None
    if value is True:
        return CodeLimits()
    entry = cast("dict[str, Any]", value)
    _known(entry, frozenset(_CODE_KEYS), source, "gateway.codeMode")
    given = {_CODE_KEYS[key]: entry[key] for key in entry}
    for key, name in _CODE_KEYS.items():
        if key in entry:
            try:
                CodeLimits(**{name: entry[key]})  # its checks, for this key alone: the error names it
            except ValueError as error:
                raise ConfigError(f"{source}: gateway.codeMode.{key}: {str(error).partition(f'{name} ')[2]}") from None
    return CodeLimits(**given)


def _tasks(value: object, base: Path, source: str) -> GatewayTasks | None:
    try:
        return parse_tasks(value, base)
    except TaskSettingError as error:
        raise ConfigError(f"{source}: gateway.tasks: {error}") from None


def _auth(value: object, base: Path, source: str) -> HttpAuth:
    """The `HttpAuth` of ``gateway.auth``; a value that is not usable is named by its key."""
    entry = _object(value, source, "gateway.auth")
    _known(entry, frozenset(_AUTH_KEYS), source, "gateway.auth")
    given: dict[str, Any] = {}
    for key in ("issuer", "audience"):
        if key in entry:
            given[key] = _string(entry[key], source, f"gateway.auth.{key}")
    if "scopes" in entry:
        given["scopes"] = _strings(entry["scopes"], source, "gateway.auth.scopes")
    if "tokenFile" in entry:
        path = base / _string(entry["tokenFile"], source, "gateway.auth.tokenFile")
        try:
            given["tokens"] = load_tokens(path)
        except ValueError as error:
            raise ConfigError(f"{source}: gateway.auth.tokenFile: {error}") from None
    try:
        return HttpAuth(**given)
    except ValueError as error:
        text = str(error)
        found = next((key for key, name in _AUTH_KEYS.items() if text.startswith(name)), None)
        where = "gateway.auth" if found is None else f"gateway.auth.{found}"
        raise ConfigError(f"{source}: {where}: {text if found is None else text.partition(' ')[2]}") from None


def _strings(value: object, source: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in cast("list[object]", value)):
        raise ConfigError(f"{source}: {where}: must be a list of strings")
    return tuple(cast("list[str]", value))


def _local(value: object, base: Path, source: str) -> Section:
    entry = _object(value, source, LOCAL)
    _known(entry, _LOCAL_KEYS, source, LOCAL)
    tools = entry.get("tools")
    if not isinstance(tools, list) or not tools:
        raise ConfigError(f"{source}: {LOCAL}.tools: must be a non-empty list of module:attr targets")
    listed = cast("list[object]", tools)
    targets = tuple(
        _target(target, base, source, f"{LOCAL}.tools[{index}]") or "" for index, target in enumerate(listed)
    )
    return Section(
        name=LOCAL,
        targets=targets,
        filter=_filter(entry, source, LOCAL),
        policy=_target(entry.get("policy"), base, source, f"{LOCAL}.policy"),
        prefix=_prefix(entry.get("prefix"), source, f"{LOCAL}.prefix"),
        scopes=_scopes(entry.get("scopes", []), source, f"{LOCAL}.scopes"),
        tool_scopes=_tool_scopes(entry.get("toolScopes", {}), source, f"{LOCAL}.toolScopes"),
        limits=None if "limits" not in entry else _limit(entry["limits"], source, f"{LOCAL}.limits"),
    )


def _remote(name: str, value: object, base: Path, source: str, where: str) -> Section:
    entry = _object(value, source, where)
    connection = {key: item for key, item in entry.items() if key not in _SECTION_KEYS}
    if isinstance(connection.get("cwd"), str):
        connection["cwd"] = str(base / connection["cwd"])
    try:
        spec = server_spec(connection)
    except ValueError as error:
        text = str(error)
        if text.startswith("unknown key"):
            known = sorted(
                {*_SECTION_KEYS, "args", "command", "cwd", "env", "type"}
                if "command" in entry
                else {*_SECTION_KEYS, "headers", "type", "url"}
            )
            unknown = sorted(set(entry).difference(known))
            text = _unknown_key(unknown[0], known) if unknown else f"{text.split(' in ', maxsplit=1)[0]}"
        raise ConfigError(f"{source}: {where}: {text}") from None
    return Section(
        name=name,
        spec=spec,
        filter=_filter(entry, source, where),
        policy=_target(entry.get("policy"), base, source, f"{where}.policy"),
        prefix=_prefix(entry.get("prefix"), source, f"{where}.prefix"),
        trusted=_bool(entry.get("trusted", False), source, f"{where}.trusted"),
        start_timeout=_optional_seconds(entry.get("startTimeout"), source, f"{where}.startTimeout"),
        list_timeout=_optional_seconds(entry.get("listTimeout"), source, f"{where}.listTimeout"),
        call_timeout=_optional_seconds(entry.get("callTimeout"), source, f"{where}.callTimeout"),
        relist_interval=_optional_seconds(entry.get("relistInterval"), source, f"{where}.relistInterval"),
        poisoning=_poisoning(entry.get("poisoning"), source, f"{where}.poisoning"),
        scopes=_scopes(entry.get("scopes", []), source, f"{where}.scopes"),
        tool_scopes=_tool_scopes(entry.get("toolScopes", {}), source, f"{where}.toolScopes"),
        limits=None if "limits" not in entry else _limit(entry["limits"], source, f"{where}.limits"),
    )


def _object(value: object, source: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: {where}: must be a JSON object, not {_kind(value)}")
    return value  # pyright: ignore[reportUnknownVariableType] - JSON: str keys


def _byte_count(gateway: Mapping[str, Any], key: str, default: int, source: str) -> int:
    value = gateway.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{source}: gateway.{key}: must be a whole number of bytes > 0, not {value!r}")
    return value


def _known(entry: Mapping[str, Any], keys: frozenset[str], source: str, where: str) -> None:
    unknown = sorted(set(entry) - keys)
    if unknown:
        raise ConfigError(f"{source}: {where}: {_unknown_key(unknown[0], keys)}")


def _unknown_key(key: str, keys: Iterable[str]) -> str:
    """An unknown key's error: the nearest valid key first (`nearest`, as for a tool's name), then every valid key."""
    known = sorted(keys)
    return f"unknown key {key[:80]!r}{did_you_mean(nearest(key, known, 1))} (expected {', '.join(known)})"


def _filter(entry: Mapping[str, Any], source: str, where: str) -> ToolFilter:
    allow = entry.get("allow")
    return ToolFilter(
        allow=None if allow is None else _patterns(allow, source, f"{where}.allow"),
        deny=_patterns(entry.get("deny", []), source, f"{where}.deny"),
    )


def _patterns(value: object, source: str, where: str) -> tuple[str, ...]:
    items = cast("list[object]", value) if isinstance(value, list) else None
    if items is None or not all(isinstance(item, str) and item for item in items):
        raise ConfigError(f"{source}: {where}: must be a list of tool-name patterns (non-empty strings)")
    return tuple(cast("list[str]", items))


def _scopes(value: object, source: str, where: str) -> frozenset[str]:
    items = cast("list[object]", value) if isinstance(value, list) else None
    if items is None or not all(isinstance(item, str) and _SCOPE.fullmatch(item) for item in items):
        raise ConfigError(
            f'{source}: {where}: must be a list of scopes (OAuth scope tokens: printable ASCII without spaces, " or \\)'
        )
    return frozenset(cast("list[str]", items))


def _tool_scopes(value: object, source: str, where: str) -> tuple[tuple[str, frozenset[str]], ...]:
    entry = _object(value, source, where)
    found: list[tuple[str, frozenset[str]]] = []
    for pattern, scopes in entry.items():
        if not pattern:
            raise ConfigError(f"{source}: {where}: a tool-name pattern must be a non-empty string")
        found.append((pattern, _scopes(scopes, source, f"{where}.{pattern}")))
    return tuple(found)


def _limit(value: object, source: str, where: str) -> Limit:
    entry = _object(value, source, where)
    _known(entry, _LIMIT_KEYS, source, where)
    for key in ("rate", "concurrency"):
        if key in entry:
            try:
                Limit(**{key: entry[key]})  # its checks, for this key alone: the error names it
            except ValueError as error:
                raise ConfigError(f"{source}: {where}.{key}: {error}") from None
    return Limit(rate=entry.get("rate"), concurrency=entry.get("concurrency"))


def _limits(value: object, source: str) -> Limits:
    if value is None:
        return Limits()
    where = "gateway.limits"
    entry = _object(value, source, where)
    _known(entry, _LIMITS_KEYS, source, where)
    tools = _object(entry.get("tools", {}), source, f"{where}.tools")
    redis = entry.get("redis")
    try:
        Limits(redis=redis)
    except ValueError as error:
        raise ConfigError(f"{source}: {where}.redis: {str(error).partition(' ')[2]}") from None
    return Limits(
        caller=_limit(entry.get("caller", {}), source, f"{where}.caller"),
        tool=_limit(entry.get("tool", {}), source, f"{where}.tool"),
        tools={name: _limit(limit, source, f"{where}.tools.{name}") for name, limit in tools.items()},
        redis=redis,
        store_timeout=_seconds(entry.get("storeTimeout", LIMIT_STORE_TIMEOUT), source, f"{where}.storeTimeout"),
    )


def _principal(value: object, source: str) -> Principal | None:
    if value is None:
        return None
    where = "gateway.principal"
    entry = _object(value, source, where)
    _known(entry, _PRINCIPAL_KEYS, source, where)
    return Principal(
        _string(entry.get("subject"), source, f"{where}.subject"),
        _optional_string(entry.get("clientId"), source, f"{where}.clientId"),
        _scopes(entry.get("scopes", []), source, f"{where}.scopes"),
    )


def _prefix(value: object, source: str, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not PREFIX.fullmatch(value):
        raise ConfigError(
            f"{source}: {where}: must be 1 to 32 letters, digits, '_' or '-', without '__' and not ending in '_', "
            f"not {value!r}"
        )
    return value


def _poisoning(value: object, source: str, where: str) -> Literal["flag", "refuse"] | None:
    if value is None:
        return None
    if value == "flag":
        return "flag"
    if value == "refuse":
        return "refuse"
    raise ConfigError(f'{source}: {where}: must be "flag" or "refuse", not {value!r}')


def section_key(section: Section) -> str:
    return LOCAL if section.spec is None else f"mcpServers.{section.name}"


def _target(value: object, base: Path, source: str, where: str) -> str | None:
    """A ``module:attr`` or ``path.py:attr`` target, its relative path taken from `base`."""
    if value is None:
        return None
    if not isinstance(value, str) or ":" not in value.strip(":"):
        raise ConfigError(f"{source}: {where}: must be module:attr or path/to/file.py:attr, not {value!r}")
    location, _, attribute = value.rpartition(":")
    if location.endswith(".py") or "/" in location:
        location = str(base / location)
    return f"{location}:{attribute}"


def _string(value: object, source: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{source}: {where}: must be a non-empty string, not {_kind(value)}")
    return value


def _optional_string(value: object, source: str, where: str) -> str | None:
    return None if value is None else _string(value, source, where)


def _bool(value: object, source: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: {where}: must be true or false, not {_kind(value)}")
    return value


def _seconds(value: object, source: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(f"{source}: {where}: must be a number of seconds > 0, not {value!r}")
    return float(value)


def _optional_seconds(value: object, source: str, where: str) -> float | None:
    return None if value is None else _seconds(value, source, where)


def _kind(value: object) -> str:
    kinds: dict[type, str] = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return "null" if value is None else kinds.get(type(value), "a number")


# -- names ---------------------------------------------------------------------------------------------


def safe_prefix(section: Section) -> str:
    """The section's prefix: its own, or its name with what a prefix cannot hold replaced (`PREFIX`)."""
    if section.prefix is not None:
        return section.prefix
    made = re.sub(r"_{2,}", "_", _UNSAFE.sub("_", section.name))[:32].rstrip("_")
    return made or "server"
