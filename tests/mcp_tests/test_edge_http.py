"""The HTTP server's edge against hostile clients on loopback: sessions, slow requests, calls left behind, hosts.

Each server runs `serve_http` with small bounds (`HttpSettings`) in a thread of its own (`Served`); the
hostile clients are a few lines of httpx or a raw socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import socket
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, MCPError
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from sse_starlette.sse import AppStatus
from starlette.types import Message
from test_http import MODERN, Served, call_body, post, text

from scopetool import Registry, _threads, tool
from scopetool.mcp import _http_server
from scopetool.mcp import server as mcp_server
from scopetool.mcp.server import HttpSettings, http_app, is_loopback

LEGACY = "2025-11-25"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}},
}
RELEASE = threading.Event()


@tool
def hang() -> str:
    """Wait until the test lets go (ten seconds at most)."""
    RELEASE.wait(10)
    return "late"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


CANCELLED = threading.Event()


@tool
async def wait() -> str:
    """Wait until the test lets go (ten seconds at most); note a cancellation."""
    try:
        await asyncio.to_thread(RELEASE.wait, 10)
    except asyncio.CancelledError:
        CANCELLED.set()
        raise
    return "waited"


TOOLS = Registry(hang, add, wait)


@contextlib.contextmanager
def served(**options: Any) -> Generator[str]:
    """The URL of `TOOLS` served with `options` until the block ends."""
    # A server stopped by SIGINT earlier in this process (test_http) leaves sse-starlette's process-wide
    # exit flag set, and every SSE response would then end at once.
    AppStatus.should_exit = False
    server = Served(TOOLS, **options)
    try:
        yield server.url
    finally:
        RELEASE.set()
        server.stop()
        RELEASE.clear()


def open_session(client: httpx.Client, url: str) -> httpx.Response:
    """One 2025 session opened (initialize, then initialized when it was admitted); the initialize answer."""
    answer = client.post(url, json=INITIALIZE, headers=ACCEPT)
    if answer.status_code == 200:
        headers = {**ACCEPT, "mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}
        client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return answer


def session_headers(answer: httpx.Response) -> dict[str, str]:
    """The headers of a request in the session that `answer` (an initialize answer) opened."""
    return {**ACCEPT, "mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": LEGACY}


def ping(client: httpx.Client, url: str, session: httpx.Response) -> int:
    """The status of a ``ping`` in the session that `session` (an initialize answer) opened."""
    request = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    return client.post(url, json=request, headers=session_headers(session)).status_code


async def test_a_client_opening_sessions_in_a_loop_does_not_keep_a_new_client_out() -> None:
    """Past max_sessions the loop's idle sessions make room: every new session, and a new SDK client, served at once."""
    # sessions idle out only after a minute: any room made here is made by eviction
    with served(settings=HttpSettings(session_idle_timeout=60, max_sessions=3)) as url:
        with httpx.Client(timeout=5) as hostile:
            answers = [open_session(hostile, url) for _ in range(6)]
        assert [answer.status_code for answer in answers] == [200] * 6
        started = time.monotonic()
        assert await admitted_call(url) == "3"
        assert time.monotonic() - started < 3


def test_the_least_recently_used_idle_session_is_evicted_its_id_answers_404(caplog: pytest.LogCaptureFixture) -> None:
    """A full table evicts the session used longest ago (not the oldest), in one INFO line; its next request is 404."""
    with (
        served(settings=HttpSettings(session_idle_timeout=60, max_sessions=3)) as url,
        httpx.Client(timeout=5) as client,
        caplog.at_level(logging.INFO),
    ):
        first, second, third = (open_session(client, url) for _ in range(3))
        assert ping(client, url, first) == 200  # the first is now used more recently than the second
        assert open_session(client, url).status_code == 200
        gone = client.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=session_headers(second))
        assert [ping(client, url, first), gone.status_code, ping(client, url, third)] == [200, 404, 200]
        assert gone.json()["error"]["message"] == "Session not found"
    evicted = [record for record in caplog.records if record.name == "scopetool.mcp.server"]
    assert [(record.levelno, second.headers["mcp-session-id"] in record.getMessage()) for record in evicted] == [
        (logging.INFO, True)
    ]
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING and "mcp" in record.name]


def test_with_every_session_busy_a_new_session_is_503_with_retry_after() -> None:
    """Sessions each with a call in flight refuse a new one (503, Retry-After); once they are idle, one is evicted."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
    with (
        served(settings=HttpSettings(session_idle_timeout=60, max_sessions=3)) as url,
        httpx.Client(timeout=5) as client,
        contextlib.ExitStack() as calls,
    ):
        opened = [open_session(client, url) for _ in range(3)]
        # each call's answer has begun (its headers are in) and the tool waits: every session has a request in flight
        streams = [
            calls.enter_context(client.stream("POST", url, json=call, headers=session_headers(session)))
            for session in opened
        ]
        assert [stream.status_code for stream in streams] == [200] * 3
        refused = client.post(url, json=INITIALIZE, headers=ACCEPT)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "60"
        assert refused.json()["error"]["message"] == "Too many open sessions"
        RELEASE.set()
        assert all('"waited"' in stream.read().decode() for stream in streams)
        # a session is idle once the server has finished its request, a moment after its answer is read
        deadline = time.monotonic() + 5
        while (admitted := open_session(client, url)).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert admitted.status_code == 200


async def test_a_connected_sdk_client_keeps_its_session_while_another_client_loops() -> None:
    """The SDK client holds its GET stream open, so it is never idle: a loop of sessions evicts only its own."""
    with served(settings=HttpSettings(session_idle_timeout=60, max_sessions=3)) as url:
        async with Client(url, mode="legacy") as client:
            assert text(await client.call_tool("add", {"a": 1, "b": 2})) == "3"
            await asyncio.sleep(0.3)  # for its GET stream, opened once the session is initialized, to be in
            async with httpx.AsyncClient(timeout=5) as hostile:
                statuses = [(await hostile.post(url, json=INITIALIZE, headers=ACCEPT)).status_code for _ in range(5)]
            assert statuses == [200] * 5
            assert text(await client.call_tool("add", {"a": 2, "b": 2})) == "4"


def test_the_sdk_still_has_what_session_eviction_reaches_into() -> None:
    """The SDK's private session hook and table that `_EvictingSessions` overrides and reads are still there."""
    hook = getattr(StreamableHTTPSessionManager, "_admit_session", None)
    assert hook is not None, "the MCP SDK no longer has StreamableHTTPSessionManager._admit_session"
    assert list(inspect.signature(hook).parameters) == ["self", "requestor"], "the SDK changed _admit_session"
    sessions = _http_server._EvictingSessions(mcp_server.create_server(TOOLS), HttpSettings(max_sessions=2))
    assert sessions._server_instances == {}, "the MCP SDK no longer keeps its sessions in _server_instances"


async def test_a_session_is_idle_only_with_no_request_in_flight_as_eviction_reads_the_sdk() -> None:
    """The SDK's idle scope is what `_idle_scope` expects: no deadline before the first request and during one."""
    transport = StreamableHTTPServerTransport("an-id", idle_timeout=5)
    during: list[anyio.CancelScope | None] = []

    async def send(message: Message) -> None:
        during.append(_http_server._idle_scope(transport))

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async with transport.connect():
        assert _http_server._idle_scope(transport) is None
        request = {"type": "http", "method": "PUT", "path": "/mcp", "headers": [], "query_string": b""}
        await transport.handle_request(request, receive, send)  # a method it does not serve: 405 at once
        assert during and set(during) == {None}, "the SDK no longer marks a session busy while a request is in flight"
        idle = _http_server._idle_scope(transport)
        assert idle is not None, "the SDK no longer gives an idle session's scope a deadline"
        assert 4 < idle.deadline - anyio.current_time() <= 5


async def admitted_call(url: str) -> str | None:
    """``add(1, 2)`` by the SDK's client in a new 2025 session; None when the session is refused for want of room."""
    try:
        async with Client(url, mode="legacy") as client:
            return text(await client.call_tool("add", {"a": 1, "b": 2}))
    except* MCPError as refused:  # the SDK's client raises it inside a task group's exception group
        if refused.subgroup(lambda error: isinstance(error, MCPError) and "Too many" not in error.error.message):
            raise
    return None


def slow_socket(url: str) -> socket.socket:
    """A raw TCP connection to the server of `url`."""
    address = httpx.URL(url)
    assert address.host is not None and address.port is not None
    return socket.create_connection((address.host, address.port), timeout=5)


def closed_within(sock: socket.socket, seconds: float, trickle: bytes = b"") -> tuple[float, bytes]:
    """Send `trickle` a byte every 50 ms until the server closes the connection; when, and what it answered."""
    started, answer = time.monotonic(), b""
    sock.settimeout(0.05)
    while time.monotonic() - started < seconds:
        try:
            if trickle:
                sock.sendall(trickle[:1])
                trickle = trickle[1:] or b"x"
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            break
        if not chunk:
            break
        answer += chunk
    return time.monotonic() - started, answer


def test_headers_sent_a_byte_at_a_time_are_cut_off_and_others_are_served() -> None:
    """A slowloris client's connection is closed once header_timeout has passed; a call meanwhile is answered."""
    with served(settings=HttpSettings(header_timeout=0.5)) as url, slow_socket(url) as sock:
        head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
        threading.Timer(0.2, lambda: served_meanwhile.append(post(url, call_body('{"a":1,"b":2}')))).start()
        served_meanwhile: list[httpx.Response] = []
        elapsed, _ = closed_within(sock, 5, head)
        assert elapsed < 2
        assert served_meanwhile[0].json()["result"]["structuredContent"] == {"result": 3}


def test_a_connection_that_sends_nothing_is_cut_off() -> None:
    """A connection opened and left silent does not hold the server past header_timeout."""
    with served(settings=HttpSettings(header_timeout=0.3)) as url, slow_socket(url) as sock:
        elapsed, answer = closed_within(sock, 5)
    assert elapsed < 2 and answer == b""


def test_a_body_that_stops_midway_is_answered_408_and_closed() -> None:
    """Headers complete, half the body, then nothing: 408 with a JSON-RPC error once body_timeout passes."""
    with served(settings=HttpSettings(body_timeout=0.5)) as url, slow_socket(url) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n" + b'{"jsonrpc":'
        )
        elapsed, answer = closed_within(sock, 5)
        assert post(url, call_body('{"a":2,"b":2}')).json()["result"]["structuredContent"] == {"result": 4}
    assert elapsed < 2
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == -32600


def hang_and_leave(url: str, era: str, name: str = "hang") -> None:
    """Call `name` and disconnect before its answer (a 2025 session's POST, or a 2026-07-28 one)."""
    with httpx.Client(timeout=5) as client, contextlib.suppress(httpx.TimeoutException):
        if era == MODERN:
            post_once = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name}
            body = call_body("{}").replace(b'"add"', f'"{name}"'.encode())
            client.post(url, content=body, headers={**ACCEPT, **post_once}, timeout=0.3)
            return
        session = open_session(client, url).headers["mcp-session-id"]
        headers = {**ACCEPT, "mcp-session-id": session, "mcp-protocol-version": LEGACY}
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}}}
        client.post(url, json=call, headers=headers, timeout=0.3)


@pytest.mark.parametrize("era", [LEGACY, MODERN])
def test_calls_whose_clients_left_do_not_hold_the_workers_an_unrelated_call_needs(era: str) -> None:
    """As many hanging sync calls as the pool has workers, their clients gone: `add` answers at once; all counted."""
    with served() as url:
        for _ in range(_threads.MAX_THREADS):
            hang_and_leave(url, era)
        deadline = time.monotonic() + 5
        while _threads.abandoned_calls() < _threads.MAX_THREADS and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _threads.abandoned_calls() >= _threads.MAX_THREADS
        started = time.monotonic()
        answer = post(url, call_body('{"a":1,"b":2}'))
        assert time.monotonic() - started < 2
        assert answer.json()["result"]["structuredContent"] == {"result": 3}


@pytest.mark.parametrize("era", [LEGACY, MODERN])
def test_an_async_call_whose_client_left_is_cancelled(era: str) -> None:
    """An async tool's call is cancelled when its client disconnects, in a 2025 session too (the SDK let it run)."""
    CANCELLED.clear()
    with served() as url:
        hang_and_leave(url, era, "wait")
        assert CANCELLED.wait(5)


def test_a_foreign_host_is_refused_on_every_loopback_address() -> None:
    """Served on 127.0.0.2: a foreign Host is 421 and a foreign Origin 403; its own address and localhost pass."""
    with served(host="127.0.0.2") as url:
        port = httpx.URL(url).port
        body = call_body('{"a":1,"b":1}')
        assert post(url, body, host="attacker.example").status_code == 421
        assert post(url, body, host=f"attacker.example:{port}").json()["error"]["message"] == "Invalid Host header"
        assert post(url, body, origin="http://attacker.example").status_code == 403
        assert post(url, body, origin="http://[::1").status_code == 403
        assert post(url, body, host="127.0.0.2/path").status_code == 421
        for host in (f"127.0.0.2:{port}", f"localhost:{port}", "127.0.0.9"):
            assert post(url, body, host=host).status_code == 200
        assert post(url, body, origin=f"http://127.0.0.2:{port}").status_code == 200


async def test_allowed_hosts_protect_a_public_bind_and_nothing_protects_it_without() -> None:
    """Bound to 0.0.0.0: with allowed hosts only they (and loopback) pass, with allowed origins; without, any Host."""
    settings = HttpSettings(allowed_hosts=("mcp.example.com",), allowed_origins=("https://app.example.com",))
    guarded = await asgi_statuses(http_app(TOOLS, host="0.0.0.0", settings=settings))
    open_to_all = await asgi_statuses(http_app(TOOLS, host="0.0.0.0"))
    assert guarded == {
        "mcp.example.com": 200,
        "attacker.example": 421,
        "127.0.0.1": 200,
        "origin https://app.example.com": 200,
        "origin https://mcp.example.com:8443": 200,
        "origin https://attacker.example": 403,
    }
    assert set(open_to_all.values()) == {200}


async def asgi_statuses(app: Any) -> dict[str, int]:
    """The status of a 2026-07-28 call to `app` (in process) per Host, and per Origin with an allowed Host."""
    from test_http import _lifespan

    body = json.loads(call_body('{"a":1,"b":1}'))
    headers = {**ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "add"}
    statuses = {}
    async with _lifespan(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
        for host in ("mcp.example.com", "attacker.example", "127.0.0.1"):
            answer = await client.post(f"http://{host}/mcp", json=body, headers=headers)
            statuses[host] = answer.status_code
        for origin in ("https://app.example.com", "https://mcp.example.com:8443", "https://attacker.example"):
            answer = await client.post("http://mcp.example.com/mcp", json=body, headers={**headers, "origin": origin})
            statuses[f"origin {origin}"] = answer.status_code
    return statuses


def test_a_public_bind_warns_that_anyone_on_the_network_can_call_every_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve_http` on 0.0.0.0 warns once, naming the address, the missing authentication and --allowed-host."""
    warnings: list[str] = []
    real_listen = _http_server._listen
    monkeypatch.setattr(_http_server, "_listen", lambda host, port: real_listen("127.0.0.1", port))  # stays on loopback
    with served(host="0.0.0.0", warn=warnings.append):
        pass
    [warning] = warnings
    assert warning.startswith("WARNING: listening on 0.0.0.0, reachable from the network, with no authentication")
    assert "--allowed-host NAME" in warning
    assert "only Host headers of mcp.example.com" in _http_server._public_warning(
        "::", HttpSettings(allowed_hosts=("mcp.example.com",))
    )


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        *[("127.0.0.1", True), ("127.3.2.1", True), ("::1", True), ("[::1]", True), ("localhost", True)],
        *[("0.0.0.0", False), ("::", False), ("192.0.2.7", False), ("no-such-host.invalid", False)],
    ],
)
def test_is_loopback_takes_the_loopback_range_and_names_resolving_only_there(host: str, loopback: bool) -> None:
    """127.0.0.0/8 and ::1 (bracketed or not) and localhost are loopback; any-address, public and unknown are not."""
    assert is_loopback(host) is loopback


def test_a_name_resolving_only_to_loopback_is_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name is loopback when every address it resolves to is (127.0.1.1 and ::1), and not when one is public."""
    answers = {"devbox": ["127.0.1.1", "::1"], "mixed": ["127.0.0.1", "192.0.2.7"]}

    def resolve(name: str, *args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, 0)) for address in answers[name]]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    assert (is_loopback("devbox"), is_loopback("mixed")) == (True, False)


def test_the_default_warning_goes_to_stderr_as_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """`serve_http`'s default `warn` writes one ``scopetool:`` line on standard error."""
    _http_server._to_stderr("WARNING: listening on ::")
    assert capsys.readouterr().err == "scopetool: WARNING: listening on ::\n"


def test_an_answer_slower_than_the_header_and_body_timeouts_is_not_cut() -> None:
    """The header and body clocks stop once the request is in: a call answered after both have run out arrives."""
    with served(settings=HttpSettings(header_timeout=0.3, body_timeout=0.3)) as url:
        threading.Timer(0.8, RELEASE.set).start()
        started = time.monotonic()
        answer = post(url, call_body("{}").replace(b'"add"', b'"hang"'), name="hang").text
        assert time.monotonic() - started >= 0.7
    assert '"late"' in answer


def test_a_get_that_asks_to_resume_a_stream_is_a_clean_400() -> None:
    """A GET with Last-Event-ID on a live session is answered 400 with a JSON-RPC error, not 500."""
    with served() as url, httpx.Client(timeout=5) as client:
        session = open_session(client, url).headers["mcp-session-id"]
        headers = {"accept": "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": LEGACY}
        answer = client.get(url, headers={**headers, "last-event-id": "0"})
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "code": -32600,
        "message": "Invalid request: this server does not resume streams (Last-Event-ID); open a new one",
    }


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"session_idle_timeout": 0}, "session_idle_timeout must be a number of seconds > 0, not 0"),
        ({"header_timeout": float("inf")}, "header_timeout must be a number of seconds > 0, not inf"),
        ({"body_timeout": True}, "body_timeout must be a number of seconds > 0, not True"),
        ({"max_sessions": 2.5}, "max_sessions must be a whole number >= 1, not 2.5"),
        ({"max_connections": 0}, "max_connections must be a whole number >= 1, not 0"),
        ({"allowed_hosts": ("bad host:x",)}, "allowed_hosts: 'bad host:x' is not a host name, or host:port"),
        ({"allowed_hosts": ("a.example/x",)}, "allowed_hosts: 'a.example/x' is not a host name, or host:port"),
        ({"allowed_hosts": ("[nope]",)}, "allowed_hosts: '\\[nope\\]' is not a host name, or host:port"),
        ({"allowed_origins": ("app.example.com",)}, "allowed_origins: 'app.example.com' is not an origin"),
    ],
)
def test_settings_out_of_their_range_are_refused_naming_the_setting(settings: dict[str, Any], message: str) -> None:
    """Each bound must be positive (and whole where it counts), each host and origin readable."""
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        HttpSettings(**settings)


def test_a_large_declared_or_streamed_body_is_413_before_it_is_read_whole() -> None:
    """A Content-Length over 4 MiB is refused before any of the body is sent; a chunked body that grows past it too."""
    with served() as url:
        with slow_socket(url) as sock:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % (5 << 20))
            _, declared = closed_within(sock, 5)
        streamed = httpx.post(url, content=iter([b" " * (1 << 20)] * 5), headers=ACCEPT)
    assert declared.startswith(b"HTTP/1.1 413 ")
    assert streamed.status_code == 413
    assert streamed.json()["error"]["message"] == "Request body too large: over 4194304 bytes"


FIXTURE = Path(__file__).with_name("mcp_fixture_tools.py")


def test_serve_http_flags_become_the_servers_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``serve --http`` settings flag reaches run_http; a flag left out keeps its default."""
    from scopetool.cli import main

    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(mcp_server, "run_http", lambda registry, **options: seen.append(options))
    flags = ["--session-idle-timeout", "60", "--max-sessions", "50", "--header-timeout", "2", "--body-timeout", "3"]
    flags += ["--keep-alive-timeout", "4", "--max-connections", "70", "--allowed-host", "a.example"]
    flags += ["--allowed-host", "b.example:8443", "--allowed-origin", "https://app.example"]
    assert main(["serve", f"{FIXTURE}:registry", "--http", "0", *flags]) == 0
    [options] = seen
    assert options["settings"] == HttpSettings(
        session_idle_timeout=60,
        max_sessions=50,
        header_timeout=2,
        body_timeout=3,
        keep_alive_timeout=4,
        max_connections=70,
        allowed_hosts=("a.example", "b.example:8443"),
        allowed_origins=("https://app.example",),
    )
    assert main(["serve", f"{FIXTURE}:registry", "--http", "0"]) == 0
    assert seen[1]["settings"] == HttpSettings()


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--max-sessions", "3"], "scopetool: --max-sessions applies to --http only\n"),
        (["--http", "0", "--session-idle-timeout", "0"], "scopetool: --session-idle-timeout must be a number of"),
        (["--http", "0", "--allowed-host", "a b"], "scopetool: --allowed-host: 'a b' is not a host name"),
    ],
)
def test_serve_http_flags_out_of_range_are_one_usage_line(
    flags: list[str], said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A settings flag without --http, or out of its range, is exit 2 and one line naming the flag."""
    from scopetool.cli import main

    monkeypatch.setattr(mcp_server, "run_http", lambda registry, **options: pytest.fail("served"))
    assert main(["serve", f"{FIXTURE}:registry", *flags]) == 2
    assert capsys.readouterr().err.startswith(said)


def test_proxy_http_flags_override_the_configs_gateway_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway section's HTTP keys make its settings; ``proxy --http`` flags override them, hosts add up."""
    from scopetool.cli import main
    from scopetool.mcp import gateway

    path = tmp_path / "gateway.json"
    keys = {"maxSessions": 5, "sessionIdleTimeout": 9, "allowedHosts": ["a.example"], "bodyTimeout": 1.5}
    path.write_text(json.dumps({"scopetool": {"tools": [f"{FIXTURE}:registry"]}, "gateway": keys}))
    seen: list[Any] = []
    monkeypatch.setattr(gateway, "run_gateway", lambda config, http: seen.append(config.http_settings))
    assert main(["proxy", str(path), "--http", "0", "--max-sessions", "7", "--allowed-host", "b.example"]) == 0
    assert seen == [
        HttpSettings(max_sessions=7, session_idle_timeout=9, allowed_hosts=("a.example", "b.example"), body_timeout=1.5)
    ]


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"maxSessions": 0}, "gateway.maxSessions: must be a whole number >= 1, not 0"),
        ({"headerTimeout": "10"}, "gateway.headerTimeout: must be a number of seconds > 0, not '10'"),
        ({"allowedHosts": "a.example"}, "gateway.allowedHosts: must be a list of strings"),
        ({"allowedOrigins": ["app.example"]}, "gateway.allowedOrigins: 'app.example' is not an origin"),
    ],
)
def test_the_gateways_http_keys_out_of_range_are_one_config_error(keys: dict[str, Any], message: str) -> None:
    """Each HTTP key of the gateway section is checked, and named in one line."""
    from scopetool.mcp.gateway import ConfigError, parse_config

    with pytest.raises(ConfigError, match=f"^config: {message}"):
        parse_config({"scopetool": {"tools": [f"{FIXTURE}:registry"]}, "gateway": keys})
