"""The driver: runs one model turn's tool calls through a backend, in a safe order, under minted keys."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import ModuleType
from typing import Any, Final, TypeAlias, TypeVar, cast, final

from .. import _observe
from .._binding import Binding
from .._catalog import Catalog, DeferredToolError
from .._contract import Admission, IdempotencyKey, Invocation
from .._definition import Effect
from .._errors import InvalidInvocationError, ScopetoolError
from .._input import InputRequest
from .._native import build, slots
from .._outcome import Failure, FailureKind
from .._output import Result
from .._registry import Registry
from .._run import invocation_outcome
from .._turnrules import Tally, TurnRules
from ..providers._common import ToolCall, UnknownToolError, callable_names
from ._backend import (
    AdmittedCall,
    Backend,
    CallState,
    Conflict,
    Finished,
    GrantStore,
    MemoryBackend,
    RevealStore,
    Waiting,
    new_admitted_call,
)
from ._identity import KeyMinter, json_quote

__all__ = [
    "CallResult",
    "CallStatus",
    "Driver",
    "IncompleteTurnError",
    "ReplayConflictError",
    "ResultMessage",
    "RetryBudgetExceededError",
    "Turn",
]

logger: Final = logging.getLogger("scopetool.driver")

REFUSED_REPLAY: Final = 'error: tool "{name}" was not run: this call id was already used with other arguments'

EXHAUSTED: Final = 'error: tool "{name}" was not run: too many rejected calls of it in this run; do not call it again'

KEPT_RUNS: Final = 4096
"""Runs whose rejected attempts (with a retry budget) and tallies (with rules, on a backend that keeps no grants) a
driver remembers: the least recently driven are forgotten."""

ResultMessage: TypeAlias = Callable[[ToolCall, Result | BaseException], dict[str, Any]]
"""A provider's ``result_message(call, outcome)``."""


class ReplayConflictError(ScopetoolError, LookupError):
    """A call's key was used before with other arguments; the cause of the refusal the model is shown."""

    def __init__(self, key: IdempotencyKey) -> None:
        super().__init__(f"driver: key {key} was already used with other arguments; the call was not run")
        self.key = key
        """The key both calls map to."""


class RetryBudgetExceededError(ScopetoolError, LookupError):
    """A tool's rejected attempts in a run went past the driver's retry budget; the cause of the final text."""

    def __init__(self, name: str, attempt: int, budget: int) -> None:
        super().__init__(f"driver: rejected attempt {attempt} of tool {name[:80]!r} is past the retry budget {budget}")
        self.name = name
        """The tool name the model called (perhaps one that does not exist)."""
        self.attempt = attempt
        """Which rejected attempt of this tool in the run this was (1 is the first)."""
        self.budget = budget
        """The driver's retry budget."""


class IncompleteTurnError(ScopetoolError, ValueError):
    """A turn's results were asked for while some of its calls wait for input or are held behind one."""


class CallStatus(StrEnum):
    """Where one call of a turn stands."""

    DONE = "done"
    """The call has its outcome (it ran now or earlier, or it was refused before running)."""
    WAITING = "waiting"
    """The call asked for input: answer it with `Driver.answer`, then run the turn again."""
    HELD = "held"
    """The call was not started: it comes after a call that waits for input and may depend on it."""
    REFUSED = "refused"
    """The call's key was used before with other arguments; its outcome is a refusal (see `ReplayConflictError`)."""
    EXHAUSTED = "exhausted"
    """The call was not admitted and its tool's rejected attempts in this run are past the retry budget: its
    outcome is a final refusal, not another chance (see `RetryBudgetExceededError`)."""


@final
@dataclass(frozen=True, slots=True)
class CallResult:
    """What became of one tool call of a turn."""

    call: ToolCall
    """The model's call."""
    key: IdempotencyKey
    """The call's idempotency key: opaque, the same every time this run's call is driven."""
    status: CallStatus
    """Done, waiting for input, held, refused, or past the retry budget."""
    outcome: Result | BaseException | None = None
    """The outcome for the provider's result message (DONE, REFUSED and EXHAUSTED), else None.

    A call that ran has a `Result`, or a `Failure` that shows what the model is shown (backends store
    outcomes, not private causes). A call that could not be admitted has its live error: an
    `UnknownToolError` or an `InvalidInvocationError`."""
    request: InputRequest | None = None
    """The input request a WAITING call committed: show its prompt to whoever answers."""


_FINISHED: Final = frozenset((CallStatus.DONE, CallStatus.REFUSED, CallStatus.EXHAUSTED))

_CALL_RESULT: Final = slots(CallResult, "call", "key", "status", "outcome", "request")


def _done(call: ToolCall, key: IdempotencyKey, outcome: Result | BaseException) -> CallResult:
    """``CallResult(call, key, CallStatus.DONE, outcome)``, built without its __init__ (one per call)."""
    return build(CallResult, _CALL_RESULT, call, key, CallStatus.DONE, outcome, None)


@final
@dataclass(frozen=True, slots=True)
class Turn:
    """The results of one turn's calls, in the order the model emitted them."""

    results: tuple[CallResult, ...]
    """One result per call, in the model's order."""

    @property
    def complete(self) -> bool:
        """Whether every call has an outcome (none waits for input or is held)."""
        return all(r.status in _FINISHED for r in self.results)

    @property
    def waiting(self) -> tuple[CallResult, ...]:
        """The calls that wait for input, in the model's order."""
        return tuple(r for r in self.results if r.status is CallStatus.WAITING)

    def outcomes(self) -> list[tuple[ToolCall, Result | BaseException]]:
        """Each call with its outcome, for a provider's ``results_message``.

        Raises:
            IncompleteTurnError: a call waits for input or is held.
        """
        pairs: list[tuple[ToolCall, Result | BaseException]] = []
        for result in self.results:
            if result.outcome is None:
                raise _incomplete(result)
            pairs.append((result.call, result.outcome))
        return pairs

    def messages(self, provider: ModuleType | ResultMessage) -> list[dict[str, Any]]:
        """The provider's result message for each call, in the model's order.

        `provider` is a provider module (``scopetool.providers.openai_chat``, say) or its
        ``result_message`` function.

        Raises:
            IncompleteTurnError: a call waits for input or is held.
        """
        render: ResultMessage = provider.result_message if isinstance(provider, ModuleType) else provider
        messages: list[dict[str, Any]] = []
        for result in self.results:  # `outcomes` and the rendering in one pass
            outcome = result.outcome
            if outcome is None:
                raise _incomplete(result)
            messages.append(render(result.call, outcome))
        return messages


def _incomplete(result: CallResult) -> IncompleteTurnError:
    return IncompleteTurnError(
        f"driver: call {result.call.name!r} is {result.status.value}; answer its input request and run the turn again"
    )


_TURN: Final = slots(Turn, "results")
_ADMISSION: Final = slots(Admission, "idempotency_key", "continuation")


def _turn(results: tuple[CallResult, ...]) -> Turn:
    """``Turn(results)``, built without its __init__ (one per turn)."""
    return build(Turn, _TURN, results)


def _admission(key: IdempotencyKey) -> Admission:
    """``Admission(idempotency_key=key)`` for a key the driver minted (a str), built without its checks."""
    return build(Admission, _ADMISSION, key, None)


@final
class Driver:
    """Runs a model turn's tool calls: resolve, admit, call, classify, under keys minted for the run.

    Calls whose tools are `Effect.SAFE` run concurrently with the SAFE calls next to them; every other
    call runs alone, in the order the model emitted it, after the calls before it have finished. A call
    that waits for input holds every later call until it is answered (their status is HELD). Unknown
    tools and rejected arguments become error outcomes, never exceptions.

    Args:
        registry: The tools the model may call.
        backend: Where calls run and what is kept of them; a new `MemoryBackend` by default.
        serial: Names of SAFE tools that must still run one at a time (say, one that calls a
            rate-limited service).
        retry_budget: How many rejected attempts (an unknown tool, arguments not admitted) of each
            tool name a run gets with the rejection to retry from; later ones are answered with a
            final text instead (status EXHAUSTED). None: no budget.
        rules: Call budgets and repeat refusal (`TurnRules`) for each run: a call they refuse is
            DONE with the refusal as its outcome, and does not run. A run is a run id; a turn, one
            `run`. The counts are kept by the backend where it can (`GrantStore`: the memory and
            DBOS backends), else in this driver's memory. None (or rules all off): no rules, no cost.

    Example:
        ```python
        import asyncio
        from scopetool import Effect, Registry, tool
        from scopetool.driver import Driver
        from scopetool.providers import anthropic

        @tool(effect=Effect.SAFE)
        def add(a: int, b: int) -> int:
            \"\"\"Add two integers.\"\"\"
            return a + b

        driver = Driver(Registry(add))
        calls = anthropic.parse_tool_calls({"content": [
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}},
            {"type": "tool_use", "id": "toolu_2", "name": "mul", "input": {}}]})
        turn = asyncio.run(driver.run("run-7", calls))
        print([r.status.value for r in turn.results], turn.complete)
        #> ['done', 'done'] True
        for block in anthropic.results_message(turn.outcomes())["content"]:
            print(block["tool_use_id"], block["content"][0]["text"], block.get("is_error", False))
        #> toolu_1 5 False
        #> toolu_2 error: tool "mul" is not available True
        ```
    """

    __slots__ = (
        "_backend",
        "_budget",
        "_catalogs",
        "_minter",
        "_registry",
        "_rejected",
        "_rules",
        "_serial",
        "_tallies",
    )

    def __init__(
        self,
        registry: Registry,
        backend: Backend | None = None,
        *,
        serial: Iterable[str] = (),
        retry_budget: int | None = None,
        rules: TurnRules | None = None,
    ) -> None:
        if not isinstance(registry, Registry):
            raise TypeError(f"a driver needs a Registry, not {type(registry).__name__}")
        if backend is not None and not isinstance(backend, Backend):
            raise TypeError(f"{type(backend).__name__} is not a driver backend")
        names = frozenset(serial)
        if not all(isinstance(name, str) for name in names):
            raise TypeError("serial names tools: it must hold only strings")
        if retry_budget is not None and (
            isinstance(retry_budget, bool) or not isinstance(retry_budget, int) or retry_budget < 0
        ):
            raise ValueError(f"retry_budget must be a non-negative int or None, not {retry_budget!r}")
        if rules is not None and not isinstance(rules, TurnRules):
            raise TypeError(f"rules must be TurnRules or None, not {type(rules).__name__}")
        self._rules = rules if rules is not None and rules.enabled else None
        # run id -> the run's tally, for a backend that keeps no grants (the most recently driven last)
        self._tallies: dict[str, Tally] = {}
        self._registry = registry
        self._backend: Backend = MemoryBackend() if backend is None else backend
        self._serial = names
        self._minter: KeyMinter | None = None  # made from the backend's secret at the first run
        self._budget = retry_budget
        # run id -> tool name -> the keys of its rejected calls, in the order first seen (an ordered set)
        self._rejected: dict[str, dict[str, dict[str, None]]] = {}
        # run id -> the run's catalog (what its searches revealed), the most recently driven last
        self._catalogs: dict[str, Catalog] = {}

    @property
    def registry(self) -> Registry:
        """The tools the model may call."""
        return self._registry

    @property
    def backend(self) -> Backend:
        """Where calls run and what is kept of them."""
        return self._backend

    async def catalog(self, run_id: str) -> Catalog:
        """The run's `Catalog`: export it for the run's next request (``export_tools(await driver.catalog(run))``).

        It shows the registry's tools less the deferred ones, the local ``search_tools`` when there are
        deferred tools, and those the run's searches revealed, in the order revealed. The reveals are
        kept by the backend when it can (`RevealStore`: the memory and DBOS backends), so a driver made
        again on the same backend (a restarted process) finds them.
        """
        if not isinstance(run_id, str) or not run_id:
            raise ValueError("run_id must be a non-empty string")
        catalogs = self._catalogs
        catalog = catalogs.pop(run_id, None)
        if catalog is None:
            backend = self._backend
            kept = await backend.revealed(run_id) if isinstance(backend, RevealStore) else ()
            catalog = Catalog(self._registry, kept)
            if len(catalogs) >= KEPT_RUNS:
                del catalogs[next(iter(catalogs))]  # the least recently driven run
        catalogs[run_id] = catalog
        return catalog

    async def run(self, run_id: str, calls: Sequence[ToolCall]) -> Turn:
        """Drive one turn's calls; their results in the model's order.

        `run_id` names the run the calls belong to (a conversation, an agent run): with the provider's
        call ids it gives every call its key, so driving the same turn again returns the stored outcomes
        (and resumes answered calls) instead of running tools twice. When the provider gives no call
        ids, calls are told apart by their position, so `run_id` must then name the turn itself.

        When the registry has deferred tools, the run's `catalog` decides what the model may call: a
        ``search_tools`` call runs the search here (it is read-only and gives the same answer again) and
        reveals what it finds for the rest of the run; a deferred tool not revealed yet is refused
        (`DeferredToolError`, whose text tells the model to search first).
        """
        if not isinstance(run_id, str) or not run_id:
            raise ValueError("run_id must be a non-empty string")
        calls = tuple(calls)
        for call in calls:
            if not isinstance(call, ToolCall):
                raise TypeError(f"a turn holds ToolCalls, not {type(call).__name__}")
        minter = self._minter
        if minter is None:
            minter = self._minter = KeyMinter(await self._backend.secret())
        key_in_run, quoted_run_id = minter.key_in_run, json_quote(run_id)
        catalog = await self.catalog(run_id) if self._registry.deferred_names() else None
        tally = None if self._rules is None else await self._tally(run_id)
        resolve = self._registry.resolve if catalog is None else catalog.resolve
        results: list[CallResult | None] = [None] * len(calls)
        admitted: list[tuple[int, AdmittedCall]] = []
        for position, call in enumerate(calls):
            key = key_in_run(quoted_run_id, call.id, position)
            binding = resolve(call.name)
            observer = _observe.current
            if binding is None:
                if observer is not None:
                    observer.unknown(call.name, call.id)
                known = callable_names(self._registry if catalog is None else catalog)
                results[position] = self._rejection(run_id, call, key, UnknownToolError(call.name, known))
                continue
            if catalog is not None and not catalog.is_visible(call.name):
                results[position] = self._rejection(run_id, call, key, DeferredToolError(call.name))
                continue
            try:
                if observer is None:
                    invocation = binding.contract.prepare(call.request, _admission(key))
                else:
                    invocation = observer.admit(binding.contract, call.request, _admission(key), call.id)
            except InvalidInvocationError as error:
                results[position] = self._rejection(run_id, call, key, error)
                continue
            if tally is not None:
                refusal = tally.admit(invocation)
                if refusal is not None:
                    results[position] = _done(call, key, refusal)
                    continue
            if catalog is not None and binding is catalog.search_tool:
                results[position] = _done(call, key, await self._search(run_id, catalog, binding, invocation))
                continue
            admitted.append((position, new_admitted_call(key, binding, invocation)))
        if tally is not None:
            await self._keep(run_id, tally)
        if len(admitted) == 1:  # one call to run: no segments to cut, no tasks to start
            position, admitted_call = admitted[0]
            state = await self._backend.start(admitted_call)
            if type(state) is Finished:  # as `_result` has it, less a call: the common case
                outcome = state.outcome
                results[position] = build(
                    CallResult, _CALL_RESULT, calls[position], admitted_call.key, CallStatus.DONE, outcome, None
                )
            else:
                results[position] = self._result(calls[position], admitted_call, state)
            return build(Turn, _TURN, tuple(results))  # every position has its result now
        held = False
        for segment in self._segments(admitted):
            if held:
                for position, admitted_call in segment:
                    results[position] = CallResult(calls[position], admitted_call.key, CallStatus.HELD)
                continue
            states = await self._start(segment)
            for (position, admitted_call), state in zip(segment, states, strict=True):
                results[position] = self._result(calls[position], admitted_call, state)
            held = any(isinstance(state, Waiting) for state in states)
        return _turn(cast("tuple[CallResult, ...]", tuple(results)))  # every position has its result now

    async def answer(self, key: IdempotencyKey, response: Any) -> bool:
        """Answer the input request the call `key` waits on; False when it waits on none (a duplicate).

        The response is Python data (JSON values) checked against the request's response schema. Run
        the turn again to get the resumed call's outcome.

        Raises:
            InvalidInputRequestError: the response does not satisfy the response schema.
        """
        if not isinstance(key, str) or not key:
            raise ValueError("key must be a call's non-empty idempotency key")
        return await self._backend.answer(key, response)

    async def _tally(self, run_id: str) -> Tally:
        """The run's tally at the start of a turn: from the backend's grants where it keeps them, else from memory."""
        rules = cast("TurnRules", self._rules)
        backend = self._backend
        if isinstance(backend, GrantStore):
            tally = Tally(rules, granted=await backend.granted(run_id), keep_new=True)
        else:
            tallies = self._tallies
            found = tallies.pop(run_id, None)
            if found is None:
                found = Tally(rules)
                if len(tallies) >= KEPT_RUNS:
                    del tallies[next(iter(tallies))]  # the least recently driven run
            tally = tallies[run_id] = found
        tally.new_turn()
        return tally

    async def _keep(self, run_id: str, tally: Tally) -> None:
        """Hand the turn's new grants to the backend that keeps them, before any of the turn's calls starts."""
        backend = self._backend
        if isinstance(backend, GrantStore):
            new = tally.take_new()
            if new:
                await backend.grant(run_id, new)

    async def _search(
        self, run_id: str, catalog: Catalog, binding: Binding, invocation: Invocation
    ) -> Result | BaseException:
        """Run a search call here (it reveals what it finds in `catalog`); the backend keeps what is new to the run."""
        before = len(catalog.revealed)
        outcome = await invocation_outcome(binding, invocation)
        new = catalog.revealed[before:]
        backend = self._backend
        if new and isinstance(backend, RevealStore):
            await backend.reveal(run_id, new)
        return outcome

    def _rejection(self, run_id: str, call: ToolCall, key: IdempotencyKey, error: BaseException) -> CallResult:
        """A call that was not admitted: its error, or the final refusal once its tool is past the budget.

        Attempts are counted by key, so driving the same turn again counts none twice.
        """
        budget = self._budget
        if budget is None:
            return CallResult(call, key, CallStatus.DONE, error)
        runs = self._rejected
        tools = runs.pop(run_id, None)
        if tools is None:
            tools = {}
            if len(runs) >= KEPT_RUNS:
                del runs[next(iter(runs))]  # the least recently driven run
        runs[run_id] = tools
        keys = tools.setdefault(call.name, {})
        keys.setdefault(key, None)
        attempt = list(keys).index(key) + 1
        if attempt <= budget:
            return CallResult(call, key, CallStatus.DONE, error)
        logger.info(
            "driver: tool %r was refused: rejected attempt %d of the run is past the budget", call.name[:80], attempt
        )
        exceeded = RetryBudgetExceededError(call.name, attempt, budget)
        exceeded.__cause__ = error
        final = Failure(kind=FailureKind.REJECTED, output=EXHAUSTED.format(name=call.name[:80]), cause=exceeded)
        return CallResult(call, key, CallStatus.EXHAUSTED, final)

    def _segments(self, admitted: list[tuple[int, AdmittedCall]]) -> list[list[tuple[int, AdmittedCall]]]:
        """Admitted calls in model order, cut into runs of concurrent calls and single serial calls."""
        serial = self._serial
        return barrier_segments(
            admitted,
            lambda item: item[1].binding.definition().effect is Effect.SAFE and item[1].binding.name not in serial,
        )

    async def _start(self, segment: list[tuple[int, AdmittedCall]]) -> list[CallState]:
        if len(segment) == 1:
            return [await self._backend.start(segment[0][1])]
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(self._backend.start(call)) for _, call in segment]
        return [task.result() for task in tasks]

    @staticmethod
    def _result(call: ToolCall, admitted: AdmittedCall, state: CallState) -> CallResult:
        if isinstance(state, Finished):
            return _done(call, admitted.key, state.outcome)
        if isinstance(state, Conflict):
            logger.warning(
                "driver: call key %s was started again with other arguments; the call was refused", admitted.key
            )
            refusal = Failure(
                kind=FailureKind.REJECTED,
                output=REFUSED_REPLAY.format(name=call.name),
                cause=ReplayConflictError(admitted.key),
            )
            return CallResult(call, admitted.key, CallStatus.REFUSED, refusal)
        return CallResult(call, admitted.key, CallStatus.WAITING, request=state.request)


_Item = TypeVar("_Item")


def barrier_segments(items: Iterable[_Item], concurrent: Callable[[_Item], bool]) -> list[list[_Item]]:
    """`items` in order, cut into runs of items that may run at once and single items that run alone.

    The barrier rule of the Driver, code mode and the integrations: a call that may have effects (one
    `concurrent` says no to, as it does to any tool not `Effect.SAFE`) runs alone, after the calls before it
    have finished and before the calls after it start.
    """
    segments: list[list[_Item]] = []
    previous = False
    for item in items:
        together = concurrent(item)
        if together and previous:
            segments[-1].append(item)
        else:
            segments.append([item])
        previous = together
    return segments
