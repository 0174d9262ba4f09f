"""`Registry`: an instance-scoped, thread-safe map from tool names to bindings."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, final

from . import _observe
from ._binding import Binding, Tool, bind_with
from ._context import NO_DEPS
from ._contract import Admission, Request
from ._definition import Definition
from ._errors import DuplicateToolError, InvalidToolError, ToolNotFoundError
from ._feedback import nearest, unknown_tool_message
from ._output import Result
from ._run import call_outcome
from ._search import ToolIndex, check_deferral_rule, is_deferred
from ._timeout import check_timeout

if TYPE_CHECKING:
    from ._turnrules import Tally

__all__ = ["Registry"]


@final
class Registry:
    """Bindings by name. Registration is atomic per batch; names are unique; views are sorted by name.

    Tools given instead of bindings are bound without middlewares, with the registry's `deps` (the
    application's dependencies a `@tool` function's `CallContext` receives) and, for those that
    declare none, its `timeout` (seconds); a `Binding` keeps its own deps and timeout (see `bind`).

    `defer_loading` is the rule for the tools that do not choose themselves (``@tool(defer_loading=...)``,
    ``bind(..., defer_loading=...)``): False (the default) shows them, True defers them, a count defers
    them once the registry holds more tools than that. A deferred tool's definition is kept out of what
    a model is first shown; the exports add a search tool that reveals it (docs/tool-search.md).

    ``registry.run_sync(name, arguments)`` (``await registry.run(...)`` in async code) admits and runs
    one call a model proposed and returns its outcome. ``registry[name]`` is the binding of that name,
    or a `ToolNotFoundError` naming the nearest registered names; ``registry.resolve(name)`` gives None
    instead, for code that handles an unknown name itself.

    Example:
        ```python
        from scopetool import Registry, tool

        @tool
        def ping() -> str:
            \"\"\"Answer pong.\"\"\"
            return "pong"

        registry = Registry(ping)
        print([d.name for d in registry.definitions()], registry["ping"].name)
        #> ['ping'] ping
        print(registry.run_sync("ping").output.text())
        #> pong
        ```
    """

    __slots__ = ("_bindings", "_defer_loading", "_deferred", "_deps", "_index", "_lock", "_timeout")

    def __init__(
        self,
        *tools: Binding | Tool,
        deps: object = NO_DEPS,
        timeout: float | None = None,
        defer_loading: bool | int = False,
    ) -> None:
        self._timeout = check_timeout(timeout, "Registry")
        self._defer_loading = check_deferral_rule(defer_loading, "Registry")
        self._lock = threading.Lock()
        self._bindings: MappingProxyType[str, Binding] = MappingProxyType({})
        self._deferred: frozenset[str] = frozenset()
        self._index: ToolIndex | None = None  # over the deferred tools, built when first searched
        self._deps = deps
        self.register(*tools)

    def with_deps(self, deps: object, /) -> Registry:
        """A registry of the same bindings, each with `deps` instead (`Binding.with_deps`): per run deps.

        Its bindings share the contracts of this registry's, so an invocation admitted by either runs
        on both. Durable backends recover calls with the registry they were given, so per-run deps
        suit runs in this process; give a durable driver's registry the deps every process can rebuild.

        Raises:
            InvalidToolError: a tool's ``CallContext[Deps]`` names a class `deps` is not an instance of.
        """
        bindings = self._bindings
        return Registry(
            *(bindings[name].with_deps(deps) for name in sorted(bindings)), deps=deps, defer_loading=self._defer_loading
        )

    def register(self, *tools: Binding | Tool) -> None:
        """Add a batch atomically: either every tool is registered or none is.

        Raises:
            InvalidToolError: ``tools[i]`` cannot be bound (the first failing one, in batch order).
            DuplicateToolError: a name repeats within the batch or is already registered (the first
                conflict in batch order).
        """
        batch: dict[str, Binding] = {}
        for index, value in enumerate(tools):
            if isinstance(value, Binding):
                binding = value
            elif isinstance(value, list | tuple | set | frozenset):
                raise InvalidToolError(
                    f"tools[{index}] is a {type(value).__name__}, not a tool: pass the tools themselves, "
                    "Registry(*tools) or registry.register(*tools)"
                )
            else:
                try:
                    binding = bind_with(value, (), None, self._timeout, self._deps)
                except InvalidToolError as error:
                    raise InvalidToolError(f"tools[{index}]: {error}") from error
            if binding.name in batch:
                raise DuplicateToolError(f"tool name {binding.name!r} appears more than once in the batch")
            batch[binding.name] = binding
        if not batch:
            return
        with self._lock:
            current = self._bindings
            for name in batch:
                if name in current:
                    raise DuplicateToolError(f"tool name {name!r} is already registered")
            bindings = {**current, **batch}
            rule, size = self._defer_loading, len(bindings)
            self._deferred = frozenset(n for n, b in bindings.items() if is_deferred(b.defer_loading, rule, size))
            self._bindings = MappingProxyType(bindings)
            self._index = None

    @property
    def timeout(self) -> float | None:
        """The default timeout of the tools this registry binds itself (None: none)."""
        return self._timeout

    @property
    def defer_loading(self) -> bool | int:
        """The deferral rule of the tools that have no mark of their own (`Binding.defer_loading` None).

        False (the default): they are shown. True: they are deferred. A count: they are deferred once
        the registry holds more tools than that.
        """
        return self._defer_loading

    def is_deferred(self, name: str) -> bool:
        """Whether the tool `name` is deferred: kept out of what the model is first shown, found by a search.

        Its own mark (`Binding.defer_loading`) decides, else the registry's rule (`defer_loading`). An
        unknown name is not deferred.
        """
        return name in self._deferred

    def deferred_names(self) -> list[str]:
        """The names of the deferred tools (`is_deferred`), sorted."""
        return sorted(self._deferred)

    def deferred_index(self) -> ToolIndex:
        """A `ToolIndex` over the deferred tools' definitions: built at the first call, again after a registration.

        Every run's `Catalog` searches this one index.
        """
        with self._lock:
            index = self._index
            if index is None:
                bindings = self._bindings
                index = self._index = ToolIndex(bindings[name].definition() for name in sorted(self._deferred))
            return index

    async def run(
        self,
        name: str,
        arguments: str | bytes = "",
        /,
        *,
        admission: Admission | None = None,
        tally: Tally | None = None,
    ) -> Result | BaseException:
        """Admit one call (a tool name and its JSON arguments, as the model sent them), run it: its outcome.

        The call goes through the tool's `Contract.prepare` like any other, with `admission` (the
        driver's idempotency key or continuation). Nothing is raised for a bad call: an unknown name
        gives a `ToolNotFoundError` whose message is what the model is told (``error: tool "x" is not
        available; did you mean "y"?``, naming only tools that are not deferred), a rejected call its
        `InvalidInvocationError`, and whatever the tool raised is returned as is. Only the cancellation
        of the task that awaits the call propagates. Hand the outcome to a provider's `result_message`
        to tell the model; for the explicit steps, see ``registry[name].contract.prepare(...)``.

        `tally` is the run's count under its `TurnRules` (``rules.tally()``, one per run): an admitted
        call it refuses (a spent budget, an exact repeat) does not run, and its outcome is the refusal,
        a REJECTED `Failure` whose text tells the model why.
        """
        binding = self._bindings.get(name)
        if binding is None:
            observer = _observe.current
            if observer is not None:
                observer.unknown(name, None)
            deferred = self._deferred
            near = tuple(nearest(name, [known for known in sorted(self._bindings) if known not in deferred]))
            return ToolNotFoundError(name, unknown_tool_message(name, near), near=near)
        return await call_outcome(
            binding, Request(name=name, arguments=arguments), admission or _NO_ADMISSION, None, tally
        )

    def run_sync(
        self,
        name: str,
        arguments: str | bytes = "",
        /,
        *,
        admission: Admission | None = None,
        tally: Tally | None = None,
    ) -> Result | BaseException:
        """`run` from synchronous code, in an event loop of its own.

        Raises:
            RuntimeError: an event loop is already running in this thread (``await registry.run(...)`` there).
        """
        import asyncio  # noqa: PLC0415 - asyncio loads logging; importing scopetool stays light

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(name, arguments, admission=admission, tally=tally))
        raise RuntimeError("Registry.run_sync cannot run inside a running event loop: await registry.run(...) there")

    def resolve(self, name: str) -> Binding | None:
        """The binding registered under `name`, or None (``registry[name]`` raises instead)."""
        return self._bindings.get(name)

    def __getitem__(self, name: str) -> Binding:
        """The binding registered under `name`.

        Raises:
            ToolNotFoundError: no tool of that name is registered (the message names the nearest ones).
        """
        bindings = self._bindings
        binding = bindings.get(name)
        if binding is None:
            if not isinstance(name, str):
                raise ToolNotFoundError(name, _not_a_name(name))
            raise ToolNotFoundError(name, _not_found(name, sorted(bindings)))
        return binding

    def definitions(self) -> list[Definition]:
        """Every tool's frozen definition, sorted by name."""
        bindings = self._bindings
        return [bindings[name].definition() for name in sorted(bindings)]

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._bindings)

    def __contains__(self, name: object) -> bool:
        return name in self._bindings

    def __len__(self) -> int:
        return len(self._bindings)

    def __iter__(self) -> Iterator[Binding]:
        bindings = self._bindings
        return iter([bindings[name] for name in sorted(bindings)])

    def __repr__(self) -> str:
        return f"Registry({', '.join(sorted(self._bindings))})"


_NO_ADMISSION: Final = Admission()


def _not_a_name(given: object) -> str:
    """What to say when ``registry[...]`` is given something other than a name (a tool, say)."""
    named = getattr(given, "name", None)
    fix = f": registry[{named!r}]" if isinstance(named, str) else ""
    return f"tools are looked up by name (a str), not by {type(given).__name__}{fix}"


def _not_found(name: str, names: list[str]) -> str:
    """What to say about a name no registered tool has: the nearest names, or the names there are."""
    text = f"no tool named {name!r} is registered"
    if not names:
        return f"{text}: the registry is empty"
    close = nearest(name, names)
    if close:
        return f"{text}; did you mean {' or '.join(repr(n) for n in close)}?"
    if len(names) <= 12:
        return f"{text}; the registered tools are {', '.join(repr(n) for n in names)}"
    return f"{text} (the registry holds {len(names)} tools: see registry.names())"
