"""Tests for `CallContext`, application deps and ``@tool(approval=...)``, called through `Binding.call`."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from typing import Any, Protocol

import pytest
from pydantic import BaseModel

from scopetool import (
    Admission,
    Binding,
    CallContext,
    Effect,
    Failure,
    FailureKind,
    IdempotencyKey,
    InputRequest,
    InvalidInputRequestError,
    InvalidOutputError,
    InvalidToolError,
    Progress,
    Registry,
    Request,
    Result,
    ScopetoolError,
    bind,
    progress_reporter,
    tool,
)
from scopetool._context import APPROVAL_DECLINED
from scopetool.providers import anthropic, bedrock, gemini, mcp, mistral, ollama, openai_chat, openai_responses


@dataclass
class Database:
    """An application dependency: a stand-in for a database handle."""

    rows: dict[str, str]
    user: str = "ada"


async def call(binding: Binding, arguments: str = "{}", **admission: Any) -> Result:
    """Admit `arguments` for `binding` (with the given admission) and call it."""
    request = Request(name=binding.name, arguments=arguments)
    return await binding.call(binding.contract.prepare(request, Admission(**admission)))


async def answered(binding: Binding, arguments: str, *answers: Any, key: str = "k-1") -> Result:
    """Run one call to its end, answering each input request it makes with the next of `answers`."""
    result = await call(binding, arguments, idempotency_key=IdempotencyKey(key))
    for answer in answers:
        assert result.input_request is not None
        continuation = result.input_request.continuation(answer)
        result = await call(binding, arguments, idempotency_key=IdempotencyKey(key), continuation=continuation)
    return result


@tool
def lookup(ctx: CallContext[Database], name: str) -> str:
    """Read one row."""
    return f"{ctx.deps.user}: {ctx.deps.rows.get(name, 'missing')} ({ctx.tool_name}, {ctx.idempotency_key})"


@tool
async def lookup_async(ctx: CallContext[Database], name: str) -> str:
    """Read one row, from an async function."""
    await asyncio.sleep(0)
    return f"{ctx.deps.user}: {ctx.deps.rows.get(name, 'missing')}"


# -- the context parameter is no input -----------------------------------------------------------


def test_the_context_parameter_is_left_out_of_the_schema_and_of_every_export() -> None:
    """The schema (and every provider's export of it) names only `name`, never the context parameter."""
    schema = lookup.definition().input_schema
    assert schema["properties"] == {"name": {"type": "string"}}
    assert schema["required"] == ["name"]
    for provider in (anthropic, bedrock, gemini, mcp, mistral, ollama, openai_chat, openai_responses):
        exported = json.dumps(provider.export_tools([lookup]).tools)
        assert '"name"' in exported
        assert "ctx" not in exported, provider.__name__


async def test_a_request_cannot_fill_the_context_parameter() -> None:
    """A model that sends the context parameter's name is rejected: it is not an input."""
    binding = bind(lookup, deps=Database({}))
    with pytest.raises(ScopetoolError, match="ctx"):
        binding.contract.prepare(Request(name="lookup", arguments='{"name": "a", "ctx": {}}'))


def test_two_context_parameters_are_refused() -> None:
    """A function can take the context once."""

    def twice(a: CallContext, b: CallContext, x: int) -> int:
        return x

    with pytest.raises(InvalidToolError, match="only one parameter can take the CallContext"):
        tool(twice)


# -- identity, deps and progress -----------------------------------------------------------------


@pytest.mark.parametrize("func", [lookup, lookup_async])
async def test_deps_given_to_bind_reach_sync_and_async_functions(func: Any) -> None:
    """A sync and an async function both get the binding's deps and the admitted key."""
    binding = bind(func, deps=Database({"a": "alpha"}))
    result = await call(binding, '{"name": "a"}', idempotency_key=IdempotencyKey("call-9"))
    assert result.output.text().startswith("ada: alpha")
    if func is lookup:
        assert result.output.text() == "ada: alpha (lookup, call-9)"


async def test_registry_deps_and_per_run_deps() -> None:
    """A registry binds its tools with its deps; `with_deps` gives a run its own, on the same contracts."""
    registry = Registry(lookup, deps=Database({"a": "alpha"}))
    base = registry.resolve("lookup")
    assert base is not None
    run = registry.with_deps(Database({"a": "beta"}, user="grace"))
    per_run = run.resolve("lookup")
    assert per_run is not None and per_run.contract is base.contract
    invocation = base.contract.prepare(Request(name="lookup", arguments='{"name": "a"}'))
    assert (await per_run.call(invocation)).output.text() == "grace: beta (lookup, None)"
    assert (await call(base, '{"name": "a"}')).output.text() == "ada: alpha (lookup, None)"
    single = base.with_deps(Database({}, user="linus"))
    assert (await call(single, '{"name": "a"}')).output.text() == "linus: missing (lookup, None)"


async def test_registry_deps_reach_tools_registered_later_and_leave_bindings_alone() -> None:
    """`register` binds with the registry's deps; a binding given as it is keeps its own."""
    registry = Registry(deps=Database({"a": "later"}))
    registry.register(lookup, bind(lookup_async, deps=Database({"a": "own"})))
    later, own = registry.resolve("lookup"), registry.resolve("lookup_async")
    assert later is not None and own is not None
    assert (await call(later, '{"name": "a"}')).output.text().startswith("ada: later")
    assert (await call(own, '{"name": "a"}')).output.text() == "ada: own"


def test_deps_of_the_wrong_class_are_refused_when_bound() -> None:
    """Deps that are not an instance of the class `CallContext[Deps]` names are refused by bind and with_deps."""
    with pytest.raises(InvalidToolError, match=r"takes CallContext\[Database\], but the deps given are str"):
        bind(lookup, deps="not a database")
    with pytest.raises(InvalidToolError, match="deps given are int"):
        Registry(lookup).with_deps(3)


async def test_a_tool_that_needs_deps_fails_clearly_without_them() -> None:
    """Bound without deps, a tool that declares a deps class raises a clear error instead of running."""
    with pytest.raises(InvalidToolError, match="bound without deps: give deps= to bind, Registry or with_deps"):
        await call(bind(lookup), '{"name": "a"}')


async def test_unchecked_deps_types_are_passed_as_they_are() -> None:
    """Deps typed by a protocol, a union, None or a parametrised generic are handed over unchecked."""

    class Named(Protocol):
        name: str

    @tool
    def by_protocol(ctx: CallContext[Named]) -> str:
        """Say the name."""
        return ctx.deps.name

    @tool
    def by_union(ctx: CallContext[int | str]) -> str:
        """Say the deps."""
        return repr(ctx.deps)

    @tool
    def by_generic(ctx: CallContext[dict[str, int]]) -> int:
        """Count the deps."""
        return len(ctx.deps)

    @tool
    def bare(ctx: CallContext) -> str:
        """Say the deps."""
        return repr(ctx.deps)

    @dataclass
    class Person:
        name: str

    assert (await call(bind(by_protocol, deps=Person("x")))).output.text() == "x"
    assert (await call(bind(by_union, deps="u"))).output.text() == "'u'"
    assert (await call(bind(by_generic, deps={"a": 1}))).output.text() == "1"
    with pytest.raises(InvalidToolError, match="deps given are list"):
        bind(by_generic, deps=[1])
    assert (await call(bind(bare))).output.text() == "None"
    assert (await call(bind(bare, deps=5))).output.text() == "5"


async def test_progress_reaches_the_runners_reporter_from_a_worker_thread() -> None:
    """`report_progress` from a sync function (in a worker thread) reaches the reporter the runner installed."""
    seen: list[tuple[Progress, str]] = []

    @tool
    def count(ctx: CallContext, n: int) -> int:
        """Count to n."""
        for done in range(1, n + 1):
            ctx.report_progress(done, n, f"step {done}")
        return n

    with progress_reporter(lambda progress: seen.append((progress, threading.current_thread().name))):
        assert (await call(bind(count), '{"n": 2}')).output.text() == "2"
    assert [p for p, _ in seen] == [Progress(1, 2, "step 1"), Progress(2, 2, "step 2")]
    assert all(thread != threading.main_thread().name for _, thread in seen)


# -- questions ---------------------------------------------------------------------------------


class Choice(BaseModel):
    """What a person picks."""

    size: int
    note: str = ""


@tool
def order(ctx: CallContext, item: str) -> str:
    """Order an item after two questions."""
    go = ctx.ask(f"Order {item}?", bool)
    if not go:
        return "not ordered"
    choice = ctx.ask("Which size?", Choice)
    return f"ordered {item} size {choice.size} {choice.note!r} ({type(choice).__name__})"


@tool
async def order_async(ctx: CallContext, item: str) -> str:
    """Order an item after one question."""
    size = ctx.ask(f"Size of {item}?", int)
    return f"ordered {item} size {size}"


async def test_ask_ends_the_call_with_an_input_request_and_the_next_run_gets_the_answer() -> None:
    """Each unanswered question ends the call; resumed, earlier answers replay and the last is typed."""
    binding = bind(order)
    first = await call(binding, '{"item": "tea"}')
    assert first.input_request is not None and first.output.text() == ""
    assert first.input_request.prompt == "Order tea?"
    assert first.input_request.response_schema == {"type": "boolean"}
    second = await call(binding, '{"item": "tea"}', continuation=first.input_request.continuation(True))
    assert second.input_request is not None and second.input_request.prompt == "Which size?"
    assert second.input_request.response_schema["properties"]["size"] == {"title": "Size", "type": "integer"}
    done = await answered(binding, '{"item": "tea"}', True, {"size": 3, "note": "hot"})
    assert done.input_request is None
    assert done.output.text() == "ordered tea size 3 'hot' (Choice)"
    assert (await answered(binding, '{"item": "tea"}', False)).output.text() == "not ordered"


async def test_ask_works_from_an_async_function() -> None:
    """An async function's question ends its call the same way."""
    assert (await answered(bind(order_async), '{"item": "tea"}', 2)).output.text() == "ordered tea size 2"


async def test_a_persisted_request_resumes_the_call() -> None:
    """The request survives `to_json`/`from_json` (a driver persists it) and still resumes the call."""
    binding = bind(order)
    first = await call(binding, '{"item": "tea"}')
    assert first.input_request is not None
    stored = InputRequest.from_json(first.input_request.to_json())
    resumed = await call(binding, '{"item": "tea"}', continuation=stored.continuation(False))
    assert resumed.output.text() == "not ordered"


async def test_an_answer_that_breaks_the_type_is_refused() -> None:
    """An answer outside the schema is refused when the continuation is made, before the call runs again."""
    first = await call(bind(order_async), '{"item": "tea"}')
    assert first.input_request is not None
    with pytest.raises(InvalidInputRequestError, match="does not satisfy the response schema"):
        first.input_request.continuation("big")


async def test_except_exception_does_not_catch_the_question() -> None:
    """A tool's ``except Exception`` leaves the question alone: the call still ends with its request."""

    @tool
    def careful(ctx: CallContext) -> str:
        """Ask inside a try."""
        try:
            return str(ctx.ask("Sure?", bool))
        except Exception:  # what the test checks: this does not catch the question
            return "caught"

    result = await call(bind(careful))
    assert result.input_request is not None and result.input_request.prompt == "Sure?"


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_function_that_swallows_the_question_fails_the_call(is_async: bool) -> None:
    """A function that catches the question (``except BaseException``) and returns makes the call fail."""

    def swallow(ctx: CallContext) -> str:
        try:
            ctx.ask("Sure?", bool)
        except BaseException:  # the mistake the test makes on purpose
            return "swallowed"
        return "answered"

    async def swallow_async(ctx: CallContext) -> str:
        return swallow(ctx)

    func = tool(swallow_async if is_async else swallow, name="swallow")
    with pytest.raises(InvalidOutputError, match=r"caught the signal CallContext\.ask raises"):
        await call(bind(func))


async def test_a_context_kept_past_its_call_cannot_ask() -> None:
    """A context used after its call returned refuses to ask, and a second ask in one run asks nothing new."""
    kept: list[CallContext] = []

    @tool
    def keep(ctx: CallContext) -> str:
        """Keep the context."""
        kept.append(ctx)
        return "kept"

    @tool
    def twice(ctx: CallContext) -> str:
        """Ask again after catching the first question."""
        try:
            ctx.ask("First?", bool)
        except BaseException:  # the test asks twice on purpose
            ctx.ask("Second?", bool)
        return "unreachable"

    await call(bind(keep))
    with pytest.raises(ScopetoolError, match="this call has ended"):
        kept[0].ask("Late?", bool)
    assert repr(kept[0]) == "CallContext(tool_name='keep')"
    result = await call(bind(twice))
    assert result.input_request is not None and result.input_request.prompt == "First?"


async def test_a_bad_question_is_a_clear_error() -> None:
    """A prompt that is not text, or an answer type without a JSON Schema, is refused by name."""

    @tool
    def numeric(ctx: CallContext) -> str:
        """Ask with a number as the prompt."""
        return str(ctx.ask(5, bool))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]

    @tool
    def untyped(ctx: CallContext) -> str:
        """Ask for an answer type pydantic cannot describe."""
        return str(ctx.ask("Which?", threading.Lock))

    with pytest.raises(InvalidInputRequestError, match="the prompt must be a str, not int"):
        await call(bind(numeric))
    with pytest.raises(InvalidInputRequestError, match="cannot be an answer: Unable to generate"):
        await call(bind(untyped))


async def test_the_context_reads_the_admitted_continuation() -> None:
    """`continuation` is the admission's; a continuation from another tool's state still reads its answer."""

    @tool
    def peek(ctx: CallContext) -> str:
        """Show the continuation and ask."""
        raw = ctx.continuation
        answer = ctx.ask("Number?", int)
        return f"{raw is not None} {answer}"

    foreign = InputRequest(prompt="x", response_schema={"type": "integer"}, continuation_state=["not", "ours"])
    result = await call(bind(peek), continuation=foreign.continuation(4))
    assert result.output.text() == "True 4"


async def test_a_question_asked_through_another_calls_context_is_not_this_calls() -> None:
    """A function that asks through another open call's context does not end its own call with that request."""
    contexts: list[CallContext] = []
    opened, release = asyncio.Event(), asyncio.Event()

    @tool
    async def holder(ctx: CallContext) -> str:
        """Hold the call open."""
        contexts.append(ctx)
        opened.set()
        await release.wait()
        return "held"

    @tool
    async def borrower(ctx: CallContext) -> str:
        """Ask through the other call's context."""
        await opened.wait()
        return str(contexts[0].ask("Borrowed?", bool))

    held = asyncio.ensure_future(call(bind(holder)))
    with pytest.raises(BaseException, match="asks for input") as raised:
        await call(bind(borrower))
    assert not isinstance(raised.value, Exception)
    release.set()
    with pytest.raises(InvalidOutputError, match="holder"):  # its context asked, yet it returned: not lost silently
        await held


async def test_an_invocation_called_twice_decodes_its_arguments_again() -> None:
    """The admitted value is handed out once; a second call of the same invocation decodes afresh."""
    binding = bind(lookup, deps=Database({"a": "alpha"}))
    invocation = binding.contract.prepare(Request(name="lookup", arguments='{"name": "a"}'))
    assert (await binding.call(invocation)).output.text() == (await binding.call(invocation)).output.text()


def test_a_context_is_made_only_by_scopetool() -> None:
    """User code cannot build a CallContext."""
    with pytest.raises(TypeError, match="made by scopetool"):
        CallContext(None, None)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


# -- approval ------------------------------------------------------------------------------------

DELETED: list[str] = []


@tool(approval=lambda path, recursive=False: f"Delete {path}{' and all below it' if recursive else ''}?")
def delete(path: str, recursive: bool = False) -> str:
    """Delete a file."""
    DELETED.append(path)
    return f"deleted {path}"


@tool(approval=True, effect=Effect.SAFE)
async def peek_file(ctx: CallContext[Database], path: str) -> str:
    """Read a file, once a person allows it."""
    return ctx.deps.rows[path]


async def test_approval_asks_before_the_function_runs_then_runs_once_with_yes() -> None:
    """The first run asks (the function does not run); answered True, it runs once."""
    DELETED.clear()
    binding = bind(delete)
    first = await call(binding, '{"path": "/tmp/a", "recursive": true}')
    assert first.input_request is not None and DELETED == []
    assert first.input_request.prompt == "Delete /tmp/a and all below it?"
    assert first.input_request.response_schema == {"type": "boolean"}
    done = await answered(binding, '{"path": "/tmp/a", "recursive": true}', True)
    assert done.output.text() == "deleted /tmp/a" and DELETED == ["/tmp/a"]


async def test_a_refused_approval_is_a_rejected_failure_with_a_fixed_text() -> None:
    """Answered False, the call is a REJECTED Failure the model sees as a fixed text; nothing ran."""
    DELETED.clear()
    with pytest.raises(Failure) as refused:
        await answered(bind(delete), '{"path": "/tmp/b"}', False)
    assert refused.value.kind is FailureKind.REJECTED
    assert refused.value.output.text() == APPROVAL_DECLINED.format(name="delete")
    assert "/tmp/b" not in refused.value.output.text()
    assert DELETED == []


async def test_the_default_prompt_names_the_tool_and_its_arguments_and_is_never_advertised() -> None:
    """approval=True builds the prompt from the admitted arguments; the definition says nothing of it."""
    binding = bind(peek_file, deps=Database({"a.txt": "secret"}))
    first = await call(binding, '{ "path" : "a.txt" }')
    assert first.input_request is not None
    assert first.input_request.prompt == 'Allow the tool "peek_file" to run with the arguments {"path":"a.txt"}?'
    assert "Allow" not in json.dumps(openai_chat.export_tools([binding]).tools)
    assert (await answered(binding, '{"path": "a.txt"}', True)).output.text() == "secret"
    with pytest.raises(Failure) as refused:  # a SAFE tool's refusal stays REJECTED, not FAILED
        await answered(binding, '{"path": "a.txt"}', False)
    assert refused.value.kind is FailureKind.REJECTED


async def test_approval_comes_before_the_functions_own_questions() -> None:
    """A tool with approval and its own question asks for approval first, then its question."""

    @tool(approval=True)
    def pick(ctx: CallContext, item: str) -> str:
        """Pick a size."""
        return f"{item} {ctx.ask('Size?', int)}"

    binding = bind(pick)
    second = await answered(binding, '{"item": "tea"}', True)
    assert second.input_request is not None and second.input_request.prompt == "Size?"
    assert (await answered(binding, '{"item": "tea"}', True, 4)).output.text() == "tea 4"


async def test_approval_runs_inside_the_middlewares() -> None:
    """Middlewares see the approval's input request as the call's result."""
    seen: list[bool] = []

    async def watch(invocation: Any, call_next: Any) -> Result:
        result: Result = await call_next(invocation)
        seen.append(result.input_request is not None)
        return result

    binding = bind(delete, watch)
    await call(binding, '{"path": "/tmp/c"}')
    assert seen == [True]


def test_approval_must_be_a_flag_or_a_function() -> None:
    """Anything else is refused when the tool is made."""
    with pytest.raises(InvalidToolError, match="approval must be True, False, None or a function, not str"):

        @tool(approval="yes")  # type: ignore[call-overload]  # pyright: ignore[reportArgumentType, reportCallIssue]
        def nothing() -> None:
            """Do nothing."""

    @tool(approval=False)
    def plain() -> str:
        """Answer at once."""
        return "ran"

    assert asyncio.run(call(bind(plain))).output.text() == "ran"
