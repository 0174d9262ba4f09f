"""Typed codecs: what a typed tool's call reads and returns, the admitted input's decoder and the output encoder.

An `InputDecoder` is built once from a pydantic core schema. It is what a typed tool's
``input_validator()`` returns; `bind` recognises it and lets it be the whole schema check (it owns the
schema it advertises: admission runs its `StrictDecoder` part), and the value it decodes at admission
is handed to the tool's first call instead of decoding again.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar, final

from pydantic import TypeAdapter
from pydantic_core import CoreConfig, PydanticSerializationError, SchemaSerializer, ValidationError

from ._decoder import StrictDecoder
from ._errors import InvalidInvocationError, InvalidOutputError
from ._json import canonical_json
from ._output import Output, Result, completed, completed_details, serialized_output
from ._schema import json_schema_of

if TYPE_CHECKING:
    from ._contract import Invocation

__all__ = [
    "NOTHING",
    "InputDecoder",
    "OutputEncoder",
    "caller_namespace",
    "take_decoded",
    "type_adapter",
]

T = TypeVar("T")

NOTHING: Final = object()
"""Returned by `take_decoded` when there is no admitted value to hand out."""


def take_decoded(invocation: Invocation, decoder: object) -> Any:
    """The value `decoder` produced when admitting `invocation`, handed out once; `NOTHING` otherwise.

    Handing it out once means no call can change what another call of the same invocation sees:
    later calls decode the arguments afresh.
    """
    # The module-private slots of `Invocation` and `Contract`, which `Contract.prepare` wrote.
    if invocation._contract._decoder is not decoder:  # pyright: ignore[reportPrivateUsage]
        return NOTHING
    try:
        # One list.pop is atomic (under the GIL, and under the list's own lock without it), so of
        # concurrent takers exactly one gets the value; no lock is needed.
        return invocation._decoded.pop()  # pyright: ignore[reportPrivateUsage]
    except IndexError:
        return NOTHING


@final
class InputDecoder(StrictDecoder[T]):
    """A strict, reusable decoder of one tool's arguments, built once from a core schema.

    Calling it with raw JSON bytes returns the decoded value or raises pydantic's `ValidationError`
    (or an `InputRejection` a validator raised). `schema_json` is the canonical JSON Schema it
    enforces.
    """

    __slots__ = ()

    def decode(self, invocation: Invocation) -> T:
        """The value this decoder admitted `invocation` with.

        The admitted value is handed out once; later calls get a fresh strict decode of the
        invocation's arguments, so no call sees what another call changed.
        """
        taken: T = take_decoded(invocation, self)
        if taken is not NOTHING:
            return taken
        try:
            return self(invocation.arguments)
        except ValidationError as error:
            raise InvalidInvocationError("the invocation's arguments do not decode under this signature") from error


@final
class OutputEncoder(Generic[T]):
    """Turns a tool's return value into an `Output`, with the codec chosen once from the declared type.

    ``str`` gives text-only output and declares no details schema; `Output` passes through; None gives
    the empty output; anything else is encoded to JSON `details` under the declared type's schema.
    """

    __slots__ = ("_adapter", "_exact", "_kind", "_schema", "_serializer")

    def __init__(self, declared: Any, *, namespace: Mapping[str, Any] | None = None) -> None:
        self._adapter: TypeAdapter[Any] | None = None
        self._schema: bytes | None = None
        # A value of exactly this class cannot mismatch the declared type, so it is serialized without
        # the per-call mismatch check (which costs far more than encoding a scalar).
        self._exact: type | None = declared if declared in _SCALARS else None
        if declared is str:
            self._kind = "text"
        elif declared is Output:
            self._kind = "output"
        elif declared is None or declared is type(None):
            self._kind = "none"
        else:
            self._kind = "json"
            self._adapter = type_adapter(declared, namespace)
            # NaN and infinity encode as their (invalid) JSON constants, so Output refuses them rather
            # than pydantic's default quietly turning them into null.
            self._serializer = SchemaSerializer(self._adapter.core_schema, CoreConfig(ser_json_inf_nan="constants"))
            if declared is not Any:
                self._schema = canonical_json(json_schema_of(self._adapter.core_schema, mode="serialization"))

    @property
    def schema(self) -> dict[str, Any] | None:
        """A fresh copy of the output JSON Schema for details; None for text, `Output` and None outputs."""
        return None if self._schema is None else json.loads(self._schema)

    def result(self, value: T) -> Result:
        """The completed `Result` of one return value: `encode`, faster for a scalar of the declared class."""
        exact = self._exact
        # An int or a bool encodes as a plain number or literal; a float only when finite (pydantic
        # writes NaN and Infinity as constants, which the full check refuses).
        # Such a value cannot mismatch, so pydantic has no warning to raise (none is asked to be off).
        if value.__class__ is exact and (exact is not float or _isfinite(value)):
            return completed_details(self._serializer.to_json(value))
        return completed(self.encode(value))

    def encode(self, value: T) -> Output:
        """Encode one return value; a value that does not fit the declared type raises `InvalidOutputError`."""
        kind = self._kind
        if kind == "text":
            if not isinstance(value, str):
                raise InvalidOutputError(f"tool returned {type(value).__name__}, but its declared output is str")
            return Output.from_text(value)
        if kind == "output":
            if not isinstance(value, Output):
                raise InvalidOutputError(f"tool returned {type(value).__name__}, but its declared output is Output")
            return value
        if kind == "none":
            if value is not None:
                raise InvalidOutputError(f"tool returned {type(value).__name__}, but its declared output is None")
            return _EMPTY
        try:
            if value.__class__ is self._exact:
                data = self._serializer.to_json(value, warnings=False)
            else:
                data = self._serializer.to_json(value, warnings="error")
        except (PydanticSerializationError, ValueError, TypeError) as error:
            raise InvalidOutputError(f"tool output does not encode as its declared type: {error}") from None
        return serialized_output(data)


def caller_namespace() -> dict[str, Any] | None:
    """The local names where a tool is being defined, as pydantic's `validate_call` reads them.

    The frame is the first one outside scopetool (``@tool``, ``@tool(...)``, ``Func(...)`` and
    ``Signature(...)`` are all called from there). Annotations that name a class defined in the same
    function (a closure, a factory), which ``from __future__ import annotations`` leaves as strings,
    resolve there. None at module level, where a function's globals already hold every name.
    """
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None or frame.f_locals is frame.f_globals:
        return None
    return dict(frame.f_locals)


_PACKAGE: Final = __name__.rpartition(".")[0] + "."


def type_adapter(declared: Any, namespace: Mapping[str, Any] | None) -> TypeAdapter[Any]:
    """A TypeAdapter of `declared` whose forward references also resolve in `namespace` (a tool's locals).

    pydantic resolves them in the frame that builds the adapter, which is scopetool's own, not the
    frame where a tool was defined.
    """
    adapter: TypeAdapter[Any] = TypeAdapter(declared)
    if namespace is not None and not adapter.pydantic_complete:
        adapter.rebuild(_types_namespace=namespace)
    return adapter


_EMPTY: Final = Output()
_SCALARS: Final = (int, float, bool)
_isfinite: Final[Callable[[Any], bool]] = math.isfinite
