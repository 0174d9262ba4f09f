"""The MCP server itself: `create_server` and its ``tools/list`` and ``tools/call`` handlers (`scopetool.mcp.server`).

A call is admitted by its tool's `Contract.prepare`, run through `run_call` and answered with
`scopetool.providers.mcp.result_message`; a call that asks for input asks the client with an elicitation
form (`scopetool.mcp._elicitation`): ``elicitation/create`` on a 2025 connection, an ``input_required``
result on a 2026-07-28 one; the progress a call reports is forwarded to the client. The transports
that serve it are `scopetool.mcp._stdio_server` and `scopetool.mcp._http_server`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypedDict, final

import anyio
from mcp import types as mcp_types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .. import __version__, _observe
from .._contract import Admission, Request
from .._input import Continuation, InputRequest, InvalidInputRequestError
from .._json import is_object
from .._output import Result
from .._principal import current_principal
from .._progress import Progress, progress_reporter
from .._registry import Registry
from ..providers._common import Export, ProviderError, ToolCall, UnknownToolError, object_arguments, run_call
from ..providers.mcp import export_tools, list_tools_result, result_message
from ._code_mode import CODE_TOOL, CodeFront, code_front
from ._elicitation import ANSWER, requested_schema
from ._strict_messages import ARGUMENTS, LIMITED, RawArguments
from ._tool_search import CALL_TOOL, SEARCH_TOOLS, SearchFront, ToolSearch, counted_name
from ._tool_updates import ListChangeNotices, ToolUpdates
from .limits import RATE_LIMITED, Limiter, LimitError
from .tasks import EXTENSION, TaskOptions, TaskService

if TYPE_CHECKING:
    from ..code import CodeLimits

__all__ = ["MAX_INPUT_ROUNDS", "CallObserver", "Handover", "ServerOptions", "create_server", "server_and_tools"]

MAX_INPUT_ROUNDS: Final = 8
"""How many input requests one call may make before it ends with an error result."""

_NOT_JSON: Final = 'error: the arguments for tool "{name}" are not JSON'
_NO_INPUT: Final = 'error: tool "{name}" needs input that cannot be requested over this connection'
_DECLINED: Final = 'error: tool "{name}" needs input, and the request for it was declined'
_CANCELLED: Final = 'error: tool "{name}" needs input, and the request for it was cancelled'
_UNANSWERED: Final = 'error: tool "{name}" needs input, and the client did not answer the request for it'
_BAD_ANSWER: Final = 'error: the answer to tool "{name}"\'s request for input is not valid'
_EXPIRED: Final = 'error: the request for input of tool "{name}" is unknown or expired; call the tool again'
_TOO_MANY: Final = 'error: tool "{name}" asked for input too many times'

_INPUT_KEY: Final = "input"

_Context: TypeAlias = ServerRequestContext[Any, Any]

CallObserver: TypeAlias = Callable[[ToolCall, Result | BaseException], None]
"""Told every ``tools/call`` outcome, before the client is answered: ``observer(call, outcome)``.

The outcome is what `run_call` gives: a `Result`, or the error (an `UnknownToolError` for a name
the server does not have, the rejection for arguments not admitted). A call that asks for input is
told once per attempt. The MCP gateway writes its audit log from it.
"""


def create_server(
    registry: Registry,
    *,
    name: str = "scopetool",
    version: str = __version__,
    instructions: str | None = None,
    page_size: int | None = None,
    tool_fields: Mapping[str, Mapping[str, Any]] | None = None,
    on_call: CallObserver | None = None,
    tool_search: ToolSearch | bool = False,
    visible: Callable[[str], bool] | None = None,
    limiter: Limiter | None = None,
    tasks: TaskOptions | None = None,
    updates: ToolUpdates | None = None,
    code_mode: CodeLimits | bool = False,
) -> Server[Any]:
    """An MCP server (the SDK's low-level `Server`) exposing every tool of `registry`.

    The tool list is exported once, here: a tool registered later is neither listed nor callable, unless
    it comes as a new registry through `updates`.

    Args:
        registry: The tools to serve.
        name: The server name the client is told.
        version: The server version the client is told.
        instructions: Optional instructions for the client's model.
        page_size: How many tools one ``tools/list`` page holds (the rest follow by ``nextCursor``,
            in the registry's order); None lists them all on one page.
        tool_fields: Per tool name, its MCP ``title``, ``icons`` and ``_meta``
            (`scopetool.providers.mcp.export_tools`).
        on_call: Told each call's outcome (see `CallObserver`).
        tool_search: True or a `ToolSearch`: list ``search_tools`` and ``call_tool`` (and the tools
            `ToolSearch.always_show` names) in place of the whole catalog. ``search_tools`` answers with
            the best matching tools' entries; ``call_tool``'s inner call is admitted, run and answered
            exactly as a direct call of the inner tool (which stays callable by its own name too).
        visible: Asked, in each request's context (where `scopetool.current_principal` is its caller),
            whether the caller may see and call the tool of this name: a tool it says no to is left out
            of that caller's ``tools/list`` and a call to it is answered as for an unknown tool
            (``-32602``). None: every tool is every caller's.
        limiter: Counts each ``tools/call`` against its limits (`scopetool.mcp.limits`): a call over one
            is answered with the JSON-RPC error `RATE_LIMITED` and never runs. Over HTTP the
            transport counts it first, and answers ``429``.
        tasks: Answer long calls with MCP tasks, run on the Driver (`scopetool.mcp.tasks`); None: never.
        updates: Serve each registry published there from then on (`ToolUpdates`, what the gateway does when
            an upstream server's tools change), and tell the clients: the server declares ``tools.listChanged``,
            sends ``notifications/tools/list_changed`` on each 2025 connection and serves 2026-07-28's
            ``subscriptions/listen``. None: the registry is served as it is.
        code_mode: True or a `scopetool.code.CodeLimits`: list the code tool ``run_code`` in place of the
            catalog (beside ``search_tools`` and ``call_tool`` with `tool_search`), the tools still callable by
            name. Each nested call of a snippet is checked as a direct call of its tool through this server:
            `visible`, `limiter` (not against its caller's concurrency, which the code call holds) and
            `on_call` (`scopetool.mcp._code_mode`). Needs ``pip install 'scopetool[code]'``.

    Raises:
        TypeError: `registry` is not a `Registry`, `tool_search` is not a bool or a `ToolSearch`, or
            `code_mode` not a bool or a `CodeLimits`.
        ValueError: `page_size` is not a positive integer.
        ProviderError: A tool name breaks MCP's name rule, `tool_fields` is not of its shape,
            tool search cannot list its two tools or the tools it should always show, or code mode
            its ``run_code``.
    """
    return server_and_tools(
        registry,
        name=name,
        version=version,
        instructions=instructions,
        page_size=page_size,
        tool_fields=tool_fields,
        on_call=on_call,
        tool_search=tool_search,
        visible=visible,
        limiter=limiter,
        tasks=tasks,
        updates=updates,
        code_mode=code_mode,
    )[0]


def server_and_tools(
    registry: Registry,
    *,
    name: str = "scopetool",
    version: str = __version__,
    instructions: str | None = None,
    page_size: int | None = None,
    tool_fields: Mapping[str, Mapping[str, Any]] | None = None,
    on_call: CallObserver | None = None,
    tool_search: ToolSearch | bool = False,
    visible: Callable[[str], bool] | None = None,
    limiter: Limiter | None = None,
    tasks: TaskOptions | None = None,
    updates: ToolUpdates | None = None,
    code_mode: CodeLimits | bool = False,
) -> tuple[Server[Any], _Tools]:
    """`create_server`'s server and its handlers (`scopetool.mcp._lean_server` answers ``tools/call`` with them)."""
    if page_size is not None and (isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1):
        raise ValueError(f"page_size must be a positive integer or None, not {page_size!r}")
    tools = _Tools(
        page_size, on_call=on_call, visible=visible, limiter=limiter, tool_fields=tool_fields, code_mode=code_mode
    )
    tools.rebuild(registry, tool_search)
    reveal = tools.catalog.search is not None and tools.catalog.search.reveal
    server_class = _ListChangingServer if reveal or updates is not None else Server
    server: Server[Any] = server_class(name, version=version, instructions=instructions)
    if tasks is not None:
        tools.tasks = service = TaskService(registry, tools.catalog.export, tasks, on_call, MAX_INPUT_ROUNDS)
        server.extensions[EXTENSION] = {}
        service.register(server)
    if updates is not None:
        updates.follow(ListChangeNotices(server, tools.prepare))
    security = RequestStateSecurity(keys=[os.urandom(32)], bind_principal=_bound_identity)  # the SDK's ephemeral()
    server.middleware.append(RequestStateBoundary(security, default_audience=name))
    server.add_request_handler("tools/list", mcp_types.PaginatedRequestParams, tools.list_tools)
    server.add_request_handler("tools/call", mcp_types.CallToolRequestParams, tools.call_tool)
    return server, tools


@final
@dataclass(frozen=True, slots=True)
class _Catalog:
    """Everything a server derives from the registry it serves, made in one place (`_derive`) and swapped whole."""

    registry: Registry
    """What is run: the tools (and, in code mode, ``run_code``)."""
    export: Export
    listed: Export
    """What ``tools/list`` lists (with tool search, its two tools and the tools always shown; in code mode,
    ``run_code`` in place of the tools)."""
    names: frozenset[str]
    search: SearchFront | None
    code: CodeFront | None


def _derive(
    registry: Registry,
    tool_search: ToolSearch | bool,
    *,
    tool_fields: Mapping[str, Mapping[str, Any]] | None,
    visible: Callable[[str], bool] | None,
    code_mode: CodeLimits | bool,
    limiter: Limiter | None,
    on_call: CallObserver | None,
) -> _Catalog:
    """The `_Catalog` of `registry`: at the server's creation, and again for each registry `ToolUpdates` publishes.

    Raises:
        TypeError: `registry` is not a `Registry`, or `tool_search` is not a bool or a `ToolSearch`.
        ProviderError: as `create_server`.
    """
    if not isinstance(registry, Registry):
        raise TypeError(f"create_server needs a Registry, not {type(registry).__name__}")
    if not isinstance(tool_search, ToolSearch | bool):
        raise TypeError(f"tool_search must be True, False or a ToolSearch, not {type(tool_search).__name__}")
    export = export_tools(registry, tool_fields=tool_fields)
    search = None
    if tool_search is not False:
        options = ToolSearch() if tool_search is True else tool_search
        search = SearchFront(registry, export, options, tool_fields, visible=visible)
    code = code_front(
        registry, code_mode, visible=visible, limiter=limiter, on_call=on_call, searching=search is not None
    )
    listed = export if search is None else search.listed
    if code is not None:  # the catalog's tools and run_code are run; run_code is listed in place of the catalog
        registry, export = code.registry, export_tools(code.registry, tool_fields=tool_fields)
        listed = listed if search is not None else code.listed
    return _Catalog(registry, export, listed, frozenset(entry["name"] for entry in export.tools), search, code)


class _ListChangingServer(Server[Any]):
    """A server that declares ``tools.listChanged``: tool search that reveals found tools changes the list."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The SDK's options, with ``tools.listChanged`` declared unless told otherwise."""
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
        )


class ServerOptions(TypedDict, total=False):
    """The options of `create_server`, taken by every function that serves a registry."""

    name: str
    version: str
    instructions: str | None
    page_size: int | None
    tool_fields: Mapping[str, Mapping[str, Any]] | None
    on_call: CallObserver | None
    tool_search: ToolSearch | bool
    visible: Callable[[str], bool] | None
    limiter: Limiter | None
    tasks: TaskOptions | None
    updates: ToolUpdates | None
    code_mode: CodeLimits | bool


@final
@dataclass(frozen=True, slots=True)
class _Form:
    """One input request as an elicitation form."""

    request: InputRequest
    message: str
    schema: dict[str, Any]
    wrapped: bool

    @classmethod
    def of(cls, request: InputRequest) -> _Form | None:
        found = requested_schema(request.response_schema)
        if found is None:
            return None
        prompt = request.prompt
        message = prompt if isinstance(prompt, str) else json.dumps(prompt, ensure_ascii=False)
        return cls(request, message, *found)

    def elicitation(self) -> mcp_types.ElicitRequest:
        return mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message=self.message, requested_schema=self.schema)
        )

    def continuation(self, answer: mcp_types.ElicitResult) -> Continuation:
        """The continuation for an accepted answer; a member left empty (null) is taken as not given."""
        values = {key: value for key, value in (answer.content or {}).items() if value is not None}
        try:
            return self.request.continuation(values.get(ANSWER) if self.wrapped else values)
        except InvalidInputRequestError:
            raise _Ended(_BAD_ANSWER) from None


@final
@dataclass(frozen=True, slots=True)
class Handover:
    """A call the lean path began, handed to `_Tools.call_tool` (as its request context) with its first outcome."""

    call: ToolCall
    outcome: Result


class _Ended(Exception):  # noqa: N818 - a control signal: the call ends with this fixed text
    """Ends a call with a fixed error text (a template taking the tool's name)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


@final
class _Tools:
    """The ``tools/list`` and ``tools/call`` handlers of one server."""

    __slots__ = (
        "_code_mode",
        "_limiter",
        "_on_call",
        "_page_size",
        "_revealed",
        "_tool_fields",
        "_visible",
        "catalog",
        "tasks",
    )

    def __init__(
        self,
        page_size: int | None = None,
        *,
        on_call: CallObserver | None = None,
        visible: Callable[[str], bool] | None = None,
        limiter: Limiter | None = None,
        tool_fields: Mapping[str, Mapping[str, Any]] | None = None,
        code_mode: CodeLimits | bool = False,
    ) -> None:
        self.catalog: _Catalog
        """What is served now (`rebuild`): each request reads it once and keeps it to its end."""
        self.tasks: TaskService | None = None
        """Where calls become MCP tasks, when the server offers them."""
        self._page_size = page_size
        self._on_call = on_call
        self._tool_fields = tool_fields
        # Per 2025 connection, the tools search revealed to it (`ToolSearch.reveal`), in the order found. The
        # connection is known by the identity of its `initialize` params, one object for its whole life (the SDK
        # makes a new ServerSession per request and gives no public handle on the connection); its entry goes
        # when they do.
        self._revealed: dict[int, list[str]] = {}
        self._visible = visible
        self._limiter = limiter
        self._code_mode = code_mode

    def rebuild(self, registry: Registry, tool_search: ToolSearch | bool) -> None:
        """Serve `registry` from now on (`prepare`, then the swap).

        Raises:
            TypeError, ProviderError: as `create_server` (the catalog served before stays).
        """
        self.prepare(registry, tool_search)()

    def prepare(self, registry: Registry, tool_search: ToolSearch | bool) -> Callable[[], None]:
        """Derive everything served from `registry` (`_derive`, the one place it is made); the swap that serves it.

        After the swap a call already running keeps the catalog it started with; tasks run only tools their
        Driver knows unchanged (`TaskService.adopt`).

        Raises:
            TypeError, ProviderError: as `create_server` (nothing is swapped then).
        """
        catalog = _derive(
            registry,
            tool_search,
            tool_fields=self._tool_fields,
            visible=self._visible,
            code_mode=self._code_mode,
            limiter=self._limiter,
            on_call=self._on_call,
        )

        def swap() -> None:
            self.catalog = catalog
            if self.tasks is not None:
                self.tasks.adopt(registry)

        return swap

    async def list_tools(self, ctx: _Context, params: mcp_types.PaginatedRequestParams | None) -> dict[str, Any]:
        """One page of the caller's tool list, in the registry's order; the cursor is where the page starts.

        Raises:
            MCPError: ``-32602`` for a cursor this server did not give.
        """
        catalog = self.catalog
        tools, cursor = catalog.listed.tools, None if params is None else params.cursor
        client = ctx.session.client_params
        revealed = None if client is None else self._revealed.get(id(client))
        if revealed and catalog.search is not None:
            tools += catalog.search.entries([name for name in revealed if name in catalog.names])
        visible = self._visible
        own = () if catalog.search is None else (SEARCH_TOOLS, CALL_TOOL)
        if visible is not None:
            tools = [entry for entry in tools if entry["name"] in own or visible(entry["name"])]
        code = catalog.code
        if code is not None:  # run_code (this caller's entry) in place of the catalog, after tool search's own two
            shown = [code.entry()] if visible is None or visible(CODE_TOOL) else []
            tools = [*tools[: len(own)], *shown, *tools[len(own) :]] if catalog.search else shown
        start = 0
        if cursor is not None:
            start = int(cursor) if cursor.isdecimal() and cursor.isascii() else 0
            size = self._page_size
            if size is None or str(start) != cursor or not 0 < start < len(tools) or start % size:
                raise MCPError(mcp_types.INVALID_PARAMS, "Invalid params: unknown cursor")
        size = self._page_size or len(tools)
        end = start + size
        result = list_tools_result(catalog.listed, next_cursor=str(end) if end < len(tools) else None)
        result["tools"] = tools[start:end]
        return result

    async def call_tool(
        self, ctx: _Context, params: mcp_types.CallToolRequestParams
    ) -> dict[str, Any] | mcp_types.InputRequiredResult:
        """Admit, run and answer one call within the limits, asking the client for input as often as the tool needs it.

        With tool search, a ``search_tools`` call is answered from the catalog, and a ``call_tool`` call
        is unwrapped and goes on as its inner call (an unknown inner name is an error result).

        A call the lean path (`lean_call`) began and handed over comes with its first outcome (`Handover`).

        Raises:
            MCPError: ``-32602`` for a tool this server does not have (MCP 2026-07-28: a protocol error);
                `RATE_LIMITED` (or ``-32603`` when the limit's store did not answer) for a call over a limit.
        """
        catalog = self.catalog  # the call's, to its end, whatever is swapped in meanwhile
        if self._limiter is None or _counted(ctx.request):
            return await self._call_tool(ctx, params, catalog)
        counted = params.name if catalog.search is None else counted_name(params.name, params.arguments)
        found = await self._limiter.enter(counted)
        if isinstance(found, LimitError):
            self._tell_on_call(
                ToolCall(None if ctx.request_id is None else str(ctx.request_id), Request(params.name)), found
            )
            code = RATE_LIMITED if found.status == RATE_LIMITED else mcp_types.INTERNAL_ERROR
            raise MCPError(code, str(found), {"retryAfterSeconds": found.retry_after})
        try:
            return await self._call_tool(ctx, params, catalog)
        finally:
            found.release()

    async def _call_tool(
        self, ctx: _Context, params: mcp_types.CallToolRequestParams, catalog: _Catalog
    ) -> dict[str, Any] | mcp_types.InputRequiredResult:
        name, call_id = params.name, None if ctx.request_id is None else str(ctx.request_id)
        handed = ctx.request if isinstance(ctx.request, Handover) else None
        search = catalog.search
        own = search is not None and name in (SEARCH_TOOLS, CALL_TOOL)
        if handed is None and not own:
            self._known(catalog, name, call_id)
        raw = _exact_arguments(ctx.request)
        arguments: str | bytes
        if handed is not None:
            arguments = handed.call.request.arguments
        elif raw is not None:  # the exact text, where the client's broke I-JSON
            arguments = raw.text
        else:
            try:  # what the transport parsed (over stdio, from a line that is I-JSON)
                arguments = object_arguments(params.arguments or {}, "tools/call")
            except ProviderError:
                return _error(_NOT_JSON, name)
        if search is not None and name == SEARCH_TOOLS:
            call = ToolCall(call_id, Request(name, arguments))
            found = await run_call(search.searching, call)
            if search.reveal and isinstance(found, Result) and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                await self._reveal(ctx.session, search.unlisted(found))
            return result_message(call, found, search.listed)
        if search is not None and name == CALL_TOOL:
            inner = search.unwrap(call_id, arguments)
            if not isinstance(inner, ToolCall):  # call_tool's own arguments were rejected
                return result_message(ToolCall(call_id, Request(name, arguments)), inner)
            name, arguments = inner.name, inner.request.arguments
            if name not in catalog.names or (self._visible is not None and not self._visible(name)):
                return _error_text(search.unknown(self._unknown(catalog, call_id, name)))
        call = ToolCall(call_id, Request(name, arguments))
        if (
            handed is None
            and self.tasks is not None
            and params.request_state is None
            and self.tasks.eligible(ctx, name)
        ):
            return await self.tasks.call(call)
        first = None if handed is None else handed.outcome
        try:
            admission, rounds = Admission(), 0
            if params.request_state is not None:
                admission, rounds = self._resume(params)
            while True:
                outcome: Result | BaseException
                if first is not None:  # run and told on the lean path already
                    outcome, first = first, None
                else:
                    outcome = await self._run(ctx, catalog.registry, call, admission)
                    self._tell_on_call(call, outcome)
                request = outcome.input_request if isinstance(outcome, Result) else None
                if request is None:
                    return result_message(call, outcome, catalog.export)
                rounds += 1
                if rounds > MAX_INPUT_ROUNDS:
                    raise _Ended(_TOO_MANY)
                form = _Form.of(request)
                modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
                if form is None or not _can_elicit(ctx.session) or not (modern or ctx.session.can_send_request):
                    raise _Ended(_NO_INPUT)
                if modern:
                    return self._input_required(form, rounds)
                admission = Admission(continuation=form.continuation(await _elicit(ctx, form)))
        except _Ended as ended:
            return _error(ended.text, name)

    async def _reveal(self, session: ServerSession, names: list[str]) -> None:
        """List `names` for the rest of the connection, after what it lists already; tell the client when that grew."""
        client = session.client_params
        if client is None:  # pragma: no cover - a 2025 handshake always identifies the client
            return
        revealed = self._revealed.get(id(client))
        if revealed is None:
            revealed = self._revealed[id(client)] = []
            weakref.finalize(client, self._revealed.pop, id(client), None)
        new = [name for name in names if name not in revealed]
        if new:
            revealed.extend(new)
            await session.send_tool_list_changed()

    @property
    def lean(self) -> bool:
        """Whether ``tools/call`` may take the lean path: not with tool search or tasks (`call_tool` serves those)."""
        return self.catalog.search is None and self.tasks is None

    async def lean_call(self, call: ToolCall) -> dict[str, Any] | Handover:
        """A call without progress token or request state, on the lean path: the result, or what `call_tool` resumes.

        The same steps as `call_tool` up to its first outcome: a name this caller does not have raises
        `MCPError` (``-32602``), a call over a limit the limit's error, the call is run by `run_call` and
        told to the observer; a result that requests input is handed to `call_tool` (over the SDK's
        session, which asks the client), anything else is answered here.
        """
        catalog = self.catalog
        self._known(catalog, call.name, call.id)
        if self._limiter is None:
            return await self._lean_run(catalog, call)
        found = await self._limiter.enter(call.name)
        if isinstance(found, LimitError):
            self._tell_on_call(ToolCall(call.id, Request(call.name)), found)
            code = RATE_LIMITED if found.status == RATE_LIMITED else mcp_types.INTERNAL_ERROR
            raise MCPError(code, str(found), {"retryAfterSeconds": found.retry_after})
        try:
            return await self._lean_run(catalog, call)
        finally:
            found.release()

    async def _lean_run(self, catalog: _Catalog, call: ToolCall) -> dict[str, Any] | Handover:
        outcome = await run_call(catalog.registry, call, Admission())
        self._tell_on_call(call, outcome)
        if isinstance(outcome, Result) and outcome.input_request is not None:
            return Handover(call, outcome)
        return result_message(call, outcome, catalog.export)

    def _known(self, catalog: _Catalog, name: str, call_id: str | None) -> None:
        """Raise the ``-32602`` of a name this server (or this caller) does not have, once it is observed and told."""
        if name not in catalog.names or (self._visible is not None and not self._visible(name)):
            raise MCPError(mcp_types.INVALID_PARAMS, str(self._unknown(catalog, call_id, name)))

    def _unknown(self, catalog: _Catalog, call_id: str | None, name: str) -> UnknownToolError:
        """Tell the observers of a call to a tool this caller may not call: its error, suggesting only tools it may."""
        observer = _observe.current
        if observer is not None:
            observer.unknown(name, call_id)
        visible = self._visible
        error = UnknownToolError(name, sorted(known for known in catalog.names if visible is None or visible(known)))
        self._tell_on_call(ToolCall(call_id, Request(name)), error)
        return error

    def _tell_on_call(self, call: ToolCall, outcome: Result | BaseException) -> None:
        if self._on_call is not None:
            self._on_call(call, outcome)

    async def _run(
        self, ctx: _Context, registry: Registry, call: ToolCall, admission: Admission
    ) -> Result | BaseException:
        """Run one attempt, forwarding its progress when the client asked for it."""
        if ctx.meta is None or ctx.meta.get("progress_token") is None:
            return await run_call(registry, call, admission)
        async with _forwarding(ctx.session):
            return await run_call(registry, call, admission)

    def _input_required(self, form: _Form, rounds: int) -> mcp_types.InputRequiredResult:
        """Ask a 2026-07-28 client for the input; its retry of the call carries the answer and this state.

        The state (the input request and the rounds so far) is sealed by the SDK's `RequestStateBoundary`:
        encrypted, bound to this tool and these arguments, and valid for ten minutes.
        """
        state = f"{rounds}:{form.request.to_json().decode()}"
        return mcp_types.InputRequiredResult(input_requests={_INPUT_KEY: form.elicitation()}, request_state=state)

    def _resume(self, params: mcp_types.CallToolRequestParams) -> tuple[Admission, int]:
        """The admission resuming the call a 2026-07-28 client retries with its answer, and its rounds."""
        rounds, _, request = (params.request_state or "").partition(":")
        try:  # the boundary refuses a state this server did not mint; this guards a server without it
            form, done = _Form.of(InputRequest.from_json(request)), int(rounds)
        except ValueError:
            raise _Ended(_EXPIRED) from None
        if form is None:
            raise _Ended(_EXPIRED)
        answer = (params.input_responses or {}).get(_INPUT_KEY)
        if not isinstance(answer, mcp_types.ElicitResult):
            raise _Ended(_UNANSWERED)
        return Admission(continuation=form.continuation(_accepted(answer))), done


def _exact_arguments(request: object) -> RawArguments | None:
    """The exact arguments the transport set aside for a call (its request context, or in its HTTP scope)."""
    if isinstance(request, RawArguments):  # stdio
        return request
    scope: object = getattr(request, "scope", None)  # HTTP: the Starlette request of the POST
    found = scope.get(ARGUMENTS) if is_object(scope) else None
    return found if isinstance(found, RawArguments) else None


def _counted(request: object) -> bool:
    """Whether this call was counted against the limits already.

    So is an HTTP request the transport admitted, and a call the lean path began (`lean_call` counted it)
    and handed over.
    """
    if isinstance(request, Handover):
        return True
    scope: object = getattr(request, "scope", None)
    return is_object(scope) and scope.get(LIMITED) is True


def _bound_identity(ctx: _Context) -> str | None:
    """Whose a request state is: the caller's whole identity (`scopetool.Principal.identity`), None for no caller."""
    principal = current_principal()
    return None if principal is None else principal.identity.key


def _can_elicit(session: ServerSession) -> bool:
    """Whether the client declared form elicitation (an empty capability means form, as in 2025-06-18)."""
    capabilities = session.client_capabilities
    found = None if capabilities is None else capabilities.elicitation
    return found is not None and (found.form is not None or found.url is None)


async def _elicit(ctx: _Context, form: _Form) -> mcp_types.ElicitResult:
    """Ask the client over the open connection (2025 protocol versions); only an acceptance returns."""
    try:
        answer = await ctx.session.elicit_form(form.message, form.schema, related_request_id=ctx.request_id)
    except Exception:  # noqa: BLE001 - the client failed to answer; nothing of its error reaches the model
        raise _Ended(_UNANSWERED) from None
    return _accepted(answer)


def _accepted(answer: mcp_types.ElicitResult) -> mcp_types.ElicitResult:
    """The answer when the person accepted; a declined or cancelled form ends the call."""
    if answer.action == "decline":
        raise _Ended(_DECLINED)
    if answer.action == "cancel":
        raise _Ended(_CANCELLED)
    return answer


def _error(template: str, name: str) -> dict[str, Any]:
    """An ``isError`` result with one fixed text (a template taking the tool's name)."""
    return _error_text(template.format(name=name))


def _error_text(text: str) -> dict[str, Any]:
    """An ``isError`` result with one text."""
    return {"content": [{"type": "text", "text": text}], "isError": True, "resultType": "complete"}


@contextlib.asynccontextmanager
async def _forwarding(session: ServerSession) -> AsyncGenerator[None]:
    """Send the progress reported inside the block to the client; every report is sent on exit."""
    forwarder = _ProgressForwarder(session)
    async with anyio.create_task_group() as group:
        group.start_soon(forwarder.drain)
        try:
            with progress_reporter(forwarder):
                yield
        finally:
            forwarder.close()


@final
class _ProgressForwarder:
    """Sends a call's progress to the client in report order, from the loop or from worker threads."""

    __slots__ = ("_last", "_loop", "_receive", "_send", "_session")

    def __init__(self, session: ServerSession) -> None:
        self._session = session
        self._loop = asyncio.get_running_loop()
        self._send, self._receive = anyio.create_memory_object_stream[Progress](math.inf)
        self._last = -1.0

    def __call__(self, progress: Progress, /) -> None:
        # Always through the loop's queue, which is FIFO: reports from threads and from the loop keep
        # their order, and every report made before `close` is sent before the result.
        self._loop.call_soon_threadsafe(self._put, progress)

    def _put(self, progress: Progress) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):  # after the call: dropped
            self._send.send_nowait(progress)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._send.close)

    async def drain(self) -> None:
        async with self._receive:
            async for progress in self._receive:
                if progress.completed <= self._last:
                    continue
                self._last = progress.completed
                await self._session.report_progress(
                    progress.completed, progress.total or None, progress.message or None
                )
