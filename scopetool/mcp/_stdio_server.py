"""The server over stdio: `serve_stdio`, `run_stdio` and the reading of standard input's lines (`scopetool.mcp.server`).

Newline-delimited JSON-RPC on this process's standard input and output, reserved for it
(`scopetool._stdio`); each line is read by a daemon thread, so that Ctrl-C stops the server at once, and
screened as I-JSON (`scopetool.mcp._strict_messages`) before the SDK reads it. Once standard input ends,
`_Input` and `_Output` hold the end back until every request read is answered, within `SHUTDOWN_GRACE`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from types import TracebackType
from typing import Any, BinaryIO, Final, Protocol, Unpack, final

import anyio
from mcp import types as mcp_types
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from .._principal import Principal, acting_as
from .._registry import Registry
from .._stdio import reserved_stdin, reserved_stdout
from ._strict_messages import BLANK, Passed, invalid, screen
from ._tool_handlers import ServerOptions, create_server

__all__ = ["SHUTDOWN_GRACE", "run_stdio", "serve_stdio"]

SHUTDOWN_GRACE: Final = 30.0
"""Seconds `serve_stdio` keeps answering, by default, after the client closes its input."""


async def serve_stdio(
    registry: Registry,
    *,
    shutdown_grace: float = SHUTDOWN_GRACE,
    ready: Callable[[], object] | None = None,
    principal: Principal | None = None,
    **options: Unpack[ServerOptions],
) -> None:
    """Serve `registry` over this process's stdin and stdout until the client disconnects.

    While serving, stdin and stdout are the protocol's alone: anything else printed to stdout (a
    tool's print, a child process) goes to stderr, and anything else reading stdin reads an empty
    input. Every line read must be I-JSON before the SDK reads it; one that is not, or is not JSON-RPC,
    is answered with a JSON-RPC error (``-32700`` or ``-32600``), or, when only a ``tools/call``'s
    arguments break I-JSON, with the call's rejection.

    When stdin ends, every request already read is still answered before this returns: calls still
    running go on for up to `shutdown_grace` seconds (``math.inf``: no bound), then are cancelled and
    answered with a ``Connection closed`` error; a request for input the client can no longer answer
    ends its call with an error result at once. Cancelled (Ctrl-C), it stops at once. `ready` is
    called once the server reads stdin (from then on, Ctrl-C stops it cleanly). `principal` is the
    caller the operator names for this connection (stdio has no authentication): every request runs
    inside ``acting_as(principal)``, so policies read it from `scopetool.current_principal` (None keeps
    the principal current where the server is started). `options`
    are those of `create_server`.

    Raises:
        ValueError: `shutdown_grace` is negative or NaN.
    """
    if not shutdown_grace >= 0:
        raise ValueError(f"shutdown_grace must be a number of seconds >= 0, not {shutdown_grace!r}")
    server = create_server(registry, **options)
    pending = _Pending()
    try:
        async with (
            _stdio() as (read_stream, write_stream),
            _Input(read_stream, pending, shutdown_grace) as received,
            _Output(write_stream, pending) as sent,
        ):
            if ready is not None:
                ready()
            # Every request's task is started in this context, and inherits it; without a principal named
            # here, the caller's own context (an `acting_as` around the server) stands.
            with contextlib.nullcontext() if principal is None else acting_as(principal):
                await server.run(received, sent, server.create_initialization_options())
    except* BrokenPipeError:  # the client closed its end of stdout: a disconnect, nothing can be answered
        pass


def run_stdio(
    registry: Registry,
    *,
    shutdown_grace: float = SHUTDOWN_GRACE,
    ready: Callable[[], object] | None = None,
    principal: Principal | None = None,
    **options: Unpack[ServerOptions],
) -> None:
    """Serve `registry` over stdio, blocking until the client disconnects (what ``scopetool serve`` runs).

    Arguments are those of `serve_stdio`.
    """
    asyncio.run(serve_stdio(registry, shutdown_grace=shutdown_grace, ready=ready, principal=principal, **options))


@contextlib.asynccontextmanager
async def _stdio() -> AsyncGenerator[tuple[_Source, _Sink]]:
    """The stdio transport: newline-delimited JSON-RPC on this process's stdin and stdout, read strictly.

    Standard input and output are reserved for it (`scopetool._stdio`). Each line read is checked as
    I-JSON by `_read_line` before the SDK parses it; a line that is refused is answered here.
    """
    with reserved_stdin() as stdin, reserved_stdout() as stdout:
        to_server, received = anyio.create_memory_object_stream[SessionMessage](0)
        sent, outgoing = anyio.create_memory_object_stream[SessionMessage](0)

        async def read() -> None:
            async with to_server:
                async for line in _lines(stdin):
                    message, answer = _read_line(line)
                    if message is not None:
                        await to_server.send(message)
                    if answer is not None:
                        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                            await sent.send(answer)

        async def write() -> None:
            async with outgoing:
                async for item in outgoing:
                    text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await anyio.to_thread.run_sync(_write_line, stdout, text)

        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(write)
            yield received, sent


_CHUNK: Final = 1 << 16


async def _lines(stream: BinaryIO) -> AsyncGenerator[bytes]:
    """The lines of `stream`, read by a daemon thread, so that a cancelled server (Ctrl-C) stops at once.

    A worker thread of anyio would hold the process (and Ctrl-C) until the next line arrives: a read of
    standard input cannot be interrupted. This thread is abandoned instead: it holds nothing the process
    waits for. A stream with a descriptor is read with ``os.read``, which holds no lock a close would wait for.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()
    room = threading.Semaphore(1)  # one line read ahead at most: the reader waits for the server
    descriptor = _descriptor(stream)

    def chunks() -> Iterator[bytes]:
        if descriptor is None:
            yield from iter(stream.readline, b"")
            return
        rest = b""
        while chunk := os.read(descriptor, _CHUNK):
            *complete, rest = (rest + chunk).split(b"\n")
            yield from (line + b"\n" for line in complete)
        if rest:
            yield rest

    def pump() -> None:
        # No coroutine is made on this thread: one made for a loop that has closed would never be awaited.
        with contextlib.suppress(Exception):  # the loop is gone (or the input broke): the input has ended
            for line in chunks():
                room.acquire()
                loop.call_soon_threadsafe(queue.put_nowait, line)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is reading
            loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=pump, name="scopetool-stdin", daemon=True).start()
    while (line := await queue.get()) is not None:
        room.release()
        yield line


def _descriptor(stream: BinaryIO) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream
        return None


def _write_line(stream: Any, text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


def _read_line(raw: bytes) -> tuple[SessionMessage | None, SessionMessage | None]:
    """One line of input: the message for the server, and the error answering the client, either or none.

    The line is screened by `screen` (I-JSON) before the SDK reads anything of it; what passes must
    then be a JSON-RPC message, or it is answered with a ``-32600`` invalid request.
    """
    if not raw.strip(BLANK):
        return None, None
    screened = screen(raw)
    if not isinstance(screened, Passed):
        return screened
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(screened.text, by_name=False)
    except ValueError:
        return invalid(screened.text, screened.value, "not a JSON-RPC 2.0 message")
    arguments = screened.arguments
    return SessionMessage(
        message, None if arguments is None else ServerMessageMetadata(request_context=arguments)
    ), None


# Why the streams are wrapped: the SDK's server loop (`JSONRPCDispatcher.run`, mcp 2.3) cancels every
# request in flight as soon as its read stream ends, and the stdio transport ends it at EOF on stdin.
# A handler not started yet is then dropped with no answer at all, one running is answered with a
# "Connection closed" error; so a client that writes its requests and closes stdin (`printf ... |
# scopetool serve`, a test, a client that half-closes) loses answers, depending on how far the loop
# got: a race that even initialize + tools/list sometimes lose. The SDK is not ours to patch, so
# `_Input` holds the end of the input back until every request read has been answered or the grace
# is over, and `_Output` notes the answers (and the server's own requests) on their way out.


class _Source(Protocol):
    """What `_Input` needs of the transport's read stream."""

    async def receive(self) -> SessionMessage: ...
    async def aclose(self) -> None: ...


class _Sink(Protocol):
    """What `_Output` needs of the transport's write stream."""

    async def send(self, item: SessionMessage, /) -> None: ...
    async def aclose(self) -> None: ...


@final
class _Pending:
    """The requests of one connection still waiting for an answer, on either side."""

    __slots__ = ("_changed", "asked", "unanswered")

    def __init__(self) -> None:
        self.unanswered: set[mcp_types.RequestId] = set()
        """The client's requests the server has not answered."""
        self.asked: set[mcp_types.RequestId] = set()
        """The server's requests the client has not answered."""
        self._changed = anyio.Event()

    def read(self, item: SessionMessage) -> None:
        """Note a message from the client."""
        message = item.message
        if isinstance(message, mcp_types.JSONRPCRequest):
            self.unanswered.add(coerce_request_id(message.id))
        elif isinstance(message, mcp_types.JSONRPCNotification):
            if message.method == "notifications/cancelled":  # the SDK never answers a cancelled request
                self._settle(self.unanswered, cancelled_request_id_from_params(message.params))
        else:
            self._settle(self.asked, message.id)

    def ask(self, request_id: mcp_types.RequestId) -> None:
        """Note a request the server is sending the client."""
        self.asked.add(coerce_request_id(request_id))
        self._change()

    def answer(self, request_id: mcp_types.RequestId | None) -> None:
        """Note an answer the server has sent the client."""
        self._settle(self.unanswered, request_id)

    async def changed(self) -> None:
        """Wait for the next change."""
        await self._changed.wait()

    def _settle(self, ids: set[mcp_types.RequestId], request_id: mcp_types.RequestId | None) -> None:
        if request_id is not None:
            ids.discard(coerce_request_id(request_id))
            self._change()

    def _change(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()


@final
class _Input:
    """The client's messages, as the SDK's read stream; once stdin ends, ends only when all are answered.

    While requests read are unanswered and the grace lasts, it ends nothing: it waits, and gives every
    request the server sends (an elicitation) the answer the SDK gives it at disconnect, a
    ``Connection closed`` error, since the client can no longer answer it.
    """

    __slots__ = ("_deadline", "_grace", "_pending", "_source")

    def __init__(self, source: _Source, pending: _Pending, grace: float) -> None:
        self._source = source
        self._pending = pending
        self._grace = grace
        self._deadline: float | None = None  # set when stdin ends

    async def receive(self) -> SessionMessage:
        """The next message from the client, or an error answering a request it can no longer answer.

        Raises:
            anyio.EndOfStream: stdin has ended, and every request is answered or the grace is over.
        """
        if self._deadline is None:
            try:
                item = await self._source.receive()
            except anyio.EndOfStream:
                self._deadline = anyio.current_time() + self._grace
            else:
                self._pending.read(item)
                return item
        with anyio.CancelScope(deadline=self._deadline):
            while self._pending.unanswered:
                if self._pending.asked:
                    request_id = self._pending.asked.pop()
                    closed = mcp_types.ErrorData(code=mcp_types.CONNECTION_CLOSED, message="Connection closed")
                    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=closed))
                await self._pending.changed()
        raise anyio.EndOfStream

    async def aclose(self) -> None:
        """Close the transport's read stream."""
        await self._source.aclose()

    def __aiter__(self) -> _Input:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Input:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


@final
class _Output:
    """The server's messages, as the SDK's write stream: notes each request it asks and each answer it gives."""

    __slots__ = ("_pending", "_sink")

    def __init__(self, sink: _Sink, pending: _Pending) -> None:
        self._sink = sink
        self._pending = pending

    async def send(self, item: SessionMessage, /) -> None:
        """Send `item`; an answer counts once the transport has taken it, a request before it is sent."""
        message = item.message
        if isinstance(message, mcp_types.JSONRPCRequest):
            self._pending.ask(message.id)
        await self._sink.send(item)
        if isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            self._pending.answer(message.id)

    async def aclose(self) -> None:
        """Close the transport's write stream."""
        await self._sink.aclose()

    async def __aenter__(self) -> _Output:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()
