"""Authentication of the HTTP server (`scopetool.mcp.auth`): static tokens, the caller as a `Principal`, bad input.

Each server runs `serve_http` on a free loopback port in a thread of its own (`Served`, as in test_http);
the issuer whose keys are down or slow is a socket of a few lines. The proof against a real
authorization server is `test_auth_server.py`.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import threading
import time
from collections.abc import AsyncGenerator, Generator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from sse_starlette.sse import AppStatus
from test_http import Served, call_body, post, text

from scopetool import Guard, Registry, bind, current_principal, tool
from scopetool.mcp import gateway
from scopetool.mcp import server as mcp_server
from scopetool.mcp.auth import (
    TOKENS_ENV,
    AuthRejected,
    HttpAuth,
    StaticToken,
    Verifier,
    load_tokens,
    read_tokens,
    tokens_from_env,
)
from scopetool.mcp.server import http_app

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdefgh"
GATEWAY = "gateway-token-0123456789abcdef"
RESOURCE = "https://mcp.example.com/mcp"
POLICY = Path(__file__).with_name("auth_fixture.py")
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


@tool
def whoami() -> str:
    """Say who is calling."""
    principal = current_principal()
    return "nobody" if principal is None else f"{principal.subject} {sorted(principal.scopes)}"


@tool
def secret() -> str:
    """Tell the secret (only alice may: a Guard policy decides)."""
    return "the secret"


def only_alice(authorization: object) -> bool:
    """The policy: only alice may call."""
    principal = current_principal()
    return principal is not None and principal.subject == "alice"


TOOLS = Registry(whoami, bind(secret, Guard(only_alice)))
STATIC = HttpAuth(
    audience=RESOURCE, tokens=read_tokens(f"alice {ALICE} tools:read tools:call\nbob {BOB}"), scopes=("tools:call",)
)


def ignore(line: str) -> None:
    """A `warn` that says nothing (the warning has a test of its own)."""


@contextlib.contextmanager
def served(tools: Registry, auth: HttpAuth | None, **options: Any) -> Generator[str]:
    """The URL of `tools` served with `auth` until the block ends."""
    AppStatus.should_exit = False  # see test_edge_http.served
    server = Served(tools, auth=auth, warn=ignore, **options)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def url() -> Generator[str]:
    """`TOOLS` served with the static tokens of alice and bob, for the whole module."""
    with served(TOOLS, STATIC) as found:
        yield found


@contextlib.asynccontextmanager
async def client(url: str, token: str, mode: str = "auto") -> AsyncGenerator[Client]:
    """The SDK's client of `url`, sending `token` as a bearer token."""
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as connected,
    ):
        yield connected


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_tool_and_a_policy_see_the_caller_over_http(url: str, mode: str) -> None:
    """Both eras: whoami names each token's caller and scopes; the Guard lets alice call secret and refuses bob."""
    async with client(url, ALICE, mode) as alice:
        listed = [entry.name for entry in (await alice.list_tools()).tools]
        alice_is = text(await alice.call_tool("whoami", {}))
        alice_secret = await alice.call_tool("secret", {})
    async with client(url, BOB, mode) as bob:
        bob_is = text(await bob.call_tool("whoami", {}))
        bob_secret = await bob.call_tool("secret", {})
    assert sorted(listed) == ["secret", "whoami"]
    assert alice_is == "alice ['tools:call', 'tools:read']"
    assert bob_is == "bob ['tools:call']"  # a static token listing no scopes holds the server's
    assert (alice_secret.is_error, text(alice_secret)) == (False, "the secret")
    assert (bob_secret.is_error, text(bob_secret)) == (True, 'error: tool "secret" is not authorized')


def test_no_token_is_401_pointing_at_the_resource_metadata() -> None:
    """Without a token: 401, WWW-Authenticate naming the metadata URL and the scope; the metadata names the resource."""
    issuer = f"http://127.0.0.1:{closed_port()}"
    auth = HttpAuth(audience=RESOURCE, issuer=issuer, scopes=("tools:call",))
    with served(TOOLS, auth) as found:
        answer = post(found, call_body('{"a":1,"b":2}'))
        metadata = httpx.get(found.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"), timeout=10).json()
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and "error=" not in challenge
    assert f'resource_metadata="{auth.resource_metadata_url}"' in challenge and 'scope="tools:call"' in challenge
    assert (metadata["resource"], metadata["scopes_supported"]) == (RESOURCE, ["tools:call"])
    assert metadata["authorization_servers"] == [issuer]


def test_static_tokens_alone_challenge_without_metadata(url: str) -> None:
    """Static tokens only: 401 with the scope, no resource_metadata (there is no authorization server to name)."""
    answer = post(url, call_body('{"a":1,"b":2}'))
    assert (answer.status_code, answer.headers["www-authenticate"]) == (401, 'Bearer scope="tools:call"')


@pytest.mark.parametrize(
    ("headers", "query", "status", "description"),
    [
        ({"authorization": "Basic YWxpY2U6cHc="}, "", 401, "send a bearer token"),
        ({"authorization": "Bearer"}, "", 401, "does not hold a bearer token"),
        ({"authorization": "Bearer two words"}, "", 401, "does not hold a bearer token"),
        ({"authorization": "Bearer not-one-of-the-tokens"}, "", 401, "not valid"),
        ({"authorization": "Bearer " + "A" * 20000}, "", 401, "is over 16384 bytes"),
        ({}, f"?access_token={ALICE}", 400, "in the query string is refused"),
    ],
)
def test_bad_authorization_is_a_clear_refusal(
    url: str, headers: dict[str, str], query: str, status: int, description: str
) -> None:
    """Another scheme, an empty or spaced token, an unknown one, a huge header, a query token: 400/401, not 500."""
    answer = post(url + query, call_body('{"a":1,"b":2}'), **headers)
    assert answer.status_code == status
    assert description in answer.json()["error_description"]
    assert ALICE not in answer.text


def test_two_authorization_headers_are_refused(url: str) -> None:
    """Two Authorization headers: 400 invalid_request, whatever they hold."""
    sent = httpx.Headers([("authorization", f"Bearer {ALICE}"), ("authorization", f"Bearer {BOB}")])
    sent.update({"accept": "application/json, text/event-stream", "content-type": "application/json"})
    answer = httpx.post(url, content=call_body('{"a":1,"b":2}'), headers=sent, timeout=10)
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid_request")


def test_a_token_without_the_scope_is_403_insufficient_scope() -> None:
    """A static token granting other scopes: 403 with error="insufficient_scope" and the scope to ask for."""
    auth = HttpAuth(tokens=read_tokens(f"carol {ALICE} tools:read"), scopes=("tools:call",))
    with served(TOOLS, auth) as found:
        answer = post(found, call_body('{"a":1,"b":2}'), authorization=f"Bearer {ALICE}")
    challenge = answer.headers["www-authenticate"]
    assert answer.status_code == 403
    assert 'error="insufficient_scope"' in challenge and 'scope="tools:call"' in challenge


def test_without_auth_the_server_serves_and_warns() -> None:
    """No auth: calls run as nobody, and the start warns that any program on the machine can call every tool."""
    warnings: list[str] = []
    AppStatus.should_exit = False
    server = Served(TOOLS, warn=warnings.append)
    try:
        answer = post(server.url, call_body("{}").replace(b'"add"', b'"whoami"'), name="whoami")
    finally:
        server.stop()
    assert '"nobody"' in answer.text
    [warning] = warnings
    assert warning.startswith("WARNING: no authentication: any program on this machine can call every tool")


# -- the static tokens' file and variable -------------------------------------------------------------------


def test_read_tokens_takes_names_tokens_and_scopes_and_hides_the_tokens() -> None:
    """Lines and ; separate entries; # comments; scopes follow the token; repr never shows a token."""
    found = read_tokens(f"# the team\nalice {ALICE} a b; bob {BOB}\n\n")
    assert found == (StaticToken("alice", ALICE, frozenset({"a", "b"})), StaticToken("bob", BOB))
    assert ALICE not in repr(found)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("alice", "entry 1: give NAME TOKEN [SCOPE ...], not only a name"),
        ("alice short", "entry 1 (alice): the token must be at least 16 characters"),
        (f"alice {ALICE}\nbob {ALICE}", "entry 2 (bob): a name or a token is given twice"),
        (f"alice {ALICE}\nalice {BOB}", "entry 2 (alice): a name or a token is given twice"),
    ],
)
def test_a_bad_token_entry_is_named_without_its_token(text: str, message: str) -> None:
    """A name alone, a short token, a repeated name or token: a ValueError naming the entry, never the token."""
    with pytest.raises(ValueError, match=r"^tokens: ") as error:
        read_tokens(text)
    assert message in str(error.value) and ALICE not in str(error.value)


def test_tokens_come_from_a_file_or_the_environment(tmp_path: Any) -> None:
    """`load_tokens` reads a file (a missing one is one line); `tokens_from_env` reads SCOPETOOL_AUTH_TOKENS."""
    path = tmp_path / "tokens"
    path.write_text(f"alice {ALICE}\n")
    assert [entry.name for entry in load_tokens(path)] == ["alice"]
    with pytest.raises(ValueError, match="cannot read the token file"):
        load_tokens(tmp_path / "missing")
    assert [entry.name for entry in tokens_from_env({TOKENS_ENV: f"bob {BOB}"})] == ["bob"]
    assert tokens_from_env({}) == ()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "needs an issuer, static tokens, or both"),
        ({"audience": None, "issuer": "https://a.example"}, "audience: an issuer's tokens need this server's URL"),
        ({"issuer": "http://auth.example.com"}, "issuer must be an https URL"),
        ({"issuer": "https://auth.example.com?x=1"}, "issuer must be an https URL"),
        ({"issuer": "https://a.example", "algorithms": ("HS256",)}, "only asymmetric ones are taken, not ['HS256']"),
        ({"issuer": "https://a.example", "algorithms": ("none",)}, "only asymmetric ones"),
        ({"issuer": "https://a.example", "scopes": ("two words",)}, "is not a scope"),
        ({"issuer": "https://a.example", "leeway": -1}, "leeway must be a number of seconds >= 0"),
        ({"issuer": "https://a.example", "max_document_bytes": 0}, "max_document_bytes must be a whole number"),
    ],
)
def test_auth_settings_are_checked(options: dict[str, Any], message: str) -> None:
    """No issuer nor token, an http or query issuer, HMAC or none, a spaced scope, a bound out of range: named."""
    with pytest.raises(ValueError) as error:
        settings: dict[str, Any] = {"audience": RESOURCE, **options}
        HttpAuth(**settings)
    assert message in str(error.value)


def test_an_audience_must_be_an_http_url() -> None:
    """The audience (this server's resource URL) is an http(s) URL without a fragment."""
    with pytest.raises(ValueError, match="audience must be an http"):
        HttpAuth(audience="mcp.example.com", tokens=read_tokens(f"alice {ALICE}"))


# -- an issuer whose keys cannot be had ------------------------------------------------------------------------


@contextlib.contextmanager
def silent_issuer() -> Generator[str]:
    """An issuer URL whose server accepts connections and never answers."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        held: list[socket.socket] = []
        stop = threading.Event()

        def accept() -> None:
            listener.settimeout(0.1)
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    held.append(listener.accept()[0])

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{listener.getsockname()[1]}"
        finally:
            stop.set()
            thread.join(5)
            for connection in held:
                connection.close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
"""A JWT's shape (RS256, kid k1): verifying it needs the issuer's keys."""


@pytest.mark.parametrize("kind", ["down", "slow"])
def test_an_issuer_down_or_slow_is_503_within_the_fetch_timeout(kind: str) -> None:
    """Keys not fetched (refused, or no answer within fetch_timeout): 503 with Retry-After; the next one at once."""
    with contextlib.ExitStack() as stack:
        issuer = stack.enter_context(silent_issuer()) if kind == "slow" else f"http://127.0.0.1:{closed_port()}"
        auth = HttpAuth(audience=RESOURCE, issuer=issuer, fetch_timeout=0.5, key_refresh_interval=60)
        found = stack.enter_context(served(TOOLS, auth))
        started = time.monotonic()
        first = post(found, call_body("{}"), authorization=f"Bearer {JWT}")
        between = time.monotonic()
        second = post(found, call_body("{}"), authorization=f"Bearer {JWT}")
        ended = time.monotonic()
    assert (first.status_code, second.status_code) == (503, 503)
    assert first.headers["retry-after"] == "60" and first.json()["error"] == "temporarily_unavailable"
    assert between - started < 3 and ended - between < 0.5


async def test_verify_token_is_the_sdk_token_verifier() -> None:
    """`Verifier.verify_token` gives the SDK's AccessToken for a good token (no client: an empty client id) or None."""
    verifier = Verifier(STATIC)
    good = await verifier.verify_token(ALICE)
    assert good is not None and (good.subject, good.client_id, good.resource) == ("alice", "", RESOURCE)
    assert await verifier.verify_token("nope-nope-nope-nope") is None
    with pytest.raises(AuthRejected):
        await verifier.authenticate("nope-nope-nope-nope")


# -- the command line and the gateway config ------------------------------------------------------------------

FIXTURE = Path(__file__).with_name("mcp_fixture_tools.py")


def test_serve_http_auth_flags_make_the_servers_auth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--auth-issuer, --auth-audience, --auth-scope, --auth-token-file and SCOPETOOL_AUTH_TOKENS reach run_http."""
    from scopetool.cli import main

    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\n")
    monkeypatch.setenv(TOKENS_ENV, f"bob {BOB}")
    seen: list[Any] = []

    def run_http(registry: Registry, **options: Any) -> None:
        seen.append(options["auth"])

    monkeypatch.setattr(mcp_server, "run_http", run_http)
    flags = ["--auth-issuer", "https://auth.example.com", "--auth-audience", RESOURCE, "--auth-scope", "tools:call"]
    assert main(["serve", f"{FIXTURE}:registry", "--http", "0", *flags, "--auth-token-file", str(tokens)]) == 0
    monkeypatch.delenv(TOKENS_ENV)
    assert main(["serve", f"{FIXTURE}:registry", "--http", "0"]) == 0
    assert seen == [
        HttpAuth(
            issuer="https://auth.example.com",
            audience=RESOURCE,
            scopes=("tools:call",),
            tokens=(StaticToken("alice", ALICE), StaticToken("bob", BOB)),
        ),
        None,
    ]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--auth-issuer", "https://a.example"], "scopetool: --auth-issuer applies to --http only\n"),
        (
            ["--http", "0", "--auth-scope", "x"],
            "scopetool: authentication needs an issuer, static tokens, or both: give",
        ),
        (["--http", "0", "--auth-issuer", "https://a.example"], "scopetool: --auth-audience: an issuer's tokens need"),
        (["--http", "0", "--auth-issuer", "http://a.example", "--auth-audience", RESOURCE], "scopetool: --auth-issuer"),
        (["--http", "0", "--auth-token-file", "/nonexistent/tokens"], "scopetool: cannot read the token file"),
    ],
)
def test_serve_http_auth_flags_that_do_not_fit_are_one_usage_line(
    flags: list[str], said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An auth flag without --http, a scope alone, an issuer without audience or on http, no file: one usage line."""
    from scopetool.cli import main

    monkeypatch.delenv(TOKENS_ENV, raising=False)

    def run_http(registry: Registry, **options: Any) -> None:
        pytest.fail("served")

    monkeypatch.setattr(mcp_server, "run_http", run_http)
    assert main(["serve", f"{FIXTURE}:registry", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1


def test_the_gateway_configs_auth_and_the_proxy_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gateway.auth makes the gateway's HttpAuth (tokenFile from the config's folder); the flags override it."""
    from scopetool.cli import main

    (tmp_path / "tokens").write_text(f"alice {ALICE}\n")
    path = tmp_path / "gateway.json"
    auth = {"issuer": "https://auth.example.com", "audience": RESOURCE, "scopes": ["a"], "tokenFile": "tokens"}
    path.write_text(json.dumps({"scopetool": {"tools": [f"{FIXTURE}:registry"]}, "gateway": {"auth": auth}}))
    assert gateway.load_config(path).auth == HttpAuth(
        issuer="https://auth.example.com", audience=RESOURCE, scopes=("a",), tokens=(StaticToken("alice", ALICE),)
    )
    seen: list[Any] = []
    monkeypatch.delenv(TOKENS_ENV, raising=False)

    def run_gateway(config: gateway.GatewayConfig, http: tuple[str, int] | None) -> None:
        seen.append(config.auth)

    monkeypatch.setattr(gateway, "run_gateway", run_gateway)
    other = "https://mcp.example.org/mcp"
    (tmp_path / "more").write_text(f"bob {BOB}\ncarol {GATEWAY}\n")
    assert main(["proxy", str(path), "--http", "0", "--auth-audience", other, "--auth-scope", "b"]) == 0
    assert main(["proxy", str(path), "--http", "0", "--auth-token-file", str(tmp_path / "more")]) == 0
    assert main(["proxy", str(path)]) == 0
    assert [None if found is None else (found.audience, found.scopes, len(found.tokens)) for found in seen] == [
        (other, ("a", "b"), 1),
        (RESOURCE, ("a",), 2),  # the flag's file takes the place of the config's
        (RESOURCE, ("a",), 1),  # over stdio the config's, which the gateway then refuses (test_gateway_callers)
    ]


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ({"issuer": "https://a.example", "audence": RESOURCE}, "gateway.auth: unknown key 'audence'"),
        ({"issuer": "http://a.example", "audience": RESOURCE}, "gateway.auth.issuer: must be an https URL"),
        ({"issuer": "https://a.example"}, "gateway.auth.audience: an issuer's tokens need this server's URL"),
        ({"issuer": "https://a.example", "audience": RESOURCE, "scopes": "a"}, "gateway.auth.scopes: must be a list"),
        ({"issuer": 7, "audience": RESOURCE}, "gateway.auth.issuer: must be a non-empty string, not a number"),
        ({"tokenFile": "missing"}, "gateway.auth.tokenFile: cannot read the token file"),
        ({}, "gateway.auth: authentication needs an issuer, static tokens, or both"),
        ("on", "gateway.auth: must be a JSON object, not a string"),
    ],
)
def test_a_bad_gateway_auth_is_named_by_its_key(tmp_path: Path, auth: object, message: str) -> None:
    """An unknown key, an http issuer, no audience, scopes not a list, a number, no token file, nothing: named."""
    with pytest.raises(gateway.ConfigError) as error:
        gateway.parse_config(
            {"scopetool": {"tools": [f"{FIXTURE}:registry"]}, "gateway": {"auth": auth}}, base=tmp_path
        )
    assert message in str(error.value)


async def test_the_gateway_authenticates_decides_by_caller_and_never_forwards_the_token(tmp_path: Path) -> None:
    """proxy --http with gateway.auth: its policy sees alice and refuses bob; upstream sees the gateway, not alice."""
    upstream_tokens = read_tokens(f"gateway {GATEWAY}\nalice {ALICE}")  # alice's token would work upstream too
    (tmp_path / "tokens").write_text(f"alice {ALICE}\nbob {BOB}\n")
    with served(TOOLS, HttpAuth(tokens=upstream_tokens)) as upstream:
        entry = {"url": upstream, "headers": {"Authorization": f"Bearer {GATEWAY}"}, "policy": f"{POLICY}:only_alice"}
        config = gateway.parse_config(
            {"mcpServers": {"up": entry}, "gateway": {"auth": {"tokenFile": "tokens"}}}, base=tmp_path
        )
        said = io.StringIO()
        refused, alice_sees, bob_gets = None, "", None
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: gateway.serve_gateway(config, http=("127.0.0.1", 0), errlog=said))
            with anyio.fail_after(30):
                while " at http://" not in said.getvalue():
                    await anyio.sleep(0.05)
            url = said.getvalue().split(" at ")[-1].split()[0]
            body = call_body("{}").replace(b'"add"', b'"whoami"')
            refused = await anyio.to_thread.run_sync(lambda: post(url, body, name="whoami"))
            async with client(url, ALICE) as alice:
                alice_sees = text(await alice.call_tool("whoami", {}))
            async with client(url, BOB) as bob:
                bob_gets = await bob.call_tool("whoami", {})
            group.cancel_scope.cancel()
    assert refused is not None and refused.status_code == 401
    assert alice_sees == "gateway []"  # the upstream's caller is the gateway's own credential, never alice
    assert bob_gets is not None and (bob_gets.is_error, text(bob_gets)) == (
        True,
        'error: tool "whoami" is not authorized',
    )


async def test_tools_list_runs_as_its_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tools/list handler sees the caller as current_principal() and as the SDK's access token, in both eras."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    from scopetool.mcp import _tool_handlers

    seen: list[tuple[str | None, str | None]] = []
    listing = _tool_handlers._Tools.list_tools  # pyright: ignore[reportPrivateUsage]

    async def list_tools(self: Any, ctx: Any, params: Any) -> dict[str, Any]:
        principal, token = current_principal(), get_access_token()
        seen.append((None if principal is None else principal.subject, None if token is None else token.subject))
        return await listing(self, ctx, params)

    monkeypatch.setattr(_tool_handlers._Tools, "list_tools", list_tools)  # pyright: ignore[reportPrivateUsage]
    with served(TOOLS, STATIC) as found:
        for mode, token in (("legacy", ALICE), ("auto", BOB)):
            async with client(found, token, mode) as connected:
                await connected.list_tools()
    assert seen == [("alice", "alice"), ("bob", "bob")]


def test_a_session_answers_only_the_caller_that_opened_it(url: str) -> None:
    """A 2025 session opened with alice's token is 404 to bob's token, and serves alice."""
    alice, bob = {**ACCEPT, "authorization": f"Bearer {ALICE}"}, {**ACCEPT, "authorization": f"Bearer {BOB}"}
    opened = httpx.post(url, json=INITIALIZE, headers=alice, timeout=10)
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    as_bob = httpx.post(url, json=ping, headers={**bob, **session}, timeout=10)
    as_alice = httpx.post(url, json=ping, headers={**alice, **session}, timeout=10)
    assert (opened.status_code, as_bob.status_code, as_alice.status_code) == (200, 404, 200)


async def test_every_path_but_the_metadata_needs_a_token_even_when_mounted() -> None:
    """Mounted under /api: its endpoint and any other path are 401 without a token; only the metadata is open."""
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from test_http import _lifespan  # pyright: ignore[reportPrivateUsage]

    auth = HttpAuth(audience=RESOURCE, issuer=f"http://127.0.0.1:{closed_port()}")
    app = http_app(TOOLS, auth=auth)
    mounted = Starlette(routes=[Mount("/api", app=app)], lifespan=lambda _: _lifespan(app))  # type: ignore[arg-type]
    statuses: dict[str, int] = {}
    async with _lifespan(mounted), httpx.AsyncClient(transport=httpx.ASGITransport(app=mounted)) as http:
        for path in ("/api/mcp", "/api/mcp/", "/api/other"):
            statuses[path] = (await http.post(f"http://127.0.0.1{path}", json={}, headers=ACCEPT)).status_code
        statuses["metadata"] = (
            await http.get("http://127.0.0.1/api/.well-known/oauth-protected-resource/mcp")
        ).status_code
        statuses["metadata POST"] = (
            await http.post("http://127.0.0.1/api/.well-known/oauth-protected-resource/mcp")
        ).status_code
    assert statuses == {"/api/mcp": 401, "/api/mcp/": 401, "/api/other": 401, "metadata": 200, "metadata POST": 401}


async def test_each_authenticated_caller_has_its_own_rate_limit_over_http() -> None:
    """The limits count by the token's caller: alice over her rate gets 429 while bob's calls go on."""
    from scopetool.mcp.limits import Limit, Limiter, Limits

    limiter = Limiter(Limits(caller=Limit(rate="2/minute")), tools=TOOLS.names())
    with served(TOOLS, STATIC, limiter=limiter) as limited:
        async with client(limited, ALICE, "legacy") as alice:
            first = [text(await alice.call_tool("whoami", {})) for _ in range(2)]
            with pytest.raises(Exception, match=r"[Rr]ate"):
                await alice.call_tool("whoami", {})
        async with client(limited, BOB, "legacy") as bob:
            bob_is = text(await bob.call_tool("whoami", {}))
    assert first == ["alice ['tools:call', 'tools:read']"] * 2
    assert bob_is == "bob ['tools:call']"
