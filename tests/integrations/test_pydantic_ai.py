"""scopetool.integrations.pydantic_ai, run by a pydantic-ai Agent on FunctionModel and TestModel."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from integration_support import SECRET, Log
from pydantic_ai import Agent, RunContext, capture_run_messages
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved
from pydantic_ai.usage import RunUsage

from scopetool import Contract, InvalidInputRequestError, Registry
from scopetool.integrations.pydantic_ai import (
    METADATA_KEY,
    AdmittedArguments,
    ScopetoolToolset,
    answer_requests,
    input_requests,
)


class Script:
    """A FunctionModel that sends each turn's calls in order and records every tool return it is shown."""

    def __init__(self, *turns: list[ToolCallPart]) -> None:
        self.turns = list(turns)
        self.seen: list[list[tuple[str, str, str]]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if returns:
            self.seen.append([(p.tool_name, p.outcome, p.model_response_str()) for p in returns])
        if self.turns:
            return ModelResponse(parts=list(self.turns.pop(0)))
        return ModelResponse(parts=[TextPart("done")])


def agent_for(registry: Registry, script: Script, **options: Any) -> Agent[None, str | DeferredToolRequests]:
    return Agent(
        FunctionModel(script), toolsets=[ScopetoolToolset(registry, **options)], output_type=[str, DeferredToolRequests]
    )


def call(name: str, arguments: str | dict[str, Any], call_id: str = "c1") -> ToolCallPart:
    return ToolCallPart(name, arguments, tool_call_id=call_id)


async def test_a_valid_call_runs_and_the_model_sees_its_output(registry: Registry, log: Log) -> None:
    """The admitted call runs once and the next turn shows its output."""
    script = Script([call("add", '{"a": 2, "b": 3}')])
    result = await agent_for(registry, script).run("go")
    assert result.output == "done"
    assert log.runs == [("add", (2, 3))]
    assert script.seen == [[("add", "success", "5")]]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"a": 2, "b": 3, "b": 30}', "the same member name twice"),
        ('{"a": 2, "b": 3, "admin": true}', "$.admin: unknown field"),
        ('{"a": 2, "b": "5"}', "$.b: Input should be a valid integer (got a string)"),
    ],
    ids=["duplicate key", "unknown field", "coerced value"],
)
async def test_a_rejected_call_never_runs_and_the_model_retries_with_scopetools_message(
    registry: Registry, log: Log, arguments: str, problem: str
) -> None:
    """A rejection is a retry within the budget: nothing ran, the model sees scopetool's message, then fixes it."""
    script = Script([call("add", arguments)], [call("add", '{"a": 2, "b": 5}', "c2")])
    await agent_for(registry, script).run("go")
    ((name, outcome, text),) = script.seen[0]
    assert (name, outcome) == ("add", "retried")
    assert "invalid arguments for tool 'add'" in text and problem in text
    assert '"5"' not in text and "30" not in text  # no rejected value echoed
    assert log.runs == [("add", (2, 5))]  # only the corrected call ran
    assert script.seen[1] == [("add", "success", "7")]


async def test_rejections_beyond_the_retry_budget_end_the_run(registry: Registry, log: Log) -> None:
    """Two rejected calls with max_retries=1 exceed pydantic-ai's budget: the run fails and nothing ran."""
    bad = '{"a": "2"}'
    script = Script([call("add", bad)], [call("add", bad, "c2")])
    with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries"):
        await agent_for(registry, script, max_retries=1).run("go")
    assert log.runs == []


async def test_a_secret_in_a_tool_error_never_reaches_the_model(registry: Registry, log: Log) -> None:
    """An ordinary error is a failed answer with scopetool's generic text; the run goes on."""
    script = Script([call("connect", "")])
    with capture_run_messages() as messages:
        await agent_for(registry, script).run("go")
    assert log.runs == [("connect", None)]
    assert script.seen == [
        [("connect", "failed", json.dumps({"error": 'error: tool "connect" failed'}, separators=(",", ":")))]
    ]
    assert SECRET not in repr(messages)


async def test_a_failure_is_the_tools_answer_and_its_cause_stays_private(registry: Registry, log: Log) -> None:
    """A Failure's public output is what the model sees, as a failed (not retried) tool return."""
    script = Script([call("refund", '{"order": "SO-1"}')])
    with capture_run_messages() as messages:
        await agent_for(registry, script).run("go")
    ((name, outcome, text),) = script.seen[0]
    assert (name, outcome) == ("refund", "failed") and "already refunded" in text
    assert SECRET not in repr(messages)


async def test_a_refused_guard_runs_nothing(registry: Registry, log: Log) -> None:
    """The Guard refuses before the tool runs; the model sees the generic refusal."""
    script = Script([call("wipe", '{"user": "u-1"}')])
    await agent_for(registry, script).run("go")
    assert log.runs == []
    ((_, outcome, text),) = script.seen[0]
    assert outcome == "failed" and 'error: tool \\"wipe\\" is not authorized' in text


async def test_an_input_request_defers_and_the_answer_resumes_the_same_call(registry: Registry, log: Log) -> None:
    """The request becomes a deferred approval; answering it resumes the same call, under the same key."""
    script = Script([call("transfer", '{"to": "ACME", "cents": 1250}', "call-9")])
    agent = agent_for(registry, script, key_secret=b"k")
    first = await agent.run("go")
    requests = first.output
    assert isinstance(requests, DeferredToolRequests)
    assert script.seen == []  # the model has been shown nothing yet
    pending = input_requests(requests)
    assert list(pending) == ["call-9"] and pending["call-9"].prompt == "send 1250?"
    with pytest.raises(InvalidInputRequestError):
        answer_requests(requests, {"call-9": "yes"})  # not a boolean
    with pytest.raises(KeyError):
        answer_requests(requests, {"other": True})
    second = await agent.run(
        message_history=first.all_messages(), deferred_tool_results=answer_requests(requests, {"call-9": True})
    )
    assert second.output == "done"
    (_, asked_key), (name, (cents, answer, key)) = log.runs
    assert (name, cents, answer) == ("transfer", 1250, True)
    assert key == asked_key and key
    assert script.seen == [[("transfer", "success", "sent 1250")]]


async def test_an_approval_without_an_answer_asks_again(registry: Registry, log: Log) -> None:
    """Approving the deferred call without scopetool's answer re-runs the first attempt, which asks again."""
    script = Script([call("transfer", '{"to": "ACME", "cents": 5}')])
    agent = agent_for(registry, script)
    first = await agent.run("go")
    again = await agent.run(
        message_history=first.all_messages(), deferred_tool_results=DeferredToolResults(approvals={"c1": True})
    )
    assert isinstance(again.output, DeferredToolRequests)
    assert [entry[0] for entry in log.runs] == ["asked", "asked"]


async def test_unsafe_tools_run_alone_in_the_models_order(log: Log) -> None:
    """Tools that are not SAFE are pydantic-ai barriers (sequential); SAFE ones are not."""
    from scopetool import Effect, tool

    order: list[str] = []

    @tool
    async def slow(n: int) -> int:
        """Write slowly."""
        order.append(f"start {n}")
        await asyncio.sleep(0.01 * (3 - n))
        order.append(f"end {n}")
        return n

    @tool(effect=Effect.SAFE)
    def look() -> str:
        """Read."""
        return "ok"

    toolset = ScopetoolToolset(Registry(slow, look))
    tools = await toolset.get_tools(None)  # type: ignore[arg-type]  # get_tools reads nothing of the context
    assert tools["slow"].tool_def.sequential and not tools["look"].tool_def.sequential
    script = Script([call("slow", '{"n": 1}', "c1"), call("slow", '{"n": 2}', "c2")])
    await agent_for(Registry(slow, look), script).run("go")
    assert order == ["start 1", "end 1", "start 2", "end 2"]


async def test_arguments_the_provider_already_parsed_are_admitted_as_their_json(registry: Registry, log: Log) -> None:
    """A dict of arguments is admitted as its canonical JSON: a coerced value is still rejected."""
    script = Script([call("add", {"a": 2, "b": "5"})], [call("add", {"a": 2}, "c2")])
    await agent_for(registry, script).run("go")
    assert "$.b: Input should be a valid integer" in script.seen[0][0][2]
    assert log.runs == [("add", (2, 1))]


async def test_parsed_arguments_that_are_not_an_object_are_a_retry(registry: Registry, log: Log) -> None:
    """Parsed arguments that are not a JSON object make the model retry, naming only their type."""
    toolset = ScopetoolToolset(registry)
    tools = await toolset.get_tools(None)  # type: ignore[arg-type]
    from pydantic_ai.exceptions import ModelRetry

    with pytest.raises(ModelRetry, match="must be a JSON object, not list"):
        tools["add"].args_validator.validate_python([1, 2])
    assert log.runs == []


async def test_a_hook_that_replaces_the_arguments_is_admitted_again(registry: Registry, log: Log) -> None:
    """The admitted arguments are read-only; a new dict from a hook goes through prepare before the tool runs."""
    admitted = AdmittedArguments(b'{"a": 1}')
    assert admitted == {} and admitted.arguments == b'{"a": 1}' and admitted.invocation is None
    with pytest.raises(TypeError, match="read-only"):
        admitted["a"] = 2
    with pytest.raises(TypeError, match="read-only"):
        admitted.update(a=2)
    assert admitted == {}
    toolset = ScopetoolToolset(registry)
    tools = await toolset.get_tools(None)  # type: ignore[arg-type]
    agent = Agent(TestModel(), toolsets=[toolset])
    async with agent.iter("go") as run:
        ctx = run.ctx
        from pydantic_ai._run_context import RunContext

        context = RunContext(deps=None, model=TestModel(), usage=ctx.state.usage, tool_call_id="c1")
        assert await toolset.call_tool("add", {"a": 4, "b": 4}, context, tools["add"]) == "8"
        from pydantic_ai.exceptions import ModelRetry, ToolFailed

        with pytest.raises(ModelRetry, match="unknown field"):
            await toolset.call_tool("add", {"a": 4, "c": 4}, context, tools["add"])
        with pytest.raises(ToolFailed, match="is not available"):
            await toolset.call_tool("gone", {}, context, tools["add"])


async def test_test_model_calls_every_tool_through_the_toolset(log: Log) -> None:
    """pydantic-ai's TestModel, which calls each tool with arguments made from its schema, runs through prepare."""
    from scopetool import Effect, tool

    @tool(effect=Effect.SAFE)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        log.runs.append(("add", (a, b)))
        return a + b

    result = await Agent(TestModel(), toolsets=[ScopetoolToolset([add], id="math")]).run("go")
    assert log.runs == [("add", (0, 0))]
    assert json.loads(result.output) == {"add": "0"}


def test_a_toolset_takes_a_registry_tools_or_one_tool() -> None:
    """The toolset serves a registry as it is, or registers the tools it is given; its id is as given."""
    from scopetool import tool

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    assert ScopetoolToolset(ping, id="one").id == "one"
    assert ScopetoolToolset([ping]).id is None
    with pytest.raises(TypeError, match="expected a Registry"):
        ScopetoolToolset("ping")  # type: ignore[arg-type]


def test_the_metadata_entry_is_namespaced() -> None:
    """A deferred call's metadata keeps scopetool's entry under its own key, beside others'."""
    results = DeferredToolResults(approvals={"x": ToolApproved()})
    assert METADATA_KEY == "scopetool" and results.metadata == {}
    others = DeferredToolRequests(approvals=[call("native", "{}", "x")], metadata={"x": {"reason": "policy"}})
    assert input_requests(others) == {}  # another toolset's approval is left to the application


class Watch(AbstractCapability[None]):
    """Records what pydantic-ai's validation hooks are shown of each call."""

    def __init__(self) -> None:
        self.validated: list[tuple[str, dict[str, Any]]] = []
        self.rejected: list[tuple[str, str]] = []

    async def after_tool_validate(self, ctx: RunContext[None], *, call: Any, tool_def: Any, args: Any) -> Any:
        self.validated.append((ctx.tool_call_id or "", args))
        return args

    async def on_tool_validate_error(
        self, ctx: RunContext[None], *, call: Any, tool_def: Any, args: Any, error: Exception
    ) -> Any:
        self.rejected.append((ctx.tool_call_id or "", str(error)))
        raise error


async def test_each_call_is_prepared_once_and_hooks_see_it_admitted(
    registry: Registry, log: Log, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One prepare per model call, at validation: a rejection is a validation error, hooks see the admitted call."""
    prepared: list[bytes | str] = []
    original = Contract.prepare

    def counting(self: Contract, request: Any, *rest: Any) -> Any:
        prepared.append(request.arguments)
        return original(self, request, *rest)

    monkeypatch.setattr(Contract, "prepare", counting)
    watch = Watch()
    script = Script([call("add", '{"a": 2, "b": "5"}')], [call("add", '{"a": 2, "b": 5}', "c2")])
    agent = Agent(FunctionModel(script), toolsets=[ScopetoolToolset(registry)], capabilities=[watch])
    await agent.run("go")
    assert prepared == ['{"a": 2, "b": "5"}', '{"a": 2, "b": 5}']
    assert [call_id for call_id, _ in watch.rejected] == ["c1"] and "$.b" in watch.rejected[0][1]
    ((call_id, args),) = watch.validated
    assert call_id == "c2" and isinstance(args, AdmittedArguments) and args == {"a": 2, "b": 5}
    assert args.invocation is not None and args.invocation.idempotency_key is not None
    assert log.runs == [("add", (2, 5))]


async def test_the_admitting_function_admits_values_it_did_not_wrap(registry: Registry, log: Log) -> None:
    """Called with values rather than after the validator's wrapping, the admitting function admits their JSON."""
    tools = await ScopetoolToolset(registry).get_tools(None)  # type: ignore[arg-type]
    admit = tools["add"].args_validator_func
    assert admit is not None
    context = RunContext(deps=None, model=TestModel(), usage=RunUsage(), tool_call_id="c1")
    assert admit(context, a=1, b=2) is None
    from pydantic_ai.exceptions import ModelRetry

    with pytest.raises(ModelRetry, match="unknown field"):
        admit(context, a=1, c=2)
