"""The strict decoder admission runs, and the plan `Contract.prepare` reads off it to admit without a second parse.

A `StrictDecoder` is the part of a typed tool's `InputDecoder` that `Contract` sees: the pydantic-core
validators compiled once from the tool's core schema, the JSON Schema they enforce, and the counters
that let `prepare` vouch for I-JSON without parsing the arguments again. It knows nothing of
invocations: handing an admitted value to the tool is `InputDecoder`'s (see `scopetool._codec`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, Generic, NamedTuple, TypeVar

from pydantic_core import CoreSchema, SchemaValidator, ValidationError

from ._feedback import MAX_DESCRIBED
from ._json import canonical_json
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

__all__ = ["FastPath", "StrictDecoder", "fast_path"]

T = TypeVar("T")


class StrictDecoder(Generic[T]):
    """What admission runs of an `InputDecoder`: the strict validators compiled once from a core schema.

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
    assert isinstance(decoder, StrictDecoder)
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
