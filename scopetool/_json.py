r"""Strict JSON: RFC 7493 (I-JSON) checks, exact parsing and the canonical form of schemas.

Everything here is built on jiter, the parser inside pydantic-core, so the bytes a tool is admitted
with are read by the same parser family everywhere. jiter already rejects invalid UTF-8, lone surrogate
escapes, NaN/Infinity and trailing data; with ``catch_duplicate_keys`` it also rejects duplicate member
names at any depth, including names that only collide once escapes are decoded (``"a"`` and
``"\u0061"``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, Final, TypeAlias, TypeGuard, cast

import jiter

__all__ = [
    "MAX_INPUT_BYTES",
    "JsonArray",
    "JsonObject",
    "JsonSyntaxProblem",
    "canonical_json",
    "is_array",
    "is_blank",
    "is_object",
    "json_kind",
    "json_type",
    "loads_exact",
    "may_hold_non_finite",
    "member_spans",
    "parse_checked",
    "parse_lenient",
    "render_path",
    "syntax_problem",
    "value_span",
]

JsonObject: TypeAlias = dict[str, Any]
"""A parsed JSON object (or a JSON Schema node): member names are str, members any JSON value."""
JsonArray: TypeAlias = list[Any]
"""A parsed JSON array."""

is_object: Final = cast("Callable[[object], TypeGuard[JsonObject]]", dict.__instancecheck__)
"""``isinstance(value, dict)``, typed for JSON: where it holds, type checkers see a `JsonObject`.

Parsed JSON (and the schemas scopetool walks) has str member names, which ``isinstance`` cannot
tell a type checker. It is the type's own check (a C call, like ``isinstance``), so the JSON walkers
use it at no extra cost.
"""
is_array: Final = cast("Callable[[object], TypeGuard[JsonArray]]", list.__instancecheck__)
"""``isinstance(value, list)``, typed for JSON: where it holds, type checkers see a `JsonArray`."""

MAX_INPUT_BYTES: Final = 1 << 20
"""The largest arguments document `Contract.prepare` admits, in bytes (1 MiB)."""

# Unicode White_Space, the set Go's bytes.TrimSpace uses for blank arguments. Python's str.strip()
# differs: it also strips U+001C..U+001F, which are not white space.
_WHITE_SPACE: Final = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_JITER_POSITION: Final = re.compile(r"^(?P<what>.*) at line (?P<line>\d+) column (?P<column>\d+)$", re.S)
_MAYBE_HUGE: Final = re.compile(rb"[0-9](?:[eE]|[0-9]{308})")
_TOKEN: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[][{}:,]', re.S)
_JSON_SPACE: Final = b" \t\r\n"
_MAX_KEY: Final = 48


def is_blank(raw: str | bytes) -> bool:
    """Report whether `raw` is empty or only Unicode white space (invalid UTF-8 is not blank)."""
    if not raw:
        return True
    if isinstance(raw, str):
        text = raw
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return all(char in _WHITE_SPACE for char in text)


def may_hold_non_finite(raw: str | bytes) -> bool:
    """Whether JSON text may hold a NaN or Infinity constant: a quick look for their names, not a parse."""
    if isinstance(raw, str):
        return "NaN" in raw or "Infinity" in raw
    # ``find`` rather than ``in``: a bytes ``in`` first tries its operand as an integer, and the failed
    # attempt costs more than the search.
    return raw.find(b"NaN") >= 0 or raw.find(b"Infinity") >= 0


def loads_exact(raw: bytes) -> Any:
    """Parse one strict I-JSON document; integers stay exact, floats keep their source text.

    Raises:
        ValueError: the document breaks RFC 7493 (see `syntax_problem` for a readable reason).
    """
    return jiter.from_json(raw, allow_inf_nan=False, catch_duplicate_keys=True, float_mode="lossless-float")


class JsonSyntaxProblem:
    """Why a document is not strict I-JSON, in words fit for the model that wrote it."""

    __slots__ = ("message", "truncated")

    def __init__(self, message: str, *, truncated: bool = False) -> None:
        self.message = message
        self.truncated = truncated


def syntax_problem(raw: bytes, *, require_object: bool = True, finite: bool = True) -> JsonSyntaxProblem | None:
    """Check `raw` against RFC 7493 and say what is wrong, or None when it is one valid document.

    The message names the position and the kind of problem, never the offending text: the input is
    untrusted and the message is shown to a model. With ``finite=False`` numbers too large for a
    double are not looked for (a caller that already failed the document skips that walk).
    """
    return parse_checked(raw, require_object=require_object, finite=finite)[1]


def parse_checked(
    raw: bytes, *, require_object: bool = True, finite: bool = True, exact: bool = False
) -> tuple[Any, JsonSyntaxProblem | None]:
    """Parse `raw` strictly; the value (None when unparsable) and the problem found, if any.

    With ``exact=True`` numbers with a fraction or exponent come back as `Decimal`, so a JSON Schema
    check compares them exactly.
    """
    try:
        value = jiter.from_json(
            raw,
            allow_inf_nan=False,
            catch_duplicate_keys=True,
            cache_mode="none",
            float_mode="decimal" if exact else "float",
        )
    except ValueError as error:
        return None, _describe(str(error), raw)
    if require_object and not is_object(value):
        kind = "a number" if json_type(value) in ("integer", "number") else json_kind(value)
        return value, JsonSyntaxProblem(f"the arguments must be a JSON object, not {kind}")
    # A number beyond a double's range reads as infinity: it needs an exponent or 309 digits.
    if finite and (raw.find(b"e") >= 0 or raw.find(b"E") >= 0 or len(raw) > 308):
        path = _non_finite(value, [])
        if path is not None:
            where = render_path(path)
            return value, JsonSyntaxProblem(f"{where}: the number is too large for a double; numbers must be finite")
    return value, None


def _non_finite(value: Any, path: list[int | str]) -> list[int | str] | None:
    """The path of the first number that overflowed to infinity, or None."""
    if is_object(value):
        for key, member in value.items():
            found = _non_finite(member, [*path, key])
            if found is not None:
                return found
    elif is_array(value):
        for index, item in enumerate(value):
            found = _non_finite(item, [*path, index])
            if found is not None:
                return found
    elif (value.__class__ is float and value - value != 0) or (
        value.__class__ is Decimal and value.copy_abs() > _MAX_DOUBLE
    ):
        return path
    return None


_MAX_DOUBLE: Final = Decimal(sys.float_info.max)


def render_path(path: Sequence[int | str]) -> str:
    """A JSON path such as ``$.items[2]["odd key"]``; long member names are shortened."""
    out = ["$"]
    for step in path:
        if isinstance(step, int):
            out.append(f"[{step}]")
        elif step.isidentifier() and len(step) <= _MAX_KEY:
            out.append(f".{step}")
        else:
            shown = step if len(step) <= _MAX_KEY else step[: _MAX_KEY - 1] + "…"
            out.append(f"[{json.dumps(shown)}]")
    return "".join(out)


def parse_lenient(raw: bytes) -> tuple[Any, JsonSyntaxProblem | None]:
    """Parse a JSON document that may break I-JSON: its value, and what breaks RFC 7493 in it, if anything.

    A strict document parses as `parse_checked` reads it. One that breaks only I-JSON (a repeated
    member name, a lone surrogate, NaN, a number beyond a double) is read as Python's json module
    reads it, the last of repeated names winning, so a caller can still find its parts (`value_span`)
    and answer it; the problem says what is wrong.

    Raises:
        ValueError: `raw` is not JSON at all; the message says why and where, never what.
    """
    try:
        value = jiter.from_json(raw, allow_inf_nan=False, catch_duplicate_keys=True)
    except ValueError:
        return _lenient(raw), syntax_problem(raw, require_object=False)
    return value, syntax_problem(raw, require_object=False) if _MAYBE_HUGE.search(raw) else None


def _lenient(raw: bytes) -> Any:
    try:
        text = raw.decode()
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 (byte {error.start + 1})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error.msg} (character {error.pos + 1})") from None
    except RecursionError:
        raise ValueError("not JSON: nested too deeply") from None


def value_span(raw: bytes, path: tuple[str, ...]) -> tuple[int, int] | None:
    """Where the value at `path` (member names from the top) is in the JSON text `raw`, or None.

    `raw` is one document `parse_lenient` read. A repeated name counts once, the last time, as the
    parsers read it; the span excludes the white space around the value.
    """
    start, end = 0, len(raw)
    for key in path:
        spans = member_spans(raw, key, start, end)
        if not spans:
            return None
        start, end = spans[-1]
    return start, end


def member_spans(raw: bytes, key: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The spans of every member named `key` (escapes decoded) of the object that starts in ``raw[start:end]``.

    More than one means the name is repeated; none, that it is absent or the value is not an object.
    """
    depth = 0
    name: object = None
    value_start = start
    expect_name = in_object = False
    found: list[tuple[int, int]] = []
    for token in _TOKEN.finditer(raw, start, len(raw) if end is None else end):
        first = raw[token.start()]
        if depth == 1 and in_object:
            if first == 0x22:  # a string: a member name where one is expected
                if expect_name:
                    name = json.loads(token[0])
                    expect_name = False
                continue
            if first == 0x3A:  # ":"
                value_start = token.end()
                continue
            if first in (0x2C, 0x7D):  # "," or "}" ends a member
                if name == key:
                    found.append(_trimmed(raw, value_start, token.start()))
                if first == 0x7D:
                    return found
                name, expect_name = None, True
                continue
        if first in (0x7B, 0x5B):  # "{" or "["
            depth += 1
            if depth == 1:
                expect_name = in_object = first == 0x7B
        elif first in (0x7D, 0x5D):
            depth -= 1
            if not depth:  # the outermost value was an array
                return found
    return found


def _trimmed(raw: bytes, start: int, end: int) -> tuple[int, int]:
    while start < end and raw[start] in _JSON_SPACE:
        start += 1
    while end > start and raw[end - 1] in _JSON_SPACE:
        end -= 1
    return start, end


def _describe(error: str, raw: bytes) -> JsonSyntaxProblem:
    match = _JITER_POSITION.match(error)
    what, where = (match["what"], f" (line {match['line']}, column {match['column']})") if match else (error, "")
    if what.startswith("Detected duplicate key"):
        return JsonSyntaxProblem(f"an object has the same member name twice{where}; each name may appear once")
    if what.startswith("EOF while parsing"):
        return JsonSyntaxProblem(
            f"the JSON ends before the document is complete{where}: it looks truncated", truncated=True
        )
    if what == "trailing characters":
        return JsonSyntaxProblem(f"there is more after the JSON document{where}; send exactly one object")
    if "surrogate" in what or "hex escape" in what or what == "invalid escape":
        return JsonSyntaxProblem(f"a string has an invalid escape{where} (for example a lone \\ud800 surrogate)")
    if what in ("invalid unicode code point", "control character (\\u0000-\\u001F) found while parsing a string"):
        return JsonSyntaxProblem(f"a string holds invalid UTF-8 or a raw control character{where}")
    if (
        what in ("expected value", "invalid number")
        and match
        and _at_non_finite(raw, int(match["line"]), int(match["column"]))
    ):
        return JsonSyntaxProblem(f"NaN and Infinity are not JSON numbers{where}")
    if what == "number out of range" or what.startswith("Internal error"):
        # jiter's internal errors quote a Python exception: in exact mode, Decimal's refusal of an
        # exponent beyond its range (the number is valid JSON, but cannot be read exactly).
        return JsonSyntaxProblem(f"a number is out of range{where}")
    if what in _PARSER_WORDS:
        return JsonSyntaxProblem(f"not valid JSON: {what}{where}")
    return JsonSyntaxProblem(f"not valid JSON{where}")


# jiter's fixed descriptions of malformed JSON; any other text the parser gives is not shown.
_PARSER_WORDS: Final = frozenset(
    {
        "expected ident", "expected value", "expected `:`", "expected `,` or `]`", "expected `,` or `}`",
        "key must be a string", "trailing comma", "recursion limit exceeded", "invalid number",
        "float must be an integer",
    }
)  # fmt: skip


def _at_non_finite(raw: bytes, line: int, column: int) -> bool:
    lines = raw.split(b"\n")
    if line > len(lines):
        return False
    tail = lines[line - 1][max(column - 1, 0) :].lstrip(b"-")
    return tail.startswith((b"NaN", b"Infinity"))


def json_type(value: object) -> str:
    """The JSON Schema type name of a parsed JSON value (booleans are not integers)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def json_kind(value: object) -> str:
    """A parsed JSON value's kind in words, for messages: "an integer", "a string", "null"..."""
    return _KIND_WORDS[json_type(value)]


_KIND_WORDS: Final = {
    "null": "null",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number with a fraction or exponent",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}


def canonical_json(value: Any) -> bytes:
    """Encode a parsed JSON value in canonical form.

    Compact, members sorted by UTF-16 code units (RFC 8785 order), raw UTF-8, numbers verbatim as
    written (via jiter's lossless floats).
    """
    parts: list[str] = []
    _encode(value, parts)
    return "".join(parts).encode("utf-8")


def _utf16_key(item: tuple[str, Any]) -> bytes:
    key = item[0]
    if not isinstance(key, str):
        raise TypeError(f"object member names must be str, not {type(key).__name__}")
    return key.encode("utf-16-be", "surrogatepass")


_quote: Final[Callable[[str], str]] = json.encoder.encode_basestring
"""``json.dumps(text, ensure_ascii=False)`` without its encoder's setup: the same text."""


def _encode(value: Any, out: list[str]) -> None:
    if is_object(value):
        out.append("{")
        # ASCII names sort the same by UTF-16 code units as by code points (Python's own order).
        if all(key.__class__ is str and key.isascii() for key in value):
            members = sorted(value.items())
        else:
            members = sorted(value.items(), key=_utf16_key)
        for index, (key, member) in enumerate(members):
            if index:
                out.append(",")
            out.append(_quote(key))
            out.append(":")
            _encode(member, out)
        out.append("}")
    elif is_array(value):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    elif isinstance(value, str):
        out.append(_quote(value))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, jiter.LosslessFloat):
        out.append(bytes(value).decode("ascii"))
    elif isinstance(value, float):
        text = json.dumps(value)
        if text in ("NaN", "Infinity", "-Infinity"):
            raise ValueError("NaN and Infinity are not JSON numbers")
        out.append(text)
    else:
        raise TypeError(f"{type(value).__name__} is not a JSON value")
