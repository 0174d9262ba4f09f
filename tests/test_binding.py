"""Tests for `bind` and `Binding`: one frozen contract joined to the tool that runs it."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

import scopetool._contract as contract_module
from scopetool import (
    Binding,
    Caller,
    Definition,
    Func,
    InputRejection,
    InvalidDefinitionError,
    InvalidInvocationError,
    InvalidOutputError,
    InvalidToolError,
    Invocation,
    Output,
    Request,
    Result,
    bind,
    classify_input_rejection,
    tool,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0}},
    "required": ["n"],
    "additionalProperties": False,
}


class RawTool:
    """A raw-schema tool: a hand-written Definition, optionally with an input validator."""

    def __init__(self, schema: dict[str, Any] | None = None, name: str = "raw") -> None:
        self.schema = SCHEMA if schema is None else schema
        self.name = name
        self.definitions_read = 0
        self.ran: list[bytes] = []

    def definition(self) -> Definition:
        self.definitions_read += 1
        return Definition(name=self.name, description="A raw tool.", input_schema=self.schema)

    async def call(self, invocation: Invocation) -> Result:
        self.ran.append(invocation.arguments)
        return Result(output=Output.from_text(invocation.arguments.decode()))


class ValidatingTool(RawTool):
    """A raw-schema tool with a custom input validator that records what it saw."""

    def __init__(self, rule: Any = None) -> None:
        super().__init__()
        self.declarations_read = 0
        self.validated: list[bytes] = []
        self.rule = rule

    def input_validator(self) -> Any:
        self.declarations_read += 1

        def validate(raw: bytes) -> None:
            self.validated.append(raw)
            if self.rule is not None:
                self.rule(raw)

        return validate


def prepare(binding: Binding, arguments: str = '{"n":1}') -> Invocation:
    """Admit `arguments` through the binding's contract."""
    return binding.contract.prepare(Request(name=binding.name, arguments=arguments))


@tool
def echo(n: int) -> int:
    """Echo a number."""
    return n


# -- bind reads the tool once ------------------------------------------------------------------


async def test_bind_reads_definition_and_validator_exactly_once() -> None:
    """definition() and input_validator() are read once at bind, never again on prepare or call."""
    raw = ValidatingTool()
    binding = bind(raw)
    assert raw.definitions_read == 1
    assert raw.declarations_read == 1
    for n in range(3):
        await binding.call(prepare(binding, f'{{"n":{n}}}'))
    binding.definition()
    binding.contract.definition()
    assert raw.definitions_read == 1
    assert raw.declarations_read == 1


def test_binding_definition_is_frozen() -> None:
    """Changing the tool after bind never changes the binding's definition."""
    raw = RawTool()
    binding = bind(raw)
    raw.schema = {"type": "object"}
    raw.name = "renamed"
    assert binding.name == "raw"
    assert binding.definition().input_schema == SCHEMA
    assert binding.definition() is binding.contract.definition()


def test_binding_exposes_tool_and_contract() -> None:
    """A binding exposes its tool, its contract and its name."""
    raw = RawTool()
    binding = bind(raw)
    assert binding.tool is raw
    assert binding.contract.name == "raw"
    assert "raw" in repr(binding)


def test_binding_cannot_be_constructed_directly() -> None:
    """Binding() raises TypeError: only bind makes one."""
    with pytest.raises(TypeError, match="bind"):
        Binding()


# -- bind refuses broken tools ----------------------------------------------------------------


class NoCall:
    def definition(self) -> Definition:
        return Definition(name="x", input_schema={"type": "object"})


class NoDefinition:
    async def call(self, invocation: Invocation) -> Result:
        return Result()


class RaisingDefinition(RawTool):
    def definition(self) -> Definition:
        raise RuntimeError("boom")


class InvalidDefinition(RawTool):
    def definition(self) -> Definition:
        return Definition(name="bad name", input_schema={"type": "object"})


class DictDefinition(RawTool):
    def definition(self) -> Any:
        return {"name": "raw", "input_schema": {"type": "object"}}


class RaisingDeclaration(RawTool):
    def input_validator(self) -> Any:
        raise RuntimeError("boom")


class NotCallableValidator(RawTool):
    def input_validator(self) -> Any:
        return 42


@pytest.mark.parametrize(
    "value",
    [
        None,
        object(),
        NoCall(),
        NoDefinition(),
        RaisingDefinition(),
        InvalidDefinition(),
        DictDefinition(),
        RaisingDeclaration(),
        NotCallableValidator(),
    ],
    ids=[
        "none",
        "object",
        "no-call",
        "no-definition",
        "definition-raises",
        "invalid-definition",
        "dict-definition",
        "declaration-raises",
        "validator-not-callable",
    ],
)
def test_bind_refuses_broken_tools(value: Any) -> None:
    """bind raises InvalidToolError for missing or broken tools."""
    with pytest.raises(InvalidToolError):
        bind(value)


def test_bind_wraps_invalid_definition_error() -> None:
    """An InvalidDefinitionError from definition() becomes InvalidToolError 'definition: ...' with its cause."""
    with pytest.raises(InvalidToolError, match=r"^definition: ") as error:
        bind(InvalidDefinition())
    assert isinstance(error.value.__cause__, InvalidDefinitionError)


def test_bind_refuses_non_callable_middleware() -> None:
    """A middleware that is not callable raises InvalidToolError naming its index."""

    async def fine(invocation: Invocation, call_next: Caller) -> Result:
        return await call_next(invocation)

    with pytest.raises(InvalidToolError, match=r"middlewares\[1\]"):
        bind(echo, fine, "not callable")  # type: ignore[arg-type]


# -- raw-schema tools ---------------------------------------------------------------------------


async def test_raw_schema_tool_binds_and_runs() -> None:
    """A raw-schema tool binds and runs admitted invocations, arguments exactly as received."""
    raw = RawTool()
    binding = bind(raw)
    result = await binding.call(prepare(binding, '{ "n" : 5 }'))
    assert result.output.text() == '{ "n" : 5 }'
    assert raw.ran == [b'{ "n" : 5 }']


@pytest.mark.parametrize(
    "arguments",
    ['{"n":-1}', '{"n":"1"}', "{}", '{"n":1,"m":2}', '{"n":1,"n":2}', "[]", '{"n":true}'],
)
def test_raw_schema_is_enforced(arguments: str) -> None:
    """The hand-written schema is enforced by the contract, and nothing runs on rejection."""
    raw = RawTool()
    binding = bind(raw)
    with pytest.raises(InvalidInvocationError) as error:
        prepare(binding, arguments)
    assert classify_input_rejection(error.value) is not None
    assert raw.ran == []


def test_raw_schema_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hand-written schema is compiled once at bind, not on each prepare."""
    compiled: list[object] = []
    original = contract_module.compile_schema

    def counting(*args: Any, **kwargs: Any) -> Any:
        compiled.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(contract_module, "compile_schema", counting)
    binding = bind(RawTool())
    assert len(compiled) == 1
    for n in range(5):
        prepare(binding, f'{{"n":{n}}}')
    assert len(compiled) == 1


def test_remote_ref_is_refused_at_bind() -> None:
    """A schema with a remote $ref is refused at bind, never fetched."""
    schema = {"type": "object", "properties": {"a": {"$ref": "https://example.com/schema.json"}}}
    with pytest.raises(InvalidToolError, match="input schema"):
        bind(RawTool(schema))


def test_uncompilable_schema_is_refused_at_bind() -> None:
    """A schema that is not a valid JSON Schema is refused at bind."""
    with pytest.raises(InvalidToolError, match="input schema"):
        bind(RawTool({"type": "object", "properties": {"a": {"type": 12}}}))


# -- custom input validators ----------------------------------------------------------------------


def test_custom_validator_runs_after_schema() -> None:
    """A custom validator sees only input the schema admitted, as the argument bytes."""
    raw = ValidatingTool()
    binding = bind(raw)
    with pytest.raises(InvalidInvocationError):
        prepare(binding, '{"n":-1}')
    assert raw.validated == []
    prepare(binding, '{"n":2}')
    assert raw.validated == [b'{"n":2}']


async def test_custom_validator_return_value_is_not_required() -> None:
    """A validator returning None admits the input, and the tool runs."""
    raw = ValidatingTool()
    binding = bind(raw)
    result = await binding.call(prepare(binding, '{"n":3}'))
    assert result.output.text() == '{"n":3}'


def test_custom_validator_rejection_reaches_the_model() -> None:
    """An InputRejection from the validator refuses the call with exactly its public message."""

    def rule(raw: bytes) -> None:
        if b"13" in raw:
            raise InputRejection("13 is unlucky")

    binding = bind(ValidatingTool(rule))
    with pytest.raises(InvalidInvocationError) as error:
        prepare(binding, '{"n":13}')
    rejection = classify_input_rejection(error.value)
    assert rejection is not None
    assert rejection.message == "13 is unlucky"


# -- middlewares ----------------------------------------------------------------------------------


async def test_middlewares_first_is_outermost() -> None:
    """Middlewares run in order, the first outermost, around the tool."""
    trace: list[str] = []

    def layer(label: str) -> Any:
        async def middleware(invocation: Invocation, call_next: Caller) -> Result:
            trace.append(f"{label}>")
            result = await call_next(invocation)
            trace.append(f"<{label}")
            return result

        return middleware

    class Traced(RawTool):
        async def call(self, invocation: Invocation) -> Result:
            trace.append("tool")
            return await super().call(invocation)

    binding = bind(Traced(), layer("a"), layer("b"), layer("c"))
    result = await binding.call(prepare(binding))
    assert result.output.text() == '{"n":1}'
    assert trace == ["a>", "b>", "c>", "tool", "<c", "<b", "<a"]


async def test_middleware_may_reject_by_raising() -> None:
    """A middleware that raises rejects the call: the error propagates and the tool never runs."""

    async def deny(invocation: Invocation, call_next: Caller) -> Result:
        raise PermissionError("denied")

    raw = RawTool()
    binding = bind(raw, deny)
    with pytest.raises(PermissionError, match="denied"):
        await binding.call(prepare(binding))
    assert raw.ran == []


async def test_middleware_forwarding_once_may_replace_result() -> None:
    """A middleware that forwards once may return its own Result."""
    replaced = Result(output=Output.from_text("replaced"))

    async def replace(invocation: Invocation, call_next: Caller) -> Result:
        await call_next(invocation)
        return replaced

    raw = RawTool()
    binding = bind(raw, replace)
    assert await binding.call(prepare(binding)) is replaced
    assert raw.ran == [b'{"n":1}']


async def test_middleware_forwarding_different_invocation_is_refused() -> None:
    """Forwarding another invocation (even of the same contract) raises InvalidInvocationError."""
    raw = RawTool()
    holder: list[Binding] = []

    async def swap(invocation: Invocation, call_next: Caller) -> Result:
        return await call_next(prepare(holder[0], '{"n":99}'))

    binding = bind(raw, swap)
    holder.append(binding)
    with pytest.raises(InvalidInvocationError, match="different invocation"):
        await binding.call(prepare(binding))
    assert raw.ran == []


async def test_middleware_forwarding_twice_is_refused() -> None:
    """Forwarding the invocation twice raises InvalidInvocationError; the tool runs only once."""

    async def twice(invocation: Invocation, call_next: Caller) -> Result:
        await call_next(invocation)
        return await call_next(invocation)

    raw = RawTool()
    binding = bind(raw, twice)
    with pytest.raises(InvalidInvocationError, match="twice"):
        await binding.call(prepare(binding))
    assert len(raw.ran) == 1


async def test_middleware_forwarding_concurrently_twice_is_refused() -> None:
    """Two concurrent forwards of one invocation are refused."""

    async def both(invocation: Invocation, call_next: Caller) -> Result:
        results = await asyncio.gather(call_next(invocation), call_next(invocation))
        return results[0]

    binding = bind(RawTool(), both)
    with pytest.raises(InvalidInvocationError, match="twice"):
        await binding.call(prepare(binding))


async def test_middleware_returning_without_forwarding_is_refused() -> None:
    """A middleware that returns without forwarding raises InvalidInvocationError; the tool never runs."""

    async def skip(invocation: Invocation, call_next: Caller) -> Result:
        return Result()

    raw = RawTool()
    binding = bind(raw, skip)
    with pytest.raises(InvalidInvocationError, match="without forwarding"):
        await binding.call(prepare(binding))
    assert raw.ran == []


async def test_inner_middleware_returning_without_forwarding_is_refused() -> None:
    """The forwarding rule holds for every layer, not only the outermost."""

    async def outer(invocation: Invocation, call_next: Caller) -> Result:
        return await call_next(invocation)

    async def skip(invocation: Invocation, call_next: Caller) -> Result:
        return Result()

    raw = RawTool()
    binding = bind(raw, outer, skip)
    with pytest.raises(InvalidInvocationError):
        await binding.call(prepare(binding))
    assert raw.ran == []


async def test_middleware_returning_before_forward_finished_is_refused() -> None:
    """A middleware that returns while its forward is still running raises InvalidInvocationError."""
    release = asyncio.Event()
    pending: list[asyncio.Task[Result]] = []

    class Waiting(RawTool):
        async def call(self, invocation: Invocation) -> Result:
            await release.wait()
            return await super().call(invocation)

    async def detach(invocation: Invocation, call_next: Caller) -> Result:
        pending.append(asyncio.ensure_future(call_next(invocation)))
        await asyncio.sleep(0.01)
        return Result()

    binding = bind(Waiting(), detach)
    with pytest.raises(InvalidInvocationError, match="before its forward finished"):
        await binding.call(prepare(binding))
    release.set()
    await asyncio.gather(*pending)


async def test_forward_after_middleware_returned_never_runs_the_tool() -> None:
    """A call_next kept past its middleware's return is refused: the tool never runs after the call failed."""
    kept: list[tuple[Invocation, Caller]] = []

    async def stash(invocation: Invocation, call_next: Caller) -> Result:
        kept.append((invocation, call_next))
        return Result()

    raw = RawTool()
    binding = bind(raw, stash)
    with pytest.raises(InvalidInvocationError):
        await binding.call(prepare(binding))
    invocation, call_next = kept[0]
    with pytest.raises(InvalidInvocationError):
        await call_next(invocation)
    assert raw.ran == []


async def test_middleware_returning_non_result_raises() -> None:
    """A middleware that forwards but returns something other than a Result raises InvalidOutputError."""

    async def bad(invocation: Invocation, call_next: Caller) -> Any:
        await call_next(invocation)
        return "not a result"

    binding = bind(RawTool(), bad)
    with pytest.raises(InvalidOutputError):
        await binding.call(prepare(binding))


# -- invocation identity --------------------------------------------------------------------------


async def test_invocation_of_identical_tool_is_refused() -> None:
    """An invocation admitted by another binding of an identical tool is refused."""
    first, second = RawTool(), RawTool()
    binding_a, binding_b = bind(first), bind(second)
    assert binding_a.definition() == binding_b.definition()
    with pytest.raises(InvalidInvocationError, match="does not belong"):
        await binding_b.call(prepare(binding_a))
    assert second.ran == []


async def test_foreign_invocation_is_refused_when_awaited() -> None:
    """Calling with a foreign invocation gives an awaitable; awaiting it, not the call, raises."""
    first, second = RawTool(), RawTool()
    binding_a, binding_b = bind(first), bind(second)
    pending = binding_b.call(prepare(binding_a))
    with pytest.raises(InvalidInvocationError, match="does not belong"):
        await pending
    assert second.ran == []


async def test_invocation_of_same_tool_bound_twice_is_refused() -> None:
    """Binding the same tool twice gives two contracts that refuse each other's invocations."""
    binding_a, binding_b = bind(echo), bind(echo)
    invocation = prepare(binding_a, '{"n":4}')
    with pytest.raises(InvalidInvocationError, match="does not belong"):
        await binding_b.call(invocation)
    assert (await binding_a.call(invocation)).output.details == b"4"


async def test_non_invocation_is_refused() -> None:
    """Calling a binding with something that is not an Invocation is refused."""
    binding = bind(RawTool())
    with pytest.raises(InvalidInvocationError):
        await binding.call(object())  # type: ignore[arg-type]


# -- results and concurrency ----------------------------------------------------------------------


async def test_tool_returning_non_result_raises() -> None:
    """A tool whose call returns something other than a Result raises InvalidOutputError."""

    class Sloppy(RawTool):
        async def call(self, invocation: Invocation) -> Any:
            return Output.from_text("not wrapped")

    binding = bind(Sloppy())
    with pytest.raises(InvalidOutputError, match="not a Result"):
        await binding.call(prepare(binding))


async def test_func_subclass_returning_non_result_raises() -> None:
    """A Func subclass whose own call returns something other than a Result still raises InvalidOutputError."""

    async def double(n: int) -> int:
        """Double n."""
        return 2 * n

    class Sloppy(Func[..., Any]):
        async def call(self, invocation: Invocation, /) -> Any:
            return Output.from_text("not wrapped")

    binding = bind(Sloppy(double))
    with pytest.raises(InvalidOutputError, match="not a Result"):
        await binding.call(prepare(binding, '{"n":2}'))
    plain = bind(Func(double))
    assert (await plain.call(prepare(plain, '{"n":2}'))).output.details == b"4"


async def test_func_with_replaced_call_returning_non_result_raises() -> None:
    """A Func whose call was replaced on the instance is checked like any tool: a non-Result raises."""

    async def double(n: int) -> int:
        """Double n."""
        return 2 * n

    async def sloppy(invocation: Invocation, /) -> Any:
        return Output.from_text("not wrapped")

    replaced = Func(double)
    replaced.call = sloppy  # type: ignore[method-assign]
    binding = bind(replaced)
    with pytest.raises(InvalidOutputError, match="not a Result"):
        await binding.call(prepare(binding, '{"n":2}'))


async def test_32_concurrent_calls_get_their_own_results() -> None:
    """32 concurrent calls through one binding (with a middleware) each return their own result."""
    active = 0
    peak = 0

    @tool
    async def slow_echo(n: int) -> int:
        """Echo after a random pause."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(random.uniform(0, 0.02))
        active -= 1
        return n * 10

    async def passthrough(invocation: Invocation, call_next: Caller) -> Result:
        await asyncio.sleep(0)
        return await call_next(invocation)

    binding = bind(slow_echo, passthrough)
    invocations = [prepare(binding, f'{{"n":{n}}}') for n in range(32)]
    results = await asyncio.gather(*(binding.call(invocation) for invocation in invocations))
    assert [result.output.details for result in results] == [str(n * 10).encode() for n in range(32)]
    assert peak > 1


async def test_32_concurrent_sync_calls_get_their_own_results() -> None:
    """32 concurrent calls of a sync Func (worker threads) each return their own result."""

    @tool
    def square(n: int) -> int:
        """Square."""
        return n * n

    binding = bind(square)
    results = await asyncio.gather(*(binding.call(prepare(binding, f'{{"n":{n}}}')) for n in range(32)))
    assert [result.output.details_value() for result in results] == [n * n for n in range(32)]
