"""The verifier's keys and claims (`scopetool.mcp.auth.Verifier`) against an issuer of the test's own making.

The issuer is a loopback HTTP server whose documents (metadata, key set) the test changes between
calls, signing with PyJWT: what a real authorization server cannot be made to do on demand (rotate a
key, send a huge key set, name another issuer in its metadata). The real one is `test_auth_server.py`'s.
"""

from __future__ import annotations

import asyncio
import base64
import hmac
import json
import threading
import time
from collections.abc import Generator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from scopetool.mcp.auth import STATIC_ISSUER, AuthRejected, HttpAuth, IssuerUnavailable, Verifier, read_tokens

AUDIENCE = "https://mcp.example.com/mcp"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def public(kid: str, kind: str = "RSA", **members: Any) -> dict[str, Any]:
    """The public JWK of the test's RSA or EC key, with `kid` and `members`."""
    found = RSAAlgorithm.to_jwk(RSA_KEY.public_key()) if kind == "RSA" else ECAlgorithm.to_jwk(EC_KEY.public_key())
    return {**json.loads(found), "kid": kid, **members}


class Issuer:
    """A loopback issuer whose documents are the test's to change; it counts the key set's fetches."""

    def __init__(self) -> None:
        self.documents: dict[str, bytes | int] = {}
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.fetches += self.path == "/jwks"
                found = issuer.documents.get(self.path, 404)
                body = found if isinstance(found, bytes) else b""
                self.send_response(200 if isinstance(found, bytes) else found)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.metadata({"issuer": self.url, "jwks_uri": f"{self.url}/jwks"})
        self.keys([public("rs", alg="RS256")])
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def metadata(self, value: object, path: str = "/.well-known/oauth-authorization-server") -> None:
        """Serve `value` as the issuer's metadata at `path`."""
        self.documents[path] = json.dumps(value).encode()

    def keys(self, keys: list[dict[str, Any]]) -> None:
        """Serve `keys` as the key set."""
        self.documents["/jwks"] = json.dumps({"keys": keys}).encode()

    def token(self, algorithm: str = "RS256", headers: dict[str, Any] | None = None, **claims: Any) -> str:
        """A token signed with the test's key of `algorithm`: iss, aud, sub and a ten-minute expiry unless given."""
        now = int(time.time())
        payload = {"iss": self.url, "aud": AUDIENCE, "sub": "alice", "exp": now + 600, **claims}
        key = RSA_KEY if algorithm.startswith(("RS", "PS")) else EC_KEY
        kept = {name: value for name, value in payload.items() if value is not None}
        return jwt.encode(kept, key, algorithm, {"kid": "rs"} if headers is None else headers)

    def verifier(self, **options: Any) -> Verifier:
        """A verifier of this issuer's tokens for `AUDIENCE`, with `options`."""
        return Verifier(HttpAuth(issuer=self.url, audience=AUDIENCE, **options))


@pytest.fixture
def issuer() -> Generator[Issuer]:
    """A fresh issuer for one test."""
    found = Issuer()
    yield found
    found.server.shutdown()
    found.server.server_close()


async def refused(verifier: Verifier, token: str) -> str:
    """Why `verifier` refuses `token` (the test fails if it takes it)."""
    with pytest.raises(AuthRejected) as error:
        await verifier.authenticate(token)
    assert error.value.status == 401
    return error.value.description


async def test_a_rotated_key_is_fetched_once_and_a_stranger_is_refused_unfetched(issuer: Issuer) -> None:
    """A new kid makes one fetch (the key set was rotated); a second unknown kid within the interval fetches nothing."""
    verifier = issuer.verifier(key_refresh_interval=0.2)
    assert (await verifier.authenticate(issuer.token())).subject == "alice"
    issuer.keys([public("rs", alg="RS256"), public("es", "EC", alg="ES256")])
    time.sleep(0.25)
    rotated = await verifier.authenticate(issuer.token("ES256", {"kid": "es"}))
    fetched = issuer.fetches
    stranger = await refused(verifier, issuer.token(headers={"kid": "nobody"}))
    assert (rotated.subject, fetched, issuer.fetches) == ("alice", 2, 2)
    assert stranger == "the token's signing key is not one of the issuer's"


async def test_requests_at_once_share_one_fetch(issuer: Issuer) -> None:
    """Two first requests at once: one fetches the keys, the other waits for it and fetches nothing."""
    verifier = issuer.verifier()
    found = await asyncio.gather(verifier.authenticate(issuer.token()), verifier.authenticate(issuer.token()))
    assert ([principal.subject for principal in found], issuer.fetches) == (["alice", "alice"], 1)


async def test_old_keys_are_fetched_again_and_one_key_needs_no_kid(issuer: Issuer) -> None:
    """Past key_max_age the key set is fetched again; a token without kid takes the issuer's one key."""
    verifier = issuer.verifier(key_max_age=0, key_refresh_interval=0)
    await verifier.authenticate(issuer.token())
    taken = await verifier.authenticate(issuer.token(headers={}))
    assert (taken.subject, issuer.fetches) == ("alice", 2)


@pytest.mark.parametrize(
    ("keys", "token", "reason"),
    [
        ([public("rs", alg="RS256")], {"algorithm": "RS384"}, "the token's algorithm does not fit its key"),
        (
            [public("rs")],
            {"algorithm": "ES256", "headers": {"kid": "rs"}},
            "the token's algorithm does not fit its key",
        ),
        ([public("rs"), {"kty": "oct", "kid": "hs", "k": "c2VjcmV0"}], {"headers": {"kid": "hs"}}, "not one of the"),
        ([public("rs", use="enc")], {}, "the token's signing key is not one of the issuer's"),
    ],
)
async def test_a_key_that_does_not_fit_is_refused(
    issuer: Issuer, keys: list[dict[str, Any]], token: dict[str, Any], reason: str
) -> None:
    """A key declaring another alg, an RSA key under ES256, an HMAC key, an encryption key: refused."""
    issuer.keys(keys)
    assert reason in await refused(issuer.verifier(), issuer.token(**token))


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"nbf": int(time.time()) + 3600}, "the token is not valid yet (nbf)"),
        ({"exp": None}, 'the token is not valid: MissingRequiredClaimError: Token is missing the "exp" claim'),
        ({"sub": None}, "the token names neither a subject nor a client"),
    ],
)
async def test_claims_that_do_not_fit_are_refused(issuer: Issuer, claims: dict[str, Any], reason: str) -> None:
    """A token not valid yet, without exp, or naming no subject nor client: refused."""
    assert await refused(issuer.verifier(), issuer.token(**claims)) == reason


async def test_the_principal_takes_the_client_and_the_scopes_of_the_claims(issuer: Issuer) -> None:
    """No sub: the client (client_id, else azp) is the subject; scopes from scope (a string) or scp (a list)."""
    verifier = issuer.verifier()
    by_client = await verifier.authenticate(issuer.token(sub=None, client_id="agent", scope="a b"))
    by_azp = await verifier.authenticate(issuer.token(azp="web", scp=["c", 7]))
    odd = await verifier.authenticate(issuer.token(scope=7))
    assert (by_client.subject, by_client.client_id, by_client.scopes) == ("agent", "agent", frozenset({"a", "b"}))
    assert (by_azp.subject, by_azp.client_id, by_azp.scopes) == ("alice", "web", frozenset({"c"}))
    assert odd.scopes == frozenset() and odd.claims["scope"] == 7


async def test_not_a_jwt_is_refused_and_static_tokens_come_first(issuer: Issuer) -> None:
    """Garbage is 401 without a fetch; with static tokens too, a static one is taken before any JWT work."""
    static = "static-token-0123456789abcdef"
    verifier = Verifier(HttpAuth(issuer=issuer.url, audience=AUDIENCE, tokens=read_tokens(f"bot {static}")))
    assert await refused(verifier, "not-a-jwt-at-all") == "the token is not a valid JWT"
    assert (await verifier.authenticate(static)).subject == "bot"
    assert issuer.fetches == 0


@pytest.mark.parametrize(
    ("documents", "problem"),
    [
        ({"metadata": {"issuer": "https://elsewhere.example", "jwks_uri": "x"}}, "is of issuer 'https://elsewhere"),
        ({"metadata": {"issuer": "ISSUER"}}, "has no jwks_uri"),
        ({"metadata": {"issuer": "ISSUER", "jwks_uri": "http://example.com/jwks"}}, "jwks_uri must be an https URL"),
        ({"metadata": [1, 2]}, "did not send a JSON object"),
        ({"jwks": {"keys": "none"}}, "the key set has no keys list"),
        ({"jwks": {"keys": [{"pad": "x" * 300_000}]}}, "sent more than 262144 bytes"),
        ({"jwks": 500}, "/jwks answered 500"),
    ],
)
async def test_an_issuer_that_sends_what_it_should_not_is_503(
    issuer: Issuer, documents: dict[str, Any], problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Another issuer named, no jwks_uri or an http one, not an object, no keys list, too large, a 500: 503, logged."""
    if "metadata" in documents:
        text = json.dumps(documents["metadata"]).replace("ISSUER", issuer.url)
        issuer.documents["/.well-known/oauth-authorization-server"] = text.encode()
    if "jwks" in documents:
        found = documents["jwks"]
        issuer.documents["/jwks"] = found if isinstance(found, int) else json.dumps(found).encode()
    with pytest.raises(IssuerUnavailable):
        await issuer.verifier().authenticate(issuer.token())
    assert problem in caplog.text


async def test_openid_discovery_is_the_fallback(issuer: Issuer) -> None:
    """No RFC 8414 metadata: the OpenID Connect discovery document gives the keys."""
    document = issuer.documents.pop("/.well-known/oauth-authorization-server")
    issuer.documents["/.well-known/openid-configuration"] = document
    assert (await issuer.verifier().authenticate(issuer.token())).subject == "alice"


async def test_without_any_metadata_the_issuer_is_unavailable(issuer: Issuer, caplog: pytest.LogCaptureFixture) -> None:
    """Neither metadata document: 503, and the log names the issuer."""
    issuer.documents.clear()
    with pytest.raises(IssuerUnavailable):
        await issuer.verifier().authenticate(issuer.token())
    assert f"no metadata found for issuer {issuer.url}" in caplog.text


def test_a_static_only_auth_has_no_metadata_url() -> None:
    """Without an audience there is no Protected Resource Metadata to point at."""
    assert HttpAuth(tokens=read_tokens("bot static-token-0123456789abcdef")).resource_metadata_url is None


async def test_hmac_signed_with_the_public_key_is_refused(issuer: Issuer) -> None:
    """The classic confusion: HS256 with the issuer's public key as the secret is refused by its algorithm."""
    pem = RSA_KEY.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    claims = {"iss": issuer.url, "aud": AUDIENCE, "sub": "mallory", "exp": int(time.time()) + 600}
    head = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "kid": "rs"}).encode()).rstrip(b"=")
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    signature = base64.urlsafe_b64encode(hmac.digest(pem, head + b"." + body, "sha256")).rstrip(b"=")
    forged = b".".join((head, body, signature)).decode()
    assert await refused(issuer.verifier(), forged) == "the token's algorithm 'HS256' is not accepted"
    assert issuer.fetches == 0


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"exp": "9999999999"}, "the token's exp must be a number (a NumericDate), not a string"),
        ({"exp": True}, "the token's exp must be a number (a NumericDate), not a boolean"),
        ({"nbf": "0"}, "the token's nbf must be a number (a NumericDate), not a string"),
        ({"iat": [1]}, "the token's iat must be a number (a NumericDate), not an array"),
        ({"sub": 7}, "the token's sub must be a string, not an integer"),
        ({"jti": {}}, "the token's jti must be a string, not an object"),
        ({"aud": [AUDIENCE, 1]}, "the token's aud must be a string or an array of strings, not an array"),
        ({"client_id": 7}, "the token's client_id must be a non-empty string, not an integer"),
    ],
)
async def test_a_registered_claim_of_the_wrong_json_type_is_refused(
    issuer: Issuer, claims: dict[str, Any], reason: str
) -> None:
    """exp as a string (which PyJWT would convert), a boolean date, a numeric sub...: 401, the reason only logged."""
    with pytest.raises(AuthRejected) as error:
        await issuer.verifier().authenticate(issuer.token(**claims))
    assert (error.value.status, error.value.description, error.value.reason) == (401, "the token is not valid", reason)


async def test_a_jwt_caller_is_of_its_issuer_and_never_a_static_tokens() -> None:
    """A JWT with sub ci-bot and the static token ci-bot: one subject, two identities (the issuer differs)."""
    found = Issuer()
    try:
        verifier = Verifier(
            HttpAuth(issuer=found.url, audience=AUDIENCE, tokens=read_tokens("ci-bot ci-bot-token-0123456789"))
        )
        by_jwt = await verifier.authenticate(found.token(sub="ci-bot"))
        by_token = await verifier.authenticate("ci-bot-token-0123456789")
    finally:
        found.server.shutdown()
        found.server.server_close()
    assert by_jwt.subject == by_token.subject == "ci-bot"
    assert (by_jwt.issuer, by_token.issuer) == (found.url, STATIC_ISSUER)
    assert by_jwt.identity != by_token.identity and by_jwt.identity.key != by_token.identity.key
