"""Parser differentials: what an authorizer reads with `json.loads` is what the tool receives, or no call."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import jiter
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from scopetool import (
    Authorization,
    AuthorizationError,
    Binding,
    Definition,
    Guard,
    Invocation,
    Output,
    Request,
    Result,
    Signature,
    bind,
    tool,
)

from ._support import RELIABLE, canonical, prepare


@dataclass
class Witness:
    """What the authorizer read and what the tool received, call by call."""

    read: list[Any] = field(default_factory=list)
    received: list[Any] = field(default_factory=list)

    def authorize(self, authorization: Authorization) -> bool:
        """Record the arguments as the standard json module reads them, and permit the call."""
        self.read.append(json.loads(authorization.arguments))
        return True


def _typed_any(witness: Witness) -> Binding:
    @tool
    def carry(payload: Any = None) -> str:
        """Carry an unconstrained value."""
        witness.received.append({"payload": payload})
        return "ok"

    return bind(carry, Guard(witness.authorize))


def _typed_fields(witness: Witness) -> Binding:
    class Fields(BaseModel):
        """Typed members beside an open one."""

        payload: Any = None
        number: float | None = None
        count: int | None = None
        text: str | None = None

    signature = Signature(Fields, str)

    class Typed:
        def definition(self) -> Definition:
            return signature.definition("typed")

        def input_validator(self) -> Any:
            return signature.input_validator()

        async def call(self, invocation: Invocation) -> Result:
            witness.received.append(signature.decode(invocation).model_dump(exclude_unset=True))
            return Result(output=Output.from_text("ok"))

    return bind(Typed(), Guard(witness.authorize))


def _hand_written(witness: Witness) -> Binding:
    class Raw:
        def definition(self) -> Definition:
            return Definition(name="raw", input_schema={"type": "object"})

        async def call(self, invocation: Invocation) -> Result:
            # The tool reads its bytes with another parser than the authorizer's: they must agree.
            witness.received.append(jiter.from_json(invocation.arguments))
            return Result(output=Output.from_text("ok"))

    return bind(Raw(), Guard(witness.authorize))


BUILDERS = {"typed_any": _typed_any, "typed_fields": _typed_fields, "hand_written": _hand_written}


def _numeric(value: Any) -> Any:
    """Like `canonical`, but an int and a float are the same when they are exactly the same number."""
    if isinstance(value, dict):
        return ("object", sorted((key, _numeric(member)) for key, member in value.items()))
    if isinstance(value, list):
        return ("array", [_numeric(item) for item in value])
    if isinstance(value, int | float) and not isinstance(value, bool):
        return ("number", Fraction(value), math.copysign(1.0, value) if isinstance(value, float) else 1.0)
    return canonical(value)


def _same(builder: str, read: Any, received: Any) -> bool:
    """Exactly the same JSON value; for typed members, the same number (a float member turns 1 into 1.0)."""
    if builder == "typed_fields":
        return _numeric(read) == _numeric(received)
    return canonical(read) == canonical(received)


async def _through(builder: str, arguments: str | bytes) -> tuple[bool, Witness]:
    """Run `arguments` through a guarded binding; whether it was admitted, and what was seen."""
    witness = Witness()
    binding = BUILDERS[builder](witness)
    outcome = prepare(binding.contract, arguments)
    if not isinstance(outcome, Invocation):
        assert witness.read == witness.received == []
        return False, witness
    await binding.call(outcome)
    return True, witness


def _nest(depth: int, opener: str = "[", closer: str = "]") -> str:
    return opener * depth + closer * depth


def _nest_objects(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _utf16(text: str, codec: str) -> bytes:
    return text.encode(codec)


DOC = '{"payload": 1}'
CASES: dict[str, tuple[str | bytes, bool | None]] = {
    # name: (arguments, expected admission: True, False, or None for "either, but consistently")
    "duplicate member": ('{"payload": 1, "payload": 2}', False),
    "duplicate nested member": ('{"payload": {"a": 1, "a": 2}}', False),
    "escaped duplicate member": ('{"payload": {"a": 1, "\\u0061": 2}}', False),
    "escaped duplicate top-level": ('{"pay\\u006coad": 1, "payload": 2}', False),
    "escaped solidus duplicate": ('{"payload": {"/": 1, "\\/": 2}}', False),
    "duplicate in array of objects": ('{"payload": [{"k": 1}, {"k": 2, "k": 3}]}', False),
    "lone high surrogate": ('{"payload": "\\ud800"}', False),
    "lone low surrogate": ('{"payload": "x\\udc00"}', False),
    "reversed surrogate pair": ('{"payload": "\\ude00\\ud83d"}', False),
    "surrogate then letter": ('{"payload": "\\ud800\\u0041"}', False),
    "lone surrogate in a key": ('{"payload": {"\\ud800": 1}}', False),
    "lone surrogate as str": ('{"payload": "\ud800"}', False),
    "CESU-8 surrogate bytes": (b'{"payload": "\xed\xa0\x80"}', False),
    "overlong UTF-8": (b'{"payload": "\xc0\xaf"}', False),
    "invalid UTF-8 byte": (b'{"payload": "\xff"}', False),
    "escaped surrogate pair": ('{"payload": "\\ud83d\\ude00"}', True),
    "escaped key of a typed member": ('{"\\u0070ayload": 1}', True),
    "2**53 + 1": ('{"payload": 9007199254740993}', True),
    "2**64": ('{"payload": 18446744073709551616}', True),
    "10**100": ('{"payload": 1' + "0" * 100 + "}", True),
    "4300 digits": ('{"payload": ' + "9" * 4300 + "}", None),
    "4301 digits": ('{"payload": ' + "9" * 4301 + "}", False),
    "big negative": ('{"payload": -' + "9" * 400 + "}", True),
    "2**53 as float member": ('{"number": 9007199254740992}', True),
    "-0": ('{"payload": -0}', True),
    "-0.0": ('{"payload": -0.0}', True),
    "-0e0": ('{"payload": -0e0}', True),
    "-0.0 as float member": ('{"number": -0.0}', True),
    "-0 as int member": ('{"count": -0}', True),
    "1e400": ('{"payload": 1e400}', False),
    "-1e400": ('{"payload": -1e400}', False),
    "1E400 in an array": ('{"payload": [1, 1E400]}', False),
    "1e400 as float member": ('{"number": 1e400}', False),
    "1e-400": ('{"payload": 1e-400}', True),
    "largest double": ('{"payload": 1.7976931348623157e308}', True),
    "just over the largest double": ('{"payload": 1.7976931348623159e308}', False),
    "smallest subnormal, rounding": ('{"payload": 2.4703282292062328e-324}', True),
    "many digits": ('{"payload": 0.1000000000000000055511151231257827021181583404541015625}', True),
    "long mantissa": ('{"payload": 123456789012345678901234567890.5}', True),
    "NaN": ('{"payload": NaN}', False),
    "Infinity": ('{"payload": Infinity}', False),
    "-Infinity": ('{"payload": -Infinity}', False),
    "UTF-8 BOM bytes": (b"\xef\xbb\xbf" + DOC.encode(), False),
    "BOM in str": ("\ufeff" + DOC, False),
    "BOM inside the document": ('{\ufeff"payload": 1}', False),
    "BOM inside a string": ('{"payload": "\ufeff"}', True),
    "UTF-16 LE with BOM": (_utf16(DOC, "utf-16"), False),
    "UTF-16 BE": (_utf16(DOC, "utf-16-be"), False),
    "UTF-16 LE": (_utf16(DOC, "utf-16-le"), False),
    "UTF-32": (_utf16(DOC, "utf-32"), False),
    "raw NUL in a string": ('{"payload": "a\x00b"}', False),
    "escaped NUL": ('{"payload": "a\\u0000b"}', True),
    "NUL after the document": (DOC + "\x00", False),
    "NUL before the document": ("\x00" + DOC, False),
    "escaped NUL in a key": ('{"payload": {"\\u0000": 1}}', True),
    "raw control character": ('{"payload": "\x1f"}', False),
    "line separator": ('{"payload": "\u2028"}', True),
    "no-break space around": ("\u00a0" + DOC, False),
    "form feed around": ("\x0c" + DOC, False),
    "trailing comma": ('{"payload": [1,],}', False),
    "comment": ('{"payload": 1 /* x */}', False),
    "single quotes": ("{'payload': 1}", False),
    "leading zero": ('{"payload": 01}', False),
    "leading plus": ('{"payload": +1}', False),
    "second document": (DOC + DOC, False),
    "depth 100": ('{"payload": ' + _nest(100) + "}", True),
    "depth 100 objects": ('{"payload": ' + _nest_objects(100) + "}", True),
    "depth 199": ('{"payload": ' + _nest(199) + "}", None),
    "depth 500": ('{"payload": ' + _nest(500) + "}", False),
    "depth 10000": ('{"payload": ' + _nest(10000) + "}", False),
    "depth 10000 objects": ('{"payload": ' + _nest_objects(10000) + "}", False),
}


@pytest.mark.parametrize("builder", sorted(BUILDERS))
@pytest.mark.parametrize("case", sorted(CASES))
async def test_authorizer_reads_what_the_tool_receives(builder: str, case: str) -> None:
    """Each hostile spelling is rejected, or the authorizer's json.loads reads exactly what the tool gets."""
    arguments, expected = CASES[case]
    admitted, witness = await _through(builder, arguments)
    members_only = builder == "typed_any" and isinstance(arguments, str) and '"payload"' not in arguments
    if expected is not None and not members_only:
        assert admitted is expected, f"{case}: expected {'admission' if expected else 'rejection'}"
    if admitted:
        assert len(witness.read) == len(witness.received) == 1
        read, received = witness.read[0], witness.received[0]
        assert _same(builder, read, received), f"{case}: read {read} but the tool got {received}"


async def test_every_builder_admits_a_plain_document() -> None:
    """The three guarded bindings admit and run an ordinary document (the cases above are not all rejections)."""
    for builder in BUILDERS:
        admitted, witness = await _through(builder, DOC)
        assert admitted
        assert witness.read == [{"payload": 1}]


def test_standard_json_module_reads_the_spellings_the_contract_rejects() -> None:
    """The differential is real: json.loads accepts what the contract refuses (so refusing matters)."""
    for case in ("duplicate member", "escaped duplicate member", "lone high surrogate", "1e400", "NaN"):
        arguments, _ = CASES[case]
        assert json.loads(arguments) is not None
    assert json.loads(CASES["UTF-16 LE with BOM"][0]) == {"payload": 1}
    assert json.loads(CASES["CESU-8 surrogate bytes"][0]) == {"payload": "\ud800"}


NUMBER = st.from_regex(r"\A-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,3})?\Z")


@RELIABLE
@given(number=NUMBER, builder=st.sampled_from(["typed_any", "hand_written"]))
async def test_numbers_read_alike(number: str, builder: str) -> None:
    """Any JSON number spelling is rejected (too large) or read by json.loads exactly as the tool gets it."""
    admitted, witness = await _through(builder, '{"payload": ' + number + "}")
    value = json.loads(number)
    if isinstance(value, float) and math.isinf(value):
        assert not admitted
    else:
        assert admitted
        assert _same(builder, witness.read[0], witness.received[0])


@RELIABLE
@given(text=st.text(max_size=12), ascii_only=st.booleans(), builder=st.sampled_from(sorted(BUILDERS)))
async def test_strings_read_alike(text: str, ascii_only: bool, builder: str) -> None:
    """A string is admitted exactly when it holds no lone surrogate, and read alike when admitted."""
    arguments = json.dumps({"payload": text, "text": text}, ensure_ascii=ascii_only)
    if builder == "typed_any":
        arguments = json.dumps({"payload": text}, ensure_ascii=ascii_only)
    admitted, witness = await _through(builder, arguments)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        assert not admitted
    else:
        assert admitted
        assert _same(builder, witness.read[0], witness.received[0])


@pytest.mark.parametrize("number", ["9007199254740993", "1" + "0" * 300, "-" + "9" * 20])
async def test_float_members_get_the_number_the_policy_read(number: str) -> None:
    """An integer in a float member is rejected, or reaches the tool as exactly the number json.loads read."""
    admitted, witness = await _through("typed_fields", '{"number": ' + number + "}")
    assert not admitted or _same("typed_fields", witness.read[0], witness.received[0])


@pytest.mark.parametrize("digits", [309, 400, 4000])
async def test_float_members_never_receive_infinity(digits: int) -> None:
    """An integer literal too large for a double, in a model's float member, is rejected like 1e400."""
    admitted, witness = await _through("typed_fields", '{"number": ' + "9" * digits + "}")
    assert not admitted, f"admitted; the tool received {witness.received}"


@pytest.mark.parametrize("number", ["1e1000000", "-1e1000000", "1E+9999999999"])
def test_huge_exponents_are_rejected_by_hand_written_schemas(number: str) -> None:
    """A number like 1e1000000 is rejected as too large for a double, as 1e400 is, never raised as decimal.Overflow."""
    contract = BUILDERS["hand_written"](Witness()).contract
    outcome = prepare(contract, '{"payload": ' + number + "}")  # decimal.Overflow propagates out of prepare
    assert not isinstance(outcome, Invocation)


def test_huge_exponents_are_rejected_by_typed_tools() -> None:
    """A typed tool rejects 1e1000000 like 1e400 (it parses numbers as doubles, not Decimals)."""
    contract = BUILDERS["typed_any"](Witness()).contract
    assert not isinstance(prepare(contract, '{"payload": 1e1000000}'), Invocation)
    assert isinstance(prepare(contract, '{"payload": 1e-1000000}'), Invocation)


async def test_function_float_parameters_reject_integers_beyond_a_double() -> None:
    """A float parameter of a @tool function rejects a 400-digit integer (its own config forbids infinity)."""

    @tool
    def scale(factor: float) -> str:
        """Scale."""
        return str(factor)

    outcome = prepare(bind(scale).contract, '{"factor": ' + "9" * 400 + "}")
    assert not isinstance(outcome, Invocation)


async def test_a_policy_that_cannot_read_the_arguments_stops_the_call() -> None:
    """Were an admitted document unreadable to the policy, the Guard fails closed: the tool does not run."""
    received: list[Any] = []

    def unreadable(authorization: Authorization) -> bool:
        raise ValueError("cannot read")

    @tool
    def carry(payload: Any = None) -> str:
        """Carry."""
        received.append(payload)
        return "ok"

    binding = bind(carry, Guard(unreadable))
    invocation = binding.contract.prepare(Request(name="carry", arguments=DOC))
    with pytest.raises(AuthorizationError):
        await binding.call(invocation)
    assert received == []
