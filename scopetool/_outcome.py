"""Outcomes of a call that did not complete: `Failure` (definite) and `CallError` (evidence only)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, final

from ._chain import Sealed, find_one
from ._errors import ScopetoolError
from ._output import Output

__all__ = ["CallError", "Failure", "FailureKind", "InvalidFailureError", "classify_failure"]


class InvalidFailureError(ScopetoolError, ValueError):
    """A `Failure` or `CallError` was configured against its rules."""


class FailureKind(StrEnum):
    """What a definite unsuccessful outcome was, independent of its diagnostic cause."""

    FAILED = "failed"
    """The call definitely did not succeed. It does not claim execution began, and may describe
    acknowledged partial effects."""
    REJECTED = "rejected"
    """The call was refused permission to execute."""


@final
class Failure(Sealed, Exception):  # noqa: N818 - an outcome, named for what happened (the seed's name)
    """One complete unsuccessful outcome of the current call.

    `output` is explicitly public: it is what the model is shown. `cause` is private diagnostics: it is
    not the exception's `__cause__` or `__context__` (both always read None, even after
    ``raise Failure(...) from error``), it is not in the message, and `classify_failure` never looks
    inside it. A `FAILED` outcome needs a cause; a `REJECTED` one (a policy decision) may have none.

    Example:
        ```python
        from scopetool import Failure, FailureKind, classify_failure

        try:
            try:
                raise Failure(kind=FailureKind.REJECTED, output="this operation is not permitted",
                              cause=PermissionError("internal policy diagnostic"))
            except Failure as failure:
                raise RuntimeError("tool call") from failure
        except RuntimeError as error:
            found = classify_failure(error)
        print(found.kind, found.output.text())
        #> rejected this operation is not permitted
        ```
    """

    __slots__ = ("_cause", "_kind", "_output")

    def __init__(self, *, kind: FailureKind, output: Output | str = "", cause: BaseException | None = None) -> None:
        if not isinstance(kind, FailureKind):
            raise InvalidFailureError(f"failure kind must be a FailureKind, not {kind!r}")
        if cause is not None and not isinstance(cause, BaseException):
            raise InvalidFailureError(f"failure cause must be an exception, not {type(cause).__name__}")
        if kind is FailureKind.FAILED and cause is None:
            raise InvalidFailureError("a FAILED outcome needs a cause")
        if isinstance(output, str):
            output = Output.from_text(output)
        elif not isinstance(output, Output):
            raise InvalidFailureError(f"failure output must be an Output or str, not {type(output).__name__}")
        super().__init__(f"tool: {kind.value}")
        self._kind = kind
        self._output = output  # Output is immutable, so this is already a detached snapshot
        self._cause = cause

    @property
    def kind(self) -> FailureKind:
        """Whether the call failed or was rejected."""
        return self._kind

    @property
    def output(self) -> Output:
        """The public outcome the model is shown."""
        return self._output

    @property
    def cause(self) -> BaseException | None:
        """Private diagnostics; never shown to the model and never followed by classifiers."""
        return self._cause

    def __repr__(self) -> str:
        return f"Failure(kind={self._kind.name}, output={self._output.text()!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_failure, (self._kind, self._output))


def _rebuild_failure(kind: FailureKind, output: Output) -> Failure:
    return Failure(kind=FailureKind.REJECTED, output=output) if kind is FailureKind.REJECTED else _lost(output)


def _lost(output: Output) -> Failure:
    return Failure(kind=FailureKind.FAILED, output=output, cause=RuntimeError("cause not carried across pickling"))


def classify_failure(error: BaseException | None) -> Failure | None:
    """Find the one `Failure` behind `error`: the definite outcome of the current call, or None.

    Transparent wrapping keeps one Failure findable (``raise X from failure``, and `__context__` where
    Python set it implicitly and it was not suppressed). An exception group whose members hold more
    than one distinct Failure joins independent outcomes: that is ambiguous and yields None. A
    Failure's private `cause` is never inspected.
    """
    return find_one(error, Failure)


@final
class CallError(Exception):
    """An ordinary error that carries observed evidence (what the call did before it failed).

    It declares no outcome and no retry policy: it is never a `Failure`, and its `evidence` is for
    diagnostics and evaluation, not a result to show the model. It is transparent: its `cause` is its
    `__cause__`, so ``except``, `classify_failure` and `classify_input_rejection` see through it.
    Absent evidence does not prove absent effects.
    """

    __slots__ = ("_cause", "_evidence")

    def __init__(self, cause: BaseException, *, evidence: Output | str = "") -> None:
        if not isinstance(cause, BaseException):
            raise InvalidFailureError(f"a CallError needs an exception as its cause, not {type(cause).__name__}")
        if isinstance(evidence, str):
            evidence = Output.from_text(evidence)
        elif not isinstance(evidence, Output):
            raise InvalidFailureError(f"CallError evidence must be an Output or str, not {type(evidence).__name__}")
        super().__init__(str(cause))
        self._cause = cause
        self._evidence = evidence

    # The cause stays visible whatever ``raise CallError(...) from x`` says. typeshed declares __cause__ a
    # plain attribute (BaseException | None): a property that reads a BaseException and accepts any
    # assignment is a safe override, but pyright refuses any property over a variable.
    @property
    def __cause__(self) -> BaseException:
        return self._cause

    @__cause__.setter
    def __cause__(self, value: BaseException | None) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
        pass

    @property
    def cause(self) -> BaseException:
        """The original error (also `__cause__`)."""
        return self._cause

    @property
    def evidence(self) -> Output:
        """What was observed before the error, as an immutable `Output`."""
        return self._evidence

    def __repr__(self) -> str:
        return f"CallError({self._cause!r})"
