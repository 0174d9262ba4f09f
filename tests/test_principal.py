"""`Principal`, `current_principal` and `acting_as`: who is calling, kept outside the contract."""

from __future__ import annotations

import asyncio

import pytest

from scopetool import Authorization, Failure, Guard, Principal, Request, acting_as, bind, current_principal, tool


@tool
def whoami() -> str:
    """Say who is calling."""
    principal = current_principal()
    return principal.subject if principal else "nobody"


def test_principal_is_a_detached_read_only_snapshot() -> None:
    """The claims are copied and read-only, and the scopes become a frozenset."""
    claims = {"sub": "alice"}
    principal = Principal("alice", scopes=["read"], claims=claims)  # type: ignore[arg-type]
    claims["sub"] = "mallory"
    assert principal.claims["sub"] == "alice"
    assert principal.scopes == frozenset({"read"})
    with pytest.raises(TypeError):
        principal.claims["sub"] = "eve"  # type: ignore[index]
    assert principal.has_scopes(["read"]) and not principal.has_scopes(["read", "write"])


def test_principal_needs_a_subject() -> None:
    """An empty subject is refused."""
    with pytest.raises(ValueError, match="non-empty subject"):
        Principal("")


def test_acting_as_reaches_the_tool_and_the_policy_and_is_reset() -> None:
    """Inside `acting_as` a policy and the tool see the principal; outside, nobody."""
    seen: list[str | None] = []

    def policy(authorization: Authorization) -> bool:
        principal = current_principal()
        seen.append(principal.subject if principal else None)
        return principal is not None and principal.has_scopes(["tools:call"])

    binding = bind(whoami, Guard(policy))
    invocation = binding.contract.prepare(Request(name="whoami"))
    with acting_as(Principal("alice", scopes=frozenset({"tools:call"}))):
        result = asyncio.run(binding.call(invocation))
    assert result.output.text() == "alice"
    assert current_principal() is None
    with acting_as(Principal("bob")), pytest.raises(Failure) as refused:
        asyncio.run(binding.call(binding.contract.prepare(Request(name="whoami"))))
    assert refused.value.output.text() == 'error: tool "whoami" is not authorized'
    assert seen == ["alice", "bob"]
