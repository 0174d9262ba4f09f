"""The trust boundary: an untrusted `Request` becomes an `Invocation` only through `Contract.prepare`."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, NewType, cast, final

import jiter
from pydantic import BaseModel
from pydantic_core import ValidationError

from ._decoder import StrictDecoder, fast_path
from ._definition import Definition
from ._errors import (
    InvalidInvocationError,
    InvalidOutputError,
    InvalidToolError,
    deferred_rejection,
)
from ._explain import NOT_UTF8, Explainer
from ._feedback import describe_schema_errors
from ._input import Continuation
from ._json import (
    MAX_INPUT_BYTES,
    is_array,
    is_blank,
    is_object,
    may_hold_non_finite,
    parse_checked,
)
from ._native import speedups
from ._output import Result
from ._schema import compile_schema, is_dict
from ._size import MAX_OUTPUT_BYTES

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
_new = object.__new__
_SURELY_SMALL: Final = MAX_INPUT_BYTES // 4


@final
class Invocation:
    """A complete JSON object admitted by one exact contract. Only `Contract.prepare` makes one."""

    # Module-private: `Contract.prepare` (the only maker) writes these and `take_decoded` hands out
    # `_decoded`; nothing outside this module touches them (it reads the public properties).
    __slots__ = ("_admission", "_arguments", "_contract", "_decoded")

    _admission: Admission
    _arguments: bytes | str
    _contract: Contract
    _decoded: list[Any]  # the admitted value, alone, until `take_decoded` pops it

    def __init__(self) -> None:
        raise TypeError("an Invocation is made only by Contract.prepare")

    @property
    def arguments(self) -> bytes:
        """The admitted JSON object, exactly as received, as UTF-8 bytes (``{}`` for blank arguments)."""
        raw = self._arguments
        return raw if raw.__class__ is bytes else raw.encode()  # type: ignore[union-attr]

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
        return self._admission.idempotency_key

    @property
    def continuation(self) -> Continuation | None:
        """The answer to this call's earlier input request, if this is a resumption."""
        return self._admission.continuation

    def __repr__(self) -> str:
        return f"Invocation(name={self._contract.name!r}, arguments={len(self._arguments)} bytes)"


@final
class Contract:
    """The immutable trust boundary of one tool: its frozen definition, compiled schema and validator.

    It keeps nothing executable, so holding a contract (or an invocation) never keeps a tool alive.
    It is safe to use from many threads at once.
    """

    __slots__ = (
        "__weakref__",
        "_admit",
        "_count",
        "_decoder",
        "_definition",
        "_explainer",
        "_flag_names",
        "_flag_values",
        "_flags",
        "_name",
        "_output_check",
        "_output_limit",
        "_scan_non_finite",
        "_schema",
        "_strings",
        "_validate",
    )

    def __init__(self, definition: Definition, input_validator: InputValidator | None = None) -> None:
        if not isinstance(definition, Definition):
            raise InvalidToolError(
                f"a contract needs a Definition, not {type(definition).__name__}: "
                "a tool's contract is its binding's, bind(tool).contract"
            )
        if input_validator is not None and not callable(input_validator):
            raise InvalidToolError("input validation: the declared validator is not callable")
        self._definition = definition
        self._output_limit = MAX_OUTPUT_BYTES  # `bind` sets the binding's own
        self._name = definition.name
        output_schema = definition.output_schema
        self._output_check: Any = (
            None if output_schema is None else compile_schema(output_schema, "output schema", InvalidToolError)
        )
        self._schema = definition.input_schema
        self._decoder: object = input_validator
        self._explainer = Explainer(self._name, self._schema, input_validator)
        self._count: Callable[[Any], int] = _uncounted
        self._strings: Callable[[Any], int] | None = None
        self._scan_non_finite = True
        self._flags: dict[str, Any] = {}
        self._validate: Callable[..., Any] | None = None
        self._admit: Callable[[bytes], Any]
        decoder = input_validator  # narrowed below on its own, so `input_validator` keeps its declared type
        if isinstance(decoder, StrictDecoder) and decoder.schema_json == definition.input_schema_json:
            # The decoder owns the schema it advertises: it is the whole schema check (fast path).
            plan = fast_path(input_validator)
            self._validate = decoder.validator.validate_json
            self._count = plan.counter or _uncounted
            self._strings = plan.string_colons
            self._scan_non_finite = plan.may_hold_non_finite
            self._flags = plan.call_flags
            self._admit = _never  # the fast path validates inline
        else:
            self._admit = self._schema_admission(input_validator)
        # The flags again as the C prepare passes them: keyword names, then their values.
        self._flag_names = tuple(self._flags) or None
        self._flag_values = tuple(self._flags.values())

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
        if request.__class__ is not Request or admission.__class__ is not Admission:
            raise _wrong_types(request, admission)
        if request.name != self._name:
            raise InvalidInvocationError(f"call name {_quote(request.name)} does not match bound tool {self._name!r}")
        raw: Any = request.arguments
        if raw.__class__ is str:
            # Validated as given (no copy); pydantic-core rejects lone surrogates in it. Characters
            # take 1 to 4 bytes, so only a long string needs encoding to measure it.
            if len(raw) > _SURELY_SMALL and len(raw.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES:
                raise self._explainer.oversize(len(raw.encode("utf-8", "surrogatepass")))
        else:
            if raw.__class__ is not bytes:
                raw = _as_bytes(raw)
            if len(raw) > MAX_INPUT_BYTES:
                raise self._explainer.oversize(len(raw))
        validate = self._validate
        if validate is None:
            raw = _unblanked(raw)
            value = self._admit(self._utf8(raw))
        else:
            try:
                value = validate(raw, **self._flags) if self._flags else validate(raw)
            except Exception as error:  # noqa: BLE001 - classified outside the except block, so no context leaks
                failure: Exception | None = error
                value = None  # never read: the failure is raised below
            else:
                failure = None
            if failure is not None:
                # Blank arguments mean {}: they never parse, so they are looked for only here (a
                # document that starts with "{" is not blank, so the common case skips the walk).
                if not raw or (raw[0] not in _OPEN_BRACE and is_blank(raw)):
                    return _prepare_python(self, Request(self._name, "{}"), admission)
                if isinstance(failure, ValidationError):
                    # The common rejection is explained only when the error is read, so raising costs
                    # little more than pydantic's own error. The failure's traceback only leads back
                    # here, to a frame that holds the failure: dropping it spares the collector a cycle.
                    failure.__traceback__ = None
                    raise deferred_rejection(_explain, self, raw, failure)
                raise self._explainer.rejected_after(raw, failure)
            self._check_members(raw, value)
        # The module-private slots of a new Invocation (pyright checks privacy per class, not per module).
        invocation = _new(Invocation)
        invocation._arguments = raw  # pyright: ignore[reportPrivateUsage]
        invocation._contract = self  # pyright: ignore[reportPrivateUsage]
        invocation._admission = admission  # pyright: ignore[reportPrivateUsage]
        invocation._decoded = [value]  # pyright: ignore[reportPrivateUsage]
        return invocation

    def _check_members(self, raw: str | bytes, value: Any) -> None:
        """Reject a schema-valid document that breaks I-JSON: a repeated member name, NaN or Infinity.

        Every object member needs one ":" outside strings, so when the decoded value accounts for as
        many members as there are ":" in the document, no object held a name twice and the full I-JSON
        parse could find nothing. Otherwise (or when NaN could hide in a position the count does not
        see) `_full_check` decides.
        """
        counted = self._count(value)
        colons = raw.count(":" if raw.__class__ is str else b":")  # type: ignore[arg-type]
        if colons > counted or (self._scan_non_finite and may_hold_non_finite(raw)):
            self._full_check(raw, value, counted, colons)

    def _full_check(self, raw: str | bytes, value: Any, counted: int, colons: int) -> None:
        """The full I-JSON parse of an admitted document, for when the member count cannot rule out a problem.

        First, ":" inside strings (a time, a URL) may account for the ":" bytes beyond the members: the
        decoded value's verbatim strings hold at most the ":" the document's strings held, written or
        escaped, so when the ":" bytes and escapes are no more than the members plus those, there is no
        room for a repeated name. A count (not negative) also means the counter saw every float and
        unconstrained value finite, so the parse skips its own walk for numbers too large for a double.
        """
        strings = self._strings
        if counted >= 0 and strings is not None and not (self._scan_non_finite and may_hold_non_finite(raw)):
            # Every \u003X escape is counted as a ":" that may hide there (more than \u003a and \u003A,
            # which only errs towards the full parse), and only a document with a backslash has one.
            if isinstance(raw, str):
                escaped = raw.count("\\u003") if "\\" in raw else 0
            else:
                escaped = raw.count(b"\\u003") if raw.find(b"\\") >= 0 else 0
            if colons + escaped <= counted + strings(value):
                return
        data = self._utf8(raw)
        document, problem = parse_checked(data, finite=counted < 0)
        if problem is not None:
            raise self._explainer.rejected(problem.message)
        # A negative count: a float the counter flagged (beyond 2**53, or not finite), or no counter at
        # all, which vouches for no float. Either way the integers are compared with the floats.
        if counted < 0 and _changed_integer(data, document, value):
            raise self._explainer.rejected(
                "a number field got an integer a double cannot hold exactly (more than 2**53 in "
                "magnitude): send a smaller integer, or write the number with a decimal point"
            )

    def validate_result(self, result: Result, /) -> None:
        """Apply the frozen output contract to a live or recovered result, or raise `InvalidOutputError`.

        A result that requests input has no output yet and passes. Otherwise, when the definition
        declares an output schema, the output must carry `details` that satisfy it.
        """
        if not isinstance(result, Result):
            raise InvalidOutputError(f"tool {self._name!r}: expected a Result, not {type(result).__name__}")
        check = self._output_check
        if result.input_request is not None or check is None:
            return
        details = result.output.details
        if details is None:
            raise InvalidOutputError(f"tool {self._name!r} declares an output schema, but the result has no details")
        value = jiter.from_json(details)
        if not check.is_valid(value):
            schema = self._definition.output_schema
            problems = describe_schema_errors(check.iter_errors(value), schema if isinstance(schema, dict) else {})
            raise InvalidOutputError(
                f"tool {self._name!r}: the result's details do not satisfy the output schema: " + "; ".join(problems)
            )

    # -- admission of hand-written schemas, compiled once at construction

    def _schema_admission(self, hook: InputValidator | None) -> Callable[[bytes], Any]:
        # Compiled now, whatever its keywords: every admission needs it (see `compile_schema`).
        validator = compile_schema(self._schema, "input schema", InvalidToolError, eager=True)
        explainer = self._explainer

        def admit(raw: bytes) -> Any:
            # One strict parse, numbers exact (Decimal), so the schema compares them exactly.
            value, problem = parse_checked(raw, exact=True)
            if problem is not None:
                raise explainer.rejected(problem.message)
            if not validator.is_valid(value):
                raise explainer.schema_rejected(validator, value, len(raw))
            if hook is None:
                return None
            try:
                return hook(raw)
            except Exception as error:  # noqa: BLE001 - classified outside the except block
                failure = error
            raise explainer.rejected_after(raw, failure)

        return admit

    # -- rejections: found here, explained by the contract's `Explainer`

    def _utf8(self, raw: str | bytes) -> bytes:
        if raw.__class__ is bytes:
            return raw  # pyright: ignore[reportReturnType] - pyright does not narrow `x.__class__ is T` (mypy does)
        try:
            return raw.encode()  # type: ignore[union-attr]
        except UnicodeEncodeError:
            pass  # raised below, outside the handler, so the input does not ride along as __context__
        raise self._explainer.rejected(NOT_UTF8)

    def _rejected_after(self, raw: str | bytes, failure: Exception) -> InvalidInvocationError:
        """The error raised for `raw`, which the input's validation failed with `failure` (the C prepare's too)."""
        return self._explainer.rejected_after(raw, failure)

    def __repr__(self) -> str:
        return f"Contract(name={self._name!r})"


def _explain(contract: Contract, raw: str | bytes, failure: Exception) -> tuple[str, BaseException | None]:
    """The message and cause of a rejection raised with its explanation pending (the C prepare's too)."""
    return contract._explainer.explain(raw, failure)  # pyright: ignore[reportPrivateUsage] - this module's class


def _uncounted(value: object) -> int:
    """The member count of a value whose schema has no counter: unknown, so the full parse always runs."""
    return -1


_OPEN_BRACE: Final = ("{", 0x7B)  # the first character of a non-blank document, as str and as bytes


def _unblanked(raw: str | bytes) -> str | bytes:
    """`raw`, or ``{}`` of its kind when it is blank."""
    if not raw or (raw[0] not in _OPEN_BRACE and is_blank(raw)):
        return "{}" if isinstance(raw, str) else b"{}"
    return raw


def _never(raw: bytes) -> Any:
    raise AssertionError("unreachable: typed contracts validate inline")  # pragma: no cover


def _changed_integer(raw: bytes, document: Any, value: Any) -> bool:
    """Whether an integer literal of `raw` (parsed as `document`) reached a float of `value` changed.

    Runs whenever the member counter does not vouch for every float (see `Contract._full_check`). The
    literal is read exactly; a float of the decoded value equal to an inexact integer literal's nearest
    double is that literal, changed (or, for a literal past a double's range, made infinite). Such a
    literal has at least 16 digits, so a document without a run of 16 is not walked at all.
    """
    if _LONG_DIGITS.search(raw) is None:
        return False
    changed: set[float] = set()
    _inexact_integers(document, changed)
    if not changed:
        return False
    floats: set[float] = set()
    _floats(value, floats, 0)
    return not changed.isdisjoint(floats)


_LONG_DIGITS: Final = re.compile(rb"[0-9]{16}")


def _inexact_integers(node: object, found: set[float]) -> None:
    if is_object(node):
        for member in node.values():
            _inexact_integers(member, found)
    elif is_array(node):
        for item in node:
            _inexact_integers(item, found)
    elif isinstance(node, int) and not isinstance(node, bool) and not -(2**53) <= node <= 2**53:
        try:
            nearest = float(node)
        except OverflowError:
            nearest = math.inf if node > 0 else -math.inf
        if nearest != node:
            found.add(nearest)


def _floats(node: object, found: set[float], depth: int) -> None:
    """Every float in a decoded value: in models, dataclasses, mappings and collections, at any depth."""
    if depth > 256:
        return
    if isinstance(node, float):
        found.add(node)
        return
    children: Iterable[object] = ()
    if isinstance(node, BaseModel):
        children = node.__dict__.values()
    elif is_dict(node):
        children = node.values()
    elif isinstance(node, list | tuple | set | frozenset):
        children = cast("Iterable[object]", node)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        children = [getattr(node, field.name) for field in dataclasses.fields(node)]
    for child in children:
        _floats(child, found, depth + 1)


def _as_bytes(raw: object) -> bytes:
    if isinstance(raw, bytearray | memoryview):
        return bytes(cast("bytearray | memoryview[int]", raw))  # isinstance cannot name a memoryview's item type
    kind = type(raw).__name__
    hint = ": pass the JSON text, json.dumps(arguments)" if isinstance(raw, dict | list) else ""
    raise InvalidInvocationError(f"Request.arguments must be str or bytes (JSON text), not {kind}{hint}")


def _wrong_types(request: object, admission: object) -> InvalidInvocationError:
    if not isinstance(request, Request):
        return InvalidInvocationError(
            f"Contract.prepare expected a Request, not {type(request).__name__}: "
            "pass Request(name=..., arguments=json_text)"
        )
    return InvalidInvocationError(f"Contract.prepare expected an Admission, not {type(admission).__name__}")


def _quote(name: object) -> str:
    text = repr(name)
    return text if len(text) <= 80 else text[:79] + "…"


_prepare_python: Final = Contract.prepare
"""The pure-Python `Contract.prepare`: the reference, and the whole of it without `scopetool._speedups`."""


def _install_speedups() -> bool:
    """Put the C `prepare` of `scopetool._speedups` on `Contract`, unless it is missing or turned off.

    The C method takes the common path itself and hands every other case to `_prepare_python`, so
    both admit and reject exactly the same requests. SCOPETOOL_PURE_PYTHON=1 keeps the pure one, and
    so does a second import of this module (``importlib.reload``): the C method is bound to the
    classes of the first.
    """
    extension = speedups()
    if extension is None or extension.installed():
        return False
    method = extension.install(
        contract=Contract,
        invocation=Invocation,
        request=Request,
        admission=Admission,
        error=InvalidInvocationError,
        default_admission=_NO_ADMISSION,
        validation_error=ValidationError,
        pure_prepare=_prepare_python,
        explain=_explain,
        rejected_after=Contract._rejected_after,  # pyright: ignore[reportPrivateUsage] - this module's class
        check_members=Contract._check_members,  # pyright: ignore[reportPrivateUsage] - this module's class
        surely_small=_SURELY_SMALL,
        max_bytes=MAX_INPUT_BYTES,
    )
    type.__setattr__(Contract, "prepare", method)
    return True


SPEEDUPS: Final = _install_speedups()
"""Whether `Contract.prepare` runs the C common path of `scopetool._speedups` (else it is `_prepare_python`)."""
