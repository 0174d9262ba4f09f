"""Turn rules: call budgets and the refusal of exact repeats, decided at admission, beside the schema.

`TurnRules` declares them once; a `Tally` is what one run (an MCP session, a caller) has spent of
them, and `Tally.admit` is the decision every runner asks after `Contract.prepare` admitted a call and
before it runs: None grants the call (and counts it), a `Failure` refuses it with a text for the model
in the style of the other refusals (what was refused, which budget and how much of it is spent, what
to do instead; never a value of the arguments). "The same call" is the tool name and the admitted
arguments in canonical JSON (`call_digest`: member order and spacing do not matter).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Final, final

from ._contract import Invocation
from ._definition import Effect
from ._digest import call_digest
from ._errors import ScopetoolError
from ._outcome import Failure, FailureKind

__all__ = ["MAX_REMEMBERED", "Grant", "Tally", "TurnRule", "TurnRuleError", "TurnRules"]

MAX_REMEMBERED: Final = 65_536
"""The granted calls a `Tally` remembers for repeats and replays; past it the oldest are forgotten (counts stay)."""


class TurnRule(StrEnum):
    """Which turn rule refused a call."""

    TOOL = "tool"
    """The tool's own budget of calls in the run (`TurnRules.per_tool`, `TurnRules.limits`)."""
    TURN = "turn"
    """The budget of calls in one turn (`TurnRules.per_turn`)."""
    CALLS = "calls"
    """The budget of calls in the run, of every tool together (`TurnRules.calls`)."""
    REPEAT = "repeat"
    """The call repeats one the run already made (`TurnRules.refuse_repeats`)."""


@final
@dataclass(frozen=True, slots=True)
class TurnRules:
    """Call budgets and repeat refusal, declared once and enforced by every runner that admits calls.

    Every rule is off by default, and rules that are all off cost admission nothing. A budget counts
    the calls a run granted (admitted by the schema and by these rules; a rejected call is not
    counted); the runner says what a run is: a `Driver` run id, a `Tally` handed to `Registry.run`, an
    MCP session.

    Example:
        ```python
        from scopetool import Registry, TurnRules, tool

        @tool
        def send(to: str) -> str:
            \"\"\"Send a note.\"\"\"
            return "sent"

        registry = Registry(send)
        run = TurnRules(limits={"send": 1}).tally()  # what this run spends
        print(registry.run_sync("send", '{"to": "a"}', tally=run).output.text())
        #> sent
        refused = registry.run_sync("send", '{"to": "b"}', tally=run)  # a REJECTED Failure: the tool did not run
        print(refused.output.text().split("; ")[0])
        #> error: tool "send" was not run: its budget in this run is spent (1 of 1 calls)
        ```
    """

    calls: int | None = None
    """The most calls a run grants, of every tool together; None: no budget."""
    per_turn: int | None = None
    """The most calls one turn grants (where the runner has turns: the `Driver`, `Tally.new_turn`); None: no budget."""
    per_tool: int | None = None
    """The most calls of each tool a run grants, for the tools `limits` does not name; None: no budget."""
    limits: Mapping[str, int] = field(default_factory=lambda: _NO_LIMITS, hash=False)
    """Budgets of named tools in a run (they win over `per_tool`): ``{"send_email": 1}``."""
    refuse_repeats: bool = False
    """Refuse a call that repeats one the run granted before: the same tool and the same admitted arguments."""
    safe_repeats: bool = False
    """With `refuse_repeats`, still grant the repeats of a tool declared `Effect.SAFE` (a read changes nothing)."""

    def __post_init__(self) -> None:
        for name in ("calls", "per_turn", "per_tool"):
            _check_count(getattr(self, name), f"TurnRules.{name}")
        limits = self.limits
        if not isinstance(limits, Mapping):
            raise TypeError(f"TurnRules.limits must map tool names to counts, not {type(limits).__name__}")
        for tool, count in limits.items():
            if not isinstance(tool, str):
                raise TypeError(f"TurnRules.limits: a key must be a tool name (str), not {type(tool).__name__}")
            _check_count(count, f"TurnRules.limits[{tool[:80]!r}]")
        for name in ("refuse_repeats", "safe_repeats"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"TurnRules.{name} must be a bool, not {type(getattr(self, name)).__name__}")
        object.__setattr__(self, "limits", MappingProxyType(dict(limits)))

    @property
    def enabled(self) -> bool:
        """Whether any rule is on (a runner given rules that are all off skips them)."""
        return (
            self.calls is not None
            or self.per_turn is not None
            or self.per_tool is not None
            or bool(self.limits)
            or self.refuse_repeats
        )

    def tally(self, *, scope: str = "run") -> Tally:
        """A new `Tally` of these rules: what one run has spent (`scope` names the run to the model: "session")."""
        return Tally(self, scope=scope)


_NO_LIMITS: Final[Mapping[str, int]] = MappingProxyType({})


def _check_count(value: object, where: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{where} must be a non-negative int or None, not {value!r}")


@final
@dataclass(frozen=True, slots=True)
class Grant:
    """One call a `Tally` granted, as a durable store keeps it (see `Tally.granted`)."""

    key: str | None
    """The call's idempotency key (None: the runner has none, so a replay is not told apart)."""
    tool: str
    """The tool's name."""
    digest: str | None
    """The call's `call_digest` where repeats are refused for the tool, else None."""


class TurnRuleError(ScopetoolError, LookupError):
    """A turn rule refused a call: the private cause of the `Failure` the model is shown."""

    def __init__(self, rule: TurnRule, tool: str, limit: int | None, spent: int) -> None:
        what = "repeats an earlier call" if rule is TurnRule.REPEAT else f"is past the {rule.value} budget {limit}"
        super().__init__(f"turn rules: the call of tool {tool[:80]!r} {what}; it was not run")
        self.rule = rule
        """The rule that refused it."""
        self.tool = tool
        """The tool's name."""
        self.limit = limit
        """The budget (None for a repeat)."""
        self.spent = spent
        """How much of it the run had spent (for a repeat, the calls of the tool granted before)."""


_TEXTS: Final = {
    TurnRule.TOOL: (
        'error: tool "{name}" was not run: its budget in this {scope} is spent ({spent} of {limit} calls); '
        "do not call it again in this {scope}: use the results you have, or another tool"
    ),
    TurnRule.TURN: (
        'error: tool "{name}" was not run: this turn\'s budget of tool calls is spent ({spent} of {limit}); '
        "read these results, then make the calls you still need in your next turn"
    ),
    TurnRule.CALLS: (
        'error: tool "{name}" was not run: this {scope}\'s budget of tool calls is spent ({spent} of {limit}); '
        "do not call tools again in this {scope}: answer with the results you have"
    ),
    TurnRule.REPEAT: (
        'error: tool "{name}" was not run: the same call (the same arguments) already ran in this {scope}; '
        "use its result, or call it with other arguments"
    ),
}


@final
class Tally:
    """What one run has spent under its `TurnRules`: the calls granted, by tool, in the turn, and which ones.

    Made by `TurnRules.tally`, or by a durable runner from the calls its store kept (`granted`), with
    `keep_new` so that `take_new` hands it the calls to keep next. Safe to use from many threads;
    `admit` is what a runner asks.
    """

    __slots__ = ("_by_tool", "_calls", "_keys", "_lock", "_new", "_rules", "_scope", "_seen", "_turn")

    def __init__(
        self, rules: TurnRules, *, scope: str = "run", granted: Iterable[Grant] = (), keep_new: bool = False
    ) -> None:
        if not isinstance(rules, TurnRules):
            raise TypeError(f"a Tally needs TurnRules, not {type(rules).__name__}")
        if not isinstance(scope, str) or not scope:
            raise ValueError("scope must name the run to the model (a non-empty str: 'run', 'session')")
        self._rules = rules
        self._scope = scope
        self._lock = threading.Lock()
        self._calls = 0
        self._turn = 0
        self._by_tool: dict[str, int] = {}
        self._keys: dict[str, None] = {}  # the keys granted: a replay of one is granted again, not counted
        self._seen: dict[str, None] = {}  # the digests granted, for repeats
        self._new: list[Grant] | None = None
        for grant in granted:
            if not isinstance(grant, Grant):
                raise TypeError(f"granted holds Grants, not {type(grant).__name__}")
            self._count(grant.key, grant.tool, grant.digest)
        if keep_new:
            self._new = []  # granted since `take_new`

    @property
    def rules(self) -> TurnRules:
        """The rules this tally counts against."""
        return self._rules

    @property
    def calls(self) -> int:
        """The calls granted in the run, of every tool."""
        return self._calls

    def calls_of(self, tool: str) -> int:
        """The calls of `tool` granted in the run."""
        return self._by_tool.get(tool, 0)

    def new_turn(self) -> None:
        """Start the next turn: `TurnRules.per_turn` counts from zero again (the `Driver` calls it each turn)."""
        self._turn = 0

    def take_new(self) -> tuple[Grant, ...]:
        """The calls granted since the last `take_new` (or since the tally was made), for a durable store.

        Raises:
            ValueError: the tally was not made with `keep_new`.
        """
        with self._lock:
            new = self._new
            if new is None:
                raise ValueError("this Tally keeps no new grants: make it with keep_new=True")
            self._new = []
        return tuple(new)

    def admit(self, invocation: Invocation) -> Failure | None:
        """Grant the admitted call (None: it may run, and it is counted) or refuse it (the `Failure` to answer).

        A call whose idempotency key the tally granted before is a replay: granted again, counted once.
        """
        name = invocation.name
        key = invocation.idempotency_key
        rules = self._rules
        with self._lock:
            if key and key in self._keys:
                self._turn += 1
                return None
            digest = None
            if rules.refuse_repeats and not (rules.safe_repeats and invocation.definition.effect is Effect.SAFE):
                digest = call_digest(name, invocation.arguments)
                if digest in self._seen:
                    return self._refuse(TurnRule.REPEAT, name, None, self._by_tool.get(name, 0))
            spent = self._by_tool.get(name, 0)
            limit = rules.limits.get(name, rules.per_tool)
            if limit is not None and spent >= limit:
                return self._refuse(TurnRule.TOOL, name, limit, spent)
            limit = rules.per_turn
            if limit is not None and self._turn >= limit:
                return self._refuse(TurnRule.TURN, name, limit, self._turn)
            limit = rules.calls
            if limit is not None and self._calls >= limit:
                return self._refuse(TurnRule.CALLS, name, limit, self._calls)
            self._count(key or None, name, digest)
            self._turn += 1
        return None

    def _count(self, key: str | None, tool: str, digest: str | None) -> None:
        self._calls += 1
        self._by_tool[tool] = self._by_tool.get(tool, 0) + 1
        if key is not None:
            _remember(self._keys, key)
        if digest is not None:
            _remember(self._seen, digest)
        if self._new is not None:
            self._new.append(Grant(key, tool, digest))

    def _refuse(self, rule: TurnRule, name: str, limit: int | None, spent: int) -> Failure:
        text = _TEXTS[rule].format(name=name[:80], scope=self._scope, spent=spent, limit=limit)
        return Failure(kind=FailureKind.REJECTED, output=text, cause=TurnRuleError(rule, name, limit, spent))

    def __repr__(self) -> str:
        return f"Tally({self._calls} calls granted in this {self._scope})"


def _remember(kept: dict[str, None], item: str) -> None:
    if len(kept) >= MAX_REMEMBERED:
        del kept[next(iter(kept))]  # the oldest
    kept[item] = None
