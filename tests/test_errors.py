"""`_errors`: the error tree, and a rejection whose explanation is settled when first read."""

from __future__ import annotations

import copy
import pickle
import threading
import traceback

import pytest

from scopetool import InputRejection, InvalidInvocationError, ScopetoolError
from scopetool._errors import deferred_rejection


class Explainer:
    """An explanation that counts how often it runs."""

    def __init__(self, message: str = "fix it") -> None:
        self.message = message
        self.cause = InputRejection("fix it")
        self.runs = 0

    def __call__(self, first: object, second: object, third: object) -> tuple[str, BaseException | None]:
        assert (first, second, third) == ("contract", "raw", "failure")  # the values kept beside it
        self.runs += 1
        return self.message, self.cause


READS = {
    "str": str,
    "repr": repr,
    "args": lambda error: error.args,
    "cause": lambda error: error.__cause__,
    "pickle": pickle.dumps,
    "copy": copy.copy,
    "traceback": traceback.format_exception,
}


@pytest.mark.parametrize("first", READS)
def test_a_deferred_rejection_settles_once_whatever_is_read_first(first: str) -> None:
    """Whatever is read first, the explanation runs once and every reader sees the same message and cause."""
    explain = Explainer()
    error = deferred_rejection(explain, "contract", "raw", "failure")
    READS[first](error)
    assert str(error) == explain.message
    assert error.args == (explain.message,)
    assert error.__cause__ is explain.cause
    assert error.__suppress_context__
    assert repr(error) == f"InvalidInvocationError({explain.message!r})"
    assert explain.runs == 1


def test_a_deferred_rejection_is_an_ordinary_invalid_invocation_error() -> None:
    """It is caught as InvalidInvocationError, ScopetoolError and ValueError, and its type is the public one."""
    with pytest.raises(ValueError, match="fix it") as info:
        raise deferred_rejection(Explainer(), "contract", "raw", "failure")
    assert type(info.value) is InvalidInvocationError
    assert isinstance(info.value, ScopetoolError)


def test_a_pickled_deferred_rejection_keeps_its_message() -> None:
    """Pickling settles the explanation first, so the copy carries the message (not the pending work)."""
    explain = Explainer()
    restored = pickle.loads(pickle.dumps(deferred_rejection(explain, "contract", "raw", "failure")))
    assert str(restored) == explain.message
    assert explain.runs == 1


def test_a_printed_deferred_rejection_shows_its_cause() -> None:
    """A formatted traceback shows the rejection behind the error, as an eagerly built error's would."""
    try:
        raise deferred_rejection(Explainer(), "contract", "raw", "failure")
    except InvalidInvocationError as error:
        printed = "".join(traceback.format_exception(error))
    assert "InputRejection: fix it" in printed
    assert "The above exception was the direct cause" in printed
    assert printed.rstrip().endswith("InvalidInvocationError: fix it")


def test_threads_reading_a_fresh_deferred_rejection_see_one_cause() -> None:
    """Threads that read a fresh error at once see the same cause object, and the explanation runs once."""

    class Fresh(Explainer):
        def __call__(self, first: object, second: object, third: object) -> tuple[str, BaseException | None]:
            self.runs += 1
            return self.message, InputRejection(f"fix it ({self.runs})")

    explain = Fresh()
    error = deferred_rejection(explain, "contract", "raw", "failure")
    barrier = threading.Barrier(16)
    seen: list[BaseException | None] = []

    def read() -> None:
        barrier.wait()
        seen.append(error.__cause__)

    threads = [threading.Thread(target=read) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert explain.runs == 1
    assert len(seen) == 16
    assert all(cause is seen[0] for cause in seen)


def test_assigning_to_a_deferred_rejection_settles_it_first() -> None:
    """An assignment to args or __cause__ replaces the settled value, never the pending one."""
    explain = Explainer()
    error = deferred_rejection(explain, "contract", "raw", "failure")
    error.args = ("replaced",)
    assert explain.runs == 1
    assert str(error) == "replaced"
    other = ValueError("other")
    error.__cause__ = other
    assert error.__cause__ is other


def test_plain_invalid_invocation_errors_are_untouched() -> None:
    """Errors made the ordinary way keep their arguments, and ``raise ... from`` sets their cause."""
    cause = KeyError("k")
    try:
        raise InvalidInvocationError("plain", 2) from cause
    except InvalidInvocationError as error:
        assert error.args == ("plain", 2)
        assert error.__cause__ is cause
        assert repr(error) == "InvalidInvocationError('plain', 2)"


def test_a_subclass_that_skips_the_base_init_still_reads() -> None:
    """A subclass whose __init__ never calls the base still converts to text, with no pending explanation."""

    class Quiet(InvalidInvocationError):
        def __init__(self) -> None:
            pass

    error = Quiet()
    assert str(error) == ""
    assert error.__cause__ is None
    assert pickle.loads(pickle.dumps(InvalidInvocationError("x"))).args == ("x",)
