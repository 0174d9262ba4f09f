"""The known disagreements between an advertised schema (read by python-jsonschema) and its contract.

Each entry names its kind: ``documented`` (deliberate, or beyond what the schema or the oracle can
say; explained in docs/reliability.md) or ``bug`` (pinned by a strict xfail test in test_agreement.py,
so the entry must go when the bug is fixed). A disagreement no entry explains fails the suite.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scopetool import Contract, Invocation, classify_input_rejection

from ._support import dumps, enforces_formats, prepare, schema_allows


@dataclass(frozen=True)
class Disagreement:
    """One explained way in which the schema and the contract disagree."""

    key: str
    kind: str  # "documented" or "bug"
    reason: str
    applies: Callable[[Contract, Any, bool, bool], bool]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for member in value.values() for leaf in _leaves(member)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _map_leaves(value: Any, change: Callable[[Any], Any]) -> Any:
    if isinstance(value, dict):
        return {key: _map_leaves(member, change) for key, member in value.items()}
    if isinstance(value, list):
        return [_map_leaves(item, change) for item in value]
    return change(value)


def _admits(contract: Contract, value: Any) -> bool:
    return isinstance(prepare(contract, dumps(value)), Invocation)


def _integral_floats(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    if not schema_ok or contract_ok:
        return False
    whole = _map_leaves(value, lambda leaf: int(leaf) if isinstance(leaf, float) and leaf.is_integer() else leaf)
    if json.dumps(whole) == json.dumps(value):
        return False
    # With integers spelled as integers, the contract admits, or rejects for another documented reason.
    whole_ok = schema_allows(contract, whole, formats=enforces_formats(contract))
    if _admits(contract, whole):
        return True
    known = explain(contract, whole, whole_ok, False) if whole_ok else None
    return known is not None and known.kind == "documented"


def _dedup(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _dedup(member) for key, member in value.items()}
    if isinstance(value, list):
        seen: list[str] = []
        kept = []
        for item in value:
            key = json.dumps(item, sort_keys=True)
            if key not in seen:
                seen.append(key)
                kept.append(_dedup(item))
        return kept
    return value


def _end_of_line(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    if not schema_ok or contract_ok:
        return False
    return any(isinstance(leaf, str) and leaf.endswith("\n") for leaf in _leaves(value)) and "pattern" in (
        contract.definition().input_schema_json.decode()
    )


def _regex_dialect(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    return '"pattern"' in contract.definition().input_schema_json.decode() and any(
        isinstance(leaf, str) and not leaf.isascii() for leaf in _leaves(value)
    )


def _email(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    if not schema_ok or contract_ok or not isinstance(value, dict) or "mail" not in value:
        return False
    rest = {key: member for key, member in value.items() if key != "mail"}
    return _admits(contract, rest)


def _typed_format(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    return schema_ok and not contract_ok and not schema_allows(contract, value, formats=True)


def _validator_rule(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    if not schema_ok or contract_ok:
        return False
    outcome = prepare(contract, dumps(value))
    rejection = classify_input_rejection(outcome) if isinstance(outcome, Exception) else None
    return rejection is not None and not rejection.message.startswith("invalid arguments for tool")


def _set_duplicates(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    if schema_ok or not contract_ok:
        return False
    deduplicated = _dedup(value)
    return deduplicated != value and schema_allows(contract, deduplicated, formats=enforces_formats(contract))


def _float_multiple(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    schema = contract.definition().input_schema_json.decode()
    return (
        not schema_ok
        and contract_ok
        and '"multipleOf":0.' in schema
        and any(isinstance(leaf, float) and not leaf.is_integer() for leaf in _leaves(value))
    )


def _bytes_length(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    schema = contract.definition().input_schema_json.decode()
    return (
        schema_ok != contract_ok
        and '"format":"binary"' in schema
        and ('"maxLength"' in schema or '"minLength"' in schema)
        and any(isinstance(leaf, str) and not leaf.isascii() for leaf in _leaves(value))
    )


_DECIMAL_LIMITS = ("greater than", "less than", "digits", "decimal places", "multiple of")


def _decimal_limits(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    if not schema_ok or contract_ok or '"pattern":"^[+-]?(?:' not in contract.definition().input_schema_json.decode():
        return False
    outcome = prepare(contract, dumps(value))
    rejection = classify_input_rejection(outcome) if isinstance(outcome, Exception) else None
    return rejection is not None and any(limit in rejection.message for limit in _DECIMAL_LIMITS)


def _plain_number(text: str) -> str:
    plain = text.strip().replace("_", "")
    return plain if plain.lstrip("+-").replace(".", "", 1).isdigit() else text


def _respelled(value: Any) -> Any:
    if isinstance(value, dict):
        return {_plain_number(key): _respelled(member) for key, member in value.items()}
    if isinstance(value, list):
        return [_respelled(item) for item in value]
    return _plain_number(value) if isinstance(value, str) else value


def _lax_spellings_in_models(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> bool:
    if schema_ok or not contract_ok:
        return False
    plain = _respelled(value)
    return plain != value and schema_allows(contract, plain, formats=enforces_formats(contract))


DISAGREEMENTS: list[Disagreement] = [
    Disagreement(
        "lax-spellings-in-models",
        "documented",
        "inside a pydantic model pydantic-core uses the model's own prebuilt validator, which reads a Decimal "
        "string or an integer member name with white space or '_' between digits; the schema's pattern (and "
        "a tool's own parameters) take only the plain spelling",
        _lax_spellings_in_models,
    ),
    Disagreement(
        "decimal-limits",
        "documented",
        "a Decimal's bounds and digit limits hold for its string spellings too, and its digit limits for "
        "numbers; JSON Schema cannot compare a string as a number, nor count a number's digits",
        _decimal_limits,
    ),
    Disagreement(
        "bytes-length-in-utf8",
        "documented",
        "a bytes field's length bounds count the UTF-8 bytes of the string; JSON Schema's maxLength and "
        "minLength count characters, so non-ASCII text can fit one and not the other",
        _bytes_length,
    ),
    Disagreement(
        "set-duplicates-in-models",
        "documented",
        "inside a pydantic model (a Signature input, a model parameter, a nested model) pydantic-core uses the "
        "model's own prebuilt validator, which collapses repeated set items the schema's uniqueItems forbids; "
        "a tool's own parameters refuse them",
        _set_duplicates,
    ),
    Disagreement(
        "float-multiple-tolerance",
        "documented",
        "pydantic checks a float multipleOf with a tolerance of 1e-9 of the divisor (binary floats cannot "
        "divide exactly); JSON Schema divides exactly, so a float within the tolerance is admitted",
        _float_multiple,
    ),
    Disagreement(
        "typed-format",
        "documented",
        "JSON Schema 2020-12 treats format as an annotation; typed tools assert it with pydantic's parsers, "
        "so a string outside the format is rejected (checked against the oracle with format assertion on)",
        _typed_format,
    ),
    Disagreement(
        "validator-rule",
        "documented",
        "the input's own validator (an InputRejection) enforces a rule no JSON Schema keyword expresses",
        _validator_rule,
    ),
    Disagreement(
        "integral-float",
        "documented",
        "JSON Schema counts 1.0 as an integer; the contract, by design, admits only integer spellings "
        "(README: `1.0` is not an integer), so the model is told to send 1",
        _integral_floats,
    ),
    Disagreement(
        "python-re-dollar",
        "documented",
        "python-jsonschema checks `pattern` with Python's re, whose `$` also matches before a final "
        "newline; ECMA-262 (the JSON Schema dialect) and the contract's Rust regex do not: an oracle quirk",
        _end_of_line,
    ),
    Disagreement(
        "regex-dialect",
        "documented",
        "JSON Schema specifies ECMA-262 patterns, whose \\w and \\d are ASCII; the contract's Rust regex "
        "(pydantic) and the oracle's Python re are Unicode-aware, and differently so (Python's \\w takes "
        "'²', Rust's does not): non-ASCII text under a pattern depends on the regex engine",
        _regex_dialect,
    ),
    Disagreement(
        "email-format",
        "documented",
        "python-jsonschema's email check only looks for an @; jsonschema-rs (the contract) checks the "
        "address syntax: the oracle is the lenient one",
        _email,
    ),
]


def explain(contract: Contract, value: Any, schema_ok: bool, contract_ok: bool) -> Disagreement | None:
    """The known disagreement behind a verdict mismatch, or None when it is unexplained."""
    for disagreement in DISAGREEMENTS:
        if disagreement.applies(contract, value, schema_ok, contract_ok):
            return disagreement
    return None
