"""Finding the one exception of a kind behind an error, through transparent wrapping only."""

from __future__ import annotations

from typing import Final, TypeVar, cast

__all__ = ["Sealed", "find_one"]

E = TypeVar("E", bound=BaseException)

MAX_CHAIN: Final = 64
"""Links followed at most; a deeper (or cyclic) chain establishes nothing."""


class _Ambiguous:
    """Marks a group that holds more than one distinct match."""


_AMBIGUOUS: Final = _Ambiguous()


def find_one(error: BaseException | None, kind: type[E]) -> E | None:
    """The one `kind` exception behind `error`, or None.

    It follows `__cause__` and, where Python set it implicitly and it was not suppressed,
    `__context__`. An exception group whose members hold more than one distinct match is ambiguous
    and yields None, as does a chain longer than `MAX_CHAIN` links. Exceptions that keep a private
    cause (`Failure`, `InputRejection`, `AuthorizationError`) expose no chain, so nothing behind them
    is ever inspected.
    """
    found = _find(error, kind, 0, set())
    return found if isinstance(found, kind) else None


def _find(error: BaseException | None, kind: type[E], depth: int, seen: set[int]) -> E | _Ambiguous | None:
    while error is not None:
        if depth > MAX_CHAIN or id(error) in seen:
            return None
        seen.add(id(error))
        depth += 1
        if isinstance(error, kind):
            return error
        if isinstance(error, BaseExceptionGroup):
            group = cast("BaseExceptionGroup[BaseException]", error)  # isinstance cannot name the member type
            hits: list[E] = []
            for member in group.exceptions:
                hit = _find(member, kind, depth, seen)
                if isinstance(hit, _Ambiguous):
                    return hit
                if hit is not None and all(hit is not other for other in hits):
                    hits.append(hit)
            if len(hits) > 1:
                return _AMBIGUOUS
            if hits:
                return hits[0]
        if error.__cause__ is not None:
            error = error.__cause__
        elif not error.__suppress_context__:
            error = error.__context__
        else:
            return None
    return None


class Sealed(BaseException):
    """Hides the exception chain: Python sets `__cause__`/`__context__` at raise time, these read None.

    The context is also suppressed, so an exception raised while handling another never prints it. A
    chain asked for explicitly (``raise ... from error``) is still printed by the interpreter's own
    excepthook on Python 3.11 and 3.12, which reads it below the attributes; every Python-level reader
    (`traceback`, `logging`, the classifiers) sees none.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.__suppress_context__ = True

    # typeshed declares both as plain attributes (BaseException | None): a property that reads None and
    # accepts any assignment is a safe override, but pyright refuses any property over a variable.
    @property
    def __cause__(self) -> None:
        return None

    @__cause__.setter
    def __cause__(self, value: BaseException | None) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
        pass

    @property
    def __context__(self) -> None:
        return None

    @__context__.setter
    def __context__(self, value: BaseException | None) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
        pass
