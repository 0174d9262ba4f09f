"""The lean path of the gateway's stdio server and of the client's stdio connection (`scopetool.mcp._lean*`).

The server half runs in this process over OS pipes (`serve_stdio` of `scopetool.mcp._lean_server`, as
``scopetool proxy`` runs it), with the fixture tools: a call answered on the lean path, one with a
progress token and one after a non-2025 handshake on the SDK's, an input request handed to the SDK's
handler, a cancelled call never answered, a call still running when the input ends answered. Its
answers are compared with what the SDK's own path answers. The client half's pieces (`Lane`,
`Events`, the plain-result shortcut) are checked against the SDK's own checks; the gateway tests
(``test_gateway*.py``, ``test_edge_*.py``) run every call of theirs through both halves.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage
from mcp_fixture_tools import registry
from mcp_types import methods

from scopetool import Result
from scopetool.mcp._lean import Events, Lane
from scopetool.mcp._lean_server import _texts, serve_stdio  # pyright: ignore[reportPrivateUsage]
from scopetool.mcp._tool_handlers import _Tools  # pyright: ignore[reportPrivateUsage]
from scopetool.mcp.client import _plain_result  # pyright: ignore[reportPrivateUsage]

LEGACY = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def line(message: dict[str, Any]) -> str:
    """One JSON-RPC message as a stdio line."""
    return json.dumps(message) + "\n"


def call(request_id: int, name: str, meta: dict[str, Any] | None = None, **arguments: Any) -> dict[str, Any]:
    """A ``tools/call`` request (with ``_meta`` when given)."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def initialize(version: str = "2025-11-25") -> list[dict[str, Any]]:
    """The handshake at `version` (request id 1), declaring form elicitation."""
    params: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


class Client:
    """The client's ends of the pipes: send a message, read the next one, close the input."""

    def __init__(self, out: Any, into: Any) -> None:
        self._out, self._in = out, into

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message."""
        self._out.write(line(message))
        self._out.flush()

    async def read(self) -> dict[str, Any]:
        """The next message the server writes."""
        text = await anyio.to_thread.run_sync(self._in.readline, abandon_on_cancel=True)
        return dict(json.loads(text))

    def close(self) -> None:
        """End the server's input."""
        self._out.close()


async def session(
    monkeypatch: pytest.MonkeyPatch, converse: Callable[[Client], Awaitable[None]], told: list[Any]
) -> None:
    """Serve the fixture tools on the lean path over OS pipes while `converse` talks to them."""
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    with (
        open(stdout_read, encoding="utf-8") as client_in,
        open(stdin_write, "w", encoding="utf-8") as client_out,
        open(stdin_read, encoding="utf-8") as server_in,
        open(stdout_write, "w", encoding="utf-8") as server_out,
    ):
        monkeypatch.setattr(sys, "stdin", server_in)
        monkeypatch.setattr(sys, "stdout", server_out)

        async def serve() -> None:
            await serve_stdio(registry, shutdown_grace=math.inf, on_call=lambda c, o: told.append((c.id, o)))
            server_out.close()

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(serve)
                client = Client(client_out, client_in)
                await converse(client)
                if not client_out.closed:
                    client.close()


async def test_the_lean_path_answers_as_the_sdk_path_and_hands_over_what_it_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lean and SDK answers alike; input asked by the SDK's handler; cancelled: no answer; at EOF: answered."""
    got: dict[Any, dict[str, Any]] = {}
    told: list[Any] = []

    async def converse(client: Client) -> None:
        for message in initialize():
            await client.send(message)
        assert (await client.read())["id"] == 1
        await client.send(call(2, "add", a=2, b=3))  # lean
        await client.send(call(3, "add", {"progressToken": "p"}, a=2, b=3))  # the SDK's path
        await client.send(call(4, "no_such_tool"))
        await client.send(call(5, "add", a="2", b=3))  # a rejection
        await client.send(call(6, "nap", seconds=30))
        await client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 6}})
        await client.send(call(7, "approve", item="car"))  # an input request: handed to the SDK's handler
        while len(got) < 5:
            message = await client.read()
            got[message["id"] if message.get("method") != "elicitation/create" else "asked"] = message
        accept = {"action": "accept", "content": {"answer": True}}
        await client.send({"jsonrpc": "2.0", "id": got["asked"]["id"], "result": accept})
        got[7] = await client.read()
        await client.send(call(8, "nap", seconds=0.2))  # still running when the input ends: answered
        client.close()
        got[8] = await client.read()

    await session(monkeypatch, converse, told)
    added = {"content": [{"text": "5", "type": "text"}], "isError": False, "structuredContent": {"result": 5}}
    assert got[2]["result"] == got[3]["result"] == added
    assert got[4]["error"] == {"code": -32602, "message": 'error: tool "no_such_tool" is not available'}
    assert got[5]["result"]["isError"] is True and "$.a" in got[5]["result"]["content"][0]["text"]
    assert json.loads(got[7]["result"]["content"][0]["text"])["answer"] is True
    assert got[8]["result"]["content"] == [{"text": "slept 0.2s", "type": "text"}]
    assert set(got) == {2, 3, 4, 5, 7, 8, "asked"}  # never 6
    ids = [call_id for call_id, _ in told]
    assert "6" not in ids and ids.count("7") == 2  # the cancelled call never ran to an outcome; 7 asked, then ran
    assert [isinstance(outcome, Result) and outcome.input_request is not None for _, outcome in told].count(True) == 1


async def test_a_call_without_the_2025_handshake_goes_to_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2026-07-28 client (no initialize, its revision in each request's _meta) gets the SDK's own answers."""
    answers: list[dict[str, Any]] = []
    modern = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }

    async def converse(client: Client) -> None:
        await client.send(call(2, "add", modern, a=2, b=3))
        answers.append(await client.read())

    await session(monkeypatch, converse, [])
    assert answers[0]["result"]["resultType"] == "complete"
    assert answers[0]["result"]["content"] == [{"text": "5", "type": "text"}]


async def test_many_lines_at_once_are_all_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    """More lines than the reader holds at once (it pauses, then reads on): every request is answered."""
    got: list[dict[str, Any]] = []

    async def converse(client: Client) -> None:
        for message in initialize():
            await client.send(message)
        await client.read()
        for request_id in range(2, 202):
            await client.send(call(request_id, "add", a=request_id, b=0))
        got.extend([await client.read() for _ in range(200)])

    await session(monkeypatch, converse, [])
    assert sorted(answer["result"]["structuredContent"]["result"] for answer in got) == list(range(2, 202))


async def test_files_for_stdio_are_served_through_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not pipes: read and written as the SDK's path does; a bad line, odd calls and the end of the grace answered."""
    source, sink = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    hostile = '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"a":2,"b":3}}}'
    messages: list[dict[str, Any]] = [
        *initialize(),
        call(2, "add", a=2, b=3),
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": [1]}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "add", "task": {}, "arguments": {}}},
        call(6, "nap", seconds=30),
    ]
    source.write_text(
        "".join(map(line, messages[:3])) + "not json\n" + hostile + "\n" + "".join(map(line, messages[3:]))
    )
    ready: list[bool] = []
    with source.open(encoding="utf-8") as stdin, sink.open("w", encoding="utf-8") as stdout:
        monkeypatch.setattr(sys, "stdin", stdin)
        monkeypatch.setattr(sys, "stdout", stdout)
        with anyio.fail_after(30):
            await serve_stdio(registry, shutdown_grace=0.2, ready=lambda: ready.append(True))
    got = [json.loads(text) for text in sink.read_text(encoding="utf-8").splitlines()]
    by_id = {message.get("id"): message for message in got}
    assert ready == [True]
    assert by_id[2]["result"]["structuredContent"] == {"result": 5}
    assert by_id[None]["error"]["code"] == -32700  # the line that is not JSON
    assert by_id[3]["error"] == {"code": -32602, "message": "Invalid request parameters", "data": ""}  # the SDK's
    assert by_id[4]["result"]["isError"] is True  # a member the lean path does not read: the SDK's path ran it
    assert "the same member name twice" in by_id[5]["result"]["content"][0]["text"]
    assert by_id[6] == {"jsonrpc": "2.0", "id": 6, "error": {"code": -32000, "message": "Connection closed"}}
    with pytest.raises(ValueError, match="shutdown_grace"):
        await serve_stdio(registry, shutdown_grace=-1)


async def test_a_failure_of_the_lean_path_itself_is_an_internal_error_without_its_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bug of the lean path (not of the call) is answered with -32603 and a generic text; the server serves on."""
    answers: list[dict[str, Any]] = []

    async def broken(self: object, call: object) -> None:
        raise RuntimeError("private detail")

    async def converse(client: Client) -> None:
        for message in initialize():
            await client.send(message)
        await client.read()
        monkeypatch.setattr(_Tools, "lean_call", broken)
        await client.send(call(2, "add", a=2, b=3))
        answers.append(await client.read())
        await client.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        answers.append(await client.read())

    await session(monkeypatch, converse, [])
    assert answers == [
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "Internal error"}},
        {"jsonrpc": "2.0", "id": 3, "result": {}},
    ]


@pytest.mark.parametrize("version", LEGACY)
@pytest.mark.parametrize("is_error", [False, True])
def test_a_text_result_is_shaped_as_the_sdks_surface_shapes_it(version: str, is_error: bool) -> None:
    """The lean server's shortcut for text results gives what the SDK's result surface gives, on every 2025 revision."""
    result = {
        "content": [{"type": "text", "text": "a\u2028b"}, {"type": "text", "text": ""}],
        "isError": is_error,
        "resultType": "complete",
    }
    texts = _texts(result)
    assert texts is not None
    shaped = {"content": [{"text": text, "type": "text"} for text in texts], "isError": is_error}
    assert shaped == methods.serialize_server_result("tools/call", version, result)
    assert _texts({**result, "structuredContent": {}}) is None
    assert _texts({**result, "content": [{"type": "image", "data": "", "mimeType": "image/png"}]}) is None


@pytest.mark.parametrize(
    "raw",
    [
        {"content": [{"type": "text", "text": "x"}], "structuredContent": {"a": 1}},
        {"content": [{"type": "text", "text": "x", "annotations": {"priority": 2}}]},
        {"content": [{"type": "text", "text": 1}]},
        {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]},
        {"content": [], "isError": "yes"},
        {"content": {}},
        {"content": [], "_meta": {}},
        ["not", "an", "object"],
    ],
)
def test_anything_but_plain_text_gets_the_sdks_checks(raw: Any) -> None:
    """The client's shortcut takes only text blocks and isError; anything else is left to the SDK's checks."""
    assert _plain_result(raw, "2025-11-25") is None


def test_a_plain_result_is_what_the_sdk_makes_of_it() -> None:
    """Text blocks and isError pass the SDK's checks on every 2025 revision, and the shortcut reads the same texts."""
    raw = {"content": [{"type": "text", "text": "one"}, {"type": "text", "text": ""}], "isError": True}
    plain = _plain_result(raw, "2025-11-25")
    assert plain is not None and plain.texts == ("one", "") and plain.is_error
    for version in LEGACY:
        methods.validate_server_result("tools/call", version, raw)
    parsed = types.CallToolResult.model_validate(raw, by_name=False)
    assert [block.text for block in parsed.content if isinstance(block, types.TextContent)] == list(plain.texts)
    assert _plain_result(raw, "2026-07-28") is None  # a 2026 result gets the SDK's checks (its resultType)
    assert _plain_result(raw, None) is None


async def test_the_lane_takes_only_its_own_answers_and_progress() -> None:
    """Its answers and their progress are taken; other lines, late answers and bad progress are not delivered."""
    written: list[bytes] = []
    seen: list[Any] = []

    async def write(data: bytes) -> None:
        written.append(data)

    lane = Lane()
    assert not lane.ready
    lane.attach(write)
    traced = {"_meta": {"traceparent": "00-stale", "io.modelcontextprotocol/protocolVersion": "2025-11-25"}}
    lane.learn(SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=0, method="tools/list", params=traced)))
    assert lane.ready
    await lane.call("echo", b"{}", lambda event: None, lambda meta: None)
    stamped = json.loads(written.pop())["params"]["_meta"]
    assert "traceparent" not in stamped and stamped["io.modelcontextprotocol/protocolVersion"] == "2025-11-25"
    lane.learn(SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list")))
    request_id = await lane.call("echo", b'{"message":"hi"}', seen.append, lambda meta: None)
    sent = json.loads(written[0])
    assert sent["params"] == {"name": "echo", "arguments": {"message": "hi"}, "_meta": {"progressToken": request_id}}
    progress = {"jsonrpc": "2.0", "method": "notifications/progress"}
    assert not lane.claim(b'{"jsonrpc":"2.0","id":1,"result":{}}')  # the SDK's own
    assert lane.claim(json.dumps({**progress, "params": {"progressToken": request_id, "progress": 1}}).encode())
    assert lane.claim(json.dumps({**progress, "params": {"progressToken": request_id, "progress": "x"}}).encode())
    assert lane.claim(f'{{"jsonrpc":"2.0","id":"{request_id}","result":{{"x":NaN}}}}'.encode())
    assert not lane.claim(f'{{"jsonrpc":"2.0","id":"{request_id}","result":{{}}}}'.encode())  # answered already
    assert seen[0] == ("progress", (1.0, None, None)) and seen[1][0] == "read leniently" and len(seen) == 2
    other = await lane.call("echo", b"{}", seen.append, lambda meta: meta.update(traceparent="t"))
    assert json.loads(written[1])["params"]["_meta"]["traceparent"] == "t"
    cancel = lane.abandon(other, "caller cancelled")
    assert cancel is not None
    await cancel
    assert json.loads(written[2])["params"] == {"requestId": other, "reason": "caller cancelled"}
    assert lane.abandon(other, "again") is None
    third = await lane.call("echo", b"{}", seen.append, lambda meta: None)
    lane.close(ConnectionError("closed"))
    assert seen[-1][0] == "done" and isinstance(seen[-1][1], ConnectionError) and not lane.ready
    assert lane.abandon(third, "late") is None
    with pytest.raises(ConnectionError):
        await lane.call("echo", b"{}", seen.append, lambda meta: None)


async def test_the_lane_leaves_what_is_not_its_own_to_the_sdk() -> None:
    """Lines that only mention a lean id, or cannot be read, go to the SDK's reader; a failed write leaves nothing."""
    failing = Lane()

    async def broken(data: bytes) -> None:
        raise BrokenPipeError(data[:0].decode())

    failing.attach(broken)
    failing.learn(SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list")))
    with pytest.raises(BrokenPipeError):
        await failing.call("echo", b"{}", lambda event: None, lambda meta: None)
    lane = Lane()
    written: list[bytes] = []

    async def write(data: bytes) -> None:
        written.append(data)

    lane.attach(write)
    lane.learn(SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list")))
    request_id = await lane.call("echo", b"{}", lambda event: None, lambda meta: None)
    assert not failing.claim(f'{{"id":"{request_id}"}}'.encode())  # nothing waits on that lane
    quoted = json.dumps(request_id)
    assert not lane.claim(f"{quoted} is not JSON".encode())
    assert not lane.claim(f"[{quoted}]".encode())
    assert not lane.claim(f'{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":{quoted}}}}}'.encode())
    progress = {"progressToken": request_id + "-other", "progress": 1}
    assert not lane.claim(
        json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}).encode()
    )


async def test_events_wake_their_reader_and_end_as_a_memory_stream_does() -> None:
    """Sent events are read in order; close and expire end the reading once read; stop refuses later sends."""
    events: Events[int] = Events()
    got: list[int] = []

    async def reader() -> None:
        got.extend([item async for item in events])

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        await anyio.sleep(0)
        await events.send(1)
        events.send_nowait(2)
        events.close()
    assert got == [1, 2]
    with pytest.raises(anyio.ClosedResourceError):
        events.send_nowait(3)
    expiring: Events[int] = Events()
    expiring.send_nowait(1)
    expiring.expire()
    assert [item async for item in expiring] == [1] and expiring.expired  # what came in time is still read
    stopped: Events[int] = Events()
    stopped.send_nowait(1)
    stopped.stop()
    assert len(stopped) == 0
    with pytest.raises(anyio.BrokenResourceError):
        stopped.send_nowait(2)
    assert [item async for item in stopped] == []
