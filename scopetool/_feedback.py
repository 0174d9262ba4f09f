"""Model-facing feedback: turn validation failures into short, precise, value-free messages.

A message names the JSON path of each problem and what was expected; for an unknown member it
suggests the nearest valid name. It never repeats the rejected values: the arguments are untrusted
and may carry secrets or injected instructions. It is bounded in size.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final, cast

from pydantic import ValidationError

from ._json import JsonObject, is_array, is_object, json_kind

__all__ = [
    "MORE",
    "describe_pydantic_error",
    "describe_schema_errors",
    "format_rejection",
    "render_path",
    "schema_errors",
]

MAX_PROBLEMS: Final = 8
_MAX_LINE: Final = 240
_MAX_KEY: Final = 48
_TYPE_WORDS: Final = {
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "bool_type": "a boolean",
    "list_type": "an array",
    "tuple_type": "an array",
    "set_type": "an array",
    "frozen_set_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dataclass_type": "an object",
    "none_required": "null",
}
# pydantic error types whose message is a fixed template filled only from the schema (limits, patterns,
# expected values): they cannot quote the input, so they skip the echo check.
_TEMPLATED: Final = frozenset(
    {
        "int_type", "float_type", "string_type", "bool_type", "list_type", "tuple_type", "set_type",
        "frozen_set_type", "dict_type", "model_type", "model_attributes_type", "dataclass_type", "none_required",
        "int_from_float", "finite_number", "greater_than", "greater_than_equal", "less_than", "less_than_equal",
        "multiple_of", "string_too_short", "string_too_long", "too_short", "too_long", "string_pattern_mismatch",
        "literal_error", "enum", "missing", "extra_forbidden", "json_invalid", "json_type", "datetime_type",
        "date_type", "time_type", "timedelta_type", "uuid_type", "decimal_type", "bytes_type", "is_instance_of",
        "set_unique", "int_parsing_size", "decimal_max_digits", "decimal_max_places", "decimal_whole_digits",
    }
)  # fmt: skip
# Error types whose pydantic message may quote the input; they get a fixed text instead.
_ECHOING: Final = {
    "union_tag_invalid": "this tag is not one of the allowed values",
    "uuid_parsing": "expected a UUID",
    "url_parsing": "expected a valid URL",
    "url_syntax_violation": "expected a valid URL",
}


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


def describe_pydantic_error(error: ValidationError, document: Any, schema: dict[str, Any]) -> list[str]:
    """One line per problem in a pydantic `ValidationError` raised while admitting `document`.

    `document` is the parsed arguments (None when they could not be parsed), used to tell JSON steps
    from pydantic's labels in each error location.
    """
    problems: list[str] = []
    for detail in error.errors(include_url=False, include_context=True, include_input=True):
        if len(problems) >= MAX_PROBLEMS:
            problems.append(MORE)  # suggestions and echo checks cost; the model is shown eight at most
            break
        kind = detail["type"]
        if kind == "value_error" and type(detail.get("ctx", {}).get("error")).__name__ == "InputRejection":
            continue  # the input's own rule: reported only once the schema holds
        path, value, found = _follow(document, detail["loc"], missing=kind == "missing")
        if kind == "missing":
            problems.append(f"{_render(path)}: missing required field")
            continue
        if kind == "extra_forbidden":
            parent = path[:-1]
            name = path[-1] if path else ""
            hint = _suggest(str(name), _member_names(schema, parent))
            problems.append(f"{_render(path)}: unknown field{hint}")
            continue
        if kind in _ECHOING:
            message = _ECHOING[kind]
        elif kind in _TEMPLATED:
            message = detail["msg"]  # pydantic's own wording, filled from the schema only
        else:
            message = _public_message(detail["msg"], detail.get("input"))
        if kind in _TYPE_WORDS and found:
            message = f"{message} (got {json_kind(value)})"
        problems.append(f"{_render(path)}: {message}")
    return problems


_EAGER_LIMIT: Final = 16 * 1024


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
    problems: list[str] = []
    for error in errors:
        if len(problems) >= MAX_PROBLEMS or error is MORE:
            problems.append(MORE)  # the rest are not described: their number is unbounded
            break
        path = list(error.instance_path)
        kind = error.kind.name
        facts = {k: v for k, v in error.kind.as_dict().items() if k != "context"}
        if kind == "required":
            problems.append(f"{_render([*path, facts['property']])}: missing required field")
        elif kind in ("additionalProperties", "unevaluatedProperties"):
            names = _member_names(schema, path)
            problems.extend(
                f"{_render([*path, name])}: unknown field{_suggest(name, names)}"
                for name in facts.get("unexpected", [])
            )
        elif kind == "type":
            problems.append(f"{_render(path)}: expected {' or '.join(facts['types'])}")
        elif kind in ("enum", "const"):
            allowed = facts.get("options", [facts.get("expected_value")])
            problems.append(f"{_render(path)}: expected one of {_compact(allowed)}")
        elif "limit" in facts:
            problems.append(f"{_render(path)}: must satisfy {kind} {_compact(facts['limit'])}")
        elif kind in ("pattern", "format"):
            problems.append(f"{_render(path)}: must match {kind} {_compact(facts[kind])}")
        else:
            problems.append(f"{_render(path)}: does not satisfy the schema's {kind!r} rule")
    return problems


def _public_message(message: str, value: object) -> str:
    """Pydantic's message, unless it quotes any part of the rejected value (as a validator's own text may).

    Every scalar inside the value is looked for, as written and in its escaped (repr, JSON, unicode
    escape) forms; a long string is also looked for in pieces, so a partial quote is caught too.
    """
    leaves: list[object] = []
    _collect_leaves(value, leaves)
    if any(_quoted(leaf, message) for leaf in leaves):
        return "the value is not valid here"
    return message


_MAX_LEAVES: Final = 256
_PIECE: Final = 12


def _collect_leaves(value: object, leaves: list[object]) -> None:
    if len(leaves) >= _MAX_LEAVES:
        return
    children: list[object]
    if isinstance(value, dict):
        children = list(cast("dict[object, object]", value).values())
    elif isinstance(value, list | tuple):
        children = list(cast("list[object] | tuple[object, ...]", value))
    else:
        leaves.append(value)
        return
    for child in children[:_MAX_LEAVES]:
        _collect_leaves(child, leaves)


def _quoted(leaf: object, message: str) -> bool:
    if isinstance(leaf, bool) or leaf is None:
        return False
    if isinstance(leaf, int | float):
        text = str(leaf)
        return len(text) >= 4 and text in message
    if not isinstance(leaf, str) or len(leaf) < 4:
        return False
    forms = (leaf, repr(leaf)[1:-1], json.dumps(leaf)[1:-1], leaf.encode("unicode_escape").decode("ascii"))
    if any(form in message for form in forms):
        return True
    sample = leaf[:2048]
    return any(sample[start : start + _PIECE] in message for start in range(0, len(sample) - _PIECE + 1, 4))


def _follow(document: Any, loc: Sequence[int | str], *, missing: bool) -> tuple[list[int | str], Any, bool]:
    """Walk pydantic's error location through the parsed document.

    A step that names a member or an index present in the document is a JSON step. Anything else is
    a label pydantic adds (a union choice, a tagged-union tag, a validator) and is dropped, except the
    last step of a "missing" error, which names the absent member.
    """
    if document is None:
        return list(loc), None, False
    path: list[int | str] = []
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
            return path, None, False
    return path, node, True


def render_path(path: Sequence[int | str]) -> str:
    """A JSON path such as ``$.items[2]["odd key"]``; long member names are shortened."""
    return _render(path)


def _render(path: Sequence[int | str]) -> str:
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


def _clip(line: str) -> str:
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…"


def _compact(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:119] + "…"


def _suggest(name: str, names: list[str]) -> str:
    import difflib  # noqa: PLC0415 - only a rejection's message needs it

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    if names and len(names) <= 12:
        return f"; expected one of {', '.join(repr(n) for n in sorted(names))}"
    return ""


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
