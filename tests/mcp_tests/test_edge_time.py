"""Time at the edge: every remote operation of the MCP client and the gateway is bounded, and cancels cleanly.

The hostile MCP server (`hostile_server.py`) hangs a listing or a call, answers with a line that is
not JSON, crashes mid-call or answers with the JSON-RPC error -32000; a command that never speaks
stands for a server that never starts. Each bound is set short through `connect`'s arguments or the
gateway's config keys, so each test takes about a second.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from mcp import Client, types
from mcp.server.lowlevel import Server
from test_client_http import http

from scopetool import Failure, Request, Result, bind
from scopetool.mcp.client import (
    CALL_TIMEOUT,
    REFUSED,
    TIMED_OUT,
    UNAVAILABLE,
    ConnectError,
    HttpServer,
    MCPClient,
    ServerSpec,
    StdioServer,
    connect,
)
from scopetool.mcp.gateway import ConfigError, load_config, open_gateway, parse_config
from scopetool.mcp.server import create_server

HERE = Path(__file__).resolve().parent
HOSTILE = HERE / "hostile_server.py"
RECORDER = HERE / "recorder.py"
TOOLS = HERE / "edge_time_tools.py"
SILENT = StdioServer(command=sys.executable, args=("-c", "import sys; sys.stdin.read()"))
"""A server that never says a word (it never starts), and exits when its input closes."""
SHORT = 0.3
"""The bound each test waits out (seconds)."""
PROMPT = 8.0
"""Well past every short bound plus the SDK's grace for stopping a stdio server that ignores its closed input
(2 s), and far below the defaults: an answer within it was bounded by the short setting."""


def hostile(*behaviours: str) -> StdioServer:
    """The hostile server with `behaviours`."""
    return StdioServer(command=sys.executable, args=(str(HOSTILE), *behaviours))


def hostile_entry(*behaviours: str, **keys: Any) -> dict[str, Any]:
    """The hostile server as an ``mcpServers`` entry, with gateway keys."""
    return {"command": sys.executable, "args": [str(HOSTILE), *behaviours], **keys}


@contextmanager
def quiet() -> Iterator[TextIO]:
    """Somewhere for the servers' standard error to go."""
    with open(os.devnull, "w") as devnull:
        yield devnull


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Assert that the block took less than `seconds`."""
    started = time.monotonic()
    yield
    assert time.monotonic() - started < seconds


async def call_echo(client: MCPClient) -> Result:
    """Admit ``echo`` with a text and run it on the server."""
    binding = bind(client.tools[0])
    return await binding.call(binding.contract.prepare(Request("echo", '{"text": "hi"}')))


async def failure_of(spec: ServerSpec, *, call_timeout: float = CALL_TIMEOUT) -> Failure:
    """The `Failure` of one ``echo`` call on `spec`."""
    with quiet() as errlog:
        async with connect(spec, name="hostile", errlog=errlog, call_timeout=call_timeout) as client:
            with pytest.raises(Failure) as raised:
                await call_echo(client)
    return raised.value


# --- the client ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["hang-call", "garbage-call"])
async def test_a_call_the_server_does_not_answer_fails_at_the_call_timeout(tmp_path: Path, behaviour: str) -> None:
    """No answer, or a non-JSON line (the SDK drops it): a fixed text at the call timeout, and the call is cancelled."""
    log = tmp_path / "sent.jsonl"
    with within(PROMPT):
        failure = await failure_of(recorded(log, hostile(behaviour)), call_timeout=SHORT)
    assert failure.output.text() == TIMED_OUT.format(name="echo", seconds=SHORT)
    assert failure.output.text() == 'error: tool "echo" timed out: its MCP server did not answer within 0.3 s'
    assert isinstance(failure.cause, TimeoutError) and "'hostile'" in str(failure.cause)
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    [call] = [message for message in sent if message.get("method") == "tools/call"]
    cancelled = [
        message["params"]["requestId"] for message in sent if message.get("method") == "notifications/cancelled"
    ]
    assert cancelled == [call["id"]]


async def test_a_listing_that_never_ends_is_a_connect_error_naming_the_server_and_the_bound() -> None:
    """``tools/list`` never answered: `connect` raises ConnectError at the list timeout."""
    with within(PROMPT), quiet() as errlog, pytest.raises(ConnectError) as raised:
        async with connect(hostile("hang-list"), name="hostile", errlog=errlog, list_timeout=SHORT):
            pass  # pragma: no cover - never reached
    assert str(raised.value) == "MCP server 'hostile' did not list its tools within 0.3 s"


async def test_a_server_that_never_starts_is_a_connect_error_naming_the_server_and_the_bound() -> None:
    """The handshake never answered: `connect` raises ConnectError at the start timeout."""
    with within(PROMPT), quiet() as errlog, pytest.raises(ConnectError) as raised:
        async with connect(SILENT, name="silent", errlog=errlog, start_timeout=SHORT):
            pass  # pragma: no cover - never reached
    assert str(raised.value) == "MCP server 'silent' did not start within 0.3 s"


async def test_a_json_rpc_error_is_a_refusal_and_only_a_closed_connection_is_unreachable() -> None:
    """-32000 from the server is REFUSED (its message private); a server that exits mid-call is UNAVAILABLE, at once."""
    refused = await failure_of(hostile("error-call"))
    assert refused.output.text() == REFUSED.format(name="echo")
    assert "upstream secret" in str(refused.cause) and "upstream secret" not in (refused.output.text() or "")
    with within(PROMPT):  # not the call timeout (the default, minutes): the closed pipe answers
        crashed = await failure_of(hostile("crash-call"))
    assert crashed.output.text() == UNAVAILABLE.format(name="echo")


@pytest.mark.parametrize("argument", ["start_timeout", "list_timeout", "call_timeout"])
@pytest.mark.parametrize("value", [0, -1, math.inf, math.nan, True, "5"])
async def test_a_timeout_that_is_not_a_positive_finite_number_is_refused(argument: str, value: Any) -> None:
    """Each bound is checked before anything starts: a ValueError naming the argument."""
    with pytest.raises(ValueError, match=f"^{argument} must be a positive finite number of seconds"):
        async with connect(hostile(), name="hostile", **{argument: value}):
            pass  # pragma: no cover - never reached


# --- cancellation -----------------------------------------------------------------------------------


async def open_and_call(spec: ServerSpec) -> None:
    """Connect to `spec` and call its first tool (each test's cancel scope ends it somewhere)."""
    with quiet() as errlog:
        async with connect(spec, name="hostile", errlog=errlog) as client:
            tool = client.tools[0]
            await tool.call(bind(tool).contract.prepare(Request("echo", '{"text": "hi"}')))


def recorded(log: Path, spec: StdioServer) -> StdioServer:
    """`spec` run under the recorder, which writes the server's process id to ``LOG.pid``."""
    return StdioServer(command=sys.executable, args=(str(RECORDER), str(log), spec.command, *spec.args))


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (and been reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("scope", ["anyio.move_on_after", "asyncio.timeout"])
@pytest.mark.parametrize("phase", ["start", "list", "call"])
async def test_a_cancel_scope_around_connect_cancels_cleanly_and_stops_the_server(
    tmp_path: Path, phase: str, scope: str
) -> None:
    """A cancel scope around ``async with connect(...)`` ends it in any phase, no RuntimeError; the server stops."""
    log = tmp_path / "sent.jsonl"
    spec = recorded(log, {"start": SILENT, "list": hostile("hang-list"), "call": hostile("hang-call")}[phase])
    # Past the start, the bound must leave the server time to start and list (slower on a loaded machine):
    # the later phases hang for ever, so a longer bound still ends them where they hang.
    bound = SHORT if phase == "start" else 2.0
    with within(PROMPT):
        if scope == "asyncio.timeout":
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(bound):
                    await open_and_call(spec)
        else:
            with anyio.move_on_after(bound) as moved:
                await open_and_call(spec)
            assert moved.cancelled_caught
    assert gone(int(Path(f"{log}.pid").read_text()))
    methods = [message.get("method") for message in map(json.loads, log.read_text().splitlines())]
    last = [method for method in methods if method != "notifications/cancelled"][-1]  # what the scope cut short
    assert last == {"start": "server/discover", "list": "tools/list", "call": "tools/call"}[phase]


# --- over Streamable HTTP ---------------------------------------------------------------------------


@contextmanager
def mute_endpoint() -> Iterator[str]:
    """A loopback port that takes connections and never answers a byte: an MCP endpoint that never starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"


async def hanging_call(context: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    """``hang`` never answers (until cancelled); ``echo`` answers at once."""
    if params.name == "hang":
        await anyio.sleep_forever()
    return types.CallToolResult(content=[types.TextContent(type="text", text="still here")])


async def two_tools(context: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    """``hang`` and ``echo``, neither taking arguments."""
    listed = [types.Tool(name=name, input_schema={"type": "object", "properties": {}}) for name in ("hang", "echo")]
    return types.ListToolsResult(tools=listed)


async def test_an_http_endpoint_that_never_answers_is_a_connect_error_at_the_start_timeout() -> None:
    """Over HTTP, a connection that is accepted and never answered: ConnectError at the start timeout."""
    with within(PROMPT), mute_endpoint() as url, pytest.raises(ConnectError) as raised:
        async with connect(HttpServer(url), name="mute", start_timeout=SHORT):
            pass  # pragma: no cover - never reached
    assert str(raised.value) == "MCP server 'mute' did not start within 0.3 s"


async def test_an_http_call_past_its_timeout_fails_and_the_connection_serves_on() -> None:
    """Over HTTP, a call never answered is TIMED_OUT at the call timeout; the next call on the connection works."""
    app = Server("hanging", on_list_tools=two_tools, on_call_tool=hanging_call).streamable_http_app()
    with http(app) as url:
        async with connect(HttpServer(url), name="hanging", call_timeout=SHORT) as client:
            hang, echo = (bind(tool) for tool in client.tools)
            with within(PROMPT), pytest.raises(Failure) as raised:
                await hang.call(hang.contract.prepare(Request("hang", "{}")))
            answered = await echo.call(echo.contract.prepare(Request("echo", "{}")))
    assert raised.value.output.text() == TIMED_OUT.format(name="hang", seconds=SHORT)
    assert answered.output is not None and answered.output.text() == "still here"


# --- the gateway's config ---------------------------------------------------------------------------


def test_the_timeout_keys_are_read_for_the_gateway_and_for_each_server() -> None:
    """``startTimeout``, ``listTimeout``, ``callTimeout``: the gateway's, and each server's own, read as seconds."""
    config = parse_config(
        {
            "mcpServers": {
                "slow": {"command": "x", "startTimeout": 90, "listTimeout": 5, "callTimeout": 1800},
                "plain": {"url": "http://127.0.0.1:9/mcp", "callTimeout": None},  # null: the gateway's
            },
            "gateway": {"startTimeout": 10, "listTimeout": 2.5, "callTimeout": 60},
        }
    )
    slow, plain = config.sections
    assert (config.start_timeout, config.list_timeout, config.call_timeout) == (10.0, 2.5, 60.0)
    assert (slow.start_timeout, slow.list_timeout, slow.call_timeout) == (90.0, 5.0, 1800.0)
    assert (plain.start_timeout, plain.list_timeout, plain.call_timeout) == (None, None, None)
    defaults = parse_config({"mcpServers": {"plain": {"command": "x"}}})
    assert (defaults.start_timeout, defaults.list_timeout, defaults.call_timeout) == (30.0, 30.0, 300.0)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"gateway": {"callTimeout": 0}}, "config: gateway.callTimeout: must be a number of seconds > 0, not 0"),
        ({"gateway": {"listTimeout": "5"}}, "config: gateway.listTimeout: must be a number of seconds > 0, not '5'"),
        (
            {"git": {"callTimeout": True}},
            "config: mcpServers.git.callTimeout: must be a number of seconds > 0, not True",
        ),
        (
            {"git": {"startTimeout": [1]}},
            "config: mcpServers.git.startTimeout: must be a number of seconds > 0, not [1]",
        ),
    ],
)
def test_a_bad_timeout_is_one_line_naming_the_key_and_where(config: dict[str, Any], message: str) -> None:
    """Each bad bound, in the gateway section or a server's entry, is a one-line ConfigError naming its key."""
    entry = {"command": "x", **config.get("git", {})}
    document = {"mcpServers": {"git": entry}, "gateway": config.get("gateway", {})}
    with pytest.raises(ConfigError) as raised:
        parse_config(document)
    assert str(raised.value) == message


# --- the gateway, end to end, with the official MCP client in front ----------------------------------


def text(result: types.CallToolResult) -> str:
    """A result's text blocks, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def test_the_gateway_answers_its_client_when_upstreams_hang_fail_or_crash(tmp_path: Path) -> None:
    """Through the gateway, each hostile upstream gets a bounded, clear answer naming the tool as served."""
    config = {
        "mcpServers": {
            "slow": hostile_entry("hang-call", callTimeout=SHORT),  # its own bound
            "garbled": hostile_entry("garbage-call"),  # the gateway's bound
            "failing": hostile_entry("error-call"),
            "crashing": hostile_entry("crash-call"),
            "listless": hostile_entry("hang-list", listTimeout=SHORT),
            "silent": {"command": SILENT.command, "args": list(SILENT.args), "startTimeout": SHORT},
        },
        "scopetool": {"tools": [f"{TOOLS}:registry"]},
        "gateway": {"callTimeout": 0.4, "audit": "audit.jsonl", "prefix": "always"},
    }
    (tmp_path / "gateway.json").write_text(json.dumps(config))
    said = io.StringIO()
    results: dict[str, types.CallToolResult] = {}
    took: dict[str, float] = {}

    async def session() -> None:
        async with open_gateway(load_config(tmp_path / "gateway.json"), errlog=said) as gateway:
            server = create_server(gateway.registry, name="front", on_call=gateway.observe)
            async with Client(server, mode="legacy") as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert not {"listless__echo", "silent__echo"} & names
                for name in ("slow__echo", "garbled__echo", "failing__echo", "crashing__echo"):
                    started = time.monotonic()
                    results[name] = await client.call_tool(name, {"text": "hi"})
                    took[name] = time.monotonic() - started
                for name in ("scopetool__breaks", "scopetool__says_why"):
                    results[name] = await client.call_tool(name, {})

    with within(4 * PROMPT):
        anyio.run(session)
    shown = {name: (result.is_error, text(result)) for name, result in results.items()}
    assert shown == {
        "slow__echo": (True, 'error: tool "slow__echo" timed out: its MCP server did not answer within 0.3 s'),
        "garbled__echo": (True, 'error: tool "garbled__echo" timed out: its MCP server did not answer within 0.4 s'),
        "failing__echo": (True, 'error: tool "failing__echo" failed: its MCP server refused the call'),
        "crashing__echo": (True, 'error: tool "crashing__echo" failed: its MCP server is not reachable'),
        "scopetool__breaks": (True, 'error: tool "scopetool__breaks" failed'),
        "scopetool__says_why": (True, "the printer is out of paper"),  # the tool's own words, kept
    }
    assert all(seconds < PROMPT for seconds in took.values())
    assert "upstream secret" not in json.dumps([result.model_dump() for result in results.values()])
    lines = said.getvalue().splitlines()
    assert "scopetool proxy: listless: not served: MCP server 'listless' did not list its tools within 0.3 s" in lines
    assert "scopetool proxy: silent: not served: MCP server 'silent' did not start within 0.3 s" in lines
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    outcomes = {entry["name"]: entry["outcome"] for entry in audit if entry["event"] == "call"}
    assert outcomes == dict.fromkeys(results, "failed")
