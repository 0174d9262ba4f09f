"""What scopetool's MCP client puts between a server and the SDK's session: caps in bytes, one tool at a time.

* Over stdio, `stdio_transport` replaces the SDK's ``stdio_client``, which joins its whole buffer
  again on every chunk it reads (reading a line grows with its square) and reads a line that never
  ends until memory runs out. It starts the server as the SDK does (its safe default environment,
  standard error to ``errlog``, a process group or job of its own, the SDK's grace period before the
  kill) and reads standard output as bytes: each chunk is split at newlines as it comes, a line's
  chunks are joined once, and a line longer than ``max_message_bytes`` ends the connection and kills
  the server at once. It yields the same pair of memory streams, so ``mcp.Client`` runs on it
  unchanged. A line is parsed as the SDK parses it (one that is not a JSON-RPC message is handed to
  the session as an error value, which the session logs and skips); one nested deeper than the
  SDK's JSON parser allows (200 levels) is parsed by the standard library's, so one deep tool does
  not take its whole ``tools/list`` answer with it.
* Over Streamable HTTP, `cap_responses` caps what the SDK's httpx client reads: a JSON body at
  ``max_message_bytes``, an event stream per event (the SDK's own event cap is set to the same), an
  encoded body (not asked for) refused. The request it answers fails; the connection stays.
* `ToolListing` takes each tool the SDK would refuse (or nested deeper than `MAX_DEFINITION_DEPTH`)
  out of a ``tools/list`` answer and records why, so it does not take the page's other tools with it.
  Over HTTP it holds the raw body of each ``tools/list`` answer until the session has it: when the
  SDK's transport refuses the answer as unparsable (nested past its parser), it is parsed again as
  over stdio, with the standard library's parser, and the page's tools are checked one by one.

A refusal for size is recorded in a `Cut`, from which the client tells a call (or ``connect``) why it failed.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, suppress
from types import TracebackType
from typing import Any, Final, TextIO, cast

import anyio
import httpx2
import mcp_types as types
from anyio.abc import AsyncResource, ByteReceiveStream, Process
from mcp.client import Transport
from mcp.client._transport import ReadStream, TransportStreams, WriteStream
from mcp.client.stdio import PROCESS_TERMINATION_TIMEOUT, StdioServerParameters, get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.os.win32.utilities import (
    ServerProcess,
    close_process_job,
    create_windows_process,
    get_windows_executable_command,
    terminate_windows_process_tree,
)
from mcp.shared.message import SessionMessage
from mcp_types import methods
from pydantic import ValidationError

from ._lean import Lane

logger: Final = logging.getLogger("scopetool.mcp.client")

MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
"""The default cap on one message read from an MCP server: 16 MiB (see `scopetool.mcp.client.connect`)."""

MAX_DEFINITION_DEPTH: Final = 64
"""How deep a listed tool's definition may nest (objects and arrays, the tool itself one): deeper, it is refused.

Far beyond what a written schema nests (32 levels of ``properties``), and well within the 200 levels the
SDK's JSON parser and serializer allow a whole message, so a tool that passes it never again takes
its listing with it, here or in the listing a gateway serves its own clients.
"""

_KILL_GRACE: Final = 2.0
"""Seconds between the group's SIGTERM and its SIGKILL (the SDK's own grace)."""
_FLUSH: Final = 0.5
"""Seconds the writer has to send what it accepted before standard input closes (as the SDK)."""


class MessageTooLargeError(ConnectionError):
    """An MCP server sent a message longer than the connection's cap (or one whose size nothing bounds)."""

    def __init__(self, limit: int, text: str | None = None) -> None:
        super().__init__(text or f"the MCP server sent a message over {limit} bytes (the cap, max_message_bytes)")
        self.limit = limit


class Cut:
    """The messages a connection refused for their size, as the client that owns it needs to know.

    A call compares `count` before and after: a call that failed while it grew failed for a message's size.
    """

    __slots__ = ("count", "error")

    def __init__(self) -> None:
        self.count = 0
        """How many messages were refused."""
        self.error: MessageTooLargeError | None = None
        """The last refusal, or None."""

    def note(self, error: MessageTooLargeError) -> None:
        """Record one refused message."""
        self.count += 1
        self.error = error


def parse_message(line: bytes) -> SessionMessage | Exception:
    """One line as the SDK parses it, or the error, as a value for the session to surface."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValidationError as error:
        if not any("recursion limit" in str(problem.get("msg", "")) for problem in error.errors()):
            return error
    try:  # nested deeper than pydantic's JSON parser goes: the standard library's parser goes deeper
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(json.loads(line), by_name=False))
    except (ValueError, RecursionError) as error:
        return error


def _problem_of(error: Exception) -> str:
    """What is wrong with a line, without the line (pydantic's text quotes the input)."""
    if isinstance(error, ValidationError):
        return str(error.errors()[0]["msg"])
    return f"{type(error).__name__}: {str(error)[:200]}"


async def read_lines(stream: ByteReceiveStream, limit: int) -> AsyncGenerator[bytes]:
    """Each line of `stream` (without its newline), once whole; `MessageTooLargeError` past `limit` bytes.

    A line's chunks are kept in a list and joined once, so reading is linear in the line's size.
    """
    pending: list[bytes] = []
    size = 0
    async for chunk in stream:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            size += end - start
            if size > limit:
                raise MessageTooLargeError(limit)
            pending.append(chunk[start:end])
            line = b"".join(pending)
            pending.clear()
            size = 0
            start = end + 1
            yield line
        size += len(chunk) - start
        if size > limit:
            raise MessageTooLargeError(limit)
        if start < len(chunk):
            pending.append(chunk[start:])


@asynccontextmanager
async def stdio_transport(
    server: StdioServerParameters,
    *,
    name: str,
    errlog: TextIO,
    max_message_bytes: int,
    cut: Cut,
    lane: Lane | None = None,
) -> AsyncGenerator[TransportStreams]:
    """Start `server` (connected as `name`) and speak to it over its standard input and output; stop it on exit.

    A message over `max_message_bytes` closes the streams (the session's pending requests fail), kills
    the server and is recorded in `cut`. A line that is not a JSON-RPC message is logged (a warning
    naming the server) and handed to the session as the SDK's reader hands it. With a `lane`, the
    lines that answer its calls go to it, unparsed by the SDK (`scopetool.mcp._lean`).
    """
    process = await _start(server, errlog)
    receive_send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    send, send_receive = anyio.create_memory_object_stream[SessionMessage](0)
    written, read = anyio.Event(), anyio.Event()

    async def reader() -> None:
        assert process.stdout is not None
        async with receive_send:
            try:
                async for line in read_lines(process.stdout, max_message_bytes):
                    if line.strip() and (lane is None or not lane.claim(line)):
                        parsed = parse_message(line)
                        if isinstance(parsed, Exception):
                            logger.warning(
                                "MCP server %r sent a line of %d bytes that is not a JSON-RPC message: %s",
                                name,
                                len(line),
                                _problem_of(parsed),
                            )
                        await receive_send.send(parsed)
            except MessageTooLargeError as error:
                cut.note(error)
                with anyio.CancelScope(shield=True):
                    await _kill(process)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
                pass  # the session closed its end, or the pipe broke: the session sees the stream end
            finally:
                if lane is not None:
                    lane.close(ConnectionError(f"the connection to MCP server {name!r} closed"))
                read.set()

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with send_receive:
                async for message in send_receive:
                    if lane is not None:
                        lane.learn(message)
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await receive_send.aclose()  # the server stopped reading: end the session's wait on it
        finally:
            written.set()

    if lane is not None:
        assert process.stdin is not None
        lane.attach(process.stdin.send)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        try:
            yield receive, send
        finally:
            with anyio.CancelScope(shield=True):  # every wait in here is bounded: the process never leaks
                receive.close()
                send.close()
                with anyio.move_on_after(_FLUSH):
                    await written.wait()
                tasks.cancel_scope.cancel()  # the reader stops: what the server still writes is _stop's to read
                with anyio.move_on_after(_FLUSH):
                    await read.wait()
                await _stop(process)


async def _start(server: StdioServerParameters, errlog: TextIO) -> ServerProcess:
    """Start the server as the SDK's ``stdio_client`` does: its safe environment, a kill scope of its own.

    A new session (process group) on POSIX, a Job Object on Windows.
    """
    env = get_default_environment() | (server.env or {})
    if sys.platform == "win32":  # pragma: no cover - CI runs on POSIX
        command = get_windows_executable_command(server.command)
        return await create_windows_process(command, server.args, env, errlog, server.cwd)
    return await anyio.open_process(
        [server.command, *server.args], env=env, stderr=errlog, cwd=server.cwd, start_new_session=True
    )


async def _stop(process: ServerProcess) -> None:
    """Close standard input, give the server the SDK's grace period to exit, then kill its process tree."""
    assert process.stdin is not None and process.stdout is not None
    await _close(process.stdin)
    if not await _exited(process, PROCESS_TERMINATION_TIMEOUT):
        await _kill(process, _KILL_GRACE)
        await _exited(process, _KILL_GRACE)
    close_process_job(process)
    await _drain(process.stdout)
    await _close(process.stdout)


async def _drain(stream: ByteReceiveStream) -> None:
    """Read `stream` to its end, for at most the kill's grace (a survivor of the kill may hold it open).

    On asyncio a pipe nobody reads is paused once its buffer fills, and a paused pipe never sees its end:
    it would stay open, and so would the process's transport (a `ResourceWarning` when it is collected).
    """
    with anyio.move_on_after(_KILL_GRACE), suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
        while True:
            await stream.receive()


async def _exited(process: ServerProcess, seconds: float) -> bool:
    """Whether the process exited within `seconds` (not ``wait()``: on asyncio it also waits for every pipe)."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None


async def _close(stream: AsyncResource) -> None:
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.aclose()


async def _kill(process: ServerProcess, grace: float = 0) -> None:
    """Kill the server's whole process tree (POSIX: SIGTERM, then SIGKILL after `grace` seconds)."""
    if sys.platform == "win32":  # pragma: no cover - CI runs on POSIX
        await terminate_windows_process_tree(process)
    else:
        assert isinstance(process, Process)
        await terminate_posix_process_tree(process, grace)


# -- Streamable HTTP ---------------------------------------------------------------------------------


class ResponseTooLargeError(httpx2.StreamError):
    """A response body (a JSON message, or one event of an event stream) went over the connection's cap.

    An ``httpx2.StreamError``, so the SDK's transport fails the one request it answers, as it does a
    body it cannot read.
    """


def cap_responses(client: httpx2.AsyncClient, limit: int, cut: Cut, listing: ToolListing) -> None:
    """Cap every response `client` reads: a JSON body at `limit` bytes, an event stream at `limit` per event.

    The client asks for unencoded bodies (``Accept-Encoding: identity``) and refuses an encoded one, whose
    decoded size its raw size does not bound. A refusal is recorded in `cut`. The raw answer to a
    ``tools/list`` request is held for `listing`, in case the SDK cannot parse it.
    """
    client.headers["Accept-Encoding"] = "identity"

    async def hook(response: httpx2.Response) -> None:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        events = response.headers.get("content-type", "").lower().startswith("text/event-stream")
        if not isinstance(response.stream, httpx2.AsyncByteStream):  # pragma: no cover - an async client's
            return
        response.stream = _CappedBody(
            response.stream,
            limit,
            cut,
            events=events,
            encoded=encoding != "identity",
            held=listing.hold(response.request, events=events),
        )

    client.event_hooks["response"].append(hook)


class _CappedBody(httpx2.AsyncByteStream):
    """A response's raw body, refused past the cap (counted per event in an event stream)."""

    def __init__(
        self,
        body: httpx2.AsyncByteStream,
        limit: int,
        cut: Cut,
        *,
        events: bool,
        encoded: bool,
        held: HeldAnswer | None,
    ) -> None:
        self._body = body
        self._limit = limit
        self._cut = cut
        self._events = events
        self._encoded = encoded
        self._held = held

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        tail = b""
        async for chunk in self._body:
            if self._encoded:
                raise self._refuse(
                    "the MCP server sent an encoded (compressed) body it was not asked for, whose size on the wire "
                    f"does not bound it (the cap is {self._limit} bytes, max_message_bytes)"
                )
            event_start = -1
            if self._events:  # an event ends at a blank line: count from the last one
                window = tail + chunk
                boundary = max(_after(window, b"\n\n"), _after(window, b"\n\r\n"))
                size = size + len(chunk) if boundary < 0 else len(window) - boundary
                event_start = -1 if boundary < 0 else max(boundary - len(tail), 0)
                tail = window[-2:]
            else:
                size += len(chunk)
            if size > self._limit:
                raise self._refuse(None)
            if self._held is not None:
                self._held.add(chunk, event_start)
            yield chunk
        if self._held is not None:
            self._held.whole = True

    def _refuse(self, text: str | None) -> ResponseTooLargeError:
        error = MessageTooLargeError(self._limit, text)
        self._cut.note(error)
        if self._held is not None:  # a part of an oversize answer is not an answer
            self._held.drop()
        return ResponseTooLargeError(str(error))

    async def aclose(self) -> None:
        await self._body.aclose()


def _after(data: bytes, separator: bytes) -> int:
    """The index just past the last `separator` in `data`, or -1."""
    index = data.rfind(separator)
    return -1 if index < 0 else index + len(separator)


class HeldAnswer:
    """The raw body of an answer to ``tools/list`` over HTTP, held in case the SDK's parser refuses it.

    Of an event stream, only what the SDK may not have parsed yet is held: from the start of the event
    in progress when the last chunk came, so what is held stays under the cap plus one chunk.
    """

    __slots__ = ("_chunks", "_event_start", "_events", "whole")

    def __init__(self, *, events: bool) -> None:
        self._events = events
        self._chunks: list[bytes] = []
        self._event_start = -1
        self.whole = False
        """Whether the body was read to its end."""

    def add(self, chunk: bytes, event_start: int) -> None:
        """Hold `chunk`, in which the last event begun starts at `event_start` (-1: none begins in it)."""
        if self._event_start >= 0:  # what came before the last chunk's last event was parsed already
            self._chunks[:] = [self._chunks[-1][self._event_start :]]
        self._chunks.append(chunk)
        self._event_start = event_start

    def drop(self) -> None:
        """Hold nothing more: the answer was refused."""
        self._chunks.clear()
        self.whole = False

    def messages(self) -> Iterator[bytes]:
        """Each message held: the body read whole, or the data of each event (as the SDK reads them)."""
        data = b"".join(self._chunks)
        if not self._events:
            if self.whole:
                yield data
            return
        stream = httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=data, request=httpx2.Request("POST", "/")
        )
        for event in httpx2.EventSource(stream, max_event_size=None):
            if event.event == "message" and event.data:
                yield event.data.encode()


# -- tools/list, one tool at a time ------------------------------------------------------------------


class ToolListing:
    """Takes each invalid tool out of a ``tools/list`` answer, so it does not take its page with it.

    The SDK validates a ``tools/list`` result whole: one tool it refuses refuses every tool of the
    page. Seen from between the transport and the session, each tool of an answer to a ``tools/list``
    request is validated on its own (as the SDK would, for the revision `version` says was negotiated);
    an invalid one is taken out and recorded in `refused` with its reason.
    """

    __slots__ = ("_held", "_pending", "_version", "refused")

    def __init__(self, version: Callable[[], str | None] = lambda: None) -> None:
        self._pending: set[types.RequestId] = set()
        self._held: dict[types.RequestId, HeldAnswer] = {}
        self._version = version
        self.refused: dict[str, str] = {}
        """Each tool taken out of an answer, and why."""

    def sent(self, item: SessionMessage) -> None:
        """Note a ``tools/list`` request, whose answer is watched."""
        message = item.message
        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/list":
            self._pending.add(message.id)

    def hold(self, request: httpx2.Request, *, events: bool) -> HeldAnswer | None:
        """Where to hold the raw answer to `request` (HTTP), if it is a watched ``tools/list`` request."""
        if b'"tools/list"' not in request.content:  # a call's arguments may be long: parse only a listing
            return None
        message = json.loads(request.content)  # the SDK's own request, from the session's message
        if message.get("method") != "tools/list" or message.get("id") not in self._pending:
            return None
        held = self._held[message["id"]] = HeldAnswer(events=events)
        return held

    def received(self, item: SessionMessage | Exception) -> SessionMessage | Exception:
        """`item`, with the invalid tools of a ``tools/list`` answer taken out.

        A parse error the SDK's HTTP transport answered in place of a held answer is replaced by that
        answer, parsed as over stdio, if it is one.
        """
        message = item.message if isinstance(item, SessionMessage) else None
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError) or message.id not in self._pending:
            return item
        self._pending.discard(message.id)
        held = self._held.pop(message.id, None)
        if isinstance(message, types.JSONRPCError):
            answer = _answer_in(held) if held is not None and message.error.code == types.PARSE_ERROR else None
            if answer is None:
                return item
            message = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=answer.result)
            item = SessionMessage(message, metadata=cast("SessionMessage", item).metadata)
        result = message.result
        tools: object = result.get("tools")
        if not isinstance(tools, list) or self._problem({**result, "tools": []}) is not None:
            return item  # the page itself is wrong, not one of its tools: the SDK refuses it as it is
        kept: list[object] = []
        for tool in cast("list[object]", tools):
            problem = self._problem({**result, "tools": [tool]})
            if problem is None:
                kept.append(tool)
            else:
                name = cast("dict[str, object]", tool).get("name") if isinstance(tool, dict) else None
                self.refused[name if isinstance(name, str) else repr(name)] = problem
        if len(kept) == len(tools):  # pyright: ignore[reportUnknownArgumentType]
            return item
        answer = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result={**result, "tools": kept})
        return SessionMessage(answer, metadata=cast("SessionMessage", item).metadata)

    def _problem(self, page: dict[str, Any]) -> str | None:
        """Why the SDK would refuse `page` (a listing of one tool, or none), or its tool nests too deep."""
        if _depth_over(page.get("tools"), MAX_DEFINITION_DEPTH + 1):  # the list is one level more
            return f"its definition nests deeper than {MAX_DEFINITION_DEPTH} levels (MAX_DEFINITION_DEPTH)"
        try:
            methods.validate_server_result("tools/list", self._version() or "2025-11-25", page)
            types.ListToolsResult.model_validate(page, by_name=False)
        except ValidationError as error:
            first = error.errors()[0]
            where = first["loc"][2:] if first["loc"][:2] == ("tools", 0) else first["loc"]
            return f"it is not a valid MCP tool: {'.'.join(str(part) for part in where)}: {first['msg']}"
        except (KeyError, ValueError):  # pragma: no cover - a revision the SDK negotiated but cannot check
            pass  # the SDK decides on the whole page, as it would without this check
        return None


def _answer_in(held: HeldAnswer) -> types.JSONRPCResponse | None:
    """The first response in what `held` holds, parsed as a stdio line is (deeper than the SDK's parser goes)."""
    for data in held.messages():
        parsed = parse_message(data)
        if isinstance(parsed, SessionMessage) and isinstance(parsed.message, types.JSONRPCResponse):
            return parsed.message
    return None


class _WatchedRead:
    """A transport's read stream, each item passed through `ToolListing.received`."""

    def __init__(self, stream: ReadStream[SessionMessage | Exception], listing: ToolListing) -> None:
        self._stream = stream
        self._listing = listing

    @property
    def last_context(self) -> object:
        """The sender's context of the last item, where the transport keeps one."""
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        return self._listing.received(await self._stream.receive())

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedRead:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _WatchedWrite:
    """A transport's write stream, each message shown to `ToolListing.sent` first."""

    def __init__(self, stream: WriteStream[SessionMessage], listing: ToolListing) -> None:
        self._stream = stream
        self._listing = listing

    async def send(self, item: SessionMessage, /) -> None:
        self._listing.sent(item)
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _WatchedWrite:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def watched(transport: Transport, listing: ToolListing) -> AsyncGenerator[TransportStreams]:
    """`transport`, its ``tools/list`` answers passed through `listing`."""
    async with transport as (read, write):
        yield _WatchedRead(read, listing), _WatchedWrite(write, listing)


def _depth_over(value: object, limit: int) -> bool:
    """Whether `value` nests objects and arrays more than `limit` deep (walked without recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[object] = ()
        if isinstance(node, dict):
            children = cast("dict[str, object]", node).values()
        elif isinstance(node, list):
            children = cast("list[object]", node)
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
