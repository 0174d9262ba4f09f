"""MCP for scopetool: the server that serves a `Registry`, and the client that uses other servers' tools.

* `scopetool.mcp.server`: a registry served over MCP stdio.
* `scopetool.mcp.client`: an MCP server's tools as scopetool `Tool`s, admitted by their own schemas.
* `scopetool.mcp.pins`: the lock file that pins those tools' definitions against silent change.
* `scopetool.mcp.screening`: a tool definition read for poisoning (invisible characters, instruction-like text).
* `scopetool.mcp.limits`: rate and concurrency limits on tool calls, per caller and per tool.
* `scopetool.mcp.gateway`: several servers' tools and local ones served as one server, guarded and audited
  (``scopetool proxy CONFIG``).

The wire format they share (tool definitions, results) is `scopetool.providers.mcp`. The server, the client and
the gateway import the MCP Python SDK (``pip install 'scopetool[mcp]'``); this package itself imports nothing,
`pins`, `screening` and `limits` need nothing beyond scopetool (a rate needs ``scopetool[limits]``), and
``import scopetool`` never imports any of them.
"""
