"""The client's caps in bytes, against hostile MCP servers over stdio and Streamable HTTP.

Each message read from a server is capped (a stdio line, a JSON body, one event of an event stream),
each text of a tool's definition too; a tool the SDK would refuse (nested too deep, not valid MCP)
is refused alone, and a listing over ``max_listing_bytes`` is refused. The caps are small here
(1 MiB) so each test is quick.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import anyio
import httpx2
import mcp_types as types
import pytest
from anyio.abc import ByteReceiveStream
from hostile_http import ECHO, hostile_app, serving
from mcp import Client
from mcp.shared.message import SessionMessage

from scopetool import Failure, Registry, Request, Result
from scopetool.mcp._transport import (
    Cut,
    MessageTooLargeError,
    ToolListing,
    cap_responses,
    parse_message,
    read_lines,
)
from scopetool.mcp.client import (
    MAX_DESCRIPTION_BYTES,
    MAX_LISTING_BYTES,
    MAX_MESSAGE_BYTES,
    MAX_TOOLS,
    TOO_LARGE,
    ConnectError,
    HttpServer,
    MCPClient,
    StdioServer,
    connect,
)
from scopetool.mcp.gateway import ConfigError, open_gateway, parse_config
from scopetool.mcp.server import create_server

HOSTILE = Path(__file__).resolve().with_name("hostile_server.py")
MIB = 1024 * 1024
CAP = MIB
"""The message cap of these tests: 1 MiB."""
LIMIT = 20.0
"""Seconds any one test may take before it fails (today's client waits for ever on some of these)."""


def hostile(*behaviours: str) -> StdioServer:
    """The hostile stdio server with `behaviours`."""
    return StdioServer(command=sys.executable, args=(str(HOSTILE), *behaviours))


async def echo(client: MCPClient, text: str = "hi") -> Result:
    """Call the server's ``echo`` through a binding, as every caller does."""
    binding = Registry(*client.tools).resolve("echo")
    assert binding is not None
    return await binding.call(binding.contract.prepare(Request("echo", json.dumps({"text": text}))))


async def failure_of(spec: StdioServer | HttpServer, **caps: int) -> Failure:
    """The Failure of one ``echo`` call on `spec`, connected with `caps`."""
    with anyio.fail_after(LIMIT):
        async with connect(spec, name="hostile", **caps) as client:
            with pytest.raises(Failure) as caught:
                await echo(client)
    return caught.value


def test_the_defaults_are_the_documented_ones() -> None:
    """16 MiB a message, 16 KiB a definition's text, 4096 tools a server."""
    assert (MAX_MESSAGE_BYTES, MAX_DESCRIPTION_BYTES) == (16 * MIB, 16 * 1024)
    assert (MAX_LISTING_BYTES, MAX_TOOLS) == (64 * MIB, 65536)


async def test_a_stdio_message_over_the_cap_fails_the_call_with_a_clear_text() -> None:
    """A 2 MiB result over a 1 MiB cap: a Failure that names the cap, the cause private, no content."""
    failure = await failure_of(hostile("big-result=2"), max_message_bytes=CAP)
    assert failure.output.text() == TOO_LARGE.format(name="echo", limit=CAP)
    assert "max_message_bytes" in str(failure.cause)


async def test_a_line_that_never_ends_is_cut_at_the_cap_promptly() -> None:
    """A line that never ends is cut once it passes the cap, in well under a second or two, not read for ever."""
    started = time.monotonic()
    failure = await failure_of(hostile("endless-call"), max_message_bytes=CAP)
    assert failure.output.text() == TOO_LARGE.format(name="echo", limit=CAP)
    assert time.monotonic() - started < 5


async def test_a_server_that_broke_the_cap_is_killed_and_its_connection_ended() -> None:
    """After the cut the connection is closed: a later call fails at once, and connect still exits cleanly."""
    with anyio.fail_after(LIMIT):
        async with connect(hostile("endless-call"), name="hostile", max_message_bytes=CAP) as client:
            with pytest.raises(Failure):
                await echo(client)
            started = time.monotonic()
            with pytest.raises(Failure) as later:
                await echo(client)
            assert time.monotonic() - started < 2
    assert "not reachable" in (later.value.output.text() or "")


async def test_connect_names_the_server_and_the_cap_when_the_listing_is_over_it() -> None:
    """A 2 MiB listing over a 1 MiB cap: a ConnectError naming the server and the cap."""
    with anyio.fail_after(LIMIT), pytest.raises(ConnectError) as caught:
        async with connect(hostile("big-description=2"), name="hostile", max_message_bytes=CAP):
            pass  # pragma: no cover - never reached
    assert "'hostile'" in str(caught.value)
    assert f"over {CAP} bytes" in str(caught.value)


async def test_an_oversize_description_refuses_its_tool_and_keeps_the_others() -> None:
    """A 1 MiB description (under the message cap): that tool is refused with its reason, echo still works."""
    with anyio.fail_after(LIMIT):
        async with connect(hostile("big-description=1"), name="hostile") as client:
            assert [tool.definition().name for tool in client.tools] == ["echo"]
            assert "max_description_bytes" in client.refused["long"]
            assert "long" not in client.definitions
            assert (await echo(client)).output.text() == "hi"


async def test_the_description_cap_is_a_setting() -> None:
    """With max_description_bytes the same description fits, or a small one does not."""
    with anyio.fail_after(LIMIT):
        async with connect(hostile("big-description=1"), name="hostile", max_description_bytes=2 * MIB) as client:
            assert sorted(tool.definition().name for tool in client.tools) == ["echo", "long"]
        async with connect(hostile(), name="hostile", max_description_bytes=8) as client:
            assert client.tools == ()
            assert "its description is over 8 bytes" in client.refused["echo"]


async def test_a_deeply_nested_schema_refuses_its_tool_and_keeps_the_others() -> None:
    """A schema nested past the SDK's parser (150 levels): that tool is refused, the server's others are kept."""
    with anyio.fail_after(LIMIT):
        async with connect(hostile("deep-schema=150"), name="hostile") as client:
            assert [tool.definition().name for tool in client.tools] == ["echo"]
            assert "nests deeper than 64 levels" in client.refused["deep"]
            assert (await echo(client)).output.text() == "hi"


async def test_a_tool_that_is_not_valid_mcp_is_refused_alone() -> None:
    """A tool whose inputSchema is a string: refused with the SDK's reason, not the whole listing."""
    with anyio.fail_after(LIMIT):
        async with connect(hostile("invalid-tool"), name="hostile") as client:
            assert [tool.definition().name for tool in client.tools] == ["echo"]
            assert "not a valid MCP tool: inputSchema" in client.refused["broken"]


async def test_a_listing_of_ten_thousand_real_sized_tools_is_taken_whole() -> None:
    """The SDK's own server listing 10,000 real servers' tools over ten pages: every one is a tool, none refused."""
    catalog = StdioServer(command=sys.executable, args=(str(HOSTILE.with_name("catalog_server.py")), "10000", "1000"))
    with anyio.fail_after(120):
        async with connect(catalog, name="catalog") as client:
            assert (len(client.tools), client.refused) == (10000, {})
            binding = Registry(*client.tools).resolve("echo_0")
            assert binding is not None
            call = binding.contract.prepare(Request("echo_0", '{"message": "hi"}'))
            assert (await binding.call(call)).output.text() == "echo_0"


async def test_a_listing_of_more_tools_than_the_old_count_cap_is_taken() -> None:
    """4,097 tools on one page (the old 4,096-tool cap refused the server): all listed."""
    with anyio.fail_after(LIMIT):
        async with connect(hostile("many-tools=4097"), name="hostile") as client:
            assert len(client.tools) == 4098


async def test_a_listing_without_end_is_refused_at_the_byte_cap() -> None:
    """Pages of ~64 KiB with a new cursor each, without end: a ConnectError naming max_listing_bytes, soon."""
    with anyio.fail_after(LIMIT), pytest.raises(ConnectError, match=rf"over {CAP} bytes .*max_listing_bytes"):
        async with connect(hostile("endless-pages=64"), name="hostile", max_listing_bytes=CAP):
            pass  # pragma: no cover - never reached


async def test_the_count_net_still_holds_behind_the_byte_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the tool count net lowered to 100, a listing of 101 small tools is a ConnectError naming MAX_TOOLS."""
    import scopetool.mcp.client as client_module

    monkeypatch.setattr(client_module, "MAX_TOOLS", 100)
    with anyio.fail_after(LIMIT), pytest.raises(ConnectError, match=r"more than 100 tools \(MAX_TOOLS\)"):
        async with connect(hostile("many-tools=100"), name="hostile"):
            pass  # pragma: no cover - never reached


async def test_a_remote_result_over_the_binding_cap_is_a_failure() -> None:
    """A 2 MiB result under the message cap but over its binding's 1 MiB result cap: OUTPUT_TOO_LARGE."""
    from scopetool import bind

    with anyio.fail_after(LIMIT):
        async with connect(hostile("big-result=2"), name="hostile") as client:
            binding = bind(client.tools[0], max_output_bytes=CAP)
            with pytest.raises(Failure) as caught:
                await binding.call(binding.contract.prepare(Request("echo", '{"text": "hi"}')))
    assert caught.value.output.text() == f'error: tool "echo" failed: its result was over {CAP} bytes'


async def test_connect_refuses_a_cap_that_is_not_a_positive_integer() -> None:
    """A zero or fractional cap is a ValueError naming the argument."""
    with pytest.raises(ValueError, match="max_message_bytes"):
        async with connect(hostile(), name="hostile", max_message_bytes=0):
            pass  # pragma: no cover - never reached
    with pytest.raises(ValueError, match="max_description_bytes"):
        async with connect(hostile(), name="hostile", max_description_bytes=True):
            pass  # pragma: no cover - never reached
    with pytest.raises(ValueError, match="max_listing_bytes"):
        async with connect(hostile(), name="hostile", max_listing_bytes=-1):
            pass  # pragma: no cover - never reached


@pytest.mark.parametrize("how", ["json", "sse"])
async def test_an_http_message_over_the_cap_fails_the_call_with_a_clear_text(how: str) -> None:
    """A 2 MiB answer over a 1 MiB cap, as a JSON body or as one event: the call fails with TOO_LARGE."""
    with serving(hostile_app(2 * MIB, how)) as url:
        failure = await failure_of(HttpServer(url), max_message_bytes=CAP)
    assert failure.output.text() == TOO_LARGE.format(name="echo", limit=CAP)


@pytest.mark.parametrize("how", ["json", "sse"])
async def test_an_http_message_under_the_cap_is_delivered(how: str) -> None:
    """The cap refuses nothing under it: a 512 KiB answer arrives whole, either way."""
    with serving(hostile_app(MIB // 2, how)) as url, anyio.fail_after(LIMIT):
        async with connect(HttpServer(url), name="hostile", max_message_bytes=CAP) as client:
            assert len((await echo(client)).output.text() or "") == MIB // 2


@pytest.mark.parametrize("how", ["json", "sse"])
async def test_a_deeply_nested_schema_over_http_refuses_its_tool_and_keeps_the_others(how: str) -> None:
    """Over HTTP too (a JSON body or an event): a tool nested 150 deep is refused alone, echo stays callable."""
    with serving(hostile_app(2, how, deep_schema=150)) as url, anyio.fail_after(LIMIT):
        async with connect(HttpServer(url), name="hostile") as client:
            assert [tool.definition().name for tool in client.tools] == ["echo"]
            assert "nests deeper than 64 levels" in client.refused["deep"]
            assert (await echo(client)).output.text() == "yy"


async def test_an_encoded_http_body_is_refused() -> None:
    """A gzip body the client did not ask for (its raw size does not bound it): refused, not inflated."""
    with serving(hostile_app(2 * MIB, "gzip")) as url:
        failure = await failure_of(HttpServer(url), max_message_bytes=CAP)
    assert failure.output.text() == TOO_LARGE.format(name="echo", limit=CAP)
    assert "encoded (compressed) body" in str(failure.cause)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("maxMessageBytes", 0),
        ("maxMessageBytes", 1.5),
        ("maxDescriptionBytes", "16k"),
        ("maxDescriptionBytes", True),
        ("maxListingBytes", -1),
    ],
)
def test_the_gateway_caps_are_checked(key: str, value: object) -> None:
    """A gateway cap that is not a whole number of bytes > 0 is a one-line ConfigError naming the key."""
    config = {"mcpServers": {"h": {"command": "python"}}, "gateway": {key: value}}
    with pytest.raises(ConfigError, match=rf"^config: gateway\.{key}: must be a whole number of bytes > 0"):
        parse_config(config)


def test_the_gateway_passes_its_message_cap_to_each_server() -> None:
    """maxMessageBytes reaches connect: a 2 MiB result behind the gateway is an error result naming the cap."""
    config = parse_config(
        {
            "mcpServers": {"h": {"command": sys.executable, "args": [str(HOSTILE), "big-result=2"]}},
            "gateway": {"maxMessageBytes": CAP},
        }
    )
    assert config.max_message_bytes == CAP
    texts: list[str] = []

    async def session() -> None:
        with anyio.fail_after(LIMIT):
            async with (
                open_gateway(config, errlog=io.StringIO()) as gateway,
                Client(create_server(gateway.registry, on_call=gateway.observe)) as client,
            ):
                result = await client.call_tool("echo", {"text": "hi"})
                assert result.is_error
                texts.extend(block.text for block in result.content if block.type == "text")

    anyio.run(session)
    assert texts == [TOO_LARGE.format(name="echo", limit=CAP)]


async def test_the_gateway_passes_its_listing_cap_to_each_server() -> None:
    """maxListingBytes reaches connect: a server paging without end is not served, its error naming the cap."""
    config = parse_config(
        {
            "mcpServers": {"h": {"command": sys.executable, "args": [str(HOSTILE), "endless-pages=64"]}},
            "gateway": {"maxListingBytes": CAP},
        }
    )
    assert config.max_listing_bytes == CAP
    said = io.StringIO()
    with anyio.fail_after(LIMIT):
        async with open_gateway(config, errlog=said) as gateway:
            assert not gateway.registry.names()
    assert f"over {CAP} bytes (the cap, max_listing_bytes)" in said.getvalue()


async def test_a_server_that_ignores_the_end_of_its_input_is_killed_on_exit() -> None:
    """Leaving connect stops a server that stays after its input ends: killed after the grace period, not waited on."""
    started = time.monotonic()
    with anyio.fail_after(LIMIT):
        async with connect(hostile("linger"), name="hostile") as client:
            assert (await echo(client)).output.text() == "hi"
    assert time.monotonic() - started < 10


async def lines_of(chunks: list[bytes], limit: int) -> list[bytes]:
    """What `read_lines` makes of `chunks` (a stream that ends after them)."""
    send, receive = anyio.create_memory_object_stream[bytes](len(chunks))
    with send:
        for chunk in chunks:
            send.send_nowait(chunk)
    with receive:
        return [line async for line in read_lines(cast("ByteReceiveStream", receive), limit)]


async def test_lines_are_split_as_they_come_and_capped_wherever_they_end() -> None:
    """Lines across chunks are joined once; a line over the cap is refused whether or not its newline came."""
    assert await lines_of([b'{"a"', b": 1}\n\n{", b"}\n"], 16) == [b'{"a": 1}', b"", b"{}"]
    assert await lines_of([b"12345678\n"], 8) == [b"12345678"]
    with pytest.raises(MessageTooLargeError, match="over 8 bytes"):
        await lines_of([b"123456789\n"], 8)
    with pytest.raises(MessageTooLargeError):
        await lines_of([b"12345", b"6789"], 8)


def test_a_line_is_parsed_as_the_sdk_parses_it_and_deeper() -> None:
    """Not JSON: an error value, as the SDK hands it on; nested past pydantic's parser: the standard one's."""
    assert isinstance(parse_message(b"this is not JSON"), Exception)
    deep: dict[str, object] = {}
    for _ in range(150):
        deep = {"a": deep}
    parsed = parse_message(json.dumps({"jsonrpc": "2.0", "id": 1, "result": deep}).encode())
    assert isinstance(parsed, SessionMessage) and isinstance(parsed.message, types.JSONRPCResponse)
    assert isinstance(parse_message(b"[" * 100_000 + b"]" * 100_000), Exception)  # past even Python's parser


def test_a_listing_whose_tools_are_not_a_list_is_left_to_the_sdk() -> None:
    """An answer to tools/list without a list of tools passes as it is (the SDK refuses it whole)."""
    listing = ToolListing()
    request = types.JSONRPCRequest(jsonrpc="2.0", id=7, method="tools/list", params={})
    listing.sent(SessionMessage(request))
    answer = SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=7, result={"tools": "none"}))
    assert listing.received(answer) is answer
    assert listing.refused == {}


async def test_a_line_that_is_not_json_is_logged_with_the_server_name(caplog: pytest.LogCaptureFixture) -> None:
    """A line that is not JSON is said in a warning naming the server, without the line (the call still waits)."""
    with anyio.move_on_after(1), caplog.at_level("WARNING", logger="scopetool.mcp.client"):
        async with connect(hostile("garbage-call"), name="hostile") as client:
            with anyio.move_on_after(0.5):
                await echo(client)
    [warning] = [record.getMessage() for record in caplog.records if "JSON-RPC" in record.getMessage()]
    assert warning.startswith(
        "MCP server 'hostile' sent a line of 16 bytes that is not a JSON-RPC message: Invalid JSON"
    )
    assert "this is not JSON" not in warning


def test_a_listing_that_is_wrong_itself_is_left_to_the_sdk() -> None:
    """A page whose own fields are wrong (not one tool's) passes whole: the SDK refuses it, no tool is blamed."""
    listing = ToolListing(lambda: "2025-11-25")
    listing.sent(SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=8, method="tools/list", params={})))
    tool = {"name": "echo", "inputSchema": {"type": "object"}}
    answer = SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=8, result={"tools": [tool], "nextCursor": 5}))
    assert listing.received(answer) is answer
    assert listing.refused == {}


def deep_listing(ident: int) -> bytes:
    """An answer to tools/list listing echo and a tool nested 150 deep (past the SDK's parser)."""
    schema: dict[str, object] = {"type": "object"}
    for _ in range(150):
        schema = {"type": "object", "properties": {"a": schema}}
    tools = [ECHO, {**ECHO, "name": "deep", "inputSchema": schema}]
    return json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"tools": tools}}).encode()


async def read_through_the_cap(listing: ToolListing, chunks: list[bytes], *, events: bool, method: str) -> bytes:
    """Send a `method` request (id 3) through a capped client whose server answers `chunks`; the body read."""

    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    kind = "text/event-stream" if events else "application/json"
    answer = httpx2.MockTransport(lambda _: httpx2.Response(200, headers={"content-type": kind}, content=body()))
    async with httpx2.AsyncClient(transport=answer) as client:
        cap_responses(client, CAP, Cut(), listing)
        message = {"jsonrpc": "2.0", "id": 3, "method": method, "params": {"arguments": {"text": "tools/list"}}}
        try:
            return (await client.post("http://127.0.0.1/mcp", json=message)).content
        except httpx2.StreamError:
            return b""


def parse_error(ident: int) -> SessionMessage:
    """What the SDK's HTTP transport hands the session for an answer it cannot parse."""
    error = types.ErrorData(code=types.PARSE_ERROR, message="Failed to parse JSON response: recursion limit")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=ident, error=error))


def listing_of(*methods: str) -> ToolListing:
    """A ToolListing that saw a request with id 3 for each of `methods`."""
    listing = ToolListing(lambda: "2025-11-25")
    for method in methods:
        listing.sent(SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=3, method=method, params={})))
    return listing


async def test_an_event_stream_listing_split_over_chunks_is_parsed_again_from_what_was_held() -> None:
    """Events split anywhere: the event in progress is held, not those parsed before it; the deep answer is found."""
    notice = b'data: {"jsonrpc":"2.0","id":2,"result":{"tools":[]}}\n\n'  # parsed already: if held, taken first
    others = b": a comment\n\nevent: ping\ndata: p\n\nid: 0\ndata:\n\n"  # held: the last chunk starts in the ping
    stream = notice + others + b"id: 1\ndata: " + deep_listing(3) + b"\n\n"
    cuts = [7, len(notice) + 1, len(notice) + 20]
    chunks = [stream[start:end] for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    listing = listing_of("tools/list")
    assert await read_through_the_cap(listing, chunks, events=True, method="tools/list") == stream
    answer = listing.received(parse_error(3))
    assert isinstance(answer, SessionMessage) and isinstance(answer.message, types.JSONRPCResponse)
    assert [tool["name"] for tool in answer.message.result["tools"]] == ["echo"]
    assert "nests deeper than 64 levels" in listing.refused["deep"]


@pytest.mark.parametrize("events", [False, True])
async def test_a_listing_refused_for_its_size_is_not_parsed_again(events: bool) -> None:
    """A listing over the cap holds nothing: the SDK's error stands, no part of it is taken for the answer."""
    body = deep_listing(3)
    body = b"data: " + body + b"\n\n" if events else body
    listing = listing_of("tools/list")
    await read_through_the_cap(listing, [body, b" " * (CAP + 1)], events=events, method="tools/list")
    error = parse_error(3)
    assert listing.received(error) is error
    assert listing.refused == {}


async def test_only_a_watched_listing_is_held_and_only_a_parse_error_is_replaced() -> None:
    """A call naming tools/list, a listing not watched, a JSON body cut short, an error that is not a parse error."""
    body = deep_listing(3)
    for method, watched in (("tools/call", "tools/list"), ("tools/list", "tools/call")):
        listing = listing_of(watched)
        await read_through_the_cap(listing, [body], events=False, method=method)
        error = parse_error(3)
        assert listing.received(error) is error
    listing = listing_of("tools/list")
    await read_through_the_cap(listing, [body[:-1]], events=False, method="tools/list")
    error = parse_error(3)
    assert listing.received(error) is error  # a body cut short is no answer
    listing = listing_of("tools/list")
    await read_through_the_cap(listing, [body], events=False, method="tools/list")
    failed = SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=3, error=types.ErrorData(code=-32603, message="x")))
    assert listing.received(failed) is failed
    assert listing.refused == {}
