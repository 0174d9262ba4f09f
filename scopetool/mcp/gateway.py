"""The MCP gateway: the tools of several MCP servers, and local ones, served as one MCP server.

``scopetool proxy CONFIG`` runs `run_gateway`. CONFIG is the ``mcpServers`` JSON that MCP clients
(Claude Desktop, Cursor, ...) already use, with a few keys of the gateway's own (`load_config`;
the reference is ``docs/mcp-gateway.md``). What the gateway promises:

* Every call is admitted at the gateway, by the remote tool's own contract (size cap, I-JSON, the
  server's ``inputSchema``; `scopetool.mcp.client`), before anything is sent on: a call that is not
  admitted never reaches the server.
* Guards: ``allow`` / ``deny`` lists of tool-name patterns, per server and for all of them, decide
  which tools exist at all (fail-closed: a tool not allowed is neither listed nor callable); a
  ``policy`` (a scopetool `Authorizer`, ``module:function``) is asked before each call it guards.
* Callers: ``scopes`` and ``toolScopes`` name the scopes a caller needs, per server and per tool; a
  caller (`scopetool.current_principal`: authenticated over HTTP, named by ``gateway.principal`` or
  ``--principal`` over stdio) sees and calls only the tools whose scopes it holds, and a tool that
  needs any scope is nobody's when no caller is known (fail-closed). A policy reads the caller too.
* Limits: rate and concurrency limits per caller and per tool (``gateway.limits``, a server's
  ``limits``; `scopetool.mcp.limits`); a call over one never reaches its server (HTTP ``429``).
* Names: a tool keeps its server's name unless another server has the same one, or the name holds
  ``__``; then it is served as ``PREFIX__NAME`` (the prefix is the server's name, or its ``prefix``).
  A served name belongs to one server whatever its tools are called, see `served_names`.
* Poisoning: every upstream definition is screened when the gateway starts, and when its server's list
  changes (`scopetool.mcp.screening`); invisible characters are taken out of what is served and every
  finding is said on standard error and in the audit log (``"poisoning": "flag"``), or a tool with
  any finding is refused (``"refuse"``).
* Pins: with a lock file, a tool whose definition changed since it was pinned is refused (said on
  standard error at start and in the audit log) until the change is accepted.
* An audit log of JSON lines (`AuditLog`): one line per call, never an argument value unless the
  config asks for them.
* A server that fails to start, or dies, is reported and the others are served; one bad call never
  ends the gateway.
* Tool search (``"toolSearch": true``): ``search_tools`` and ``call_tool`` are listed in place of the
  served tools (`scopetool.mcp.server.ToolSearch`); a ``call_tool`` call is the call of its inner tool
  in every respect above: admitted by that tool's contract, guarded, pinned and audited under its
  served name. A tool denied, refused or unknown is not found and cannot be called through it.
* Tasks (``"tasks"``, ``scopetool proxy --tasks``): a long call of a tool whose effect the gateway knows
  to be SAFE or IDEMPOTENT may be answered with an MCP task, as ``scopetool serve --tasks`` does; the
  task is its caller's (`scopetool.mcp._gateway_tasks`).
* Code mode (``"codeMode"``, ``scopetool proxy --code-mode``): ``run_code`` is listed in place of the
  served tools (beside tool search's two when both are on); each nested call of a snippet is a call of
  its served tool in every respect above (`scopetool.mcp._code_mode`): admitted by its server's schema,
  guarded, limited and audited under its served name with its caller; a tool denied, refused or not the
  caller's is a name not defined in the snippet. The code call itself is audited as tool ``run_code``
  of server ``scopetool``.
* List changes: a server that says its tools changed is listed again (within its ``listTimeout``, a burst
  of announcements once, at most once per ``relistInterval``; a failed listing keeps the last good list);
  the served set is built again as at start (screening, pins, guards, names, search, limits, tasks),
  swapped into the running servers at once (`Gateway.updates`), said on standard error and in the audit
  log, and the gateway's clients are told (``notifications/tools/list_changed``, ``subscriptions/listen``).
* Time: each server's start, tools listing and every call are bounded (``startTimeout``,
  ``listTimeout``, ``callTimeout``, for all servers and per server); a call whose server does not
  answer in time is an error result naming the tool as served.

The config is read and checked in `scopetool.mcp._gateway_config` (its names are this module's too).
This module imports the MCP SDK: ``pip install 'scopetool[mcp]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import json
import sys
import weakref
from collections import Counter
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, TextIO, cast, final

from .._extras import missing_dependency

try:
    import anyio
except ImportError as _missing:  # pragma: no cover - anyio comes with the MCP SDK
    raise missing_dependency(__name__, _missing) from _missing

from .._binding import Binding, Caller, CallMiddleware, Tool, bind
from .._contract import Admission, Invocation, Request
from .._definition import NAME_PATTERN, Definition
from .._errors import InvalidInvocationError
from .._guard import AuthorizationError, Authorizer, Guard
from .._json import MAX_INPUT_BYTES, syntax_problem
from .._outcome import Failure, classify_failure
from .._output import Output, Result, TextBlock
from .._principal import Principal, current_principal
from .._registry import Registry
from .._target import TargetError, load_object, load_registry
from ..providers._common import ProviderError, ToolCall, UnknownToolError
from ._code_mode import CODE_TOOL
from ._gateway_config import (
    LOCAL,
    PREFIX,
    SEPARATOR,
    ConfigError,
    GatewayConfig,
    Section,
    ToolFilter,
    load_config,
    parse_config,
    safe_prefix,
    section_key,
)
from ._gateway_tasks import GatewayTasks, TaskSettingError, task_options
from ._lean_server import serve_stdio as serve_lean_stdio
from ._tool_search import CALL_TOOL, SEARCH_TOOLS
from ._tool_updates import ToolUpdates
from .client import (
    ConnectError,
    MCPClient,
    ToolsChanged,
    connect,
)
from .limits import Limit, Limiter, LimitError, Limits
from .pins import PinError, PinFile
from .screening import Finding, remove_invisible, screen_definition
from .server import ServerOptions, ToolSearch, serve_http
from .tasks import TaskOptions

__all__ = [
    "LOCAL",
    "AuditLog",
    "ConfigError",
    "Gateway",
    "GatewayConfig",
    "GatewayTasks",
    "Section",
    "ToolFilter",
    "load_config",
    "open_gateway",
    "parse_config",
    "run_gateway",
    "serve_gateway",
    "served_names",
]


def served_names(tools: Sequence[tuple[str, str]], *, always: bool = False) -> dict[tuple[str, str], str | None]:
    """The name each ``(prefix, tool)`` is served under; None for one that cannot be served.

    Each server has a prefix of its own (the config sees to it), and the rule is:

    * a tool keeps its own name when no other entry has that name, the name holds no ``__``
      (`SEPARATOR`), and not `always`;
    * otherwise it is served as ``PREFIX__TOOL``.

    So a served name belongs to exactly one ``(prefix, tool)``, whatever the tools are called and in
    whatever order they come: an own name never holds ``__`` and a prefixed one always does, and a
    prefix holds no ``__`` and does not end in ``_``, so a prefixed name splits at its first ``__``
    into its prefix and its tool. A tool named ``git__status`` by some server is served as
    ``SERVER__git__status``; it can never be taken for the ``status`` of the server ``git``. A name
    that breaks scopetool's name rule (``[A-Za-z0-9_-]{1,64}``), and an entry listed twice, get None.

    Raises:
        ValueError: a prefix breaks the rule above.

    Example:
        ```python
        from scopetool.mcp.gateway import served_names

        names = served_names([("evil", "git__status"), ("git", "status"), ("svn", "status"), ("git", "log")])
        print(list(names.values()))
        #> ['evil__git__status', 'git__status', 'svn__status', 'log']
        ```
    """
    for prefix, _ in tools:
        if not PREFIX.fullmatch(prefix):
            raise ValueError(f"prefix {prefix!r}: must be 1 to 32 of A-Z a-z 0-9 _ -, without '__', not ending in '_'")
    counts = Counter(tools)
    names: dict[tuple[str, str], str | None] = {}
    owners = Counter(tool for _, tool in counts)
    for prefix, tool in counts:
        name = f"{prefix}{SEPARATOR}{tool}" if always or owners[tool] > 1 or SEPARATOR in tool else tool
        names[prefix, tool] = name if counts[prefix, tool] == 1 and NAME_PATTERN.fullmatch(name) else None
    return names


# -- the audit log ---------------------------------------------------------------------------------------


@final
class AuditLog:
    """The gateway's audit log: one JSON object a line, appended and flushed as each event happens.

    A call's line: ``{"time", "event": "call", "id", "server", "tool", "name", "issuer", "subject",
    "clientId", "admitted", "reason", "outcome"}``. ``server`` and ``tool`` are the server's own names,
    ``name`` the name served; ``issuer``, ``subject`` and ``clientId`` are the caller's identity
    (`scopetool.Principal.identity`: the issuer is a JWT's, `scopetool.mcp.auth.STATIC_ISSUER` for a
    static token; null when no caller is known), never its token; ``admitted`` is whether the call
    was sent on (run, for a local tool); ``reason`` says why not (`REASONS`); ``outcome`` is ``"result"``, ``"failed"``,
    ``"rejected"`` or ``"error"`` for a call that was sent on, else null. ``"arguments"`` (the argument
    text as received) is there only when the config asks for it. Other events: ``"server"`` (a server
    started, with its tool count, or did not, with ``"error"``), ``"flagged"`` (what screening found in
    a tool's definition: ``"findings"``, each ``{"at", "kind", "detail"}``, and ``"poisoning"``,
    ``"flag"`` or ``"refuse"``: what the config does with it), ``"refused"`` (a tool not served: pinned
    and changed, not enforceable, or flagged under ``"poisoning": "refuse"``), ``"skipped"`` (a tool
    whose served name is taken or invalid) and ``"stop"``.
    """

    REASONS: Final = (
        "too_large",
        "not_i_json",
        "invalid",
        "denied",
        "refused",
        "unknown",
        "scope",
        "limited",
        "policy",
        "policy_error",
    )
    """Why a call was not sent on: its arguments were over the size cap, not I-JSON, or broke the
    schema (or the tool's own validation); the tool is denied by the config, refused at start (a pin
    or an unenforceable schema), unknown, or needs scopes the caller does not hold (or no caller is
    known); a limit refused it (or its store did not answer); the policy refused the call, or raised."""

    __slots__ = ("_arguments", "_stream")

    def __init__(self, stream: TextIO | None, *, arguments: bool = False) -> None:
        self._stream = stream
        self._arguments = arguments

    def write(self, event: str, **fields: Any) -> None:
        """Append one line: the time (UTC, ISO 8601), the event, then `fields` in order."""
        if self._stream is None:
            return
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        line = json.dumps({"time": now, "event": event, **fields}, ensure_ascii=False, separators=(",", ":"))
        self._stream.write(line + "\n")
        self._stream.flush()

    def call(
        self,
        call: ToolCall,
        *,
        server: str | None,
        tool: str | None,
        reason: str | None,
        outcome: str | None,
        caller: Principal | None = None,
    ) -> None:
        """Append one call's line (see the class docstring); `caller` is who made it, when known."""
        fields: dict[str, Any] = {
            "id": call.id,
            "server": server,
            "tool": tool,
            "name": call.name,
            "issuer": None if caller is None else caller.issuer,
            "subject": None if caller is None else caller.subject,
            "clientId": None if caller is None else caller.client_id,
            "admitted": reason is None,
            "reason": reason,
            "outcome": outcome,
        }
        if self._arguments:
            raw = call.request.arguments
            fields["arguments"] = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        self.write("call", **fields)


# -- the gateway ----------------------------------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class _Served:
    """Where one served name comes from."""

    server: str
    tool: str
    scopes: frozenset[str] = frozenset()
    """The scopes a caller needs to see and call it."""


@final
class _Forwarded:
    """A bound tool served under `name` (a prefixed one, or its own with the gateway's guards around it).

    The same schema, output schema and effect (`without_invisible`: their texts without the invisible
    characters screening found); each call the gateway admitted is admitted again by the tool's own
    contract, under its own name, and run through its own binding (its middlewares). A failure's fixed
    text names the tool as served (the name the model called), not its own name.
    """

    __slots__ = ("_definition", "_inner")

    def __init__(self, inner: Binding, name: str, *, without_invisible: bool = False) -> None:
        self._inner = inner
        shown = {**inner.definition().to_dict(), "name": name}
        if without_invisible:  # the texts the model reads, without what screening found hidden in them
            listed = remove_invisible(
                {
                    "description": shown.get("description", ""),
                    "inputSchema": shown["input_schema"],
                    "outputSchema": shown.get("output_schema"),
                }
            )
            shown |= {
                "description": listed["description"],
                "input_schema": listed["inputSchema"],
                "output_schema": listed["outputSchema"],
            }
        self._definition = Definition.from_dict(shown)

    def definition(self) -> Definition:
        return self._definition

    async def call(self, invocation: Invocation, /) -> Result:
        inner = self._inner
        admission = Admission(idempotency_key=invocation.idempotency_key, continuation=invocation.continuation)
        try:
            return await inner.call(inner.contract.prepare(Request(inner.name, invocation.arguments), admission))
        except Failure as failure:
            raise _renamed(failure, inner.name, self._definition.name) from None


def _renamed(failure: Failure, own: str, served: str) -> Failure:
    """`failure` with its fixed text (``error: tool "OWN" ...``, every such text scopetool writes) naming `served`.

    Any other output (a remote tool's own ``isError`` content, a local tool's own failure) is the
    tool's to word, and is kept as it is.
    """
    output = failure.output
    named = f'error: tool "{own}"'
    block = output.content[0] if len(output.content) == 1 and output.details is None else None
    if not isinstance(block, TextBlock) or not block.text.startswith(named):
        return failure
    text = f'error: tool "{served}"{block.text.removeprefix(named)}'
    return Failure(kind=failure.kind, output=Output.from_text(text), cause=failure.cause)


@final
class _PolicyGate:
    """A `Guard` of the config's policy that remembers its refusals (for the audit log)."""

    __slots__ = ("_guard", "_refusals")

    def __init__(self, policy: Authorizer, refusals: weakref.WeakSet[BaseException]) -> None:
        self._guard = Guard(policy)
        self._refusals = refusals

    async def __call__(self, invocation: Invocation, call_next: Caller, /) -> Result:
        forwarded = False

        async def forward(admitted: Invocation, /) -> Result:
            nonlocal forwarded
            forwarded = True
            return await call_next(admitted)

        try:
            return await self._guard(invocation, forward)
        except (Failure, AuthorizationError) as error:
            if not forwarded:
                self._refusals.add(error)
            raise


@final
class Gateway:
    """The running gateway's tools (made by `open_gateway`): what is served, and the audit of each call."""

    __slots__ = (
        "_code_mode",
        "_gone",
        "_hidden",
        "_refusals",
        "_served",
        "audit",
        "limiter",
        "registry",
        "skipped",
        "tool_search",
        "updates",
    )

    def __init__(
        self,
        registry: Registry,
        served: Mapping[str, _Served],
        hidden: Mapping[str, tuple[_Served, str]],
        refusals: weakref.WeakSet[BaseException],
        skipped: tuple[tuple[str, str], ...],
        *,
        code_mode: bool = False,
    ) -> None:
        self.registry = registry
        """The tools served, under their served names, each bound with the config's guards."""
        self.skipped = skipped
        """The ``(server, tool)`` pairs that passed the guards but whose served name was taken or invalid."""
        self.audit = AuditLog(None)
        """Where `observe` writes (`open_gateway` sets the config's log)."""
        self.tool_search: ToolSearch | bool = False
        """The server's ``tool_search`` (`open_gateway` sets the config's, with only the always-shown names served)."""
        self.limiter: Limiter | None = None
        """What counts each call against the config's limits (`open_gateway` sets it), or None for no limit."""
        self.updates = ToolUpdates()
        """Where each change of the served set is published (`open_gateway` follows the servers' list changes):
        serve the registry with ``updates=`` (`scopetool.mcp.server.create_server`) to follow them."""
        self._served = dict(served)
        self._hidden = dict(hidden)
        self._refusals = refusals
        self._code_mode = code_mode
        self._gone: dict[str, _Served] = {}  # served before the last change: for the audit of calls still running

    def adopt(self, new: Gateway, tool_search: ToolSearch | bool) -> None:
        """Serve what `new` (a served set built since) serves, from now on (`open_gateway` does, on a list change)."""
        self._gone = {name: served for name, served in self._served.items() if name not in new._served}
        self.registry, self.skipped, self.tool_search = new.registry, new.skipped, tool_search
        self._served, self._hidden = new._served, new._hidden

    def origin(self, name: str) -> tuple[str, str] | None:
        """The server and the server's own tool name behind served name `name`, or None."""
        found = self._served.get(name)
        return None if found is None else (found.server, found.tool)

    def allows(self, name: str) -> bool:
        """Whether the caller of the request being served may see and call served tool `name`.

        The caller is `scopetool.current_principal`. A tool that needs no scope is everyone's; one that
        needs scopes is a caller's only when it holds every one, and nobody's when no caller is known
        (no authentication over HTTP, no ``principal`` over stdio): fail-closed. A name not served is
        left to the server, which answers it as unknown.
        """
        found = self._served.get(name)
        if found is None or not found.scopes:
            return True
        caller = current_principal()
        return caller is not None and caller.has_scopes(found.scopes)

    def origins(self) -> list[tuple[str, str]]:
        """The ``(server, tool)`` behind every served tool, in the registry's (name) order."""
        return [(self._served[name].server, self._served[name].tool) for name in self.registry.names()]

    def observe(self, call: ToolCall, outcome: Result | BaseException) -> None:
        """Write the audit line of one call's outcome, with its caller (the server's `CallObserver`)."""
        caller = current_principal()
        served = self._served.get(call.name)
        if served is None and call.name == CODE_TOOL and self._code_mode:  # the code call: the gateway's own tool
            served = _Served(LOCAL, CODE_TOOL)
        if served is None and not isinstance(outcome, UnknownToolError):  # a call that began before the change
            served = self._gone.get(call.name)
        if served is None:
            hidden = self._hidden.get(call.name)
            server, tool = (None, None) if hidden is None else (hidden[0].server, hidden[0].tool)
            why = "unknown" if hidden is None else hidden[1]
            self.audit.call(call, server=server, tool=tool, reason=why, outcome=None, caller=caller)
            return
        reason: str | None = None
        kind: str | None = "result"
        if isinstance(outcome, UnknownToolError):  # served, but not to this caller (`allows`)
            reason, kind = "scope", None
        elif isinstance(outcome, LimitError):
            reason, kind = "limited", None
        elif isinstance(outcome, InvalidInvocationError):
            reason, kind = _rejection_reason(call.request.arguments), None
        elif outcome in self._refusals:
            reason, kind = ("policy" if isinstance(outcome, Failure) else "policy_error"), None
        elif isinstance(outcome, BaseException):
            failure = classify_failure(outcome)
            kind = "error" if failure is None else str(failure.kind)
        self.audit.call(call, server=served.server, tool=served.tool, reason=reason, outcome=kind, caller=caller)


def _rejection_reason(arguments: str | bytes) -> str:
    """The kind of a rejection, found from the arguments themselves (never from the message)."""
    raw = arguments.encode("utf-8", "surrogatepass") if isinstance(arguments, str) else arguments
    if len(raw) > MAX_INPUT_BYTES:
        return "too_large"
    if raw.strip() and syntax_problem(raw) is not None:
        return "not_i_json"
    return "invalid"


@final
class _Connection:
    """One remote server, connected in a task of its own so that its failure ends nothing else.

    `connect` bounds the start and the listing, so `ready` is set within the server's two timeouts
    (and the time to stop a server that did not make it).
    """

    __slots__ = ("client", "error", "on_change", "ready", "section", "stop")

    def __init__(self, section: Section) -> None:
        self.section = section
        self.on_change: ToolsChanged | None = None
        """Told each re-list the server's tool list changes prompted (set once the gateway is built)."""
        self.client: MCPClient | None = None
        self.error: str | None = None
        self.ready = anyio.Event()
        self.stop = anyio.Event()

    async def run(self, config: GatewayConfig, pins: PinFile | None, errlog: TextIO) -> None:
        section = self.section
        assert section.spec is not None
        try:
            async with connect(
                section.spec,
                name=section.name,
                pins=pins,
                trusted=section.trusted,
                errlog=errlog,
                start_timeout=section.start_timeout or config.start_timeout,
                list_timeout=section.list_timeout or config.list_timeout,
                call_timeout=section.call_timeout or config.call_timeout,
                max_message_bytes=config.max_message_bytes,
                max_description_bytes=config.max_description_bytes,
                max_listing_bytes=config.max_listing_bytes,
                relist_interval=section.relist_interval or config.relist_interval,
                on_tools_changed=self._changed,
            ) as client:
                self.client = client
                self.ready.set()
                await self.stop.wait()
        except Exception as error:  # noqa: BLE001 - a server's failure is reported, never raised
            self.error = _one_line(error)
        finally:
            self.ready.set()

    async def _changed(self, client: MCPClient, error: ConnectError | None) -> None:
        # Set, with no await between, once the gateway is built from every client's tools as they are then: a
        # change read before that is in what it is built from.
        if self.on_change is not None:  # pragma: no branch - a change read while other servers still start
            await self.on_change(client, error)


@contextlib.asynccontextmanager
async def open_gateway(config: GatewayConfig, *, errlog: TextIO | None = None) -> AsyncGenerator[Gateway]:
    """Start every server of `config`, load the local tools and policies, and build the `Gateway`.

    What starts is said on `errlog` (standard error by default): each server's tool count, or why
    it did not start; what screening found in a tool's definition; each tool refused (by the pins,
    or by screening); each tool whose name cannot be served. A server that does not start within its
    ``startTimeout``, or list its tools within its ``listTimeout``, is given up. On exit every server
    is closed.

    While it runs, a server that says its tools changed is listed again (`Gateway.updates`; see
    ``docs/mcp-gateway.md``): what changed is said on `errlog` and in the audit log.

    Raises:
        ConfigError: a local target or a policy cannot be loaded.
    """
    out = errlog or sys.stderr
    policies = _policies(config)
    local = _local_tools(config)
    _limiter(config, {section.name: section.limits for section in config.sections if section.limits is not None})
    with contextlib.ExitStack() as files:
        stream = None if config.audit is None else files.enter_context(config.audit.open("a", encoding="utf-8"))
        audit = AuditLog(stream, arguments=config.audit_arguments)
        try:
            pins = None if config.pins is None else PinFile(config.pins)
        except PinError as error:
            raise ConfigError(str(error)) from None
        connections = [_Connection(section) for section in config.sections if section.spec is not None]
        async with anyio.create_task_group() as group:
            children = out if _has_fileno(out) else sys.stderr  # a child process's stderr needs a real file
            for connection in connections:
                group.start_soon(connection.run, config, pins, children)
            for connection in connections:
                await connection.ready.wait()
            built = _Build(config, connections, local, policies)
            gateway = built.gateway
            served = Counter(server for server, _ in gateway.origins())
            for server, count in built.listed.items():
                if isinstance(count, str):
                    _say(out, f"{server}: not served: {count}")
                    audit.write("server", server=server, error=count)
                else:
                    _say(out, f"{server}: {_tools(count)} listed, {served[server]} served")
                    audit.write("server", server=server, listed=count, served=served[server])
            built.report(out, audit, set())
            gateway.audit = audit
            if config.tool_search is not None:
                for name in sorted(set(config.tool_search.always_show).difference(gateway.registry.names())):
                    _say(out, f"gateway.toolSearch.alwaysShow: no tool {name!r} is served")
            gateway.tool_search = _tool_search(config, gateway)
            gateway.limiter = _limiter(config, _served_limits(config, gateway), gateway.registry.names())
            for name in config.limits.tools.keys() - set(gateway.registry.names()):
                _say(out, f"gateway.limits.tools: no tool is served as {name!r}; its limit applies to nothing")
            follower = _Follower(config, connections, local, policies, gateway, out, built)
            for connection in connections:
                connection.on_change = follower.changed
            try:
                yield gateway
            finally:
                audit.write("stop")
                for connection in connections:
                    connection.stop.set()


@final
class _Build:
    """The served set of the servers' tools as they are now: screened, pinned, guarded and named (`_assemble`)."""

    __slots__ = ("flagged", "gateway", "listed", "refusals", "refused", "reported")

    def __init__(
        self,
        config: GatewayConfig,
        connections: Sequence[_Connection],
        local: Sequence[Binding],
        policies: Mapping[str | None, Authorizer],
        refusals: weakref.WeakSet[BaseException] | None = None,
    ) -> None:
        tools: list[tuple[Section, Tool | Binding]] = []
        self.refused: list[tuple[Section, str, str]] = []
        self.flagged: list[tuple[Section, str, tuple[Finding, ...], bool]] = []  # and whether it is refused
        self.listed: dict[str, int | str] = {}  # the tools each server listed, or why it is not served
        for section in config.sections:
            if section.spec is None:
                tools.extend((section, binding) for binding in local)
                self.listed[section.name] = len(local)
                continue
            connection = next(c for c in connections if c.section is section)
            client = connection.client
            if client is None:
                self.listed[section.name] = connection.error or "it did not start"
                continue
            self.refused.extend((section, tool, why) for tool, why in client.refused.items())
            refusing = (section.poisoning or config.poisoning) == "refuse"
            for remote in client.tools:
                own, findings = remote.definition().name, screen_definition(remote.listed)
                if findings:
                    self.flagged.append((section, own, findings, refusing))
                if findings and refusing:
                    self.refused.append((section, own, _poisoned(section, own)))
                elif any(finding.kind == "invisible" for finding in findings):
                    tools.append((section, bind(_Forwarded(bind(remote), own, without_invisible=True))))
                else:
                    tools.append((section, remote))
            self.listed[section.name] = len(client.tools) + len(client.refused)
        self.refusals: weakref.WeakSet[BaseException] = weakref.WeakSet() if refusals is None else refusals
        """Where the policies note their refusals (for the audit): one set for every build of a gateway."""
        self.gateway = _assemble(config, tools, self.refused, policies, self.refusals)
        self.reported: set[tuple[str, str, str]] = set()
        """What `report` said (and says again only once it changed): ``(event, server, line)``."""

    def report(self, out: TextIO, audit: AuditLog, said: set[tuple[str, str, str]]) -> None:
        """Say each finding, refusal and skipped name on `out` and in `audit`, but those in `said` already."""
        lines: list[tuple[str, str, str, str, dict[str, Any]]] = []  # event, server, tool, line, audit fields
        for section, tool, findings, refusing in self.flagged:
            text = f'flagged: tool "{tool}" of MCP server "{section.name}": {"; ".join(map(str, findings))}'
            fields = {
                "poisoning": "refuse" if refusing else "flag",
                "findings": [finding.to_dict() for finding in findings],
            }
            lines.append(("flagged", section.name, tool, text, fields))
        for section, tool, why in self.refused:
            lines.append(("refused", section.name, tool, f"refused: {why}", {"why": why}))
        for server, tool in self.gateway.skipped:
            text = f"skipped: tool {tool!r} of {server!r}: its served name is taken or invalid (set a prefix)"
            lines.append(("skipped", server, tool, text, {}))
        for event, server, tool, text, fields in lines:
            self.reported.add((event, server, text))
            if (event, server, text) not in said:
                _say(out, text)
                audit.write(event, server=server, tool=tool, **fields)


@final
class _Follower:
    """Follows the servers' tool list changes: re-assembles the served set, swaps it in, says what changed.

    Each server's client re-lists it (bounded by its ``listTimeout``, at most once per ``relistInterval``,
    a burst of announcements once); `changed` then builds the whole served set again as at start, and
    publishes it to the running servers (`Gateway.updates`) when what is served changed.
    """

    __slots__ = ("_config", "_connections", "_gateway", "_local", "_out", "_policies", "_refusals", "_reported")

    def __init__(  # noqa: PLR0917 - one call site, in open_gateway
        self,
        config: GatewayConfig,
        connections: Sequence[_Connection],
        local: Sequence[Binding],
        policies: Mapping[str | None, Authorizer],
        gateway: Gateway,
        out: TextIO,
        started: _Build,
    ) -> None:
        self._config = config
        self._connections = connections
        self._local = local
        self._policies = policies
        self._gateway = gateway
        self._out = out
        self._reported = started.reported
        self._refusals = started.refusals

    async def changed(self, client: MCPClient, error: ConnectError | None) -> None:
        """One server's tools were listed again (or could not be): serve what is there now, and say so."""
        gateway, out, audit = self._gateway, self._out, self._gateway.audit
        if error is not None:
            _say(out, f"{client.name}: its changed tool list could not be read; still serving the last: {error}")
            audit.write("relisted", server=client.name, error=str(error))
            return
        built = _Build(self._config, self._connections, self._local, self._policies, self._refusals)
        before, after = _served_definitions(gateway), _served_definitions(built.gateway)
        added = sorted(after.keys() - before.keys())
        removed = sorted(before.keys() - after.keys())
        changed = sorted(name for name in after.keys() & before.keys() if after[name] != before[name])
        listed = built.listed.get(client.name)
        _say(out, f"{client.name}: its tools changed: {_tools(listed if isinstance(listed, int) else 0)} listed")
        audit.write("relisted", server=client.name, listed=listed, added=added, removed=removed, changed=changed)
        built.report(out, audit, self._reported)
        self._reported = built.reported
        if not (added or removed or changed):
            return
        for what, names in (("added", added), ("removed", removed), ("changed", changed)):
            if names:
                _say(out, f"served tools {what}: {', '.join(names)}")
        new = built.gateway
        tool_search = _tool_search(self._config, new)
        limits = _served_limits(self._config, new)

        def swap() -> None:  # at the moment every server swaps its tools: no call sees one without the other
            gateway.adopt(new, tool_search)
            if gateway.limiter is not None:
                gateway.limiter.adopt(_limits(self._config, limits), tools=new.registry.names())

        try:
            await gateway.updates.publish(new.registry, tool_search, commit=swap)
        except ProviderError as failure:  # pragma: no cover - served names are MCP names; a guard, not a path
            _say(out, f"the changed tools cannot be served ({failure}); still serving the last")


def _served_definitions(gateway: Gateway) -> dict[str, dict[str, Any]]:
    """Each served name's definition as it is listed, and its origin: what a list change compares."""
    return {
        binding.name: {**binding.definition().to_dict(), "origin": gateway.origin(binding.name)}
        for binding in gateway.registry
    }


def _tool_search(config: GatewayConfig, gateway: Gateway) -> ToolSearch | bool:
    """The server's ``tool_search``: the config's, showing always only the names that are served."""
    if config.tool_search is None:
        return False
    names = set(gateway.registry.names())
    return replace(config.tool_search, always_show=[name for name in config.tool_search.always_show if name in names])


def _assemble(
    config: GatewayConfig,
    tools: Sequence[tuple[Section, Tool | Binding]],
    refused: Sequence[tuple[Section, str, str]],
    policies: Mapping[str | None, Authorizer],
    refusals: weakref.WeakSet[BaseException],
) -> Gateway:
    """The registry of the tools that pass the guards, under their served names (policy refusals in `refusals`)."""
    hidden: dict[str, tuple[_Served, str]] = {}
    passing: list[tuple[Section, Tool | Binding, str]] = []
    for section, tool in tools:
        own = tool.definition().name
        if section.filter.passes(own) and config.filter.passes(own):
            passing.append((section, tool, own))
        else:
            hidden.setdefault(own, (_Served(section.name, own), "denied"))
            hidden.setdefault(f"{safe_prefix(section)}{SEPARATOR}{own}", (_Served(section.name, own), "denied"))
    for section, own, _ in refused:
        hidden.setdefault(own, (_Served(section.name, own), "refused"))
        hidden.setdefault(f"{safe_prefix(section)}{SEPARATOR}{own}", (_Served(section.name, own), "refused"))
    names = served_names([(safe_prefix(section), own) for section, _, own in passing], always=config.prefix == "always")
    bindings: list[Binding] = []
    served: dict[str, _Served] = {}
    skipped: list[tuple[str, str]] = []
    listed_own = {SEARCH_TOOLS, CALL_TOOL} if config.tool_search is not None else set[str]()
    if config.code_mode is not None:
        listed_own.add(CODE_TOOL)  # the server's own tools' names: a served tool of one of them is skipped
    for section, tool, own in passing:
        name = names[safe_prefix(section), own]
        if name is None or name in listed_own:
            skipped.append((section.name, own))
            continue
        middlewares: list[CallMiddleware] = [
            _PolicyGate(policies[target], refusals) for target in (config.policy, section.policy) if target is not None
        ]
        if name == own and not middlewares:
            bindings.append(tool if isinstance(tool, Binding) else bind(tool))
        elif name == own and not isinstance(tool, Binding):
            bindings.append(bind(tool, *middlewares))
        else:
            bindings.append(bind(_Forwarded(tool if isinstance(tool, Binding) else bind(tool), name), *middlewares))
        served[name] = _Served(section.name, own, section.required_scopes(own))
    for name in served:
        hidden.pop(name, None)
    return Gateway(
        Registry(*bindings), served, hidden, refusals, tuple(skipped), code_mode=config.code_mode is not None
    )


def _limiter(config: GatewayConfig, per_tool: Mapping[str, Limit], served: Sequence[str] = ()) -> Limiter | None:
    """The limiter of the config's limits, with `per_tool` (each server's ``limits``, by served name) under them.

    Only the `served` names are counted per tool.

    `open_gateway` calls it once before any server starts (with each section's limit under its name: a
    store the limits cannot reach is said before anything runs), then with the tools served.
    """
    limits = _limits(config, per_tool)
    if not limits.limited and not any(section.limits is not None for section in config.sections):
        return None  # nothing is limited, nor can be when the tools served change
    try:
        return Limiter(limits, tools=served)
    except ValueError as error:
        raise ConfigError(f"{config.source}: gateway.limits: {error}") from None


def _limits(config: GatewayConfig, per_tool: Mapping[str, Limit]) -> Limits:
    """The config's limits with `per_tool` (each served tool's server's ``limits``, by served name) under them."""
    return dataclasses.replace(config.limits, tools={**per_tool, **config.limits.tools})


def _served_limits(config: GatewayConfig, gateway: Gateway) -> dict[str, Limit]:
    """Each served tool's server's ``limits``, by served name (tools whose server has none are left out)."""
    sections = {section.name: section for section in config.sections}
    found: dict[str, Limit] = {}
    for name, (server, _) in zip(gateway.registry.names(), gateway.origins(), strict=True):
        limit = sections[server].limits
        if limit is not None:
            found[name] = limit
    return found


def _poisoned(section: Section, tool: str) -> str:
    return (
        f'tool "{tool}" of MCP server "{section.name}" may be poisoned (see the flagged line) and '
        f'"poisoning" is "refuse"'
    )


def _policies(config: GatewayConfig) -> dict[str | None, Authorizer]:
    """Each policy target's function; one that cannot be loaded is named by its key and the config file."""
    found: dict[str | None, Authorizer] = {}
    keyed = [("gateway.policy", config.policy)]
    keyed += [(f"{section_key(section)}.policy", section.policy) for section in config.sections]
    for key, target in keyed:
        if target is None or target in found:
            continue
        try:
            policy = load_object(target)
        except TargetError as error:
            raise ConfigError(f"{config.source}: {key}: {error}") from error
        if not callable(policy):
            raise ConfigError(f"{config.source}: {key}: {target!r} is {type(policy).__name__}, not a function")
        found[target] = policy  # pyright: ignore[reportArgumentType] - called as an Authorizer; Guard checks each answer
    return found


def _local_tools(config: GatewayConfig) -> list[Binding]:
    bindings: list[Binding] = []
    for section in config.sections:
        for index, target in enumerate(section.targets):
            try:
                bindings.extend(load_registry(target))
            except TargetError as error:
                raise ConfigError(f"{config.source}: {LOCAL}.tools[{index}]: {error}") from error
    return bindings


def _has_fileno(stream: TextIO) -> bool:
    try:
        stream.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return False
    return True


def _tools(count: int) -> str:
    return f"{count} tool" if count == 1 else f"{count} tools"


def _say(out: TextIO, message: str) -> None:
    out.write(f"scopetool proxy: {message}\n")
    out.flush()


def _innermost(error: BaseException) -> BaseException:
    """The one error inside nested groups of one (what a task group raises), or `error` itself."""
    while isinstance(error, BaseExceptionGroup):
        members = cast("tuple[BaseException, ...]", error.exceptions)  # pyright: ignore[reportUnknownMemberType]
        if len(members) != 1:
            return cast("BaseException", error)
        error = members[0]
    return error


def _one_line(error: BaseException) -> str:
    error = _innermost(error)
    text = " ".join(str(error).split())
    if isinstance(error, ConnectError):
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


async def serve_gateway(
    config: GatewayConfig, *, http: tuple[str, int] | None = None, errlog: TextIO | None = None
) -> None:
    """Serve the gateway of `config` over stdio until the client disconnects, or over HTTP at `http` until cancelled.

    `http` is ``(host, port)``: the endpoint is ``http://HOST:PORT/mcp`` (`scopetool.mcp.server.serve_http`).
    Over stdio every request runs as ``config.principal``; over HTTP each caller is its own.

    Raises:
        ConfigError: a ``gateway.principal`` with `http` (over HTTP callers are authenticated, never named),
            or a ``gateway.auth`` without it (over stdio no caller is authenticated).
    """
    out = errlog or sys.stderr
    if http is not None and config.principal is not None:
        raise ConfigError(
            f"{config.source}: gateway.principal: names the caller over stdio only; over HTTP each caller is "
            "authenticated"
        )
    if http is None and config.auth is not None:  # fail closed: no caller is authenticated over stdio
        raise ConfigError(
            f"{config.source}: gateway.auth: authenticates callers over HTTP only (proxy --http); over stdio "
            "the operator names the caller (gateway.principal)"
        )
    async with (
        _config_error_unwrapped(),
        open_gateway(config, errlog=out) as gateway,
        _task_options(config, gateway) as tasks,
    ):
        served = f"serving {_tools(len(gateway.registry))} as MCP server {config.name!r}"
        options: ServerOptions = {  # the same server over stdio and over HTTP
            "name": config.name,
            "instructions": config.instructions,
            "on_call": gateway.observe,
            "tool_search": gateway.tool_search,
            "visible": gateway.allows,
            "limiter": gateway.limiter,
            "tasks": tasks,
            "code_mode": config.code_mode or False,
            "updates": gateway.updates,
        }
        if http is None:  # pragma: no cover - run in a subprocess by the tests (this process's stdio)
            _say(out, f"{served} over stdio")
            await serve_lean_stdio(  # tools/call on the lean path (`scopetool.mcp._lean_server`), the rest on the SDK
                gateway.registry, principal=config.principal, **options
            )
            return
        host, port = http
        await serve_http(
            gateway.registry,
            host=host,
            port=port,
            settings=config.http_settings,
            auth=config.auth,
            **options,
            ready=lambda url: _say(out, f"{served} at {url} (Streamable HTTP)"),
            warn=lambda text: _say(out, text),
        )


@contextlib.asynccontextmanager
async def _config_error_unwrapped() -> AsyncGenerator[None]:
    """A `ConfigError` found while the servers run (inside `open_gateway`'s task group) raised alone, not in a group."""
    try:
        yield
    except BaseExceptionGroup as group:
        found = _innermost(group)
        if isinstance(found, ConfigError):
            raise found from found.__cause__
        raise


@contextlib.asynccontextmanager
async def _task_options(config: GatewayConfig, gateway: Gateway) -> AsyncGenerator[TaskOptions | None]:
    """The config's task options for the served tools, their store open; a store that cannot be opened is named."""
    with contextlib.ExitStack() as stack:
        try:
            options = stack.enter_context(task_options(config.tasks, gateway.registry))
        except TaskSettingError as error:
            raise ConfigError(f"{config.source}: gateway.tasks: {error}") from None
        yield options


def run_gateway(config: GatewayConfig, *, http: tuple[str, int] | None = None) -> None:
    """`serve_gateway`, blocking until the client disconnects or Ctrl-C (what ``scopetool proxy`` runs)."""
    asyncio.run(serve_gateway(config, http=http))  # pragma: no cover - run in a subprocess by the tests
