"""A served tool set that changes while it is served (`ToolUpdates`), and telling each connected client it did.

The MCP gateway re-lists an upstream server that says its tools changed and publishes the new registry
here; every server built with the same `ToolUpdates` (``create_server(..., updates=...)``) swaps it in at
once (`scopetool.mcp._tool_handlers`) and then tells its clients (`ListChangeNotices`): a 2025 client
with ``notifications/tools/list_changed`` on its connection's standalone channel (stdio, a stateful HTTP
session's GET stream), a 2026-07-28 client with a ``toolsListChanged`` event on the ``subscriptions/listen``
stream it opened (the only way a stateless server reaches a client between its requests).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Final, TypeAlias, final

import anyio
from mcp import types as mcp_types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

from .._registry import Registry
from ._tool_search import ToolSearch

__all__ = ["MAX_BUFFERED_NOTICES", "MAX_LISTENERS", "NOTICE_TIMEOUT", "ListChangeNotices", "Prepare", "ToolUpdates"]

NOTICE_TIMEOUT: Final = 5.0
"""Seconds one client's ``notifications/tools/list_changed`` may take to write; a client slower than that misses it."""
MAX_LISTENERS: Final = 1024
"""How many ``subscriptions/listen`` streams one server holds open at once (the SDK's bound, said here)."""
MAX_BUFFERED_NOTICES: Final = 64
"""How many events one listen stream may hold unread before it is ended (its client re-listens and re-lists)."""


Prepare: TypeAlias = Callable[[Registry, ToolSearch | bool], Callable[[], None]]
"""Derives what a server serves from a registry (raising what cannot be served); returns the swap that serves it."""


@final
class ToolUpdates:
    """The changes of a served registry, published to every server built with it (``create_server(..., updates=)``).

    Each server swaps the new registry in before any is told of it (a call already running finishes on
    the binding it started with; a call after the swap sees the new set), then tells its own clients.
    A server declares ``tools.listChanged`` when it has updates to follow.
    """

    __slots__ = ("_followers",)

    def __init__(self) -> None:
        self._followers: weakref.WeakSet[ListChangeNotices] = weakref.WeakSet()  # each goes with its server

    def follow(self, notices: ListChangeNotices) -> None:
        """Swap each published registry into the server of `notices`, then tell its clients (held while it lives)."""
        self._followers.add(notices)

    async def publish(self, registry: Registry, tool_search: ToolSearch | bool, *, commit: Callable[[], None]) -> None:
        """Serve `registry` (with `tool_search`, as ``create_server`` takes it) from now on, then tell the clients.

        `commit` is run at the moment the servers swap (what the publisher changes with them).

        Raises:
            ProviderError: a tool name breaks MCP's name rule, or tool search cannot list what it should
                (nothing is swapped in then, in any server, and `commit` is not run).
        """
        followers: list[ListChangeNotices] = list(self._followers)
        swaps = [follower.prepare(registry, tool_search) for follower in followers]
        for swap in swaps:  # no await from the first swap to the last: every server changes at the same moment
            swap()
        commit()
        for follower in followers:
            await follower.tell()


@final
class ListChangeNotices:
    """Tells a server's connected clients that its tool list changed (see the module).

    Registers on `server`: ``subscriptions/listen`` (bounded by `MAX_LISTENERS` streams, each by
    `MAX_BUFFERED_NOTICES` unread events) and a handler of ``notifications/initialized`` that remembers a
    2025 connection with a standalone channel until it closes. `prepare` is how the server's tools are
    rebuilt from a new registry (`scopetool.mcp._tool_handlers`); the server's handlers keep this alive.
    """

    __slots__ = ("__weakref__", "_bus", "_connections", "prepare")

    def __init__(self, server: Server[Any], prepare: Prepare) -> None:
        self.prepare = prepare
        """Derives the server's tools from a published registry; the swap that serves them."""
        self._bus = InMemorySubscriptionBus()
        self._connections: set[Connection] = set()
        server.add_request_handler(
            "subscriptions/listen",
            mcp_types.SubscriptionsListenRequestParams,
            ListenHandler(self._bus, max_subscriptions=MAX_LISTENERS, max_buffered_events=MAX_BUFFERED_NOTICES),
        )
        server.add_notification_handler("notifications/initialized", mcp_types.NotificationParams, self._initialized)

    async def _initialized(self, ctx: ServerRequestContext[Any, Any], params: mcp_types.NotificationParams) -> None:
        # The SDK hands a handler a per-message session, never its connection (mcp 2.3): its `_connection` is the
        # one way to reach the connection's standalone channel after the message is handled. Only a 2025 handshake
        # sends this notification.
        connection: Connection = ctx.session._connection  # pyright: ignore[reportPrivateUsage]
        if connection.has_standalone_channel:  # not a stateless HTTP one: it has no stream to tell it on
            self._connections.add(connection)
            connection.exit_stack.callback(self._connections.discard, connection)

    async def tell(self) -> None:
        """Tell every listening 2026-07-28 client and every open 2025 connection, each within `NOTICE_TIMEOUT`."""
        await self._bus.publish(ToolsListChanged())
        async with anyio.create_task_group() as group:
            for connection in list(self._connections):
                group.start_soon(_notice, connection)


async def _notice(connection: Connection) -> None:
    with anyio.move_on_after(NOTICE_TIMEOUT):  # `notify` never raises; a stalled stream is given up
        await connection.send_tool_list_changed()
