"""The old home of the MCP server, kept so that existing imports work: use `scopetool.mcp.server`."""

from .mcp.server import SHUTDOWN_GRACE, create_server, requested_schema, run_stdio, serve_stdio

__all__ = ["SHUTDOWN_GRACE", "create_server", "requested_schema", "run_stdio", "serve_stdio"]
