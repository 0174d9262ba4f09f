"""A hostile MCP server over Streamable HTTP, written by hand: a Starlette app and a uvicorn thread to serve it.

It answers just enough JSON-RPC for a client to initialize (protocol 2025-11-25), list ``echo`` and
call it; every call's answer is one text block of `result_bytes` bytes, sent as ``how`` says:
``"json"`` (an ``application/json`` body), ``"sse"`` (one event of a ``text/event-stream``) or
``"gzip"`` (a gzip-encoded JSON body, which the client did not ask for). With `deep_schema`, it also
lists a tool ``deep`` whose ``inputSchema`` nests that many objects, and answers ``tools/list`` ``how`` too.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

ECHO: dict[str, Any] = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def hostile_app(result_bytes: int, how: str, *, deep_schema: int = 0) -> Starlette:
    """The app: `result_bytes` of text in every call's answer, sent `how` (json, sse or gzip); `deep_schema` above."""
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(deep_schema):
        deep = {"type": "object", "properties": {"a": deep}}
    listed = [ECHO, {**ECHO, "name": "deep", "inputSchema": deep}] if deep_schema else [ECHO]

    async def endpoint(request: Request) -> Response:
        if request.method != "POST":
            return Response(status_code=405)
        message = json.loads(await request.body())
        ident, method = message.get("id"), message.get("method")
        if ident is None:
            return Response(status_code=202)
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": ident}
        if method == "initialize":
            answer["result"] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-http", "version": "0"},
            }
        elif method == "tools/list":
            answer["result"] = {"tools": listed}
        elif method == "tools/call":
            answer["result"] = {"content": [{"type": "text", "text": "y" * result_bytes}]}
        else:
            answer["error"] = {"code": -32601, "message": f"no method {method}"}
        body = json.dumps(answer)
        sent_how = method == "tools/call" or (method == "tools/list" and deep_schema > 0)
        if not sent_how or how == "json":
            return Response(body, media_type="application/json")
        if how == "sse":
            return Response(f"event: message\ndata: {body}\n\n", media_type="text/event-stream")
        return Response(
            gzip.compress(body.encode()), media_type="application/json", headers={"content-encoding": "gzip"}
        )

    return Starlette(routes=[Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"])])


@contextmanager
def serving(app: Starlette) -> Iterator[str]:
    """Serve `app` with uvicorn on a free 127.0.0.1 port in a thread; its MCP endpoint's URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
