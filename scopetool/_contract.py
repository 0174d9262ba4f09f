"""The trust boundary: an untrusted `Request` becomes an `Invocation` only through `Contract.prepare`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NewType, final

import jiter
from pydantic_core import ValidationError

from ._codec import InputDecoder
from ._definition import Definition
from ._errors import InputValidationError, InvalidInvocationError, InvalidToolError
from ._feedback import describe_pydantic_error, describe_schema_errors, format_rejection
from ._input import Continuation, compile_schema
from ._json import MAX_INPUT_BYTES, is_blank, syntax_problem
from ._rejection import InputRejection

__all__ = ["Admission", "Contract", "IdempotencyKey", "InputValidator", "Invocation", "Request"]

IdempotencyKey = NewType("IdempotencyKey", str)
"""Names one logical call across its replays and continuations, so a backend can deduplicate them.

It is opaque: a tool may forward it to third parties, so it never encodes runtime structure. The empty
key (or None) means the caller has no durable identity for the call.
"""

InputValidator = Callable[[bytes], Any]
"""An input admission rule beyond the schema: called with the argument bytes after the schema passed.

It returns the decoded value (kept for the call) or raises: `InputRejection` for model-correctable
input (its message is public), pydantic's `ValidationError` for field problems (reported like schema
problems); anything else is a validator defect, contained as `InputValidationError`. It must be
deterministic, bounded, free of side effects and safe to call concurrently.
"""


@final
@dataclass(frozen=True, slots=True)
class Request:
    """An untrusted proposal to call a tool: its name and its JSON arguments, exactly as the model sent them."""

    name: str
    """The tool the model asked for."""
    arguments: str | bytes = ""
    """The arguments as JSON text; blank means ``{}``."""


@final
@dataclass(frozen=True, slots=True)
class Admission:
    """What the driving runtime, never the model, asserts about one call.

    It is apart from `Request` because a model can forge arguments but must not choose the identity
    that external systems deduplicate on.
    """

    idempotency_key: IdempotencyKey | None = None
    """The logical call's identity, or None when the caller has none."""
    continuation: Continuation | None = None
    """The answer to the input request this same call committed; None starts a new call."""

    def __post_init__(self) -> None:
        if self.idempotency_key is not None and not isinstance(self.idempotency_key, str):
            raise TypeError(f"idempotency_key must be str or None, not {type(self.idempotency_key).__name__}")
        if self.continuation is not None and not isinstance(self.continuation, Continuation):
            raise TypeError(f"continuation must be a Continuation or None, not {type(self.continuation).__name__}")


_NO_ADMISSION: Final = Admission()
NOTHING: Final = object()
"""Returned by `take_decoded` when there is no admitted value to hand out."""


@final
class Invocation:
    """A complete JSON object admitted by one exact contract. Only `Contract.prepare` makes one."""

    __slots__ = ("_arguments", "_continuation", "_contract", "_decoded", "_decoder", "_key")

    _arguments: bytes
    _continuation: Continuation | None
    _contract: Contract
    _decoded: list[Any]
    _decoder: object
    _key: IdempotencyKey | None

    def __init__(self) -> None:
        raise TypeError("an Invocation is made only by Contract.prepare")

    @property
    def arguments(self) -> bytes:
        """The admitted JSON object, exactly as received (``{}`` for blank arguments)."""
        return self._arguments

    @property
    def name(self) -> str:
        """The name of the tool that admitted this invocation."""
        return self._contract.name

    @property
    def definition(self) -> Definition:
        """The frozen definition of the contract that admitted this invocation."""
        return self._contract.definition()

    @property
    def contract(self) -> Contract:
        """The exact contract that admitted this invocation."""
        return self._contract

    @property
    def idempotency_key(self) -> IdempotencyKey | None:
        """The driver's identity for this logical call, if any."""
        return self._key

    @property
    def continuation(self) -> Continuation | None:
        """The answer to this call's earlier input request, if this is a resumption."""
        return self._continuation

    def __repr__(self) -> str:
        return f"Invocation(name={self._contract.name!r}, arguments={len(self._arguments)} bytes)"


@final
class Contract:
    """The immutable trust boundary of one tool: its frozen definition, compiled schema and validator.

    It keeps nothing executable, so holding a contract (or an invocation) never keeps a tool alive.
    It is safe to use from many threads at once.
    """

    __slots__ = ("__weakref__", "_admit", "_definition", "_name", "_schema")

    def __init__(self, definition: Definition, input_validator: InputValidator | None = None) -> None:
        if not isinstance(definition, Definition):
            raise InvalidToolError(f"a contract needs a Definition, not {type(definition).__name__}")
        if input_validator is not None and not callable(input_validator):
            raise InvalidToolError("input validation: the declared validator is not callable")
        self._definition = definition
        self._name = definition.name
        self._schema = definition.input_schema
        if isinstance(input_validator, InputDecoder) and input_validator.schema_json == definition.input_schema_json:
            self._admit = self._typed_admission(input_validator)
        else:
            self._admit = self._schema_admission(input_validator)

    @property
    def name(self) -> str:
        """The frozen tool name."""
        return self._name

    def definition(self) -> Definition:
        """The frozen definition (immutable; its accessors hand out fresh copies)."""
        return self._definition

    def prepare(self, request: Request, admission: Admission = _NO_ADMISSION, /) -> Invocation:
        """Admit an untrusted request, or raise `InvalidInvocationError`.

        Checks, in order: the name is exactly this tool's; the arguments are at most `MAX_INPUT_BYTES`;
        blank arguments mean ``{}``; the arguments are one RFC 7493 (I-JSON) object (valid UTF-8, no
        lone surrogates, no duplicate member names at any depth, no NaN or Infinity, nothing after it);
        the frozen input schema holds, strictly (no unknown members, no coercion); the input's own
        validation hook accepts it. Where the model can correct the input, the error's cause is an
        `InputRejection` (see `classify_input_rejection`) whose message is written for the model.
        Nothing is executed.
        """
        if request.__class__ is not Request:
            raise InvalidInvocationError(f"tool: invalid invocation: expected a Request, not {type(request).__name__}")
        if admission.__class__ is not Admission:
            raise InvalidInvocationError("tool: invalid invocation: expected an Admission")
        if request.name != self._name:
            raise InvalidInvocationError(
                f"tool: invalid invocation: call name {_quote(request.name)} does not match bound tool {self._name!r}"
            )
        raw = request.arguments
        if raw.__class__ is str:
            if len(raw) > MAX_INPUT_BYTES:  # type: ignore[arg-type]
                raise self._oversize(len(raw))  # type: ignore[arg-type]
            try:
                raw = raw.encode("utf-8")  # type: ignore[union-attr]
            except UnicodeEncodeError:
                raise self._rejected("the arguments are not valid UTF-8 (they hold a lone surrogate)") from None
        elif raw.__class__ is not bytes:
            raw = self._as_bytes(raw)
        if len(raw) > MAX_INPUT_BYTES:
            raise self._oversize(len(raw))
        if not raw or raw[0] != 0x7B and is_blank(raw):  # 0x7B is "{": the common case skips the blank check
            raw = b"{}"
        decoder, decoded = self._admit(raw)
        invocation = object.__new__(Invocation)
        invocation._arguments = raw  # type: ignore[assignment]
        invocation._contract = self
        invocation._key = admission.idempotency_key
        invocation._continuation = admission.continuation
        invocation._decoder = decoder
        invocation._decoded = [decoded]
        return invocation

    # -- admission strategies, chosen once at construction

    def _typed_admission(self, decoder: InputDecoder[Any]) -> Callable[[bytes], tuple[object, Any]]:
        validate = decoder.__call__
        counter = decoder.counter
        non_finite = decoder.may_hold_non_finite
        fail = self._rejected_after

        def admit(raw: bytes) -> tuple[object, Any]:
            try:
                value = validate(raw)
            except Exception as error:  # noqa: BLE001 - classified below, outside the except block
                failure: Exception = error
            else:
                # Duplicate members: every object member needs one ":" outside strings, so when the
                # decoded value accounts for as many members as there are ":" bytes, no object held a
                # name twice and the full I-JSON parse would find nothing. Otherwise it decides.
                if (
                    counter is None
                    or raw.count(b":") > counter(value)
                    or (non_finite and (b"NaN" in raw or b"Infinity" in raw))
                ):
                    problem = syntax_problem(raw)
                    if problem is not None:
                        raise self._rejected(problem.message)
                return decoder, value
            raise fail(raw, failure)

        return admit

    def _schema_admission(self, hook: InputValidator | None) -> Callable[[bytes], tuple[object, Any]]:
        try:
            validator = compile_schema(self._schema, "input schema", InvalidToolError)
        except RecursionError:
            raise InvalidToolError("input schema: nested too deeply") from None
        schema = self._schema
        fail = self._rejected_after

        def admit(raw: bytes) -> tuple[object, Any]:
            try:
                value = jiter.from_json(raw, allow_inf_nan=False, catch_duplicate_keys=True)
            except ValueError:
                problem = syntax_problem(raw)
                raise self._rejected(problem.message if problem else "the arguments are not valid JSON") from None
            if not isinstance(value, dict):
                problem = syntax_problem(raw)
                raise self._rejected(problem.message if problem else "the arguments must be a JSON object")
            if not validator.is_valid(value):
                raise self._rejected_lines(describe_schema_errors(validator.iter_errors(value), schema))
            if hook is None:
                return None, None
            try:
                decoded = hook(raw)
            except Exception as error:  # noqa: BLE001 - classified below, outside the except block
                failure: Exception = error
            else:
                return hook, decoded
            raise fail(raw, failure)

        return admit

    # -- rejections

    def _rejected_after(self, raw: bytes, failure: Exception) -> InvalidInvocationError:
        problem = syntax_problem(raw)
        if problem is not None:
            return self._rejected(problem.message)
        if isinstance(failure, InputRejection):
            return _invalid(failure)
        if isinstance(failure, ValidationError):
            return self._rejected_lines(describe_pydantic_error(failure, raw, self._schema), cause=failure)
        error = InvalidInvocationError(f"tool: invalid invocation: the input validator of {self._name!r} failed")
        error.__cause__ = InputValidationError(failure)
        return error

    def _rejected(self, problem: str) -> InvalidInvocationError:
        return self._rejected_lines([problem])

    def _rejected_lines(self, problems: list[str], cause: BaseException | None = None) -> InvalidInvocationError:
        return _invalid(InputRejection(format_rejection(self._name, problems), cause=cause))

    def _oversize(self, size: int) -> InvalidInvocationError:
        return self._rejected(f"the arguments are over {size - 1} bytes; the limit is {MAX_INPUT_BYTES} bytes")

    def _as_bytes(self, raw: object) -> bytes:
        if isinstance(raw, bytearray | memoryview):
            return bytes(raw)
        raise InvalidInvocationError(
            f"tool: invalid invocation: arguments must be str or bytes, not {type(raw).__name__}"
        )

    def __repr__(self) -> str:
        return f"Contract(name={self._name!r})"


def take_decoded(invocation: Invocation, decoder: object) -> Any:
    """The value `decoder` produced when admitting `invocation`, handed out once; `NOTHING` otherwise.

    Handing it out once means no call can change what another call of the same invocation sees:
    later calls decode the arguments afresh.
    """
    if invocation._decoder is not decoder:
        return NOTHING
    try:
        return invocation._decoded.pop()
    except IndexError:
        return NOTHING


def _invalid(rejection: InputRejection) -> InvalidInvocationError:
    error = InvalidInvocationError(f"tool: invalid invocation: arguments: {rejection.message}")
    error.__cause__ = rejection
    return error


def _quote(name: object) -> str:
    text = repr(name)
    return text if len(text) <= 80 else text[:79] + "…"
