"""scopetool tools on an MCP server built with the MCP Python SDK's ``MCPServer``, beside its own tools.

``MCPServer`` (``mcp.server.mcpserver``, formerly FastMCP) validates a tool's arguments with a lax
pydantic model of its function: unknown members are dropped and ``"5"`` becomes ``5``. The tools this
module adds are admitted by their `Contract.prepare` instead, and answered the way ``scopetool serve``
answers them (`scopetool.mcp.server`, on the same SDK):

* ``tools/list``: the tools as `scopetool.providers.mcp.export_tools` exports them (the contract's
  input schema, output schemas, effects as ``annotations``);
* ``tools/call``: the SDK has parsed the JSON-RPC message, so a tool receives its ``arguments`` as a
  dict; their canonical JSON is what `prepare` admits. A repeated member name was already collapsed
  by the SDK's JSON parser and cannot be seen here; everything else (unknown members, types, the
  schema, validators) is checked. A rejection, a `Failure`, a refused `Guard` or any other error is
  an ``isError`` result with only model-safe text;
* progress: `report_progress` of a call becomes MCP progress notifications when the client asked;
* input requests: MCP elicitation, as in `scopetool.mcp.server` (``elicitation/create`` on a 2025
  connection; an ``input_required`` result answered by the client's retry on 2026-07-28).

`add_tools(server, registry)` adds the tools to an existing server; `mcp_tools(registry)` gives them
for ``MCPServer(tools=...)``. This module imports the ``mcp`` package: ``pip install 'scopetool[mcp]'``.

Example:
    ```python
    import asyncio
    from mcp.server.mcpserver import MCPServer
    from scopetool import Registry, tool
    from scopetool.integrations.mcp_sdk import add_tools

    server = MCPServer("calculator")

    @server.tool()
    def echo(text: str) -> str:
        \"\"\"The SDK's own tool, left as it is.\"\"\"
        return text

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    add_tools(server, Registry(add))
    result = asyncio.run(server.call_tool("add", {"a": 2, "b": "3"}))
    print(result.is_error, result.content[0].text)
    #> True invalid arguments for tool 'add' (1 problem):
    #> - $.b: Input should be a valid integer (got a string)
    ```
"""

from __future__ import annotations

from typing import Any, Final, final

from .._extras import missing_dependency

try:
    from mcp import types as mcp_types
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.tools.tool_manager import ToolManager
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
    from pydantic import PrivateAttr
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

from .._contract import Request
from .._output import Result
from .._registry import Registry
from ..mcp._tool_handlers import _Tools  # pyright: ignore[reportPrivateUsage] - one home for tools/call over MCP
from ..providers._common import Export, ProviderError, ToolCall, object_arguments, run_call
from ..providers.mcp import result_message

__all__ = ["ScopetoolMCPTool", "add_tools", "mcp_tools"]

NOT_JSON: Final = 'error: the arguments for tool "{name}" are not JSON'
NO_INPUT: Final = 'error: tool "{name}" needs input that cannot be requested outside an MCP request'


def mcp_tools(registry: Registry) -> list[ScopetoolMCPTool]:
    """The tools of `registry` as ``MCPServer`` tools, for ``MCPServer(..., tools=mcp_tools(registry))``.

    The tool list is exported once, here: a tool registered in `registry` later is not among them.

    Raises:
        TypeError: `registry` is not a `Registry`.
        ProviderError: A tool name breaks MCP's name rule.
    """
    if not isinstance(registry, Registry):
        raise TypeError(f"mcp_tools needs a Registry, not {type(registry).__name__}")
    calls = _Tools()
    calls.rebuild(registry, tool_search=False)
    export = calls.catalog.export
    return [ScopetoolMCPTool(entry, registry, export, calls) for entry in export.tools]


def add_tools(server: MCPServer[Any], registry: Registry) -> None:
    """Add every tool of `registry` to an existing ``MCPServer``, beside the tools it already has.

    ``MCPServer.add_tool`` takes only functions (their signatures become the schema), so the tools
    are added to the server's tool manager (the SDK's ``ToolManager``, rebuilt with the tools it had
    and these).

    Raises:
        TypeError: `server` is not an ``MCPServer`` or `registry` is not a `Registry`.
        ValueError: The server already has a tool of one of these names.
        ProviderError: A tool name breaks MCP's name rule.
    """
    if not isinstance(server, MCPServer):
        raise TypeError(f"add_tools needs an MCPServer, not {type(server).__name__}")
    added = mcp_tools(registry)
    manager: ToolManager = server._tool_manager  # pyright: ignore[reportPrivateUsage]
    taken = sorted(tool.name for tool in added if manager.get_tool(tool.name) is not None)
    if taken:
        raise ValueError(f"the MCPServer already has tools named {', '.join(map(repr, taken))}")
    server._tool_manager = ToolManager(  # pyright: ignore[reportPrivateUsage]
        manager.warn_on_duplicate_tools, tools=[*manager.list_tools(), *added]
    )


def _not_called(**arguments: Any) -> Any:
    """The function the SDK's ``Tool`` model requires; a scopetool tool runs through its own `run`."""
    raise NotImplementedError


@final
class ScopetoolMCPTool(Tool):
    """An ``MCPServer`` tool whose calls are admitted by a scopetool contract (made by `mcp_tools`)."""

    _registry: Registry = PrivateAttr()
    _export: Export = PrivateAttr()
    _calls: _Tools = PrivateAttr()

    def __init__(self, entry: dict[str, Any], registry: Registry, export: Export, calls: _Tools) -> None:
        annotations = entry.get("annotations")
        super().__init__(
            fn=_not_called,
            name=entry["name"],
            title=None,
            description=entry.get("description", ""),
            parameters=entry["inputSchema"],
            fn_metadata=FuncMetadata(arg_model=ArgModelBase, output_schema=entry.get("outputSchema")),
            is_async=True,
            context_kwarg=None,
            annotations=None if annotations is None else mcp_types.ToolAnnotations.model_validate(annotations),
        )
        self._registry = registry
        self._export = export
        self._calls = calls

    async def run(
        self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False
    ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
        """Admit, run and answer one call; inside a request, as ``scopetool serve`` does (elicitation, progress)."""
        try:
            request = context.request_context
        except ValueError:  # MCPServer.call_tool in process, outside any request
            return mcp_types.CallToolResult.model_validate(await self._in_process(arguments))
        params = mcp_types.CallToolRequestParams(
            name=self.name,
            arguments=arguments,
            request_state=context.request_state,
            input_responses=context.input_responses,
        )
        found = await self._calls.call_tool(request, params)
        if isinstance(found, mcp_types.InputRequiredResult):
            return found
        return mcp_types.CallToolResult.model_validate(found)

    async def _in_process(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """One call with no client to ask or to tell of progress."""
        name = self.name
        try:
            text = object_arguments(arguments, f"tool {name!r}")
        except ProviderError:
            return _error(NOT_JSON, name)
        call = ToolCall(None, Request(name, text))
        outcome = await run_call(self._registry, call)
        if isinstance(outcome, Result) and outcome.input_request is not None:
            return _error(NO_INPUT, name)
        return result_message(call, outcome, self._export)


def _error(template: str, name: str) -> dict[str, Any]:
    """An ``isError`` result with one fixed text."""
    return {"content": [{"type": "text", "text": template.format(name=name)}], "isError": True}
