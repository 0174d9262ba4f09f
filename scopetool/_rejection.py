"""`InputRejection`: model-correctable input with an explicitly public message, and how one is found."""

from __future__ import annotations

from typing import Final

from ._chain import Sealed, find_one

__all__ = ["MAX_REJECTION_CHARS", "InputRejection", "classify_input_rejection"]

MAX_REJECTION_CHARS: Final = 4000
"""The longest public message a rejection carries; longer ones are cut with an ellipsis."""


def _cut(message: str) -> str:
    """`message`, cut to `MAX_REJECTION_CHARS` with an ellipsis where it is longer."""
    return message if len(message) <= MAX_REJECTION_CHARS else message[: MAX_REJECTION_CHARS - 1] + "…"


class InputRejection(Sealed, ValueError):  # noqa: N818 - a signal, named for what happened (the seed's name)
    """Input the model can correct, with a message that is public to it.

    Raise it from a pydantic validator of a tool's input (or an input validator) to send exactly
    `message` back to the model. It is a `ValueError`, so pydantic goes on validating the other
    fields, and schema problems elsewhere are still reported first. `cause` is private diagnostics: the
    exception's `__cause__` and `__context__` always read None (even after ``raise ... from error``),
    it is never shown, and no classifier looks behind a rejection.

    Example:
        ```python
        from pydantic import BaseModel, field_validator
        from scopetool import InputRejection

        class Transfer(BaseModel):
            amount: int

            @field_validator("amount")
            @classmethod
            def positive(cls, value: int) -> int:
                if value <= 0:
                    raise InputRejection("amount must be a positive number of cents")
                return value
        ```
    """

    __slots__ = ("_cause", "_message")

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        if not isinstance(message, str) or not message.strip():
            raise TypeError("InputRejection needs a non-empty public message (str)")
        if cause is not None and not isinstance(cause, BaseException):
            raise TypeError(f"InputRejection cause must be an exception, not {type(cause).__name__}")
        message = _cut(message)
        super().__init__(message)
        self._message = message
        self._cause = cause

    @classmethod
    def _written(cls, message: str, cause: BaseException | None) -> InputRejection:
        """``InputRejection(message, cause=cause)``, for a non-empty `message` scopetool wrote.

        A contract makes one for every rejected call: this skips the checks of ``__init__``, and the
        keyword argument a call of the class would pass through to it, which cost several times the rest.
        """
        message = _cut(message)
        rejection = cls.__new__(cls, message)  # BaseException.__new__ sets the args, as __init__ would
        rejection.__suppress_context__ = True  # as `Sealed.__init__` does
        rejection._message = message
        rejection._cause = cause
        return rejection

    @property
    def message(self) -> str:
        """The public, model-facing explanation."""
        return self._message

    @property
    def cause(self) -> BaseException | None:
        """Private diagnostics; never shown to the model."""
        return self._cause

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (self._message,))


def _rebuild(message: str) -> InputRejection:
    return InputRejection(message)


def classify_input_rejection(error: BaseException | None) -> InputRejection | None:
    """Find the one `InputRejection` behind `error`, or None.

    It follows transparent wrapping: `raise X from rejection` (`__cause__`) and, where Python set it
    implicitly and did not suppress it, `__context__`. An exception group whose members hold more than
    one distinct rejection is ambiguous and yields None; so does a chain deeper than 64 links. A
    rejection's private `cause` is never inspected.
    """
    return find_one(error, InputRejection)
