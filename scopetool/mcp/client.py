"""A strict MCP client: another server's tools as scopetool `Tool`s, admitted by their own schemas.

`connect(spec, name=...)` starts (stdio) or opens (Streamable HTTP) one MCP server with the official
MCP SDK's client, lists every tool (following ``nextCursor``), checks each definition against a
`PinFile` when one is given, and hands the accepted tools out as `RemoteTool`s. Each is a scopetool
`Tool`: bind it, put it in a `Registry`, export it to any provider, run it under the Driver.

What a remote tool promises and enforces:

* Its input schema is the server's ``inputSchema``, closed to unknown members at the root where the
  root lists ``properties`` and says nothing of others. `Contract.prepare` enforces it as it does
  every hand-written schema (jsonschema-rs, formats asserted), after the size cap and the I-JSON
  parse, so arguments the schema refuses never reach the server. A tool whose schema the contract
  cannot enforce (not a valid schema, a remote ``$ref``, a ``format`` the validator does not know) or
  whose name scopetool cannot carry is refused (`MCPClient.refused` says why), never half-enforced.
* Its ``outputSchema`` is the definition's output schema, checked on ``structuredContent`` (the
  output's `details`).
* Its effect: none, unless the server is ``trusted``; then ``readOnlyHint`` is `Effect.SAFE` and
  ``idempotentHint`` (not read-only) is `Effect.IDEMPOTENT`. ``destructiveHint`` changes no replay
  promise, so it maps to nothing.

Outcomes (what the model may see is public; causes stay private):

* A result: ``content`` as `Output.content` (text as `TextBlock`; image, audio and embedded blob
  resources as inline `MediaBlock`; ``resource_link`` as a `MediaBlock` by URI; an embedded text
  resource as its text), ``structuredContent`` as `Output.details`.
* ``isError: true``: a `Failure` whose output is the tool's own content (the remote tool wrote it
  for the model, as MCP intends).
* A JSON-RPC error (whatever its code), a broken output schema, a result that is not valid MCP, a
  dead or closed connection, no answer within the call timeout: a `Failure` with a fixed text
  (`REFUSED`, `BROKEN_OUTPUT`, `INVALID_RESULT`, `UNAVAILABLE`, `TIMED_OUT`); the cause is the
  error, private.
* Progress notifications: `report_progress`, in the calling task.
* Tasks (``io.modelcontextprotocol/tasks``, declared on every request): a call the server answers
  with a task is followed (``tasks/get`` within the call timeout, `scopetool.mcp._task_client`) to
  its result; a task's form elicitation is an `InputRequest` whose continuation answers it with
  ``tasks/update``.
* Elicitation (form mode): an `InputRequest` result. Its prompt is the server's message, its
  response schema the MCP ``ElicitResult`` (``{"action": "accept", "content": {...}}`` with the
  server's requested schema, or ``decline`` / ``cancel``). On 2026-07-28 the server's
  ``input_required`` result is stateless: the continuation state holds the server's
  ``requestState``, and the resumed call retries with the answer, in any process. On earlier
  revisions the server asks in the middle of the call: the remote call is kept open in this
  process and the continuation resumes it, so it must be answered while this client is
  connected (a resumption after that is a `Failure`, `EXPIRED`). An elicitation a legacy server
  sends while more than one call is in flight on the connection cannot be told apart, and is
  declined; a URL-mode elicitation is declined.

Bounds (the two caps in bytes are `connect` arguments, and keys of the gateway's config):

* Every message read from the server is capped at ``max_message_bytes`` (`MAX_MESSAGE_BYTES`, 16 MiB):
  a stdio line (read in linear time by scopetool's own transport; past the cap the connection ends
  and the server is killed), a JSON response body or one event of an event stream over HTTP. A call
  that meets the cap fails with `TOO_LARGE` (its private cause a `MessageTooLargeError`); ``connect``
  with a `ConnectError` naming the server and the cap. Within it, the binding's result cap
  (`scopetool.MAX_OUTPUT_BYTES`, 8 MiB) applies.
* Each text of a tool's definition (its description, title, and every description and title in its
  schemas) is capped at ``max_description_bytes`` (`MAX_DESCRIPTION_BYTES`, 16 KiB): a tool with a
  longer one is refused, before the pins see it.
* A tool the SDK would refuse (not valid MCP), or nested deeper than `MAX_DEFINITION_DEPTH` (64),
  is refused alone, not with its listing.
* A whole listing (every page, the tools as JSON and the cursors) is capped at ``max_listing_bytes``
  (`MAX_LISTING_BYTES`, 64 MiB) and must end within ``list_timeout``; `MAX_TOOLS` (65,536 tools) is
  a safety net for the memory a tool takes beyond its bytes. Past any of them ``connect`` (or the
  re-list) fails with a `ConnectError` naming the server and the bound.

The interface agreed with the gateway's authors holds as agreed (`StdioServer`, `HttpServer`,
`server_spec`, `connect`, `MCPClient` with `name`, `tools`, `refused`, `definitions`). Beyond it:
`MCPClient.missing`, `protocol_version`, `session` and `refresh` (also run on each tool list change the
server announces: ``notifications/tools/list_changed`` on a 2025 session, an event on 2026-07-28's
``subscriptions/listen``; a burst of them is one re-list, and re-lists are at least ``relist_interval``
apart, `RELIST_INTERVAL`); `connect`'s ``errlog``, ``on_tools_changed`` (`ToolsChanged`) and its time
bounds (``start_timeout``, ``list_timeout``, ``call_timeout``: `START_TIMEOUT`, `LIST_TIMEOUT`,
`CALL_TIMEOUT` by default); `RemoteTool.server` and `listed`; `PinFile.accept(server, tools)` takes
one name or several (None: every pending one).

This module imports the MCP SDK: ``pip install 'scopetool[mcp]'``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import math
import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TextIO, TypeAlias, cast, final

from .._extras import missing_dependency

try:
    import anyio
    import mcp_types as types
    from anyio.abc import TaskGroup, TaskStatus
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp import Client
    from mcp.client.extension import UnexpectedClaimedResult
    from mcp.client.session import (
        ClientRequestContext,
        _clamp_inbound_ttl,  # pyright: ignore[reportPrivateUsage] - the SDK's own result checks, for the lean path
        _later_revision_fields,  # pyright: ignore[reportPrivateUsage]
    )
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared._otel import inject_trace_context
    from mcp.shared.exceptions import MCPError
    from mcp_types import methods
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    from pydantic import ValidationError
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

from .._contract import Contract, Invocation
from .._definition import NAME_PATTERN, Definition, Effect
from .._errors import InvalidInvocationError, InvalidOutputError, InvalidToolError, ScopetoolError
from .._input import InputRequest
from .._json import canonical_json, is_array, is_object
from .._outcome import Failure, FailureKind
from .._output import ContentBlock, MediaBlock, Output, Result, TextBlock
from .._progress import Progress, report_progress
from .._schema import compile_schema
from ._lean import MAX_QUEUED_PROGRESS, Events, Lane, LaneEvent, on_asyncio
from ._task_client import TaskCancelledError, TaskCreated, TaskInput, TasksClientExtension, answer_task, follow_task
from ._transport import (
    MAX_DEFINITION_DEPTH,
    MAX_MESSAGE_BYTES,
    Cut,
    MessageTooLargeError,
    ToolListing,
    cap_responses,
    stdio_transport,
    watched,
)
from .pins import PinFile

__all__ = [
    "BROKEN_OUTPUT",
    "CALL_TIMEOUT",
    "EXPIRED",
    "INVALID_RESULT",
    "LIST_TIMEOUT",
    "MAX_DEFINITION_DEPTH",
    "MAX_DESCRIPTION_BYTES",
    "MAX_LISTING_BYTES",
    "MAX_MESSAGE_BYTES",
    "MAX_TOOLS",
    "REFUSED",
    "RELIST_INTERVAL",
    "RELIST_SETTLE",
    "START_TIMEOUT",
    "TIMED_OUT",
    "TOO_LARGE",
    "UNAVAILABLE",
    "ConnectError",
    "HttpServer",
    "MCPClient",
    "MessageTooLargeError",
    "RemoteTool",
    "ServerSpec",
    "StdioServer",
    "ToolsChanged",
    "connect",
    "server_spec",
]

logger: Final = logging.getLogger("scopetool.mcp.client")

START_TIMEOUT: Final = 30.0
"""Seconds `connect` gives a server, by default, to start and complete the MCP handshake.

A local process starts in well under a second and a remote endpoint answers in a few; 30 s leaves room
for a cold interpreter or a slow network, and still reports a server that will never answer while
someone is waiting. A command that fetches itself first (``uvx``, ``npx``) may need more on its
first run: pass ``start_timeout``."""
LIST_TIMEOUT: Final = 30.0
"""Seconds `connect` gives a server, by default, to list its tools: the whole listing, every page.

A listing is a read of definitions the server already holds; even hundreds of tools over many pages
take well under a second, so 30 s is a generous bound on a server that stopped answering."""
CALL_TIMEOUT: Final = 300.0
"""Seconds a remote call waits, by default, for the server's answer before it is a `Failure` (`TIMED_OUT`).

Tools legitimately run long (a build, a crawl, a query over a large store), so the bound is minutes, not
seconds; five minutes is past what a person waiting on a model's turn tolerates, so a server still
silent then is treated as hung. Progress notifications do not extend it. The time a call spends
suspended on an in-call elicitation (waiting for a person) is not counted."""

RELIST_INTERVAL: Final = 1.0
"""The least seconds, by default, between two re-lists a server's tool list changes prompt.

The changes said meanwhile are one re-list, at the end of the interval: a server that announces changes
without end costs its client one listing a second, never one per announcement, and no memory per
announcement. A second is long enough for that and short enough that a person does not notice."""
RELIST_SETTLE: Final = 0.05
"""Seconds a client waits after a change is announced before it re-lists: a burst of announcements is one."""

UNAVAILABLE: Final = 'error: tool "{name}" failed: its MCP server is not reachable'
"""The public text of a call whose connection is closed or broke (the server died, the transport failed)."""
REFUSED: Final = 'error: tool "{name}" failed: its MCP server refused the call'
"""The public text of a call the server answered with a JSON-RPC error, any code (its message stays private)."""
TIMED_OUT: Final = 'error: tool "{name}" timed out: its MCP server did not answer within {seconds:g} s'
"""The public text of a call the server did not answer within the call timeout (the remote call is cancelled)."""
BROKEN_OUTPUT: Final = (
    'error: tool "{name}" failed: its MCP server returned a result that breaks the tool\'s output schema'
)
"""The public text of a result whose ``structuredContent`` breaks the tool's own ``outputSchema``."""
INVALID_RESULT: Final = 'error: tool "{name}" failed: its MCP server returned a result that is not valid MCP'
"""The public text of a result the SDK cannot parse, or whose content scopetool cannot carry (media not base64)."""
TOO_LARGE: Final = 'error: tool "{name}" failed: its MCP server sent a message over {limit} bytes'
"""The public text of a call whose answer (or another message meanwhile) was over ``max_message_bytes``."""
MAX_DESCRIPTION_BYTES: Final = 16 * 1024
"""The default cap on each text of a tool's definition (description, title, schema descriptions): 16 KiB.

A tool's description is sent with every request the model gets: 16 KiB is already about 4,000 tokens
of its context for one tool. A longer text is a document, not a description.
"""
MAX_LISTING_BYTES: Final = 64 * 1024 * 1024
"""The default cap on one whole listing of a server's tools, in bytes: 64 MiB (`ConnectError` past it).

What counts is each tool's JSON as listed and each page's cursor, over every page. The tools of the
real servers measured in ``tests/data/real_tool_schemas`` are under 5 KB each, so 10,000 of the
largest of them fit, with room: the catalogs tool search serves. It bounds what one listing holds in
memory (the definitions are kept as listed), and a server that pages without end.
"""
MAX_TOOLS: Final = 65536
"""The most tools one server may list (over every page): a safety net behind `MAX_LISTING_BYTES`.

A tool costs memory its bytes do not count (its definition, contract and compiled schema), so a
listing of very small tools is bounded by their number too; 65,536 is six times the 10,000-tool
catalogs tool search is built for, so no real catalog meets it first.
"""
EXPIRED: Final = 'error: tool "{name}" failed: the MCP server\'s request for input is no longer pending'
"""The public text of a resumption whose in-call elicitation is gone (another process, or the client closed)."""

_OCTET: Final = "application/octet-stream"
_OPEN: Final = (
    "additionalProperties",
    "patternProperties",
    "unevaluatedProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "$ref",
    "$dynamicRef",
    "if",
    "not",
    "dependentSchemas",
)
"""Root keywords that say (or can change) which members beyond ``properties`` are admitted: then left open."""
_ELICITATION: Final = "elicitation"
_CLOSED: Final = ("Connection closed", "SSE stream ")
"""How the SDK's own `CONNECTION_CLOSED` errors begin: -32000 is also the code servers use most for their
own errors (JSON-RPC's generic server error), so the code alone cannot say the connection is gone."""
_INPUT_REQUIRED: Final = "input_required"
_TASK_INPUT: Final = "task_input"
_ABANDON_WRITE_TIMEOUT: Final = 5.0
"""Seconds the courtesy ``notifications/cancelled`` of an abandoned call may take to write (the SDK's own bound)."""


class ConnectError(ScopetoolError, RuntimeError):
    """An MCP server could not be started, initialized or listed; the message names the server."""


@final
@dataclass(frozen=True, slots=True)
class StdioServer:
    """An MCP server started as a child process, spoken to over its standard input and output."""

    command: str
    """The program to run."""
    args: tuple[str, ...] = ()
    """Its arguments."""
    env: Mapping[str, str] | None = None
    """Environment variables set over the SDK's default (safe) environment."""
    cwd: str | None = None
    """The working directory, or None for this process's."""


@final
@dataclass(frozen=True, slots=True)
class HttpServer:
    """An MCP server at a Streamable HTTP endpoint."""

    url: str
    """The endpoint, such as ``http://127.0.0.1:8000/mcp``."""
    headers: Mapping[str, str] | None = None
    """HTTP headers sent with every request (an ``Authorization`` header, say)."""


ServerSpec: TypeAlias = StdioServer | HttpServer
"""How to reach one MCP server."""

_STDIO_KEYS: Final = frozenset({"type", "command", "args", "env", "cwd"})
_HTTP_KEYS: Final = frozenset({"type", "url", "headers"})


def server_spec(entry: Mapping[str, Any]) -> ServerSpec:
    """One entry of the ``mcpServers`` JSON shape MCP clients use, as a `ServerSpec`.

    ``{"command": ..., "args": [...], "env": {...}, "cwd": ...}`` is a stdio server; ``{"url": ...,
    "headers": {...}}`` a Streamable HTTP one. ``"type"`` may say ``"stdio"``, ``"http"`` or
    ``"streamable-http"``. Only these connection keys are read: a caller with keys of its own (a
    gateway's policy) takes them out first.

    Raises:
        ValueError: a key is unknown or a value has the wrong type; the message names it.
    """
    if not isinstance(entry, Mapping):
        raise ValueError(f"an MCP server entry must be a JSON object, not {type(entry).__name__}")
    kind = entry.get("type")
    if kind is not None and kind not in ("stdio", "http", "streamable-http"):
        raise ValueError(f'"type": {kind!r} is not supported; use "stdio", "http" or "streamable-http"')
    if "command" in entry and "url" in entry:
        raise ValueError('an MCP server entry has "command" (stdio) or "url" (HTTP), not both')
    if "url" in entry or kind in ("http", "streamable-http"):
        _known(entry, _HTTP_KEYS)
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f'"url" must be an http:// or https:// URL, not {url!r}')
        return HttpServer(url=url, headers=_strings(entry.get("headers"), "headers"))
    _known(entry, _STDIO_KEYS)
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise ValueError('an MCP server entry needs "command" (a non-empty string) or "url"')
    args: object = entry.get("args", [])
    if not is_array(args) or not all(isinstance(arg, str) for arg in args):
        raise ValueError('"args" must be a list of strings')
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ValueError('"cwd" must be a string')
    return StdioServer(
        command=command,
        args=tuple(args),
        env=_strings(entry.get("env"), "env"),
        cwd=cwd,  # pyright: ignore[reportUnknownArgumentType]
    )


def _known(entry: Mapping[str, Any], keys: frozenset[str]) -> None:
    unknown = sorted(set(entry) - keys)
    if unknown:
        raise ValueError(
            f"unknown key {unknown[0]!r} in an MCP server entry (expected some of {', '.join(sorted(keys))})"
        )


def _strings(value: object, key: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str)
        for k, v in value.items()  # pyright: ignore[reportUnknownVariableType]
    ):
        raise ValueError(f'"{key}" must be an object of strings')
    return dict(value)  # pyright: ignore[reportUnknownArgumentType]


# -- the remote tool ---------------------------------------------------------------------------------


@final
class RemoteTool:
    """One tool of a connected MCP server, as a scopetool `Tool` (made by `connect`)."""

    __slots__ = ("_client", "_definition", "_listed")

    def __init__(self, client: MCPClient, definition: Definition, listed: dict[str, Any]) -> None:
        self._client = client
        self._definition = definition
        self._listed = listed

    @property
    def server(self) -> str:
        """The name the server was connected under."""
        return self._client.name

    def definition(self) -> Definition:
        """The definition made once from the server's listing (read once, at `bind`)."""
        return self._definition

    @property
    def listed(self) -> dict[str, Any]:
        """A copy of the tool's definition exactly as the server listed it (JSON)."""
        copied: dict[str, Any] = json.loads(json.dumps(self._listed))
        return copied

    async def call(self, invocation: Invocation) -> Result:
        """Send one admitted call to the server and map its result (see the module's docstring).

        Raises:
            InvalidInvocationError: `invocation` was admitted by another tool's contract.
        """
        if invocation.definition != self._definition:
            raise InvalidInvocationError(
                f"the invocation of {invocation.name!r} does not belong to remote tool {self._definition.name!r}"
            )
        return await self._client._call(self._definition.name, invocation)  # pyright: ignore[reportPrivateUsage]

    def __repr__(self) -> str:
        return f"RemoteTool(server={self._client.name!r}, name={self._definition.name!r})"


def remote_definition(listed: Mapping[str, Any], *, trusted: bool) -> Definition:
    """The scopetool definition of one listed MCP tool, or `InvalidToolError` naming what cannot be enforced."""
    name = listed.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InvalidToolError(f"the name {name!r} is not a scopetool tool name ([A-Za-z0-9_-], 1 to 64 characters)")
    schema = listed.get("inputSchema")
    if not isinstance(schema, dict):
        raise InvalidToolError("its inputSchema is not a JSON object")
    schema = dict(cast("dict[str, Any]", schema))
    if "properties" in schema and not any(key in schema for key in _OPEN):
        schema["additionalProperties"] = False
    output: dict[str, Any] | None = listed.get("outputSchema")
    checked: tuple[tuple[str, dict[str, Any] | None], ...] = (("inputSchema", schema), ("outputSchema", output))
    for what, value in checked:
        if value is not None:
            _enforceable(value, what)
    description = listed.get("description") or ""
    try:
        return Definition(
            name=name,
            description=description if isinstance(description, str) else "",
            input_schema=schema,
            output_schema=output,
            effect=_effect(listed.get("annotations")) if trusted else None,
        )
    except ScopetoolError as error:
        raise InvalidToolError(str(error)) from None


def _enforceable(schema: object, what: str) -> None:
    """Refuse a schema the contract would not enforce whole: invalid, or with a format it does not know."""
    compile_schema(schema, what, InvalidToolError)
    import jsonschema_rs  # noqa: PLC0415 - the hand-written-schema extra, loaded where it is needed

    try:
        jsonschema_rs.validator_for(
            cast("dict[str, Any] | bool", schema), validate_formats=True, offline=True, ignore_unknown_formats=False
        )
    except (jsonschema_rs.ValidationError, ValueError) as problem:
        first = str(problem).splitlines()[0]
        raise InvalidToolError(f'{what}: keyword "format": {first} (it would not be enforced)') from None


def _effect(annotations: object) -> Effect | None:
    if not is_object(annotations):
        return None
    if annotations.get("readOnlyHint") is True:
        return Effect.SAFE
    if annotations.get("idempotentHint") is True:
        return Effect.IDEMPOTENT
    return None


_TEXTS: Final = ("description", "title")


def _oversize_text(listed: Mapping[str, Any], limit: int) -> str | None:
    """Which text of a listed tool is over `limit` UTF-8 bytes, or None.

    Its texts: its description and title, its annotations' title, each description and title in its schemas.
    """
    places: list[tuple[str, object]] = [(key, listed.get(key)) for key in _TEXTS]
    annotations = listed.get("annotations")
    if is_object(annotations):
        places.append(("annotations.title", annotations.get("title")))
    for what in ("inputSchema", "outputSchema"):
        stack: list[object] = [listed.get(what)]
        while stack:  # iterative: a schema nested as deep as the parser allowed must not exhaust the stack
            node = stack.pop()
            if is_object(node):
                places.extend((f"{what} {key}", node.get(key)) for key in _TEXTS)
                stack.extend(node.values())
            elif is_array(node):
                stack.extend(node)
    for where, text in places:
        if isinstance(text, str) and (len(text) > limit or len(text.encode("utf-8", "surrogatepass")) > limit):
            return where
    return None


# -- results -----------------------------------------------------------------------------------------


def result_output(result: types.CallToolResult) -> Output:
    """A ``CallToolResult``'s content and structured content as an `Output`."""
    blocks: list[ContentBlock] = []
    for item in result.content:
        block = _block(item)
        if block is not None:
            blocks.append(block)
    try:
        details = None if result.structured_content is None else canonical_json(result.structured_content)
    except ValueError as error:  # NaN, Infinity or a lone surrogate the SDK's parser let through
        raise InvalidOutputError(f"structuredContent is not I-JSON: {error}") from None
    return Output(content=tuple(blocks), details=details)


def _block(item: types.ContentBlock) -> ContentBlock | None:
    if isinstance(item, types.TextContent):
        return TextBlock(item.text) if item.text else None
    if isinstance(item, types.ImageContent | types.AudioContent):
        return MediaBlock(mime_type=item.mime_type, data=_decoded(item.data))
    if isinstance(item, types.ResourceLink):
        return MediaBlock(mime_type=item.mime_type or _OCTET, uri=str(item.uri))
    if isinstance(item, types.EmbeddedResource):
        resource = item.resource
        if isinstance(resource, types.TextResourceContents):
            return TextBlock(resource.text) if resource.text else None
        return MediaBlock(mime_type=resource.mime_type or _OCTET, data=_decoded(resource.blob))
    return TextBlock(f"[{getattr(item, 'type', 'unknown')} content]")  # pragma: no cover - every MCP block is above


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error as error:
        raise InvalidOutputError(f"media content is not base64: {error}") from None


# -- input requests ----------------------------------------------------------------------------------


def _elicitation_request(params: types.ElicitRequestFormParams, state: dict[str, Any]) -> InputRequest:
    """An MCP form elicitation as a scopetool input request: answer with an ``ElicitResult``."""
    requested: dict[str, Any] = json.loads(json.dumps(params.requested_schema))
    schema = {
        "oneOf": [
            {
                "type": "object",
                "properties": {"action": {"const": "accept"}, "content": requested},
                "required": ["action", "content"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"action": {"enum": ["decline", "cancel"]}},
                "required": ["action"],
                "additionalProperties": False,
            },
        ]
    }
    return InputRequest(prompt=params.message, response_schema=schema, continuation_state=state)


def _elicit_result(response: Any) -> types.ElicitResult:
    return types.ElicitResult.model_validate(response)


@dataclass(eq=False)
class _Asked:
    """One in-call elicitation a legacy server is waiting on."""

    params: types.ElicitRequestFormParams
    answered: anyio.Event
    answer: types.ElicitResult | None = None


_Event: TypeAlias = tuple[Literal["progress"], Progress] | tuple[Literal["asked"], _Asked] | tuple[Literal["done"], Any]


@final
class _Stopping:
    """The receiving end of a lean call's `Events`: iterated, and closed by stopping it (as a memory stream's)."""

    __slots__ = ("_events",)

    def __init__(self, events: Events[_Event]) -> None:
        self._events = events

    def __aiter__(self) -> Events[_Event]:
        return self._events

    def close(self) -> None:
        self._events.stop()


@dataclass(eq=False)
class _Running:
    """One remote call running in the client's task group; it reports to whichever scopetool call awaits it."""

    send: MemoryObjectSendStream[_Event] | Events[_Event]
    receive: MemoryObjectReceiveStream[_Event] | _Stopping
    token: str = field(default_factory=lambda: os.urandom(12).hex())
    """The call's name in `MCPClient._running` and in its continuation's state."""
    asked: _Asked | None = None
    scope: anyio.CancelScope | None = None
    cuts: int = 0
    """How many messages the connection had refused for their size when the call started."""
    lane: Lane | None = None
    """The connection's lane, for a call sent on it (`MCPClient._start_lean`); None for a call on the SDK's session."""
    request_id: str | None = None
    """The id of a call sent on the lane."""


# -- the client --------------------------------------------------------------------------------------

ToolsChanged: TypeAlias = Callable[["MCPClient", "ConnectError | None"], Awaitable[None]]
"""`connect`'s ``on_tools_changed``: awaited after each re-list a change the server announced prompted.

``hook(client, None)`` when the list was read and `MCPClient.tools` or `MCPClient.refused` changed;
``hook(client, error)`` when it could not be read (the tools stay as they were; the next change retries).
It runs in the client's own task, one at a time: the next re-list waits for it.
"""


@final
class MCPClient:
    """One connected MCP server and its tools (made by `connect`; valid inside its ``async with``)."""

    __slots__ = (
        "_call_timeout",
        "_changed",
        "_client",
        "_cut",
        "_definitions",
        "_description_limit",
        "_lane",
        "_list_timeout",
        "_listing",
        "_listing_limit",
        "_missing",
        "_name",
        "_on_tools_changed",
        "_pins",
        "_refused",
        "_relist_interval",
        "_running",
        "_tasks",
        "_tools",
        "_trusted",
    )

    def __init__(
        self,
        name: str,
        client: Client,
        tasks: TaskGroup,
        *,
        list_timeout: float,
        call_timeout: float,
        cut: Cut | None = None,
        listing: ToolListing | None = None,
        max_description_bytes: int = MAX_DESCRIPTION_BYTES,
        max_listing_bytes: int = MAX_LISTING_BYTES,
        lane: Lane | None = None,
        relist_interval: float = RELIST_INTERVAL,
        on_tools_changed: ToolsChanged | None = None,
    ) -> None:
        self._name = name
        self._changed = anyio.Event()
        self._relist_interval = relist_interval
        self._on_tools_changed = on_tools_changed
        self._lane = lane
        self._cut = cut or Cut()
        self._listing = listing or ToolListing()
        self._description_limit = max_description_bytes
        self._listing_limit = max_listing_bytes
        self._client: Client | None = client
        self._tasks = tasks
        self._list_timeout = list_timeout
        self._call_timeout = call_timeout
        self._tools: tuple[RemoteTool, ...] = ()
        self._refused: dict[str, str] = {}
        self._definitions: dict[str, dict[str, Any]] = {}
        self._missing: tuple[str, ...] = ()
        self._running: dict[str, _Running] = {}
        self._pins: PinFile | None = None
        self._trusted = False

    @property
    def name(self) -> str:
        """The name the server was connected under (the key of its pins)."""
        return self._name

    @property
    def tools(self) -> tuple[RemoteTool, ...]:
        """The server's tools that were accepted (by the pins, and enforceable), in the server's order."""
        return self._tools

    @property
    def refused(self) -> Mapping[str, str]:
        """Each listed tool that was not handed out, and one line saying why."""
        return dict(self._refused)

    @property
    def definitions(self) -> Mapping[str, dict[str, Any]]:
        """Each listed tool's definition as the server sent it (JSON), by name."""
        return {name: json.loads(json.dumps(value)) for name, value in self._definitions.items()}

    @property
    def missing(self) -> tuple[str, ...]:
        """Tools pinned for this server that it no longer lists."""
        return self._missing

    @property
    def protocol_version(self) -> str | None:
        """The protocol revision negotiated with the server, or None once closed."""
        return None if self._client is None else self._client.protocol_version

    @property
    def session(self) -> Client:
        """The MCP SDK's client of this connection, for what scopetool does not cover (resources, prompts)."""
        if self._client is None:
            raise RuntimeError(f"the MCP client of server {self._name!r} is closed")
        return self._client

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every valid tool the server lists now, following ``nextCursor``, as JSON objects.

        An invalid tool is left out (`refused` says why) rather than taking the others with it.

        Raises:
            ConnectError: the whole listing took longer than the list timeout (`connect`'s
                ``list_timeout``), was over ``max_listing_bytes`` (`MAX_LISTING_BYTES`), held more than
                `MAX_TOOLS` tools, or repeated a cursor.
        """
        client = self.session
        listed: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        size = 0
        with anyio.move_on_after(self._list_timeout):
            while True:
                page = await client.session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
                tools = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in page.tools]
                size += len(page.next_cursor or "") + sum(map(_json_size, tools))
                listed.extend(tools)
                if size > self._listing_limit:
                    raise ConnectError(
                        f"MCP server {self._name!r} lists tools over {self._listing_limit} bytes "
                        "(the cap, max_listing_bytes)"
                    )
                if len(listed) + len(self._listing.refused) > MAX_TOOLS:
                    raise ConnectError(f"MCP server {self._name!r} lists more than {MAX_TOOLS} tools (MAX_TOOLS)")
                cursor = page.next_cursor
                if cursor is None:
                    return listed
                if cursor in seen:
                    raise ConnectError(f"MCP server {self._name!r} repeated the tools/list cursor {cursor!r}")
                seen.add(cursor)
        raise ConnectError(f"MCP server {self._name!r} did not list its tools within {self._list_timeout:g} s")

    async def refresh(self) -> bool:
        """List the server's tools again and take them as at connect (pins and checks applied); whether they changed.

        `tools` then holds the tools accepted now (`refused` those that are not); a `RemoteTool` handed
        out before keeps calling its tool by name. The client calls this itself on each change the server
        announces (``notifications/tools/list_changed`` on a 2025 session; ``subscriptions/listen`` on a
        2026-07-28 connection to a server that offers ``tools.listChanged``), a burst of them once, at
        most once per ``relist_interval`` (`RELIST_INTERVAL`).

        Raises:
            ConnectError: as `list_tools`.
        """
        before = ([tool.listed for tool in self._tools], self._refused)
        listed = await self.list_tools()
        self._refused = {}
        self._adopt(listed, self._pins, self._trusted)
        return ([tool.listed for tool in self._tools], self._refused) != before

    def _tools_changed(self) -> None:
        """The server said its tools changed: `_follow_tool_changes` re-lists (many sayings before it does: once)."""
        self._changed.set()

    async def _follow_tool_changes(self) -> None:
        """Re-list each time the server says its tools changed: after `RELIST_SETTLE`, at most once per interval."""
        while True:
            await self._changed.wait()
            await anyio.sleep(RELIST_SETTLE)
            self._changed = anyio.Event()  # a change said from here on prompts the next re-list
            started = anyio.current_time()
            error: ConnectError | None = None
            try:
                changed = await self.refresh()
            except Exception as failure:  # noqa: BLE001 - the tools listed before stay; the next change retries
                logger.warning("MCP server %r: the changed tool list could not be read: %s", self._name, failure)
                error = failure if isinstance(failure, ConnectError) else ConnectError(_describe(failure))
                changed = False
            if self._on_tools_changed is not None and (changed or error is not None):
                await self._on_tools_changed(self, error)
            await anyio.sleep(max(0.0, started + self._relist_interval - anyio.current_time()))

    async def _listen_for_tool_changes(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """On a 2026-07-28 connection, note each ``subscriptions/listen`` event that the tools changed.

        Started once the server acknowledged the stream (within the list timeout), so no change made after
        `connect` returns is missed; without a stream the tools stay as listed.
        """
        started = False
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self._list_timeout) as acknowledging:
                async with self.session.listen(tools_list_changed=True) as events:
                    acknowledging.deadline = math.inf
                    started = True
                    task_status.started()
                    async for _ in events:
                        self._tools_changed()
        except Exception as error:  # noqa: BLE001 - the stream is an extra: without it the tools stay as listed
            logger.info("MCP server %r: not following tool list changes: %s", self._name, error)
        finally:
            if not started:
                task_status.started()

    def _adopt(self, listed: list[dict[str, Any]], pins: PinFile | None, trusted: bool) -> None:
        self._pins, self._trusted = pins, trusted
        for name, why in self._listing.refused.items():
            self._refused[name] = f'tool "{name}" of MCP server "{self._name}" is refused: {why}'
        self._definitions = {}
        for tool in listed:  # an oversize text is refused before the pins could record it
            name = str(tool.get("name"))
            oversize = _oversize_text(tool, self._description_limit)
            if oversize is None:
                self._definitions[name] = tool
            else:
                self._refused[name] = (
                    f'tool "{name}" of MCP server "{self._name}" is refused: its {oversize} is over '
                    f"{self._description_limit} bytes (max_description_bytes)"
                )
        allowed = set(self._definitions)
        if pins is not None:
            check = pins.check(self._name, self._definitions)
            self._refused.update(check.refused)
            self._missing = check.missing
            allowed = set(check.accepted)
        tools: list[RemoteTool] = []
        for name, tool in self._definitions.items():
            if name not in allowed:
                continue
            try:
                definition = remote_definition(tool, trusted=trusted)
            except InvalidToolError as error:
                self._refused[name] = f'tool "{name}" of MCP server "{self._name}" cannot be enforced: {error}'
                continue
            tools.append(RemoteTool(self, definition, tool))
        self._tools = tuple(tools)
        for line in self._refused.values():
            logger.info("%s", line)

    # -- calls

    async def _call(self, name: str, invocation: Invocation) -> Result:
        """Run one admitted call of tool `name` on the server (`RemoteTool.call`, which checked the contract)."""
        continuation = invocation.continuation
        if continuation is None and self._lane is not None and self._lane.ready:
            return await self._start_lean(name, invocation.contract, invocation.arguments or b"{}")
        arguments: dict[str, Any] = json.loads(invocation.arguments or b"{}")
        if continuation is not None:
            state: Any = continuation.state
            kind = state.get("kind") if is_object(state) else None
            if kind == _INPUT_REQUIRED:
                responses: types.InputResponses = {str(state["key"]): _elicit_result(continuation.response)}
                return await self._start(name, invocation.contract, arguments, responses, state.get("request_state"))
            if kind == _TASK_INPUT:  # an upstream task's input request: answer it, then follow the task again
                answer = (str(state["task"]), str(state["key"]), _elicit_result(continuation.response))
                return await self._start(name, invocation.contract, arguments, None, None, task_answer=answer)
            running = self._running.get(str(state.get("call"))) if kind == _ELICITATION else None
            if running is None or running.asked is None:
                raise Failure(
                    kind=FailureKind.FAILED,
                    output=EXPIRED.format(name=name),
                    cause=LookupError("no in-call elicitation is pending for this continuation"),
                )
            asked, running.asked = running.asked, None
            asked.answer = _elicit_result(continuation.response)
            asked.answered.set()
            return await self._follow(name, invocation.contract, running)
        return await self._start(name, invocation.contract, arguments, None, None)

    async def _start(
        self,
        name: str,
        contract: Contract,
        arguments: dict[str, Any],
        responses: types.InputResponses | None,
        request_state: str | None,
        *,
        task_answer: tuple[str, str, types.ElicitResult] | None = None,
    ) -> Result:
        client = self._client
        if client is None:
            raise Failure(
                kind=FailureKind.FAILED,
                output=UNAVAILABLE.format(name=name),
                cause=ConnectError(f"the MCP client of server {self._name!r} is closed"),
            )
        send, receive = anyio.create_memory_object_stream[_Event](16)
        running = _Running(send, receive, cuts=self._cut.count)

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            with contextlib.suppress(
                ValueError, anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError
            ):
                total_ = total if total is not None and total >= progress else 0
                send.send_nowait(
                    ("progress", Progress(completed=max(progress, 0), total=total_, message=message or ""))
                )

        async def remote() -> None:
            outcome: Any
            with send, anyio.CancelScope() as scope:
                running.scope = scope
                self._running[running.token] = running
                try:
                    if task_answer is None:
                        outcome = await client.session.call_tool(
                            name,
                            arguments,
                            # `_follow` bounds the wait, and only while someone waits: the SDK's own clock
                            # would also count an in-call elicitation's time with a person.
                            read_timeout_seconds=math.inf,
                            progress_callback=on_progress,
                            input_responses=responses,
                            request_state=request_state,
                            allow_input_required=True,
                            allow_claimed=True,
                        )
                    else:
                        await answer_task(client.session, *task_answer)
                        outcome = await follow_task(client.session, task_answer[0], None)
                    if isinstance(outcome, TaskCreated):  # polled within the call's bound (`_follow`'s)
                        outcome = await follow_task(client.session, outcome.task_id, outcome.poll_interval_ms)
                except Exception as error:  # noqa: BLE001 - every error of the call is its outcome
                    outcome = error
                finally:
                    self._running.pop(running.token, None)
                with contextlib.suppress(anyio.BrokenResourceError):
                    await send.send(("done", outcome))

        self._tasks.start_soon(remote)
        return await self._follow(name, contract, running)

    async def _start_lean(self, name: str, contract: Contract, arguments: bytes) -> Result:
        """`_start` on the connection's `Lane`: the admitted arguments go out as they are, the answer comes back raw."""
        lane = self._lane
        assert lane is not None
        send: Events[_Event] = Events()  # not subscripted at run time: typing's cache would cost each call
        running = _Running(send, _Stopping(send), cuts=self._cut.count, lane=lane)

        def deliver(event: LaneEvent) -> None:
            item: _Event
            if event[0] == "progress":
                if len(send) >= MAX_QUEUED_PROGRESS:
                    return  # the caller is not reading them: dropped, as the SDK's path drops them
                progress, total, message = event[1]
                total_ = total if total is not None and total >= progress else 0
                try:
                    item = ("progress", Progress(completed=max(progress, 0), total=total_, message=message or ""))
                except ValueError:
                    return  # not a progress scopetool can report: dropped, as on the SDK's path
            else:
                self._running.pop(running.token, None)
                item = ("done", (event[1], event[0] == "done"))
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                send.send_nowait(item)

        self._running[running.token] = running
        try:
            running.request_id = await lane.call(name, arguments, deliver, inject_trace_context)
        except BaseException as error:
            self._running.pop(running.token, None)
            if isinstance(error, Exception):
                raise Failure(kind=FailureKind.FAILED, output=UNAVAILABLE.format(name=name), cause=error) from None
            raise
        return await self._follow(name, contract, running)

    async def _lean_outcome(self, name: str, contract: Contract, message: Any) -> Any:
        """A lean call's raw answer as the SDK's client would have returned it (a result, or the error it raised)."""
        client = self._client
        if isinstance(message, BaseException):
            return message
        if client is None:
            return ConnectError("the client closed")
        session = client.session
        message, strict = message
        try:
            plain = _plain_result(message.get("result"), session.protocol_version) if strict else None
            if plain is not None and (plain.is_error or contract.definition().output_schema is None):
                return plain  # what the SDK's checks would make of it, and its output schema is not to check
            if "result" not in message:
                error = types.ErrorData.model_validate(message.get("error"), by_name=False)
                return MCPError(code=error.code, message=error.message, data=error.data)
            raw = message["result"]
            if not isinstance(raw, dict):
                raise TypeError(f"a tools/call result must be a JSON object, not {type(raw).__name__}")
            raw = cast("dict[str, Any]", raw)
            if raw.get("resultType") == "task":  # the upstream answered with a task: followed as on the SDK's path
                created = TaskCreated.model_validate(raw, by_name=False)
                return await follow_task(session, created.task_id, created.poll_interval_ms)
            _clamp_inbound_ttl(raw)
            version = session.protocol_version or "2025-11-25"
            with contextlib.suppress(KeyError):
                methods.validate_server_result("tools/call", version, raw)
            if not (foreign := _later_revision_fields("tools/call", version)).isdisjoint(raw):
                raw = {key: value for key, value in raw.items() if key not in foreign}
            result = session._call_tool_adapter.validate_python(raw, by_name=False)  # pyright: ignore[reportPrivateUsage]
            if isinstance(result, types.CallToolResult) and not result.is_error:
                await session.validate_tool_result(name, result)
            if not isinstance(result, types.CallToolResult | types.InputRequiredResult):
                raise UnexpectedClaimedResult(result)
        except Exception as error:  # noqa: BLE001 - every error of the call is its outcome, as on the SDK's path
            return error
        return result

    async def _follow(self, name: str, contract: Contract, running: _Running) -> Result:
        """Wait for the running call's next outcome in the calling task: progress, an elicitation, its end.

        A caller that stops waiting (cancelled, or past the call timeout) cancels the remote call, unless
        the call is suspended on an elicitation, which its continuation resumes (and waits afresh).
        """
        suspended = False
        seconds = self._call_timeout
        # A lean call's events expire at the timeout by a timer of the loop: a cancel scope costs each call more.
        events = running.send if isinstance(running.send, Events) else None
        timer = None if events is None else asyncio.get_running_loop().call_later(seconds, events.expire)
        try:
            with anyio.move_on_after(seconds) if events is None else contextlib.nullcontext():
                async for event in running.receive:
                    if event[0] == "progress":
                        report_progress(event[1])
                    elif event[0] == "asked":
                        suspended = True
                        state = {"kind": _ELICITATION, "call": running.token}
                        return Result(input_request=_elicitation_request(event[1].params, state))
                    else:
                        outcome = (
                            event[1] if running.lane is None else await self._lean_outcome(name, contract, event[1])
                        )
                        cut = self._cut.error if self._cut.count != running.cuts else None
                        failed = isinstance(outcome, BaseException)
                        return self._outcome(name, contract, cut if failed and cut is not None else outcome)
                if events is None or not events.expired:
                    raise Failure(  # the remote call was cancelled: the client closed
                        kind=FailureKind.FAILED,
                        output=UNAVAILABLE.format(name=name),
                        cause=ConnectError("the client closed"),
                    )
            raise Failure(
                kind=FailureKind.FAILED,
                output=TIMED_OUT.format(name=name, seconds=seconds),
                cause=TimeoutError(f"MCP server {self._name!r} did not answer the call of {name!r} in {seconds:g} s"),
            )
        finally:
            if timer is not None:
                timer.cancel()
            if not suspended:
                running.receive.close()
                if running.scope is not None:
                    running.scope.cancel()
                if running.lane is not None:
                    self._running.pop(running.token, None)
                    running.send.close()
                    if running.request_id is not None:
                        await _courtesy_cancel(running.lane, running.request_id)

    def _outcome(self, name: str, contract: Contract, outcome: Any) -> Result:
        if isinstance(outcome, types.InputRequiredResult):
            return self._input_required(name, outcome)
        if isinstance(outcome, TaskInput):
            state = {"kind": _TASK_INPUT, "task": outcome.task_id, "key": outcome.key}
            return Result(input_request=_elicitation_request(outcome.params, state))
        if isinstance(outcome, TaskCancelledError | NotImplementedError):
            raise Failure(kind=FailureKind.FAILED, output=REFUSED.format(name=name), cause=outcome)
        if isinstance(outcome, MessageTooLargeError):
            raise Failure(
                kind=FailureKind.FAILED, output=TOO_LARGE.format(name=name, limit=outcome.limit), cause=outcome
            )
        if isinstance(outcome, MCPError) and not _closed(outcome):
            raise Failure(kind=FailureKind.FAILED, output=REFUSED.format(name=name), cause=outcome)
        if isinstance(outcome, RuntimeError) and "structured content" in str(outcome):
            raise Failure(kind=FailureKind.FAILED, output=BROKEN_OUTPUT.format(name=name), cause=outcome)
        if isinstance(outcome, ValidationError):
            raise Failure(kind=FailureKind.FAILED, output=INVALID_RESULT.format(name=name), cause=outcome)
        if isinstance(outcome, BaseException):
            raise Failure(kind=FailureKind.FAILED, output=UNAVAILABLE.format(name=name), cause=outcome)
        if isinstance(outcome, _PlainResult):  # text blocks only, as `result_output` maps them
            output = Output(content=tuple(TextBlock(text) for text in outcome.texts if text))
            return self._answered(name, contract, output, is_error=outcome.is_error)
        answer: types.CallToolResult = outcome  # call_tool returns nothing else without allow_claimed
        try:
            output = result_output(answer)
        except InvalidOutputError as error:
            raise Failure(kind=FailureKind.FAILED, output=INVALID_RESULT.format(name=name), cause=error) from None
        return self._answered(name, contract, output, is_error=answer.is_error)

    def _answered(self, name: str, contract: Contract, output: Output, *, is_error: bool) -> Result:
        """A result's output as the call's `Result`, or the `Failure` of an ``isError`` one."""
        if is_error:
            shown = (
                output
                if output.content or output.details is not None
                else Output.from_text(f'error: tool "{name}" failed')
            )
            raise Failure(kind=FailureKind.FAILED, output=shown, cause=RemoteToolError(output.text() or ""))
        result = Result(output=output)
        try:
            contract.validate_result(result)
        except InvalidOutputError as error:
            raise Failure(kind=FailureKind.FAILED, output=BROKEN_OUTPUT.format(name=name), cause=error) from None
        return result

    def _input_required(self, name: str, outcome: types.InputRequiredResult) -> Result:
        requests = outcome.input_requests or {}
        forms = [
            (key, request.params)
            for key, request in requests.items()
            if isinstance(request, types.ElicitRequest) and isinstance(request.params, types.ElicitRequestFormParams)
        ]
        if len(forms) != 1 or len(requests) != 1:
            raise Failure(
                kind=FailureKind.FAILED,
                output=REFUSED.format(name=name),
                cause=NotImplementedError(
                    "scopetool answers one form elicitation per input_required result, "
                    f"not {sorted(str(request.method) for request in requests.values())}"
                ),
            )
        key, params = forms[0]
        state = {"kind": _INPUT_REQUIRED, "key": key, "request_state": outcome.request_state}
        return Result(input_request=_elicitation_request(params, state))

    async def _elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The SDK's elicitation callback: hand a legacy in-call elicitation to the one call in flight."""
        running = [value for value in self._running.values() if value.asked is None]
        if not isinstance(params, types.ElicitRequestFormParams) or len(self._running) != 1 or len(running) != 1:
            return types.ElicitResult(action="decline")
        asked = _Asked(params, anyio.Event())
        running[0].asked = asked
        try:
            await running[0].send.send(("asked", asked))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # pragma: no cover - the caller went away
            return types.ElicitResult(action="cancel")
        await asked.answered.wait()
        return asked.answer or types.ElicitResult(action="cancel")

    def _close(self) -> None:
        self._client = None
        for running in list(self._running.values()):
            if running.asked is not None:  # suspended: no scopetool call is waiting on it
                running.receive.close()
                if running.lane is not None:  # no remote task holds its end
                    running.send.close()
                running.asked.answer = types.ElicitResult(action="cancel")
                running.asked.answered.set()

    def __repr__(self) -> str:
        return f"MCPClient(name={self._name!r}, tools={len(self._tools)})"


_PLAIN_KEYS: Final = (frozenset({"content"}), frozenset({"content", "isError"}))
_TEXT_KEYS: Final = frozenset({"type", "text"})


@final
@dataclass(frozen=True, slots=True)
class _PlainResult:
    """A result of text blocks only, which the SDK's checks pass as it is (`_plain_result`)."""

    texts: tuple[str, ...]
    is_error: bool


def _plain_result(raw: object, version: str | None) -> _PlainResult | None:
    """A result of text blocks only (and ``isError``) as the SDK's checks make it, without them; None for any other.

    Such a result passes the SDK's checks whatever the revision (every member is one every revision
    declares, of the type it declares), and `_outcome` reads only its texts and ``isError``; anything
    else (structured content, another block, annotations, ``_meta``, a ``resultType``) is checked by the SDK.
    """
    if not isinstance(raw, dict) or version is None or version in MODERN_PROTOCOL_VERSIONS:
        return None
    result = cast("dict[str, object]", raw)
    keys, content, error = frozenset(result), result.get("content"), result.get("isError", False)
    if keys not in _PLAIN_KEYS or not isinstance(content, list) or type(error) is not bool:
        return None
    texts: list[str] = []
    for item in cast("list[object]", content):
        if not isinstance(item, dict) or item.keys() != _TEXT_KEYS:
            return None
        block = cast("dict[str, object]", item)
        text = block["text"]
        if block["type"] != "text" or not isinstance(text, str):
            return None
        texts.append(text)
    return _PlainResult(tuple(texts), error)


class RemoteToolError(ScopetoolError, RuntimeError):
    """The private cause of an ``isError`` result: the remote tool's own text."""


def _closed(error: MCPError) -> bool:
    """Whether `error` is the SDK saying the connection closed or broke, not the server answering with an error."""
    return error.code == types.CONNECTION_CLOSED and error.message.startswith(_CLOSED)


@contextlib.asynccontextmanager
async def connect(
    spec: ServerSpec,
    *,
    name: str,
    pins: PinFile | None = None,
    trusted: bool = False,
    errlog: TextIO | None = None,
    start_timeout: float = START_TIMEOUT,
    list_timeout: float = LIST_TIMEOUT,
    call_timeout: float = CALL_TIMEOUT,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    max_description_bytes: int = MAX_DESCRIPTION_BYTES,
    max_listing_bytes: int = MAX_LISTING_BYTES,
    relist_interval: float = RELIST_INTERVAL,
    on_tools_changed: ToolsChanged | None = None,
) -> AsyncGenerator[MCPClient]:
    """Connect to one MCP server, list its tools, check them against `pins`; close it on exit.

    A cancel scope around the ``async with`` (``anyio.move_on_after``, ``asyncio.timeout``) cancels it
    cleanly at any point: while starting, while listing, or during a call; the server is closed.

    Args:
        spec: How to reach the server (`StdioServer`, `HttpServer`, or `server_spec` of a config entry).
        name: The server's name: the key of its pins, and the name in every message.
        pins: The lock file the tools' definitions are checked against and recorded in; None pins nothing.
        trusted: Whether the server's annotations are believed: only then do they become effects.
        errlog: Where a stdio server's standard error goes (default: this process's).
        start_timeout: Seconds to start the server and complete the MCP handshake (`START_TIMEOUT`).
        list_timeout: Seconds for the whole tools listing, every page (`LIST_TIMEOUT`).
        call_timeout: Seconds each call waits for the server's answer before it is a `Failure`
            (`TIMED_OUT`; `CALL_TIMEOUT`). It is also the SDK's read timeout of each request made
            through `MCPClient.session`.
        max_message_bytes: The cap on one message read from the server (default 16 MiB): a stdio line,
            a JSON response body, one event of an event stream. Over stdio a longer line ends the
            connection and kills the server; over HTTP the request it answers fails. A call that
            meets it fails with `TOO_LARGE`.
        max_description_bytes: The cap on each text of a tool's definition (default 16 KiB): a tool
            with a longer description, title or schema description is refused (`MCPClient.refused`).
        max_listing_bytes: The cap on one whole listing, every page (default 64 MiB,
            `MAX_LISTING_BYTES`): the tools' JSON and the cursors. Past it the listing fails.
        relist_interval: The least seconds between two re-lists the server's announced tool changes
            prompt (`RELIST_INTERVAL`); the changes announced meanwhile are one re-list.
        on_tools_changed: Awaited after each such re-list that changed the tools, or failed (`ToolsChanged`).

    Raises:
        ConnectError: the server could not be started, initialized or listed, or not within its timeout
            (a message over `max_message_bytes`, a listing over `max_listing_bytes` or of more than
            `MAX_TOOLS` tools).
        ValueError: `spec`, `name`, a timeout or a cap is not usable.
    """
    if not isinstance(spec, StdioServer | HttpServer):
        raise ValueError(f"spec must be a StdioServer or an HttpServer, not {type(spec).__name__}")
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    timeouts = {"start_timeout": start_timeout, "list_timeout": list_timeout, "call_timeout": call_timeout}
    timeouts["relist_interval"] = relist_interval
    for argument, seconds in timeouts.items():
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds < math.inf:
            raise ValueError(f"{argument} must be a positive finite number of seconds, not {seconds!r}")
    caps = {"max_message_bytes": max_message_bytes, "max_description_bytes": max_description_bytes}
    caps["max_listing_bytes"] = max_listing_bytes
    for what, cap in caps.items():
        if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0:
            raise ValueError(f"{what} must be a positive integer, not {cap!r}")
    holder: list[MCPClient] = []

    async def elicit(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await holder[0]._elicit(context, params)  # pyright: ignore[reportPrivateUsage]

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification) and holder:  # a 2025 session's announcement
            holder[0]._tools_changed()  # pyright: ignore[reportPrivateUsage]

    cut, listing = Cut(), ToolListing(lambda: sdk.session.protocol_version)
    if isinstance(spec, StdioServer):
        parameters = StdioServerParameters(
            command=spec.command, args=list(spec.args), env=None if spec.env is None else dict(spec.env), cwd=spec.cwd
        )
        lane = Lane() if on_asyncio() else None
        transport: Any = stdio_transport(
            parameters,
            name=name,
            errlog=errlog or sys.stderr,
            max_message_bytes=max_message_bytes,
            cut=cut,
            lane=lane,
        )
        http = None
    else:
        lane = None
        http = create_mcp_http_client(headers=None if spec.headers is None else dict(spec.headers))
        cap_responses(http, max_message_bytes, cut, listing)
        transport = streamable_http_client(spec.url, http_client=http, max_sse_event_size=max_message_bytes)
    sdk = Client(
        watched(transport, listing),
        elicitation_callback=elicit,
        message_handler=on_message,
        read_timeout_seconds=float(call_timeout),
        cache=None,
        extensions=[TasksClientExtension()],  # an upstream's long call may come back as a task: followed
    )
    # Every scope below is entered and left in this task, nested: a caller's cancel scope around the
    # ``async with`` unwinds them in order. The start's deadline is lifted once the handshake is done.
    with anyio.CancelScope(deadline=anyio.current_time() + start_timeout) as starting:
        async with contextlib.AsyncExitStack() as stack:
            if http is not None:
                stack.push_async_callback(_shielded, http.aclose)  # the SDK closes only the clients it made
            try:
                await stack.enter_async_context(_opened(sdk))
            except Exception as error:
                raise ConnectError(f"cannot connect to MCP server {name!r}: {_describe(error, cut)}") from error
            starting.deadline = math.inf
            # Entered after the SDK's client and left before it: the remote calls run here, so a call
            # can outlive the scopetool call that started it (an in-call elicitation).
            tasks = await stack.enter_async_context(_call_group())
            client = MCPClient(
                name,
                sdk,
                tasks,
                list_timeout=float(list_timeout),
                call_timeout=float(call_timeout),
                cut=cut,
                listing=listing,
                max_description_bytes=max_description_bytes,
                max_listing_bytes=max_listing_bytes,
                lane=lane,
                relist_interval=float(relist_interval),
                on_tools_changed=on_tools_changed,
            )
            holder.append(client)
            stack.callback(client._close)  # pyright: ignore[reportPrivateUsage]
            try:
                listed = await client.list_tools()
            except ConnectError:
                raise
            except Exception as error:
                raise ConnectError(f"cannot list the tools of MCP server {name!r}: {_describe(error, cut)}") from error
            client._adopt(listed, pins, trusted)  # pyright: ignore[reportPrivateUsage]
            tasks.start_soon(client._follow_tool_changes)  # pyright: ignore[reportPrivateUsage]
            offered = sdk.server_capabilities.tools
            if offered is not None and offered.list_changed and sdk.protocol_version in MODERN_PROTOCOL_VERSIONS:
                await tasks.start(client._listen_for_tool_changes)  # pyright: ignore[reportPrivateUsage]
            yield client
    if starting.cancelled_caught:
        raise ConnectError(f"MCP server {name!r} did not start within {start_timeout:g} s")


@contextlib.asynccontextmanager
async def _opened(sdk: Client) -> AsyncGenerator[Client]:
    """The SDK's client, entered for the block; the block's own error is not handed to its task groups."""
    await sdk.__aenter__()
    try:
        yield sdk
    finally:
        # A server that died mid-session makes the SDK's close raise: that is not the caller's error.
        with contextlib.suppress(Exception):
            await sdk.__aexit__(None, None, None)


@contextlib.asynccontextmanager
async def _call_group() -> AsyncGenerator[TaskGroup]:
    """A task group for the remote calls, cancelled when the block ends; the block's error passes through unwrapped."""
    tasks = anyio.create_task_group()
    await tasks.__aenter__()
    try:
        yield tasks
    finally:
        tasks.cancel_scope.cancel()
        await tasks.__aexit__(None, None, None)


async def _courtesy_cancel(lane: Lane, request_id: str) -> None:
    """Tell the server a lean call is no longer awaited, as the SDK's path tells it (an answer already read: nothing).

    The SDK's path cancels the task of the remote call, whose request then sends ``notifications/cancelled``
    with the reason ``caller cancelled``, shielded and bounded: so does this.
    """
    write = lane.abandon(request_id, "caller cancelled")
    if write is None:
        return
    with anyio.CancelScope(shield=True), anyio.move_on_after(_ABANDON_WRITE_TIMEOUT), contextlib.suppress(Exception):
        await write


async def _shielded(close: Callable[[], Awaitable[None]]) -> None:
    """Run `close` even in a cancelled scope (closing an HTTP client's connections is quick and must finish)."""
    with anyio.CancelScope(shield=True):
        await close()


def _is_group(error: BaseException) -> bool:
    """Whether `error` is an exception group."""
    return isinstance(error, BaseExceptionGroup)


def _json_size(value: object) -> int:
    """The length of `value`'s compact JSON, non-ASCII escaped: at least its UTF-8 bytes, computed in C."""
    return len(json.dumps(value, separators=(",", ":")))


def _describe(error: BaseException, cut: Cut | None = None) -> str:
    """``Type: first line`` of the one error at the bottom of an exception group (anyio wraps them).

    When the connection refused a message for its size, that refusal is what went wrong.
    """
    if cut is not None and cut.error is not None:
        error = cut.error
    while True:
        members: tuple[BaseException, ...] = getattr(error, "exceptions", ()) if _is_group(error) else ()
        if len(members) != 1:
            break
        error = members[0]
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
