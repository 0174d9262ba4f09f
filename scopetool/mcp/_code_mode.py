"""Code mode on the MCP server and the gateway: ``run_code`` in place of the catalog (`create_server`'s ``code_mode``).

The server lists the code tool (`scopetool.code`) instead of its tools, which stay callable by name; with
tool search on too it lists ``search_tools``, ``call_tool`` and ``run_code``, and ``run_code``'s
description sends the model to ``search_tools`` instead of naming the catalog. Each nested call of a
snippet is checked as a direct ``tools/call`` of that tool through this server (`ServerGate`):

* ``visible``: a tool the caller may not see is, to the snippet, a name not defined, and is left out of
  the ``run_code`` entry that caller's ``tools/list`` shows (its description is written per caller and
  kept for the next list of a caller who sees the same tools).
* ``limiter``: a nested call counts against its tool's rate and concurrency and its caller's rate; not
  against its caller's concurrency, whose slot the code call itself holds (a caller limited to one call
  at a time can still run code that calls tools). A nested call over a limit raises the limit's message
  in the snippet.
* ``on_call``: each nested call's outcome is told under its tool's name, in the code call's context (so
  with its caller), as a direct call's is: the gateway writes one audit line per nested call.

In the gateway the nested calls run through the served bindings: each is admitted by its upstream
server's own ``inputSchema``, its policies apply, and a tool refused (pinned and changed, poisoned) or
denied is not served, so not callable. Only this module (and only when code mode is on) imports
`scopetool.code`, which needs ``pip install 'scopetool[code]'``.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast, final

from .._contract import Request
from .._output import Result
from .._registry import Registry
from ..providers._common import ProviderError, ToolCall
from ..providers.mcp import export_tools
from .limits import Limiter, LimitError

if TYPE_CHECKING:
    from ..code import CodeLimits, CodeTool

__all__ = ["CODE_TOOL", "KEPT_DESCRIPTIONS", "CodeFront", "ServerGate", "code_front"]

CODE_TOOL: Final = "run_code"
"""The name the code tool is served under."""
KEPT_DESCRIPTIONS: Final = 256
"""Per-caller ``run_code`` entries a server keeps (one per set of tools a caller sees; the least recently listed go)."""
_SEARCHING: Final = (
    "Run a Python snippet (a subset of Python: no imports of host modules, no files, no network) and get the "
    "value of its last expression. Find tools with search_tools, then call them here as async functions with "
    "keyword arguments, by the names and inputSchemas it gives: x = await name(key=value), and "
    "asyncio.gather(...) for independent calls. A tool returns its result (structured results as dicts and "
    "lists), and a refused or failed call raises an exception with the reason. Use print() for notes."
)
"""``run_code``'s description beside tool search: the catalog is found by search, not listed."""


def _nothing() -> None:
    """The end of a nested call no limiter counts."""


@final
class ServerGate:
    """A server's `scopetool.code.NestedGate`: its ``visible``, ``limiter`` and ``on_call``, for each nested call."""

    __slots__ = ("_limiter", "_on_call", "_visible")

    def __init__(
        self,
        visible: Callable[[str], bool] | None,
        limiter: Limiter | None,
        on_call: Callable[[ToolCall, Result | BaseException], None] | None,
    ) -> None:
        self._visible = visible
        self._limiter = limiter
        self._on_call = on_call

    def allows(self, name: str) -> bool:
        """Whether the code call's caller may see and call tool `name` (the server's ``visible``)."""
        return self._visible is None or self._visible(name)

    async def enter(self, name: str) -> Callable[[], None] | str:
        """Count a nested call against the limits (not the caller's concurrency: the code call holds its slot)."""
        if self._limiter is None:
            return _nothing
        found = await self._limiter.enter(name, nested=True)
        if isinstance(found, LimitError):
            self.observe(ToolCall(None, Request(name)), found)  # audited as a direct call over a limit is
            return str(found)
        return found.release

    def observe(self, call: ToolCall, outcome: Result | BaseException) -> None:
        """Tell the server's ``on_call`` a nested call's outcome."""
        if self._on_call is not None:
            self._on_call(call, outcome)


@final
class CodeFront:
    """The code tool of a server in code mode: the registry it serves, and ``run_code``'s entry per caller.

    Raises (on creation):
        ProviderError: the catalog already has a tool named ``run_code``.
        ImportError: the Monty sandbox is not installed (``pip install 'scopetool[code]'``).
    """

    __slots__ = ("_catalog", "_code", "_entries", "_entry", "_searching", "_visible", "listed", "registry")

    def __init__(
        self,
        catalog: Registry,
        limits: CodeLimits | None,
        *,
        visible: Callable[[str], bool] | None,
        limiter: Limiter | None,
        on_call: Callable[[ToolCall, Result | BaseException], None] | None,
        searching: bool,
    ) -> None:
        from ..code import code_tool  # noqa: PLC0415 - only code mode needs the sandbox

        if catalog.resolve(CODE_TOOL) is not None:
            raise ProviderError(f"code mode lists its own {CODE_TOOL!r}: the catalog has a tool of that name")
        binding = code_tool(catalog, limits=limits, gate=ServerGate(visible, limiter, on_call), name=CODE_TOOL)
        self._catalog = catalog
        self._code = cast("CodeTool", binding.tool)
        self._visible = visible
        self._searching = searching
        self.registry = Registry(*catalog, binding)
        """What the server runs: the catalog's tools (callable by name) and ``run_code``."""
        self.listed = export_tools([binding.definition()])
        """``run_code``'s export: what ``tools/list`` lists without tool search (each caller's entry in its place)."""
        self._entry: dict[str, Any] = self.listed.tools[0]
        if searching:
            self._entry["description"] = _SEARCHING
        self._entries: OrderedDict[frozenset[str], dict[str, Any]] = OrderedDict()

    def entry(self) -> dict[str, Any]:
        """The current caller's ``run_code`` entry in ``tools/list``: its description names that caller's tools only."""
        visible = self._visible
        if visible is None or self._searching:
            return copy.deepcopy(self._entry)
        seen = frozenset(binding.name for binding in self._catalog if visible(binding.name))
        kept = self._entries
        entry = kept.pop(seen, None)
        if entry is None:
            entry = {**self._entry, "description": self._code.describe(seen.__contains__)}
        kept[seen] = entry
        if len(kept) > KEPT_DESCRIPTIONS:
            kept.popitem(last=False)
        return copy.deepcopy(entry)  # the kept entry stays as made, whatever is done with the one listed


def code_front(
    catalog: Registry,
    code_mode: CodeLimits | bool,
    *,
    visible: Callable[[str], bool] | None,
    limiter: Limiter | None,
    on_call: Callable[[ToolCall, Result | BaseException], None] | None,
    searching: bool,
) -> CodeFront | None:
    """The `CodeFront` of `create_server`'s ``code_mode`` (True: the default `CodeLimits`), or None when it is off.

    Raises:
        TypeError: `code_mode` is not a bool or a `CodeLimits`.
    """
    if code_mode is False:
        return None
    from ..code import CodeLimits  # noqa: PLC0415 - only code mode needs the sandbox

    if code_mode is not True and not isinstance(code_mode, CodeLimits):
        raise TypeError(f"code_mode must be True, False or CodeLimits, not {type(code_mode).__name__}")
    limits = None if code_mode is True else code_mode
    return CodeFront(catalog, limits, visible=visible, limiter=limiter, on_call=on_call, searching=searching)
