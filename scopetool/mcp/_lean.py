"""The lean path of a ``tools/call`` over stdio, the client's half: raw JSON-RPC lines beside the MCP SDK's session.

`Lane`, on scopetool's own stdio transport to an MCP server (`scopetool.mcp._transport.stdio_transport`):
the client (`scopetool.mcp.client`) writes an admitted call as one request line (the arguments are the
admitted bytes, never parsed again), and the transport's reader hands the lane the lines that answer it
(matched by id, or a progress notification by its token) before the SDK parses anything. The client then
checks the result as the SDK checks it (the negotiated revision's result shape, the tool's output schema)
and maps it as any other. A call that stops waiting (its timeout, or its caller cancelled) sends
``notifications/cancelled`` as the SDK does. Used under asyncio, for calls that are not the retry of an
``input_required`` result. `Events` carries one lean call's events to the task that awaits them.

The gateway's half, its stdio server, is `scopetool.mcp._lean_server`. Why: through the SDK's server and
client stacks a forwarded call cost the gateway about a millisecond of processor time (pydantic models of
each message built and dumped on both sides, tasks and memory streams per call, a worker thread per line
written), admission a few microseconds of it; ``benchmarks/gateway.py`` measures the gateway against the
direct call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Final, Generic, TypeVar, cast, final

import anyio
import orjson
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCRequest

__all__ = ["Events", "Lane", "on_asyncio"]

T = TypeVar("T")


def on_asyncio() -> bool:
    """Whether this thread runs an asyncio event loop, which the lean path needs (anyio may run on trio instead).

    What anyio itself finds without sniffio: under trio no asyncio loop runs in the thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


_MARK: Final = b"scopetool-"
"""Every lean request id starts with this (and a random part of the connection's own)."""
_PER_REQUEST: Final = frozenset({"progressToken", "traceparent", "tracestate", "baggage"})
"""What the SDK puts in one request's ``_meta`` only (its token, the trace context of the moment): never copied."""
MAX_QUEUED_PROGRESS: Final = 16
"""Progress reports a call may have waiting, unread; more are dropped (as the SDK client's own path drops them)."""

LaneEvent = tuple[str, Any]
"""What a waiting call is told: ``("progress", (progress, total, message))``, or its answer (or the error that
ended the connection): ``("done", message | error)``, or ``("read leniently", message)`` for an answer orjson
refused and the standard library's parser read (NaN, a deep nesting), which gets every check of the SDK."""


@final
class Lane:
    """The raw ``tools/call`` lines of one stdio connection to an MCP server, and their answers.

    `attach` gives it the transport's write; `learn` shows it each request the SDK sends (the ``_meta``
    the SDK stamps on every request of the connection, for the revision it negotiated, is copied onto
    the lane's own); `claim` is offered each line read, and takes the ones that answer a lean call.
    """

    __slots__ = ("_meta", "_next", "_prefix", "_waiting", "_write", "closed")

    def __init__(self) -> None:
        self._prefix = _MARK + os.urandom(4).hex().encode() + b"-"
        self._next = 0
        self._waiting: dict[str, Callable[[LaneEvent], None]] = {}
        self._write: Callable[[bytes], Awaitable[None]] | None = None
        self._meta: dict[str, Any] | None = None
        self.closed = False
        """Whether the connection ended: no call is sent on the lane any more."""

    @property
    def ready(self) -> bool:
        """Whether calls can go on the lane: the transport is attached and the SDK has sent a request to copy."""
        return self._write is not None and self._meta is not None and not self.closed

    def attach(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        """Write lines with `write` (the transport's: the server's standard input)."""
        self._write = write

    def learn(self, message: SessionMessage) -> None:
        """Note the ``_meta`` the SDK stamped on a ``tools/list`` request it sends (its envelope for this revision)."""
        request = message.message
        if isinstance(request, JSONRPCRequest) and request.method == "tools/list":
            meta = (request.params or {}).get("_meta")
            given = cast("dict[str, Any]", meta) if isinstance(meta, dict) else {}
            self._meta = {key: value for key, value in given.items() if key not in _PER_REQUEST}

    async def call(
        self, name: str, arguments: bytes, deliver: Callable[[LaneEvent], None], meta: Callable[[dict[str, Any]], None]
    ) -> str:
        """Send one ``tools/call`` of `name` with `arguments` (JSON object text); its events go to `deliver`.

        `meta` may add to the request's ``_meta`` (a trace context). Returns the request id, for `abandon`.

        Raises:
            ConnectionError: the lane is closed, or the write failed.
        """
        write = self._write
        if write is None or self._meta is None or self.closed:
            raise ConnectionError("the connection to the MCP server is closed")
        self._next += 1
        request_id = (self._prefix + str(self._next).encode()).decode()
        envelope = {**self._meta, "progressToken": request_id}  # as the SDK: the id is the progress token
        meta(envelope)
        line = b"".join(
            (
                b'{"jsonrpc":"2.0","id":"',
                request_id.encode(),
                b'","method":"tools/call","params":{"name":',
                orjson.dumps(name),
                b',"arguments":',
                arguments,
                b',"_meta":',
                orjson.dumps(envelope),
                b"}}\n",
            )
        )
        self._waiting[request_id] = deliver
        try:
            await write(line)
        except BaseException:
            self._waiting.pop(request_id, None)
            raise
        return request_id

    def abandon(self, request_id: str, reason: str) -> Awaitable[None] | None:
        """Stop waiting for `request_id`: a late answer is dropped; the write of the SDK's courtesy cancel, if any."""
        if self._waiting.pop(request_id, None) is None or self.closed or self._write is None:
            return None
        notice = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
        line = orjson.dumps({**notice, "params": {"requestId": request_id, "reason": reason}}) + b"\n"
        return self._write(line)

    def claim(self, line: bytes) -> bool:
        """Take `line` if it answers a lean call (its response, or a progress notification for it)."""
        if not self._waiting or self._prefix not in line:
            return False
        done = "done"
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            try:  # what the SDK's parser still reads (NaN, a nesting deeper than orjson's): mapped as on its path
                message = json.loads(line)
            except (ValueError, RecursionError):
                return False  # the SDK's reader says what is wrong with it
            done = "read leniently"
        if not isinstance(message, dict):
            return False
        found = cast("dict[str, object]", message)
        request_id = found.get("id")
        if isinstance(request_id, str) and "method" not in found:
            deliver = self._waiting.pop(request_id, None)
            if deliver is None:
                return False
            deliver((done, found))
            return True
        params = found.get("params")
        if found.get("method") != "notifications/progress" or not isinstance(params, dict):
            return False
        fields = cast("dict[str, object]", params)
        token = fields.get("progressToken")
        deliver = self._waiting.get(token) if isinstance(token, str) else None
        if deliver is None:
            return False
        progress, total, text = fields.get("progress"), fields.get("total"), fields.get("message")
        readable = (total is None or _number(total)) and (text is None or isinstance(text, str))
        if isinstance(progress, int | float) and _number(progress) and readable:
            deliver(("progress", (float(progress), None if total is None else float(cast("float", total)), text)))
        return True  # a malformed one is dropped, as the SDK drops it

    def close(self, error: BaseException) -> None:
        """The connection ended: every waiting call is told `error`."""
        self.closed = True
        waiting, self._waiting = self._waiting, {}
        for deliver in waiting.values():
            with contextlib.suppress(Exception):
                deliver(("done", error))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@final
class Events(Generic[T]):
    """The events of one lean call, for the one task that awaits them: an unbounded queue, woken without a checkpoint.

    It offers the part of anyio's memory streams the client uses (`send_nowait`, `send`, `close`, and
    ``async for``), so `scopetool.mcp.client` follows a lean call as it follows one on the SDK's session;
    unlike a memory stream, a receive that finds an event does not first yield to the event loop.
    ``close`` ends the sending (the iteration ends once the queue is read); `stop` ends the receiving.
    """

    __slots__ = ("_ended", "_queue", "_stopped", "_waiter", "expired")

    def __init__(self) -> None:
        self._queue: deque[T] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self._stopped = False
        self.expired = False
        """Whether `expire` ended the reading (the call's timeout), not the sender."""

    def __len__(self) -> int:
        return len(self._queue)

    def send_nowait(self, item: T) -> None:
        """Queue `item` for the receiver.

        Raises:
            anyio.ClosedResourceError: the sending was closed.
            anyio.BrokenResourceError: the receiver stopped.
        """
        if self._ended:
            raise anyio.ClosedResourceError
        if self._stopped:
            raise anyio.BrokenResourceError
        self._queue.append(item)
        self._wake()

    async def send(self, item: T) -> None:
        """`send_nowait` (the queue has no bound: sending never waits)."""
        self.send_nowait(item)

    def close(self) -> None:
        """End the sending."""
        self._ended = True
        self._wake()

    def expire(self) -> None:
        """End the reading for now, once what is queued is read: the awaited call's time is up."""
        self.expired = True
        self._wake()

    def stop(self) -> None:
        """End the receiving: what is queued is dropped, and a later send is refused."""
        self._stopped = True
        self._queue.clear()
        self._wake()

    def __aiter__(self) -> Events[T]:
        return self

    async def __anext__(self) -> T:
        while not self._queue:
            if self._ended or self._stopped or self.expired:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._queue.popleft()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
