"""`Catalog`: what one run's model is shown of a registry, and the search that reveals its deferred tools.

A registry's deferred tools (`Registry.is_deferred`) are kept out of the definitions a model is first
sent. A run's `Catalog` shows the other tools, adds the local search tool (`SEARCH_TOOL`, a real tool
with a contract of its own) and remembers which deferred tools the run's searches revealed: from then
on they are shown, after the others, in the order revealed, so the definitions sent grow only at
their end and a provider's prompt cache keeps holding. A revealed tool is admitted by its own
contract, exactly as a listed one; a deferred tool not revealed yet is refused with `DeferredToolError`,
whose model-facing text says to search first.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from typing import Annotated, Final, final

from pydantic import Field

from ._binding import Binding, bind
from ._definition import Definition, Effect
from ._errors import ScopetoolError
from ._func import tool
from ._output import Output, TextBlock
from ._registry import Registry
from ._search import SEARCH_TOOL

__all__ = ["NOT_LOADED", "SEARCH_DESCRIPTION", "Catalog", "DeferredToolError"]

SEARCH_DESCRIPTION: Final = (
    "Search the tools that are not loaded yet by what you need to do (a few keywords). The tools found are "
    "loaded for the rest of the conversation; their definitions are returned."
)
"""What the local search tool tells the model it does."""

NOT_LOADED: Final = (
    'error: tool "{name}" is not loaded yet: call ' + SEARCH_TOOL + " with what you need, then call a tool it finds"
)
"""What the model is shown when it calls a deferred tool no search of its run has revealed."""


class DeferredToolError(ScopetoolError, LookupError):
    """A call names a deferred tool its run has not revealed; its result tells the model to search first."""

    def __init__(self, name: str) -> None:
        super().__init__(f"tool {name[:80]!r} is deferred and was not revealed in this run")
        self.name = name
        """The deferred tool's name."""

    @property
    def message(self) -> str:
        """The model-facing text (`NOT_LOADED`)."""
        return NOT_LOADED.format(name=self.name[:80])


@final
class Catalog:
    """One run's view of a registry: the tools shown, the local search, and the deferred tools it revealed.

    Pass it where a registry goes to export (``export_tools(catalog)``: the shown tools, sorted, then
    `SEARCH_TOOL`, then the revealed ones in the order revealed) and to run a call
    (``run_call(catalog, call)``): a search call reveals what it finds, a revealed tool's call is
    admitted by its own contract, and a deferred tool not revealed yet is refused (`DeferredToolError`).
    A registry with no deferred tool gives a catalog of every tool and no search.

    `revealed` restores a run's reveals (say, kept beside its messages: `revealed` gives them back);
    `limit` is how many tools one search returns. Every catalog of a registry searches its one
    `Registry.deferred_index`. Thread-safe: reveals only ever grow.

    Raises:
        ValueError: the registry has deferred tools and a tool of its own named `SEARCH_TOOL`, or
            `limit` is not a positive int.
        TypeError: `registry` is not a `Registry`, or `revealed` is one str.

    Example:
        ```python
        from scopetool import Catalog, Registry, tool

        @tool
        def ping() -> str:
            \"\"\"Answer pong.\"\"\"
            return "pong"

        @tool(defer_loading=True)
        def get_weather(city: str) -> str:
            \"\"\"Current weather for a city.\"\"\"
            return f"sunny in {city}"

        catalog = Catalog(Registry(ping, get_weather))
        print([d.name for d in catalog.definitions()])
        #> ['ping', 'search_tools']
        print([d.name for d in catalog.search("weather in Lyon")], catalog.revealed)
        #> ['get_weather'] ('get_weather',)
        print([d.name for d in catalog.definitions()])
        #> ['ping', 'search_tools', 'get_weather']
        ```
    """

    __slots__ = ("_limit", "_lock", "_registry", "_revealed", "_search")

    def __init__(self, registry: Registry, revealed: Iterable[str] = (), *, limit: int = 5) -> None:
        if not isinstance(registry, Registry):
            raise TypeError(f"a Catalog needs a Registry, not {type(registry).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int, not {limit!r}")
        if isinstance(revealed, str):
            raise TypeError("revealed is an iterable of tool names, not one str")
        self._registry = registry
        self._limit = limit
        self._lock = threading.Lock()
        self._revealed: tuple[str, ...] = ()
        deferred = bool(registry.deferred_names())
        if deferred and SEARCH_TOOL in registry:
            raise ValueError(f"the registry has a tool named {SEARCH_TOOL!r}: its deferred tools could not be searched")
        self._search = _search_binding(self) if deferred else None
        self.reveal(revealed)

    @property
    def registry(self) -> Registry:
        """The registry whose tools this catalog shows."""
        return self._registry

    @property
    def revealed(self) -> tuple[str, ...]:
        """The deferred tools this run's searches revealed, in the order revealed."""
        return self._revealed

    @property
    def search_tool(self) -> Binding | None:
        """The local search tool's binding, or None when the registry has no deferred tool."""
        return self._search

    def reveal(self, names: Iterable[str]) -> list[str]:
        """Reveal the deferred tools among `names` (a provider's own search found them, say); those new to the run.

        Names of tools that are not deferred, or not in the registry, are ignored.
        """
        registry = self._registry
        with self._lock:
            known = set(self._revealed)
            new = [n for n in dict.fromkeys(names) if isinstance(n, str) and n not in known and registry.is_deferred(n)]
            if new:
                self._revealed = (*self._revealed, *new)
        return new

    def search(self, query: str, *, limit: int | None = None) -> list[Definition]:
        """The deferred tools that best match `query` (at most `limit`, else the catalog's), now revealed."""
        found = self._registry.deferred_index().search(query, limit=self._limit if limit is None else limit)
        self.reveal(d.name for d in found)
        return found

    def is_visible(self, name: str) -> bool:
        """Whether the model may call `name` now: a shown tool, a revealed one, or the search tool."""
        if self._search is not None and name == SEARCH_TOOL:
            return True
        return name in self._registry and (not self._registry.is_deferred(name) or name in self._revealed)

    def resolve(self, name: str) -> Binding | None:
        """The binding a call of `name` runs on: the search tool, or the registry's (visible or not); None if none."""
        if self._search is not None and name == SEARCH_TOOL:
            return self._search
        return self._registry.resolve(name)

    def definitions(self) -> list[Definition]:
        """What the model is shown now: the shown tools (sorted), the search tool, then the revealed tools."""
        registry = self._registry
        shown = [registry[name].definition() for name in registry.names() if not registry.is_deferred(name)]
        if self._search is None:
            return shown
        return [*shown, self._search.definition(), *(registry[name].definition() for name in self._revealed)]

    def __iter__(self) -> Iterator[Definition]:
        return iter(self.definitions())

    def __repr__(self) -> str:
        return f"Catalog({len(self._registry)} tools, {len(self._revealed)} revealed)"


def _search_binding(catalog: Catalog) -> Binding:
    """The local search tool of `catalog`: a SAFE tool whose output is the found definitions (JSON text)."""

    @tool(name=SEARCH_TOOL, description=SEARCH_DESCRIPTION, effect=Effect.SAFE)
    def search_tools(
        query: Annotated[str, Field(description="What the tool you need does, in a few keywords.", max_length=500)],
    ) -> Output:
        found = catalog.search(query)
        text = json.dumps([d.to_dict() for d in found], ensure_ascii=False, separators=(",", ":"))
        details = json.dumps({"tools": [d.name for d in found]}, separators=(",", ":"))
        shown = text if found else "no tool matches: try other words"
        return Output(content=(TextBlock(shown),), details=details.encode())

    return bind(search_tools)
