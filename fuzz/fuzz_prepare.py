"""Coverage-guided fuzzing of `Contract.prepare`, the trust boundary, with atheris (libFuzzer).

Every input is offered, as bytes and as text, to five contracts (typed and hand-written schemas). The
harness fails on anything but admission or `InvalidInvocationError`, on a rejection without a bounded
model-facing message, and on an admission that the standard `json` module reads differently from the
tool, that the advertised schema (python-jsonschema, Draft 2020-12) forbids, or that holds a number
too large for a double. Where the C fast path of `scopetool._speedups` is installed, it also fails
when that path and the pure-Python `prepare` (the reference) admit, decode or reject differently.

    python fuzz/fuzz_prepare.py --short                  # CI: 60,000 inputs from a fixed seed, about a minute
    python fuzz/fuzz_prepare.py --long                   # an hour on both cores, new inputs kept in fuzz/work
    python fuzz/fuzz_prepare.py [libFuzzer flags] DIRS   # anything else goes to libFuzzer as is

Only scopetool's own Python is instrumented; jiter, pydantic-core and jsonschema-rs are Rust and are
exercised, not instrumented. Crashes are written to fuzz/artifacts/.
"""

from __future__ import annotations

import functools
import json
import math
import sys
import tempfile
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
ARTIFACTS = HERE / "artifacts"

SHORT_SEED = 1
SHORT_RUNS = 60_000
"""What --short runs (about a minute here): the same start and amount of work on every run and machine."""

_subjects: list[tuple[Any, Any, Any]] | None = None


def _build_subjects() -> list[tuple[Any, Any, Any]]:
    """The contracts under test, each with its python-jsonschema oracle and its decoder (or None)."""
    from jsonschema import Draft202012Validator, validators  # noqa: PLC0415 - imported once atheris instruments
    from pydantic import BaseModel, field_validator  # noqa: PLC0415

    from scopetool import Definition, InputRejection, Invocation, Result, Signature, bind, tool  # noqa: PLC0415

    class Address(BaseModel):
        street: str
        zip: int
        ratio: float = 0.0

    class Order(BaseModel):
        address: Address
        tags: set[str] = set()
        note: str | None = None
        amount: int = 1

        @field_validator("amount")
        @classmethod
        def positive(cls, value: int) -> int:
            if value <= 0:
                raise InputRejection("amount must be positive")
            return value

    @tool
    def carry(payload: Any = None, count: int = 0, ratio: float = 0.0, name: str = "") -> str:
        """Carry anything."""
        return "ok"

    order_signature = Signature(Order, str)

    class OrderTool:
        def definition(self) -> Definition:
            return order_signature.definition("order")

        def input_validator(self) -> Any:
            return order_signature.input_validator()

        async def call(self, invocation: Invocation) -> Result:
            return Result()

    class Raw:
        def __init__(self, name: str, schema: dict[str, Any]) -> None:
            self._definition = Definition(name=name, input_schema=schema)

        def definition(self) -> Definition:
            return self._definition

        async def call(self, invocation: Invocation) -> Result:
            return Result()

    closed = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "n": {"type": "integer", "minimum": 0, "maximum": 100},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "uniqueItems": True},
            "kind": {"enum": ["a", "b", 1]},
            "nested": {"$ref": "#/$defs/node"},
        },
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "additionalProperties": False,
    }
    bindings = [
        (bind(carry), carry.input_validator()),
        (bind(OrderTool()), order_signature.input_validator()),
        (bind(Raw("raw_open", {"type": "object"})), None),
        (bind(Raw("raw_closed", closed)), None),
        (bind(Raw("raw_any", {"type": "object", "additionalProperties": {"type": ["number", "string"]}})), None),
    ]
    # Hand-written schemas are checked on exact Decimal numbers; an integral one (1.0, 2E1) is an integer
    # to JSON Schema, which python-jsonschema's own check grants to floats and ints only.
    base = Draft202012Validator
    exact_validator = validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _integral))
    subjects = []
    for binding, decoder in bindings:
        schema = binding.definition().input_schema
        formats = decoder is None  # hand-written schemas have their formats asserted by the contract
        validator = exact_validator if decoder is None else base
        oracle = validator(schema, format_checker=base.FORMAT_CHECKER if formats else None)
        subjects.append((binding.contract, oracle, decoder))
    return subjects


def subjects() -> list[tuple[Any, Any, Any]]:
    """The contracts under test, built once."""
    global _subjects  # noqa: PLW0603 - built lazily so atheris can instrument the imports first
    if _subjects is None:
        _subjects = _build_subjects()
    return _subjects


def _exact(text: str) -> Decimal | float:
    """A JSON number as an exact Decimal (as hand-written schemas compare them), else as a float.

    Decimal refuses exponents beyond its range; those numbers are read as floats.
    """
    try:
        return Decimal(text)
    except InvalidOperation:
        return float(text)


def _integral(checker: Any, value: Any) -> bool:
    """JSON Schema's integer: a number without a fractional part, read as int, float or Decimal."""
    if isinstance(value, Decimal):
        return value.is_finite() and value == value.to_integral_value()
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_finite(member) for member in value.values())
    if isinstance(value, list):
        return all(_finite(item) for item in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return True


def _comparable(value: Any) -> Any:
    """A JSON value where equality is exact: type-tagged numbers, -0.0 apart from 0.0."""
    if isinstance(value, dict):
        return ("o", sorted((key, _comparable(member)) for key, member in value.items()))
    if isinstance(value, list):
        return ("a", [_comparable(item) for item in value])
    if isinstance(value, float):
        return ("f", value.hex())
    if isinstance(value, bool) or value is None:
        return ("l", value)
    return (type(value).__name__, value)


def check(data: bytes) -> None:
    """Offer `data` (as bytes and as text) to every subject and check every invariant of the outcome."""
    from scopetool import InvalidInvocationError, Request, classify_input_rejection  # noqa: PLC0415
    from scopetool._codec import NOTHING, take_decoded  # noqa: PLC0415
    from scopetool._contract import SPEEDUPS, _prepare_python  # noqa: PLC0415

    try:
        text = data.decode("utf-8", "surrogatepass")  # CESU-8 surrogates become lone surrogates in str
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
    texts: list[str | bytes] = [data, text]
    for contract, oracle, decoder in subjects():
        for arguments in texts:
            request = Request(name=contract.name, arguments=arguments)
            if SPEEDUPS:
                fast = _observed(contract.prepare, request, decoder)
                pure = _observed(functools.partial(_prepare_python, contract), request, decoder)
                if fast != pure:
                    raise AssertionError(
                        f"{contract.name}: the C and pure prepare disagree on {arguments!r}: {fast} != {pure}"
                    )
            try:
                invocation = contract.prepare(request)
            except ArithmeticError:
                if contract.name.startswith("raw_"):
                    continue  # documented bug: an exponent beyond Decimal's range (1e1000000) raises decimal.Overflow
                raise
            except InvalidInvocationError as error:
                rejection = classify_input_rejection(error)
                if rejection is None or not 0 < len(rejection.message) <= 4000:
                    raise AssertionError(f"{contract.name}: a rejection without a bounded message: {error!r}") from None
                continue
            read = json.loads(invocation.arguments)  # the standard library reads every admitted document
            if not isinstance(read, dict):
                raise AssertionError(f"{contract.name}: admitted a non-object {invocation.arguments!r}")
            if not _finite(read):
                raise AssertionError(f"{contract.name}: admitted a non-finite number {invocation.arguments!r}")
            checked = read if decoder is not None else json.loads(invocation.arguments, parse_float=_exact)
            if not oracle.is_valid(checked):
                errors = [error.message for error in oracle.iter_errors(checked)]
                if not _known_disagreement(contract.name, errors):
                    raise AssertionError(f"{contract.name}: admitted {invocation.arguments!r}, forbidden by {errors}")
            decoded = NOTHING if decoder is None else take_decoded(invocation, decoder)
            carried = contract.name == "carry" and decoded is not NOTHING and "payload" in read
            if carried and _comparable(decoded["payload"]) != _comparable(read["payload"]):
                raise AssertionError(f"json.loads read {read['payload']!r}, the tool gets {decoded['payload']!r}")
            if contract.name == "order" and decoded is not NOTHING and "ratio" in read["address"]:
                _same_number(read["address"]["ratio"], decoded.address.ratio)


def _observed(prepare: Any, request: Any, decoder: Any) -> tuple[Any, ...]:
    """What one prepare shows: the admitted bytes and decoded value, or the error's type and message."""
    from scopetool._codec import NOTHING, take_decoded  # noqa: PLC0415

    try:
        invocation = prepare(request)
    except Exception as error:  # noqa: BLE001 - every outcome is compared, not only rejections
        return ("raised", type(error), str(error))
    decoded = NOTHING if decoder is None else take_decoded(invocation, decoder)
    return ("admitted", invocation.arguments, type(decoded), repr(decoded))


def _same_number(read: Any, received: float) -> None:
    """The tool's float is the number json.loads read, but for the known integer-to-float bugs."""
    if isinstance(read, int):
        try:
            if float(read) != read:
                return  # documented bug: an integer a double cannot hold exactly reaches a float member rounded
        except OverflowError:
            return  # documented bug: an integer beyond a double's range reaches a model's float member as inf
    if read != received:
        raise AssertionError(f"json.loads read {read!r}, the tool gets {received!r}")


def _known_disagreement(name: str, errors: list[str]) -> bool:
    """The disagreements documented in docs/reliability.md (set duplicates, booleans as integer literals)."""
    return name == "order" and all("non-unique elements" in error for error in errors)


def test_one_input(data: bytes) -> None:
    """The libFuzzer entry point."""
    check(data)


def _libfuzzer_arguments(argv: list[str]) -> list[str]:
    """Turn --short / --long into libFuzzer flags; anything else passes through."""
    ARTIFACTS.mkdir(exist_ok=True)
    common = [f"-artifact_prefix={ARTIFACTS}/", "-timeout=10", "-rss_limit_mb=2048", "-max_len=4096"]
    if "--short" in argv:
        scratch = tempfile.mkdtemp(prefix="scopetool-fuzz-")  # new inputs go here, never into the repo
        # A fixed seed and number of inputs, not a time budget: a slow machine does the same work.
        return [
            argv[0],
            *common,
            f"-seed={SHORT_SEED}",
            f"-runs={SHORT_RUNS}",
            "-print_final_stats=1",
            scratch,
            str(CORPUS),
        ]
    if "--long" in argv:
        work = HERE / "work"
        work.mkdir(exist_ok=True)
        return [argv[0], *common, "-max_total_time=3600", "-jobs=2", "-workers=2", str(work), str(CORPUS)]
    return argv


def main() -> None:
    """Run the fuzzer."""
    import atheris  # noqa: PLC0415 - only the fuzzer needs it; the test suite replays the corpus without it

    with atheris.instrument_imports(include=["scopetool"]):
        import scopetool  # noqa: F401, PLC0415 - instrumented on import

        subjects()  # importing scopetool loads none of its modules: building the subjects does, instrumented
    atheris.Setup(_libfuzzer_arguments(sys.argv), test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
