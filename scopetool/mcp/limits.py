"""Rate and concurrency limits on tool calls, per caller and per tool: `Limit`, `Limits`, `Limiter`.

A call over a limit is refused before anything runs: it never reaches the tool, nor a gateway's
upstream server, and it is never queued. Over HTTP it is answered ``429`` with ``Retry-After`` and a
JSON-RPC error body; over stdio with the JSON-RPC error alone. The error's code is `RATE_LIMITED`
(``429``): MCP reserves no code for it, and asks for application codes outside JSON-RPC's reserved
range, where ToolHive's gateway already answers ``429``; its ``data`` is ``{"retryAfterSeconds": N}``.

Rates are counted in a moving window by the `limits` package (``pip install 'scopetool[limits]'``):
in this process by default, in Redis when `Limits.redis` names one, so that every instance of a
gateway behind a load balancer counts against the same limit. Concurrency (calls in flight at once)
is counted in each process. A caller is `scopetool.current_principal`'s whole identity
(`scopetool.Principal.identity`: its issuer, subject and client, so a JWT's ``sub`` that spells a
static token's name is another caller); callers with none
(no authentication, no ``--principal``) share one count. A store that does not answer within
`Limits.store_timeout` refuses the call (``503``): a limit fails closed.

Example:
    ```python
    import asyncio
    from scopetool.mcp.limits import LimitError, Limit, Limiter, Limits

    async def main() -> None:
        limiter = Limiter(Limits(caller=Limit(rate="2/minute")))
        for _ in range(3):
            found = await limiter.enter("search")
            if isinstance(found, LimitError):
                print(found.status, found.retry_after > 0)
            else:
                found.release()

    asyncio.run(main())
    #> 429 True
    ```
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, final
from urllib.parse import urlsplit

from .._errors import ScopetoolError
from .._extras import missing_message
from .._principal import current_principal

if TYPE_CHECKING:
    from limits import RateLimitItem
    from limits.aio.strategies import MovingWindowRateLimiter

__all__ = [
    "LIMIT_STORE_TIMEOUT",
    "RATE_LIMITED",
    "Admitted",
    "Limit",
    "LimitError",
    "Limiter",
    "Limits",
]

RATE_LIMITED: Final = 429
"""The JSON-RPC error code of a call refused by a limit (outside JSON-RPC's reserved range, as MCP asks)."""
LIMIT_STORE_TIMEOUT: Final = 2.0
"""Seconds a limit check waits for its store (Redis) by default before it refuses the call."""
"""What a rate limit says when the `limits` package is not installed."""
_ANONYMOUS: Final = ""
"""The caller key of calls with no principal (an identity's key is never empty)."""


def _rate_item(rate: str) -> RateLimitItem:
    """`rate` in the `limits` package's notation (``10/second``, ``100 per minute``).

    Raises:
        ValueError: the notation is not one, or the package is missing.
    """
    try:
        from limits import parse  # noqa: PLC0415 - only a configured rate needs the package
    except ImportError as error:
        raise ValueError(missing_message("a rate", error)) from None
    try:
        item = parse(rate)
    except ValueError:
        raise ValueError(f"rate {rate!r} is not a rate such as '10/second' or '100 per minute'") from None
    if item.amount < 1:
        raise ValueError(f"rate {rate!r} admits no call: give at least 1 per period")
    return item


@final
@dataclass(frozen=True, slots=True)
class Limit:
    """How many calls one key (a caller, a tool) may make: a rate, calls in flight at once, or both.

    Raises:
        ValueError: `rate` is not a rate in the `limits` notation, or `concurrency` not a whole number >= 1.
    """

    rate: str | None = None
    """Calls per period, in the `limits` package's notation (``10/second``, ``100 per minute``,
    ``5/2 seconds``), counted in a moving window; None: no rate limit."""
    concurrency: int | None = None
    """Calls in flight at once, at most (counted in each process); None: no bound here."""

    def __post_init__(self) -> None:
        if self.rate is not None:
            if not isinstance(self.rate, str):
                raise ValueError(f"rate must be a string such as '10/second', not {self.rate!r}")
            _rate_item(self.rate)
        concurrency = self.concurrency
        if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int)):
            raise ValueError(f"concurrency must be a whole number >= 1, not {concurrency!r}")
        if concurrency is not None and concurrency < 1:
            raise ValueError(f"concurrency must be a whole number >= 1, not {concurrency!r}")

    @property
    def limited(self) -> bool:
        """Whether it limits anything."""
        return self.rate is not None or self.concurrency is not None


@final
@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of one server: per caller, per tool, and where rates are counted.

    Raises:
        ValueError: `redis` is not a ``redis://`` or ``rediss://`` URL, or `store_timeout` not > 0.
    """

    caller: Limit = Limit()
    """What each caller (by `scopetool.Principal.identity`) may call, all tools together."""
    tool: Limit = Limit()
    """What each tool may be called, all callers together, unless `tools` names it."""
    tools: Mapping[str, Limit] = field(default_factory=lambda: MappingProxyType({}))
    """Per tool name (as served), its own limit in place of `tool`."""
    redis: str | None = None
    """A Redis URL (``redis://HOST:PORT/DB``, ``rediss://`` for TLS) where rates are counted, so that
    several instances share them; None: in this process."""
    store_timeout: float = LIMIT_STORE_TIMEOUT
    """Seconds a rate check waits for its store before refusing the call (``503``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", MappingProxyType(dict(self.tools)))
        if self.redis is not None:
            scheme = urlsplit(self.redis).scheme if isinstance(self.redis, str) else ""
            if scheme not in ("redis", "rediss"):  # the URL itself is not repeated: it may hold a password
                raise ValueError(f"redis must be a redis:// or rediss:// URL, not one of scheme {scheme!r}")
        timeout = self.store_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
            raise ValueError(f"store_timeout must be a number of seconds > 0, not {timeout!r}")

    def for_tool(self, name: str) -> Limit:
        """The limit of tool `name`: its own in `tools`, else `tool`."""
        return self.tools.get(name, self.tool)

    @property
    def limited(self) -> bool:
        """Whether any limit is set."""
        return self.caller.limited or self.tool.limited or any(limit.limited for limit in self.tools.values())


@final
class LimitError(ScopetoolError):
    """A call refused by a limit (or because the limit's store did not answer): it did not run.

    Its message is public: it names the limit, never an argument.
    """

    def __init__(self, message: str, *, retry_after: int, status: int = RATE_LIMITED) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        """Whole seconds after which the call may be admitted (the ``Retry-After`` header)."""
        self.status = status
        """The HTTP status it is answered with: ``429``, or ``503`` when the store did not answer."""


@final
class Admitted:
    """A call admitted by a `Limiter`: it holds its concurrency slots until `release`."""

    __slots__ = ("_held", "_keys")

    def __init__(self, held: Counter[tuple[str, str]], keys: tuple[tuple[str, str], ...]) -> None:
        self._held = held
        self._keys = keys

    def release(self) -> None:
        """Give the call's slots back (once the call has ended); a second release does nothing."""
        for key in self._keys:
            self._held[key] -= 1
            if self._held[key] <= 0:
                del self._held[key]
        self._keys = ()


@final
class Limiter:
    """Counts calls against `Limits`: `enter` admits one (or refuses it), `Admitted.release` ends it.

    Rates are checked in a moving window by the `limits` package, in memory or in Redis; concurrency
    in this process. One limiter serves one server (every request of it, in one event loop). `tools`,
    when given, are the names counted per tool: a call of any other name (one the server will answer
    as unknown) counts against its caller's limit only, so that made-up names cannot fill the store.

    Raises:
        ValueError: a rate is set and the `limits` package (with its Redis client, for `Limits.redis`)
            is missing.
    """

    __slots__ = ("_held", "_items", "_limits", "_nested_caller", "_rates", "_tools")

    def __init__(self, limits: Limits, *, tools: Collection[str] | None = None) -> None:
        self._limits = limits
        self._nested_caller = Limit(rate=limits.caller.rate)  # a nested call's caller limit: its rate alone
        self._tools = None if tools is None else frozenset(tools)
        self._held: Counter[tuple[str, str]] = Counter()
        self._items: dict[str, RateLimitItem] = {}
        self._rates: MovingWindowRateLimiter | None = None
        self._add_rates(limits)

    def adopt(self, limits: Limits, *, tools: Collection[str] | None = None) -> None:
        """Count against `limits` and per tool `tools` from now on, keeping every count and held slot so far.

        What the MCP gateway does when the tools it serves change: a tool served anew gets its limit, a
        name counted before keeps its window and its calls in flight. `limits` keeps the caller limits
        and the store of the limits it replaces.

        Raises:
            ValueError: as the constructor.
        """
        self._add_rates(limits)
        self._limits = limits
        self._tools = None if tools is None else frozenset(tools)

    def _add_rates(self, limits: Limits) -> None:
        rates = [limits.caller.rate, limits.tool.rate, *(limit.rate for limit in limits.tools.values())]
        items = {rate: _rate_item(rate) for rate in rates if rate is not None and rate not in self._items}
        if items and self._rates is None:
            self._rates = _moving_window(limits.redis)
        self._items.update(items)

    async def enter(self, tool: str, *, nested: bool = False) -> Admitted | LimitError:
        """Admit one call of `tool` by the current caller, or say which limit refuses it (nothing is held then).

        `nested`: a call made inside another call of the same caller (a code call's nested call): it counts
        against the caller's rate and the tool's limits, not the caller's concurrency, whose slot the outer
        call holds.
        """
        caller = current_principal()
        who = _ANONYMOUS if caller is None else caller.identity.key
        per_tool = self._limits.for_tool(tool) if self._tools is None or tool in self._tools else Limit()
        per_caller = self._nested_caller if nested else self._limits.caller
        checks = ((per_caller, "caller", who), (per_tool, "tool", tool))
        taken: list[tuple[str, str]] = []
        for limit, kind, key in checks:
            if limit.concurrency is not None:
                if self._held[kind, key] >= limit.concurrency:
                    self._give_back(taken)
                    bound = f"{limit.concurrency} in flight at once"
                    return LimitError(_too_many("Concurrency", kind, tool, bound), retry_after=1)
                self._held[kind, key] += 1
                taken.append((kind, key))
        for limit, kind, key in checks:
            if limit.rate is None:
                continue
            refused = await self._hit(limit.rate, kind, key, tool)
            if refused is not None:
                self._give_back(taken)
                return refused
        return Admitted(self._held, tuple(taken))

    def _give_back(self, taken: list[tuple[str, str]]) -> None:
        Admitted(self._held, tuple(taken)).release()

    async def _hit(self, rate: str, kind: str, key: str, tool: str) -> LimitError | None:
        """Count one call against `rate` for `key`; the refusal when it is over, or the store did not answer."""
        import anyio  # noqa: PLC0415 - the servers' event loop library (the MCP SDK brings it); a rate check runs in it

        assert self._rates is not None
        item = self._items[rate]
        try:
            with anyio.fail_after(self._limits.store_timeout):
                if await self._rates.hit(item, kind, key):
                    return None
                stats = await self._rates.get_window_stats(item, kind, key)
        except Exception:  # noqa: BLE001 - a store that fails or is late: the call is refused (fail closed)
            message = "Service unavailable: the rate limit store did not answer; the call was not run"
            return LimitError(message, retry_after=1, status=503)
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        bound = str(item).replace(" per 1 ", " per ")
        return LimitError(_too_many("Rate", kind, tool, bound), retry_after=retry_after)


def _too_many(what: str, kind: str, tool: str, bound: str) -> str:
    whose = "this caller's calls" if kind == "caller" else f'calls of tool "{tool}"'
    return f"{what} limit exceeded: {whose} are limited to {bound}; the call was not run"


def _moving_window(redis: str | None) -> MovingWindowRateLimiter:
    """The `limits` package's moving-window limiter, over memory or the Redis at `redis`."""
    try:
        from limits.aio.storage import MemoryStorage, RedisStorage  # noqa: PLC0415 - only a rate needs it
        from limits.aio.strategies import MovingWindowRateLimiter  # noqa: PLC0415
    except ImportError as error:  # pragma: no cover - the item was parsed, so the package is there
        raise ValueError(missing_message("a rate", error)) from None
    if redis is None:
        return MovingWindowRateLimiter(MemoryStorage())
    try:
        storage = RedisStorage(f"async+{redis}", key_prefix="scopetool-limits")
    except Exception as error:  # noqa: BLE001 - limits raises ConfigurationError without its Redis client
        raise ValueError(f"redis limits need the Redis client: pip install 'scopetool[limits]' ({error})") from None
    return MovingWindowRateLimiter(storage)
