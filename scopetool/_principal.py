"""Who is calling: `Principal` and its `Identity`, and `current_principal()` for policies.

Identity stays outside the model-visible contract (the seed keeps it as caller-owned context): a
server or gateway that authenticated its caller runs each call inside `acting_as(principal)`, and an
`Authorizer` reads `current_principal()`. Nothing here reaches a `Definition`, an `Authorization` or
the model.

A caller is the same caller only when its whole `Identity` is the same: where it was established
(`Principal.issuer`), its subject and its client. Everything that keeps state for a caller (limits,
MCP tasks, sessions, request state) keys it on `Principal.identity`, so a JWT whose ``sub`` is the
name of a static token is never that token's caller.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, final

__all__ = ["Identity", "Principal", "acting_as", "current_principal"]


@final
@dataclass(frozen=True, slots=True)
class Identity:
    """Who a caller is, compared whole: where it was established, its subject, and its client.

    Two principals are one caller exactly when their identities are equal; strings compare exactly
    (no case folding, no Unicode normalization, as RFC 7519 compares ``StringOrURI``).
    """

    issuer: str | None
    """Where the caller was established (`Principal.issuer`)."""
    subject: str
    """The caller's subject."""
    client_id: str | None
    """The client it called through, or None."""

    @property
    def key(self) -> str:
        """The identity as one ASCII string (a JSON array), for a store keyed on strings: equal exactly when equal."""
        return json.dumps([self.issuer, self.subject, self.client_id], separators=(",", ":"))  # ASCII: \u escapes


@final
@dataclass(frozen=True, slots=True)
class Principal:
    """A verified caller: its subject, the client it called through, its scopes, its token's claims, its issuer.

    Made by whoever verified the caller (the HTTP server from a token, the operator for stdio); a
    policy only reads it. The claims are a detached, read-only copy. Who the caller is, for anything
    that compares callers, is `identity` (the subject alone is not: a JWT's ``sub`` may spell a static
    token's name).
    """

    subject: str
    """Who the caller is (a token's ``sub``, a static key's name, or the operator's choice over stdio)."""
    client_id: str | None = None
    """The OAuth client the caller called through, when known."""
    scopes: frozenset[str] = frozenset()
    """The scopes the caller was granted."""
    claims: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """The verified token's claims (read-only; empty for a static key or stdio)."""
    issuer: str | None = None
    """Where the caller was established: a JWT's issuer (its ``iss``), `scopetool.mcp.auth.STATIC_ISSUER`
    for a static token, or None for a caller named by the operator (``--principal``, `acting_as`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.subject, str) or not self.subject:
            raise ValueError("a Principal needs a non-empty subject")
        if self.client_id is not None and (not isinstance(self.client_id, str) or not self.client_id):
            raise ValueError("a Principal's client_id is a non-empty string or None")
        if self.issuer is not None and (not isinstance(self.issuer, str) or not self.issuer):
            raise ValueError("a Principal's issuer is a non-empty string or None")
        object.__setattr__(self, "scopes", frozenset(self.scopes))
        object.__setattr__(self, "claims", MappingProxyType(dict(self.claims)))

    @property
    def identity(self) -> Identity:
        """Who the caller is, as everything that keeps state for a caller compares it."""
        return Identity(self.issuer, self.subject, self.client_id)

    def has_scopes(self, scopes: Iterable[str]) -> bool:
        """Whether the caller was granted every one of `scopes`."""
        return self.scopes.issuperset(scopes)


_CURRENT: Final[ContextVar[Principal | None]] = ContextVar("scopetool.principal", default=None)


def current_principal() -> Principal | None:
    """The caller of the call being run, or None where no caller was verified (a local run)."""
    return _CURRENT.get()


@contextmanager
def acting_as(principal: Principal | None) -> Generator[Principal | None]:
    """Run the block as `principal`: `current_principal()` returns it there, and the previous one after."""
    token = _CURRENT.set(principal)
    try:
        yield principal
    finally:
        _CURRENT.reset(token)
