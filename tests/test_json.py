"""Tests for scopetool._json: blank detection, RFC 7493 syntax problems and canonical JSON."""

from __future__ import annotations

import json
import math
from decimal import Decimal

import jiter
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scopetool import MAX_INPUT_BYTES
from scopetool._json import (
    JsonSyntaxProblem,
    canonical_json,
    is_blank,
    loads_exact,
    member_spans,
    parse_lenient,
    syntax_problem,
    value_span,
)

SECRET = "zq-SECRET-7c41e9"
SECRET_BYTES = SECRET.encode()

# Unicode White_Space (PropList.txt), which is what Go's unicode.IsSpace / bytes.TrimSpace use.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


# --------------------------------------------------------------------------------------------------
# is_blank


@pytest.mark.parametrize("raw", ["", b""])
def test_is_blank_empty(raw: str | bytes) -> None:
    """Empty str and bytes are blank."""
    assert is_blank(raw) is True


@pytest.mark.parametrize("char", list(WHITE_SPACE))
def test_is_blank_every_white_space_char_str_and_bytes(char: str) -> None:
    """Every Unicode White_Space character is blank, alone and repeated, as str and as UTF-8 bytes."""
    assert is_blank(char) is True
    assert is_blank(char * 3) is True
    assert is_blank(char.encode("utf-8")) is True


def test_is_blank_nel_and_nbsp() -> None:
    """U+0085 (NEL) and U+00A0 (NBSP) are blank, in str and UTF-8 form."""
    assert is_blank("\x85\xa0")
    assert is_blank("\u0085 \u00a0".encode())


@pytest.mark.parametrize("char", ["\x1c", "\x1d", "\x1e", "\x1f"])
def test_is_blank_information_separators_are_not_blank(char: str) -> None:
    """U+001C..U+001F are not White_Space even though str.isspace() says they are."""
    assert char.isspace()  # the trap this rule avoids
    assert is_blank(char) is False
    assert is_blank(char.encode()) is False
    assert is_blank(" " + char + " ") is False


@pytest.mark.parametrize("char", ["\u200b", "\ufeff", "\u180e", "\x00", "x", "{"])
def test_is_blank_other_invisible_or_visible_chars(char: str) -> None:
    """Zero-width space, BOM, U+180E, NUL and ordinary text are not blank."""
    assert is_blank(char) is False
    assert is_blank(f"  {char}\n") is False


@pytest.mark.parametrize("raw", [b"\x85", b"\xa0", b" \xff ", b"\xc2", b"\xed\xa0\x80", b"\t\x80"])
def test_is_blank_invalid_utf8_is_not_blank(raw: bytes) -> None:
    """Bytes that are not valid UTF-8 are never blank, even raw Latin-1 NEL/NBSP bytes."""
    assert is_blank(raw) is False


def test_is_blank_matches_white_space_across_the_bmp() -> None:
    """For every non-surrogate BMP character, blankness equals Unicode White_Space membership."""
    for code in range(0x10000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        expected = char in WHITE_SPACE
        assert is_blank(char) is expected, hex(code)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(WHITE_SPACE + "\x1cab\u200b"), max_size=12))
def test_is_blank_str_and_bytes_agree(text: str) -> None:
    """is_blank gives the same answer for a string and its UTF-8 encoding."""
    assert is_blank(text) is is_blank(text.encode("utf-8"))
    assert is_blank(text) is all(c in WHITE_SPACE for c in text)


# --------------------------------------------------------------------------------------------------
# syntax_problem


def test_syntax_problem_valid_object_is_none() -> None:
    """A valid object, with JSON white space around it, has no problem."""
    assert syntax_problem(b'  {"a": [1, 2.5, "x", null, true], "b": {"c": {}}}\n') is None


def test_syntax_problem_accepts_big_numbers_and_escapes() -> None:
    """Big integers and ordinary valid escapes (including surrogate pairs) are accepted."""
    assert syntax_problem(b'{"n": 123456789012345678901234567890, "s": "\\ud83d\\ude00\\n\\u0061"}') is None


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1,"a":2}',
        b'{"x":{"a":1,"b":2,"a":3}}',
        b'{"x":[{"ok":1},{"a":1,"a":2}]}',
        b'{"a":1,"\\u0061":2}',
        b'{"\\u0061":1,"a":2}',
        b'{"\\u00e9":1,"\xc3\xa9":2}',
    ],
    ids=["top", "nested", "in-array", "escape-second", "escape-first", "non-ascii-escape"],
)
def test_syntax_problem_duplicate_keys(raw: bytes) -> None:
    """Duplicate member names are rejected at any depth, also when they only collide after unescaping."""
    problem = syntax_problem(raw)
    assert isinstance(problem, JsonSyntaxProblem)
    assert "same member name twice" in problem.message
    assert problem.truncated is False


def test_syntax_problem_same_name_in_different_objects_is_fine() -> None:
    """The same member name in sibling or nested objects is not a duplicate."""
    assert syntax_problem(b'{"a":{"a":1},"b":{"a":2},"c":[{"a":1},{"a":2}]}') is None


@pytest.mark.parametrize(
    "raw",
    [b'{"a":', b'{"a":"abc', b'{"a":[1,2', b'{"a":{"b":1}', b"{", b'{"a"', b'{"a":tr', b'{"a":"\\u00'],
)
def test_syntax_problem_truncated(raw: bytes) -> None:
    """A document cut off early is reported as truncated."""
    problem = syntax_problem(raw)
    assert problem is not None
    assert problem.truncated is True
    assert "truncated" in problem.message


@pytest.mark.parametrize("raw", [b"", b"   ", b"\n\t"])
def test_syntax_problem_empty_document_is_truncated(raw: bytes) -> None:
    """An empty or white-space document is a problem (flagged as truncated)."""
    problem = syntax_problem(raw)
    assert problem is not None
    assert problem.truncated is True


@pytest.mark.parametrize("raw", [b"{}x", b"{} {}", b'{"a":1}]', b'{"a":1}\n,', b'{"a":1}\xff'])
def test_syntax_problem_trailing_data(raw: bytes) -> None:
    """Anything after the one document is rejected and is not called truncation."""
    problem = syntax_problem(raw)
    assert problem is not None
    assert "more after the JSON document" in problem.message
    assert problem.truncated is False


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":NaN}',
        b'{"a":Infinity}',
        b'{"a":-Infinity}',
        b'{"a": -Infinity}',
        b'{"a":[1,NaN]}',
        b'{\n  "a": 1,\n  "b": Infinity\n}',
    ],
)
def test_syntax_problem_non_finite_numbers(raw: bytes) -> None:
    """NaN, Infinity and -Infinity are named as non-JSON numbers wherever they appear."""
    problem = syntax_problem(raw)
    assert problem is not None
    assert "NaN and Infinity are not JSON numbers" in problem.message
    assert problem.truncated is False


def test_syntax_problem_non_finite_reports_line() -> None:
    """The position of a non-finite literal on a later line is given by line number."""
    problem = syntax_problem(b'{\n"a": 1,\n"b": NaN}')
    assert problem is not None
    assert "line 3" in problem.message


@pytest.mark.parametrize("raw", [b'{"a":"\\ud800"}', b'{"a":"\\udc00"}', b'{"a":"\\ud800\\u0041"}', b'{"\\udfff":1}'])
def test_syntax_problem_lone_surrogate_escape(raw: bytes) -> None:
    """Escapes of lone surrogates are invalid escapes."""
    problem = syntax_problem(raw)
    assert problem is not None
    assert "invalid escape" in problem.message
    assert problem.truncated is False


@pytest.mark.parametrize("raw", [b'{"a":"\\x"}', b'{"a":"\\u12G4"}', b'{"a":"\\\'"}'])
def test_syntax_problem_bad_escapes(raw: bytes) -> None:
    """Other malformed escapes are invalid escapes too."""
    problem = syntax_problem(raw)
    assert problem is not None
    assert "invalid escape" in problem.message


@pytest.mark.parametrize(
    "raw",
    [b'{"a":"\xff"}', b'{"a":"\xc3"}', b'{"a":"\xed\xa0\x80"}', b'{"\xfe":1}', b'{"a":"\xc0\xaf"}'],
    ids=["ff", "truncated-seq", "encoded-surrogate", "in-key", "overlong"],
)
def test_syntax_problem_invalid_utf8(raw: bytes) -> None:
    """Raw invalid UTF-8 inside strings is rejected."""
    problem = syntax_problem(raw)
    assert problem is not None
    assert "invalid UTF-8" in problem.message
    assert problem.truncated is False


@pytest.mark.parametrize("raw", [b"\xff", b"\xff{}", b'{\xff"a":1}'])
def test_syntax_problem_invalid_utf8_outside_strings(raw: bytes) -> None:
    """Invalid bytes outside strings are a problem as well."""
    problem = syntax_problem(raw)
    assert problem is not None
    assert problem.truncated is False


@pytest.mark.parametrize("char", [b"\x00", b"\x01", b"\n", b"\t", b"\x1f"])
def test_syntax_problem_raw_control_character(char: bytes) -> None:
    """A raw control character inside a string is rejected."""
    problem = syntax_problem(b'{"a":"x' + char + b'y"}')
    assert problem is not None
    assert "control character" in problem.message


def test_syntax_problem_del_is_allowed() -> None:
    """U+007F is not a JSON control character and may appear raw."""
    assert syntax_problem(b'{"a":"\x7f"}') is None


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b"[]", "an array"),
        (b"[1]", "an array"),
        (b"1", "a number"),
        (b"-2.5", "a number"),
        (b'"s"', "a string"),
        (b"true", "a boolean"),
        (b"false", "a boolean"),
        (b"null", "null"),
    ],
)
def test_syntax_problem_non_object_top(raw: bytes, kind: str) -> None:
    """A valid document that is not an object is named by its JSON type."""
    problem = syntax_problem(raw)
    assert problem is not None
    assert problem.message == f"the arguments must be a JSON object, not {kind}"
    assert problem.truncated is False


@pytest.mark.parametrize("raw", [b"[]", b"1", b'"s"', b"true", b"null"])
def test_syntax_problem_non_object_allowed_when_not_required(raw: bytes) -> None:
    """With require_object=False any valid document passes."""
    assert syntax_problem(raw, require_object=False) is None


def test_syntax_problem_require_object_false_still_checks_syntax() -> None:
    """require_object=False does not relax the RFC 7493 checks."""
    assert syntax_problem(b"[1,1] 2", require_object=False) is not None
    assert syntax_problem(b'[{"a":1,"a":1}]', require_object=False) is not None


def test_syntax_problem_bom() -> None:
    """A leading UTF-8 byte-order mark is not accepted."""
    problem = syntax_problem(b"\xef\xbb\xbf{}")
    assert problem is not None
    assert problem.truncated is False


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":01}',
        b'{"a":-}',
        b'{"a":tru}',
        b"{'a':1}",
        b'{"a" 1}',
        b'{"a":1,}',
        b"[1,]",
        b"{a:1}",
        b'{"a":nan}',
    ],
)
def test_syntax_problem_other_syntax_errors(raw: bytes) -> None:
    """Assorted malformed documents are problems and are not called truncated."""
    problem = syntax_problem(raw, require_object=False)
    assert problem is not None
    assert problem.truncated is False
    assert problem.message


def test_syntax_problem_message_names_position() -> None:
    """A problem with a known position names its line and column."""
    problem = syntax_problem(b'{"a":1,"a":2}')
    assert problem is not None
    assert "(line 1, column " in problem.message


SECRET_DOCUMENTS = [
    b'{"%s":1,"%s":2}' % (SECRET_BYTES, SECRET_BYTES),
    b'{"x":{"%s":1,"%s":2}}' % (SECRET_BYTES, SECRET_BYTES),
    b'{"a":"%s' % SECRET_BYTES,
    b'{"%s"' % SECRET_BYTES,
    b'{"a":"%s"} %s' % (SECRET_BYTES, SECRET_BYTES),
    b'{"a":1}%s' % SECRET_BYTES,
    b'{"a":NaN, "b":"%s"}' % SECRET_BYTES,
    b'{"%s":Infinity}' % SECRET_BYTES,
    b'{"a":"%s\\ud800"}' % SECRET_BYTES,
    b'{"a":"%s\xff"}' % SECRET_BYTES,
    b'{"a":"%s\x01"}' % SECRET_BYTES,
    b'"%s"' % SECRET_BYTES,
    b'["%s"]' % SECRET_BYTES,
    b'\xef\xbb\xbf{"%s":1}' % SECRET_BYTES,
    b"%s" % SECRET_BYTES,
    b'{"a":%s}' % SECRET_BYTES,
    b"{%s:1}" % SECRET_BYTES,
    b'{"a":"\\%s"}' % SECRET_BYTES,
]


@pytest.mark.parametrize("raw", SECRET_DOCUMENTS)
def test_syntax_problem_message_never_echoes_input(raw: bytes) -> None:
    """No problem message repeats the offending document's text."""
    problem = syntax_problem(raw)
    assert problem is not None
    assert SECRET not in problem.message
    assert SECRET[:6] not in problem.message


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.binary(max_size=12),
    suffix=st.binary(max_size=12),
    shape=st.sampled_from([b'{"%s":1,"%s":2}', b'{"a":"%s', b"%s", b'{"a":1}%s', b'["%s"', b'{"%s":NaN}']),
)
def test_syntax_problem_never_echoes_secret_fuzz(prefix: bytes, suffix: bytes, shape: bytes) -> None:
    """Fuzzed bad documents holding a secret never get the secret into the message."""
    body = shape.replace(b"%s", SECRET_BYTES)
    problem = syntax_problem(prefix + body + suffix)
    if problem is not None:
        assert SECRET not in problem.message


def test_max_input_bytes_is_one_mebibyte() -> None:
    """MAX_INPUT_BYTES is exactly 1 MiB."""
    assert MAX_INPUT_BYTES == 1_048_576


# --------------------------------------------------------------------------------------------------
# loads_exact


def test_loads_exact_keeps_big_integers_and_float_text() -> None:
    """Integers stay exact and floats keep their source text."""
    value = loads_exact(b'{"i":123456789012345678901234567890,"f":1.50,"e":1e2}')
    assert value["i"] == 123456789012345678901234567890
    assert isinstance(value["f"], jiter.LosslessFloat)
    assert bytes(value["f"]) == b"1.50"
    assert bytes(value["e"]) == b"1e2"


@pytest.mark.parametrize("raw", [b'{"a":1,"a":1}', b"NaN", b"[1] [2]", b'"\\ud800"', b'"\xff"', b""])
def test_loads_exact_rejects_non_i_json(raw: bytes) -> None:
    """loads_exact raises ValueError for anything that breaks RFC 7493."""
    with pytest.raises(ValueError):
        loads_exact(raw)


# --------------------------------------------------------------------------------------------------
# canonical_json


def test_canonical_json_compact_and_sorted() -> None:
    """Output is compact with members sorted recursively; arrays keep their order."""
    value = {"b": [3, 1, {"z": 1, "y": 2}], "a": {"d": None, "c": True}}
    assert canonical_json(value) == b'{"a":{"c":true,"d":null},"b":[3,1,{"y":2,"z":1}]}'


def test_canonical_json_sorts_by_utf16_code_units() -> None:
    """An astral key (surrogate pair D83D...) sorts before U+FFFF, unlike code-point order."""
    value = {"\uffff": 1, "\U0001f600": 2, "a": 3, "\u00e9": 4}
    out = canonical_json(value)
    assert out == '{"a":3,"\u00e9":4,"\U0001f600":2,"\uffff":1}'.encode()
    # code-point order (Python's sort_keys) would put U+FFFF first
    assert json.dumps(value, sort_keys=True, ensure_ascii=False).index("\uffff") < json.dumps(
        value, sort_keys=True, ensure_ascii=False
    ).index("\U0001f600")


def test_canonical_json_sorts_uppercase_before_lowercase() -> None:
    """Code-unit order puts "B" before "a" and "" first."""
    assert canonical_json({"a": 1, "B": 2, "": 3}) == b'{"":3,"B":2,"a":1}'


@pytest.mark.parametrize(
    "text",
    [
        b"1.50",
        b"1e2",
        b"1E+2",
        b"-0.0",
        b"2.0",
        b"123456789012345678901234567890",
        b"-12345678901234567890123",
        b"1.0000000000000000000001",
        b"1e400",
        b"0.1",
    ],
)
def test_canonical_json_keeps_numbers_verbatim(text: bytes) -> None:
    """Numbers parsed with loads_exact come out exactly as written."""
    assert canonical_json(loads_exact(b'{"n":' + text + b"}")) == b'{"n":' + text + b"}"
    assert canonical_json(loads_exact(b"[" + text + b"]")) == b"[" + text + b"]"


def test_canonical_json_writes_integer_negative_zero_as_zero() -> None:
    """The integer literal -0 is the integer 0, written as RFC 8785 writes it; -0.0 stays verbatim."""
    assert canonical_json(loads_exact(b'{"n":-0}')) == b'{"n":0}'
    assert canonical_json(loads_exact(b'{"n":-0.0}')) == b'{"n":-0.0}'


def test_canonical_json_python_numbers() -> None:
    """Python ints and finite floats are encoded as JSON numbers."""
    assert canonical_json([0, -1, 10**30, 1.5, 2.0]) == b"[0,-1,1000000000000000000000000000000,1.5,2.0]"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_canonical_json_rejects_non_finite_floats(bad: float) -> None:
    """NaN and the infinities are refused with ValueError, also when nested."""
    with pytest.raises(ValueError):
        canonical_json(bad)
    with pytest.raises(ValueError):
        canonical_json({"a": [1, {"b": bad}]})


@pytest.mark.parametrize("bad", [(1, 2), {1, 2}, b"x", bytearray(b"x"), Decimal("1.5"), object(), 1j])
def test_canonical_json_rejects_non_json_types(bad: object) -> None:
    """Values that are not JSON types raise TypeError, also when nested."""
    with pytest.raises(TypeError):
        canonical_json(bad)
    with pytest.raises(TypeError):
        canonical_json({"a": [bad]})


def test_canonical_json_rejects_non_string_keys_with_type_error() -> None:
    """A dict key that is not a str is not JSON and raises TypeError."""
    with pytest.raises(TypeError):
        canonical_json({1: "a"})


def test_canonical_json_no_html_escaping() -> None:
    """<, >, &, U+2028 and U+2029 and non-ASCII are written raw, not escaped."""
    out = canonical_json({"h": "<a href='x'>&amp;</a>\u2028\u2029\u00e9\U0001f600"})
    assert out == '{"h":"<a href=\'x\'>&amp;</a>\u2028\u2029\u00e9\U0001f600"}'.encode()
    assert b"\\u" not in out


def test_canonical_json_escapes_control_characters() -> None:
    """Control characters use the short escapes where they exist and \\u00XX otherwise."""
    out = canonical_json('\x00\x01\x08\t\n\x0c\r\x1f"\\/\x7f')
    assert out == b'"\\u0000\\u0001\\b\\t\\n\\f\\r\\u001f\\"\\\\/\x7f"'


def test_canonical_json_keys_are_escaped_too() -> None:
    """Member names are encoded with the same string rules as values."""
    assert canonical_json({'a"\n': 1}) == b'{"a\\"\\n":1}'


def test_canonical_json_scalars() -> None:
    """true, false and null encode as JSON literals, not as Python reprs or ints."""
    assert canonical_json([True, False, None]) == b"[true,false,null]"
    assert canonical_json({}) == b"{}"
    assert canonical_json([]) == b"[]"


def test_canonical_json_is_utf8_bytes() -> None:
    """The result is bytes in UTF-8."""
    out = canonical_json({"k": "\u00e9"})
    assert isinstance(out, bytes)
    assert out.decode("utf-8") == '{"k":"\u00e9"}'


JSON_LEAVES = (
    st.none() | st.booleans() | st.integers() | st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(JSON_VALUES)
def test_canonical_json_round_trip_and_idempotence(value: object) -> None:
    """Canonical output parses back to the same value and re-canonicalises to the same bytes."""
    out = canonical_json(value)
    assert json.loads(out) == value
    assert canonical_json(loads_exact(out)) == out
    assert syntax_problem(out, require_object=False) is None


@settings(max_examples=150, deadline=None)
@given(JSON_VALUES)
def test_canonical_json_matches_sorted_dumps_outside_astral_keys(value: object) -> None:
    """Without astral-plane keys, the output equals compact sort_keys json.dumps."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def has_astral_key(node: object) -> bool:
        if isinstance(node, dict):
            return any(max(map(ord, k), default=0) > 0xFFFF or has_astral_key(v) for k, v in node.items())
        if isinstance(node, list):
            return any(has_astral_key(v) for v in node)
        return False

    if not has_astral_key(value):
        assert canonical_json(value) == text.encode("utf-8")


def test_value_span_finds_the_exact_text_of_a_member() -> None:
    """The exact bytes of a member are found through escapes, nesting, strings that look like JSON, repeats."""
    raw = b'{"x": "}\\"{", "\\u0061rgs": {"n": [1, {"y": "]"}]} , "args":  {"last": true} ,"z": {}}'
    start, end = value_span(raw, ("args",)) or (0, 0)
    assert raw[start:end] == b'{"last": true}'
    assert len(member_spans(raw, "args")) == 2 and len(member_spans(raw, "z")) == 1
    nested = b'{"toolUse": {"input": {"a": 1}, "name": "add"}}'
    start, end = value_span(nested, ("toolUse", "input")) or (0, 0)
    assert nested[start:end] == b'{"a": 1}'
    assert member_spans(b'[{"a": 1}, "a", 2]', "a") == []  # an array has no members
    assert member_spans(b'"a"', "a") == [] and value_span(b'{"a": 1}', ("b",)) is None


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"a": 1}', None),
        (b'{"a": 1, "\\u0061": 2}', "the same member name twice"),
        (b'{"a": "\\ud800"}', "invalid escape"),
        (b'{"a": NaN}', "NaN and Infinity are not JSON numbers"),
        (b'{"a": 1e400}', "too large for a double"),
    ],
)
def test_parse_lenient_reads_what_breaks_only_i_json(raw: bytes, problem: str | None) -> None:
    """A document that breaks only I-JSON is still read (the last name wins), with the problem named."""
    value, found = parse_lenient(raw)
    assert isinstance(value, dict) and "a" in value
    assert (found is None) == (problem is None)
    assert found is None or problem is None or problem in found.message


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"\xff{}", "not UTF-8 (byte 1)"),
        (b'{"a": }', "not JSON: Expecting value (character 7)"),
        (b"[" * 100_000, "nested"),
    ],
)
def test_parse_lenient_says_why_a_text_is_not_json(raw: bytes, why: str) -> None:
    """Not JSON at all: a ValueError saying why and where, never what."""
    with pytest.raises(ValueError, match="not") as caught:
        parse_lenient(raw)
    assert why in str(caught.value)


def test_a_parser_text_not_known_to_be_fixed_is_not_quoted() -> None:
    """A parser message scopetool does not know to be fixed words is replaced, keeping only the position."""
    from scopetool._json import _describe  # the fallback no document reaches today

    problem = _describe("something new about sk-SECRET at line 1 column 2", b"{}")
    assert problem.message == "not valid JSON (line 1, column 2)"
