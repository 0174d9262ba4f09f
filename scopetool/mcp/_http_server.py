"""The server over Streamable HTTP and its bounds: `HttpSettings`, `http_app`, `serve_http`, `run_http`.

The SDK's Streamable HTTP transport behind two ASGI middlewares: `_Hosts` checks each request's ``Host``
and ``Origin`` (DNS-rebinding protection), `_StrictBodies` reads each body within its size and time
bounds and screens it as I-JSON (`scopetool.mcp._strict_messages`) before the SDK parses it. The
session manager `_EvictingSessions` closes the least recently used idle session to admit a new one;
uvicorn serves it all, with a clock on each request's headers (`_timed_headers`). Its public names are
`scopetool.mcp.server`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import math
import re
import socket
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Final, Unpack, cast, final
from urllib.parse import urlsplit

import anyio
from mcp import types as mcp_types
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import LAST_EVENT_ID_HEADER, MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._contract import Request
from .._json import is_object
from .._registry import Registry
from ..providers._common import ToolCall
from ._strict_messages import ARGUMENTS, BLANK, LIMITED, Passed, screen
from ._tool_handlers import CallObserver, ServerOptions, create_server
from ._tool_search import counted_name
from .auth import Authenticate, HttpAuth, metadata_routes, principal_middleware
from .limits import RATE_LIMITED, Admitted, Limiter

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PATH",
    "HTTP_SHUTDOWN_GRACE",
    "HttpSettings",
    "http_app",
    "is_loopback",
    "run_http",
    "serve_http",
]

DEFAULT_HOST: Final = "127.0.0.1"
"""Where `serve_http` listens unless told otherwise: the loopback interface, reachable from this machine only."""
DEFAULT_PATH: Final = "/mcp"
"""The path of the Streamable HTTP endpoint."""
HTTP_SHUTDOWN_GRACE: Final = 1.0
"""Seconds `serve_http` lets requests in flight finish, by default, once it is told to stop."""


def _positive(value: object, name: str, *, whole: bool = False) -> None:
    """Check that `value` is a positive finite number (a whole one when `whole`).

    Raises:
        ValueError: it is not, naming the setting.
    """
    kinds = int if whole else int | float
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) or value <= 0:
        unit = "a whole number >= 1" if whole else "a number of seconds > 0"
        raise ValueError(f"{name} must be {unit}, not {value!r}")


@final
@dataclass(frozen=True, slots=True)
class HttpSettings:
    """How much a Streamable HTTP server lets its clients hold, and which host names it answers to.

    Every bound has a default a production server can keep; each is checked when the settings are made.

    Example:
        ```python
        from scopetool.mcp.server import HttpSettings

        settings = HttpSettings(session_idle_timeout=60, allowed_hosts=("mcp.example.com",))
        print(settings.max_sessions, settings.session_idle_timeout)
        #> 1000 60
        ```

    Raises:
        ValueError: a bound is not a positive (finite) number, or a host or origin cannot be read.
    """

    session_idle_timeout: float = 300.0
    """Seconds a 2025 session may go with no request in flight (no call running, no open GET stream)
    before it is closed; its id then answers 404 and its client starts a new session. The SDK's own
    default is 30 minutes, which lets a client that opens sessions in a loop hold the table for that
    long; five minutes outlasts the pause between a person's turns."""
    max_sessions: int = 1000
    """The most 2025 sessions open at once. A request for one more closes the least recently used idle
    session (no request in flight: no call running, no open GET stream), whose id then answers 404 and
    whose client starts a new session; only when every session has a request in flight is it answered
    ``503`` with a ``Retry-After``. So a client that opens sessions in a loop cannot keep others out
    for the idle timeout. An idle session costs a few tens of KiB of memory
    (``benchmarks/edge.py`` measures it; docs/reliability-edge.md has the figures), so a full table
    stays within tens of MiB, where the SDK's default of 10,000 allows ten times that."""
    header_timeout: float = 10.0
    """Seconds a connection has to send a request's line and headers, from its start or from the end
    of its previous response; past them it is closed (uvicorn has no such bound: a client that sends
    its headers a byte at a time would hold its connection for ever)."""
    body_timeout: float = 30.0
    """Seconds a request has to send its whole body once its headers are in (4 MiB at most: about
    140 KB/s); past them it is answered ``408`` and its connection closed."""
    keep_alive_timeout: float = 5.0
    """Seconds an idle kept-alive connection stays open between requests (uvicorn's own default)."""
    max_connections: int = 2000
    """The most connections and requests in flight at once (uvicorn's ``limit_concurrency``); past it a
    request is answered ``503``. Twice `max_sessions`: each session may hold its GET stream and a call."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names (``name`` or ``name:port``) the server answers to besides loopback ones, for a server
    bound to a public address behind these names; when any is given, a request whose ``Host`` header
    names something else is refused ``421`` (DNS-rebinding protection), whatever the bind address."""
    allowed_origins: tuple[str, ...] = ()
    """Browser origins (``https://app.example.com``) allowed besides those of an allowed host; a
    request with any other ``Origin`` header is refused ``403`` when the protection is on."""
    stateless: bool = False
    """Serve 2025 clients without sessions too: each POST stands alone (no ``Mcp-Session-Id``, no GET
    stream, no request from the server such as a 2025 elicitation), so any instance behind a load
    balancer can answer any request. A 2026-07-28 request is stateless whatever this says."""
    _hosts: frozenset[tuple[str, int | None]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("session_idle_timeout", "header_timeout", "body_timeout", "keep_alive_timeout"):
            _positive(getattr(self, name), name)
        for name in ("max_sessions", "max_connections"):
            _positive(getattr(self, name), name, whole=True)
        hosts = frozenset(_host_entry(entry) for entry in self.allowed_hosts)
        for origin in self.allowed_origins:
            _origin_entry(origin)
        object.__setattr__(self, "_hosts", hosts)

    def host_allowed(self, hostname: str, port: int | None) -> bool:
        """Whether a ``Host`` of `hostname` (lower case, no brackets) and `port` names an allowed host."""
        return (hostname, None) in self._hosts or (hostname, port) in self._hosts

    def origin_allowed(self, origin: str) -> bool:
        """Whether `origin` is one of `allowed_origins` (compared as scheme, host and port, in lower case)."""
        return any(origin.lower().rstrip("/") == entry.lower().rstrip("/") for entry in self.allowed_origins)


def _split_host(text: str) -> tuple[str, int | None] | None:
    """``name``, ``name:port`` or ``[v6]:port`` as (lower-case name without brackets, port), or None."""
    try:
        parts = urlsplit(f"//{text}")
        name, port = parts.hostname or "", parts.port
    except ValueError:
        return None
    if parts.netloc != text or "@" in text:  # a path, a query or a user: not a Host
        return None
    if _HOST_NAME.fullmatch(name) is None:
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return None
    return name, port


_HOST_NAME: Final = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?")
"""A DNS name or an IPv4 address, in lower case (as `urlsplit` gives a host name)."""


def _host_entry(entry: object) -> tuple[str, int | None]:
    found = _split_host(entry) if isinstance(entry, str) else None
    if found is None:
        raise ValueError(f"allowed_hosts: {entry!r} is not a host name, or host:port")
    return found


def _origin_entry(entry: object) -> None:
    parts = urlsplit(entry) if isinstance(entry, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/"):
        raise ValueError(f"allowed_origins: {entry!r} is not an origin such as https://app.example.com")


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine only: a loopback address (127.0.0.0/8, ::1), or a name resolving only to them."""
    bare = host.strip("[]")
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        pass
    if bare.lower() == "localhost":
        return True
    try:
        found = socket.getaddrinfo(bare, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(str(entry[4][0]).partition("%")[0]).is_loopback for entry in found)


def _unannounced(url: str) -> None:
    """Tell nobody where the server listens (`serve_http`'s default `ready`)."""


def _to_stderr(text: str) -> None:
    """`serve_http`'s default `warn`: one line on standard error."""
    sys.stderr.write(f"scopetool: {text}\n")
    sys.stderr.flush()


def http_app(
    registry: Registry,
    *,
    host: str = DEFAULT_HOST,
    path: str = DEFAULT_PATH,
    settings: HttpSettings | None = None,
    auth: HttpAuth | None = None,
    **options: Unpack[ServerOptions],
) -> ASGIApp:
    """The ASGI application serving `registry` over MCP Streamable HTTP at `path` (the SDK's transport).

    Run it with any ASGI server (its lifespan must run: it starts the SDK's session manager), or
    let `serve_http` run it. Every request body is screened as I-JSON before the SDK parses it, as a
    stdio line is (`serve_stdio`): a body that breaks I-JSON is answered ``400`` with a JSON-RPC
    error, except that a ``tools/call`` whose arguments alone break it reaches ``Contract.prepare``
    with their exact text, and is answered with the call's rejection. Bodies over the SDK's limit
    (4 MiB) are answered ``413``, bodies not sent within ``settings.body_timeout`` ``408``.

    DNS-rebinding protection: when `host` is a loopback address (any of 127.0.0.0/8, ``::1``, or a
    name resolving only to them) or ``settings.allowed_hosts`` names hosts, a request whose ``Host``
    header names neither a loopback address, ``localhost``, `host` nor an allowed host is refused
    ``421``, and one whose ``Origin`` is not of such a host nor in ``settings.allowed_origins`` ``403``.

    Sessions (`HttpSettings`): at most ``max_sessions`` open, each closed after ``session_idle_timeout``
    idle seconds; a new one past the bound closes the least recently used idle session (its id then
    answers ``404``), and is answered ``503`` with ``Retry-After`` only when none is idle. A 2025 session's
    call whose client disconnects before its answer is cancelled, as a 2026-07-28 call already is (a
    sync tool's thread, which cannot be stopped, is abandoned: `scopetool._threads`). A GET that asks
    to resume a stream (``Last-Event-ID``) is answered ``400`` with a JSON-RPC error: this server does
    not store events. `options` are those of `create_server`.

    Authentication (`scopetool.mcp.auth`): with `auth`, every request but a read of the Protected
    Resource Metadata (served at ``auth.resource_metadata_url``'s path) needs a valid bearer token
    (``401``, ``403`` for missing scopes, ``503`` when the issuer's keys cannot be fetched), and
    every MCP request runs as its caller (`scopetool.current_principal`). Without it, anyone who
    reaches the port can call every tool.

    Both protocol eras are served: a 2025 client's session (``initialize``, ``Mcp-Session-Id``,
    server-sent events that carry progress and elicitations) and 2026-07-28's one request per POST.

    Raises:
        ValueError: a host name of `host` or of the settings cannot be read.
    """
    settings = settings or HttpSettings()
    server = create_server(registry, **options)
    server.middleware.insert(1, principal_middleware)  # after the SDK's tracing, before its request-state boundary
    sessions = _EvictingSessions(server, settings)
    # the SDK's `Server.streamable_http_app`, with this session manager: one route, the manager's lifespan
    routes = [Route(path, StreamableHTTPASGIApp(sessions)), *([] if auth is None else metadata_routes(auth))]
    limiter = options.get("limiter")
    searching = options.get("tool_search", False) is not False
    limits = None if limiter is None else _Limits(limiter, options.get("on_call"), searching)
    app: ASGIApp = _StrictBodies(Starlette(routes=routes, lifespan=lambda _: sessions.run()), settings, limits)
    if auth is not None:  # before the body is read: an unauthenticated client sends no 4 MiB
        app = Authenticate(app, auth)  # and outside the limits, which count each call by its caller
    return _Hosts(app, host, settings)


_logger: Final = logging.getLogger("scopetool.mcp.server")


@final
class _EvictingSessions(StreamableHTTPSessionManager):
    """The SDK's session manager, closing the least recently used idle session to admit a new one when full.

    A session is idle when no request of it is in flight (no call running, no open GET stream). Only a
    table of busy sessions refuses a new one (the SDK's ``503``). An evicted session's id answers
    ``404``, as one that idled out does, and its client starts a new session.
    """

    def __init__(self, server: Server[Any], settings: HttpSettings) -> None:
        super().__init__(
            server,
            session_idle_timeout=settings.session_idle_timeout,
            max_sessions=settings.max_sessions,
            stateless=settings.stateless,
            # `_Hosts` checks Host and Origin for every request, with loopback ranges the SDK's patterns cannot say
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._settings = settings

    # The one place that reaches into the SDK's private surface (mcp 2.3): `_admit_session`, called under the
    # manager's session-creation lock for each request that would open a session (None refuses it, 503), and
    # `_server_instances`, its table of open sessions; `_idle_scope` reads how a transport marks itself busy.
    # test_edge_http checks all three are still what this expects (..._reaches_into, ..._as_eviction_reads_the_sdk).
    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        table = self._server_instances
        if len(table) >= self._settings.max_sessions:
            self._evict_idlest(table)
        return super()._admit_session(requestor)

    def _evict_idlest(self, table: dict[str, StreamableHTTPServerTransport]) -> None:
        """Close the session of `table` idle the longest, if any is idle; it answers 404 from now on."""
        idle = [(scope.deadline, key, scope) for key, transport in table.items() if (scope := _idle_scope(transport))]
        if not idle:
            return  # every session has a request in flight: the SDK refuses the new one
        deadline, session_id, scope = min(idle, key=lambda entry: entry[0])
        del table[session_id]  # room at once, and its id is unknown (404) from here on
        scope.cancel()  # the SDK ends the session as on its idle timeout, and forgets the rest of it
        idle_for = anyio.current_time() - deadline + self._settings.session_idle_timeout
        maximum = self._settings.max_sessions
        _logger.info(
            "closed session %s, idle %.1f s, to admit a new one (max_sessions %d)", session_id, idle_for, maximum
        )


def _idle_scope(transport: StreamableHTTPServerTransport) -> anyio.CancelScope | None:
    """The idle scope of `transport`'s session when no request of it is in flight, else None.

    The SDK's transport sets its scope's deadline to infinity while any request is in flight (and it is
    infinite before the first), and to the end of the last one plus the idle timeout otherwise: the
    earliest deadline is the least recently used idle session, at no cost per request.
    """
    scope = transport.idle_scope
    return scope if scope is not None and scope.deadline < math.inf else None


async def serve_http(
    registry: Registry,
    *,
    host: str = DEFAULT_HOST,
    port: int = 8000,
    path: str = DEFAULT_PATH,
    shutdown_grace: float = HTTP_SHUTDOWN_GRACE,
    settings: HttpSettings | None = None,
    ready: Callable[[str], object] = _unannounced,
    warn: Callable[[str], object] = _to_stderr,
    auth: HttpAuth | None = None,
    **options: Unpack[ServerOptions],
) -> None:
    """Serve `registry` over MCP Streamable HTTP on `host`:`port` until cancelled or interrupted.

    The socket is bound before anything is served (port 0 picks a free port); `ready` is then called
    with the endpoint's URL (``http://127.0.0.1:8000/mcp``) once the server accepts connections. On
    Ctrl-C (SIGINT) or SIGTERM, requests in flight get `shutdown_grace` seconds to finish, then are
    cancelled, and the signal is raised again (Ctrl-C is a ``KeyboardInterrupt``). The application is
    `http_app`'s, with `settings`; `options` are those of `create_server`. It runs on uvicorn, which
    the MCP SDK brings, bounded by the settings' header, keep-alive and connection limits.

    Without `auth` (`http_app`), anyone who reaches the port can call every tool: `warn` is told so,
    in one line, before serving (by default on standard error); on a `host` that is not loopback
    (``0.0.0.0``, ``::``, a public address), that is anyone on the network, and the line says how to
    restrict the host names it answers to.

    Raises:
        OSError: The address cannot be bound (in use, not this machine's).
        ValueError: `shutdown_grace` is negative or NaN.
    """
    import uvicorn  # noqa: PLC0415 - the HTTP server the SDK brings; serving stdio does not load it

    if not shutdown_grace >= 0:
        raise ValueError(f"shutdown_grace must be a number of seconds >= 0, not {shutdown_grace!r}")
    settings = settings or HttpSettings()
    app = http_app(registry, host=host, path=path, settings=settings, auth=auth, **options)
    with _listen(host, port) as sock:
        url = _url(host, sock.getsockname()[1], path)
        if auth is None:
            warn(_local_warning() if is_loopback(host) else _public_warning(host, settings))
        # uvicorn hands the grace to asyncio.wait_for, which takes any number of seconds (None: no bound)
        grace = cast("int | None", None if math.isinf(shutdown_grace) else shutdown_grace)
        config = uvicorn.Config(
            app,
            log_config=None,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=grace,
            http=_timed_headers(settings.header_timeout),
            timeout_keep_alive=cast("int", settings.keep_alive_timeout),  # a delay for call_later: any seconds
            limit_concurrency=settings.max_connections,
        )

        class Server(uvicorn.Server):
            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                await super().startup(sockets)  # it returns listening, or exits the process (lifespan failed)
                ready(url)

        server = Server(config)
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        try:
            await asyncio.shield(serving)
        finally:  # cancelled: stopped as by a signal, with the same grace
            if not serving.done():
                server.should_exit = True
                with anyio.CancelScope(shield=True):
                    await serving


def _local_warning() -> str:
    """The warning for a loopback server without authentication."""
    return (
        "WARNING: no authentication: any program on this machine can call every tool "
        "(--auth-issuer URL or --auth-token-file PATH authenticates callers)."
    )


def _public_warning(host: str, settings: HttpSettings) -> str:
    """The warning for a server reachable from the network."""
    text = (
        f"WARNING: listening on {host}, reachable from the network, with no authentication: anyone who can "
        "reach this port can call every tool. Serve 127.0.0.1 to keep it to this machine"
    )
    if settings.allowed_hosts:
        return f"{text}; only Host headers of {', '.join(settings.allowed_hosts)} or loopback are accepted."
    return f"{text}, and name the host names clients use (--allowed-host NAME) to refuse any other Host header."


def run_http(
    registry: Registry,
    *,
    host: str = DEFAULT_HOST,
    port: int = 8000,
    path: str = DEFAULT_PATH,
    shutdown_grace: float = HTTP_SHUTDOWN_GRACE,
    settings: HttpSettings | None = None,
    ready: Callable[[str], object] = _unannounced,
    warn: Callable[[str], object] = _to_stderr,
    auth: HttpAuth | None = None,
    **options: Unpack[ServerOptions],
) -> None:
    """Serve `registry` over Streamable HTTP, blocking until interrupted (``scopetool serve --http``).

    Arguments are those of `serve_http`.
    """
    asyncio.run(
        serve_http(
            registry,
            host=host,
            port=port,
            path=path,
            shutdown_grace=shutdown_grace,
            settings=settings,
            ready=ready,
            warn=warn,
            auth=auth,
            **options,
        )
    )


@contextlib.contextmanager
def _listen(host: str, port: int) -> Generator[socket.socket]:
    """A listening TCP socket on `host`:`port` (IPv4 or IPv6, as `host` is written)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.create_server((host.strip("[]"), port), family=family) as sock:
        yield sock


def _url(host: str, port: int, path: str) -> str:
    bare = host.strip("[]")
    return f"http://{f'[{bare}]' if ':' in bare else bare}:{port}{path}"


def _timed_headers(seconds: float) -> type[asyncio.Protocol]:
    """Uvicorn's HTTP/1.1 protocol, closing a connection that has not sent a request's head within `seconds`.

    uvicorn times out only an idle connection after a response (``timeout_keep_alive``), and any byte
    received cancels even that: a connection that sends its headers slowly is otherwise held for ever.
    Here the clock starts when the connection opens and when each response ends, and stops when a
    request's head is complete (a new request cycle begins).
    """
    from uvicorn.protocols.http.h11_impl import H11Protocol  # noqa: PLC0415 - loaded with uvicorn

    class TimedHeaders(H11Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]  # uvicorn's own annotation is narrower
            self._start_head_clock()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._start_head_clock()

        def _start_head_clock(self) -> None:
            cycle = self.cycle
            self.loop.call_later(seconds, self._head_late, cycle)

        def _head_late(self, cycle: object) -> None:
            if self.cycle is cycle and not self.transport.is_closing():  # no request head since the clock started
                self.timeout_keep_alive_handler()  # how uvicorn closes a connection it stops waiting for

    return TimedHeaders


def _json_error(status: int, code: int, message: str, **headers: str) -> Response:
    """An HTTP error answered with a JSON-RPC error body (id null)."""
    body = mcp_types.JSONRPCError(jsonrpc="2.0", id=None, error=mcp_types.ErrorData(code=code, message=message))
    text = body.model_dump_json(by_alias=True, exclude_unset=True)
    return Response(text, status_code=status, media_type="application/json", headers=headers or None)


@final
class _Hosts:
    """ASGI middleware: DNS-rebinding protection, each request's ``Host`` and ``Origin`` checked (see `http_app`)."""

    __slots__ = ("_app", "_bind", "_on", "_settings")

    def __init__(self, app: ASGIApp, host: str, settings: HttpSettings) -> None:
        self._app = app
        self._settings = settings
        self._bind = host.strip("[]").lower()
        self._on = is_loopback(host) or bool(settings.allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._on and scope["type"] == "http":
            headers = Headers(scope=scope)
            host, origin = headers.get("host"), headers.get("origin")
            if host is None or not self._host_allowed(host):
                await _json_error(421, mcp_types.INVALID_REQUEST, "Invalid Host header")(scope, receive, send)
                return
            if origin is not None and not self._origin_allowed(origin):
                await _json_error(403, mcp_types.INVALID_REQUEST, "Invalid Origin header")(scope, receive, send)
                return
        await self._app(scope, receive, send)

    def _host_allowed(self, text: str) -> bool:
        found = _split_host(text)
        if found is None:
            return False
        name, port = found
        if name in ("localhost", self._bind) or self._settings.host_allowed(name, port):
            return True
        try:
            return ipaddress.ip_address(name).is_loopback
        except ValueError:
            return False

    def _origin_allowed(self, origin: str) -> bool:
        if self._settings.origin_allowed(origin):
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and self._host_allowed(parts.netloc)


@final
class _StrictBodies:
    """ASGI middleware: each body read within its bounds, and each POST body screened by `screen` before the SDK.

    It also answers what the SDK would not answer well: a GET that asks to resume a stream (``400``:
    no event store, where the SDK ends the request with no response, a ``500``), and a new session
    past the bound while every session is busy (the SDK's ``503``, with a ``Retry-After`` added); and
    it cancels a 2025 session's request whose client disconnected before its answer, which the SDK
    would let run to its end.
    """

    __slots__ = ("_app", "_limits", "_retry_after", "_settings")

    def __init__(self, app: ASGIApp, settings: HttpSettings, limits: _Limits | None = None) -> None:
        self._app = app
        self._settings = settings
        self._limits = limits
        self._retry_after = str(math.ceil(settings.session_idle_timeout))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if scope["method"] == "GET" and LAST_EVENT_ID_HEADER in headers:
            message = "Invalid request: this server does not resume streams (Last-Event-ID); open a new one"
            await _json_error(400, mcp_types.INVALID_REQUEST, message)(scope, receive, send)
            return
        declared = headers.get("content-length", "")
        if declared.isdecimal() and int(declared) > DEFAULT_MAX_REQUEST_BODY_SIZE:
            await self._too_large(scope, receive, send)
            return
        body: bytes | int | None = None
        with anyio.move_on_after(self._settings.body_timeout) as reading:
            body = await _read_body(receive)
        if reading.cancelled_caught:
            message = f"Request timeout: the body was not sent within {self._settings.body_timeout:g} s"
            await _json_error(408, mcp_types.INVALID_REQUEST, message, connection="close")(scope, receive, send)
        elif isinstance(body, int):
            await self._too_large(scope, receive, send)
        elif body is not None and scope["method"] == "POST":
            await self._post(scope, body, receive, send, headers.get(MCP_SESSION_ID_HEADER))
        elif body is not None:
            await self._app(scope, _Replay(body, receive), send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"Request body too large: over {DEFAULT_MAX_REQUEST_BODY_SIZE} bytes"
        await _json_error(413, mcp_types.INVALID_REQUEST, message, connection="close")(scope, receive, send)

    async def _post(self, scope: Scope, body: bytes, receive: Receive, send: Send, session: str | None) -> None:
        screened = screen(body) if body.strip(BLANK) else Passed(body, None, None)
        if isinstance(screened, Passed):
            body = screened.text
            if screened.arguments is not None:
                scope = {**scope, ARGUMENTS: screened.arguments}
        else:
            to_server, to_client = screened
            if to_client is not None:
                text = to_client.message.model_dump_json(by_alias=True, exclude_unset=True)
                await Response(text, status_code=400, media_type="application/json")(scope, receive, send)
                return
            assert to_server is not None
            body = to_server.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        held: Admitted | None = None
        if self._limits is not None and isinstance(screened, Passed):
            found = await self._limits.enter(screened.value)
            if isinstance(found, Response):
                await found(scope, receive, send)
                return
            if found is not None:
                held, scope = found, {**scope, LIMITED: True}
        replay, answer = _Replay(body, receive), _Answer(send, self._retry_after)
        try:
            await self._app(scope, replay, answer)
        finally:
            if held is not None:
                held.release()
        request_id = _request_id(screened.value) if isinstance(screened, Passed) else None
        # the client left before the answer: cancel its request, as its client would (2026-07-28 POSTs are cancelled)
        if session is not None and request_id is not None and replay.disconnected and not answer.complete:
            await self._cancel(scope, receive, request_id)

    async def _cancel(self, scope: Scope, receive: Receive, request_id: str | int) -> None:
        """Send the session a ``notifications/cancelled`` for `request_id`, as if from its client."""
        params = {"requestId": request_id, "reason": "the client disconnected"}
        body = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}).encode()
        kept = [(name, value) for name, value in scope["headers"] if name != b"content-length"]
        cancel = {**scope, "headers": [*kept, (b"content-length", str(len(body)).encode())]}

        async def nowhere(message: Message) -> None:
            """The session's 202 goes to no client."""

        # the session answers a notification at once (202); the gone client's `receive` says disconnect from here on
        await self._app(cancel, _Replay(body, receive), nowhere)


@final
class _Limits:
    """The limits of ``tools/call`` requests, counted before the SDK reads them: one over a limit is answered 429."""

    __slots__ = ("_limiter", "_on_call", "_searching")

    def __init__(self, limiter: Limiter, on_call: CallObserver | None, searching: bool = False) -> None:
        self._limiter = limiter
        self._on_call = on_call
        self._searching = searching  # with tool search, a ``call_tool`` call counts against its inner tool

    async def enter(self, value: object) -> Admitted | Response | None:
        """The slot of the ``tools/call`` request `value`, or the response refusing it; None for any other message."""
        params = value.get("params") if is_object(value) and value.get("method") == "tools/call" else None
        name = params.get("name") if is_object(params) else None
        if not isinstance(name, str):
            return None
        if self._searching and is_object(params):
            name = counted_name(name, params.get("arguments"))
        found = await self._limiter.enter(name)
        if isinstance(found, Admitted):
            return found
        request_id = _request_id(value)
        if self._on_call is not None:
            self._on_call(ToolCall(None if request_id is None else str(request_id), Request(name)), found)
        code = RATE_LIMITED if found.status == RATE_LIMITED else mcp_types.INTERNAL_ERROR
        error = mcp_types.ErrorData(code=code, message=str(found), data={"retryAfterSeconds": found.retry_after})
        text = mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error).model_dump_json(by_alias=True)
        headers = {"retry-after": str(found.retry_after)}
        return Response(text, status_code=found.status, media_type="application/json", headers=headers)


def _request_id(value: object) -> str | int | None:
    """The id of a JSON-RPC request (not a notification nor a response) other than ``initialize``."""
    if not is_object(value) or not isinstance(value.get("method"), str) or value.get("method") == "initialize":
        return None
    found = value.get("id")
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


async def _read_body(receive: Receive) -> bytes | int | None:
    """The whole request body; its size so far once past the SDK's limit; None on a disconnect."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        part = message.get("body", b"")
        size += len(part)
        if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return size
        parts.append(part)
        if not message.get("more_body", False):
            return b"".join(parts)


@final
class _Replay:
    """A ``receive`` that gives `body` as the request's one message, then what the client sends next."""

    __slots__ = ("_body", "_receive", "disconnected")

    def __init__(self, body: bytes, receive: Receive) -> None:
        self._body: bytes | None = body
        self._receive = receive
        self.disconnected = False
        """Whether the client's disconnect was received."""

    async def __call__(self) -> Message:
        if self._body is None:
            message = await self._receive()
            self.disconnected |= message["type"] == "http.disconnect"
            return message
        body, self._body = self._body, None
        return {"type": "http.request", "body": body, "more_body": False}


@final
class _Answer:
    """A ``send`` that notes whether the response was sent whole, and adds ``Retry-After`` to a ``503``."""

    __slots__ = ("_retry_after", "_send", "complete")

    def __init__(self, send: Send, retry_after: str) -> None:
        self._send = send
        self._retry_after = retry_after
        self.complete = False
        """Whether the response's last body part was sent."""

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 503:
            headers = [*message.get("headers", []), (b"retry-after", self._retry_after.encode())]
            message = {**message, "headers": headers}
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete = True
        await self._send(message)
