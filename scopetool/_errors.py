"""The exceptions scopetool raises.

The tree:

* `ScopetoolError`: the root; catch it to catch every scopetool error.
    * `InvalidDefinitionError` (also `ValueError`): a `Definition` breaks the protocol's rules.
    * `InvalidToolError` (also `ValueError`): a tool cannot be bound or built (bad signature, bad
      definition, bad schema). Raised at decoration or `bind`, never per call.
    * `InvalidInvocationError` (also `ValueError`): an untrusted `Request` was not admitted, or an
      `Invocation` was used where it does not belong. When the model can correct its input the error
      carries an `InputRejection` that `classify_input_rejection` finds.
    * `DuplicateToolError` (also `ValueError`): a registry already holds a tool of that name.
    * `ToolNotFoundError` (also `KeyError`): ``registry[name]`` names no registered tool.
    * `InvalidOutputError` (also `ValueError`): an `Output` or a tool's return value breaks the output
      contract.
    * `InputValidationError`: an input validator itself is defective (it raised something other than a
      validation error or an `InputRejection`). Never shown to the model.

`InputRejection` is not an error of scopetool's but a signal that validators raise; it lives in
`_rejection.py`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final

__all__ = [
    "DuplicateToolError",
    "InputValidationError",
    "InvalidDefinitionError",
    "InvalidInvocationError",
    "InvalidOutputError",
    "InvalidToolError",
    "ScopetoolError",
    "ToolNotFoundError",
]


class ScopetoolError(Exception):
    """The root of every error scopetool raises."""


class InvalidDefinitionError(ScopetoolError, ValueError):
    """A tool definition breaks the protocol's rules (name, schema shape, effect)."""


class InvalidToolError(ScopetoolError, ValueError):
    """A tool cannot be built or bound; the message lists every problem found."""


class InvalidInvocationError(ScopetoolError, ValueError):
    """A request was not admitted, or an invocation was used where it does not belong."""

    # A rejection raised at admission may leave its explanation pending: building the model-facing
    # message costs far more than raising, and most callers read it once or never. The pending
    # explanation, called with the three values kept beside it, gives the message and the cause; the
    # first read of `args`, `__cause__`, ``str``, ``repr`` or pickling settles it, once, so every
    # reader sees the same result. The slots are unset on every other instance. (Three slots rather
    # than one tuple: the C prepare fills them, and a rejection then allocates one object less.)
    __slots__ = ("_pending", "_pending_1", "_pending_2", "_pending_3")

    _pending: Explanation
    _pending_1: Any
    _pending_2: Any
    _pending_3: Any

    def _settle(self) -> None:
        if _ARGS.__get__(self):
            return  # it has its message: nothing is pending (a pending rejection has none until settled)
        with _SETTLING:  # reentrant: an explanation reads the errors it builds
            explain: Explanation | None = getattr(self, "_pending", None)
            if explain is not None:
                message, cause = explain(self._pending_1, self._pending_2, self._pending_3)
                _ARGS.__set__(self, (message,))
                _CAUSE.__set__(self, cause)
                del self._pending, self._pending_1, self._pending_2, self._pending_3

    # typeshed declares both as plain attributes: a property that settles first and accepts any
    # assignment is a safe override, but pyright refuses any property over a variable.
    @property
    def args(self) -> tuple[Any, ...]:
        """The exception's arguments: its message (a pending explanation is settled first)."""
        self._settle()
        return _ARGS.__get__(self)  # type: ignore[no-any-return]

    @args.setter
    def args(self, value: tuple[Any, ...]) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
        self._settle()
        _ARGS.__set__(self, value)

    @property
    def __cause__(self) -> BaseException | None:
        self._settle()
        return _CAUSE.__get__(self)  # type: ignore[no-any-return]

    @__cause__.setter
    def __cause__(self, value: BaseException | None) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
        self._settle()
        _CAUSE.__set__(self, value)

    def __str__(self) -> str:
        self._settle()
        return super().__str__()

    def __repr__(self) -> str:
        self._settle()
        return super().__repr__()

    def __reduce__(self) -> str | tuple[Any, ...]:
        self._settle()
        return super().__reduce__()


Explanation = Callable[[Any, Any, Any], tuple[str, BaseException | None]]
"""Builds a pending rejection's message and cause from its three values (see `deferred_rejection`)."""

_SETTLING: Final = threading.RLock()
_ARGS: Final[Any] = BaseException.__dict__["args"]
_CAUSE: Final[Any] = BaseException.__dict__["__cause__"]


def deferred_rejection(explain: Explanation, first: Any, second: Any, third: Any) -> InvalidInvocationError:
    """An `InvalidInvocationError` whose message and cause ``explain(first, second, third)`` builds when read.

    `explain` must be deterministic and must not fail: it runs at most once, on whichever thread
    reads the error first. (The C prepare of `scopetool._speedups` fills the same slots.)
    """
    error = InvalidInvocationError.__new__(InvalidInvocationError)
    # These are this module's own class's slots.
    error._pending = explain  # pyright: ignore[reportPrivateUsage]
    error._pending_1 = first  # pyright: ignore[reportPrivateUsage]
    error._pending_2 = second  # pyright: ignore[reportPrivateUsage]
    error._pending_3 = third  # pyright: ignore[reportPrivateUsage]
    return error


class DuplicateToolError(ScopetoolError, ValueError):
    """A tool name is already taken in a registry, or appears twice in one batch."""


class ToolNotFoundError(ScopetoolError, KeyError):
    """``registry[name]`` names no registered tool; the message suggests the nearest registered names."""

    def __init__(self, name: str, message: str, *, near: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.name = name
        """The name that was looked up."""
        self.near = near
        """The nearest names the caller may call (what "did you mean" names), nearest first."""

    def __str__(self) -> str:
        # KeyError's own str() is the repr of its argument, which would quote the whole message.
        return str(self.args[0])


class InvalidOutputError(ScopetoolError, ValueError):
    """An output, or a value a tool returned, breaks the output contract."""


class InputValidationError(ScopetoolError):
    """An input validator is defective: it raised something that is not a rejection.

    The defect is private diagnostics: `cause` holds it, but it is neither the exception's
    `__cause__` nor part of its message, so nothing of it reaches the model.
    """

    __slots__ = ("_cause",)

    def __init__(self, cause: BaseException) -> None:
        super().__init__("the input validator failed (its error is in .cause)")
        self._cause = cause

    @property
    def cause(self) -> BaseException:
        """The defect the validator raised, for diagnostics only."""
        return self._cause
