"""Tool search for the MCP server and the gateway: ``search_tools`` and ``call_tool`` listed in place of the catalog.

A client with hundreds of tools behind one server is sent two (`SEARCH_TOOLS`, `CALL_TOOL`) and the
tools the user chose to always show (`ToolSearch`). ``search_tools`` ranks the catalog's definitions
(`scopetool._search.ToolIndex`) and answers with their MCP entries, exactly as ``tools/list`` would have
listed them; ``call_tool`` names a catalog tool and its arguments. The server unwraps that call here
(`SearchFront.unwrap`) and runs the inner call as if the client had called the tool directly: it is
admitted by the inner tool's own contract (a rejection names the inner tool and its paths), and its
guards, approvals, progress, audit, tracing and result cap are the inner tool's. ``call_tool``'s own
arguments are admitted first, by a strict contract of their own; the inner arguments reach the inner
contract as their exact text, so a repeated member name in them is the inner tool's rejection too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, final

from .._binding import bind
from .._contract import Contract, Invocation, Request
from .._definition import Definition, Effect
from .._errors import InvalidInvocationError
from .._json import is_object, loads_exact, member_spans
from .._output import Output, Result
from .._registry import Registry
from .._search import ToolIndex
from ..providers._common import Export, ProviderError, ToolCall, UnknownToolError
from ..providers.mcp import export_tools

__all__ = [
    "CALL_TOOL",
    "DEFAULT_RESULTS",
    "MAX_QUERY_CHARS",
    "MAX_RESULTS",
    "SEARCH_TOOLS",
    "SearchFront",
    "ToolSearch",
]

SEARCH_TOOLS: Final = "search_tools"
"""The name of the tool that searches the catalog (FastMCP's name for it)."""
CALL_TOOL: Final = "call_tool"
"""The name of the tool that calls a catalog tool by name (FastMCP's name for it)."""
DEFAULT_RESULTS: Final = 5
"""How many definitions ``search_tools`` answers with when the call gives no ``limit``."""
MAX_RESULTS: Final = 20
"""The largest ``limit`` a ``search_tools`` call may ask for."""
MAX_QUERY_CHARS: Final = 500
"""The longest ``query`` a ``search_tools`` call may send."""

_SEARCH_DEFINITION: Final = Definition(
    name=SEARCH_TOOLS,
    description="Find the tools that can do a task. Describe the task in words; the answer lists the best "
    f"matching tools with their input schemas. Call one with {CALL_TOOL}.",
    input_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "What the tool should do, in a few words (e.g. 'weather forecast for a city').",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "default": DEFAULT_RESULTS,
                "description": f"How many tools to return at most (default {DEFAULT_RESULTS}).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "tools": {
                "type": "array",
                "items": {"type": "object"},
                "description": "The matching tools, best first: name, description, inputSchema and more.",
            }
        },
        "required": ["tools"],
        "additionalProperties": False,
    },
    effect=Effect.SAFE,
)
_CALL_DEFINITION: Final = Definition(
    name=CALL_TOOL,
    description=f"Call a tool that {SEARCH_TOOLS} found, by its name, with arguments that follow its inputSchema.",
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": f"The tool's name, as {SEARCH_TOOLS} gave it."},
            "arguments": {"type": "object", "description": "The tool's arguments, as its inputSchema describes them."},
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
    },
)
_OWN_NAMES: Final = frozenset({SEARCH_TOOLS, CALL_TOOL})
_FIND: Final = f" ({SEARCH_TOOLS} finds tools by what they do)"
_NOT_INNER: Final = f'error: call "{{name}}" directly, not through {CALL_TOOL}'


@final
@dataclass(frozen=True, slots=True)
class ToolSearch:
    """Serve ``search_tools`` and ``call_tool`` in place of the whole catalog (`create_server`'s ``tool_search``).

    Example:
        ```python
        from scopetool.mcp.server import ToolSearch

        print(ToolSearch(always_show=["add"]).always_show)
        #> ('add',)
        ```
    """

    always_show: Sequence[str] = ()
    """The tools listed beside the two, by name (each must be a tool of the catalog; kept as a tuple), with the
    tools marked ``defer_loading=False`` (`Binding.defer_loading`); the rest are found by search."""
    reveal: bool = False
    """List each tool ``search_tools`` finds, for the rest of the session, after those listed from the start, and
    send ``notifications/tools/list_changed`` (2025 sessions: a 2026-07-28 request has no session to keep them)."""

    def __post_init__(self) -> None:
        given: object = self.always_show
        if isinstance(given, str) or not isinstance(given, Iterable):
            raise TypeError(f"always_show must be a list of tool names, not {type(given).__name__}")
        names = tuple(given)  # pyright: ignore[reportUnknownArgumentType] - checked member by member below
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"always_show must hold tool names (strings), not {type(name).__name__}")
        object.__setattr__(self, "always_show", names)
        if not isinstance(self.reveal, bool):
            raise TypeError(f"reveal must be True or False, not {type(self.reveal).__name__}")


@final
class _Searcher:
    """The ``search_tools`` tool: the catalog's MCP entries that best match a query."""

    __slots__ = ("_entries", "_index", "_visible")

    def __init__(
        self, index: ToolIndex, entries: Mapping[str, dict[str, Any]], visible: Callable[[str], bool] | None
    ) -> None:
        self._index = index
        self._entries = entries
        self._visible = visible

    def definition(self) -> Definition:
        return _SEARCH_DEFINITION

    async def call(self, invocation: Invocation) -> Result:
        arguments = json.loads(invocation.arguments)  # admitted: exactly the schema's shape
        limit = int(arguments.get("limit", DEFAULT_RESULTS))
        visible = self._visible
        if visible is None:
            found = self._index.search(arguments["query"], limit=limit)
        else:  # only the tools this caller may call (`current_principal`, in this request's context)
            ranked = self._index.search(arguments["query"], limit=len(self._index))
            found = [definition for definition in ranked if visible(definition.name)][:limit]
        tools = [self._entries[definition.name] for definition in found]
        return Result(output=Output.from_json(json.dumps({"tools": tools}, ensure_ascii=False)))


@final
class SearchFront:
    """What a server serving with `ToolSearch` lists, and how it reads a ``call_tool`` call.

    Raises (on creation):
        ProviderError: the catalog already has a tool named ``search_tools`` or ``call_tool``, or
            `ToolSearch.always_show` names a tool the catalog does not have.
    """

    __slots__ = ("_call_contract", "_entries", "_listed_names", "listed", "reveal", "searching")

    def __init__(
        self,
        registry: Registry,
        export: Export,
        options: ToolSearch,
        tool_fields: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        visible: Callable[[str], bool] | None = None,
    ) -> None:
        names = registry.names()
        taken = sorted(_OWN_NAMES.intersection(names))
        if taken:
            raise ProviderError(f"tool search lists its own {taken[0]!r}: the catalog has a tool of that name")
        shown = set(options.always_show)
        missing = sorted(shown.difference(names))
        if missing:
            raise ProviderError(f"always_show: the catalog has no tool named {missing[0]!r}")
        shown.update(binding.name for binding in registry if binding.defer_loading is False)  # marked: always shown
        entries = {entry["name"]: entry for entry in export.tools}
        catalog = registry.definitions()
        self._entries = entries
        self._listed_names = shown | _OWN_NAMES
        self.reveal = options.reveal
        """Whether found tools are listed for the rest of the session (`ToolSearch.reveal`)."""
        self._call_contract = Contract(_CALL_DEFINITION)
        self.searching = Registry(bind(_Searcher(ToolIndex(catalog), entries, visible)))
        """The registry ``search_tools`` calls run in."""
        fields = {name: value for name, value in (tool_fields or {}).items() if name in shown}
        self.listed = export_tools(
            [_SEARCH_DEFINITION, _CALL_DEFINITION, *(d for d in catalog if d.name in shown)], tool_fields=fields
        )
        """What ``tools/list`` lists: the two, then the always-shown tools in the catalog's order."""

    def unwrap(self, call_id: str | None, arguments: str | bytes) -> ToolCall | InvalidInvocationError:
        """The inner call of a ``call_tool`` call, or the rejection of ``call_tool``'s own arguments.

        The outer arguments are admitted with the inner ``arguments`` object set aside (as ``{}``), so
        whatever is wrong inside it is left to the inner tool's contract, which gets its exact text.
        """
        raw = arguments.encode("utf-8", "surrogatepass") if isinstance(arguments, str) else arguments
        outer, inner = raw, b"{}"
        spans = member_spans(raw, "arguments")
        if len(spans) == 1 and raw[spans[0][0] : spans[0][0] + 1] == b"{":
            start, end = spans[0]
            outer, inner = raw[:start] + b"{}" + raw[end:], raw[start:end]
        try:
            invocation = self._call_contract.prepare(Request(CALL_TOOL, outer))
        except InvalidInvocationError as error:
            return error
        name: str = loads_exact(invocation.arguments)["name"]
        return ToolCall(call_id, Request(name, inner))

    def unlisted(self, result: Result) -> list[str]:
        """The tools a ``search_tools`` result found that are not listed from the start, best first."""
        found: list[dict[str, Any]] = result.output.details_value()["tools"]  # what `_Searcher.call` made
        return [entry["name"] for entry in found if entry["name"] not in self._listed_names]

    def entries(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """The catalog's MCP entries of `names`, in that order."""
        return [self._entries[name] for name in names]

    def unknown(self, error: UnknownToolError) -> str:
        """The text answering a ``call_tool`` call of a name the caller may not call (`error`, with its suggestion)."""
        if error.name in _OWN_NAMES:
            return _NOT_INNER.format(name=error.name[:80])
        return str(error) + _FIND


def counted_name(name: str, arguments: object) -> str:
    """The tool a ``tools/call`` of `name` is counted against: a ``call_tool`` call's inner tool, else `name`."""
    if name == CALL_TOOL and is_object(arguments):
        inner = arguments.get("name")
        if isinstance(inner, str):
            return inner
    return name
