"""The gateway's stdio server on the lean path: a ``tools/call`` answered without the SDK's server stack.

`serve_stdio` serves a registry as `scopetool.mcp.server.serve_stdio` does (the same SDK server, the
same handlers, the same I-JSON screening, the same end of input), with one difference: once the
client has completed the ``initialize`` handshake on a 2025 revision, each ``tools/call`` request
line that carries no progress token and no request state is read once (`screen`, which parses it as
I-JSON), admitted, run and told to the observer by the server's own handler (`_Tools.lean_call`:
`run_call`, so the binding's guards, policies and result cap all apply), shaped by the SDK's result
surface for the negotiated revision, and written as one line, without the SDK's dispatcher, its
pydantic request and response models, its task and memory streams per request, or a worker thread
per line. Its ``notifications/cancelled`` cancels it here. Every other message (and every
``tools/call`` that does not fit, which the SDK validates and answers) goes to the SDK's server.

A call whose outcome requests input is handed to the SDK's handler with that outcome (`Handover`):
it asks the client over the SDK's session and resumes the call, as on the SDK's path.

Standard input and output are read and written through the event loop when they are pipes or
sockets (the usual case: a client that started the gateway); otherwise (a terminal, a file) as
`scopetool.mcp.server.serve_stdio` does, through threads. Only under asyncio; under another event
loop, `scopetool.mcp.server.serve_stdio` serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import IO, Any, BinaryIO, Final, TextIO, Unpack, cast, final

import orjson
from pydantic import ValidationError

from .._extras import missing_dependency

try:
    import anyio
    from mcp import types as mcp_types
    from mcp.shared.exceptions import MCPError
    from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
    from mcp.shared.message import ServerMessageMetadata, SessionMessage
    from mcp_types import methods
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

from .._contract import Request
from .._json import is_object
from .._principal import Principal, acting_as
from .._registry import Registry
from .._stdio import reserved_stdin, reserved_stdout
from ..providers._common import ProviderError, ToolCall, object_arguments
from ._lean import on_asyncio
from ._stdio_server import (  # the SDK path's own parts: the same screening, end of input and writes
    SHUTDOWN_GRACE,
    _Input,  # pyright: ignore[reportPrivateUsage]
    _lines,  # pyright: ignore[reportPrivateUsage]
    _Output,  # pyright: ignore[reportPrivateUsage]
    _Pending,  # pyright: ignore[reportPrivateUsage]
    _read_line,  # pyright: ignore[reportPrivateUsage]
    _write_line,  # pyright: ignore[reportPrivateUsage]
)
from ._stdio_server import serve_stdio as sdk_serve_stdio
from ._strict_messages import Passed, screen
from ._tool_handlers import (
    Handover,
    ServerOptions,
    _Tools,  # pyright: ignore[reportPrivateUsage] - the handlers the lean path shares
    server_and_tools,
)

__all__ = ["serve_stdio"]

logger: Final = logging.getLogger("scopetool.mcp.server")

_READ_AHEAD: Final = 64
"""Lines read and not yet handled before the reading of standard input pauses."""
_FLUSH: Final = 5.0
"""Seconds the answers still buffered at the end get to reach the client."""
_PARAMS: Final = frozenset({"name", "arguments", "_meta"})
"""The members of a ``tools/call``'s params the lean path reads; any other sends the request to the SDK."""
_INTERNAL: Final = mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message="Internal error")
_CLOSED: Final = b'"error":{"code":-32000,"message":"Connection closed"}}\n'


async def serve_stdio(
    registry: Registry,
    *,
    shutdown_grace: float = SHUTDOWN_GRACE,
    ready: Callable[[], object] | None = None,
    principal: Principal | None = None,
    **options: Unpack[ServerOptions],
) -> None:
    """Serve `registry` over this process's stdin and stdout until the client disconnects (see the module).

    The arguments, and what the client sees, are those of `scopetool.mcp.server.serve_stdio` (every request,
    lean or not, runs as `principal` when one is named).

    Raises:
        ValueError: `shutdown_grace` is negative or NaN.
    """
    if not shutdown_grace >= 0:
        raise ValueError(f"shutdown_grace must be a number of seconds >= 0, not {shutdown_grace!r}")
    if not on_asyncio():
        await sdk_serve_stdio(registry, shutdown_grace=shutdown_grace, ready=ready, principal=principal, **options)
        return
    server, tools = server_and_tools(registry, **options)
    try:
        with (
            contextlib.nullcontext() if principal is None else acting_as(principal),
            reserved_stdin() as stdin,
            reserved_stdout() as stdout,
        ):
            async with _wire(stdin, stdout) as wire:
                await _Front(server, tools, wire, shutdown_grace).run(ready)
    except* BrokenPipeError:  # the client closed its end of stdout: a disconnect, nothing can be answered
        pass


# -- the wire: standard input's lines, standard output's writes -----------------------------------------


@final
class _Wire:
    """The lines read from the client and the writes to it, through the loop or through threads."""

    __slots__ = ("_lines", "_write", "reader")

    def __init__(
        self, lines: AsyncIterator[bytes], write: Callable[[bytes], Any], reader: _LineReader | None = None
    ) -> None:
        self._lines = lines
        self._write = write
        self.reader = reader
        """The reader of a piped input, which can hand a line on as it arrives (`_LineReader.dispatch`)."""

    def lines(self) -> AsyncIterator[bytes]:
        """Each line the client sends (with its newline), until its input ends."""
        return self._lines

    async def write(self, data: bytes) -> None:
        """Write `data` (whole lines) to the client; `BrokenPipeError` once it is gone."""
        await self._write(data)


def _fileno(stream: IO[Any]) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream (a test's capture)
        return None


def _is_pipe(descriptor: int | None) -> bool:
    if descriptor is None:
        return False
    mode = os.fstat(descriptor).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.asynccontextmanager
async def _wire(stdin: BinaryIO, stdout: TextIO) -> AsyncGenerator[_Wire]:
    """The client's pipes through the event loop (non-blocking while served, as they were after), else threads."""
    loop = asyncio.get_running_loop()
    read_fd, write_fd = _fileno(stdin), _fileno(stdout)
    async with contextlib.AsyncExitStack() as stack:
        if read_fd is not None and _is_pipe(read_fd):
            stack.callback(os.set_blocking, read_fd, os.get_blocking(read_fd))
            reader = _LineReader()
            pipe = stack.enter_context(open(read_fd, "rb", buffering=0, closefd=False))  # noqa: SIM115
            transport, _ = await loop.connect_read_pipe(lambda: reader, pipe)
            stack.callback(transport.close)
            lines: AsyncIterator[bytes] = reader.lines()
        else:
            reader, lines = None, _lines(stdin)
        if write_fd is not None and _is_pipe(write_fd):
            stdout.flush()
            stack.callback(os.set_blocking, write_fd, os.get_blocking(write_fd))
            writer = _Writer()
            pipe_out: IO[bytes] = stack.enter_context(open(write_fd, "wb", buffering=0, closefd=False))  # noqa: SIM115
            await loop.connect_write_pipe(lambda: writer, pipe_out)
            stack.push_async_callback(writer.close)
            yield _Wire(lines, writer.write, reader)
        else:
            lock = anyio.Lock()

            async def write(data: bytes) -> None:
                async with lock:
                    await anyio.to_thread.run_sync(_write_line, stdout, data.decode().removesuffix("\n"))

            yield _Wire(lines, write, reader)


@final
class _LineReader(asyncio.Protocol):
    """Standard input as lines, split as each chunk comes (a line's chunks are joined once)."""

    def __init__(self) -> None:
        self._ready: deque[bytes] = deque()
        self._partial: list[bytes] = []
        self._changed = asyncio.Event()
        self._ended = False
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False
        self.dispatch: Callable[[bytes], bool] | None = None
        """Given each line that arrives while none waits to be read: True if it took the line (it is not queued)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._partial.append(data[start : end + 1])
            line = b"".join(self._partial)
            self._partial.clear()
            start = end + 1
            if self._ready or self.dispatch is None or not self.dispatch(line):  # the order of lines is kept
                self._ready.append(line)
        if start < len(data):
            self._partial.append(data[start:])
        if len(self._ready) >= _READ_AHEAD and self._transport is not None and not self._paused:
            self._paused = True
            self._transport.pause_reading()
        self._changed.set()

    def eof_received(self) -> bool:
        self._end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        if self._partial:
            self._ready.append(b"".join(self._partial))
            self._partial.clear()
        self._ended = True
        self._changed.set()

    async def lines(self) -> AsyncGenerator[bytes]:
        while True:
            while not self._ready:
                if self._ended:
                    return
                self._changed.clear()
                await self._changed.wait()
            yield self._ready.popleft()
            if self._paused and len(self._ready) < _READ_AHEAD // 2 and self._transport is not None:
                self._paused = False
                self._transport.resume_reading()


@final
class _Writer(asyncio.Protocol):
    """Standard output as a non-blocking pipe: writes are buffered by the loop, a full pipe waits."""

    def __init__(self) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._lost: BaseException | None = None
        self._room = asyncio.Event()
        self._room.set()
        self._closed = asyncio.Event()
        self._batch: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        self._transport = transport

    def pause_writing(self) -> None:
        self._room.clear()

    def resume_writing(self) -> None:
        self._room.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc or BrokenPipeError("the client closed its input")
        self._room.set()
        self._closed.set()

    async def write(self, data: bytes) -> None:
        if self._lost is not None or self._transport is None:
            raise BrokenPipeError("the client closed its input")
        # The lines written while the loop runs its ready callbacks go out in one write, after them: calls
        # that end together (several answers in one read from a server) cost one system call and one wake-up.
        if not self._batch:
            asyncio.get_running_loop().call_soon(self._flush)
        self._batch.append(data)
        if not self._room.is_set():
            await self._room.wait()
            if self._lost is not None:
                raise BrokenPipeError("the client closed its input")

    def _flush(self) -> None:
        batch, self._batch = self._batch, []
        if self._transport is not None and self._lost is None:
            self._transport.write(b"".join(batch))

    async def close(self) -> None:
        """Let what is buffered reach the client (within `_FLUSH`), then close."""
        if self._batch:
            self._flush()
        if self._transport is None or self._lost is not None:
            return
        self._transport.close()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_FLUSH):
            await self._closed.wait()


# -- the front: tools/call here, the rest to the SDK's server ----------------------------------------------


@final
class _Sink:
    """The SDK's write stream: notes the answer to ``initialize`` on its way out."""

    __slots__ = ("_front", "_stream")

    def __init__(self, stream: anyio.abc.ObjectSendStream[SessionMessage], front: _Front) -> None:
        self._stream = stream
        self._front = front

    async def send(self, item: SessionMessage, /) -> None:
        self._front.saw(item.message)
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()


@final
class _Front:
    """One connection: each line read, answered on the lean path or handed to the SDK's server."""

    def __init__(self, server: Any, tools: _Tools, wire: _Wire, grace: float) -> None:
        self._server = server
        self._tools = tools
        self._wire = wire
        self._grace = grace
        self._version: str | None = None
        """The 2025 revision the client initialized; None: not (yet), or a later one (everything to the SDK)."""
        self._initializing: tuple[mcp_types.RequestId, anyio.Event] | None = None
        self._calls: dict[int | str, asyncio.Task[None]] = {}
        self._closing = False
        to_server, self._received = anyio.create_memory_object_stream[SessionMessage](0)
        self._to_server = to_server
        self._sent, self._outgoing = anyio.create_memory_object_stream[SessionMessage](0)
        if wire.reader is not None:
            wire.reader.dispatch = self._dispatch

    async def run(self, ready: Callable[[], object] | None) -> None:
        pending = _Pending()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._write_sdk)
                group.start_soon(self._read)
                async with (
                    _Input(self._received, pending, self._grace) as received,
                    _Output(_Sink(self._sent, self), pending) as sent,
                ):
                    if ready is not None:
                        ready()
                    await self._server.run(received, sent, self._server.create_initialization_options())
        finally:
            for task in self._calls.values():
                task.cancel()

    def saw(self, message: object) -> None:
        """Note a message the SDK's server sends: its answer to ``initialize`` opens (or closes) the lean path."""
        initializing = self._initializing
        if initializing is None or not isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            return
        request_id, answered = initializing
        if message.id != request_id:
            return
        version = message.result.get("protocolVersion") if isinstance(message, mcp_types.JSONRPCResponse) else None
        legacy = isinstance(version, str) and version not in MODERN_PROTOCOL_VERSIONS
        self._version = version if legacy else None
        self._initializing = None
        answered.set()

    async def _write_sdk(self) -> None:
        async with self._outgoing:
            async for item in self._outgoing:
                await self._wire.write(_dumped(item))

    async def _read(self) -> None:
        async with self._to_server:
            async for line in self._wire.lines():
                if self._version is not None and b'"tools/call"' in line and self._lean(line):
                    continue
                message, answer = _read_line(line)
                if message is not None and not self._cancels_lean(message.message):
                    await self._forward(message)
                if answer is not None:
                    await self._wire.write(_dumped(answer))
            await self._settle()

    async def _forward(self, message: SessionMessage) -> None:
        """Give the SDK's server a message; an ``initialize`` is answered before the next line is read."""
        request = message.message
        if isinstance(request, mcp_types.JSONRPCRequest) and request.method == "initialize":
            answered = anyio.Event()
            self._version, self._initializing = None, (request.id, answered)
            await self._to_server.send(message)
            await answered.wait()
            return
        await self._to_server.send(message)

    def _cancels_lean(self, message: object) -> bool:
        """Cancel the lean call a ``notifications/cancelled`` names (never answered, as the SDK does)."""
        if not isinstance(message, mcp_types.JSONRPCNotification) or message.method != "notifications/cancelled":
            return False
        request_id = cancelled_request_id_from_params(message.params)
        task = None if request_id is None else self._calls.get(request_id)
        if task is None:
            return False
        task.cancel()
        return True

    def _dispatch(self, line: bytes) -> bool:
        """Start `line`'s call at once if it goes on the lean path (called as it arrives, nothing queued before it)."""
        if self._version is None or b'"tools/call"' not in line:
            return False
        try:
            return self._lean(line)
        except Exception:  # noqa: BLE001 - read again in order by `_read`, which says what is wrong
            return False

    def _lean(self, line: bytes) -> bool:
        """Start `line`'s call on the lean path if it is a ``tools/call`` the lean path answers (see the module)."""
        if not self._tools.lean:
            return False
        screened = screen(line)
        if not isinstance(screened, Passed):
            return False
        value = screened.value
        if not is_object(value) or value.get("method") != "tools/call" or value.get("jsonrpc") != "2.0":
            return False
        request_id, params = value.get("id"), value.get("params")
        if type(request_id) not in (int, str) or not is_object(params) or not _PARAMS.issuperset(params):
            return False
        name, meta = params.get("name"), params.get("_meta")
        if not isinstance(name, str) or (meta is not None and (not is_object(meta) or "progressToken" in meta)):
            return False
        if request_id in self._calls:  # pyright: ignore[reportUnnecessaryContains] - int or str, checked above
            return False
        arguments: str | bytes
        if screened.arguments is not None:  # the exact text, where the client's broke I-JSON
            arguments = screened.arguments.text
        else:
            given = params.get("arguments")
            try:
                arguments = object_arguments({} if given is None else given, "tools/call")
            except ProviderError:
                return False  # the SDK's server answers it
        key = cast("int | str", request_id)
        call = ToolCall(str(key), Request(name, arguments))
        task = asyncio.get_running_loop().create_task(self._answer(key, call, meta))
        self._calls[key] = task
        task.add_done_callback(lambda _: self._calls.pop(key, None))  # also when cancelled before it started
        return True

    async def _answer(self, request_id: int | str, call: ToolCall, meta: object) -> None:
        """Run one lean call and write its answer (or hand it to the SDK's handler)."""
        prefix = b'{"jsonrpc":"2.0","id":' + orjson.dumps(request_id) + b","
        try:
            try:
                answer = await self._tools.lean_call(call)
                if isinstance(answer, Handover):
                    params: dict[str, Any] = {"name": call.name} | ({} if meta is None else {"_meta": meta})
                    request = mcp_types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params=params)
                    await self._to_server.send(SessionMessage(request, ServerMessageMetadata(request_context=answer)))
                    return
                line = prefix + b'"result":' + self._result(answer) + b"}\n"
            except MCPError as error:
                line = _error_line(request_id, error.error)
            except Exception:  # a bug of ours, not the call's: answered, logged, its text kept private
                logger.exception("the lean path failed to answer tools/call %r", request_id)
                line = _error_line(request_id, _INTERNAL)
            await self._wire.write(line)
        except BrokenPipeError:
            pass  # the client is gone: nothing can be answered (its end of the input ends the server)
        except asyncio.CancelledError:
            if self._closing:  # the input ended and the grace is over: answered as the SDK answers it
                with contextlib.suppress(BrokenPipeError):
                    await asyncio.shield(self._wire.write(prefix + _CLOSED))
            raise

    def _result(self, result: dict[str, Any]) -> bytes:
        """The result as the SDK's server shapes it for the negotiated revision (its result surface)."""
        assert self._version is not None
        texts = _texts(result)
        if texts is not None:  # what the surface of every 2025 revision makes of it, without the pydantic round
            blocks = [{"text": text, "type": "text"} for text in texts]
            with contextlib.suppress(orjson.JSONEncodeError):  # a lone surrogate: the SDK's serializer decides
                return orjson.dumps({"content": blocks, "isError": result["isError"]})
        try:
            return orjson.dumps(methods.serialize_server_result("tools/call", self._version, result))
        except (ValidationError, orjson.JSONEncodeError):
            raise MCPError(mcp_types.INTERNAL_ERROR, "Handler returned an invalid result") from None

    async def _settle(self) -> None:
        """Once the input ends: the lean calls still running get the grace, then are cancelled and answered."""
        with anyio.move_on_after(self._grace):
            while self._calls:
                await asyncio.wait(list(self._calls.values()))
        self._closing = True
        for task in list(self._calls.values()):
            task.cancel()
        if self._calls:
            await asyncio.wait(list(self._calls.values()))


_TEXT_RESULT: Final = frozenset({"content", "isError", "resultType"})


def _texts(result: dict[str, Any]) -> list[str] | None:
    """The texts of a `result_message` of text blocks only (no structured content), or None for any other."""
    if result.keys() != _TEXT_RESULT or type(result["isError"]) is not bool or result["resultType"] != "complete":
        return None
    texts: list[str] = []
    for block in result["content"]:
        if block.keys() != {"type", "text"} or block["type"] != "text" or not isinstance(block["text"], str):
            return None
        texts.append(block["text"])
    return texts


def _dumped(item: SessionMessage) -> bytes:
    return item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def _error_line(request_id: int | str, error: mcp_types.ErrorData) -> bytes:
    message = mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
