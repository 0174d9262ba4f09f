"""Who may call an MCP server over HTTP: bearer tokens verified, the caller made a `Principal`.

`HttpAuth` says how a server (``scopetool serve --http``, ``scopetool proxy --http``) authenticates
its callers: as an OAuth 2.1 resource server (the MCP authorization spec), with JSON Web Tokens
issued by `HttpAuth.issuer` for this server's resource URL (`HttpAuth.audience`), or with static
tokens named in a file or the environment (`read_tokens`), or both. `Verifier` checks one token;
`scopetool.mcp.server.http_app` runs it on every request but a read of the metadata document:

* JWTs: the issuer's keys are found through its metadata (RFC 8414
  ``/.well-known/oauth-authorization-server``, else OpenID Connect discovery), whose ``issuer`` must
  be the one configured (RFC 9207); the key set is cached, fetched again on a key id it does not hold
  (at most once per `HttpAuth.key_refresh_interval`) and when older than `HttpAuth.key_max_age`; every
  fetch is bounded in time and size. A token must be signed with an asymmetric algorithm of
  `HttpAuth.algorithms` (``none`` and HMAC are never taken), name the issuer (``iss``), this server
  (``aud``, RFC 8707) and an expiry (``exp``; ``nbf`` too when present, with `HttpAuth.leeway`).
  The verification is PyJWT's (the MCP SDK's own JWT library), never code of this module.
* Static tokens: compared in constant time (`hmac.compare_digest` of SHA-256 digests) with every
  configured one; a token's name is its caller's subject. No token, static or not, is ever logged.
* Answers: no token, ``401`` with ``WWW-Authenticate: Bearer resource_metadata="..."`` (RFC 9728: the
  document at `HttpAuth.resource_metadata_url` names the issuer and the scopes; served when there is
  an issuer); a token not valid,
  ``401`` with ``error="invalid_token"``; a token without every scope of `HttpAuth.scopes`, ``403``
  with ``error="insufficient_scope"`` and the scopes needed, so the client can ask for them; a token
  in the query string, two ``Authorization`` headers or one longer than
  `HttpAuth.max_authorization_bytes`, ``400``/``401``; keys that cannot be fetched, ``503`` with
  ``Retry-After``.

The claims registered by RFC 7519 must have their JSON types, checked on the exact payload (strict
I-JSON: a duplicate member name is refused too) before PyJWT's own checks, which would convert some:
``exp``, ``nbf`` and ``iat`` numbers (never a string or a boolean), ``iss``, ``sub`` and ``jti``
strings, ``aud`` a string or an array of strings; ``client_id`` and ``azp``, which name the caller's
client, non-empty strings. A claim of another type is ``401`` ``invalid_token`` (its reason logged).

The verified caller becomes a `scopetool.Principal` (subject, client id, scopes, claims, and the
issuer it was established by: the JWT's ``iss``, or `STATIC_ISSUER` for a static token), and every
MCP request of that caller runs inside `scopetool.acting_as`, so a tool, a `Guard`'s policy and the
gateway see it as `scopetool.current_principal()`. The token itself is never sent on: the gateway's
clients carry only the headers their config gives them.

Example:
    ```python
    from scopetool.mcp.auth import HttpAuth, read_tokens

    auth = HttpAuth(issuer="https://auth.example.com", audience="https://mcp.example.com/mcp", scopes=("tools:call",))
    print(auth.resource_metadata_url)
    #> https://mcp.example.com/.well-known/oauth-protected-resource/mcp
    keys = HttpAuth(tokens=read_tokens("ci-bot s3cr3t-t0ken-0f-ci-b0t tools:call"))
    print(keys.tokens)
    #> (StaticToken(name='ci-bot', scopes=frozenset({'tools:call'})),)
    ```
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast, final
from urllib.parse import parse_qsl, urlsplit

from .._extras import missing_dependency

try:
    import anyio
    import httpx2
    import jwt
    from mcp.server.auth.middleware.auth_context import auth_context_var
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from starlette.authentication import AuthCredentials
    from starlette.routing import Route
    from starlette.types import ASGIApp, Receive, Scope, Send
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter

from .._json import is_array, is_object, json_kind, parse_checked
from .._principal import Principal, acting_as

__all__ = [
    "DEFAULT_ALGORITHMS",
    "STATIC_ISSUER",
    "TOKENS_ENV",
    "AuthRejected",
    "HttpAuth",
    "IssuerUnavailable",
    "StaticToken",
    "Verifier",
    "load_tokens",
    "read_tokens",
    "tokens_from_env",
]

DEFAULT_ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""The signature algorithms a JWT may use unless `HttpAuth.algorithms` says otherwise: every asymmetric one."""
STATIC_ISSUER: Final = "urn:scopetool:static-tokens"
"""The `scopetool.Principal.issuer` of a static token's caller: never an issuer's URL, so never a JWT's caller."""
TOKENS_ENV: Final = "SCOPETOOL_AUTH_TOKENS"
"""The environment variable ``scopetool serve`` and ``proxy`` read static tokens from (`read_tokens`' format)."""

_ASYMMETRIC: Final = frozenset({*DEFAULT_ALGORITHMS, "ES256K", "ES521"})
_B64TOKEN: Final = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
"""RFC 6750's ``b64token``: what a bearer token may hold."""
_SCOPE: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
"""RFC 6749's ``scope-token``: printable ASCII less space, quote and backslash."""
_PRINCIPAL: Final = "scopetool.principal"
"""The ASGI scope key the verified `Principal` is kept under, for the MCP handlers (`principal_middleware`)."""
_MIN_STATIC_TOKEN: Final = 16

_URL: Final = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))
"""URLs as the SDK's metadata keeps them: ``https://issuer.example`` gains no ``/`` (issuers compare as strings)."""

_logger: Final = logging.getLogger("scopetool.mcp.auth")


@final
@dataclass(frozen=True, slots=True)
class StaticToken:
    """One static bearer token: its caller's name (the `Principal`'s subject), the token and its scopes."""

    name: str
    """Who holds it: the subject of the `Principal` it makes."""
    token: str = field(repr=False)
    """The token itself (never shown: not in ``repr``, not in a log)."""
    scopes: frozenset[str] = frozenset()
    """The scopes it grants; empty: the server's required scopes (`HttpAuth.scopes`)."""


def read_tokens(text: str, *, source: str = "tokens") -> tuple[StaticToken, ...]:
    """The static tokens of `text`: one per line (or ``;``-separated), ``NAME TOKEN [SCOPE ...]``.

    Blank lines and lines starting with ``#`` are skipped. A token is at least 16 characters of RFC
    6750's token alphabet (``A-Z a-z 0-9 - . _ ~ + /``, then ``=`` padding); no two entries may share a
    name or a token.

    Raises:
        ValueError: an entry is not of this form, naming `source` and the entry's number (never its token).
    """
    found: list[StaticToken] = []
    names: set[str] = set()
    tokens: set[str] = set()
    entries = [line.strip() for line in re.split(r"[\n;]", text)]
    for number, entry in enumerate(entries, 1):
        if not entry or entry.startswith("#"):
            continue
        where = f"{source}: entry {number}"
        name, *rest = entry.split()
        if not rest:
            raise ValueError(f"{where}: give NAME TOKEN [SCOPE ...], not only a name")
        token, scopes = rest[0], frozenset(rest[1:])
        if _B64TOKEN.fullmatch(token) is None or len(token) < _MIN_STATIC_TOKEN:
            raise ValueError(
                f"{where} ({name}): the token must be at least {_MIN_STATIC_TOKEN} characters of A-Z a-z 0-9 -._~+/"
            )
        if name in names or token in tokens:
            raise ValueError(f"{where} ({name}): a name or a token is given twice")
        names.add(name)
        tokens.add(token)
        found.append(StaticToken(name, token, scopes))
    return tuple(found)


def load_tokens(path: str | Path) -> tuple[StaticToken, ...]:
    """The static tokens of the file at `path` (`read_tokens`' format).

    Raises:
        ValueError: the file cannot be read, or an entry is not valid (naming the file and the entry).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(
            f"cannot read the token file {str(path)!r}: {getattr(error, 'strerror', None) or error}"
        ) from None
    return read_tokens(text, source=str(path))


def _seconds(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a number of seconds >= 0, not {value!r}")


def _url(value: object, name: str, *, issuer: bool) -> str:
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        raise ValueError(f"{name} must be an http(s) URL without a fragment, not {value!r}")
    if issuer and (parts.query or (parts.scheme == "http" and parts.hostname not in ("localhost", "127.0.0.1", "::1"))):
        raise ValueError(f"{name} must be an https URL with no query (http only on loopback), not {value!r}")
    return value  # type: ignore[return-value]  # checked to be a str above


@final
@dataclass(frozen=True, slots=True)
class HttpAuth:
    """How an HTTP server authenticates its callers: JWTs of an issuer, static tokens, or both.

    Every bound has a production default and is checked when the settings are made.

    Raises:
        ValueError: neither an issuer nor a token is given, a URL or an algorithm is not acceptable, or a
            bound is out of range; the message names the setting.
    """

    issuer: str | None = None
    """The authorization server whose JWTs are taken (its issuer identifier, RFC 8414), or None for
    static tokens only. ``https``, or ``http`` on a loopback address."""
    audience: str | None = None
    """This server's resource URL as its clients reach it (``https://mcp.example.com/mcp``), needed with
    an issuer: a JWT's ``aud`` must name it (RFC 8707), and its Protected Resource Metadata (RFC 9728)
    describes it."""
    scopes: tuple[str, ...] = ()
    """The scopes every caller needs; one missing is answered ``403`` ``insufficient_scope``."""
    tokens: tuple[StaticToken, ...] = ()
    """Static tokens (`read_tokens`, `load_tokens`), taken besides the issuer's JWTs."""
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    """The signature algorithms a JWT may use; asymmetric ones only (never ``none`` nor HMAC)."""
    leeway: float = 30.0
    """Seconds of clock difference allowed on ``exp`` and ``nbf``."""
    fetch_timeout: float = 5.0
    """Seconds one fetch of the issuer's metadata or keys may take, whole."""
    max_document_bytes: int = 256 * 1024
    """The most bytes read of the issuer's metadata or key set."""
    key_refresh_interval: float = 30.0
    """The least seconds between two fetches of the issuer's keys (a token naming a key not held asks
    for one; a failed fetch is not tried again sooner, so a down issuer is answered ``503`` at once)."""
    key_max_age: float = 3600.0
    """Seconds the issuer's keys are kept before they are fetched again."""
    max_authorization_bytes: int = 16 * 1024
    """The longest ``Authorization`` header read; a longer one is refused unread."""

    def __post_init__(self) -> None:
        if self.audience is not None:
            _url(self.audience, "audience", issuer=False)
        if self.issuer is not None:
            _url(self.issuer, "issuer", issuer=True)
            if self.audience is None:
                raise ValueError("audience: an issuer's tokens need this server's URL as their audience")
        if self.issuer is None and not self.tokens:
            raise ValueError("authentication needs an issuer, static tokens, or both")
        for scope in self.scopes:
            if not isinstance(scope, str) or _SCOPE.fullmatch(scope) is None:
                raise ValueError(f"scopes: {scope!r} is not a scope (no spaces, quotes or backslashes)")
        refused = [name for name in self.algorithms if name not in _ASYMMETRIC]
        if refused or not self.algorithms:
            raise ValueError(f"algorithms: only asymmetric ones are taken, not {refused or 'none at all'}")
        for name in ("leeway", "fetch_timeout", "key_refresh_interval", "key_max_age"):
            _seconds(getattr(self, name), name)
        for name in ("max_document_bytes", "max_authorization_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")

    @property
    def resource_metadata_url(self) -> str | None:
        """Where this server's Protected Resource Metadata is (RFC 9728 section 3.1); None without an audience."""
        if self.audience is None:
            return None
        return str(build_resource_metadata_url(_URL.validate_python(self.audience)))


class AuthRejected(Exception):  # noqa: N818 - an answer, not a fault of this server
    """A request not authenticated: the HTTP status, the OAuth error code, a description for the client.

    `reason` is what the log says (the description unless the client is told less).
    """

    def __init__(self, status: int, error: str | None, description: str, *, reason: str | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.reason = description if reason is None else reason


class IssuerUnavailable(Exception):  # noqa: N818 - an answer: the server cannot verify now
    """The issuer's metadata or keys cannot be fetched now (answered ``503`` with ``Retry-After``)."""


@final
class Verifier:
    """Checks one bearer token against `HttpAuth`: a `Principal`, or why not.

    It is also the MCP SDK's ``TokenVerifier`` (`verify_token`), for an SDK server of one's own.
    """

    __slots__ = ("_auth", "_built", "_digests", "_fetched", "_jwks_uri", "_keys", "_lock", "_refused_until")

    def __init__(self, auth: HttpAuth) -> None:
        self._auth = auth
        self._digests = [(hashlib.sha256(entry.token.encode()).digest(), entry) for entry in auth.tokens]
        self._keys: dict[str | None, dict[str, Any]] = {}
        self._built: dict[tuple[int, str], jwt.PyJWK] = {}
        self._jwks_uri: str | None = None
        self._fetched = -math.inf
        self._refused_until = -math.inf
        self._lock: anyio.Lock | None = None

    async def authenticate(self, token: str) -> Principal:
        """The caller `token` stands for.

        Raises:
            AuthRejected: the token is not valid here (``401``).
            IssuerUnavailable: the issuer's keys are needed and cannot be fetched now.
        """
        static = self._static(token)
        if static is not None:
            return static
        if self._auth.issuer is None:
            raise AuthRejected(401, "invalid_token", "the token is not valid")
        return await self._jwt(token)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The MCP SDK's ``TokenVerifier``: the token's `AccessToken`, or None when it is not valid."""
        try:
            return _access_token(await self.authenticate(token), token, self._auth.audience)
        except (AuthRejected, IssuerUnavailable):
            return None

    def _static(self, token: str) -> Principal | None:
        found: StaticToken | None = None
        given = hashlib.sha256(token.encode()).digest()  # digests of one length: not even a length leaks
        for digest, entry in self._digests:  # every one compared, in constant time: no early exit
            if hmac.compare_digest(given, digest):
                found = entry
        if found is None:
            return None
        return Principal(found.name, scopes=found.scopes or frozenset(self._auth.scopes), issuer=STATIC_ISSUER)

    async def _jwt(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise AuthRejected(401, "invalid_token", "the token is not a valid JWT") from None
        algorithm = header.get("alg")
        if algorithm not in self._auth.algorithms:
            raise AuthRejected(401, "invalid_token", f"the token's algorithm {str(algorithm)[:16]!r} is not accepted")
        kid = header.get("kid")
        key = await self._key(kid if isinstance(kid, str) else None, algorithm)
        try:
            claims = _STRICT_JWT.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self._auth.audience,
                issuer=self._auth.issuer,
                leeway=self._auth.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise AuthRejected(401, "invalid_token", "the token has expired") from None
        except jwt.InvalidAudienceError:
            raise AuthRejected(401, "invalid_token", "the token is not for this resource (aud)") from None
        except jwt.InvalidIssuerError:
            raise AuthRejected(401, "invalid_token", "the token is not from the expected issuer (iss)") from None
        except jwt.ImmatureSignatureError:
            raise AuthRejected(401, "invalid_token", "the token is not valid yet (nbf)") from None
        except _ClaimTypeError as error:
            raise AuthRejected(401, "invalid_token", "the token is not valid", reason=str(error)) from None
        except jwt.PyJWTError as error:
            raise AuthRejected(401, "invalid_token", f"the token is not valid: {_why(error)}") from None
        return _principal(claims)

    async def _key(self, kid: str | None, algorithm: str) -> jwt.PyJWK:
        """The issuer's key for `kid`, fetched when not held (or too old), checked to fit `algorithm`."""
        now = time.monotonic()
        fetched = True
        if now - self._fetched > self._auth.key_max_age or self._find(kid) is None:
            fetched = await self._refresh(now)
        found = self._find(kid)
        if found is None:
            if not fetched:
                raise IssuerUnavailable("the issuer's keys cannot be fetched now; retry later")
            raise AuthRejected(401, "invalid_token", "the token's signing key is not one of the issuer's")
        declared = found.get("alg")
        if declared is not None and declared != algorithm:
            raise AuthRejected(401, "invalid_token", "the token's algorithm does not fit its key")
        built = self._built.get((id(found), algorithm))
        if built is None:  # a key object is costly to make (an RSA one more than a verification): made once
            try:
                built = self._built[id(found), algorithm] = jwt.PyJWK(found, algorithm)
            except jwt.PyJWTError:
                raise AuthRejected(401, "invalid_token", "the token's algorithm does not fit its key") from None
        return built

    def _find(self, kid: str | None) -> dict[str, Any] | None:
        if kid is None and len(self._keys) == 1:  # a token without kid, from an issuer of one key
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    async def _refresh(self, now: float) -> bool:
        """Fetch the key set unless it was fetched within the refresh interval; False when it cannot be fetched.

        A failed fetch is not tried again within the interval either: a down issuer costs one request
        at most `HttpAuth.fetch_timeout`, and the others an immediate answer.
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._fetched >= now:  # another request fetched it while this one waited
                return True
            if now < self._refused_until:
                return False
            if now - self._fetched < self._auth.key_refresh_interval:
                return True
            try:
                with anyio.fail_after(self._auth.fetch_timeout):
                    self._keys = await self._fetch_keys()
                self._built = {}
            except (TimeoutError, OSError, httpx2.HTTPError, ValueError) as error:
                self._refused_until = time.monotonic() + self._auth.key_refresh_interval
                _logger.warning("cannot fetch the keys of issuer %s: %s", self._auth.issuer, _why(error))
                return False
            self._fetched = time.monotonic()
            return True

    async def _fetch_keys(self) -> dict[str | None, dict[str, Any]]:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=self._auth.fetch_timeout) as client:
            if self._jwks_uri is None:
                self._jwks_uri = await self._discover(client)
            document = await _fetch(client, self._jwks_uri, self._auth.max_document_bytes)
        entries: object = document.get("keys")
        if not isinstance(entries, list):
            raise ValueError("the key set has no keys list")
        keys: dict[str | None, dict[str, Any]] = {}
        for entry in cast("list[object]", entries):
            if is_object(entry) and entry.get("kty") in ("RSA", "EC", "OKP") and entry.get("use", "sig") == "sig":
                kid = entry.get("kid")
                keys[kid if isinstance(kid, str) else None] = entry
        return keys

    async def _discover(self, client: httpx2.AsyncClient) -> str:
        """The issuer's ``jwks_uri``, from its RFC 8414 metadata or else its OpenID Connect discovery."""
        issuer = self._auth.issuer
        assert issuer is not None
        parts = urlsplit(issuer)
        path = parts.path.rstrip("/")
        origin = f"{parts.scheme}://{parts.netloc}"
        places = (
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{issuer.rstrip('/')}/.well-known/openid-configuration",
        )
        problems: list[str] = []
        for place in places:
            try:
                metadata = await _fetch(client, place, self._auth.max_document_bytes)
            except (httpx2.HTTPError, ValueError) as error:
                problems.append(_why(error))
                continue
            if metadata.get("issuer") != issuer:  # RFC 8414 section 3.3, RFC 9207: exactly the one configured
                raise ValueError(f"the metadata at {place} is of issuer {metadata.get('issuer')!r}, not {issuer!r}")
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                raise ValueError(f"the metadata at {place} has no jwks_uri")
            _url(jwks_uri, "jwks_uri", issuer=True)
            return jwks_uri
        raise ValueError(f"no metadata found for issuer {issuer}: {'; '.join(problems)}")


async def _fetch(client: httpx2.AsyncClient, url: str, limit: int) -> dict[str, Any]:
    """The JSON object at `url`, read to at most `limit` bytes.

    Raises:
        ValueError: not a 200 answer, too large, or not a JSON object.
        httpx2.HTTPError: the request failed.
    """
    async with client.stream("GET", url, headers={"accept": "application/json"}) as answer:
        if answer.status_code != 200:
            raise ValueError(f"{url} answered {answer.status_code}")
        body = bytearray()
        async for part in answer.aiter_bytes():
            body += part
            if len(body) > limit:
                raise ValueError(f"{url} sent more than {limit} bytes")
    value: object = json.loads(body)
    if not is_object(value):
        raise ValueError(f"{url} did not send a JSON object")
    return value


def _why(error: BaseException) -> str:
    text = " ".join(str(error).split())[:200]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class _ClaimTypeError(jwt.DecodeError):
    """A registered claim of the wrong JSON type (or a payload that is not strict I-JSON)."""


_NUMERIC_DATES: Final = ("exp", "nbf", "iat")
_STRINGS: Final = ("iss", "sub", "jti")
_CLIENTS: Final = ("client_id", "azp")


def _check_claim_types(payload: bytes) -> dict[str, Any]:
    """The claims of a JWT's verified `payload`, parsed as strict I-JSON, each registered claim of its JSON type.

    Raises:
        _ClaimTypeError: the payload is not one strict JSON object, or a claim is of another type (named).
    """
    claims, problem = parse_checked(payload, require_object=False)
    if problem is not None or not is_object(claims):
        why = "a JSON object" if problem is None else f"strict JSON ({problem.message})"
        raise _ClaimTypeError(f"the token's claims are not {why}")
    for name in _NUMERIC_DATES:
        value = claims.get(name)
        if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise _ClaimTypeError(f"the token's {name} must be a number (a NumericDate), not {json_kind(value)}")
    for name in _STRINGS:
        if name in claims and not isinstance(claims[name], str):
            raise _ClaimTypeError(f"the token's {name} must be a string, not {json_kind(claims[name])}")
    audience = claims.get("aud")
    if "aud" in claims and not (
        isinstance(audience, str)
        or (is_array(audience) and all(isinstance(entry, str) for entry in cast("list[object]", audience)))
    ):
        raise _ClaimTypeError(f"the token's aud must be a string or an array of strings, not {json_kind(audience)}")
    for name in _CLIENTS:
        value = claims.get(name)
        if name in claims and (not isinstance(value, str) or not value):
            raise _ClaimTypeError(f"the token's {name} must be a non-empty string, not {json_kind(value)}")
    return claims


@final
class _StrictJWT(jwt.PyJWT):
    """PyJWT, with the payload read by `_check_claim_types` before PyJWT's own checks (its documented hook)."""

    def _decode_payload(self, decoded: dict[str, Any]) -> dict[str, Any]:
        return _check_claim_types(decoded["payload"])


_STRICT_JWT: Final = _StrictJWT()


def _principal(claims: Mapping[str, Any]) -> Principal:
    """The caller of verified claims: ``sub`` (else the client), ``client_id`` or ``azp``, the scopes, ``iss``."""
    client = claims.get("client_id", claims.get("azp"))
    client_id = client if isinstance(client, str) and client else None
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        if client_id is None:
            raise AuthRejected(401, "invalid_token", "the token names neither a subject nor a client")
        subject = client_id
    granted: object = claims.get("scope", claims.get("scp", ()))
    scopes: frozenset[str] = frozenset()
    if isinstance(granted, str):
        scopes = frozenset(granted.split())
    elif isinstance(granted, list):
        scopes = frozenset(entry for entry in cast("list[object]", granted) if isinstance(entry, str))
    issuer = claims.get("iss")
    return Principal(subject, client_id, scopes, claims, issuer if isinstance(issuer, str) and issuer else None)


def _access_token(principal: Principal, token: str, resource: str | None) -> AccessToken:
    """The MCP SDK's `AccessToken` for a verified `principal` (what its session and request-state bindings read)."""
    expires = principal.claims.get("exp")
    return AccessToken(
        token=token,
        client_id=principal.client_id or "",  # not the subject: a client named like a subject is another caller
        scopes=sorted(principal.scopes),
        expires_at=int(expires) if isinstance(expires, int | float) and not isinstance(expires, bool) else None,
        resource=resource,
        subject=principal.subject,
        claims=dict(principal.claims) or None,
    )


def metadata_routes(auth: HttpAuth) -> list[Route]:
    """The route of this server's Protected Resource Metadata (RFC 9728), the MCP SDK's; none without an issuer."""
    if auth.issuer is None or auth.audience is None:  # static tokens only: no authorization server to name
        return []
    return create_protected_resource_routes(
        _URL.validate_python(auth.audience),
        [_URL.validate_python(auth.issuer)],
        scopes_supported=list(auth.scopes) or None,
    )


@final
class Authenticate:
    """ASGI middleware: every HTTP request authenticated (see the module's docstring), fail-closed.

    Only a ``GET`` (or ``HEAD``, ``OPTIONS``) of the Protected Resource Metadata's path passes without a
    token. An authenticated request carries its caller as the SDK's ``scope["user"]`` (so a 2025
    session belongs to the caller that opened it) and as its `Principal`, which `principal_middleware`
    makes current for the handlers.
    """

    __slots__ = ("_app", "_auth", "_challenge", "_open", "_verifier")

    def __init__(self, app: ASGIApp, auth: HttpAuth) -> None:
        self._app = app
        self._auth = auth
        self._verifier = Verifier(auth)
        metadata = auth.resource_metadata_url if auth.issuer is not None else None
        self._open = None if metadata is None else urlsplit(metadata).path
        parts = [] if metadata is None else [f'resource_metadata="{metadata}"']
        self._challenge = [*parts, *([f'scope="{" ".join(auth.scopes)}"'] if auth.scopes else [])]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._is_open(scope):
            await self._app(scope, receive, send)
            return
        try:
            token = self._token(scope)
            principal = await self._verifier.authenticate(token)
        except AuthRejected as rejected:
            _logger.info("refused a request: %s", rejected.reason)
            await self._refuse(send, rejected)
            return
        except IssuerUnavailable as unavailable:
            await self._unavailable(send, str(unavailable))
            return
        missing = [needed for needed in self._auth.scopes if needed not in principal.scopes]
        if missing:
            text = f"this server needs the scopes {' '.join(self._auth.scopes)}"
            await self._refuse(send, AuthRejected(403, "insufficient_scope", text))
            return
        user = AuthenticatedUser(_access_token(principal, token, self._auth.audience))
        authenticated = {
            **scope,
            "user": user,
            "auth": AuthCredentials(sorted(principal.scopes)),
            _PRINCIPAL: principal,
        }
        with acting_as(principal):  # the limits, counted before the SDK reads the body, count by caller
            await self._app(authenticated, receive, send)

    def _is_open(self, scope: Scope) -> bool:
        """Whether the request reads the metadata document (its path under any mount's root path)."""
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        return path == self._open and scope["method"] in ("GET", "HEAD", "OPTIONS")

    def _token(self, scope: Scope) -> str:
        query = scope.get("query_string", b"")
        if b"access_token" in query and any(name == "access_token" for name, _ in parse_qsl(query.decode("latin-1"))):
            raise AuthRejected(
                400, "invalid_request", "a token in the query string is refused: send it in an Authorization header"
            )
        found: list[bytes] = [value for name, value in scope["headers"] if name == b"authorization"]
        if not found:
            raise AuthRejected(401, None, "authentication required: send a bearer token")
        if len(found) > 1:
            raise AuthRejected(400, "invalid_request", "more than one Authorization header")
        [value] = found
        if len(value) > self._auth.max_authorization_bytes:
            raise AuthRejected(
                401, "invalid_token", f"the Authorization header is over {self._auth.max_authorization_bytes} bytes"
            )
        scheme, _, token = value.decode("latin-1").strip().partition(" ")
        if scheme.lower() != "bearer":
            raise AuthRejected(401, None, "authentication required: send a bearer token (Authorization: Bearer ...)")
        token = token.strip()
        if _B64TOKEN.fullmatch(token) is None:
            raise AuthRejected(401, "invalid_token", "the Authorization header does not hold a bearer token")
        return token

    async def _refuse(self, send: Send, rejected: AuthRejected) -> None:
        parts = (
            []
            if rejected.error is None
            else [f'error="{rejected.error}"', f'error_description="{rejected.description}"']
        )
        challenge = f"Bearer {', '.join([*parts, *self._challenge])}".rstrip()
        body = {"error": rejected.error or "unauthorized", "error_description": rejected.description}
        await _answer(send, rejected.status, body, [(b"www-authenticate", challenge.encode())])

    async def _unavailable(self, send: Send, description: str) -> None:
        retry = str(max(1, math.ceil(self._auth.key_refresh_interval)))
        body = {"error": "temporarily_unavailable", "error_description": description}
        await _answer(send, 503, body, [(b"retry-after", retry.encode())])


async def _answer(send: Send, status: int, body: Mapping[str, str], headers: list[tuple[bytes, bytes]]) -> None:
    data = json.dumps(body).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": data})


def _request_principal(request: object) -> Principal | None:
    """The `Principal` an HTTP request was authenticated as (its Starlette request), or None."""
    scope: object = getattr(request, "scope", None)
    found = scope.get(_PRINCIPAL) if is_object(scope) else None
    return found if isinstance(found, Principal) else None


async def principal_middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """The SDK server middleware running each request as its authenticated caller (`acting_as`).

    A request with no authenticated caller (stdio, HTTP without authentication) runs as it is, under
    whatever principal is already current (the one the operator named for stdio).
    """
    principal = _request_principal(ctx.request)
    if principal is None:
        return await call_next(ctx)
    user = _scope_user(ctx.request)
    reset = None if user is None else auth_context_var.set(user)
    try:
        with acting_as(principal):
            return await call_next(ctx)
    finally:
        if reset is not None:
            auth_context_var.reset(reset)


def _scope_user(request: object) -> AuthenticatedUser | None:
    """The SDK's authenticated user of an HTTP request, or None."""
    scope: object = getattr(request, "scope", None)
    found = scope.get("user") if is_object(scope) else None
    return found if isinstance(found, AuthenticatedUser) else None


def tokens_from_env(environ: Mapping[str, str] | None = None) -> tuple[StaticToken, ...]:
    """The static tokens of `TOKENS_ENV` (none when unset or empty), `read_tokens`' format.

    Raises:
        ValueError: an entry is not valid (naming the variable and the entry).
    """
    text = (os.environ if environ is None else environ).get(TOKENS_ENV, "")
    return read_tokens(text, source=TOKENS_ENV)
