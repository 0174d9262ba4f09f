"""The advertised schema and the enforced contract agree on values drawn from the schema and from the model."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import Phase, assume, find, given, settings
from hypothesis import strategies as st

from scopetool import Contract, Invocation

from ._agreement import DISAGREEMENTS, explain
from ._corpus import all_bindings, parameters_of, raw_tools, typed_tools
from ._support import RELIABLE, dumps, enforces_formats, from_schema, near_misses, prepare, python_values, schema_allows

BINDINGS = all_bindings()
NAMES = sorted(BINDINGS)
TYPED = {tool.definition().name: tool for tool in typed_tools()}
RAW = [tool.definition().name for tool in raw_tools()]
UNEXPLAINED: list[str] = []


def _contract(name: str) -> Contract:
    return BINDINGS[name].contract


def _agree(contract: Contract, value: Any) -> None:
    schema_ok = schema_allows(contract, value, formats=enforces_formats(contract))
    contract_ok = isinstance(prepare(contract, dumps(value)), Invocation)
    if schema_ok != contract_ok:
        known = explain(contract, value, schema_ok, contract_ok)
        assert known is not None, (
            f"{contract.name}: the schema {'allows' if schema_ok else 'forbids'} {dumps(value)!r} "
            f"but the contract {'admits' if contract_ok else 'rejects'} it"
        )


def test_corpus_has_at_least_thirty_input_models() -> None:
    """The agreement corpus holds at least 30 input models, typed and hand-written."""
    assert len(TYPED) >= 30
    assert len(RAW) >= 8
    assert len(NAMES) == len(TYPED) + len(RAW)


_SEARCH = settings(max_examples=500, database=None, derandomize=True, phases=[Phase.generate])


@pytest.mark.parametrize("name", NAMES)
def test_schema_generator_reaches_admitted_and_rejected_values(name: str) -> None:
    """For every tool, values drawn from its schema include admitted ones and near misses rejected ones."""
    contract = _contract(name)
    schema = contract.definition().input_schema
    admitted = find(
        from_schema(schema), lambda value: isinstance(prepare(contract, dumps(value)), Invocation), settings=_SEARCH
    )
    assert schema_allows(contract, admitted, formats=enforces_formats(contract))
    if name != "raw_open":
        rejected = find(
            near_misses(from_schema(schema)),
            lambda value: not isinstance(prepare(contract, dumps(value)), Invocation),
            settings=_SEARCH,
        )
        assert not isinstance(prepare(contract, dumps(rejected)), Invocation)


@pytest.mark.parametrize("name", NAMES)
@RELIABLE
@given(data=st.data())
def test_values_from_the_schema_agree(name: str, data: st.DataObject) -> None:
    """Values drawn from the advertised schema are admitted exactly when the schema allows them."""
    contract = _contract(name)
    _agree(contract, data.draw(from_schema(contract.definition().input_schema)))


@pytest.mark.parametrize("name", NAMES)
@RELIABLE
@given(data=st.data())
def test_near_misses_agree(name: str, data: st.DataObject) -> None:
    """Values one change away from the schema's are admitted exactly when the schema allows them."""
    contract = _contract(name)
    _agree(contract, data.draw(near_misses(from_schema(contract.definition().input_schema))))


@st.composite
def _model_documents(draw: st.DrawFn, name: str) -> dict[str, Any]:
    tool = TYPED[name]
    members, required = parameters_of(tool)  # type: ignore[misc]
    document: dict[str, Any] = {}
    for member, annotation in members.items():
        if member in required or draw(st.booleans()):
            document[member] = draw(python_values(annotation))
    signature = getattr(tool, "signature", None)
    if signature is not None:
        try:
            signature.input_type.model_validate(document)  # the model's own validators, beyond its members
        except ValueError:
            assume(False)
    return document


@pytest.mark.parametrize("name", sorted(TYPED))
@RELIABLE
@given(data=st.data())
def test_values_from_the_model_are_admitted_and_allowed(name: str, data: st.DataObject) -> None:
    """What pydantic itself dumps from a valid value of the tool's types is admitted and allowed by the schema."""
    contract = _contract(name)
    document = data.draw(_model_documents(name))
    outcome = prepare(contract, dumps(document))
    assert isinstance(outcome, Invocation), f"{name}: the contract rejects its own model's value {dumps(document)!r}"
    if not schema_allows(contract, document, formats=False):
        assert explain(contract, document, False, True) is not None, f"{name}: the schema forbids {dumps(document)!r}"


DOCUMENTED_EXAMPLES = [
    ("add", {"a": 1.0, "b": 2}, "integral-float"),
    ("blobs", {"data": "", "short": "ééé"}, "bytes-length-in-utf8"),
    ("bounded_decimal", {"value": "-1"}, "decimal-limits"),
    ("sig_keywords", {"type": "t", "price": " 1.5", "by_id": {"1_0": "x"}}, "lax-spellings-in-models"),
    ("ident", {"value": ""}, "typed-format"),
    ("sig_transfer", {"amount": 0}, "validator-rule"),
    ("multiples", {"step": 5, "half": 5e-324}, "float-multiple-tolerance"),
    ("unicode_pattern", {"word": "\u00b2"}, "regex-dialect"),
    ("text_rules", {"code": "AB\n"}, "python-re-dollar"),
    ("raw_formats", {"mail": "@"}, "email-format"),
    ("sig_inventory", {"labels": ["a", "a"]}, "set-duplicates-in-models"),
]


@pytest.mark.parametrize(("name", "value", "key"), DOCUMENTED_EXAMPLES)
def test_each_documented_disagreement_is_real(name: str, value: dict[str, Any], key: str) -> None:
    """Every documented disagreement happens, and is explained as itself (so none outlives its cause)."""
    contract = _contract(name)
    schema_ok = schema_allows(contract, value, formats=enforces_formats(contract))
    contract_ok = isinstance(prepare(contract, dumps(value)), Invocation)
    assert schema_ok != contract_ok
    known = explain(contract, value, schema_ok, contract_ok)
    assert known is not None
    assert (known.key, known.kind) == (key, "documented")


def test_every_documented_disagreement_has_an_example() -> None:
    """Each documented entry is exercised by an example above."""
    documented = {d.key for d in DISAGREEMENTS if d.kind == "documented"}
    assert documented == {key for _, _, key in DOCUMENTED_EXAMPLES}


def test_every_disagreement_is_documented_or_pinned_as_a_bug() -> None:
    """Every known disagreement is either documented or a bug pinned by a strict xfail test below."""
    assert {d.kind for d in DISAGREEMENTS} <= {"documented", "bug"}
    bugs = {d.key for d in DISAGREEMENTS if d.kind == "bug"}
    assert bugs == set()


@pytest.mark.parametrize(
    ("name", "value"), [("unique", {"items": ["a", "a"]}), ("variadic", {"values": [], "bag": [1, 1]})]
)
def test_set_fields_reject_repeated_items(name: str, value: dict[str, Any]) -> None:
    """A set-typed member with a repeated item breaks the advertised uniqueItems and is rejected."""
    contract = _contract(name)
    assert not schema_allows(contract, value, formats=False)
    assert not isinstance(prepare(contract, dumps(value)), Invocation)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("money", {"amount": " 1.5"}),
        ("money", {"amount": "1_000"}),
        ("money", {"amount": "NaN"}),
        ("decimals", {"amount": "1234.567"}),
        ("int_keys", {"by_id": {" 1": "x"}}),
        ("int_keys", {"by_id": {"+1": "x"}}),
    ],
)
def test_decimal_strings_and_integer_names_take_the_advertised_spelling(name: str, value: dict[str, Any]) -> None:
    """A Decimal string or an int member name the advertised pattern forbids is rejected by a tool's parameters."""
    contract = _contract(name)
    assert not schema_allows(contract, value, formats=False)
    assert not isinstance(prepare(contract, dumps(value)), Invocation)


@pytest.mark.parametrize(("name", "value"), [("mode", {"value": True}), ("level", {"value": True})])
def test_booleans_are_not_integer_literals(name: str, value: dict[str, Any]) -> None:
    """A boolean where the schema allows only integers (an enum or const of integers) is rejected."""
    contract = _contract(name)
    assert not schema_allows(contract, value, formats=False)
    assert not isinstance(prepare(contract, dumps(value)), Invocation)


# Formats are annotations in JSON Schema 2020-12 unless a validator opts in. Typed tools check them with
# pydantic's own parsers, which accept more spellings than the RFCs; these cases document the gap.
LENIENT_FORMATS = [
    ("when", {"at": "2020-01-01T00:00:00"}, "a date-time without an offset"),
    ("when", {"at": "2020-01-01 00:00:00Z"}, "a space instead of T"),
    ("when", {"at": "2020-01-01T00:00Z"}, "no seconds"),
    ("when", {"at": "2020-01-01T00:00:00+0000"}, "an offset without a colon"),
    ("when", {"at": "1700000000"}, "a Unix timestamp in a string"),
    ("calendar", {"day": "86400"}, "a Unix timestamp of a midnight in a string"),
    ("ident", {"value": "12345678123456781234567812345678"}, "a UUID without hyphens"),
    ("ident", {"value": "urn:uuid:12345678-1234-5678-1234-567812345678"}, "a URN UUID"),
]


@pytest.mark.parametrize(("name", "value", "what"), LENIENT_FORMATS)
def test_typed_formats_are_checked_by_pydantic_not_by_the_rfc(name: str, value: dict[str, Any], what: str) -> None:
    """Typed tools admit some spellings the advertised format (RFC 3339, RFC 4122) does not allow."""
    contract = _contract(name)
    assert isinstance(prepare(contract, dumps(value)), Invocation), what
    assert schema_allows(contract, value, formats=False)
    assert not schema_allows(contract, value, formats=True), what


def test_leap_seconds_are_rejected_by_typed_tools_though_rfc3339_allows_them() -> None:
    """A leap second is a valid RFC 3339 date-time that pydantic rejects and jsonschema-rs admits."""
    value = {"at": "2016-12-31T23:59:60Z"}
    typed, raw = _contract("when"), _contract("raw_formats")
    assert schema_allows(typed, value, formats=True)
    assert not isinstance(prepare(typed, dumps(value)), Invocation)
    assert isinstance(prepare(raw, dumps(value)), Invocation)
