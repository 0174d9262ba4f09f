"""The optional C extension, and the frozen values the hot paths build without their ``__init__``.

`speedups` says whether `scopetool._speedups` may be used (built, and not turned off with
SCOPETOOL_PURE_PYTHON=1). `build` makes an instance of a frozen slotted class from its slots'
values: where a path makes one value a call and has checked the values itself, ``build(cls,
members, *values)`` makes what ``cls(*values)`` makes, for less (`members` comes from `slots`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, Final, Protocol, TypeVar, cast

__all__ = ["Build", "build", "slots", "speedups"]

T = TypeVar("T")


def speedups() -> ModuleType | None:
    """`scopetool._speedups`, unless it is not built or SCOPETOOL_PURE_PYTHON=1 turns it off."""
    if os.environ.get("SCOPETOOL_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from . import _speedups  # noqa: PLC0415 - optional, compiled at install where a C compiler is found
    except ImportError:
        return None
    return _speedups


def slots(cls: type, *names: str) -> tuple[Any, ...]:
    """The slot descriptors of `cls` named `names`, in that order: the `members` of `build`."""
    return tuple(cls.__dict__[name] for name in names)


def _build_python(cls: type[T], members: tuple[Any, ...], /, *values: Any) -> T:
    """`build` without the C extension: ``object.__new__(cls)``, then each slot's own setter."""
    if len(members) != len(values):
        raise TypeError("build(cls, members, *values) takes a class, a tuple and one value a member")
    instance = object.__new__(cls)
    for member, value in zip(members, values, strict=True):
        member.__set__(instance, value)
    return instance


class Build(Protocol):
    """The type of `build`."""

    def __call__(self, cls: type[T], members: tuple[Any, ...], /, *values: Any) -> T:
        """A new `cls`, made without its ``__init__``, each slot descriptor of `members` set to its value."""
        ...


def _build_in_c() -> Callable[..., Any] | None:
    extension = speedups()
    return None if extension is None else extension.build


build: Final = cast("Build", _build_in_c() or _build_python)
"""``build(cls, members, *values)``: a new `cls`, made without its ``__init__``, each slot descriptor of
`members` set to its value in turn; in C where scopetool._speedups is installed (one call, where Python
makes a call a slot)."""
