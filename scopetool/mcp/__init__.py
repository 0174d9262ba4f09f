"""MCP for scopetool: the server that serves a `Registry` (`scopetool.mcp.server`).

The wire format they share (tool definitions, results) is `scopetool.providers.mcp`. Each module
here imports the MCP Python SDK (``pip install 'scopetool[mcp]'``); this package itself imports
nothing, and ``import scopetool`` never imports it.
"""
