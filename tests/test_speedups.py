"""`scopetool._speedups`: the C fast path of `Contract.prepare` behaves exactly as the pure-Python one.

`scan` (asked only about text a JSON parser accepted) never vouches for JSON that strict I-JSON reading
refuses, and vouches for the plain documents; the C `prepare` admits and rejects exactly what
`_prepare_python` does, with the same messages and causes, and leaks nothing. The environment switches
are checked in fresh interpreters.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import traceback
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import jiter
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError, field_validator

from scopetool import (
    MAX_INPUT_BYTES,
    Admission,
    Contract,
    Definition,
    InputRejection,
    InvalidInvocationError,
    Invocation,
    Request,
    Result,
    bind,
    classify_input_rejection,
    tool,
)
from scopetool import _contract as contract_module
from scopetool._codec import NOTHING, take_decoded
from scopetool._contract import SPEEDUPS, _prepare_python

if SPEEDUPS:
    from scopetool._speedups import scan, validate

ROOT = Path(__file__).resolve().parents[1]
SECRET = "s3cr3t-SPEEDUPS-4a1f"
"""Planted in rejected values: no model-facing message may repeat it."""

needs_speedups = pytest.mark.skipif(
    not SPEEDUPS,
    reason="the C fast path is not installed (scopetool._speedups is not built, or SCOPETOOL_PURE_PYTHON=1)",
)
SETTINGS = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# ---------------------------------------------------------------------------------------------------
# JSON documents as written: a tree of objects (member names as written, quotes included), arrays and
# tokens (any other text, written verbatim), rendered with chosen white space.


@dataclass(frozen=True)
class Obj:
    members: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class Arr:
    items: tuple[Node, ...]


Node = Obj | Arr | str

JSON_SPACE = st.text(alphabet=" \t\n\r", max_size=2)
ODD_SPACE = st.sampled_from(["\xa0", "\x0b", "\x0c", "\x85", "\u2028", "\u3000", "\ufeff", "\x00", "\x1c"])


def one_in(draw: st.DrawFn, odds: int) -> bool:
    """True about once in `odds` draws (odds >= 3); a middle value, as Hypothesis favours a range's ends."""
    return draw(st.integers(1, odds)) == odds // 2 + 1


@st.composite
def rendered(draw: st.DrawFn, node: Node, odd_space: bool = True) -> str:
    """`node` as JSON text, with JSON white space between tokens (and, rarely, other white space)."""

    def space() -> str:
        if odd_space and one_in(draw, 200):
            return draw(ODD_SPACE)
        return draw(JSON_SPACE)

    def write(node: Node) -> str:
        if isinstance(node, Obj):
            parts = [f"{space()}{name}{space()}:{space()}{write(value)}{space()}" for name, value in node.members]
            return "{" + (",".join(parts) or space()) + "}"
        if isinstance(node, Arr):
            return "[" + (",".join(space() + write(item) + space() for item in node.items) or space()) + "]"
        return node

    return space() + write(node) + space()


def spellings(name: str) -> list[str]:
    """Ways to write one member name: as is, ASCII-escaped, its first character as a \\u escape."""
    written = ['"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"', json.dumps(name)]
    if "/" in name:
        written.append('"' + name.replace("/", "\\/") + '"')
    if name:
        units = name[0].encode("utf-16-be")
        escaped = "".join(f"\\u{int.from_bytes(units[k : k + 2], 'big'):04x}" for k in range(0, len(units), 2))
        written += ['"' + escaped + name[1:] + '"', '"' + escaped.upper().replace("\\U", "\\u") + name[1:] + '"']
    return list(dict.fromkeys(written))


# Documents scan must vouch for: objects of distinct, unescaped names; short plain numbers; strings
# without escapes; JSON white space only.
plain_text = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters='"\\' + "".join(map(chr, range(32)))),
    max_size=4,
)
plain_numbers = st.one_of(
    st.integers(-(10**15) + 1, 10**15 - 1).map(str),
    st.tuples(st.booleans(), st.integers(0, 10**7), st.integers(0, 10**7 - 1)).map(
        lambda parts: f"{'-' if parts[0] else ''}{parts[1]}.{parts[2]:07d}"
    ),
    st.sampled_from(["-0", "-0.0", "0.000000000001"]),
)
plain_scalars = st.one_of(
    plain_numbers, plain_text.map(lambda text: f'"{text}"'), st.sampled_from(["true", "false", "null"])
)

NAMES = ["a", "b", "ab", "ba", "A", "é", "€", "😀", "a:b", "a/b", ""]


@st.composite
def written_names(draw: st.DrawFn) -> str:
    """A name from a small alphabet (so objects often repeat one), now and then escaped."""
    ways = spellings(draw(st.sampled_from(NAMES)))
    return draw(st.sampled_from(ways)) if one_in(draw, 6) else ways[0]


number_tokens = st.one_of(
    st.integers().map(str),
    st.integers(-(10**16), 10**16).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
    st.sampled_from(
        [
            "0", "-0", "-0.0", "0.5", "123456789012345", "-123456789012345", "1234567890123456",
            "12345678.9012345", "1234567.890123456", "0.00000000000001", "0.000000000000001", "1e5",
            "1E+5", "1e-5", "-1.5E-300", "1e400", "NaN", "Infinity", "-Infinity", "nan", "01", "-01",
            "1.", ".5", "+1", "-", "1e", "0x10", "1.2.3", "--1", "\u0661",
        ]
    ),
)  # fmt: skip
string_tokens = st.one_of(
    st.text(max_size=6).map(lambda text: json.dumps(text, ensure_ascii=False)),
    st.text(max_size=6).map(json.dumps),
    st.text(max_size=6).map(lambda text: '"' + text.replace('"', "").replace("\\", "") + '"'),
    st.sampled_from(
        [
            '"\\ud800"', '"\\udc00"', '"\\ud83d\\ude00"', '"\\uD83D\\uDE00"', '"\\ud83d"', '"\\ud800\\u0041"',
            '"\\ud800\\ud800"', '"x\\ud83d\\"', '"\\x"', '"\\u12"', '"\\u12G4"', '"\\U0041"', '"a\x01"',
            '"\\/"', '"\\u0000"', '"\x7f"', '"\\"', '"\ud800"', '"\udc00x"', '"\u2028"', '"\\b\\f\\n\\r\\t"',
        ]
    ),
)  # fmt: skip
literal_tokens = st.sampled_from(["true", "false", "null", "tru", "nul", "True", "falsey", "none"])
odd_scalars = st.one_of(number_tokens, string_tokens, literal_tokens)
# Mostly tokens scan vouches for, so a document is often one flaw away from being vouched for.
scalar_tokens = st.integers(1, 10).flatmap(
    lambda pick: odd_scalars if pick == 6 else st.one_of(plain_scalars, st.text(max_size=4).map(json.dumps))
)
nodes: st.SearchStrategy[Node] = st.recursive(
    scalar_tokens,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda items: Arr(tuple(items))),
        st.lists(st.tuples(written_names(), children), max_size=5).map(lambda members: Obj(tuple(members))),
    ),
    max_leaves=16,
)
WIDE_NAMES = [f'"{a}{b}"' for a in "abcdefgh" for b in "wxyz"]
wide_objects = st.one_of(
    st.lists(st.tuples(st.sampled_from(WIDE_NAMES), scalar_tokens), min_size=17, max_size=40),
    st.lists(st.tuples(st.sampled_from(WIDE_NAMES), scalar_tokens), min_size=17, max_size=32, unique_by=lambda m: m[0]),
).map(lambda members: Obj(tuple(members)))
top_nodes = st.one_of(
    st.lists(st.tuples(written_names(), nodes), max_size=6).map(lambda members: Obj(tuple(members))),
    wide_objects,
    nodes,
)
BAD_UTF8 = [b"\xff", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"]
BAD_UTF8 += [b"\x80", b"\xf0\x9f\x98", b"\xf8\x88\x80\x80\x80", b"\xe2\x28\xa1"]


@dataclass(frozen=True)
class Document:
    text: str
    data: bytes


@st.composite
def messy_documents(draw: st.DrawFn) -> Document:
    """A near-JSON document (often a valid object, often not) as text and as bytes."""
    text = draw(top_nodes.flatmap(rendered))
    how = draw(st.integers(0, 16))
    if how == 12:
        text += draw(st.sampled_from(["x", "{}", ",", "]", "\x00", " 1", "\ufeff"]))
    elif how == 13:
        text = "\ufeff" + text
    elif how == 14 and text:
        text = text[: draw(st.integers(0, len(text) - 1))]
    elif how == 15:
        at = draw(st.integers(0, len(text)))
        text = (
            text[:at] + draw(st.sampled_from(['"', "\\", "{", "}", ":", ",", "\x01", "\ud800", "é", "1"])) + text[at:]
        )
    elif how == 16 and any(char in "{}[]" for char in text):  # one bracket closes the wrong container
        at = draw(st.sampled_from([at for at, char in enumerate(text) if char in "{}[]"]))
        text = text[:at] + draw(st.sampled_from("{}[]")) + text[at + 1 :]
    data = text.encode("utf-8", "surrogatepass")
    quotes = [at + 1 for at, byte in enumerate(data) if byte == 0x22]
    if quotes and one_in(draw, 8):  # invalid UTF-8 right inside a string
        at = draw(st.sampled_from(quotes))
        data = data[:at] + draw(st.sampled_from(BAD_UTF8)) + data[at:]
    return Document(text, data)


def accepted(document: str | bytes) -> bool:
    """Whether a JSON parser accepts `document` as pydantic-core's does: NaN, Infinity and repeated names pass.

    `scan` answers only for such text (its documented precondition: prepare asks it only after pydantic-core
    accepted the arguments); for anything else its answer means nothing.
    """
    try:
        data = document if isinstance(document, bytes) else document.encode("utf-8")
        jiter.from_json(data)
    except ValueError:  # UnicodeEncodeError included
        return False
    return True


def refusal(document: str | bytes) -> str | None:
    """Why `scan` must not vouch for `document`: strict I-JSON refuses it, or a number has an exponent or 16 digits."""
    if isinstance(document, bytes):
        try:
            text = document.decode("utf-8")
        except UnicodeDecodeError:
            return "invalid UTF-8"
    else:
        text = document
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return "a surrogate code point in a str"
    try:
        jiter.from_json(data, catch_duplicate_keys=True, allow_inf_nan=False)
    except ValueError as error:
        return f"strict parsing refuses it: {error}"
    problems: list[str] = []

    def members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        names = [name for name, _ in pairs]
        if len(set(names)) != len(names):
            problems.append(f"a repeated member name among {names!r}")
        return dict(pairs)

    def number(literal: str) -> int:
        if "e" in literal or "E" in literal or sum(char.isdigit() for char in literal) > 15:
            problems.append(f"the number {literal} has an exponent or more than 15 digits")
        return 0

    value = json.loads(text, object_pairs_hook=members, parse_int=number, parse_float=number)
    if not isinstance(value, dict):
        problems.append("not an object")
    return problems[0] if problems else None


def plain_object(children: st.SearchStrategy[Node], min_size: int = 0, max_size: int = 5) -> st.SearchStrategy[Obj]:
    """Objects of distinct, unescaped member names."""
    return st.dictionaries(plain_text, children, min_size=min_size, max_size=max_size).map(
        lambda members: Obj(tuple((f'"{name}"', value) for name, value in members.items()))
    )


plain_nodes: st.SearchStrategy[Node] = st.recursive(
    plain_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda items: Arr(tuple(items))), plain_object(children)
    ),
    max_leaves=24,
)
# A member whose name (five characters or more) no plain name repeats, holding a character that sets
# the str's kind: one byte (ASCII, Latin-1), two bytes (BMP) or four (astral).
KIND_MEMBERS = [("", "ascii"), ("é", "latin-1"), ("€", "bmp"), ("😀", "astral")]
plain_documents = st.tuples(
    st.one_of(plain_object(plain_nodes, max_size=8), plain_object(plain_scalars, min_size=17, max_size=48)),
    st.sampled_from(KIND_MEMBERS),
).map(lambda pair: Obj((*pair[0].members, (f'"kind-{pair[1][1]}"', f'"{pair[1][0]}"'))))


def objects_in(node: Node) -> Iterator[Obj]:
    """Every object in `node` with at least one member, outermost first."""
    if isinstance(node, Obj):
        if node.members:
            yield node
        for _, value in node.members:
            yield from objects_in(value)
    elif isinstance(node, Arr):
        for item in node.items:
            yield from objects_in(item)


def replaced(node: Node, old: Obj, new: Obj) -> Node:
    """`node` with the object `old` (by identity) replaced by `new`."""
    if node is old:
        return new
    if isinstance(node, Obj):
        return Obj(tuple((name, replaced(value, old, new)) for name, value in node.members))
    if isinstance(node, Arr):
        return Arr(tuple(replaced(item, old, new) for item in node.items))
    return node


@st.composite
def with_duplicate(draw: st.DrawFn, document: Obj) -> Obj:
    """`document` with one of its objects, at any depth, holding one of its member names twice."""
    target = draw(st.sampled_from(list(objects_in(document))))
    name, _ = draw(st.sampled_from(target.members))
    members = list(target.members)
    members.insert(draw(st.integers(0, len(members))), (name, draw(plain_scalars)))
    result = replaced(document, target, Obj(tuple(members)))
    assert isinstance(result, Obj)
    return result


def both(text: str) -> list[str | bytes]:
    """`text` as a str and as UTF-8 bytes."""
    return [text, text.encode()]


def nested(depth: int, opener: str) -> str:
    """An object whose deepest container is `depth` levels down (the object itself is level 1)."""
    if opener == "[":
        return '{"a":' + "[" * (depth - 1) + "0" + "]" * (depth - 1) + "}"
    return '{"a":' * depth + "0" + "}" * depth


FORTY = [f'"k{index}":{index}' for index in range(40)]
VOUCHED = {
    "flat": '{"a":1,"b":"x","c":true,"d":false,"e":null,"f":-0.5}',
    "empty": "{}",
    "JSON white space around and inside": ' \t\r\n{ "a" : [ 1 , { } ] }\n ',
    "same name in sibling objects": '{"a":[{"x":1},{"x":2}],"b":{"x":3,"a":4}}',
    "same name in parent and child": '{"a":{"a":{"a":1}},"b":1}',
    "40 distinct names": "{" + ",".join(FORTY) + "}",
    "prefix names": '{"a":1,"ab":2,"abc":3,"b":4,"":5}',
    "valid surrogate pair": '{"a":"\\ud83d\\ude00"}',
    "simple escapes in a value": '{"a":"x\\n\\"y\\\\ \\/ \\u0041"}',
    "colons and braces in strings": '{"a":"x:y}{,","b":"[:]"}',
    "15 digits": '{"a":123456789012345,"b":-1234567.89012345,"c":-0,"d":0.5}',
    "Latin-1 names": '{"é":1,"e":2,"ÿ":3}',
    "BMP names": '{"€":1,"é":2,"中":3}',
    "astral names": '{"😀":1,"😁":2,"€":3}',
    "depth 100 in arrays": nested(100, "["),
    "depth 100 in objects": nested(100, "{"),
    "DEL and U+2028 raw in a string": '{"a":"\x7f\u2028"}',
    "the ends of each UTF-8 width": '{"\x80\u07ff":"\u0800\ud7ff\ue000\uffff","\U00010000":"\U0010ffff"}',
}
# JSON (as pydantic-core reads it) that scan must not vouch for.
NOT_VOUCHED = {
    "duplicate": '{"a":1,"a":2}',
    "duplicate after a nested object": '{"a":{"b":1},"a":2}',
    "duplicate deep inside arrays": '{"a":[1,[{"b":[{"c":1,"d":2,"c":3}]}]]}',
    "duplicate of an escaped name": '{"a":1,"\\u0061":2}',
    "escaped name alone": '{"\\u0061":1}',
    "duplicate among 40 names, last": "{" + ",".join([*FORTY, '"k0":0']) + "}",
    "duplicate among 40 names, middle": "{" + ",".join([*FORTY[:20], '"k39":0', *FORTY[20:]]) + "}",
    "duplicate non-ASCII names": '{"é":1,"€":2,"é":3}',
    "duplicate astral names": '{"😀":1,"€":2,"😀":3}',
    "NaN": '{"a":NaN}',
    "Infinity": '{"a":Infinity}',
    "-Infinity": '{"a":[-Infinity]}',
    "exponent": '{"a":1e5}',
    "capital exponent": '{"a":1E5}',
    "negative exponent": '{"a":1.5e-3}',
    "16 digits": '{"a":1234567890123456}',
    "16 digits with a fraction": '{"a":12345678.90123456}',
    "16 digits after 0.": '{"a":0.000000000000001}',
    "an array": "[1]",
    "a string": '"a"',
    "null": "null",
    "a number": " 1 ",
}
# Not JSON: scan's answer means nothing here, but it must give one (reading nothing outside the text).
NOT_JSON: dict[str, str | bytes] = {
    "trailing garbage": '{"a":1} x',
    "trailing comma": '{"a":1,}',
    "missing colon": '{"a" 1}',
    "two objects": '{"a":1}{"b":2}',
    "leading BOM": '\ufeff{"a":1}',
    "lone surrogate escape": '{"a":"\\ud800"}',
    "high surrogate then a private-use escape": '{"a":"\\ud800\\ue000"}',
    "lone surrogate in a str": '{"\udc00":"\ud800"}',
    "invalid UTF-8": b'{"a":"\xff\xc0\x80\xed\xa0\x80\xf4\x90\x80\x80"}',
    "truncated UTF-8 at the end": b'{"a":"\xe2\x82',
    "truncated escape at the end": '{"a":"\\u12',
    "backslash at the end": '{"a":"\\',
    "minus at the end": '{"a":-',
    "truncated literal": '{"a":tru',
    "empty string": "",
    "white space only": " \t\n",
    "leading zero": '{"a":01}',
    "bare fraction dot": '{"a":1.}',
    "raw control character": '{"a":"x\x01"}',
    "an array closed as an object": '{"a":[1}}',
    "closing without opening": "}}}}",
    "opening only": "{" * 1000,
}


@needs_speedups
@pytest.mark.parametrize("document", list(VOUCHED.values()), ids=list(VOUCHED))
def test_scan_vouches_for_plain_objects(document: str) -> None:
    """Plain documents (distinct names, no odd numbers, valid text) are vouched for, as str and bytes."""
    assert refusal(document) is None
    assert scan(document) is True
    assert scan(document.encode()) is True


@needs_speedups
@pytest.mark.parametrize("document", list(NOT_VOUCHED.values()), ids=list(NOT_VOUCHED))
def test_scan_does_not_vouch_for_json_that_breaks_a_rule(document: str) -> None:
    """JSON with a repeated or escaped name, NaN, an exponent, 16 digits or no object is not vouched for."""
    assert accepted(document)
    assert scan(document) is False
    assert scan(document.encode()) is False


@needs_speedups
@pytest.mark.parametrize("document", list(NOT_JSON.values()), ids=list(NOT_JSON))
def test_scan_answers_for_any_text(document: str | bytes) -> None:
    """Text that is not JSON still gets a bool (no exception, no read past the end, however deep)."""
    forms = [document] if isinstance(document, bytes) else [document, document.encode("utf-8", "surrogatepass")]
    for form in forms:
        assert not accepted(form)
        assert scan(form) in (True, False)


# Numbers the block scan must not vouch for, and plain values it must, each tried at every offset
# around its 64-byte block boundaries (the scan looks at a digit and the letter after it in one pass).
BOUNDARY_REFUSED = ["1e5", "1E5", "1.5E3", "12.5e-3", "NaN", "Infinity", "-Infinity", "1234567890123456"]
BOUNDARY_VOUCHED = ["true", "false", "null", "123456789012345", "0.5", '"1E5 NaN Infinity \\/"', '"e1"']


def at_offset(value: str, offset: int) -> str:
    """An object whose member `value` starts `offset` characters into the text (offset >= 14)."""
    return '{"pad":"' + "x" * (offset - 14) + '","v":' + value + "}"


@needs_speedups
@pytest.mark.parametrize("value", BOUNDARY_REFUSED)
def test_scan_refuses_a_number_across_any_block_boundary(value: str) -> None:
    """An exponent, NaN, Infinity or 16 digits is caught wherever the blocks split it."""
    for offset in [*range(50, 70), *range(118, 132)]:
        document = at_offset(value, offset)
        assert document.index(":" + value) + 1 == offset
        assert accepted(document)
        assert scan(document) is False, (value, offset)
        assert scan(document.encode()) is False, (value, offset)


@needs_speedups
@pytest.mark.parametrize("value", BOUNDARY_VOUCHED)
def test_scan_vouches_for_plain_values_across_any_block_boundary(value: str) -> None:
    """Literals, plain numbers and strings holding look-alikes are vouched for wherever the blocks split them."""
    for offset in [*range(50, 70), *range(118, 132)]:
        document = at_offset(value, offset)
        assert refusal(document) is None
        assert scan(document) is True, (value, offset)
        assert scan(document.encode()) is True, (value, offset)


def assert_sound(document: str | bytes) -> None:
    """Scan answers with a bool; for JSON text, it vouches only when strict I-JSON accepts it and no rule breaks."""
    vouched = scan(document)
    assert vouched in (True, False)
    if vouched and accepted(document):
        assert refusal(document) is None, document


@needs_speedups
@pytest.mark.parametrize("depth", [101, 150, 200, 201, 100_000])
@pytest.mark.parametrize("opener", ["{", "["])
def test_scan_is_sound_at_any_depth(depth: int, opener: str) -> None:
    """However deep objects or arrays nest (past scan's own stack of objects too), it answers, and soundly."""
    plain = nested(depth, opener)
    repeated = plain.replace("0", '{"b":1,"b":2}')
    for document in both(plain) + both(repeated):
        assert_sound(document)


@needs_speedups
@pytest.mark.parametrize("argument", [None, 1, bytearray(b"{}"), memoryview(b"{}"), ["{}"], {"a": 1}])
def test_scan_takes_only_str_and_bytes(argument: object) -> None:
    """Anything but str or bytes is a TypeError."""
    with pytest.raises(TypeError):
        scan(argument)  # type: ignore[arg-type]


@needs_speedups
@settings(SETTINGS, max_examples=300)
@given(document=messy_documents())
def test_scan_never_vouches_for_what_strict_parsing_refuses(document: Document) -> None:
    """For JSON text, scan vouches only when strict I-JSON parsing accepts it and no vouching rule breaks."""
    assert_sound(document.text)
    assert_sound(document.data)


# Pieces of string contents: the edges of each UTF-8 width, of the surrogates and of the controls,
# whole characters, and stray bytes. No quote or backslash, so each piece stays one string.
EDGE_CHARS = "\x00\x1f \x7f\x80\xff\u0100\u07ff\u0800\ud7ff\ud800\udbff\udc00\udfff\ue000\uffff\U00010000\U0010ffff"
EDGE_BYTES = [b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xf0\x90\x80\x80"]
EDGE_BYTES += [b"\xf4\x8f\xbf\xbf", *BAD_UTF8]
text_pieces = st.text(
    alphabet=st.one_of(st.sampled_from(EDGE_CHARS), st.characters(exclude_characters='"\\')), max_size=6
)
byte_pieces = st.lists(
    st.one_of(
        st.sampled_from(EDGE_BYTES),
        text_pieces.map(lambda text: text.encode("utf-8", "surrogatepass")),
        st.binary(min_size=1, max_size=2).map(lambda data: data.replace(b'"', b"").replace(b"\\", b"")),
    ),
    max_size=4,
).map(b"".join)


def assert_exact(document: str | bytes) -> None:
    """For JSON text, scan vouches exactly when strict I-JSON parsing accepts it and no vouching rule breaks."""
    vouched = scan(document)
    assert vouched in (True, False)
    if accepted(document):
        assert vouched is (refusal(document) is None), document


@needs_speedups
@settings(SETTINGS, max_examples=300)
@given(
    piece=st.one_of(text_pieces, byte_pieces),
    before=st.integers(0, 40),
    after=st.integers(0, 40),
    in_name=st.booleans(),
)
def test_scan_reads_string_contents_exactly(piece: str | bytes, before: int, after: int, in_name: bool) -> None:
    """In a name or a value, str or bytes, short or long, a string's characters are judged exactly."""
    if isinstance(piece, str):
        text = "x" * before + piece + "y" * after
        assert_exact('{"' + text + '":1}' if in_name else '{"a":"' + text + '"}')
    else:
        data = b"x" * before + piece + b"y" * after
        assert_exact(b'{"' + data + b'":1}' if in_name else b'{"a":"' + data + b'"}')


ESCAPES = ["\\n", '\\"', "\\\\", "\\/", "\\b", "\\f", "\\r", "\\t", "\\u0041", "\\u00e9", "\\ud800", "\\udbff"]
ESCAPES += ["\\udc00", "\\udfff", "\\ud7ff", "\\ue000", "\\uffff", "\\uD83D", "\\uDE00", "a", "é", "😀"]


@needs_speedups
@settings(SETTINGS, max_examples=200)
@given(escapes=st.lists(st.sampled_from(ESCAPES), max_size=6).map("".join), before=st.integers(0, 20))
def test_scan_reads_escapes_exactly(escapes: str, before: int) -> None:
    """A value's escapes are vouched for exactly when valid (surrogates only paired); a name's never are."""
    for document in both('{"a":"' + "x" * before + escapes + '"}'):
        assert_exact(document)
    name = '{"' + escapes + '":1}'
    if "\\" in escapes and accepted(name):
        assert scan(name) is False


@needs_speedups
@settings(SETTINGS, max_examples=200)
@given(token=st.one_of(number_tokens, st.text(alphabet="0123456789-+.eE ", min_size=1, max_size=20)))
def test_scan_reads_numbers_exactly(token: str) -> None:
    """A member value is vouched for exactly when it is a number without exponent, of at most 15 digits."""
    for document in both('{"a":' + token + "}") + both('{"a":[' + token + "]}"):
        assert_exact(document)


@needs_speedups
@pytest.mark.parametrize("char", ["\x00", "\x1f", " ", "!", '"', "\\", "\x7f", "\x80", "\xff"])
def test_scan_reads_each_character_of_a_long_string(char: str) -> None:
    """One character anywhere in a 40-character string (the 16-at-a-time path too) is judged exactly."""
    for at in range(41):
        value = "x" * at + char + "y" * (40 - at)
        for document in both('{"a":"' + value + '"}') + both('{"' + value + '":1}'):
            assert_exact(document)


@needs_speedups
@settings(SETTINGS, max_examples=150)
@given(document=plain_documents.flatmap(lambda node: rendered(node, odd_space=False)))
def test_scan_vouches_for_every_plain_document(document: str) -> None:
    """A document built plain (no duplicate, escape, exponent, long number or NaN) is vouched for."""
    assert refusal(document) is None
    assert scan(document) is True
    assert scan(document.encode()) is True


@needs_speedups
@settings(SETTINGS, max_examples=150)
@given(
    document=plain_documents.flatmap(with_duplicate).flatmap(lambda node: rendered(node, odd_space=False)),
)
def test_scan_never_vouches_for_a_duplicate_anywhere(document: str) -> None:
    """A plain document with one member name repeated in any object, at any depth, is not vouched for."""
    assert refusal(document) is not None
    assert scan(document) is False
    assert scan(document.encode()) is False


# ---------------------------------------------------------------------------------------------------
# The subjects of the differential: contracts of every kind the C path meets or hands back.


class Abort(BaseException):
    """Not an Exception: a validator raising it must not be turned into a rejection."""


INTERRUPTS: list[str] = []
"""Notes whose next validation raises `Abort`, once: an interrupt arriving during one validation."""


class Item(BaseModel):
    sku: str
    qty: int = 1
    tags: list[str] = []


class Address(BaseModel):
    street: str
    zip: int | None = None


class Order(BaseModel):
    id: int
    note: str | None = None
    items: list[Item] = []
    ship_to: Address | None = None


class Greeting(BaseModel):
    count: int
    note: str

    @field_validator("note")
    @classmethod
    def _rule(cls, value: str) -> str:
        if value == "reject":
            raise InputRejection("note must be a greeting")
        if value == "value":
            raise ValueError("note must not be value")
        if value == "boom":
            raise RuntimeError(f"validator defect holding {SECRET}")
        if value == "abort":
            raise Abort(SECRET)
        if value in INTERRUPTS:
            INTERRUPTS.remove(value)
            raise Abort("interrupted")
        return value


def pair(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def order(order: Order) -> str:
    """Place an order."""
    return "ok"


def tally(counts: dict[str, int]) -> str:
    """Count things."""
    return "ok"


def batch(items: list[Item]) -> str:
    """Ship items."""
    return "ok"


def carry(payload: Any = None) -> str:
    """Carry anything."""
    return "ok"


def scale(x: float) -> str:
    """Scale by a float."""
    return "ok"


def either(x: float | str) -> str:
    """Take a float or a string (a union no member counter is built for)."""
    return "ok"


def money(amount: Decimal) -> str:
    """Move an exact amount."""
    return "ok"


def schedule(when: datetime, label: str) -> str:
    """Schedule a labelled event."""
    return "ok"


def pick(mode: Literal["fast", "slow", 3]) -> str:
    """Pick a mode."""
    return "ok"


def greet(greeting: Greeting) -> str:
    """Greet, under the greeting's own rule."""
    return "ok"


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "date": {"type": "string", "format": "date"},
        "units": {"enum": ["metric", "imperial"]},
        "n": {"type": "number", "maximum": 10},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def weather_hook(raw: bytes) -> int:
    """The raw tool's own rule: one city is taken, one breaks the hook."""
    if b"taken" in raw:
        raise InputRejection("that city is taken")
    if b"boom" in raw:
        raise KeyError(SECRET)
    return len(raw)


class Weather:
    """A tool with a hand-written JSON Schema and, optionally, its own input validator."""

    def __init__(self, name: str, hook: Callable[[bytes], Any] | None) -> None:
        self._definition = Definition(name=name, description="The forecast.", input_schema=WEATHER_SCHEMA)
        self._hook = hook

    def definition(self) -> Definition:
        return self._definition

    def input_validator(self) -> Callable[[bytes], Any] | None:
        return self._hook

    async def call(self, invocation: Invocation, /) -> Result:
        return Result()


ints = st.one_of(st.integers(-1000, 1000), st.integers(-(2**70), 2**70))
short_text = st.text(max_size=6)
items = st.fixed_dictionaries({"sku": short_text}, optional={"qty": ints, "tags": st.lists(short_text, max_size=3)})
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), ints, st.floats(allow_nan=False, allow_infinity=False), short_text),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "x", "é"]), children, max_size=4)
    ),
    max_leaves=12,
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "pair": st.fixed_dictionaries({"a": ints, "b": ints}),
    "order": st.fixed_dictionaries(
        {"id": ints},
        optional={
            "note": st.none() | short_text,
            "items": st.lists(items, max_size=3),
            "ship_to": st.none() | st.fixed_dictionaries({"street": short_text}, optional={"zip": st.none() | ints}),
        },
    ),
    "tally": st.fixed_dictionaries({"counts": st.dictionaries(st.text(max_size=2), ints, max_size=24)}),
    "batch": st.fixed_dictionaries({"items": st.lists(items, max_size=4)}),
    "carry": st.fixed_dictionaries({}, optional={"payload": json_values}),
    "scale": st.fixed_dictionaries(
        {"x": st.one_of(st.floats(allow_nan=False, allow_infinity=False), ints, st.just(2**53 + 1))}
    ),
    "either": st.fixed_dictionaries(
        {"x": st.one_of(st.floats(allow_nan=False, allow_infinity=False), ints, short_text, st.just(2**53 + 1))}
    ),
    "money": st.fixed_dictionaries({"amount": st.decimals(allow_nan=False, allow_infinity=False) | ints}),
    "schedule": st.fixed_dictionaries(
        {
            "when": st.datetimes().map(datetime.isoformat) | st.sampled_from(["12:30", "2026-01-01T10:00:00Z"]),
            "label": st.sampled_from(["a:b", "::", "at 10:30", "x"]) | short_text,
        }
    ),
    "pick": st.fixed_dictionaries({"mode": st.sampled_from(["fast", "slow", 3, "3", 3.0, "FAST", None])}),
    "greet": st.fixed_dictionaries(
        {"count": ints, "note": st.sampled_from(["hi", "reject", "value", "boom", "abort"]) | short_text}
    ),
    "weather": st.fixed_dictionaries(
        {"city": st.sampled_from(["Oslo", "", "taken", "boom"]) | short_text},
        optional={
            "date": st.sampled_from(["2026-12-01", "tomorrow", "2026-02-30"]),
            "units": st.sampled_from(["metric", "imperial", "kelvin"]),
            "n": st.one_of(ints, st.floats(allow_nan=False, allow_infinity=False)),
        },
    ),
}
VALUES["weather_hooked"] = VALUES["weather"]
POOL = ["a", "b", "id", "note", "items", "ship_to", "counts", "payload", "x", "amount", "when", "label", "mode"]
POOL += ["count", "city", "date", "units", "n", "sku", "extra"]


@dataclass(frozen=True)
class Subject:
    contract: Contract
    values: st.SearchStrategy[Any]

    @property
    def decoder(self) -> object:
        """The decoder `take_decoded` hands the admitted value to (None for a raw tool without a hook)."""
        return self.contract._decoder


def _subjects() -> dict[str, Subject]:
    functions = [pair, order, tally, batch, carry, scale, either, money, schedule, pick, greet]
    contracts = [bind(tool(function)).contract for function in functions]
    contracts += [bind(Weather("weather", None)).contract, bind(Weather("weather_hooked", weather_hook)).contract]
    return {contract.name: Subject(contract, VALUES[contract.name]) for contract in contracts}


SUBJECTS = _subjects()
PAIR = SUBJECTS["pair"].contract


@st.composite
def written(draw: st.DrawFn, value: Any) -> str:
    """`value` as JSON text, sometimes with a repeated or escaped member name, ASCII escapes, odd white space."""

    def space() -> str:
        return draw(ODD_SPACE) if one_in(draw, 200) else draw(JSON_SPACE)

    def spelled(name: str) -> str:
        escaped = one_in(draw, 8)  # the first character as a \\u escape, now and then
        return draw(st.sampled_from(spellings(name) if escaped else spellings(name)[:2]))

    def write(value: Any) -> str:
        if isinstance(value, dict):
            members = list(value.items())
            if members and one_in(draw, 6):
                name, member = draw(st.sampled_from(members))
                again = draw(st.sampled_from([member, 0, "x", None]))
                members.insert(draw(st.integers(0, len(members))), (name, again))
            parts = [f"{space()}{spelled(name)}{space()}:{space()}{write(member)}{space()}" for name, member in members]
            return "{" + ",".join(parts) + "}"
        if isinstance(value, list):
            return "[" + ",".join(space() + write(item) + space() for item in value) + "]"
        if isinstance(value, str):
            return json.dumps(value, ensure_ascii=draw(st.booleans()))
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, Decimal):
            return str(value)
        return json.dumps(value)

    return space() + write(value) + space()


BLANKS = ["", " ", "\t\n\r ", "\u3000", "\xa0 ", "\x85", "\x1c", "\ufeff", "  {}", "{}", "\n{}\n"]


@st.composite
def arguments(draw: st.DrawFn, subject: Subject) -> str | bytes:
    """Arguments for `subject`: mostly its own shape (valid or nearly), else stray objects, blanks, junk."""
    how = draw(st.integers(0, 9))
    if how <= 4:
        text = draw(written(draw(subject.values)))
    elif how <= 6:
        value = dict(draw(subject.values))
        change = draw(st.integers(0, 2))
        if change == 0 or not value:
            value[draw(st.sampled_from(POOL))] = draw(json_values)
        elif change == 1:
            del value[draw(st.sampled_from(sorted(value)))]
        else:
            value[draw(st.sampled_from(sorted(value)))] = draw(json_values)
        text = draw(written(value))
    elif how == 7:
        text = draw(written(draw(st.dictionaries(st.sampled_from(POOL), json_values, max_size=4))))
    elif how == 8:
        text = draw(st.sampled_from(BLANKS))
    else:
        text = draw(messy_documents()).text
    if text and one_in(draw, 10):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["NaN", "1e400", "\ud800", "\\u0000", '"', ":"])) + text[at:]
    return text if draw(st.booleans()) else text.encode("utf-8", "surrogatepass")


class Text(str):
    """A str subclass: the pure path refuses it as arguments, and compares it as a name with `!=`."""


class Blob(bytes):
    """A bytes subclass."""


@st.composite
def requests(draw: st.DrawFn, subject: Subject) -> Request:
    """A request for `subject`: its own name mostly, else another name or not a str; odd argument types."""
    name: Any = subject.contract.name
    if one_in(draw, 8):
        name = draw(st.sampled_from([name + "x", name.upper(), "", " " + name, Text(name), 1, None, name.encode()]))
    raw: Any = draw(arguments(subject))
    if one_in(draw, 10):
        convert = draw(st.sampled_from([bytearray, memoryview, Text, Blob]))
        raw = convert(raw) if isinstance(raw, bytes) or convert is Text else raw
    return Request(name, raw)


def outcome(call: Callable[[], Invocation], decoder: object) -> tuple[Any, ...]:
    """What a caller can observe of one prepare: the admitted invocation and value, or the raised error."""
    try:
        invocation = call()
    except (Exception, Abort) as error:
        return failure(error)
    decoded = take_decoded(invocation, decoder)
    again = take_decoded(invocation, decoder)
    return (
        "admitted",
        invocation.arguments,
        invocation.contract,
        invocation.idempotency_key,
        invocation.continuation,
        type(decoded),
        repr(decoded),
        again is NOTHING,
    )


def failure(error: BaseException) -> tuple[Any, ...]:
    """What a caller can observe of a raised error: its type, message, causes and public rejection."""
    cause = error.__cause__
    rejection = classify_input_rejection(error)
    return (
        "raised",
        type(error),
        str(error),
        type(error.__context__),
        error.__suppress_context__,
        type(cause),
        type(getattr(cause, "cause", None)),
        None if rejection is None else rejection.message,
    )


def assert_same(subject: Subject, request: Request, *admission: Admission) -> tuple[Any, ...]:
    """The C prepare and the pure one observe the same outcome for `request`; that outcome."""
    contract = subject.contract
    fast = outcome(lambda: contract.prepare(request, *admission), subject.decoder)
    pure = outcome(lambda: _prepare_python(contract, request, *admission), subject.decoder)
    assert fast == pure, request
    return fast


ADMISSIONS: list[tuple[Admission, ...]] = [(), (Admission(),), (Admission(idempotency_key="k"),)]  # type: ignore[arg-type]


@needs_speedups
@pytest.mark.parametrize("subject", list(SUBJECTS.values()), ids=list(SUBJECTS))
@settings(SETTINGS, max_examples=60)
@given(data=st.data())
def test_prepare_agrees_with_the_pure_python_reference(subject: Subject, data: st.DataObject) -> None:
    """For generated requests, both admit with the same value or both reject with the same error."""
    request = data.draw(requests(subject))
    assert_same(subject, request, *data.draw(st.sampled_from(ADMISSIONS)))


@needs_speedups
@pytest.mark.parametrize(
    ("name", "document"),
    [
        ("pair", '{"a":1,"b":2}'),
        ("pair", '{"a":1,"b":2,"a":3}'),
        ("pair", '{"a":1,"\\u0062":2}'),
        ("pair", '{"a":"x","b":2}'),
        ("pair", '{"a":1,"b":2,"c":3}'),
        ("pair", " \n "),
        ("pair", "\u3000"),
        ("pair", '{"a":12345678901234567890,"b":1}'),
        ("scale", '{"x":9007199254740993}'),
        ("scale", '{"x":1e400}'),
        ("either", '{"x":9007199254740993}'),
        ("either", '{"x":9007199254740992}'),
        ("either", '{"x":"9007199254740993"}'),
        ("scale", '{"x":NaN}'),
        ("money", '{"amount":NaN}'),
        ("money", '{"amount":1e5}'),
        ("carry", '{"payload":{"a":1,"a":2}}'),
        ("carry", '{"payload":' + "[" * 150 + '"a:b"' + "]" * 150 + "}"),
        ("carry", '{"payload":' + "[" * 150 + '{"a":1,"a":2}' + "]" * 150 + "}"),
        ("carry", '{"payload":' + "[" * 250 + "]" * 250 + "}"),
        ("carry", nested(101, "{").replace('"a"', '"payload"', 1)),
        ("carry", nested(120, "{").replace("0", '{"b":1,"b":2}')),
        ("carry", '{"payload":"\\ud800"}'),
        ("carry", '{"payload":"\ud800"}'),
        ("schedule", '{"when":"2026-01-01T10:00:00Z","label":"a:b","label":"c"}'),
        ("tally", '{"counts":{' + ",".join(f'"k{index}":{index}' for index in range(30)) + ',"k3":0}}'),
        ("greet", '{"count":1,"note":"reject"}'),
        ("greet", '{"count":"x","note":"boom"}'),
        ("greet", '{"count":1,"note":"value"}'),
        ("greet", '{"count":1,"note":"boom"}'),
        ("weather_hooked", '{"city":"taken"}'),
        ("weather_hooked", '{"city":"boom"}'),
        ("weather", '{"city":"Oslo","date":"2026-12-01"}'),
    ],
)
@pytest.mark.parametrize("kind", [str, bytes])
def test_prepare_agrees_on_known_cases(name: str, document: str, kind: type) -> None:
    """Hand-picked requests (each branch of the fast path and of its hand-back) agree, as str and bytes."""
    raw = document if kind is str else document.encode("utf-8", "surrogatepass")
    for admission in ADMISSIONS:
        assert_same(SUBJECTS[name], Request(name, raw), *admission)


@needs_speedups
def test_a_base_exception_from_a_validator_propagates_as_on_the_pure_path() -> None:
    """A validator raising a BaseException that is not an Exception is not turned into a rejection."""
    request = Request("greet", '{"count":1,"note":"abort"}')
    with pytest.raises(Abort):
        _prepare_python(SUBJECTS["greet"].contract, request)
    with pytest.raises(Abort):
        SUBJECTS["greet"].contract.prepare(request)


@needs_speedups
@pytest.mark.parametrize("document", ['{"count":1,"note":"once"}', ' {"count":1,"note":"once"}'])
@pytest.mark.parametrize("kind", [str, bytes])
def test_an_interrupt_during_validation_is_not_swallowed(document: str, kind: type) -> None:
    """A BaseException raised once, during validation, propagates, also where blank arguments are ruled out after."""
    contract = SUBJECTS["greet"].contract
    request = Request("greet", document if kind is str else document.encode())
    try:
        for prepare in (contract.prepare, lambda request: _prepare_python(contract, request)):
            INTERRUPTS[:] = ["once"]
            with pytest.raises(Abort):
                prepare(request)
    finally:
        INTERRUPTS.clear()


def sized(prefix: str, fill: str, suffix: str, size: int) -> str:
    """`prefix` + `fill` repeated (topped up with ASCII) + `suffix`, exactly `size` bytes in UTF-8."""
    room = size - len((prefix + suffix).encode())
    width = len(fill.encode("utf-8", "surrogatepass"))
    return prefix + fill * (room // width) + "x" * (room % width) + suffix


@needs_speedups
@pytest.mark.parametrize("name", ["carry", "weather"])
@pytest.mark.parametrize(
    "fill", ["x", "é", "€", "😀", "\ud800"], ids=["1-byte", "2-byte", "3-byte", "4-byte", "surrogate"]
)
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_prepare_agrees_at_the_size_limit(name: str, fill: str, delta: int) -> None:
    """Arguments one byte under, at and over MAX_INPUT_BYTES agree, as str and bytes, whatever the characters."""
    member = "payload" if name == "carry" else "city"
    document = sized(f'{{"{member}":"', fill, '"}', MAX_INPUT_BYTES + delta)
    assert_same(SUBJECTS[name], Request(name, document))
    assert_same(SUBJECTS[name], Request(name, document.encode("utf-8", "surrogatepass")))


@needs_speedups
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_prepare_agrees_on_long_padded_arguments(delta: int) -> None:
    """Valid arguments padded with white space to about the limit agree (a long str is measured in Python)."""
    document = sized('{"a":1,"b":2}', " ", "", MAX_INPUT_BYTES + delta)
    observed = assert_same(SUBJECTS["pair"], Request("pair", document))
    assert (observed[0] == "admitted") is (delta <= 0)
    assert_same(SUBJECTS["pair"], Request("pair", document.encode()))


class LooseRequest(Request):  # type: ignore[misc]
    """A subclass of the final Request: only an exact Request is accepted."""


class LooseAdmission(Admission):  # type: ignore[misc]
    """A subclass of the final Admission."""


class Unnamed(str):
    """A str subclass whose comparison raises."""

    __hash__ = str.__hash__

    def __ne__(self, other: object) -> bool:
        raise LookupError("no comparison")


GOOD = Request("pair", '{"a":1,"b":2}')
CALL_SHAPES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "no arguments": ((), {}),
    "three arguments": ((GOOD, Admission(), None), {}),
    "request as a keyword": ((), {"request": GOOD}),
    "admission as a keyword": ((GOOD,), {"admission": Admission()}),
    "an unknown keyword": ((GOOD,), {"other": 1}),
    "a str request": (("pair",), {}),
    "None as the request": ((None,), {}),
    "a Request subclass": ((LooseRequest("pair", "{}"),), {}),
    "a str admission": ((GOOD, "k"), {}),
    "None as the admission": ((GOOD, None), {}),
    "an Admission subclass": ((GOOD, LooseAdmission()), {}),
    "a name that is not a str": ((Request(1, "{}"),), {}),  # type: ignore[arg-type]
    "a long name": ((Request("p" * 200, "{}"),), {}),
    "arguments that are not text": ((Request("pair", 7),), {}),  # type: ignore[arg-type]
    "a name whose comparison fails": ((Request(Unnamed("pair"), "{}"),), {}),
}


@needs_speedups
@pytest.mark.parametrize("shape", list(CALL_SHAPES.values()), ids=list(CALL_SHAPES))
def test_wrong_call_shapes_fail_as_on_the_pure_path(shape: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    """Wrong argument counts, keywords and types raise the same exception, with the same message."""
    args, kwargs = shape
    fast = outcome(lambda: PAIR.prepare(*args, **kwargs), None)
    pure = outcome(lambda: _prepare_python(PAIR, *args, **kwargs), None)
    assert fast[0] == "raised"
    assert fast == pure


@needs_speedups
def test_the_unbound_method_takes_the_contract_first() -> None:
    """`Contract.prepare(contract, request)` is the same call as `contract.prepare(request)`."""
    assert Contract.prepare(PAIR, GOOD).arguments == b'{"a":1,"b":2}'
    assert Contract.prepare.__doc__ == _prepare_python.__doc__


def _load_fuzz_harness() -> Any:
    spec = importlib.util.spec_from_file_location(
        "scopetool_fuzz_prepare_differential", ROOT / "fuzz" / "fuzz_prepare.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_speedups
def test_the_fuzz_harness_fails_when_the_two_paths_disagree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fuzzer's differential check can fail: with a reference that rejects everything, an admission fails it."""
    harness = _load_fuzz_harness()
    harness.check(b'{"payload": [1, "a:b"]}')

    def refuse(contract: Contract, request: Request, admission: Admission | None = None, /) -> Invocation:
        raise InvalidInvocationError("tool: invalid invocation: refused")

    monkeypatch.setattr(contract_module, "_prepare_python", refuse)
    with pytest.raises(AssertionError, match="the C and pure prepare disagree"):
        harness.check(b'{"payload": [1, "a:b"]}')


# ---------------------------------------------------------------------------------------------------
# A rejected ValidationError: causes as on the pure path, nothing of the input shown.


def rejected(call: Callable[[], Invocation]) -> InvalidInvocationError:
    with pytest.raises(InvalidInvocationError) as info:
        call()
    return info.value


@needs_speedups
@pytest.mark.parametrize("kind", [str, bytes])
def test_a_schema_rejection_has_the_pure_causes_and_hides_the_input(kind: type) -> None:
    """The error has no context, the pure path's cause and cause types, and no input value in what is shown."""
    document = '{"a":"' + SECRET + '","b":1}'
    request = Request("pair", document if kind is str else document.encode())
    fast = rejected(lambda: PAIR.prepare(request))
    pure = rejected(lambda: _prepare_python(PAIR, request))
    for error in (fast, pure):
        assert error.__context__ is None
        rejection = classify_input_rejection(error)
        assert rejection is not None
        assert error.__cause__ is rejection
        assert rejection.__cause__ is None
        assert rejection.__context__ is None
        assert rejection.__traceback__ is None
        assert SECRET not in rejection.message
        assert SECRET not in str(error)
        assert SECRET not in "".join(traceback.format_exception(error))
    assert str(fast) == str(pure)
    assert type(fast.__cause__) is type(pure.__cause__)
    fast_cause, pure_cause = fast.__cause__, pure.__cause__
    assert isinstance(fast_cause, InputRejection)
    assert isinstance(pure_cause, InputRejection)
    assert type(fast_cause.cause) is type(pure_cause.cause)
    assert fast_cause.cause is not None
    assert fast_cause.cause.__traceback__ is None
    assert pickle.loads(pickle.dumps(fast)).args == pure.args


@needs_speedups
def test_a_rejection_raised_while_handling_another_error_has_it_as_context_on_both_paths() -> None:
    """Raised inside an except block, both paths' errors carry the handled error as context, as Python does."""
    request = Request("pair", '{"a":"x","b":1}')
    try:
        raise KeyError("handled")
    except KeyError:
        fast = rejected(lambda: PAIR.prepare(request))
        pure = rejected(lambda: _prepare_python(PAIR, request))
    assert type(fast.__context__) is type(pure.__context__) is KeyError
    assert str(fast) == str(pure)


@needs_speedups
def test_the_pending_explanation_is_settled_whichever_attribute_is_read_first() -> None:
    """A fast-path rejection reads the same message and cause whether its cause or its text is read first."""
    request = Request("pair", '{"a":"x","b":1}')
    first = rejected(lambda: PAIR.prepare(request))
    second = rejected(lambda: PAIR.prepare(request))
    cause = first.__cause__
    assert str(first) == str(second)
    assert type(cause) is type(second.__cause__) is InputRejection
    assert repr(first) == repr(rejected(lambda: _prepare_python(PAIR, request)))


# ---------------------------------------------------------------------------------------------------
# No reference leaks: many calls of each kind leave no objects, memory or references behind.

CALLS = 20_000
KINDS: dict[str, Callable[[int], Request]] = {
    "admitted": lambda index: Request("pair", f'{{"a":{index},"b":2}}'),
    "rejected by the schema": lambda index: Request("pair", f'{{"a":"{index}","b":2}}'),
    "duplicate member (handed back)": lambda index: Request("pair", f'{{"a":{index},"b":2,"a":3}}'),
    "escaped name (handed back, admitted)": lambda index: Request("pair", f'{{"\\u0061":{index},"b":2}}'),
    "another name": lambda index: Request(f"other{index}", "{}"),
}


def run(make: Callable[[int], Request], admission: Admission, first: int, count: int) -> None:
    """Prepare `count` fresh requests (str and bytes in turn), reading every rejection's message."""
    for index in range(first, first + count):
        request = make(index)
        if index % 2:
            request = Request(request.name, request.arguments.encode())  # type: ignore[union-attr]
        try:
            PAIR.prepare(request, admission)
        except InvalidInvocationError as error:
            str(error)


@needs_speedups
@pytest.mark.parametrize("make", list(KINDS.values()), ids=list(KINDS))
def test_prepare_leaks_nothing(make: Callable[[int], Request]) -> None:
    """After a warm-up, 20,000 calls leave the live objects, traced memory and shared refcounts unchanged."""
    admission = Admission(idempotency_key="k")  # type: ignore[arg-type]
    watched = [PAIR, admission, PAIR.name, Request, Invocation, InvalidInvocationError, InputRejection, None, True]
    run(make, admission, 0, 2_000)
    gc.collect()
    objects = len(gc.get_objects())
    counts = [sys.getrefcount(item) for item in watched]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run(make, admission, 2_000, CALLS)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # One leaked object per call would be 20,000 objects and far over 300 KB (a small object is 16+ bytes).
    assert len(gc.get_objects()) - objects < 500
    assert grown < 300_000
    after = [sys.getrefcount(item) for item in watched]
    # None's count moves with unrelated work; a reference leaked per call would move one by 20,000.
    assert max(abs(now - then) for now, then in zip(after, counts, strict=True)) < 100


# ---------------------------------------------------------------------------------------------------
# The environment switches, in fresh interpreters.

PROBE = """
import scopetool._contract as c
from scopetool import Request, bind, tool

def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

invocation = bind(tool(add)).contract.prepare(Request("add", '{"a":1,"b":2}'))
print(c.SPEEDUPS, c.Contract.prepare is c._prepare_python, invocation.arguments.decode())
"""


def probe(**environment: str) -> str:
    """What PROBE prints in a fresh interpreter with `environment` (SCOPETOOL_* switches of its own only)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SCOPETOOL_")}
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], env=env | environment, cwd=ROOT, capture_output=True, text=True, check=True
    )
    return completed.stdout.strip()


def test_pure_python_switch_keeps_the_extension_out() -> None:
    """With SCOPETOOL_PURE_PYTHON=1, SPEEDUPS is False, prepare is the pure function, and it admits."""
    assert probe(SCOPETOOL_PURE_PYTHON="1") == 'False True {"a":1,"b":2}'


@pytest.mark.skipif(importlib.util.find_spec("scopetool._speedups") is None, reason="scopetool._speedups is not built")
def test_the_built_extension_is_installed_by_default() -> None:
    """Without the switch, a built extension is installed: SPEEDUPS is True and prepare is the C method."""
    assert probe() == 'True False {"a":1,"b":2}'


def test_ci_requires_the_c_fast_path() -> None:
    """With SCOPETOOL_REQUIRE_SPEEDUPS=1 (CI) the C fast path must be installed; elsewhere its absence skips."""
    if not SPEEDUPS:
        if os.environ.get("SCOPETOOL_REQUIRE_SPEEDUPS") == "1":
            pytest.fail(
                "SCOPETOOL_REQUIRE_SPEEDUPS=1, but the C fast path is not installed: "
                "scopetool._speedups failed to build or import"
            )
        pytest.skip("the C fast path is not installed; set SCOPETOOL_REQUIRE_SPEEDUPS=1 to make that a failure")
    assert Contract.prepare is not _prepare_python


def test_the_requirement_fails_a_run_without_the_extension() -> None:
    """With SCOPETOOL_REQUIRE_SPEEDUPS=1 a run without the extension fails: a silent build failure cannot pass CI."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SCOPETOOL_")}
    env |= {"SCOPETOOL_PURE_PYTHON": "1", "SCOPETOOL_REQUIRE_SPEEDUPS": "1"}
    test = f"{Path(__file__).relative_to(ROOT)}::test_ci_requires_the_c_fast_path"
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", test, "-q", "-p", "no:cacheprovider"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1, completed.stdout
    assert "1 failed" in completed.stdout
    assert "SCOPETOOL_REQUIRE_SPEEDUPS=1, but the C fast path is not installed" in completed.stdout


_HELD: dict[str, Any] = {}


class _Rewriter(BaseModel):
    """A nested model whose validator swaps the request's arguments while prepare is validating them."""

    x: int

    @field_validator("x")
    @classmethod
    def swap(cls, value: int) -> int:
        object.__setattr__(_HELD.pop("request"), "arguments", "{}")  # drops the last reference to the text
        return value


def _rewritten(inner: _Rewriter, n: int) -> int:
    """A tool whose nested model rewrites the request mid-validation."""
    return inner.x + n


@pytest.mark.parametrize("prepare", [Contract.prepare, _prepare_python], ids=["c", "pure"])
def test_a_request_changed_during_validation_cannot_pull_the_text_from_under_prepare(prepare: Any) -> None:
    """prepare holds the text it validates: the invocation keeps exactly those bytes, whatever a validator does."""
    contract = bind(tool(_rewritten)).contract
    for _ in range(200):
        text = json.dumps({"inner": {"x": 1}, "n": 2}, separators=(",", ":"))
        request = _HELD["request"] = Request("_rewritten", text.encode().decode())  # the only reference
        del text
        invocation = prepare(contract, request)
        assert invocation.arguments == b'{"inner":{"x":1},"n":2}'
        assert request.arguments == "{}"


# `_speedups.validate`: the contract's validator called as the C prepare calls it (the benchmarks time
# prepare's parts apart with it, so it must make the very call prepare makes).
VALIDATED = {
    "pair": ('{"a":1,"b":2}', '{"a":1,"b":"2"}'),
    "order": (
        '{"id":7,"items":[{"sku":"x"}],"ship_to":{"street":"Main"}}',
        '{"id":7,"ship_to":{"street":"Main","zip":"1"}}',
    ),
    "batch": ('{"items":[{"sku":"x","qty":2}]}', '{"items":[{"sku":"x","qty":2,"colour":"red"}]}'),
}


@needs_speedups
@pytest.mark.parametrize("name", list(VALIDATED))
def test_validate_returns_and_raises_what_the_flagged_validator_does(name: str) -> None:
    """Its value equals the validator's with the contract's flags, and its failures are the same errors."""
    contract = SUBJECTS[name].contract
    flagged = contract._validate
    assert flagged is not None
    accepted, refused = VALIDATED[name]
    for raw in (accepted, accepted.encode()):
        assert validate(contract, raw) == flagged(raw, **contract._flags)
    with pytest.raises(ValidationError) as caught:
        validate(contract, refused)
    with pytest.raises(ValidationError) as expected:
        flagged(refused, **contract._flags)
    assert caught.value.errors() == expected.value.errors()


@needs_speedups
def test_validate_passes_the_flags_nested_models_need() -> None:
    """A member a nested (lax) model would ignore is refused: the strict, closed flags went with the call."""
    contract = SUBJECTS["batch"].contract
    refused = VALIDATED["batch"][1]
    assert contract._flags, "the batch tool's nested model needs flags"
    assert contract._validate is not None
    contract._validate(refused)  # without the flags the nested model lets the extra member through
    with pytest.raises(ValidationError, match="colour"):
        validate(contract, refused)


@needs_speedups
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((), "takes a contract and its raw arguments"),
        ((PAIR,), "takes a contract and its raw arguments"),
        ((object(), "{}"), "takes a Contract, not object"),
        ((SUBJECTS["weather"].contract, "{}"), "needs a contract whose validator prepare calls in C"),
    ],
)
def test_validate_refuses_what_prepare_would_not_call_in_c(arguments: tuple[Any, ...], message: str) -> None:
    """Wrong arity, a non-contract, or a contract validated in Python only: a TypeError naming which."""
    with pytest.raises(TypeError, match=message):
        validate(*arguments)


# ---------------------------------------------------------------------------------------------------
# Request(name, arguments=""): the C constructor builds what the dataclass's own __init__ builds.


def _dataclass_request(*args: Any, **kwargs: Any) -> Request:
    """A request built by the frozen dataclass's generated __init__ itself (the pure path, always)."""
    request = object.__new__(Request)
    Request.__init__(request, *args, **kwargs)
    return request


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("add",), {}),
        (("add", '{"a": 1}'), {}),
        (("add", b'{"a": 1}'), {}),
        ((), {"name": "add", "arguments": '{"a": 1}'}),
        ((), {"arguments": "{}", "name": "add"}),
        (("add",), {"arguments": "{}"}),
        ((), {"name": "add"}),
        ((None, 7), {}),  # built as given: prepare, not the constructor, refuses wrong types
        ((), {"name": 1.5, "arguments": bytearray(b"{}")}),
    ],
)
def test_a_request_is_built_as_the_dataclass_builds_it(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Same fields (the same objects), equal, same hash and repr, still frozen; blank arguments default to ""."""
    built, reference = Request(*args, **kwargs), _dataclass_request(*args, **kwargs)
    assert type(built) is Request
    assert built.name is reference.name
    assert built.arguments is reference.arguments
    assert built == reference
    assert repr(built) == repr(reference)
    if isinstance(built.name, str) and isinstance(built.arguments, str | bytes):
        assert hash(built) == hash(reference)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {}),
        ((), {"arguments": "{}"}),
        (("add", "{}", "extra"), {}),
        (("add",), {"name": "again"}),
        (("add", "{}"), {"arguments": "again"}),
        ((), {"name": "add", "nmae": "x"}),
        ((), {"name": "add", "arguments": "{}", "extra": 1}),
    ],
)
def test_a_request_refuses_what_the_dataclass_refuses(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A missing, repeated or unknown argument: the dataclass's own TypeError, word for word."""
    with pytest.raises(TypeError) as expected:
        _dataclass_request(*args, **kwargs)
    with pytest.raises(TypeError) as caught:
        Request(*args, **kwargs)
    assert str(caught.value) == str(expected.value)


@needs_speedups
def test_the_c_constructor_leaks_nothing() -> None:
    """Two hundred thousand requests built by the C constructor hold no memory once they are gone."""
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(1000):
            Request(name="add", arguments="{}")
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(100_000):
            Request(name="add", arguments="{}")
            Request("add")
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after - before < 10_000


@needs_speedups
def test_the_c_constructor_runs_no_python_init() -> None:
    """With the extension, Request(...) of two fields runs no Python frame (the dataclass __init__ is skipped)."""
    frames: list[str] = []
    sys.setprofile(lambda frame, event, _: frames.append(frame.f_code.co_name) if event == "call" else None)
    try:
        Request(name="add", arguments="{}")
        Request("add")
    finally:
        sys.setprofile(None)
    assert "__init__" not in frames
    with pytest.raises(TypeError):
        Request()  # the class's own call: its __init__ raises
