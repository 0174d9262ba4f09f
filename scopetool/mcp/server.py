"""Serve a `Registry` to any MCP client over stdio or Streamable HTTP, on the official MCP Python SDK.

``scopetool serve path/to/tools.py:registry`` runs `run_stdio`, ``--http 127.0.0.1:8000`` runs
`run_http`; `http_app` is the ASGI application for an ASGI server of one's own, and `create_server`
the SDK's low-level server for other transports. This module imports the ``mcp`` package: install it
with ``pip install 'scopetool[mcp]'``. ``import scopetool`` never imports it.

What a client sees:

* ``tools/list``: `scopetool.providers.mcp.export_tools` of the registry, made once when the server
  is created (effects as ``annotations``, output schemas, a non-object one wrapped as
  ``{"result": ...}``, schemas shaped for clients, ``tool_fields``), in pages of ``page_size`` tools
  when one is given; a cursor the server did not give is the JSON-RPC error ``-32602``.
* ``tools/call``: the call is admitted by the tool's `Contract.prepare` (the SDK does not validate
  arguments itself), run through its `Binding`, and answered with
  `scopetool.providers.mcp.result_message`: a rejection, a `Failure` or any other error (a tool's
  ``KeyboardInterrupt``, ``sys.exit`` or ``CancelledError`` too) is an ``isError`` result with only
  model-safe text. An unknown tool is the JSON-RPC error ``-32602`` (MCP 2026-07-28).
* Every stdio line and HTTP request body is checked as I-JSON (RFC 7493) before the SDK parses it,
  so a repeated member name cannot be collapsed on the way to ``prepare``; every request gets an
  answer.
* Progress: when the request carries a ``progressToken``, every `report_progress` of the call becomes
  a ``notifications/progress``, in order (reports that do not advance are dropped: MCP requires the
  progress value to increase).
* Input requests: a `Result` with an `InputRequest` whose response schema MCP elicitation can express
  (`requested_schema`) is asked of the client as a form elicitation, and the answer resumes the same
  call through a `Continuation`. On a 2025 connection the server sends ``elicitation/create``; on a
  2026-07-28 connection it answers with an ``input_required`` result and resumes when the client
  retries. Anything else (a declined or cancelled form, a schema elicitation cannot express, a client
  without the elicitation capability) ends the call with a fixed ``isError`` text.
* Tool search (``tool_search=True`` or a `ToolSearch`; ``scopetool serve --tool-search``): ``tools/list``
  lists ``search_tools`` and ``call_tool`` (and the tools `ToolSearch.always_show` names) in place of
  the whole catalog. ``search_tools`` answers with the best matching tools' entries, as ``tools/list``
  would have listed them (structured content, and the same JSON as text); a ``call_tool`` call is
  unwrapped and its inner call admitted by the inner tool's own contract and run as a direct call
  would be (guards, approvals, progress, the observer, tracing and the result cap are the inner
  tool's). An inner name the catalog lacks is an ``isError`` result suggesting the nearest name.
* Updates (``updates=`` a `ToolUpdates`, what the MCP gateway serves with): each registry published there
  is served from then on, swapped in at once (a call already running ends on the tool it began with), and
  the clients are told: the server declares ``tools.listChanged``, sends ``notifications/tools/list_changed``
  on each 2025 connection that has a stream for it, and serves 2026-07-28's ``subscriptions/listen``.
* End of stdin: every request already read is still answered before `serve_stdio` returns, within
  `SHUTDOWN_GRACE` seconds for calls still running.
* Over HTTP, what a client can hold is bounded (`HttpSettings`: sessions, their idle time, the time
  to send headers and a body, connections), a call whose client disconnects is cancelled, and the
  ``Host`` and ``Origin`` headers are checked on every loopback address and for allowed host names.
* Over HTTP with ``auth=`` (`scopetool.mcp.auth.HttpAuth`), every request carries a bearer token (a
  JWT of the issuer for this server, or a static token), and every MCP request runs as its caller
  (`scopetool.current_principal`); without it the server warns that it answers anyone.

This module names the public entry points; each concern has a private module beside it:
``_tool_handlers`` (`create_server`, ``tools/list`` and ``tools/call``), ``_stdio_server``,
``_http_server`` (with `HttpSettings`' bounds), ``_tool_updates`` (`ToolUpdates`), ``_strict_messages``
(the I-JSON screening both transports share), ``_elicitation`` (`requested_schema`) and ``_tool_search``
(`ToolSearch`: ``search_tools`` and ``call_tool``, which the gateway serves too).

Example:
    ```python
    from scopetool import Registry, tool
    from scopetool.mcp.server import create_server

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    server = create_server(Registry(add), name="calculator")
    print(server.name)
    #> calculator
    ```
"""

from __future__ import annotations

from .._extras import missing_dependency

try:  # each part imports the SDK; named after it, whichever of its modules (or anyio, which it brings) was missing
    from ._elicitation import ANSWER as ANSWER  # noqa: PLC0414 - public, outside __all__
    from ._elicitation import requested_schema
    from ._http_server import (
        DEFAULT_HOST,
        DEFAULT_PATH,
        HTTP_SHUTDOWN_GRACE,
        HttpSettings,
        http_app,
        is_loopback,
        run_http,
        serve_http,
    )
    from ._stdio_server import SHUTDOWN_GRACE as SHUTDOWN_GRACE  # noqa: PLC0414 - public, outside __all__
    from ._stdio_server import run_stdio, serve_stdio
    from ._tool_handlers import MAX_INPUT_ROUNDS as MAX_INPUT_ROUNDS  # noqa: PLC0414 - public, outside __all__
    from ._tool_handlers import CallObserver, ServerOptions, create_server
    from ._tool_search import ToolSearch
    from ._tool_updates import ToolUpdates
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PATH",
    "HTTP_SHUTDOWN_GRACE",
    "CallObserver",
    "HttpSettings",
    "ServerOptions",
    "ToolSearch",
    "ToolUpdates",
    "create_server",
    "http_app",
    "is_loopback",
    "requested_schema",
    "run_http",
    "run_stdio",
    "serve_http",
    "serve_stdio",
]
