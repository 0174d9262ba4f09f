"""Model-facing feedback: turn validation failures into short, precise, value-free messages.

A message names the JSON path of each problem and what was expected; for an unknown member it
suggests the nearest valid name. It says one thing per path (the clearest of a union's branches), and
the same problem in several array items once, with their indices. It never repeats the rejected
values: the arguments are untrusted and may carry secrets or injected instructions, so the only words
shown are scopetool's and pydantic's own fixed descriptions, filled from the schema (a validator's own
text, which may quote the input, never is). It is bounded in size, and so is the work of building it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final, cast, get_args

from pydantic import ValidationError
from pydantic_core.core_schema import ErrorType

from ._json import JsonObject, is_array, is_object, json_kind, render_path

__all__ = [
    "EAGER_LIMIT",
    "MAX_DESCRIBED",
    "MORE",
    "PydanticFact",
    "describe_facts",
    "describe_schema_errors",
    "did_you_mean",
    "format_rejection",
    "nearest",
    "pydantic_facts",
    "schema_errors",
    "unknown_tool_message",
]

MAX_PROBLEMS: Final = 8
MAX_DESCRIBED: Final = 256
"""The most pydantic errors read one by one to describe a rejection; past it the errors are not materialized."""
_MAX_LINE: Final = 240
_MAX_INDICES: Final = 6
# Type mismatches: pydantic's words name what was expected, and what was sent is added ("got a string").
_TYPE_KINDS: Final = frozenset(
    {
        "int_type", "float_type", "string_type", "bool_type", "list_type", "tuple_type", "set_type",
        "frozen_set_type", "dict_type", "model_type", "model_attributes_type", "dataclass_type", "none_required",
    }
)  # fmt: skip
# Context keys pydantic fills from the schema (limits, patterns, expected values, class names) or with
# a count, never with the input: a known error whose context holds only these keeps pydantic's words.
_SCHEMA_CONTEXT: Final = frozenset(
    {
        "gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "field_type", "actual_length",
        "pattern", "expected", "class_name", "class", "discriminator", "expected_tags", "expected_schemes",
        "expected_version", "max_digits", "decimal_places", "whole_digits", "tz_expected",
    }
)  # fmt: skip
# Known errors whose context carries text derived from the input (a parser's remark, the rejected tag):
# they get a fixed text instead.
_FIXED: Final = {
    "union_tag_invalid": "this tag is not one of the allowed values",
    "uuid_parsing": "expected a UUID",
    "url_parsing": "expected a valid URL",
    "url_syntax_violation": "expected a valid URL",
    "bytes_invalid_encoding": "expected validly encoded data",
    "date_parsing": "Input should be a valid date in the format YYYY-MM-DD",
    "date_from_datetime_parsing": "Input should be a valid date",
    "datetime_parsing": "Input should be a valid datetime",
    "datetime_from_date_parsing": "Input should be a valid datetime",
    "time_parsing": "Input should be a valid time",
    "time_delta_parsing": "Input should be a valid duration",
    "timezone_offset": "Input should have the required timezone offset",
    "json_invalid": "Input should be valid JSON",
}
# Custom errors whose words are scopetool's own (see `exact_core_schema`, filled from the schema) or
# pydantic's own (its network and path types): shown when the message is exactly this template.
_OWN_TEMPLATES: Final = {
    "set_unique": "Items should be unique",
    "float_parsing": "Input should be an integer a double holds exactly (at most 2**53 in magnitude)",
    "literal_error": "Input should be one of {expected}",
    "enum": "Input should be one of {expected}",
    "ip_any_address": "value is not a valid IPv4 or IPv6 address",
    "ip_any_interface": "value is not a valid IPv4 or IPv6 interface",
    "ip_any_network": "value is not a valid IPv4 or IPv6 network",
    "ip_v4_address": "Input is not a valid IPv4 address",
    "ip_v6_address": "Input is not a valid IPv6 address",
    "ip_v4_network": "Input is not a valid IPv4 network",
    "ip_v6_network": "Input is not a valid IPv6 network",
    "ip_v4_interface": "Input is not a valid IPv4 interface",
    "ip_v6_interface": "Input is not a valid IPv6 interface",
    "path_type": "Input is not a valid path",
    "pattern_regex": "Input should be a valid regular expression",
}
_NOT_VALID: Final = "the value is not valid here"
"""What the model is told for a value that a validator's own text (or any text pydantic cannot vouch
for) rejected: that text may quote the input, so it is never shown."""

# How clear a problem is, lowest first: of several problems at one path (a union's branches, a type
# and an enum), the clearest is kept. A limit the value broke says it had the right type already.
_LIMIT, _CHOICE, _OTHER, _TYPE, _UNKNOWN = range(5)
_UNKNOWN_MEMBER: Final = "\x00unknown"  # rendered once shown: the suggestion of a near name costs
_CHOICES: Final = frozenset({"literal_error", "enum", "union_tag_invalid", "const"})


MORE: Final = "\x00more"
"""Ends a problem list that was cut short: there were more problems than were described."""


def format_rejection(tool: str, problems: Sequence[str]) -> str:
    """Render problems as the message a model receives for one rejected call."""
    cut = bool(problems) and problems[-1] == MORE
    shown = list(dict.fromkeys(problems[:-1] if cut else problems))
    extra = len(shown) - MAX_PROBLEMS
    lines = [_clip(p) for p in shown[:MAX_PROBLEMS]]
    if cut:
        lines.append("... and possibly more")
        count = f"at least {len(shown)} {'problem' if len(shown) == 1 else 'problems'}"
    else:
        if extra > 0:
            lines.append(f"... and {extra} more")
        count = f"{len(shown)} {'problem' if len(shown) == 1 else 'problems'}"
    return f"invalid arguments for tool {tool!r} ({count}):\n" + "\n".join(f"- {line}" for line in lines)


class _Problem:
    """One problem before it is rendered: where, how clear, and its words (a type mismatch keeps its parts)."""

    __slots__ = ("expected", "got", "path", "rank", "style", "text")

    def __init__(self, path: list[int | str], text: str, rank: int = _OTHER) -> None:
        self.path = path
        self.text = text
        self.rank = rank
        self.style = ""  # a type mismatch: the words before what was expected
        self.expected: list[str] = []
        self.got = ""

    @classmethod
    def mismatch(cls, path: list[int | str], style: str, expected: list[str], got: str) -> _Problem:
        problem = cls(path, "", _TYPE)
        problem.style, problem.expected, problem.got = style, expected, got
        return problem

    def render(self, schema: dict[str, Any]) -> str:
        if self.rank != _TYPE:
            return self.text
        text = self.style + " or ".join(dict.fromkeys(self.expected))
        if self.got == "null" and _optional_member(schema, self.path):
            return f"{text} (got null; leaving the field out is allowed)"
        return f"{text} (got {self.got})"


PydanticFact = tuple[str, str, tuple[tuple[str, Any], ...], tuple[int | str, ...], bool, "_Branch | None", str]
"""What one pydantic error says, where it is in the document: its kind, pydantic's words, its context,
its JSON path, whether a value is there, the union branch it came from (see `_follow`), and the JSON
kind of what was sent for a type mismatch. The words and context of an error described in scopetool's
own words whatever pydantic's are (a missing or an unknown field) are left out."""


def pydantic_facts(details: Sequence[Mapping[str, Any]], document: Any) -> tuple[list[PydanticFact], bool]:
    """The facts `describe_facts` describes, of the first `MAX_DESCRIBED` of pydantic's error details.

    Also whether they are plain: no error is a failed assertion and every context value is a str, a
    number, a bool or None (none is a validator's exception), so the facts can be a key (of a memo of
    the descriptions).
    """
    facts: list[PydanticFact] = []
    plain = True
    for detail in details[:MAX_DESCRIBED]:
        kind = detail["type"]
        if kind == "assertion_error":
            plain = False
        ctx = detail.get("ctx")
        context: tuple[tuple[str, Any], ...] = ()
        if ctx:
            if kind == "value_error" and type(ctx.get("error")).__name__ == "InputRejection":
                plain = False
                continue  # the input's own rule: reported only once the schema holds
            if plain and not all(value.__class__ in _PLAIN for value in ctx.values()):
                plain = False
            context = tuple(ctx.items())
        path, value, present, branch = _follow(document, detail["loc"], missing=kind == "missing")
        if kind in _OWN_WORDS:
            facts.append((kind, "", (), tuple(path), present, branch, ""))
            continue
        got = json_kind(value) if present and kind in _TYPE_KINDS else ""
        facts.append((kind, detail["msg"], context, tuple(path), present, branch, got))
    return facts, plain


_PLAIN: Final = frozenset({str, int, float, bool, type(None)})
_OWN_WORDS: Final = frozenset({"missing", "extra_forbidden"})


def describe_facts(facts: Sequence[PydanticFact], schema: dict[str, Any]) -> tuple[list[str], bool]:
    """One line per problem in `facts` (from `pydantic_facts`), and whether every one is in fixed words.

    Fixed words are scopetool's own or pydantic's, filled from the schema only: lines all in fixed
    words (with the paths they name) hold nothing from the input's values, as their facts do not.
    """
    found: list[_Problem] = []
    worded = True
    for kind, message, context, path, _, _, got in facts:
        if kind == "missing":
            found.append(_Problem(list(path), "missing required field", _LIMIT))
        elif kind == "extra_forbidden":
            found.append(_Problem(list(path), _UNKNOWN_MEMBER, _UNKNOWN))  # the suggestion is looked for once shown
        else:
            ctx = dict(context)
            if got and _pydantic_wording(kind, message, ctx):
                words = "null" if kind == "none_required" else message.removeprefix(_SHOULD)
                found.append(_Problem.mismatch(list(path), _SHOULD, [words], got))
                continue
            wording = _pydantic_wording(kind, message, ctx)
            if wording is None:
                wording = _FIXED.get(kind, _NOT_VALID)
                worded = False
            rank = _CHOICE if kind in _CHOICES else _LIMIT if ctx.keys() & _LIMIT_CONTEXT else _OTHER
            found.append(_Problem(list(path), wording, rank))
    return _lines(_closest_branches(found, [fact[5] for fact in facts]), schema), worded


_SHOULD: Final = "Input should be "
_LIMIT_CONTEXT: Final = frozenset(
    {"gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "pattern", "max_digits", "decimal_places"}
)


def _pydantic_wording(kind: str, message: str, ctx: Mapping[str, Any]) -> str | None:
    """Pydantic's own message, when it is the fixed template of a known error filled from the schema only.

    A custom error (a validator's `PydanticCustomError`, even one reusing a known type's name), a known
    error whose context carries input-derived text, and a `ValueError`'s text all give None.
    """
    own = _OWN_TEMPLATES.get(kind)
    if own is not None and message == own.format_map(_Strict(ctx)):
        return message
    if kind not in _KNOWN or not ctx.keys() <= _SCHEMA_CONTEXT:
        return None
    # The known error rebuilt from its type and context alone, worded as for JSON input.
    known: dict[str, Any] = {"type": kind, "loc": (), "input": None}
    if ctx:
        known["ctx"] = dict(ctx)
    try:
        rebuilt = ValidationError.from_exception_data("", [known], input_type="json")  # type: ignore[list-item]
    except (TypeError, ValueError, KeyError):
        return None
    return message if message == rebuilt.errors(include_url=False)[0]["msg"] else None


class _Strict(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "\x00"  # never equal to a rendered message


_KNOWN: Final = frozenset(get_args(ErrorType))


def _lines(found: list[_Problem], schema: dict[str, Any]) -> list[str]:
    """The problems as lines: one per path (the clearest), repeated problems over array items as one line."""
    # Lines that differ only in one array index (the last in the path) and say the same are one line.
    groups: dict[tuple[object, ...], tuple[list[int | str], str, list[int]]] = {}
    for problem in _clearest_per_path(found):
        text = problem.render(schema)
        if text == _UNKNOWN_MEMBER:
            name = problem.path[-1] if problem.path else ""
            text = "unknown field" + _suggest(str(name), _member_names(schema, problem.path[:-1]))
        path = problem.path
        last = _last_index(path)
        if last < 0:
            groups.setdefault((tuple(path), text), (path, text, []))
            continue
        group = groups.setdefault((tuple(path[:last]), tuple(path[last + 1 :]), text), (path, text, []))
        group[2].append(cast(int, path[last]))
    lines: list[str] = []
    for path, text, indices in groups.values():
        if len(indices) <= 1:
            lines.append(f"{render_path(path)}: {text}")
            continue
        last = _last_index(path)
        shown = ", ".join(str(i) for i in indices[:_MAX_INDICES])
        if len(indices) > _MAX_INDICES:
            shown += f", … ({len(indices)} items)"
        lines.append(f"{render_path(path[:last])}[{shown}]{render_path(path[last + 1 :])[1:]}: {text}")
    return lines


def _clearest_per_path(found: list[_Problem]) -> list[_Problem]:
    """The clearest problem at each path; a union's type mismatches at one path merge into one."""
    by_path: dict[tuple[int | str, ...], _Problem] = {}
    for problem in found:
        key = tuple(problem.path)
        held = by_path.get(key)
        if held is None or problem.rank < held.rank:
            by_path[key] = problem
        elif problem.rank == held.rank == _TYPE:
            held.expected = [*held.expected, *problem.expected]  # union branches: "an integer or a string"
    # A type mismatch at a path with problems deeper inside comes from a union's other branch: the
    # value had a branch's shape, and the deeper problems say what is wrong with it.
    deeper = {key[:depth] for key in by_path for depth in range(len(key))}
    return [problem for key, problem in by_path.items() if not (problem.rank == _TYPE and key in deeper)]


def _last_index(path: Sequence[int | str]) -> int:
    """The position of the last array index in `path`, or -1."""
    return max((i for i, step in enumerate(path) if isinstance(step, int)), default=-1)


def _optional_member(schema: dict[str, Any], path: Sequence[int | str]) -> bool:
    """Whether the member `path` ends with is declared in its object's schema and not required there."""
    if not path or not isinstance(path[-1], str):
        return False
    name = path[-1]
    nodes = [node for node in _resolve(schema, schema, list(path[:-1]), 0) if name in node.get("properties", {})]
    return bool(nodes) and all(name not in node.get("required", ()) for node in nodes)


_EAGER_LIMIT: Final = 16 * 1024
EAGER_LIMIT: Final = _EAGER_LIMIT
"""The largest document whose every problem is looked for; past it, only the first problems are."""


def schema_errors(validator: Any, value: Any, size: int) -> list[Any]:
    """The errors a jsonschema-rs validator finds, bounded in memory.

    jsonschema-rs builds every error before yielding the first, so a large document with many problems
    would cost memory in proportion: past 16 KiB only the first error is asked for (`validate`), and the
    list ends with `MORE`.
    """
    if size <= _EAGER_LIMIT:
        return list(validator.iter_errors(value))
    import jsonschema_rs  # noqa: PLC0415 - loaded already: `validator` is one of its validators

    try:
        validator.validate(value)
    except jsonschema_rs.ValidationError as error:
        return [error, MORE]
    return []


def describe_schema_errors(errors: Iterable[Any], schema: dict[str, Any]) -> list[str]:
    """One line per problem reported by a jsonschema-rs validator (kinds only, no instance values)."""
    found: list[_Problem] = []
    cut = False
    for error in errors:
        if error is MORE or len(found) >= MAX_DESCRIBED:
            cut = True  # the rest are not described: their number is unbounded
            break
        _schema_problems(error, found, 0)
    lines = _lines(found, schema)
    if cut:
        lines.append(MORE)
    return lines


def _schema_problems(error: Any, found: list[_Problem], depth: int) -> None:
    path = list(error.instance_path)
    kind = error.kind.name
    facts = error.kind.as_dict()
    if kind == "required":
        found.append(_Problem([*path, facts["property"]], "missing required field", _LIMIT))
    elif kind in ("additionalProperties", "unevaluatedProperties"):
        found.extend(
            _Problem([*path, name], _UNKNOWN_MEMBER, _UNKNOWN) for name in facts.get("unexpected", [])[:MAX_DESCRIBED]
        )
    elif kind == "type":
        found.append(_Problem.mismatch(path, "expected ", list(facts["types"]), _kind_of(error.instance)))
    elif kind in ("enum", "const"):
        allowed = facts.get("options", [facts.get("expected_value")])
        found.append(_Problem(path, f"expected one of {_compact(allowed)}", _CHOICE))
    elif "limit" in facts:
        found.append(_Problem(path, f"must satisfy {kind} {_compact(facts['limit'])}", _LIMIT))
    elif kind in ("pattern", "format"):
        found.append(_Problem(path, f"must match {kind} {_compact(facts[kind])}", _LIMIT))
    elif kind in ("anyOf", "oneOf") and facts.get("context") and all(facts["context"]) and depth < 8:
        # Every branch failed: each branch's own problems, of which the clearest per path are kept.
        for branch in facts["context"]:
            for inner in branch[:MAX_DESCRIBED]:
                _schema_problems(inner, found, depth + 1)
    else:
        found.append(_Problem(path, f"does not satisfy the schema's {kind!r} rule"))


def _kind_of(value: object) -> str:
    return json_kind(float(0) if isinstance(value, Decimal) else value)


def _closest_branches(
    found: list[_Problem], branches: list[tuple[tuple[int | str, ...], object] | None]
) -> list[_Problem]:
    """Of a union whose every branch failed, the problems of the branches with the fewest problems.

    Pydantic reports every branch's problems; the branch the value came closest to says what to fix,
    and the others' (a member unknown there, a field missing there) would only mislead.
    """
    counts: dict[tuple[int | str, ...], dict[object, int]] = {}
    for branch in branches:
        if branch is not None:
            per_label = counts.setdefault(branch[0], {})
            per_label[branch[1]] = per_label.get(branch[1], 0) + 1
    if not any(len(per_label) > 1 for per_label in counts.values()):
        return found
    return [
        problem
        for problem, branch in zip(found, branches, strict=True)
        if branch is None or counts[branch[0]][branch[1]] == min(counts[branch[0]].values())
    ]


_Branch = tuple[tuple[int | str, ...], object]


def _follow(
    document: Any, loc: Sequence[int | str], *, missing: bool
) -> tuple[list[int | str], Any, bool, _Branch | None]:
    """Walk pydantic's error location through the parsed document.

    A step that names a member or an index present in the document is a JSON step. Anything else is
    a label pydantic adds (a union choice, a tagged-union tag, a validator) and is dropped, except the
    last step of a "missing" error, which names the absent member. The first label is returned with
    the JSON path before it: it names the union branch the error came from.
    """
    if document is None:
        return list(loc), None, False, None
    path: list[int | str] = []
    branch: _Branch | None = None
    node = document
    last = len(loc) - 1
    for index, step in enumerate(loc):
        if is_object(node) and isinstance(step, str) and step in node:  # noqa: SIM114 - typed apart
            node = node[step]
            path.append(step)
        elif is_array(node) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
            path.append(step)
        elif missing and index == last and isinstance(step, str):
            path.append(step)
            return path, None, False, branch
        elif branch is None:
            branch = (tuple(path), step)
    return path, node, True, branch


def _clip(line: str) -> str:
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…"


def _compact(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:119] + "…"


def _suggest(name: str, names: list[str]) -> str:
    close = nearest(name, names, 1)
    if close:
        return f"; did you mean {close[0]!r}?"
    if names and len(names) <= 12:
        return f"; expected one of {', '.join(repr(n) for n in sorted(names))}"
    return ""


def nearest(name: str, names: Iterable[str], most: int = 3) -> list[str]:
    """Up to `most` of `names` nearest `name`, nearest first, compared without case: every "did you mean".

    The one suggestion helper (field names, tool names, the CLI's and the gateway config's keys). Only
    the first 128 characters of `name` are compared, so an untrusted name of any length costs little.
    """
    import difflib  # noqa: PLC0415 - only a suggestion needs it; importing scopetool stays light

    folded: dict[str, str] = {}
    for known in names:
        folded.setdefault(known.casefold(), known)
    return [folded[match] for match in difflib.get_close_matches(name[:128].casefold(), folded, most, 0.6)]


def unknown_tool_message(name: str, near: Sequence[str] = ()) -> str:
    """What a model is told of a call to a tool it may not call: the one text, on every path that answers it.

    `near` are the nearest names the caller may call (`nearest` of them): never a tool it cannot list.
    """
    return f'error: tool "{name[:80]}" is not available{did_you_mean(near)}'


def did_you_mean(near: Sequence[str]) -> str:
    """The suggestion an unknown name's message ends with: ``; did you mean "a" or "b"?``, or nothing."""
    return "; did you mean " + " or ".join(f'"{known}"' for known in near) + "?" if near else ""


def _member_names(schema: dict[str, Any], path: Sequence[int | str]) -> list[str]:
    names: list[str] = []
    for node in _resolve(schema, schema, list(path), 0):
        names.extend(node.get("properties", {}))
    return list(dict.fromkeys(names))


def _resolve(root: JsonObject, node: Any, path: list[int | str], depth: int) -> list[JsonObject]:
    if not is_object(node) or depth > 32:
        return []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~")) if is_object(target) else None
        return _resolve(root, target, path, depth + 1)
    found: list[JsonObject] = []
    for keyword in ("anyOf", "oneOf", "allOf"):
        for choice in node.get(keyword, []):
            found.extend(_resolve(root, choice, path, depth + 1))
    if not path:
        return [node, *found]
    step, rest = path[0], path[1:]
    if isinstance(step, str):
        child = node.get("properties", {}).get(step)
        if child is None and isinstance(node.get("additionalProperties"), dict):
            child = node["additionalProperties"]
        found.extend(_resolve(root, child, rest, depth + 1))
    else:
        prefix = node.get("prefixItems", [])
        child = prefix[step] if step < len(prefix) else node.get("items")
        found.extend(_resolve(root, child, rest, depth + 1))
    return found
