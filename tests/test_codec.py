"""`_codec`: the output encoder's quick path for scalars, and handing out an admitted value once."""

from __future__ import annotations

import math
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scopetool import InvalidInvocationError, InvalidOutputError, Request, Result, bind, tool
from scopetool._codec import NOTHING, InputDecoder, OutputEncoder, take_decoded
from scopetool._decoder import fast_path

VALUES = (
    st.integers()
    | st.floats()
    | st.booleans()
    | st.none()
    | st.text(max_size=5)
    | st.lists(st.integers(), max_size=3)
    | st.sampled_from([2**53 + 1, -(2**63), 2**64, math.inf, -math.inf, math.nan, -0.0, 1e308])
)
DECLARED = [int, float, bool, list[int], Any]


def _outcome(make: Any) -> Result | str:
    try:
        return make()  # type: ignore[no-any-return]
    except InvalidOutputError as error:
        return f"InvalidOutputError: {error}"


@pytest.mark.parametrize("declared", DECLARED, ids=str)
@given(value=VALUES)
def test_result_is_encode_made_a_result(declared: Any, value: Any) -> None:
    """For every declared type and value, `result` gives exactly Result(output=encode(value)), or the same error."""
    encoder: OutputEncoder[Any] = OutputEncoder(declared)
    quick = _outcome(lambda: encoder.result(value))
    slow = _outcome(lambda: Result(output=encoder.encode(value)))
    assert quick == slow
    if isinstance(quick, Result):
        assert type(quick) is Result and type(quick.output) is type(slow.output)  # type: ignore[union-attr]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_float_result_is_refused(value: float) -> None:
    """A float tool returning NaN or an infinity fails its output contract, as before the quick path."""
    with pytest.raises(InvalidOutputError, match="NaN and Infinity"):
        OutputEncoder(float).result(value)


async def test_a_scalar_tool_returns_its_number_as_details() -> None:
    """An int tool's call carries the number as JSON details, byte for byte."""

    @tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    binding = bind(add)
    result = await binding.call(binding.contract.prepare(Request(name="add", arguments='{"a":40,"b":2}')))
    assert result.output.details == b"42"
    assert result.output.content == ()
    assert result.input_request is None


def test_an_admitted_value_is_handed_out_once_across_threads() -> None:
    """Of many threads taking one invocation's admitted value at once, exactly one gets it."""

    @tool
    def echo(a: int) -> int:
        """Echo."""
        return a

    contract = bind(echo).contract
    decoder = echo.input_validator()
    for _ in range(20):
        invocation = contract.prepare(Request(name="echo", arguments='{"a":7}'))
        barrier = threading.Barrier(8)
        taken: list[Any] = []

        def take(invocation: Any = invocation, barrier: threading.Barrier = barrier, taken: list[Any] = taken) -> None:
            barrier.wait()
            taken.append(take_decoded(invocation, decoder))

        threads = [threading.Thread(target=take) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [value for value in taken if value is not NOTHING] == [{"a": 7}]


def test_another_decoder_gets_nothing() -> None:
    """Only the decoder that admitted an invocation is handed its value."""

    @tool
    def echo(a: int) -> int:
        """Echo."""
        return a

    invocation = bind(echo).contract.prepare(Request(name="echo", arguments='{"a":7}'))
    assert take_decoded(invocation, tool(echo.__wrapped__).input_validator()) is NOTHING
    assert take_decoded(invocation, echo.input_validator()) == {"a": 7}


def test_the_admitted_value_is_handed_out_once() -> None:
    """The first take of an invocation gets its admitted value; every later take gets NOTHING."""

    @tool
    def echo(a: int) -> int:
        """Echo."""
        return a

    invocation = bind(echo).contract.prepare(Request(name="echo", arguments='{"a":7}'))
    decoder = echo.input_validator()
    assert [take_decoded(invocation, decoder) for _ in range(3)] == [{"a": 7}, NOTHING, NOTHING]


class _Plain(BaseModel):
    x: int


class _ByName(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    full_name: str = Field(alias="fullName")


def _flags(fn: Any) -> dict[str, Any]:
    decoder = bind(tool(fn)).contract._decoder
    assert isinstance(decoder, InputDecoder)
    return fast_path(decoder).call_flags


def test_call_flags_are_asked_only_for_what_nested_classes_would_loosen() -> None:
    """No nested class: no flags; a default one: strict and closed; one that takes field names: aliases too."""

    def flat(a: int) -> int:
        return a

    def nested(p: _Plain, n: int) -> int:
        return p.x + n

    def by_name(p: _ByName, n: int) -> str:
        return p.full_name * n

    assert _flags(flat) == {}
    assert _flags(nested) == {"strict": True, "extra": "forbid"}
    assert _flags(by_name) == {"strict": True, "extra": "forbid", "by_alias": True, "by_name": False}
    contract = bind(tool(by_name)).contract
    with pytest.raises(InvalidInvocationError):
        contract.prepare(Request(name="by_name", arguments='{"p":{"full_name":"Ada"},"n":1}'))
    assert contract.prepare(Request(name="by_name", arguments='{"p":{"fullName":"Ada"},"n":1}')).arguments


class _Listed(BaseModel):
    items: list[int]
    count: int


@pytest.mark.parametrize(
    ("raw", "early"), [(b'{"items": [1, "x"], "count": 1}', True), (b'{"items": [1], "count": "x"}', False)]
)
def test_a_decoders_stop_is_told_alike_from_the_errors_read_already(raw: bytes, early: bool) -> None:
    """`may_have_stopped_early` says the same with the error's details handed to it as without them."""
    decoder = InputDecoder[_Listed](_Listed.__pydantic_core_schema__)
    with pytest.raises(ValidationError) as info:
        decoder(raw)
    details = info.value.errors(include_url=False, include_context=True, include_input=False)
    assert decoder.may_have_stopped_early(info.value) is early
    assert decoder.may_have_stopped_early(info.value, details) is early
