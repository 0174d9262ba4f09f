"""Typed codecs: the strict input decoder that admission runs, and the output encoder.

An `InputDecoder` is built once from a pydantic core schema. It is what a typed tool's
``input_validator()`` returns; `bind` recognises it and lets it be the whole schema check (it owns the
schema it advertises), and the value it decodes at admission is handed to the tool's first call
instead of decoding again.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Generic, NamedTuple, TypeVar, final

from pydantic import TypeAdapter
from pydantic_core import (
    CoreConfig,
    CoreSchema,
    PydanticSerializationError,
    SchemaSerializer,
    SchemaValidator,
    ValidationError,
)

from ._errors import InvalidInvocationError, InvalidOutputError
from ._feedback import MAX_DESCRIBED
from ._json import canonical_json
from ._output import Output, Result, completed, completed_details, serialized_output
from ._schema import (
    STRICT_CONFIG,
    MemberCounter,
    core_schema_nodes,
    exact_core_schema,
    fail_fast_core_schema,
    json_schema_of,
    member_counter,
    strict_core_schema,
    string_colons,
)

if TYPE_CHECKING:
    from ._contract import Invocation

__all__ = [
    "NOTHING",
    "FastPath",
    "InputDecoder",
    "OutputEncoder",
    "caller_namespace",
    "fast_path",
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
class InputDecoder(Generic[T]):
    """A strict, reusable decoder of one tool's arguments, built once from a core schema.

    Calling it with raw JSON bytes returns the decoded value or raises pydantic's `ValidationError`
    (or an `InputRejection` a validator raised). `schema_json` is the canonical JSON Schema it
    enforces.
    """

    __slots__ = (
        "_call_flags",
        "_counter",
        "_enforced",
        "_every",
        "_maps",
        "_schema",
        "_schema_json",
        "_string_colons",
        "_unseen_non_finite",
        "validator",
    )

    def __init__(self, schema: CoreSchema, advertised: CoreSchema | None = None) -> None:
        _refuse_alias_lists(schema)
        strict = strict_core_schema(schema)
        enforced = exact_core_schema(strict)
        self.validator = SchemaValidator(fail_fast_core_schema(enforced), STRICT_CONFIG)
        """The compiled pydantic-core validator (call it with ``strict=True, extra="forbid"``).

        Its arrays and maps stop at their first bad item, so a rejection costs little whatever the
        input's size; `every_error` finds the rest of a small document's problems."""
        self._enforced = enforced
        self._every: SchemaValidator | None = None
        self._maps = _contains_kind(enforced, _MAPS)
        shown = strict if advertised is None else strict_core_schema(advertised)
        self._schema = json_schema_of(shown)
        self._schema_json = canonical_json(self._schema)
        self._counter = member_counter(enforced)
        self._string_colons = None if self._counter is None else string_colons(enforced)
        self._unseen_non_finite = self._counter is not None and _contains_kind(strict, _UNCOUNTED_NON_FINITE)
        self._call_flags = _call_flags(strict)

    def __call__(self, raw: str | bytes, /) -> T:
        # pydantic-core reuses the prebuilt validators of nested models, whose own configuration
        # may be lax, so strictness and closed objects are asked for per call (see `FastPath.call_flags`).
        return self.validator.validate_json(raw, **self._call_flags)  # type: ignore[no-any-return]

    def may_have_stopped_early(
        self, error: ValidationError, /, details: Sequence[Mapping[str, Any]] | None = None
    ) -> bool:
        """Whether `error`, raised by `__call__`, may lack problems of an array's or a map's later items.

        `details` are the error's ``errors()``, when the caller has them already (they are not read
        again); a caller with more than `MAX_DESCRIBED` errors should not materialize them, and passes None.
        """
        if self._maps:
            return True
        if details is None:
            if error.error_count() > MAX_DESCRIBED:
                return False  # not read one by one; looking again would find only more
            details = error.errors(include_url=False, include_context=False, include_input=False)
        for detail in details:
            for step in detail["loc"]:
                if step.__class__ is int:
                    return True
        return False

    def every_error(self, raw: str | bytes, /) -> ValidationError | None:
        """Every problem `raw` has, where `__call__` stops at the first bad item of each array or map.

        For describing a rejection; the validator that does not stop early is compiled on first use.
        None when that validator does not raise a `ValidationError` (it should not accept what was
        rejected; a defect of a validator it reaches is the caller's to find).
        """
        every = self._every
        if every is None:
            every = self._every = SchemaValidator(self._enforced, STRICT_CONFIG)
        try:
            every.validate_json(raw, **self._call_flags)
        except ValidationError as error:
            error.__traceback__ = None  # it leads only here; a rejection's cause carries no frames
            return error
        except Exception:  # noqa: BLE001 - a defect past the first bad item: the first error stands
            pass
        return None

    @property
    def schema(self) -> dict[str, Any]:
        """A fresh copy of the JSON Schema this decoder enforces."""
        return json.loads(self._schema_json)  # type: ignore[no-any-return]

    @property
    def schema_json(self) -> bytes:
        """The enforced JSON Schema in canonical JSON."""
        return self._schema_json

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


class FastPath(NamedTuple):
    """What `Contract.prepare` reads off a decoder, once, at bind, to admit without a second parse."""

    counter: MemberCounter | None
    """Counts the object members a decoded value came from; None when that cannot be known."""
    string_colons: MemberCounter | None
    """Counts the ``:`` in a decoded value's strings that came verbatim from JSON; None when unknown."""
    may_hold_non_finite: bool
    """Whether NaN or Infinity tokens could reach a position the member counter does not see.

    The counter flags every non-finite float (in float and unconstrained positions alike); a decimal or
    complex number, which a lax nested model may let be NaN, it does not look at.
    """
    call_flags: dict[str, Any]
    """The keyword flags every `validate_json` call needs (empty when the validator alone is strict).

    pydantic-core reuses the prebuilt validators of nested classes, with their own (often lax)
    configuration, so strictness and closed objects are asked for per call; alias-only names too when
    a nested class would accept field names or refuse aliases.
    """


def fast_path(decoder: object) -> FastPath:
    """The admission plan an `InputDecoder` made from its schema (kept off its public surface: it is prepare's)."""
    assert isinstance(decoder, InputDecoder)
    plan = decoder._counter, decoder._string_colons, decoder._unseen_non_finite  # pyright: ignore[reportPrivateUsage]
    return FastPath(*plan, dict(decoder._call_flags))  # pyright: ignore[reportPrivateUsage]


def _refuse_alias_lists(schema: Any) -> None:
    """AliasChoices and AliasPath let one field read members the advertised schema cannot name."""
    for node in core_schema_nodes(schema):
        if node.get("type") in _FIELDS and isinstance(node.get("validation_alias"), list):
            raise ValueError(
                "a field uses AliasChoices or AliasPath, which the advertised JSON Schema cannot describe; "
                "give it one plain alias"
            )


_MAPS: Final = frozenset({"dict"})
_FIELDS: Final = frozenset({"model-field", "typed-dict-field", "dataclass-arg-field"})
# Kinds whose values may be non-finite without the member counter noticing (it checks floats only).
_UNCOUNTED_NON_FINITE: Final = frozenset({"decimal", "complex"})
# Schemas of classes: pydantic-core builds them from the class's own prebuilt validator, with the
# class's own configuration, whatever the schema copy says.
_PREBUILT_CARRIERS: Final = frozenset({"model", "dataclass", "typed-dict"})


def _call_flags(schema: Any) -> dict[str, Any]:
    classes = list(_carrier_classes(schema))
    if not classes:
        return {}
    flags: dict[str, Any] = {"strict": True, "extra": "forbid"}
    for cls in classes:
        config: dict[str, Any] = getattr(cls, "model_config", None) or getattr(cls, "__pydantic_config__", None) or {}
        if config.get("validate_by_name") or config.get("populate_by_name") or config.get("validate_by_alias") is False:
            flags.update(by_alias=True, by_name=False)
    return flags


def _carrier_classes(schema: Any) -> Iterator[type]:
    """The classes whose prebuilt validators pydantic-core reuses inside `schema`."""
    for node in core_schema_nodes(schema):
        if node.get("type") in _PREBUILT_CARRIERS and "cls" in node:
            yield node["cls"]


def _contains_kind(schema: Any, kinds: frozenset[str]) -> bool:
    return any(node.get("type") in kinds for node in core_schema_nodes(schema))


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
