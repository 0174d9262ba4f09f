"""Parsed arguments encoded as JSON text (`object_arguments`): orjson's text, the standard library's refusals."""

from __future__ import annotations

import datetime
import enum
import json
import math
import re
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scopetool.providers import ProviderError
from scopetool.providers._common import object_arguments

_STANDARD = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def _exact(text: str) -> Any:
    """The parsed text with member order and repeats kept, and every float's sign and digits (by repr)."""
    return json.loads(text, object_pairs_hook=list, parse_float=lambda digits: repr(float(digits)))


@given(st.dictionaries(st.text(max_size=8), _values, max_size=6))
def test_json_values_encode_to_the_standard_librarys_document(arguments: dict[str, Any]) -> None:
    """For JSON's own values the text is compact and parses to exactly what the standard library's does."""
    text = object_arguments(arguments, "here")
    assert _exact(text) == _exact(_STANDARD(arguments))
    assert not re.search(r"\s", re.sub(r'"(?:[^"\\]|\\.)*"', "", text))  # compact: no space outside strings


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinities_are_not_json_anywhere(bad: float) -> None:
    """orjson writes them as null; they are refused as before, nested or not."""
    for arguments in ({"x": bad}, {"x": [1, {"y": bad}]}, {"x": None, "y": bad}):
        with pytest.raises(ProviderError, match="here: arguments is not JSON"):
            object_arguments(arguments, "here")


def test_nulls_and_the_word_null_are_kept() -> None:
    """Text holding null (checked again by the standard library) is still orjson's."""
    assert object_arguments({"a": None, "b": "null", "c": [None]}, "here") == '{"a":null,"b":"null","c":[null]}'


class Text(str):
    """A str subclass."""


class Number(int):
    """An int subclass."""


class Colour(enum.IntEnum):
    """An int enum."""

    RED = 1


@pytest.mark.parametrize(
    "arguments",
    [
        {"big": 2**70, "small": -(2**70)},
        {"key": {1: "int key", 2.5: "float key", None: "null key"}},
        {"text": Text("sub"), "number": Number(7), "colour": Colour.RED},
        {"nested": {"deeper": [Text("x")]}},
        {"surrogate": "\ud800"},
    ],
    ids=["ints past 64 bits", "keys that are not str", "subclasses", "a nested subclass", "a lone surrogate"],
)
def test_what_orjson_refuses_the_standard_library_writes_as_before(arguments: dict[str, Any]) -> None:
    """What orjson leaves alone (big ints, keys that are not str, subclasses, surrogates) `json` writes as it did."""
    assert object_arguments(arguments, "here") == _STANDARD(arguments)


@pytest.mark.parametrize(
    "value",
    [datetime.date(2026, 1, 2), datetime.datetime(2026, 1, 2, 3, 4, 5), {1, 2}, b"bytes", object()],
    ids=["a date", "a datetime", "a set", "bytes", "an object"],
)
def test_values_json_has_no_form_for_are_refused(value: object) -> None:
    """A date, a set, bytes or any other object is not JSON: refused, naming where."""
    with pytest.raises(ProviderError, match="here: arguments is not JSON"):
        object_arguments({"x": value}, "here")


def test_a_uuid_and_an_enum_member_are_written_by_orjson() -> None:
    """The documented difference: orjson writes them (as its string, as its value); a provider never sends them."""

    class Plain(enum.Enum):
        ONE = "one"

    identifier = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert object_arguments({"id": identifier, "e": Plain.ONE}, "here") == f'{{"id":"{identifier}","e":"one"}}'
