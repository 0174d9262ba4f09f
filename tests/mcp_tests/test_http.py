"""The MCP server over Streamable HTTP: the official SDK client (2025 sessions and 2026-07-28), raw bodies, the CLI.

One server (`serve_http` on a free loopback port, in a thread of its own) serves the whole module; the
``scopetool serve --http`` tests start the command itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, MCPError, types
from mcp.client.session import ClientRequestContext
from mcp_fixture_tools import SECRET, registry

from scopetool import Registry, tool
from scopetool.cli._common import UsageError
from scopetool.cli._serve import http_address
from scopetool.mcp._http_server import _StrictBodies
from scopetool.mcp.server import HttpSettings, create_server, http_app, run_http, serve_http

FIXTURE = Path(__file__).with_name("mcp_fixture_tools.py")
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
PAGE = 4


class Served:
    """A server running `serve_http` on its own event loop in a thread, until `stop`."""

    def __init__(self, tools: Registry, *, port: int = 0, **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.url = ""
        self.task: asyncio.Task[None] | None = None

        def on_ready(url: str) -> None:
            self.url = url
            self.ready.set()

        async def main() -> None:
            self.task = asyncio.current_task()  # type: ignore[assignment]
            with contextlib.suppress(asyncio.CancelledError):  # how `stop` ends it
                await serve_http(tools, port=port, ready=on_ready, **options)

        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(main(),), daemon=True)
        self.thread.start()
        assert self.ready.wait(30), "the server did not start"

    def stop(self) -> None:
        """Cancel the server (as a task group would) and wait for it to end."""
        assert self.task is not None
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(30)
        assert not self.thread.is_alive()
        self.loop.close()


@pytest.fixture(scope="module")
def url() -> Generator[str]:
    """The URL of the fixture registry's server (pages of `PAGE` tools), for the whole module."""
    served = Served(registry, name="fixture-tools", instructions="Use the tools.", page_size=PAGE)
    yield served.url
    served.stop()


def text(result: types.CallToolResult) -> str:
    """The result's one text block."""
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


class Person:
    """Answers elicitations in order, and remembers the prompts."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.prompts.append(params.message)
        return self.answers.pop(0)


async def every_tool(client: Client) -> list[types.Tool]:
    """Every tool, following nextCursor page by page."""
    page = await client.list_tools()
    tools = list(page.tools)
    while page.next_cursor is not None:
        assert len(page.tools) == PAGE
        page = await client.list_tools(cursor=page.next_cursor)
        tools.extend(page.tools)
    return tools


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_client_lists_calls_and_sees_protocol_errors(url: str, mode: str) -> None:
    """Both eras: the list by pages in order, results, a safe rejection, -32602 for an unknown tool or cursor."""
    async with Client(url, mode=mode) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else MODERN)
        tools = await every_tool(client)
        added = await client.call_tool("add", {"a": 2, "b": 3})
        rejected = await client.call_tool("add", {"a": "two", "b": 3, "colour": SECRET})
        crashed = await client.call_tool("connect", {"host": "db.internal"})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("drop_tables", {})
        with pytest.raises(MCPError) as cursor:
            await client.list_tools(cursor="not-a-cursor")
        info = (client.server_info, client.instructions)
    assert [t.name for t in tools] == [d.name for d in registry.definitions()]
    assert (text(added), added.structured_content) == ("5", {"result": 5})
    assert rejected.is_error and "$.a: Input should be a valid integer (got a string)" in text(rejected)
    assert SECRET not in rejected.model_dump_json() and '"two"' not in rejected.model_dump_json()
    assert (crashed.is_error, text(crashed)) == (True, 'error: tool "connect" failed')
    assert (unknown.value.code, unknown.value.message) == (-32602, 'error: tool "drop_tables" is not available')
    assert (cursor.value.code, cursor.value.message) == (-32602, "Invalid params: unknown cursor")
    assert info[0] is not None and (info[0].name, info[1]) == ("fixture-tools", "Use the tools.")


async def test_a_2025_session_gets_progress_and_elicitations_over_sse(url: str) -> None:
    """A 2025 session: progress in order, and an elicitation asked on the call's stream resumes the call."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    person = Person(types.ElicitResult(action="accept", content={"answer": True}), types.ElicitResult(action="decline"))
    async with Client(url, mode="legacy", elicitation_callback=person) as client:
        counted = await client.call_tool("count", {"steps": 3}, progress_callback=on_progress)
        approved = await client.call_tool("approve", {"item": "invoice-7"})
        declined = await client.call_tool("approve", {"item": "invoice-8"})
    assert text(counted) == "counted to 3"
    assert seen == [(float(n), 3.0, f"step {n}") for n in range(1, 4)]
    assert person.prompts == ["Approve the transfer?", "Approve the transfer?"]
    assert json.loads(text(approved))["answer"] is True
    assert text(declined) == 'error: tool "approve" needs input, and the request for it was declined'


async def test_a_2026_client_answers_input_required_by_retrying(url: str) -> None:
    """2026-07-28 over HTTP: input_required, then the SDK's retry carries the answer and resumes the call."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    person = Person(types.ElicitResult(action="accept", content={"email": "ada@example.com", "plan": "free"}))
    async with Client(url, mode=MODERN, elicitation_callback=person) as client:
        profile = await client.call_tool("profile", {"item": "account"})
        counted = await client.call_tool("count", {"steps": 2}, progress_callback=on_progress)
    assert person.prompts == ['{"ask": "your profile"}']
    assert json.loads(text(profile))["answer"] == {"email": "ada@example.com", "plan": "free"}
    assert text(counted) == "counted to 2" and seen == [1.0, 2.0]


def post(
    url: str, body: bytes, *, method: str = "tools/call", name: str | None = "add", **headers: str
) -> httpx.Response:
    """One 2026-07-28 POST of `body`, with the headers that era requires."""
    sent = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": method,
        **({"mcp-name": name} if name else {}),
        **headers,
    }
    return httpx.post(url, content=body, headers=sent)


def call_body(arguments: str) -> bytes:
    """A tools/call of ``add`` whose arguments are the exact text `arguments`."""
    meta = json.dumps(META)
    params = f'{{"name":"add","arguments":{arguments},"_meta":{meta}}}'
    return f'{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{params}}}'.encode()


def test_a_repeated_member_name_in_the_arguments_reaches_prepare(url: str) -> None:
    """{"a":1,"a":2} is not collapsed by the SDK's parser: prepare rejects it, as over stdio; a clean body runs."""
    repeated = post(url, call_body('{"a":1,"a":2,"b":3}'))
    surrogate = post(url, call_body('{"a":1,"b":3,"note":"\\ud800"}'))
    clean = post(url, call_body('{"a":1,"b":3}'))
    for answer in (repeated, surrogate):
        assert answer.status_code == 200
        result = answer.json()["result"]
        assert result["isError"] is True and result["content"][0]["text"].startswith("invalid arguments for tool 'add'")
    assert "same member name twice" in repeated.json()["result"]["content"][0]["text"]
    assert clean.json()["result"]["structuredContent"] == {"result": 4}


def test_a_body_that_is_not_i_json_or_not_json_is_refused_before_the_sdk(url: str) -> None:
    """A repeated name outside the arguments is -32600 (its id kept when unique); a body that is not JSON is -32700."""
    meta = json.dumps(META)
    outside = post(
        url,
        b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":%s,"_meta":{}}}' % meta.encode(),
        method="tools/list",
        name=None,
    )
    broken = post(url, b'{"jsonrpc":"2.0",', method="tools/list", name=None)
    assert outside.status_code == 400
    assert outside.json()["id"] == 3 and outside.json()["error"]["code"] == -32600
    assert "not I-JSON" in outside.json()["error"]["message"]
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700


def test_only_loopback_hosts_reach_a_loopback_server(url: str) -> None:
    """The SDK's DNS-rebinding protection is on: a Host header naming another machine is refused (421)."""
    assert post(url, call_body('{"a":1,"b":2}'), host="attacker.example").status_code == 421


async def test_http_app_mounts_in_any_asgi_server() -> None:
    """`http_app` is a plain ASGI app: driven in process by httpx with its lifespan, it serves a 2026 call."""

    @tool
    def echo(word: str) -> str:
        """Echo a word."""
        return word

    app = http_app(Registry(echo), name="echoes")
    async with _lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as client:
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"word": "hi"}, "_meta": META},
            }
            headers = {
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": MODERN,
                "mcp-method": "tools/call",
                "mcp-name": "echo",
            }
            answer = await client.post("/mcp", json=body, headers=headers)
    assert answer.json()["result"]["content"] == [{"type": "text", "text": "hi"}]


class _lifespan:
    """Run an ASGI app's lifespan (startup, then shutdown) around a block."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> None:
        async def send(message: dict[str, Any]) -> None:
            await self.sent.put(message)

        self.task = asyncio.ensure_future(
            self.app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, self.queue.get, send)
        )
        await self.queue.put({"type": "lifespan.startup"})
        assert (await self.sent.get())["type"] == "lifespan.startup.complete"

    async def __aexit__(self, *exc: object) -> None:
        await self.queue.put({"type": "lifespan.shutdown"})
        assert (await self.sent.get())["type"] == "lifespan.shutdown.complete"
        assert self.task is not None
        await self.task


def test_an_http_address_is_host_and_port_with_loopback_by_default() -> None:
    """PORT alone is 127.0.0.1:PORT; IPv6 needs brackets; a bad port or host is one line naming it."""
    assert http_address("8000") == ("127.0.0.1", 8000)
    assert http_address("0.0.0.0:80") == ("0.0.0.0", 80)
    assert http_address("[::1]:0") == ("::1", 0)
    for bad, message in [
        ("::1:80", "IPv6 host in brackets"),
        (":80", "give HOST:PORT"),
        ("[nope]:80", "'nope' is not an IPv6 address"),
        ("70000", "from 0 to 65535"),
        ("localhost:http", "from 0 to 65535"),
    ]:
        with pytest.raises(UsageError, match=message.replace("[", r"\[")):
            http_address(bad)


def serve_command(*extra: str) -> subprocess.Popen[str]:
    """``scopetool serve FIXTURE --http 127.0.0.1:0 ...`` started as a user would, stderr read by the test."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "scopetool", "serve", f"{FIXTURE}:registry", "--http", "127.0.0.1:0", *extra]
    return subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )


async def test_scopetool_serve_http_says_what_it_serves_and_stops_on_one_ctrl_c() -> None:
    """A warning (no authentication), one line naming the tools, the name and the URL; one SIGINT ends it, exit 130."""
    with serve_command("--name", "fixture-tools", "--instructions", "Be brief.") as process:
        try:
            assert process.stderr is not None
            warning = await asyncio.to_thread(process.stderr.readline)
            assert warning.startswith("scopetool: WARNING: no authentication: any program on this machine")
            line = await asyncio.to_thread(process.stderr.readline)
            prefix = f"scopetool: serving {len(registry)} tools as MCP server 'fixture-tools' at http://127.0.0.1:"
            assert line.startswith(prefix) and line.endswith(
                "/mcp (Streamable HTTP); waiting for a client (Ctrl-C stops)\n"
            )
            url = line.split(" at ", 1)[1].split(" ", 1)[0]
            async with Client(url, mode="legacy") as client:
                assert client.instructions == "Be brief."
                assert text(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
            process.send_signal(signal.SIGINT)
            rest = await asyncio.to_thread(process.stderr.read)
            code = await asyncio.to_thread(process.wait, 30)
        finally:
            process.kill()
    assert (code, rest) == (130, "scopetool: interrupted\n")


def test_scopetool_serve_http_on_a_busy_port_is_one_line() -> None:
    """A port already taken: one usage line naming the address, exit 2."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run(
            [sys.executable, "-m", "scopetool", "serve", f"{FIXTURE}:registry", "--http", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.startswith(f"scopetool: --http 127.0.0.1:{port}: cannot listen there: OSError:")
    assert done.stderr.count("\n") == 1


def test_run_http_serves_until_sigint_and_then_raises_keyboard_interrupt() -> None:
    """In the main thread, as the CLI runs it: served until SIGINT (Ctrl-C), then the interrupt reaches the caller."""
    answers: list[httpx.Response] = []

    def ready(url: str) -> None:
        def client() -> None:
            answers.append(post(url, call_body('{"a":1,"b":2}')))
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=client).start()

    with pytest.raises(KeyboardInterrupt):
        run_http(registry, port=0, ready=ready, shutdown_grace=5.0)
    [answer] = answers
    assert answer.json()["result"]["structuredContent"] == {"result": 3}


def test_bad_server_options_are_refused_before_serving() -> None:
    """A page size that is not a positive integer, or a grace that is not a duration, is a ValueError naming it."""
    for size in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="page_size must be a positive integer or None"):
            create_server(registry, page_size=size)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shutdown_grace must be a number of seconds >= 0"):
        asyncio.run(serve_http(registry, port=0, shutdown_grace=-1.0))


class Downstream:
    """The ASGI app behind the body screen: records what reaches it."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, Any], bytes]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        message = await receive()
        self.seen.append((scope, message.get("body", b"")))


async def screen(*messages: dict[str, Any]) -> tuple[Downstream, list[dict[str, Any]]]:
    """POST `messages` (the ASGI receive events) through the screen; what reached the app, and what was sent back."""
    app, sent, queue = Downstream(), [], list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await _StrictBodies(app, HttpSettings())({"type": "http", "method": "POST", "headers": []}, receive, send)
    return app, sent


async def test_the_body_screen_reads_chunks_and_hands_on_what_passes() -> None:
    """A body in chunks is read whole; a clean one passes as sent; arguments that break I-JSON pass as {} beside."""
    clean = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    app, sent = await screen(
        {"type": "http.request", "body": clean[:10], "more_body": True},
        {"type": "http.request", "body": clean[10:], "more_body": False},
    )
    assert ([body for _, body in app.seen], sent) == ([clean], [])
    repeated = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"a":2}}}'
    app, _ = await screen({"type": "http.request", "body": repeated})
    [(scope, body)] = app.seen
    assert json.loads(body)["params"]["arguments"] == {}
    assert scope["scopetool.raw_arguments"].text == b'{"a":1,"a":2}'


async def test_the_body_screen_drops_a_disconnect_and_turns_a_bad_response_into_an_error() -> None:
    """A client gone before its body reaches nothing; its response that breaks I-JSON reaches the server as an error."""
    app, sent = await screen()
    assert (app.seen, sent) == ([], [])
    app, sent = await screen({"type": "http.request", "body": b'{"jsonrpc":"2.0","id":5,"result":{},"result":{}}'})
    [(_, body)] = app.seen
    assert sent == [] and json.loads(body)["error"]["code"] == -32600 and json.loads(body)["id"] == 5
