"""Tests for `Signature[In, Out]`: the typed codec of a hand-written tool."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pydantic import BaseModel, RootModel, field_validator

import scopetool._contract as contract_module
from scopetool import (
    Definition,
    Effect,
    InputDecoder,
    InvalidInvocationError,
    InvalidOutputError,
    InvalidToolError,
    Invocation,
    Output,
    Request,
    Result,
    Signature,
    TextBlock,
    bind,
)
from scopetool._codec import caller_namespace

VALIDATED: list[int] = []


class Add(BaseModel):
    """Two addends; the validator of `a` counts its runs."""

    a: int
    b: int

    @field_validator("a")
    @classmethod
    def count(cls, value: int) -> int:
        VALIDATED.append(value)
        return value


class Sum(BaseModel):
    """A structured sum."""

    total: int


class Adder:
    """A hand-written Tool around a Signature, like the Signature docstring's example."""

    signature = Signature(Add, int)

    def __init__(self) -> None:
        self.decoded: list[Add] = []

    def definition(self) -> Definition:
        return self.signature.definition("add", "Add two integers.")

    def input_validator(self) -> InputDecoder[Add]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        value = self.signature.decode(invocation)
        self.decoded.append(value)
        return Result(output=self.signature.encode(value.a + value.b))


@pytest.fixture(autouse=True)
def _reset_counter() -> None:
    VALIDATED.clear()


# -- construction and schemas -------------------------------------------------------------------


def test_input_and_output_schemas() -> None:
    """The input schema is the model's strict object schema; the output schema is Out's."""
    signature = Signature(Add, Sum)
    schema = signature.input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert schema["required"] == ["a", "b"]
    output = signature.output_schema
    assert isinstance(output, dict)
    assert output["properties"] == {"total": {"type": "integer"}}
    assert signature.input_type is Add
    assert signature.output_type is Sum


@pytest.mark.parametrize("out", [str, Output, None, type(None)])
def test_text_output_and_none_declare_no_output_schema(out: Any) -> None:
    """str, Output and None outputs declare no output schema."""
    assert Signature(Add, out).output_schema is None


def test_input_schema_is_detached() -> None:
    """Mutating the returned input schema, even deep inside, never changes the signature."""
    signature = Signature(Add, int)
    schema = signature.input_schema
    schema["properties"]["a"]["type"] = "string"
    schema["extra"] = True
    assert signature.input_schema["properties"]["a"] == {"type": "integer"}
    assert "extra" not in signature.input_schema


def test_output_schema_is_detached_at_top_level() -> None:
    """Adding a top-level member to the returned output schema never changes the signature."""
    signature = Signature(Add, Sum)
    schema = signature.output_schema
    assert isinstance(schema, dict)
    schema["extra"] = True
    again = signature.output_schema
    assert isinstance(again, dict)
    assert "extra" not in again


def test_output_schema_is_detached_deeply() -> None:
    """Mutating a nested member of the returned output schema never changes the signature or its definitions."""
    signature = Signature(Add, Sum)
    schema = signature.output_schema
    assert isinstance(schema, dict)
    schema["properties"]["total"]["type"] = "string"
    again = signature.output_schema
    assert isinstance(again, dict)
    assert again["properties"]["total"] == {"type": "integer"}
    definition_schema = signature.definition("add").output_schema
    assert isinstance(definition_schema, dict)
    assert definition_schema["properties"]["total"] == {"type": "integer"}


@pytest.mark.parametrize("bad", [int, dict, "Add", Add(a=1, b=2), None])
def test_input_must_be_a_model_class(bad: Any) -> None:
    """A Signature input that is not a BaseModel subclass raises InvalidToolError."""
    with pytest.raises(InvalidToolError, match="BaseModel"):
        Signature(bad, int)


def test_input_must_describe_an_object() -> None:
    """A model whose schema is not a JSON object (a RootModel of int) is refused."""
    with pytest.raises(InvalidToolError, match="object"):
        Signature(RootModel[int], int)


def test_unsupported_output_type_is_refused() -> None:
    """An output type pydantic cannot encode raises InvalidToolError."""
    with pytest.raises(InvalidToolError):
        Signature(Add, threading.Lock)  # type: ignore[arg-type]


def test_definition_carries_name_description_schemas_and_effect() -> None:
    """definition(name, description, effect=) advertises the signature's schemas."""
    signature = Signature(Add, Sum)
    definition = signature.definition("add", "Add two integers.", effect=Effect.IDEMPOTENT)
    assert definition.name == "add"
    assert definition.description == "Add two integers."
    assert definition.effect is Effect.IDEMPOTENT
    assert definition.input_schema == signature.input_schema
    assert definition.output_schema == signature.output_schema
    plain = signature.definition("add")
    assert plain.description == ""
    assert plain.effect is None


def test_definition_with_invalid_name_raises() -> None:
    """definition() with an invalid name refuses it."""
    with pytest.raises(ValueError, match="must match"):
        Signature(Add, int).definition("bad name")


# -- a hand-written Tool around a Signature -------------------------------------------------------


async def test_hand_written_tool_binds_and_runs() -> None:
    """A Tool class around a Signature binds, admits and runs like the docstring example."""
    adder = Adder()
    binding = bind(adder)
    assert binding.name == "add"
    assert binding.definition().output_schema == {"type": "integer"}
    invocation = binding.contract.prepare(Request(name="add", arguments='{"a":2,"b":3}'))
    result = await binding.call(invocation)
    assert result.output.text() == "5"
    assert result.output.details == b"5"


@pytest.mark.parametrize("arguments", ['{"a":"2","b":3}', '{"a":2}', '{"a":2,"b":3,"c":4}', '{"a":2.0,"b":3}'])
def test_hand_written_tool_admission_is_strict(arguments: str) -> None:
    """The signature's decoder refuses coercions, missing and unknown members."""
    binding = bind(Adder())
    with pytest.raises(InvalidInvocationError):
        binding.contract.prepare(Request(name="add", arguments=arguments))


async def test_decode_returns_the_admitted_instance() -> None:
    """decode() inside call returns the model instance decoded at admission."""
    adder = Adder()
    binding = bind(adder)
    invocation = binding.contract.prepare(Request(name="add", arguments='{"a":4,"b":5}'))
    await binding.call(invocation)
    assert len(adder.decoded) == 1
    value = adder.decoded[0]
    assert isinstance(value, Add)
    assert (value.a, value.b) == (4, 5)


async def test_validator_runs_once_per_prepare_and_call() -> None:
    """bind uses the signature's decoder as the whole check: one validator run covers prepare and call."""
    binding = bind(Adder())
    invocation = binding.contract.prepare(Request(name="add", arguments='{"a":7,"b":1}'))
    assert VALIDATED == [7]
    result = await binding.call(invocation)
    assert result.output.details == b"8"
    assert VALIDATED == [7]


async def test_second_call_of_one_invocation_decodes_afresh() -> None:
    """A second call of the same invocation gets a fresh instance, not the one another call saw."""
    adder = Adder()
    binding = bind(adder)
    invocation = binding.contract.prepare(Request(name="add", arguments='{"a":1,"b":1}'))
    await binding.call(invocation)
    adder.decoded[0].a = 100
    await binding.call(invocation)
    assert adder.decoded[1] is not adder.decoded[0]
    assert adder.decoded[1].a == 1


def test_signature_tool_compiles_no_json_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Signature tool's contract never compiles its input JSON Schema: the decoder is the whole check.

    Only the output schema is compiled, once, for `Contract.validate_result`.
    """
    compiled: list[str] = []
    original = contract_module.compile_schema

    def counting(*args: Any, **kwargs: Any) -> Any:
        compiled.append(args[1])
        return original(*args, **kwargs)

    monkeypatch.setattr(contract_module, "compile_schema", counting)
    binding = bind(Adder())
    binding.contract.prepare(Request(name="add", arguments='{"a":1,"b":2}'))
    assert compiled == ["output schema"]


def test_decode_of_foreign_invocation_decodes_its_arguments() -> None:
    """decode() of an invocation another contract admitted decodes its bytes freshly."""
    signature = Signature(Add, int)
    other = bind(Adder())
    invocation = other.contract.prepare(Request(name="add", arguments='{"a":3,"b":4}'))
    value = signature.decode(invocation)
    assert isinstance(value, Add)
    assert (value.a, value.b) == (3, 4)


def test_decode_of_foreign_invocation_that_does_not_fit_raises() -> None:
    """decode() of an invocation whose arguments do not fit the signature raises InvalidInvocationError."""

    class Other(BaseModel):
        name: str

    other = bind(Adder())
    invocation = other.contract.prepare(Request(name="add", arguments='{"a":3,"b":4}'))
    with pytest.raises(InvalidInvocationError):
        Signature(Other, int).decode(invocation)


# -- encode ---------------------------------------------------------------------------------------


def test_encode_str_is_text() -> None:
    """encode of a str output gives a text-only Output; empty text gives the empty Output."""
    signature = Signature(Add, str)
    assert signature.encode("hi") == Output(content=(TextBlock("hi"),))
    assert signature.encode("") == Output()


def test_encode_output_passes_through() -> None:
    """encode of an Output returns it as is."""
    made = Output(details=b"[1]")
    assert Signature(Add, Output).encode(made) is made


def test_encode_none_is_empty() -> None:
    """encode of None under a None output gives the empty Output."""
    assert Signature(Add, None).encode(None) == Output()


def test_encode_values_are_json_details() -> None:
    """encode of ints, lists and models gives JSON details and no content."""
    assert Signature(Add, int).encode(3) == Output(details=b"3")
    assert Signature(Add, list[int]).encode([1, 2]).details == b"[1,2]"
    encoded = Signature(Add, Sum).encode(Sum(total=9))
    assert encoded.content == ()
    assert encoded.details_value() == {"total": 9}


@pytest.mark.parametrize(
    ("out", "value"),
    [(str, 1), (int, "one"), (None, "x"), (Output, "x"), (Sum, {"total": 1}), (list[int], ["a"])],
)
def test_encode_wrong_type_raises(out: Any, value: Any) -> None:
    """encode of a value that does not fit Out raises InvalidOutputError."""
    with pytest.raises(InvalidOutputError):
        Signature(Add, out).encode(value)


def test_repr_names_both_types() -> None:
    """repr shows the input and output types."""
    text = repr(Signature(Add, Sum))
    assert "Add" in text
    assert "Sum" in text


MODULE_SIGNATURE = Signature(Add, Sum)  # made at module level: the module's own names resolve it


def test_a_signature_made_at_module_level_needs_no_caller_locals() -> None:
    """A Signature made at module level resolves its output type from the module, as before."""
    assert _caller_namespace_at_module_level is None
    assert MODULE_SIGNATURE.output_schema == Signature(Add, Sum).output_schema


_caller_namespace_at_module_level = caller_namespace()
