"""Tests for scopetool._rejection: InputRejection and classify_input_rejection."""

from __future__ import annotations

import pickle
import traceback

import pytest

from scopetool import InputRejection, InputValidationError, InvalidInvocationError, classify_input_rejection
from scopetool._rejection import MAX_REJECTION_CHARS


def wrap(inner: BaseException, *, times: int) -> BaseException:
    """Wrap `inner` in `times` RuntimeErrors linked through __cause__."""
    error = inner
    for index in range(times):
        outer = RuntimeError(f"wrapper {index}")
        outer.__cause__ = error
        error = outer
    return error


# --------------------------------------------------------------------------------------------------
# InputRejection


def test_rejection_message_and_str() -> None:
    """The public message is kept and is also str(rejection)."""
    rejection = InputRejection("amount must be positive")
    assert rejection.message == "amount must be positive"
    assert str(rejection) == "amount must be positive"
    assert rejection.cause is None
    assert isinstance(rejection, Exception)


@pytest.mark.parametrize("message", ["", " ", "\n\t", "\u3000"])
def test_rejection_blank_message_rejected(message: str) -> None:
    """An empty or blank public message is refused."""
    with pytest.raises(TypeError):
        InputRejection(message)


@pytest.mark.parametrize("message", [None, 1, b"bytes", ValueError("x")])
def test_rejection_non_str_message_rejected(message: object) -> None:
    """A public message that is not a str is refused."""
    with pytest.raises(TypeError):
        InputRejection(message)  # type: ignore[arg-type]


@pytest.mark.parametrize("cause", ["text", 1, ValueError, object()])
def test_rejection_non_exception_cause_rejected(cause: object) -> None:
    """A cause that is not an exception instance is refused."""
    with pytest.raises(TypeError):
        InputRejection("msg", cause=cause)  # type: ignore[arg-type]


def test_rejection_message_at_cap_kept() -> None:
    """A message of exactly MAX_REJECTION_CHARS characters is kept unchanged."""
    message = "m" * MAX_REJECTION_CHARS
    assert InputRejection(message).message == message


def test_rejection_message_capped() -> None:
    """A longer message is cut to MAX_REJECTION_CHARS characters ending in an ellipsis."""
    rejection = InputRejection("abc" * MAX_REJECTION_CHARS)
    assert MAX_REJECTION_CHARS == 4000
    assert len(rejection.message) == MAX_REJECTION_CHARS
    assert rejection.message.endswith("\u2026")
    assert rejection.message[:-1] == ("abc" * MAX_REJECTION_CHARS)[: MAX_REJECTION_CHARS - 1]
    assert str(rejection) == rejection.message


def test_rejection_cause_is_private_not_dunder_cause() -> None:
    """The diagnostic cause is stored but is neither __cause__ nor part of the message."""
    cause = KeyError("db-password-hunter2")
    rejection = InputRejection("please fix the input", cause=cause)
    assert rejection.cause is cause
    assert rejection.__cause__ is None
    assert rejection.__context__ is None
    assert "hunter2" not in str(rejection)
    assert rejection.args == ("please fix the input",)


def test_rejection_raise_from_keeps_private_cause_separate() -> None:
    """raise ... from X chains nothing: the rejection is sealed and keeps only its private cause."""
    private = ValueError("private")
    chained = OSError("zeta-secret")
    with pytest.raises(InputRejection) as caught:
        raise InputRejection("public", cause=private) from chained
    assert caught.value.cause is private
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None
    assert "zeta-secret" not in "".join(traceback.format_exception(caught.value))


def test_rejection_pickle_round_trip() -> None:
    """Pickling keeps the type and public message."""
    rejection = InputRejection("fix the date", cause=ValueError("private"))
    again = pickle.loads(pickle.dumps(rejection))
    assert type(again) is InputRejection
    assert again.message == "fix the date"
    assert str(again) == "fix the date"
    assert classify_input_rejection(again) is again


def test_rejection_pickle_of_capped_message() -> None:
    """Pickling a capped message stays capped at the same text."""
    rejection = InputRejection("x" * (MAX_REJECTION_CHARS + 10))
    again = pickle.loads(pickle.dumps(rejection))
    assert again.message == rejection.message


@pytest.mark.parametrize("message", ["amount must be positive", "x" * (MAX_REJECTION_CHARS + 10)])
def test_a_rejection_scopetool_writes_is_the_one_the_class_makes(message: str) -> None:
    """`InputRejection._written` makes what ``InputRejection(message, cause=...)`` makes, its cap included."""
    cause = ValueError("private")
    made = InputRejection(message, cause=cause)
    written = InputRejection._written(message, cause)  # pyright: ignore[reportPrivateUsage]
    assert type(written) is InputRejection
    assert (written.args, written.message, written.cause) == (made.args, made.message, cause)
    assert (str(written), repr(written)) == (str(made), repr(made))
    assert written.__suppress_context__ and written.__cause__ is None and written.__context__ is None
    assert pickle.loads(pickle.dumps(written)).message == made.message


# --------------------------------------------------------------------------------------------------
# classify_input_rejection: chains


def test_classify_direct() -> None:
    """A rejection classifies as itself."""
    rejection = InputRejection("bad")
    assert classify_input_rejection(rejection) is rejection


def test_classify_none_and_unrelated() -> None:
    """None and errors without a rejection give None."""
    assert classify_input_rejection(None) is None
    assert classify_input_rejection(ValueError("x")) is None
    assert classify_input_rejection(wrap(KeyError("k"), times=5)) is None


def test_classify_through_explicit_cause() -> None:
    """`raise X from rejection` is followed."""
    rejection = InputRejection("bad")
    try:
        try:
            raise rejection
        except InputRejection as inner:
            raise InvalidInvocationError("tool: invalid invocation") from inner
    except InvalidInvocationError as error:
        assert classify_input_rejection(error) is rejection


def test_classify_through_implicit_context() -> None:
    """An exception raised while handling a rejection finds it through __context__."""
    rejection = InputRejection("bad")
    try:
        try:
            raise rejection
        except InputRejection:
            raise RuntimeError("while handling")  # noqa: B904 - implicit context is the point
    except RuntimeError as error:
        assert error.__context__ is rejection
        assert classify_input_rejection(error) is rejection


def test_classify_not_through_suppressed_context() -> None:
    """`raise X from None` suppresses the context, so the rejection is not found."""
    try:
        try:
            raise InputRejection("bad")
        except InputRejection:
            raise RuntimeError("replaced") from None
    except RuntimeError as error:
        assert isinstance(error.__context__, InputRejection)
        assert classify_input_rejection(error) is None


def test_classify_explicit_cause_wins_over_context() -> None:
    """With an explicit non-rejection cause, the rejection in __context__ is not used."""
    try:
        try:
            raise InputRejection("bad")
        except InputRejection:
            raise RuntimeError("replaced") from KeyError("other")
    except RuntimeError as error:
        assert isinstance(error.__context__, InputRejection)
        assert classify_input_rejection(error) is None


def test_classify_deep_but_allowed_chain() -> None:
    """A rejection behind 64 links of __cause__ is still found."""
    rejection = InputRejection("deep")
    assert classify_input_rejection(wrap(rejection, times=10)) is rejection
    assert classify_input_rejection(wrap(rejection, times=64)) is rejection


@pytest.mark.parametrize("times", [65, 200])
def test_classify_chain_deeper_than_64_is_none(times: int) -> None:
    """A chain deeper than 64 links gives None."""
    assert classify_input_rejection(wrap(InputRejection("deep"), times=times)) is None


def test_classify_cycle_without_rejection_terminates() -> None:
    """A __cause__ cycle with no rejection ends with None."""
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__ = b
    b.__cause__ = a
    assert classify_input_rejection(a) is None


def test_classify_context_self_cycle_terminates() -> None:
    """An exception that is its own __context__ ends with None."""
    error = RuntimeError("self")
    error.__context__ = error
    assert classify_input_rejection(error) is None


def test_classify_cycle_through_rejection() -> None:
    """A cycle that passes through a rejection finds it."""
    rejection = InputRejection("bad")
    wrapper = RuntimeError("w")
    wrapper.__cause__ = rejection
    rejection.__cause__ = wrapper
    assert classify_input_rejection(wrapper) is rejection


def test_classify_outermost_rejection_wins() -> None:
    """A rejection wrapping another rejection through __cause__ is the one found."""
    inner = InputRejection("inner")
    outer = InputRejection("outer")
    outer.__cause__ = inner
    assert classify_input_rejection(wrap(outer, times=2)) is outer


# --------------------------------------------------------------------------------------------------
# classify_input_rejection: private causes


def test_classify_never_looks_into_rejection_cause() -> None:
    """A rejection's private cause is not inspected, even when it is itself a rejection."""
    hidden = InputRejection("hidden")
    public = InputRejection("public", cause=hidden)
    assert classify_input_rejection(public) is public
    group = ExceptionGroup("g", [InputRejection("only", cause=InputRejection("private twin"))])
    found = classify_input_rejection(group)
    assert found is not None
    assert found.message == "only"


def test_classify_private_cause_of_group_member_does_not_make_ambiguity() -> None:
    """A member's private cause never counts as a second rejection."""
    first = InputRejection("first", cause=InputRejection("x"))
    group = ExceptionGroup("g", [first, ValueError("v")])
    assert classify_input_rejection(group) is first


def test_classify_does_not_see_input_validation_error_cause() -> None:
    """InputValidationError keeps its defect private, so a rejection inside it is not found."""
    error = InputValidationError(InputRejection("inside"))
    assert classify_input_rejection(error) is None


# --------------------------------------------------------------------------------------------------
# classify_input_rejection: exception groups


def test_classify_group_with_one_rejection() -> None:
    """A group with one rejection among other errors yields it."""
    rejection = InputRejection("bad")
    group = ExceptionGroup("g", [ValueError("a"), rejection, KeyError("b")])
    assert classify_input_rejection(group) is rejection


def test_classify_group_with_two_distinct_rejections_is_ambiguous() -> None:
    """Two distinct rejections in a group give None, even with identical messages."""
    group = ExceptionGroup("g", [InputRejection("same"), InputRejection("same")])
    assert classify_input_rejection(group) is None


def test_classify_group_with_same_rejection_twice() -> None:
    """The same rejection object twice in a group is not ambiguous."""
    rejection = InputRejection("bad")
    group = ExceptionGroup("g", [rejection, rejection])
    assert classify_input_rejection(group) is rejection


def test_classify_group_same_rejection_via_two_wrappers() -> None:
    """Two members wrapping the same rejection still identify one rejection."""
    rejection = InputRejection("bad")
    group = ExceptionGroup("g", [wrap(rejection, times=1), wrap(rejection, times=2)])
    assert classify_input_rejection(group) is rejection


def test_classify_nested_group() -> None:
    """A rejection inside a nested group is found."""
    rejection = InputRejection("bad")
    group = ExceptionGroup("outer", [ValueError("a"), ExceptionGroup("inner", [KeyError("k"), rejection])])
    assert classify_input_rejection(group) is rejection


def test_classify_nested_groups_ambiguous() -> None:
    """Distinct rejections in different nesting levels are ambiguous."""
    group = ExceptionGroup("outer", [InputRejection("a"), ExceptionGroup("inner", [InputRejection("b")])])
    assert classify_input_rejection(group) is None


def test_classify_ambiguity_in_inner_group_is_not_resolved_by_outer() -> None:
    """An ambiguous inner group makes the whole group ambiguous."""
    inner = ExceptionGroup("inner", [InputRejection("a"), InputRejection("b")])
    group = ExceptionGroup("outer", [inner, ValueError("x")])
    assert classify_input_rejection(group) is None
    assert classify_input_rejection(wrap(inner, times=1)) is None


def test_classify_group_through_cause() -> None:
    """A group reached through __cause__ is searched."""
    rejection = InputRejection("bad")
    group = ExceptionGroup("g", [rejection])
    assert classify_input_rejection(wrap(group, times=3)) is rejection


def test_classify_group_member_chain() -> None:
    """A group member whose __cause__ is a rejection leads to it."""
    rejection = InputRejection("bad")
    group = ExceptionGroup("g", [ValueError("a"), wrap(rejection, times=2)])
    assert classify_input_rejection(group) is rejection


def test_classify_group_without_rejection() -> None:
    """A group with no rejections gives None."""
    assert classify_input_rejection(ExceptionGroup("g", [ValueError("a"), KeyError("b")])) is None


def test_classify_group_falls_back_to_its_cause() -> None:
    """A group with no rejected member still follows its own __cause__."""
    rejection = InputRejection("bad")
    group = ExceptionGroup("g", [ValueError("a")])
    group.__cause__ = rejection
    assert classify_input_rejection(group) is rejection


def test_classify_base_exception_group() -> None:
    """BaseExceptionGroup members are searched too."""
    rejection = InputRejection("bad")
    group = BaseExceptionGroup("g", [KeyboardInterrupt(), rejection])
    assert classify_input_rejection(group) is rejection


def test_classify_deeply_nested_groups_is_none() -> None:
    """Group nesting deeper than the chain limit gives None."""
    error: BaseException = InputRejection("deep")
    for _ in range(80):
        error = ExceptionGroup("g", [error])
    assert classify_input_rejection(error) is None
