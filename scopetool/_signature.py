"""`Signature[In, Out]`: the typed codec of a tool, and both of its schema projections."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, final

from pydantic import BaseModel

from ._codec import InputDecoder, OutputEncoder, caller_namespace
from ._contract import Invocation
from ._definition import Definition, Effect
from ._errors import InvalidToolError
from ._output import Output

__all__ = ["Signature"]

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out")


@final
class Signature(Generic[In, Out]):
    """The typed codec of a tool and both of its schema projections.

    `In` (a pydantic model) supplies the input schema, the strict decoder and the validation hook (its
    validators); `Out` selects the output codec and schema once.

    Use it to write a `Tool` that needs the call itself (its idempotency key or continuation):

    Example:
        ```python
        import asyncio
        from pydantic import BaseModel
        from scopetool import Invocation, Request, Result, Signature, bind

        class Add(BaseModel):
            a: int
            b: int

        class Adder:
            signature = Signature(Add, int)

            def definition(self):
                return self.signature.definition("add", "Add two integers.")

            def input_validator(self):
                return self.signature.input_validator()

            async def call(self, invocation: Invocation) -> Result:
                value = self.signature.decode(invocation)
                return Result(output=self.signature.encode(value.a + value.b))

        binding = bind(Adder())
        invocation = binding.contract.prepare(Request(name="add", arguments='{"a":2,"b":3}'))
        print(asyncio.run(binding.call(invocation)).output.text())
        #> 5
        ```
    """

    __slots__ = ("_decoder", "_encoder", "_input", "_output")

    def __init__(self, input: type[In], output: type[Out], /) -> None:  # noqa: A002 - mirrors the seed's In
        if not (isinstance(input, type) and issubclass(input, BaseModel)):
            raise InvalidToolError(f"Signature input must be a pydantic BaseModel subclass, not {input!r}")
        try:
            self._decoder: InputDecoder[In] = InputDecoder(input.__pydantic_core_schema__)
            self._encoder: OutputEncoder[Out] = OutputEncoder(output, namespace=caller_namespace())
        except Exception as error:
            raise InvalidToolError(f"Signature[{input.__name__}, {output!r}]: {error}") from error
        if self._decoder.schema.get("type") != "object":
            raise InvalidToolError(f"Signature input {input.__name__} does not describe a JSON object")
        self._input = input
        self._output = output

    @property
    def input_type(self) -> type[In]:
        """The input model."""
        return self._input

    @property
    def output_type(self) -> type[Out]:
        """The declared output type."""
        return self._output

    @property
    def input_schema(self) -> dict[str, Any]:
        """A fresh copy of the input JSON Schema (strict: closed objects)."""
        return self._decoder.schema

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """A fresh copy of the output JSON Schema for details; None for text, `Output` and None outputs."""
        return self._encoder.schema

    def input_validator(self) -> InputDecoder[In]:
        """The strict decoder `bind` uses as the whole admission check (it owns the schema it advertises)."""
        return self._decoder

    def decode(self, invocation: Invocation) -> In:
        """The input model admitted with `invocation` (decoded once at admission, never twice for one call)."""
        return self._decoder.decode(invocation)

    def encode(self, value: Out) -> Output:
        """Encode a result: str as text, `Output` as is, anything else as JSON details of `Out`."""
        return self._encoder.encode(value)

    def definition(self, name: str, description: str = "", *, effect: Effect | None = None) -> Definition:
        """A definition that advertises this signature's schemas."""
        return Definition(
            name=name,
            description=description,
            input_schema=self._decoder.schema_json,
            output_schema=self._encoder.schema,
            effect=effect,
        )

    def __repr__(self) -> str:
        return f"Signature[{self._input.__name__}, {getattr(self._output, '__name__', self._output)!r}]"
