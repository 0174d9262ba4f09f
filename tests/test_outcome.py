"""Tests for scopetool._outcome: Failure, FailureKind, classify_failure and CallError."""

from __future__ import annotations

import contextlib
import io
import pickle
import sys
import traceback
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from scopetool import (
    CallError,
    Failure,
    FailureKind,
    InputRejection,
    InputValidationError,
    InvalidFailureError,
    Output,
    ScopetoolError,
    TextBlock,
    classify_failure,
    classify_input_rejection,
)

SECRET = "s3cr3t-db-password-0xDEADBEEF"


def failed(output: Output | str = "public failure text", secret: str = SECRET) -> Failure:
    """A FAILED outcome whose private cause carries `secret`."""
    return Failure(kind=FailureKind.FAILED, output=output, cause=ValueError(secret))


def rejected(output: Output | str = "not permitted") -> Failure:
    """A REJECTED outcome without a cause."""
    return Failure(kind=FailureKind.REJECTED, output=output)


def wrap(inner: BaseException, *, times: int) -> BaseException:
    """Wrap `inner` in `times` RuntimeErrors linked through __cause__."""
    error = inner
    for index in range(times):
        outer = RuntimeError(f"wrapper {index}")
        outer.__cause__ = error
        error = outer
    return error


def raised_from(inner: BaseException) -> BaseException:
    """A RuntimeError raised with ``raise ... from inner``."""
    try:
        raise RuntimeError("outer") from inner
    except RuntimeError as error:
        return error


def raised_during(inner: BaseException) -> BaseException:
    """A RuntimeError raised while `inner` was being handled (implicit __context__)."""
    try:
        try:
            raise inner
        except BaseException:
            raise RuntimeError("during handling")  # noqa: B904
    except RuntimeError as error:
        return error


def raised_suppressing(inner: BaseException) -> BaseException:
    """A RuntimeError raised with ``from None`` while `inner` was being handled."""
    try:
        try:
            raise inner
        except BaseException:
            raise RuntimeError("suppressed") from None
    except RuntimeError as error:
        return error


def formatted(error: BaseException) -> str:
    """The whole traceback text of `error`, as the traceback module renders it."""
    return "".join(traceback.format_exception(error))


# --------------------------------------------------------------------------------------------------
# FailureKind


def test_failure_kind_values() -> None:
    """The two kinds have the seed's wire values."""
    assert FailureKind.FAILED.value == "failed"
    assert FailureKind.REJECTED.value == "rejected"
    assert set(FailureKind) == {FailureKind.FAILED, FailureKind.REJECTED}


# --------------------------------------------------------------------------------------------------
# Failure: invalid configurations


@pytest.mark.parametrize("kind", ["failed", "rejected", "", None, 0, "FAILED", object()])
def test_failure_kind_must_be_failure_kind(kind: Any) -> None:
    """A kind that is not a FailureKind (plain strings included) is an invalid failure."""
    with pytest.raises(InvalidFailureError):
        Failure(kind=kind, output="x", cause=ValueError("c"))


def test_failed_without_cause_is_invalid() -> None:
    """A FAILED outcome needs a cause."""
    with pytest.raises(InvalidFailureError, match="cause"):
        Failure(kind=FailureKind.FAILED, output="x")


def test_failed_with_explicit_none_cause_is_invalid() -> None:
    """cause=None is the same as no cause for FAILED."""
    with pytest.raises(InvalidFailureError):
        Failure(kind=FailureKind.FAILED, output="x", cause=None)


@pytest.mark.parametrize("kind", list(FailureKind))
@pytest.mark.parametrize("cause", ["oops", 42, ValueError, object(), [ValueError("x")]])
def test_failure_cause_must_be_exception(kind: FailureKind, cause: Any) -> None:
    """A cause that is not an exception instance (a class included) is invalid for both kinds."""
    with pytest.raises(InvalidFailureError):
        Failure(kind=kind, output="x", cause=cause)


@pytest.mark.parametrize("output", [None, b"bytes", 5, {"text": "x"}, ["x"], TextBlock("x")])
def test_failure_output_must_be_output_or_str(output: Any) -> None:
    """An output that is neither an Output nor a str is invalid."""
    with pytest.raises(InvalidFailureError):
        Failure(kind=FailureKind.REJECTED, output=output)


def test_invalid_failure_error_is_scopetool_value_error() -> None:
    """InvalidFailureError is catchable as ScopetoolError and ValueError."""
    assert issubclass(InvalidFailureError, ScopetoolError)
    assert issubclass(InvalidFailureError, ValueError)


# --------------------------------------------------------------------------------------------------
# Failure: valid configurations and snapshots


def test_rejected_without_cause() -> None:
    """A REJECTED outcome may be a bare policy decision."""
    failure = rejected("this operation is not permitted")
    assert failure.kind is FailureKind.REJECTED
    assert failure.cause is None
    assert failure.output.text() == "this operation is not permitted"


def test_rejected_with_cause() -> None:
    """A REJECTED outcome may keep a private diagnostic cause."""
    cause = PermissionError("policy table row 17")
    failure = Failure(kind=FailureKind.REJECTED, output="no", cause=cause)
    assert failure.kind is FailureKind.REJECTED
    assert failure.cause is cause


def test_failed_with_cause() -> None:
    """A FAILED outcome keeps the exact cause object."""
    cause = OSError("disk full")
    failure = Failure(kind=FailureKind.FAILED, output="could not save", cause=cause)
    assert failure.kind is FailureKind.FAILED
    assert failure.cause is cause


def test_failure_base_exception_cause_allowed() -> None:
    """Any BaseException instance is a valid cause."""
    cause = KeyboardInterrupt()
    assert Failure(kind=FailureKind.FAILED, cause=cause).cause is cause


def test_failure_str_output_becomes_text_output() -> None:
    """A str output is converted to a text-only Output."""
    failure = rejected("plain words")
    assert isinstance(failure.output, Output)
    assert failure.output == Output(content=(TextBlock("plain words"),))
    assert failure.output.details is None


def test_failure_empty_str_output_is_empty_output() -> None:
    """The default (empty) output is the empty Output."""
    failure = Failure(kind=FailureKind.REJECTED)
    assert failure.output == Output()
    assert failure.output.text() == ""


def test_failure_keeps_structured_output() -> None:
    """An Output with details is kept byte for byte."""
    output = Output(content=(TextBlock("see details"),), details=b'{"code": 7}')
    failure = Failure(kind=FailureKind.REJECTED, output=output)
    assert failure.output.details == b'{"code": 7}'
    assert failure.output.text() == "see details"


def test_failure_output_is_immutable() -> None:
    """Neither the Failure's output attribute nor the Output itself can be changed."""
    failure = rejected("fixed")
    with pytest.raises(AttributeError):
        failure.output = Output.from_text("changed")  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        failure.output.content = (TextBlock("changed"),)  # type: ignore[misc]
    assert failure.output.text() == "fixed"


def test_failure_kind_and_cause_are_read_only() -> None:
    """kind and cause are properties without setters."""
    failure = failed()
    with pytest.raises(AttributeError):
        failure.kind = FailureKind.REJECTED  # type: ignore[misc]
    with pytest.raises(AttributeError):
        failure.cause = None  # type: ignore[misc]
    assert failure.kind is FailureKind.FAILED


# --------------------------------------------------------------------------------------------------
# Failure: the cause is private


def test_failure_str_is_kind_not_cause() -> None:
    """str(failure) names the kind and never the cause's text."""
    assert str(failed()) == "tool: failed"
    assert str(Failure(kind=FailureKind.REJECTED, output="o", cause=ValueError(SECRET))) == "tool: rejected"
    assert str(rejected()) == "tool: rejected"


def test_failure_args_and_repr_hide_cause() -> None:
    """Neither args nor repr carry the cause's text."""
    failure = failed("public words")
    assert SECRET not in repr(failure)
    assert all(SECRET not in str(arg) for arg in failure.args)
    assert "public words" in repr(failure)


def test_failure_cause_is_not_dunder_cause() -> None:
    """A fresh Failure exposes no exception chain."""
    failure = failed()
    assert failure.__cause__ is None
    assert failure.__context__ is None


def test_failure_raise_from_does_not_chain() -> None:
    """After ``raise Failure(...) from err`` both chain attributes read None."""
    with pytest.raises(Failure) as caught:
        try:
            raise ValueError(SECRET)
        except ValueError as err:
            raise Failure(kind=FailureKind.FAILED, output="public", cause=err) from err
    failure = caught.value
    assert failure.__cause__ is None
    assert failure.__context__ is None
    assert isinstance(failure.cause, ValueError)
    assert SECRET not in formatted(failure)


def test_failure_raised_in_except_block_does_not_chain() -> None:
    """A Failure raised while handling an error does not get it as __context__."""
    with pytest.raises(Failure) as caught:
        try:
            raise ValueError(SECRET)
        except ValueError as err:
            raise Failure(kind=FailureKind.FAILED, output="public", cause=err)  # noqa: B904
    failure = caught.value
    assert failure.__cause__ is None
    assert failure.__context__ is None
    text = formatted(failure)
    assert SECRET not in text
    assert "tool: failed" in text


def test_failure_chain_assignment_is_ignored() -> None:
    """Assigning __cause__ or __context__ explicitly does not expose anything."""
    failure = failed()
    failure.__cause__ = ValueError(SECRET)
    failure.__context__ = ValueError(SECRET)
    assert failure.__cause__ is None
    assert failure.__context__ is None
    assert SECRET not in formatted(failure)


def test_wrapped_failure_traceback_hides_its_cause() -> None:
    """A wrapper's traceback shows the Failure but not the Failure's private cause."""
    wrapper = raised_from(failed())
    text = formatted(wrapper)
    assert "tool: failed" in text
    assert SECRET not in text


@pytest.mark.parametrize(
    "explicit",
    [
        False,
        pytest.param(
            True,
            marks=pytest.mark.xfail(
                sys.version_info < (3, 13),
                strict=True,
                reason="LIMITATION (documented on Sealed): an explicit `raise Failure(...) from err` is printed "
                "by the 3.11/3.12 interpreter hook, which reads the chain below the attributes",
            ),
        ),
    ],
)
def test_default_excepthook_never_shows_the_cause(explicit: bool) -> None:
    """An uncaught Failure printed by the interpreter's own hook does not reveal its cause."""
    with pytest.raises(Failure) as caught:
        try:
            raise ValueError(SECRET)
        except ValueError as err:
            if explicit:
                raise Failure(kind=FailureKind.FAILED, output="public", cause=err) from err
            raise Failure(kind=FailureKind.FAILED, output="public", cause=err)  # noqa: B904
    failure = caught.value
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        sys.__excepthook__(type(failure), failure, failure.__traceback__)
    assert "tool: failed" in buffer.getvalue()
    assert SECRET not in buffer.getvalue()


# --------------------------------------------------------------------------------------------------
# Failure: pickling


def test_pickle_rejected_round_trip() -> None:
    """A REJECTED Failure keeps its kind and output across pickling; the private cause is dropped."""
    original = Failure(
        kind=FailureKind.REJECTED,
        output=Output(content=(TextBlock("nope"),), details=b'{"a":1}'),
        cause=ValueError(SECRET),
    )
    data = pickle.dumps(original)
    assert SECRET.encode() not in data
    copy = pickle.loads(data)
    assert isinstance(copy, Failure)
    assert copy.kind is FailureKind.REJECTED
    assert copy.output == original.output
    assert copy.cause is None
    assert str(copy) == "tool: rejected"


def test_pickle_failed_round_trip() -> None:
    """A FAILED Failure stays valid across pickling (it still has a cause) without carrying the secret."""
    original = failed("could not finish")
    data = pickle.dumps(original)
    assert SECRET.encode() not in data
    copy = pickle.loads(data)
    assert copy.kind is FailureKind.FAILED
    assert copy.output.text() == "could not finish"
    assert isinstance(copy.cause, BaseException)
    assert SECRET not in str(copy.cause)


def test_pickle_with_unpicklable_cause() -> None:
    """A cause that cannot be pickled does not stop the Failure from pickling."""
    original = Failure(kind=FailureKind.FAILED, output="x", cause=ValueError(lambda: None))
    copy = pickle.loads(pickle.dumps(original))
    assert copy.output.text() == "x"


# --------------------------------------------------------------------------------------------------
# Classifiers: the shared wrapping and grouping matrix


def new_failure(tag: str) -> BaseException:
    """A fresh Failure tagged in its public output."""
    return rejected(f"failure {tag}")


def new_rejection(tag: str) -> BaseException:
    """A fresh InputRejection tagged in its message."""
    return InputRejection(f"rejection {tag}")


KINDS: list[tuple[Callable[[str], BaseException], Callable[[BaseException | None], BaseException | None]]] = [
    (new_failure, classify_failure),
    (new_rejection, classify_input_rejection),
]
KIND_IDS = ["failure", "rejection"]
Make = Callable[[str], BaseException]
Classify = Callable[[BaseException | None], BaseException | None]


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_direct(make: Make, classify: Classify) -> None:
    """The target itself is found."""
    target = make("a")
    assert classify(target) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_none_and_unrelated(make: Make, classify: Classify) -> None:
    """None and an unrelated error establish nothing."""
    assert classify(None) is None
    assert classify(ValueError("x")) is None
    assert classify(raised_from(ValueError("x"))) is None


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_through_raise_from(make: Make, classify: Classify) -> None:
    """``raise X from target`` keeps the target findable."""
    target = make("a")
    assert classify(raised_from(target)) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_through_implicit_context(make: Make, classify: Classify) -> None:
    """An error raised while handling the target finds it via __context__."""
    target = make("a")
    error = raised_during(target)
    assert error.__context__ is target
    assert classify(error) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_not_through_suppressed_context(make: Make, classify: Classify) -> None:
    """``raise X from None`` hides the handled target."""
    target = make("a")
    error = raised_suppressing(target)
    assert error.__context__ is target
    assert classify(error) is None


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_explicit_cause_beats_context(make: Make, classify: Classify) -> None:
    """An explicit unrelated cause takes precedence over the implicit context."""
    target = make("a")
    try:
        try:
            raise target
        except BaseException:
            raise RuntimeError("outer") from KeyError("other")
    except RuntimeError as error:
        assert error.__context__ is target
        assert classify(error) is None


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_through_call_error(make: Make, classify: Classify) -> None:
    """A CallError is transparent to both classifiers."""
    target = make("a")
    assert classify(CallError(target, evidence="wrote 2 rows")) is target
    assert classify(raised_from(CallError(raised_from(target)))) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_group_with_one(make: Make, classify: Classify) -> None:
    """A group holding one target among ordinary errors yields it."""
    target = make("a")
    group = ExceptionGroup("g", [ValueError("x"), target, KeyError("y")])
    assert classify(group) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_group_with_two_distinct_is_none(make: Make, classify: Classify) -> None:
    """Two independent targets in one group are ambiguous."""
    group = ExceptionGroup("g", [make("a"), make("b")])
    assert classify(group) is None


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_group_with_equal_looking_targets_is_none(make: Make, classify: Classify) -> None:
    """Two distinct objects are two outcomes even when their public text is identical."""
    group = ExceptionGroup("g", [make("same"), make("same")])
    assert classify(group) is None


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_group_with_same_target_twice(make: Make, classify: Classify) -> None:
    """The same target reached twice is still one outcome."""
    target = make("a")
    group = ExceptionGroup("g", [target, raised_from(target), CallError(target)])
    assert classify(group) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_nested_group_with_one(make: Make, classify: Classify) -> None:
    """A target inside a nested group is found."""
    target = make("a")
    group = ExceptionGroup("outer", [ValueError("x"), ExceptionGroup("inner", [KeyError("k"), raised_from(target)])])
    assert classify(group) is target
    assert classify(raised_from(group)) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_nested_groups_two_levels_is_none(make: Make, classify: Classify) -> None:
    """Targets at different nesting levels are still two outcomes."""
    group = ExceptionGroup("outer", [make("a"), ExceptionGroup("inner", [make("b")])])
    assert classify(group) is None


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_inner_ambiguity_is_not_resolved(make: Make, classify: Classify) -> None:
    """An ambiguous inner group keeps the whole group ambiguous, even beside another copy."""
    first = make("a")
    group = ExceptionGroup("outer", [first, ExceptionGroup("inner", [first, make("b")])])
    assert classify(group) is None


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_same_target_in_nested_groups(make: Make, classify: Classify) -> None:
    """The same target in an outer and a nested group is one outcome."""
    target = make("a")
    group = ExceptionGroup("outer", [target, ExceptionGroup("inner", [target])])
    assert classify(group) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_base_exception_group(make: Make, classify: Classify) -> None:
    """A BaseExceptionGroup is searched like an ExceptionGroup."""
    target = make("a")
    group = BaseExceptionGroup("g", [KeyboardInterrupt(), target])
    assert classify(group) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_group_without_target_follows_its_cause(make: Make, classify: Classify) -> None:
    """A group with no target in it is transparent wrapping of its own cause."""
    target = make("a")
    group = ExceptionGroup("g", [ValueError("x")])
    group.__cause__ = target
    assert classify(group) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_cause_cycle_terminates(make: Make, classify: Classify) -> None:
    """A __cause__ cycle establishes nothing and does not loop."""
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__ = second
    second.__cause__ = first
    assert classify(first) is None


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_context_cycle_through_group_terminates(make: Make, classify: Classify) -> None:
    """A cycle running through a group member terminates."""
    member = RuntimeError("member")
    group = ExceptionGroup("g", [member])
    member.__context__ = group
    assert classify(group) is None


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_chain_of_64_links_is_found(make: Make, classify: Classify) -> None:
    """A chain of exactly 64 links is within the limit."""
    target = make("a")
    assert classify(wrap(target, times=64)) is target


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("times", [65, 66, 5000])
def test_classify_chain_over_64_links_is_none(make: Make, classify: Classify, times: int) -> None:
    """A chain longer than 64 links establishes nothing (and a very long one does not recurse)."""
    assert classify(wrap(make("a"), times=times)) is None


@pytest.mark.parametrize(("make", "classify"), KINDS, ids=KIND_IDS)
def test_classify_deeply_nested_groups_terminate(make: Make, classify: Classify) -> None:
    """Groups nested deeper than the limit establish nothing."""
    group: BaseException = make("a")
    for _ in range(100):
        group = ExceptionGroup("g", [group])
    assert classify(group) is None


# --------------------------------------------------------------------------------------------------
# classify_failure: Failure-specific rules


def test_classify_failure_never_inspects_cause() -> None:
    """A Failure whose cause is another Failure classifies as the outer one."""
    inner = failed("inner")
    outer = Failure(kind=FailureKind.REJECTED, output="outer", cause=inner)
    assert classify_failure(outer) is outer
    assert classify_failure(raised_from(outer)) is outer
    assert classify_failure(ExceptionGroup("g", [outer, ValueError("x")])) is outer


def test_classify_failure_private_cause_does_not_make_groups_ambiguous() -> None:
    """A group member's private cause is not a second outcome."""
    outer = Failure(kind=FailureKind.FAILED, output="outer", cause=rejected("hidden"))
    assert classify_failure(ExceptionGroup("g", [outer])) is outer


def test_classify_failure_ignores_private_causes_of_other_errors() -> None:
    """An InputValidationError keeps its defect private, so a Failure behind it is not found."""
    assert classify_failure(InputValidationError(rejected("hidden"))) is None


def test_classify_failure_outermost_failure_wins() -> None:
    """When a Failure is raised from another, the outer one is the outcome."""
    inner = rejected("inner")
    try:
        try:
            raise inner
        except Failure:
            raise failed("outer")  # noqa: B904
    except Failure as outer:
        assert classify_failure(raised_from(outer)) is outer


def test_classify_failure_does_not_find_rejections() -> None:
    """classify_failure and classify_input_rejection find only their own kind."""
    rejection = InputRejection("fix x")
    failure = rejected()
    assert classify_failure(rejection) is None
    assert classify_input_rejection(failure) is None
    group = ExceptionGroup("g", [rejection, failure])
    assert classify_failure(group) is failure
    assert classify_input_rejection(group) is rejection


def test_classify_failure_does_not_look_behind_an_input_rejection() -> None:
    """An InputRejection keeps a private cause and exposes no chain, so nothing behind it is an outcome."""
    try:
        try:
            raise rejected("hidden")
        except Failure:
            raise InputRejection("amount must be positive")  # noqa: B904
    except InputRejection as rejection:
        assert classify_failure(rejection) is None


# --------------------------------------------------------------------------------------------------
# CallError


def test_call_error_is_transparent() -> None:
    """Its cause is __cause__ and .cause, and its message is the cause's."""
    cause = TimeoutError("upstream took too long")
    error = CallError(cause, evidence="sent 3 of 5 emails")
    assert error.__cause__ is cause
    assert error.cause is cause
    assert str(error) == "upstream took too long"


def test_call_error_keyword_cause() -> None:
    """cause may be passed by keyword."""
    cause = OSError("x")
    assert CallError(cause=cause).cause is cause


def test_call_error_does_not_match_cause_type() -> None:
    """``except`` for the cause's type does not catch the CallError itself."""
    cause = ValueError("bad")
    with pytest.raises(CallError) as caught:
        try:
            raise CallError(cause)
        except ValueError:  # pragma: no cover - must not match
            pytest.fail("a CallError is not its cause's type")
    assert not isinstance(caught.value, ValueError)
    assert caught.value.__cause__ is cause


def test_call_error_is_never_a_failure() -> None:
    """A CallError declares no outcome."""
    error = CallError(ValueError("x"), evidence="partial")
    assert not isinstance(error, Failure)
    assert classify_failure(error) is None
    assert classify_input_rejection(error) is None


def test_call_error_sees_through_to_failure() -> None:
    """A Failure as a CallError's cause stays the outcome."""
    failure = failed()
    assert classify_failure(CallError(failure, evidence="e")) is failure


def test_call_error_evidence_str_is_text_output() -> None:
    """A str evidence becomes a text-only Output."""
    error = CallError(ValueError("x"), evidence="wrote file a.txt")
    assert isinstance(error.evidence, Output)
    assert error.evidence == Output.from_text("wrote file a.txt")


def test_call_error_default_evidence_is_empty() -> None:
    """No evidence is the empty Output."""
    assert CallError(ValueError("x")).evidence == Output()


def test_call_error_evidence_output_kept_and_immutable() -> None:
    """An Output evidence is kept and cannot be changed."""
    evidence = Output(content=(TextBlock("rows"),), details=b'{"rows":2}')
    error = CallError(ValueError("x"), evidence=evidence)
    assert error.evidence == evidence
    with pytest.raises(FrozenInstanceError):
        error.evidence.details = b"{}"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        error.evidence = Output()  # type: ignore[misc]
    assert error.evidence.details == b'{"rows":2}'


@pytest.mark.parametrize("cause", [None, "boom", ValueError, 3, Output()])
def test_call_error_cause_must_be_exception(cause: Any) -> None:
    """A CallError without an exception instance as its cause is invalid."""
    with pytest.raises(InvalidFailureError):
        CallError(cause)


@pytest.mark.parametrize("evidence", [None, b"bytes", 1, {"a": 1}, TextBlock("x")])
def test_call_error_evidence_must_be_output_or_str(evidence: Any) -> None:
    """Evidence that is neither an Output nor a str is invalid."""
    with pytest.raises(InvalidFailureError):
        CallError(ValueError("x"), evidence=evidence)


def test_call_error_repr_names_cause() -> None:
    """repr shows the wrapped error."""
    assert "TimeoutError" in repr(CallError(TimeoutError("t")))


def test_call_error_cause_survives_raise_from_none() -> None:
    """``raise CallError(err) from None`` keeps err as the cause and stays transparent."""
    failure = failed()
    with pytest.raises(CallError) as caught:
        raise CallError(failure, evidence="partial") from None
    assert caught.value.cause is failure
    assert classify_failure(caught.value) is failure


def test_call_error_cause_survives_raise_from_other() -> None:
    """``raise CallError(err) from other`` keeps err as the cause; the other error does not replace it."""
    cause = TimeoutError("upstream")
    with pytest.raises(CallError) as caught:
        try:
            raise KeyError("unrelated")
        except KeyError as other:
            raise CallError(cause) from other
    assert caught.value.cause is cause
    assert caught.value.__cause__ is cause
    assert str(caught.value) == "upstream"


def test_classify_failure_does_not_look_behind_explicitly_chained_rejection() -> None:
    """``raise InputRejection(...) from failure`` does not make the failure the outcome."""
    with pytest.raises(InputRejection) as caught:
        raise InputRejection("fix the amount") from rejected("hidden")
    assert classify_failure(caught.value) is None
    assert classify_input_rejection(caught.value) is caught.value
