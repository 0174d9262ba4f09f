"""What the framework integrations share: the tools they take, call keys and what the model is shown.

Framework-free: it imports no agent framework, only scopetool's own pieces (the registry, the
provider adapters' outcome rendering and the driver's key minting), so every integration renders an
outcome exactly as the provider adapters do.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import Final, TypeAlias, TypeVar

from .._binding import Binding, Tool
from .._contract import IdempotencyKey
from .._output import Result
from .._registry import Registry
from ..driver._identity import KeyMinter
from ..providers._common import outcome_output, output_text

__all__ = ["Barrier", "CallKeys", "Tools", "is_deferred", "registry_of", "shown", "shown_names"]

_T = TypeVar("_T")

Tools: TypeAlias = Registry | Iterable[Binding | Tool] | Binding | Tool
"""What an integration takes: a registry, or tools and bindings to register in a new one."""


class Barrier:
    """One lock per event loop, held by each call of a tool that is not SAFE, so that no two of them overlap."""

    __slots__ = ("_locks",)

    def __init__(self) -> None:
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    async def run(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """Await `call()` holding the running loop's lock (waiters are served in the order they came)."""
        async with self._locks.setdefault(asyncio.get_running_loop(), asyncio.Lock()):
            return await call()


def registry_of(tools: Tools) -> Registry:
    """The registry to serve: `tools` itself when it is one, else a new registry of the tools given."""
    if isinstance(tools, Registry):
        return tools
    if isinstance(tools, Binding) or callable(getattr(tools, "definition", None)):
        return Registry(tools)  # type: ignore[arg-type]  # a Tool, by its protocol
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise TypeError(f"expected a Registry, tools or bindings, not {type(tools).__name__}")
    return Registry(*tools)


def shown(name: str, outcome: Result | BaseException) -> tuple[str, bool]:
    """What the model is shown for a call's outcome, as one text, and whether it is an error.

    Exactly what the provider adapters show: a result's output; a `Failure`'s public output; an input
    rejection's message; otherwise a generic ``error: tool "<name>" failed`` and nothing of the error.
    """
    output, is_error = outcome_output(name, outcome)
    return output_text(output), is_error


def shown_names(always_show: Iterable[str], deferred: bool) -> frozenset[str]:
    """The names an integration's ``always_show`` gives, checked: names, and only beside deferral.

    Raises:
        TypeError: `always_show` is a string, or holds something other than names.
        ValueError: `always_show` names tools while nothing is deferred.
    """
    if isinstance(always_show, str) or not isinstance(always_show, Iterable):
        raise TypeError(f"always_show must be a list of tool names, not {type(always_show).__name__}")
    names = frozenset(always_show)
    if not all(isinstance(name, str) for name in names):
        raise TypeError("always_show must hold tool names (strings)")
    if names and not deferred:
        raise ValueError("always_show applies only when tools are deferred (defer_loading=True)")
    return names


def is_deferred(registry: Registry, binding: Binding, deferred: bool, shown: frozenset[str]) -> bool:
    """Whether a framework is to hide `binding` until its tool search finds it.

    An ``always_show`` name is shown; else the tool's own mark (`Binding.defer_loading`) decides; else
    the integration's ``defer_loading`` switch, when on; else the registry's rule (`Registry.is_deferred`).
    """
    if binding.name in shown:
        return False
    if binding.defer_loading is not None:
        return binding.defer_loading
    return deferred or registry.is_deferred(binding.name)


class CallKeys:
    """Mints each call's idempotency key from the scope it belongs to and the framework's call id.

    The same scope and call id always give the same key, so a call resumed after an input request
    carries the key of its first attempt. Keys are HMACs under a secret (see
    `scopetool.driver.mint_key`): pass the same `secret` to every process that may resume a call,
    or a random one is drawn for this instance.
    """

    __slots__ = ("_minter",)

    def __init__(self, secret: bytes | None = None) -> None:
        if secret is not None and (not isinstance(secret, bytes) or not secret):
            raise TypeError("secret must be non-empty bytes or None")
        self._minter: Final = KeyMinter(os.urandom(32) if secret is None else secret)

    def key(self, scope: str | None, call_id: str | None) -> IdempotencyKey | None:
        """The key of call `call_id` in `scope` (a conversation, a run); None when there is no call id."""
        if not call_id:
            return None
        return self._minter.key(scope or "", call_id, 0)
