"""Turn rules (`TurnRules`, `Tally`) through `Registry.run`: budgets, repeats, the refusal's words, the checks."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from scopetool import (
    Admission,
    Effect,
    Failure,
    FailureKind,
    Grant,
    IdempotencyKey,
    Registry,
    Request,
    Result,
    Tally,
    TurnRule,
    TurnRuleError,
    TurnRules,
    tool,
)
from scopetool.providers import ToolCall, openai_chat

RAN: list[str] = []


@tool
def send(to: str, body: str = "") -> str:
    """Send a note."""
    RAN.append(to)
    return f"sent to {to}"


@tool(effect=Effect.SAFE)
def look(query: str) -> str:
    """Look something up."""
    RAN.append(query)
    return f"found {query}"


REGISTRY = Registry(send, look)
SECRET = "hunter2-secret"


def refusal(outcome: Result | BaseException) -> TurnRuleError:
    """The turn rule behind a refused outcome (asserting it is one)."""
    assert isinstance(outcome, Failure) and outcome.kind is FailureKind.REJECTED
    assert isinstance(outcome.cause, TurnRuleError)
    return outcome.cause


def text(outcome: Result | BaseException) -> str:
    """What the model is shown for `outcome`, through a provider's own result message."""
    return openai_chat.result_message(ToolCall(id="c", request=Request(name="send")), outcome)["content"]


def test_rules_are_off_by_default_and_every_call_runs() -> None:
    """TurnRules() is off; a tally of it grants everything, repeats included."""
    rules = TurnRules()
    assert not rules.enabled
    run = rules.tally()
    for _ in range(3):
        assert isinstance(REGISTRY.run_sync("send", '{"to": "x"}', tally=run), Result)
    assert run.calls == 3 and run.calls_of("send") == 3


def test_a_tools_budget_refuses_the_call_past_it_and_the_tool_does_not_run() -> None:
    """limits={"send": 2}: the third send is refused (2 of 2), does not run; another tool still runs."""
    run = TurnRules(limits={"send": 2}).tally()
    RAN.clear()
    outcomes = [REGISTRY.run_sync("send", json.dumps({"to": f"p{i}"}), tally=run) for i in range(3)]
    assert RAN == ["p0", "p1"]
    error = refusal(outcomes[2])
    assert (error.rule, error.tool, error.limit, error.spent) == (TurnRule.TOOL, "send", 2, 2)
    assert text(outcomes[2]) == (
        'error: tool "send" was not run: its budget in this run is spent (2 of 2 calls); '
        "do not call it again in this run: use the results you have, or another tool"
    )
    assert isinstance(REGISTRY.run_sync("look", '{"query": "q"}', tally=run), Result)
    assert run.calls == 2 + 1


def test_per_tool_applies_to_tools_limits_does_not_name() -> None:
    """per_tool=1 caps look; limits gives send its own budget of 3."""
    run = TurnRules(per_tool=1, limits={"send": 3}).tally()
    assert isinstance(REGISTRY.run_sync("look", '{"query": "a"}', tally=run), Result)
    assert refusal(REGISTRY.run_sync("look", '{"query": "b"}', tally=run)).rule is TurnRule.TOOL
    for i in range(3):
        assert isinstance(REGISTRY.run_sync("send", json.dumps({"to": str(i)}), tally=run), Result)
    assert refusal(REGISTRY.run_sync("send", '{"to": "z"}', tally=run)).limit == 3


def test_the_runs_budget_counts_every_tool_and_the_turns_budget_restarts_each_turn() -> None:
    """calls=3 over both tools; per_turn=2 refuses the third call of a turn until new_turn."""
    run = TurnRules(calls=3, per_turn=2).tally()
    assert isinstance(REGISTRY.run_sync("send", '{"to": "a"}', tally=run), Result)
    assert isinstance(REGISTRY.run_sync("look", '{"query": "a"}', tally=run), Result)
    turn = REGISTRY.run_sync("look", '{"query": "b"}', tally=run)
    assert refusal(turn).rule is TurnRule.TURN
    assert "this turn's budget of tool calls is spent (2 of 2)" in text(turn)
    run.new_turn()
    assert isinstance(REGISTRY.run_sync("look", '{"query": "b"}', tally=run), Result)
    spent = REGISTRY.run_sync("look", '{"query": "c"}', tally=run)
    assert refusal(spent).rule is TurnRule.CALLS
    assert text(spent).startswith('error: tool "look" was not run: this run\'s budget of tool calls is spent (3 of 3)')


def test_a_repeat_is_the_same_admitted_arguments_whatever_their_order_and_spacing() -> None:
    """Reordered members, other spacing and escapes are the same call; another value is not."""
    run = TurnRules(refuse_repeats=True).tally()
    first = json.dumps({"to": SECRET, "body": "zebra"})
    assert isinstance(REGISTRY.run_sync("send", first, tally=run), Result)
    for same in ('{ "body" : "zebra" ,\n "to": "hunter2-secret" }', '{"body":"zebr\\u0061","to":"hunter2-secret"}'):
        outcome = REGISTRY.run_sync("send", same, tally=run)
        assert refusal(outcome).rule is TurnRule.REPEAT
        assert SECRET not in text(outcome) and "zebra" not in text(outcome)
    assert text(outcome) == (
        'error: tool "send" was not run: the same call (the same arguments) already ran in this run; '
        "use its result, or call it with other arguments"
    )
    assert isinstance(REGISTRY.run_sync("send", json.dumps({"to": SECRET, "body": "yak"}), tally=run), Result)
    assert run.calls == 2


def test_a_rejected_call_is_not_counted_and_not_a_repeat() -> None:
    """A call the schema rejects spends nothing; its corrected form runs; a refused call is no repeat either."""
    run = TurnRules(per_tool=1, refuse_repeats=True).tally()
    rejected = REGISTRY.run_sync("send", '{"to": 5}', tally=run)
    assert not isinstance(rejected, Failure) and run.calls == 0
    assert isinstance(REGISTRY.run_sync("send", '{"to": "a"}', tally=run), Result)
    assert refusal(REGISTRY.run_sync("send", '{"to": "b"}', tally=run)).rule is TurnRule.TOOL
    assert run.calls_of("send") == 1


def test_a_safe_tool_is_exempt_from_repeats_only_when_safe_repeats_says_so() -> None:
    """safe_repeats=True lets a SAFE tool repeat; a tool with no promise is still refused."""
    exempt = TurnRules(refuse_repeats=True, safe_repeats=True).tally()
    strict = TurnRules(refuse_repeats=True).tally()
    for _ in range(2):
        assert isinstance(REGISTRY.run_sync("look", '{"query": "q"}', tally=exempt), Result)
    assert isinstance(REGISTRY.run_sync("look", '{"query": "q"}', tally=strict), Result)
    assert refusal(REGISTRY.run_sync("look", '{"query": "q"}', tally=strict)).rule is TurnRule.REPEAT
    assert isinstance(REGISTRY.run_sync("send", '{"to": "a"}', tally=exempt), Result)
    assert refusal(REGISTRY.run_sync("send", '{"to": "a"}', tally=exempt)).rule is TurnRule.REPEAT


def test_a_call_granted_under_a_key_is_granted_again_and_counted_once() -> None:
    """The same idempotency key again (a replay) is not a repeat and spends nothing more."""
    run = TurnRules(per_tool=1, refuse_repeats=True).tally()
    admission = Admission(idempotency_key=IdempotencyKey("k1"))
    for _ in range(2):
        assert isinstance(REGISTRY.run_sync("send", '{"to": "a"}', admission=admission, tally=run), Result)
    assert run.calls == 1
    other = Admission(idempotency_key=IdempotencyKey("k2"))
    assert refusal(REGISTRY.run_sync("send", '{"to": "a"}', admission=other, tally=run)).rule is TurnRule.REPEAT


def test_a_tally_made_from_kept_grants_remembers_them() -> None:
    """Tally(granted=...) counts what a store kept; take_new hands back only what was granted since."""
    rules = TurnRules(per_tool=2, refuse_repeats=True)
    first = Tally(rules, keep_new=True)
    assert isinstance(REGISTRY.run_sync("send", '{"to": "a"}', tally=first), Result)
    kept = first.take_new()
    assert [(g.tool, g.digest is not None) for g in kept] == [("send", True)] and first.take_new() == ()
    again = Tally(rules, granted=kept, keep_new=True)
    assert again.calls_of("send") == 1
    assert refusal(REGISTRY.run_sync("send", '{"to":"a"}', tally=again)).rule is TurnRule.REPEAT
    assert isinstance(REGISTRY.run_sync("send", '{"to": "b"}', tally=again), Result)
    assert refusal(REGISTRY.run_sync("send", '{"to": "c"}', tally=again)).spent == 2
    with pytest.raises(ValueError, match="keep_new=True"):
        rules.tally().take_new()


def test_the_session_scope_names_the_session() -> None:
    """A tally made for an MCP session says "session" to the model."""
    run = TurnRules(calls=0).tally(scope="session")
    assert "this session's budget of tool calls is spent (0 of 0)" in text(
        REGISTRY.run_sync("look", '{"query": "q"}', tally=run)
    )


def test_concurrent_calls_never_overspend() -> None:
    """Calls racing from threads and tasks: exactly the budget runs."""
    run = TurnRules(calls=5).tally()

    async def many() -> list[Result | BaseException]:
        return await asyncio.gather(
            *(REGISTRY.run("look", json.dumps({"query": str(i)}), tally=run) for i in range(20))
        )

    outcomes: list[Result | BaseException] = []
    threads = [threading.Thread(target=lambda: outcomes.extend(asyncio.run(many()))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sum(isinstance(o, Result) for o in outcomes) == 5 and len(outcomes) == 60


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"calls": -1}, ValueError, "TurnRules.calls must be a non-negative int"),
        ({"per_turn": True}, ValueError, "TurnRules.per_turn"),
        ({"per_tool": 1.5}, ValueError, "TurnRules.per_tool"),
        ({"limits": [("send", 1)]}, TypeError, "TurnRules.limits must map"),
        ({"limits": {1: 1}}, TypeError, "a key must be a tool name"),
        ({"limits": {"send": -2}}, ValueError, r"TurnRules.limits\['send'\]"),
        ({"refuse_repeats": 1}, TypeError, "TurnRules.refuse_repeats must be a bool"),
    ],
)
def test_bad_rules_are_refused_naming_the_field(
    arguments: dict[str, object], error: type[Exception], match: str
) -> None:
    """Each bad field is named in the error."""
    with pytest.raises(error, match=match):
        TurnRules(**arguments)  # type: ignore[arg-type]


def test_bad_tallies_are_refused() -> None:
    """A Tally needs TurnRules, a scope and Grants."""
    with pytest.raises(TypeError, match="needs TurnRules"):
        Tally(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="scope"):
        Tally(TurnRules(), scope="")
    with pytest.raises(TypeError, match="holds Grants"):
        Tally(TurnRules(), granted=[("k", "send", None)])  # type: ignore[list-item]
    assert Tally(TurnRules(), granted=[Grant(None, "send", None)]).calls == 1


def test_the_limits_given_cannot_be_changed_through_the_rules() -> None:
    """The rules copy the limits: changing the dict given changes nothing, and the view is read-only."""
    given = {"send": 1}
    rules = TurnRules(limits=given)
    given["send"] = 9
    assert rules.limits == {"send": 1}
    with pytest.raises(TypeError):
        rules.limits["send"] = 5  # type: ignore[index]
    assert hash(rules) == hash(TurnRules(limits={"send": 3}))  # limits take no part in the hash
