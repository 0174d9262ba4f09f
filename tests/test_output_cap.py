"""The cap on a tool's result: declared, bound or the default; measured in UTF-8 bytes; a Failure that says so."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client

from scopetool import (
    MAX_OUTPUT_BYTES,
    CallContext,
    Caller,
    Definition,
    Failure,
    FailureKind,
    InvalidToolError,
    Invocation,
    MediaBlock,
    Output,
    OutputTooLargeError,
    Registry,
    Request,
    Result,
    TextBlock,
    bind,
    tool,
)
from scopetool.mcp.server import create_server

MIB = 1024 * 1024
CAP = MIB


def too_large(name: str, limit: int = CAP) -> str:
    """The public text of a result over `limit`."""
    return f'error: tool "{name}" failed: its result was over {limit} bytes'


@tool
def text(size: int, char: str = "x") -> str:
    """Return `size` copies of `char`."""
    return char * size


async def call(binding: Any, arguments: str) -> Result:
    """Admit `arguments` and run the call."""
    return await binding.call(binding.contract.prepare(Request(binding.name, arguments)))


async def refusal(binding: Any, arguments: str) -> Failure:
    """The Failure of a call that must fail."""
    with pytest.raises(Failure) as caught:
        await call(binding, arguments)
    return caught.value


def test_the_default_is_8_mib() -> None:
    """A binding without a cap of its own or a declared one gets MAX_OUTPUT_BYTES, 8 MiB."""
    assert MAX_OUTPUT_BYTES == 8 * MIB
    assert bind(text).max_output_bytes == MAX_OUTPUT_BYTES


async def test_a_result_over_the_default_is_a_failure_that_never_shows_it() -> None:
    """50 MiB from a tool with no cap of its own: a FAILED Failure naming the cap; the cause is private."""
    failure = await refusal(bind(text), f'{{"size": {50 * MIB}}}')
    assert failure.kind is FailureKind.FAILED
    assert failure.output.text() == too_large("text", MAX_OUTPUT_BYTES)
    assert isinstance(failure.cause, OutputTooLargeError)
    assert (failure.cause.name, failure.cause.limit, failure.cause.size) == ("text", MAX_OUTPUT_BYTES, 50 * MIB)


async def test_a_result_at_the_cap_passes_and_one_byte_more_does_not() -> None:
    """Exactly the cap is delivered whole; one byte over is refused."""
    binding = bind(text, max_output_bytes=CAP)
    assert len((await call(binding, f'{{"size": {CAP}}}')).output.text() or "") == CAP
    assert (await refusal(binding, f'{{"size": {CAP + 1}}}')).output.text() == too_large("text")


async def test_text_is_measured_in_utf8_bytes() -> None:
    """Two-byte characters: half the cap in characters is the cap in bytes; one more is over."""
    binding = bind(text, max_output_bytes=CAP)
    assert (await call(binding, f'{{"size": {CAP // 2}, "char": "é"}}')).output.text() == "é" * (CAP // 2)
    failure = await refusal(binding, f'{{"size": {CAP // 2 + 1}, "char": "é"}}')
    assert isinstance(failure.cause, OutputTooLargeError) and failure.cause.size == CAP + 2


async def test_a_tool_declares_its_cap_and_a_binding_overrides_it() -> None:
    """@tool(max_output_bytes=...) is read at bind (a Registry's too); bind(max_output_bytes=...) wins."""

    @tool(max_output_bytes=10)
    def small(size: int) -> str:
        """Return `size` bytes."""
        return "x" * size

    registered = Registry(small).resolve("small")
    assert registered is not None and registered.max_output_bytes == 10
    assert (await refusal(registered, '{"size": 11}')).output.text() == too_large("small", 10)
    assert (await call(bind(small, max_output_bytes=20), '{"size": 11}')).output.text() == "x" * 11
    assert bind(small).with_deps(None).max_output_bytes == 10


async def test_details_and_media_count() -> None:
    """Structured details and inline media count toward the cap as their bytes."""

    @tool(max_output_bytes=100)
    def numbers(count: int) -> list[int]:
        """`count` zeros."""
        return [0] * count

    @tool(max_output_bytes=100)
    def picture(size: int) -> Output:
        """An image of `size` bytes and a caption."""
        return Output(content=(TextBlock("a caption"), MediaBlock(mime_type="image/png", data=b"\x89" * size)))

    assert (await call(bind(numbers), '{"count": 10}')).output.details == b"[0,0,0,0,0,0,0,0,0,0]"
    assert (await refusal(bind(numbers), '{"count": 60}')).output.text() == too_large("numbers", 100)
    assert (await call(bind(picture), '{"size": 91}')).output.content[1] == MediaBlock("image/png", b"\x89" * 91)
    assert (await refusal(bind(picture), '{"size": 92}')).output.text() == too_large("picture", 100)


class Plain:
    """A hand-written tool (not a @tool function) whose result is whatever it was given."""

    def __init__(self, output: Output) -> None:
        self._output = output

    def definition(self) -> Definition:
        """A tool with no parameters."""
        return Definition(name="plain", description="A plain tool.", input_schema={"type": "object"})

    async def call(self, invocation: Invocation, /) -> Result:
        """The output it was given."""
        return Result(output=self._output)


async def test_any_tool_and_any_middleware_path_is_capped() -> None:
    """A hand-written tool, a @tool function behind a middleware, and one taking a context: all capped."""

    async def passing(invocation: Invocation, call_next: Caller) -> Result:
        return await call_next(invocation)

    @tool
    def contextual(context: CallContext[int], size: int) -> str:
        """Return `size` bytes."""
        return "x" * (size + context.deps)

    big = Output(content=(TextBlock("x" * 11), MediaBlock(mime_type="text/plain", uri="https://example.com/a")))
    assert (await refusal(bind(Plain(big), max_output_bytes=20), "{}")).output.text() == too_large("plain", 20)
    assert (await call(bind(Plain(big), max_output_bytes=32), "{}")).output == big
    assert (await refusal(bind(text, passing, max_output_bytes=5), '{"size": 6}')).output.text() == too_large("text", 5)
    with_deps = bind(contextual, deps=1, max_output_bytes=5)
    assert (await call(with_deps, '{"size": 4}')).output.text() == "x" * 5
    assert (await refusal(with_deps, '{"size": 5}')).output.text() == too_large("contextual", 5)


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "1"])
def test_a_cap_that_is_not_a_positive_integer_is_refused(value: Any) -> None:
    """bind and @tool refuse a cap that is not a positive integer, naming max_output_bytes."""
    with pytest.raises(InvalidToolError, match="max_output_bytes"):
        bind(text, max_output_bytes=value)
    with pytest.raises(InvalidToolError, match="max_output_bytes"):
        tool(max_output_bytes=value)(lambda: "x")


def test_a_broken_declaration_is_refused_at_bind() -> None:
    """A tool whose max_output_bytes() raises or answers nonsense cannot be bound."""

    class Raising(Plain):
        def max_output_bytes(self) -> int:
            raise RuntimeError("no")

    class Nonsense(Plain):
        def max_output_bytes(self) -> object:
            return "big"

    with pytest.raises(InvalidToolError, match="max_output_bytes: the declaration raised RuntimeError"):
        bind(Raising(Output()))
    with pytest.raises(InvalidToolError, match="max_output_bytes"):
        bind(Nonsense(Output()))


async def test_the_mcp_server_answers_an_oversize_result_with_the_fixed_text() -> None:
    """Served over MCP: the client gets an error result saying the cap, and the server serves on."""
    registry = Registry(bind(text, max_output_bytes=CAP))
    async with Client(create_server(registry)) as client:
        result = await client.call_tool("text", {"size": 2 * MIB})
        assert result.is_error
        assert [block.text for block in result.content if block.type == "text"] == [too_large("text")]
        assert (await client.call_tool("text", {"size": 3})).content[0].text == "xxx"  # type: ignore[union-attr]


def test_the_cap_holds_in_a_plain_event_loop() -> None:
    """Nothing about the cap needs anyio: asyncio.run of a bound call refuses the same way."""
    failure = asyncio.run(refusal(bind(text, max_output_bytes=3), '{"size": 4}'))
    assert failure.output.text() == too_large("text", 3)


async def test_mixed_text_is_measured_exactly_near_the_cap() -> None:
    """ASCII and non-ASCII blocks whose length alone cannot tell: encoded and measured exactly."""
    mixed = Output(content=(TextBlock("xxxx"), TextBlock("ééé")))  # 7 characters, 10 bytes
    assert (await call(bind(Plain(mixed), max_output_bytes=10), "{}")).output == mixed
    failure = await refusal(bind(Plain(mixed), max_output_bytes=9), "{}")
    assert isinstance(failure.cause, OutputTooLargeError) and failure.cause.size == 10
