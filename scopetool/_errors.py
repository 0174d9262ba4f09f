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
    * `InvalidOutputError` (also `ValueError`): an `Output` or a tool's return value breaks the output
      contract.
    * `InputValidationError`: an input validator itself is defective (it raised something other than a
      validation error or an `InputRejection`). Never shown to the model.

`InputRejection` is not an error of scopetool's but a signal that validators raise; it lives in
`_rejection.py`.
"""

from __future__ import annotations

__all__ = [
    "DuplicateToolError",
    "InputValidationError",
    "InvalidDefinitionError",
    "InvalidInvocationError",
    "InvalidOutputError",
    "InvalidToolError",
    "ScopetoolError",
]


class ScopetoolError(Exception):
    """The root of every error scopetool raises."""


class InvalidDefinitionError(ScopetoolError, ValueError):
    """A tool definition breaks the protocol's rules (name, schema shape, effect)."""


class InvalidToolError(ScopetoolError, ValueError):
    """A tool cannot be built or bound; the message lists every problem found."""


class InvalidInvocationError(ScopetoolError, ValueError):
    """A request was not admitted, or an invocation was used where it does not belong."""


class DuplicateToolError(ScopetoolError, ValueError):
    """A tool name is already taken in a registry, or appears twice in one batch."""


class InvalidOutputError(ScopetoolError, ValueError):
    """An output, or a value a tool returned, breaks the output contract."""


class InputValidationError(ScopetoolError):
    """An input validator is defective: it raised something that is not a rejection.

    The defect is private diagnostics: `cause` holds it, but it is neither the exception's
    `__cause__` nor part of its message, so nothing of it reaches the model.
    """

    __slots__ = ("_cause",)

    def __init__(self, cause: BaseException) -> None:
        super().__init__("tool: input validator failed")
        self._cause = cause

    @property
    def cause(self) -> BaseException:
        """The defect the validator raised, for diagnostics only."""
        return self._cause
