"""scopetool.integrations.openai_agents, run by the Agents SDK's Runner.run on its own ScriptedModel."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from integration_support import SECRET, Log

from scopetool import InputRequest, Registry, tool
from scopetool.integrations.openai_agents import MAX_INPUT_ROUNDS, function_tools
from scopetool.providers import openai_responses

NO_TRACING = RunConfig(tracing_disabled=True)


async def run(registry: Registry, *calls: tuple[str, str], **options: Any) -> list[str]:
    """One turn with the given calls, then a final message; what the second model call was shown, per call."""
    model = ScriptedModel(
        [
            [function_call(name, arguments, call_id=f"c{index}") for index, (name, arguments) in enumerate(calls)],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="t", model=model, tools=list(function_tools(registry, **options)))
    result = await Runner.run(agent, "go", run_config=NO_TRACING)
    assert result.final_output == "done"
    seen = [item["output"] for item in model.calls[1].input if item.get("type") == "function_call_output"]
    assert SECRET not in repr(model.calls[1].input)
    return seen


async def test_a_valid_call_runs_and_the_model_sees_its_output(registry: Registry, log: Log) -> None:
    """The admitted call runs once; its output is the function_call_output."""
    assert await run(registry, ("add", '{"a": 2, "b": 3}')) == ["5"]
    assert log.runs == [("add", (2, 3))]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"a": 2, "b": 3, "b": 30}', "the same member name twice"),
        ('{"a": 2, "b": 3, "admin": true}', "$.admin: unknown field"),
        ('{"a": 2, "b": "5"}', "$.b: Input should be a valid integer (got a string)"),
    ],
    ids=["duplicate key", "unknown field", "coerced value"],
)
async def test_a_rejected_call_never_runs_and_the_model_sees_scopetools_message(
    registry: Registry, log: Log, arguments: str, problem: str
) -> None:
    """The raw argument string reaches prepare: nothing runs and the model is told what was wrong."""
    (seen,) = await run(registry, ("add", arguments))
    assert seen.startswith("invalid arguments for tool 'add'") and problem in seen
    assert '"5"' not in seen and "30" not in seen
    assert log.runs == []


async def test_null_for_an_optional_field_means_omitted(registry: Registry, log: Log) -> None:
    """The strict export makes b required and nullable; the model's null is read as "omitted"."""
    (add_tool,) = [t for t in function_tools(registry) if t.name == "add"]
    assert add_tool.strict_json_schema and add_tool.params_json_schema["required"] == ["a", "b"]
    assert await run(registry, ("add", '{"a": 2, "b": null}')) == ["3"]
    assert log.runs == [("add", (2, 1))]


async def test_errors_failures_and_guards(registry: Registry, log: Log) -> None:
    """A secret in an error is redacted, a Failure shows its output, a refused Guard runs nothing."""
    seen = await run(registry, ("connect", ""), ("refund", '{"order": "SO-1"}'), ("wipe", '{"user": "u"}'))
    assert seen == ['error: tool "connect" failed', "already refunded", 'error: tool "wipe" is not authorized']
    assert [name for name, _ in log.runs] == ["connect", "refund"]


async def test_an_input_request_answered_later_resumes_the_same_call(registry: Registry, log: Log) -> None:
    """The answer function is awaited (here another task answers); the same call resumes under the same key."""
    pending: asyncio.Queue[tuple[InputRequest, asyncio.Future[Any]]] = asyncio.Queue()

    async def answer(request: InputRequest, context: ToolContext[Any]) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await pending.put((request, future))
        return await future

    async def person() -> None:
        request, future = await pending.get()
        assert request.prompt == "send 1250?"
        future.set_result(True)

    helper = asyncio.create_task(person())
    seen = await run(registry, ("transfer", '{"to": "ACME", "cents": 1250}'), answer=answer)
    await helper
    assert seen == ["sent 1250"]
    (_, asked_key), (_, (cents, answer_given, key)) = log.runs
    assert (cents, answer_given) == (1250, True) and key == asked_key and key


async def test_an_input_request_without_an_answer_function_tells_the_model(registry: Registry, log: Log) -> None:
    """Without an answer function the call does not run past its request."""
    seen = await run(registry, ("transfer", '{"to": "ACME", "cents": 5}'))
    assert seen == ['error: tool "transfer" needs input that this run cannot ask for']
    assert [name for name, _ in log.runs] == ["asked"]


async def test_an_answer_the_schema_refuses_is_a_generic_error(registry: Registry, log: Log) -> None:
    """An answer that breaks the response schema never resumes the call."""

    async def answer(request: InputRequest, context: ToolContext[Any]) -> Any:
        return "yes"

    assert await run(registry, ("transfer", '{"to": "A", "cents": 5}'), answer=answer) == [
        'error: tool "transfer" failed'
    ]


async def test_a_tool_that_never_stops_asking_is_refused(log: Log) -> None:
    """After MAX_INPUT_ROUNDS answers the call is refused."""
    from scopetool import Definition, Invocation, Result

    class Nag:
        def definition(self) -> Definition:
            return Definition(name="nag", description="Asks forever.", input_schema={"type": "object"})

        async def call(self, invocation: Invocation) -> Result:
            return Result(input_request=InputRequest(prompt="again?", response_schema={"type": "boolean"}))

    answers = 0

    async def answer(request: InputRequest, context: ToolContext[Any]) -> bool:
        nonlocal answers
        answers += 1
        return True

    assert await run(Registry(Nag()), ("nag", "{}"), answer=answer) == [
        'error: tool "nag" asked for input too many times'
    ]
    assert answers == MAX_INPUT_ROUNDS


async def test_needs_approval_interrupts_the_run_before_the_call(registry: Registry, log: Log) -> None:
    """The SDK's approval gates a tool: the run stops, and the approved call then runs through prepare."""
    model = ScriptedModel([[function_call("add", '{"a": 1, "b": 1}', call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="t", model=model, tools=list(function_tools(registry, needs_approval={"add": True})))
    result = await Runner.run(agent, "go", run_config=NO_TRACING)
    assert len(result.interruptions) == 1 and log.runs == []
    state = result.to_state()
    state.approve(result.interruptions[0])
    await Runner.run(agent, state, run_config=NO_TRACING)
    assert log.runs == [("add", (1, 1))]
    with pytest.raises(KeyError, match="not registered"):
        function_tools(registry, needs_approval={"nope": True})


def test_schemas_are_scopetools_openai_export() -> None:
    """Each FunctionTool carries the Responses export's schema and strictness, and its description."""

    @tool
    def free(data: dict[str, int]) -> int:
        """Count keys."""
        return len(data)

    (made,) = function_tools(free)
    assert made.name == "free" and made.description == "Count keys."
    assert made.strict_json_schema is False  # an open object cannot be strict: the export falls back

    @tool
    def plus(a: int, b: int = 1) -> int:
        """Add."""
        return a + b

    registry = Registry(free, plus)
    export = openai_responses.export_tools(registry, strict=True, output_schema=False)
    made_tools = function_tools(registry)
    assert [t.params_json_schema for t in made_tools] == [entry["parameters"] for entry in export.tools]
    assert [t.strict_json_schema for t in made_tools] == [False, True]


async def test_unsafe_calls_never_overlap_and_safe_ones_do(log: Log) -> None:
    """Calls of tools that are not SAFE run one at a time, in the model's order; SAFE calls overlap."""
    from scopetool import Effect

    order: list[str] = []

    @tool
    async def write(n: int) -> int:
        """Write slowly."""
        order.append(f"start write {n}")
        await asyncio.sleep(0.01 * (3 - n))
        order.append(f"end write {n}")
        return n

    @tool(effect=Effect.SAFE)
    async def read(n: int) -> int:
        """Read slowly."""
        order.append(f"start read {n}")
        await asyncio.sleep(0.01 * (3 - n))
        order.append(f"end read {n}")
        return n

    registry = Registry(write, read)
    assert await run(registry, ("write", '{"n": 1}'), ("write", '{"n": 2}')) == ["1", "2"]
    assert order == ["start write 1", "end write 1", "start write 2", "end write 2"]
    order.clear()
    assert await run(registry, ("read", '{"n": 1}'), ("read", '{"n": 2}')) == ["1", "2"]
    assert order == ["start read 1", "start read 2", "end read 2", "end read 1"]
