"""Authentication against a real authorization server: panva's OpenID Provider (npm ``oidc-provider``).

Two providers run on loopback with the same signing key (`issuers`): tokens of the first are this
server's, the second's differ only by their issuer. The MCP server runs `serve_http` with
``issuer`` and ``audience`` (its own URL); the official MCP SDK client goes from the 401 to a call
by discovery alone, with its client-credentials provider, and with its `OAuthClientProvider`
(dynamic registration, the provider's own sign-in and consent pages, PKCE, the code).
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import AsyncGenerator, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx
import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl
from sse_starlette.sse import AppStatus
from test_auth import TOOLS, ignore
from test_http import Served, call_body, post, text
from third_party import oidc_provider

from scopetool.mcp.auth import HttpAuth

SECRET = "-secret-0123456789abcdef"
DOCS = Path(__file__).resolve().parents[2] / "docs"


def free_port() -> int:
    """A loopback port free when asked (the server then binds it)."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def provider(port: int, keys: Path) -> Generator[str]:
    """An oidc-provider on 127.0.0.1:`port` signing with `keys`, until the block ends; its issuer URL."""
    command = [*oidc_provider(), str(port), str(keys)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(process.stdout.readline() if process.stdout else ""))
        reader.start()
        reader.join(30)
        assert ready == ["ready\n"], "oidc-provider did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


@dataclass(frozen=True)
class Issuers:
    """The provider this server trusts, and one with the same key under another issuer."""

    trusted: str
    other: str


@pytest.fixture(scope="module")
def issuers(tmp_path_factory: pytest.TempPathFactory) -> Generator[Issuers]:
    """Two oidc-providers sharing one RSA signing key, for the whole module."""
    key = json.loads(RSAAlgorithm.to_jwk(rsa.generate_private_key(public_exponent=65537, key_size=2048)))
    keys = tmp_path_factory.mktemp("oidc") / "keys.json"
    keys.write_text(json.dumps({"keys": [{**key, "kid": "k1", "alg": "RS256", "use": "sig"}]}))
    with provider(free_port(), keys) as trusted, provider(free_port(), keys) as other:
        yield Issuers(trusted, other)


@dataclass(frozen=True)
class Server:
    """The MCP server's URL (its resource, the tokens' audience) and its issuer."""

    url: str
    issuer: str


@pytest.fixture(scope="module")
def server(issuers: Issuers) -> Generator[Server]:
    """`TOOLS` served on a free port, taking the trusted provider's tokens for its URL with scope tools:call."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    auth = HttpAuth(audience=url, issuer=issuers.trusted, scopes=("tools:call",), leeway=0)
    AppStatus.should_exit = False
    served = Served(TOOLS, port=port, auth=auth, warn=ignore)
    try:
        yield Server(served.url, issuers.trusted)
    finally:
        served.stop()


def token(issuer: str, client: str = "ci", *, resource: str, scope: str = "tools:call") -> str:
    """An access token from `issuer`'s token endpoint (client credentials), for `resource`."""
    answer = httpx.post(
        f"{issuer}/token",
        data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
        auth=(client, client + SECRET),
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


def called(server: Server, bearer: str) -> httpx.Response:
    """A 2026-07-28 tools/call of whoami with `bearer`."""
    return post(
        server.url, call_body("{}").replace(b'"add"', b'"whoami"'), name="whoami", authorization=f"Bearer {bearer}"
    )


def segment(value: dict[str, Any]) -> str:
    """One JWT segment: `value` as base64url JSON without padding."""
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def claims(jwt: str) -> dict[str, Any]:
    """The (unverified) claims of `jwt`."""
    part = jwt.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))))


def test_a_token_of_the_issuer_for_this_server_is_taken(server: Server) -> None:
    """The provider's JWT for this URL with tools:call: the call runs as its client (sub ci) with its scopes."""
    answer = called(server, token(server.issuer, resource=server.url))
    assert answer.status_code == 200
    assert "\"ci ['tools:call']\"" in answer.text


@pytest.mark.parametrize("kind", ["wrong audience", "wrong issuer", "tampered", "alg none", "expired"])
def test_a_bad_token_is_401_invalid_token(server: Server, issuers: Issuers, kind: str) -> None:
    """Another resource's token, the other issuer's (same key), a changed claim, alg none, an expired one: 401."""
    good = token(server.issuer, resource=server.url)
    header, _, signature = good.split(".")
    if kind == "wrong audience":
        bad = token(server.issuer, resource="http://127.0.0.1:1/other")
    elif kind == "wrong issuer":
        bad = token(issuers.other, resource=server.url)
    elif kind == "tampered":
        bad = f"{header}.{segment({**claims(good), 'sub': 'admin'})}.{signature}"
    elif kind == "alg none":
        bad = f"{segment({'alg': 'none', 'typ': 'JWT'})}.{segment(claims(good))}."
    else:
        bad = token(server.issuer, "brief", resource=server.url)
        deadline = time.monotonic() + 5
        while time.time() <= claims(bad)["exp"] and time.monotonic() < deadline:
            time.sleep(0.1)
    answer = called(server, bad)
    reasons = {
        "wrong audience": "not for this resource (aud)",
        "wrong issuer": "not from the expected issuer (iss)",
        "tampered": "Signature verification failed",
        "alg none": "algorithm 'none' is not accepted",
        "expired": "the token has expired",
    }
    assert answer.status_code == 401
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]
    assert reasons[kind] in answer.json()["error_description"]


def test_a_token_without_the_scope_is_403_then_one_with_it_is_taken(server: Server) -> None:
    """Step-up by hand: a tools:read token is 403 naming scope tools:call; a token asked with that scope is taken."""
    refused = called(server, token(server.issuer, "reader", resource=server.url, scope="tools:read"))
    taken = called(server, token(server.issuer, resource=server.url, scope="tools:read tools:call"))
    challenge = refused.headers["www-authenticate"]
    assert (
        refused.status_code == 403 and 'error="insufficient_scope"' in challenge and 'scope="tools:call"' in challenge
    )
    assert taken.status_code == 200


class Memory(TokenStorage):
    """The SDK client's token storage, in memory, optionally starting with a token."""

    def __init__(self, tokens: OAuthToken | None = None) -> None:
        self.tokens = tokens
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        """The token held."""
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Hold `tokens`."""
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The client held."""
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Hold `client_info`."""
        self.client = client_info


@contextlib.asynccontextmanager
async def oauth_client(server: Server, storage: Memory, seen: list[tuple[str, str, int]]) -> AsyncGenerator[Client]:
    """The SDK client of `server` with its client-credentials OAuth provider (client ci); `seen` gets each exchange."""
    auth = ClientCredentialsOAuthProvider(
        server_url=server.url, storage=storage, client_id="ci", client_secret="ci" + SECRET, issuer=server.issuer
    )

    async def note(response: httpx2.Response) -> None:
        seen.append((response.request.method, response.request.url.path, response.status_code))

    async with (
        httpx2.AsyncClient(auth=auth, event_hooks={"response": [note]}) as http,
        Client(streamable_http_client(server.url, http_client=http)) as client,
    ):
        yield client


async def test_the_sdk_oauth_client_goes_from_the_401_to_a_call(server: Server) -> None:
    """The SDK's client: 401, the resource metadata, the issuer's metadata, a token for this resource, the call."""
    seen: list[tuple[str, str, int]] = []
    storage = Memory()
    async with oauth_client(server, storage, seen) as client:
        result = await client.call_tool("whoami", {})
    assert text(result) == "ci ['tools:call']"
    assert seen[0][2] == 401
    assert ("GET", "/.well-known/oauth-protected-resource/mcp", 200) in seen
    assert any(
        path.startswith("/.well-known/") and path != "/.well-known/oauth-protected-resource/mcp" for _, path, _ in seen
    )
    assert ("POST", "/token", 200) in seen
    assert storage.tokens is not None and claims(storage.tokens.access_token)["aud"] == server.url


async def test_the_sdk_oauth_client_steps_up_from_403(server: Server) -> None:
    """The SDK's client holding a tools:read token: 403 insufficient_scope, a new token with tools:call, the call."""
    held = OAuthToken(
        access_token=token(server.issuer, "reader", resource=server.url, scope="tools:read"), scope="tools:read"
    )
    seen: list[tuple[str, str, int]] = []
    async with oauth_client(server, Memory(held), seen) as client:
        result = await client.call_tool("whoami", {})
    assert seen[0] == ("POST", "/mcp", 403)
    assert ("POST", "/token", 200) in seen
    assert text(result).startswith("ci [") and "tools:call" in text(result)


class Person:
    """Signs in at the provider's own login and consent pages, as a person in a browser would."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        """Follow the authorization URL through oidc-provider's sign-in and consent forms to the redirect."""
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as browser:
            answer = await browser.get(authorization_url)
            for _ in range(8):
                location = answer.headers.get("location")
                if location is not None and location.startswith(REDIRECT):
                    query = dict(parse_qsl(urlsplit(location).query))
                    self.result = AuthorizationCodeResult(
                        code=query["code"], state=query.get("state"), iss=query.get("iss")
                    )
                    return
                if location is not None:
                    answer = await browser.get(urljoin(str(answer.url), location))
                    continue
                form = FORM.search(answer.text)
                assert form is not None, answer.text[:500]
                prompt = "login" if 'name="login"' in answer.text else "consent"
                fields = (
                    {"prompt": prompt, "login": "alice", "password": "anything"}
                    if prompt == "login"
                    else {"prompt": prompt}
                )
                answer = await browser.post(urljoin(str(answer.url), form["action"]), data=fields)
        pytest.fail("the provider never redirected back")

    async def callback(self) -> AuthorizationCodeResult:
        """The code the provider redirected with."""
        assert self.result is not None
        return self.result


REDIRECT = "http://127.0.0.1:1/callback"
FORM = re.compile(r'<form[^>]*action="(?P<action>[^"]+)"')


async def test_the_sdk_oauth_client_registers_signs_in_and_calls(server: Server) -> None:
    """The SDK's OAuthClientProvider: 401, metadata, dynamic registration, sign-in and consent, code, token, call."""
    person = Person()
    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(REDIRECT)],
        client_name="scopetool test",
        token_endpoint_auth_method="none",
        grant_types=["authorization_code"],
        response_types=["code"],
    )
    auth = OAuthClientProvider(server.url, metadata, Memory(), person.redirect, person.callback)
    seen: list[tuple[str, str, int]] = []

    async def note(response: httpx2.Response) -> None:
        seen.append((response.request.method, response.request.url.path, response.status_code))

    async with (
        httpx2.AsyncClient(auth=auth, event_hooks={"response": [note]}) as http,
        Client(streamable_http_client(server.url, http_client=http)) as client,
    ):
        result = await client.call_tool("whoami", {})
    assert text(result) == "alice ['tools:call']"
    assert ("POST", "/reg", 201) in seen and ("POST", "/token", 200) in seen


def docs_sample(page: str, title: str) -> str:
    """The exact text of the ``py`` block titled `title` on docs/`page` (a sample the docs run cannot run)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    found = re.search(rf'^```py title="{re.escape(title)}"\n(.*?)^```$', text, re.S | re.M)
    assert found is not None, f"docs/{page} has no block titled {title}"
    return found[1]


async def test_the_docs_oauth_sample_calls_through_a_real_provider(server: Server) -> None:
    """docs/mcp-http.md's OAuth program, its exact text, gets a token from oidc-provider and makes the call."""
    namespace: dict[str, Any] = {"__name__": "oauth_call"}  # not "__main__": the sample's own run stays out
    exec(compile(docs_sample("mcp-http.md", "oauth_call.py"), "oauth_call.py", "exec"), namespace)
    called_as = await namespace["call_with_oauth"](server.url, server.issuer, "ci", "ci" + SECRET, "whoami", {})
    assert called_as == "ci ['tools:call']"
