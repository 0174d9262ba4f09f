"""scopetool.integrations._common: what both integrations share."""

from __future__ import annotations

import pytest

from scopetool import Registry, tool
from scopetool.integrations._common import CallKeys, registry_of, shown


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def test_call_keys_are_stable_per_scope_and_call_and_opaque() -> None:
    """The same secret, scope and call id give the same key; another scope or call another; no id, no key."""
    keys = CallKeys(b"secret")
    assert keys.key("conv", "c1") == CallKeys(b"secret").key("conv", "c1")
    assert keys.key("conv", "c1") != keys.key("conv", "c2") != keys.key("other", "c2")
    assert "c1" not in (keys.key("conv", "c1") or "")
    assert keys.key("conv", None) is None and keys.key("conv", "") is None
    assert CallKeys().key(None, "c1") != CallKeys().key(None, "c1")  # a random secret per instance
    with pytest.raises(TypeError, match="non-empty bytes"):
        CallKeys(b"")


def test_registry_of_serves_a_registry_as_it_is_and_registers_tools() -> None:
    """A registry is served as it is; a tool or an iterable of tools makes a new one."""
    registry = Registry(ping)
    assert registry_of(registry) is registry
    assert registry_of(ping).names() == ["ping"] == registry_of([ping]).names()
    with pytest.raises(TypeError, match="expected a Registry"):
        registry_of(42)  # type: ignore[arg-type]


def test_shown_is_what_the_provider_adapters_show() -> None:
    """An ordinary error is the generic text; nothing of its message is shown."""
    assert shown("t", RuntimeError("secret")) == ('error: tool "t" failed', True)
