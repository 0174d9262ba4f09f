"""The MCP client over Streamable HTTP on 127.0.0.1, against the MCP SDK's own servers (protocol 2026-07-28).

`MCPServer` (the SDK's high-level server) serves tools with structured output, annotations and an
elicitation, which on 2026-07-28 is an ``input_required`` result and a retry. A low-level SDK
``Server`` serves what a well-made server does not: a ``tools/list`` in pages, a tool that breaks
its own output schema, one that answers with a JSON-RPC error, and tools the contract cannot carry.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import anyio
import mcp_types as types
import pytest
import uvicorn
from anyio.from_thread import BlockingPortal, start_blocking_portal
from client_support import Served, served
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from scopetool import Admission, Effect, Failure, InvalidInvocationError, Request
from scopetool.mcp.client import BROKEN_OUTPUT, INVALID_RESULT, REFUSED, UNAVAILABLE, ConnectError, HttpServer, connect


class Weather(BaseModel):
    """A structured result."""

    city: str
    celsius: float


class Confirm(BaseModel):
    """What the elicitation asks for."""

    sure: bool


def ask_first(path: str) -> Elicit[Confirm]:
    """The resolver that asks before `remove` runs."""
    return Elicit(f"Remove {path}?", Confirm)


def official() -> MCPServer:
    """The SDK's high-level server with the tools the tests call."""
    server = MCPServer("weather")

    @server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
    def weather(city: str) -> Weather:
        """The weather in a city."""
        return Weather(city=city, celsius=21.5)

    @server.tool(annotations=types.ToolAnnotations(read_only_hint=False, idempotent_hint=True))
    def remove(path: str, confirm: Annotated[Confirm, Resolve(ask_first)]) -> str:
        """Remove a file, after asking."""
        return f"removed {path}" if confirm.sure else f"kept {path}"

    return server


PAGES: dict[str | None, tuple[list[types.Tool], str | None]] = {
    None: (
        [
            types.Tool(name="page_one", input_schema={"type": "object", "properties": {}}),
            types.Tool(
                name="liar",
                input_schema={"type": "object", "properties": {}},
                output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            ),
        ],
        "second",
    ),
    "second": (
        [
            types.Tool(name="grumpy", input_schema={"type": "object", "properties": {}}),
            types.Tool(name="dotted.name", input_schema={"type": "object"}),
            types.Tool(
                name="odd_format",
                input_schema={"type": "object", "properties": {"x": {"type": "string", "format": "zip-code"}}},
            ),
            types.Tool(
                name="bad_date",
                input_schema={"type": "object", "properties": {}},
                output_schema={"type": "object", "properties": {"when": {"type": "string", "format": "date"}}},
            ),
            *(
                types.Tool(name=name, input_schema={"type": "object", "properties": {}})
                for name in ("bad_image", "silent_error", "two_questions", "slow")
            ),
        ],
        None,
    ),
}
QUESTION = types.ElicitRequest(
    params=types.ElicitRequestFormParams(
        message="Sure?", requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}}
    )
)
SAMPLE = types.CreateMessageRequest(
    params=types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))], max_tokens=5
    )
)


async def list_pages(context: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    """``tools/list`` in two pages."""
    tools, cursor = PAGES[params.cursor if params else None]
    return types.ListToolsResult(tools=tools, next_cursor=cursor)


async def call_odd(context: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    """``liar`` breaks its output schema; ``grumpy`` answers with a JSON-RPC error."""
    if params.name == "liar":
        return types.CallToolResult(content=[], structured_content={"n": "not a number"})
    if params.name == "grumpy":
        raise MCPError(code=types.INTERNAL_ERROR, message="private detail: database at 10.0.0.7 is down")
    if params.name == "bad_date":  # the SDK's client does not assert formats; the contract does
        return types.CallToolResult(content=[], structured_content={"when": "the day after tomorrow"})
    if params.name == "bad_image":
        return types.CallToolResult(content=[types.ImageContent(type="image", data="%%%", mime_type="image/png")])
    if params.name == "silent_error":
        return types.CallToolResult(content=[], is_error=True)
    if params.name == "two_questions":
        return types.InputRequiredResult(input_requests={"a": QUESTION, "b": SAMPLE})  # type: ignore[return-value]
    if params.name == "slow":
        await anyio.sleep(30)
    return types.CallToolResult(content=[types.TextContent(type="text", text="page one")])


@contextmanager
def http(app: Any) -> Iterator[str]:
    """Serve `app` with uvicorn on a free 127.0.0.1 port in a thread; its MCP endpoint's URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    """An event loop in a thread for the module's connections."""
    with start_blocking_portal() as portal:
        yield portal


@pytest.fixture(scope="module")
def weather(portal: BlockingPortal) -> Iterator[Served]:
    """The `MCPServer` over HTTP, connected as a trusted server."""
    with (
        http(official().streamable_http_app()) as url,
        served(portal, HttpServer(url), name="weather", trusted=True) as s,
    ):
        yield s


@pytest.fixture(scope="module")
def odd_url() -> Iterator[str]:
    """The low-level server over HTTP: its URL."""
    with http(Server("odd", on_list_tools=list_pages, on_call_tool=call_odd).streamable_http_app()) as url:
        yield url


@pytest.fixture(scope="module")
def odd(portal: BlockingPortal, odd_url: str) -> Iterator[Served]:
    """The low-level server, connected."""
    with served(portal, HttpServer(odd_url), name="odd") as s:
        yield s


def test_http_lists_and_calls(weather: Served) -> None:
    """Over Streamable HTTP on 2026-07-28: listed, called, structured content as checked details."""
    assert weather.client.protocol_version == "2026-07-28"
    assert sorted(tool.definition().name for tool in weather.client.tools) == ["remove", "weather"]
    result = weather.call("weather", '{"city": "Lisbon"}')
    assert json.loads(result.output.details or b"") == {"city": "Lisbon", "celsius": 21.5}
    with pytest.raises(InvalidInvocationError):
        weather.binding("weather").contract.prepare(Request("weather", '{"city": 7}'))


def test_trusted_annotations_are_effects(weather: Served) -> None:
    """On a trusted server readOnlyHint is SAFE and idempotentHint IDEMPOTENT."""
    assert weather.binding("weather").definition().effect is Effect.SAFE
    assert weather.binding("remove").definition().effect is Effect.IDEMPOTENT


def test_input_required_is_an_input_request_that_resumes(weather: Served) -> None:
    """The 2026-07-28 ``input_required`` elicitation: an InputRequest; the answer resumes it statelessly."""
    binding = weather.binding("remove")
    arguments = '{"path": "notes.txt"}'
    first = weather.run(binding, binding.contract.prepare(Request("remove", arguments)))
    request = first.input_request
    assert request is not None and request.prompt == "Remove notes.txt?"
    state = request.continuation_state
    assert state["kind"] == "input_required" and isinstance(state["request_state"], str)
    for sure, text in ((True, "removed notes.txt"), (False, "kept notes.txt")):
        continuation = request.continuation({"action": "accept", "content": {"sure": sure}})
        admitted = binding.contract.prepare(Request("remove", arguments), Admission(continuation=continuation))
        assert weather.run(binding, admitted).output.text() == text


def test_every_page_is_listed_and_what_cannot_be_enforced_is_refused(odd: Served) -> None:
    """Both pages are read; a name scopetool cannot carry and an unknown format are refused, by name."""
    listed = [tool.name for tools, _ in PAGES.values() for tool in tools]
    assert list(odd.client.definitions) == listed
    assert [tool.definition().name for tool in odd.client.tools] == [
        name for name in listed if name not in ("dotted.name", "odd_format")
    ]
    refused = dict(odd.client.refused)
    assert "is not a scopetool tool name" in refused["dotted.name"]
    assert 'keyword "format"' in refused["odd_format"] and "zip-code" in refused["odd_format"]
    assert odd.call("page_one").output.text() == "page one"


def test_a_broken_output_schema_and_a_json_rpc_error_are_fixed_texts(odd: Served) -> None:
    """A result breaking its own output schema, and a JSON-RPC error: Failures whose text reveals nothing."""
    with pytest.raises(Failure) as liar:
        odd.call("liar")
    assert liar.value.output.text() == BROKEN_OUTPUT.format(name="liar")
    with pytest.raises(Failure) as grumpy:
        odd.call("grumpy")
    assert grumpy.value.output.text() == REFUSED.format(name="grumpy")
    assert "10.0.0.7" in str(grumpy.value.cause)


def test_an_unreachable_server_is_a_connect_error(portal: BlockingPortal) -> None:
    """Nothing listening: connect raises ConnectError naming the server."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()

    async def attempt() -> None:
        async with connect(HttpServer(f"http://127.0.0.1:{port}/mcp"), name="nobody"):
            pass  # pragma: no cover - never connected

    with pytest.raises(ConnectError, match="cannot connect to MCP server 'nobody'"):
        portal.call(attempt)


def test_results_the_contract_cannot_take(odd: Served) -> None:
    """A format the SDK does not check, media that is not base64, an empty error, two questions at once."""
    with pytest.raises(Failure) as date:
        odd.call("bad_date")
    assert date.value.output.text() == BROKEN_OUTPUT.format(name="bad_date")
    with pytest.raises(Failure) as image:
        odd.call("bad_image")
    assert image.value.output.text() == INVALID_RESULT.format(name="bad_image")
    with pytest.raises(Failure) as silent:
        odd.call("silent_error")
    assert silent.value.output.text() == 'error: tool "silent_error" failed'
    with pytest.raises(Failure) as questions:
        odd.call("two_questions")
    assert questions.value.output.text() == REFUSED.format(name="two_questions")
    assert "one form elicitation" in str(questions.value.cause)


def test_closing_the_client_ends_a_call_in_flight(portal: BlockingPortal, odd_url: str) -> None:
    """A call still running when its connection closes ends as a Failure with the fixed text."""
    with served(portal, HttpServer(odd_url), name="odd") as server:
        binding = server.binding("slow")
        future = portal.start_task_soon(binding.call, binding.contract.prepare(Request("slow", "{}")))
        time.sleep(0.2)  # let it reach the server; the server would answer in 30 s
    with pytest.raises(Failure) as caught:
        future.result(timeout=30)
    assert caught.value.output.text() == UNAVAILABLE.format(name="slow")


MODE = {"list": "loop"}


async def list_badly(context: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    """A ``tools/list`` that never ends (its cursor repeats) or fails."""
    if MODE["list"] == "fail":
        raise MCPError(code=types.INTERNAL_ERROR, message="no tools today")
    return types.ListToolsResult(tools=[], next_cursor="again")


@pytest.mark.parametrize(("mode", "problem"), [("loop", "repeated the tools/list cursor"), ("fail", "no tools today")])
def test_a_listing_that_fails_is_a_connect_error(portal: BlockingPortal, mode: str, problem: str) -> None:
    """A listing that repeats its cursor, or fails: ConnectError naming the server."""
    MODE["list"] = mode

    async def attempt(url: str) -> None:
        async with connect(HttpServer(url, headers={"X-Test": "1"}), name="lister"):
            pass  # pragma: no cover - never listed

    app = Server("lister", on_list_tools=list_badly).streamable_http_app()
    with http(app) as url, pytest.raises(ConnectError, match=f"MCP server 'lister'.*{problem}"):
        portal.call(attempt, url)
