"""Checking exported dicts against provider SDK TypedDicts: pydantic validation plus exact key sets.

TypedDict validation lets misspelled keys through, so every dict is also checked, recursively, for
keys the TypedDict does not declare (see providers.md section 12).
"""

from __future__ import annotations

import types
import typing
from typing import Any, Union

import typing_extensions
from pydantic import TypeAdapter


def check_typed_dict(value: Any, typed: Any) -> None:
    """Validate `value` against the SDK type `typed` and refuse any key it does not declare."""
    TypeAdapter(typed).validate_python(value)
    _check_keys(value, typed, "$")


def _check_keys(value: Any, annotation: Any, path: str) -> None:
    annotation = _strip(annotation)
    if isinstance(value, dict) and typing_extensions.is_typeddict(annotation):
        hints = typing_extensions.get_type_hints(annotation, include_extras=True)
        unknown = set(value) - set(hints)
        assert not unknown, f"{path}: keys {sorted(unknown)} are not in {annotation.__name__}"
        for key, member in value.items():
            _check_keys(member, hints[key], f"{path}.{key}")
        return
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        choices = [c for c in typing.get_args(annotation) if _accepts(member_type=c, value=value)]
        errors = []
        for choice in choices:
            try:
                _check_keys(value, choice, path)
            except AssertionError as error:
                errors.append(str(error))
            else:
                return
        if choices:
            raise AssertionError("; ".join(errors))
        return
    if (isinstance(value, list) and origin in (list, typing.Iterable, typing.Sequence, tuple)) or (
        isinstance(value, list) and origin is not None and str(origin).endswith("Iterable'>")
    ):
        args = typing.get_args(annotation)
        if args:
            for index, item in enumerate(value):
                _check_keys(item, args[0], f"{path}[{index}]")


def _strip(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if (
            origin in (typing_extensions.Required, typing_extensions.NotRequired, typing_extensions.ReadOnly)
            or origin is typing_extensions.Annotated
            or origin is typing.Annotated
        ):
            annotation = typing.get_args(annotation)[0]
        else:
            return annotation


def _accepts(member_type: Any, value: Any) -> bool:
    member_type = _strip(member_type)
    try:
        TypeAdapter(member_type).validate_python(value)
    except Exception:
        return False
    return True
