"""Who is calling: `Principal`, and `current_principal()` for policies.

Identity stays outside the model-visible contract (the seed keeps it as caller-owned context): a
server or gateway that authenticated its caller runs each call inside `acting_as(principal)`, and an
`Authorizer` reads `current_principal()`. Nothing here reaches a `Definition`, an `Authorization` or
the model.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, final

__all__ = ["Principal", "acting_as", "current_principal"]


@final
@dataclass(frozen=True, slots=True)
class Principal:
    """A verified caller: its subject, the client it called through, its scopes and its token's claims.

    Made by whoever verified the caller (the HTTP server from a token, the operator for stdio); a
    policy only reads it. The claims are a detached, read-only copy.
    """

    subject: str
    """Who the caller is (a token's ``sub``, a static key's name, or the operator's choice over stdio)."""
    client_id: str | None = None
    """The OAuth client the caller called through, when known."""
    scopes: frozenset[str] = frozenset()
    """The scopes the caller was granted."""
    claims: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """The verified token's claims (read-only; empty for a static key or stdio)."""

    def __post_init__(self) -> None:
        if not isinstance(self.subject, str) or not self.subject:
            raise ValueError("a Principal needs a non-empty subject")
        object.__setattr__(self, "scopes", frozenset(self.scopes))
        object.__setattr__(self, "claims", MappingProxyType(dict(self.claims)))

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
