"""`scopetool._native`: the switch for the C extension, and `build`, in C and in Python alike."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from scopetool import Admission, IdempotencyKey, Output, Result, TextBlock, _native
from scopetool._native import _build_python, build, slots  # pyright: ignore[reportPrivateUsage]

BUILDS: list[Callable[..., Any]] = [_build_python] if build is _build_python else [_build_python, build]


@pytest.mark.parametrize("make", BUILDS, ids=lambda make: "python" if make is _build_python else "c")
def test_build_makes_what_the_constructor_makes(make: Callable[..., Any]) -> None:
    """Every slot set as the frozen dataclass's own __init__ sets it; the instance is as frozen and as equal."""
    block = TextBlock(text="hi")
    output = Output(content=(block,))
    made = [
        (make(TextBlock, slots(TextBlock, "text"), "hi"), block),
        (make(Output, slots(Output, "content", "details"), (block,), None), output),
        (make(Result, slots(Result, "output", "input_request"), output, None), Result(output=output)),
        (
            make(Admission, slots(Admission, "idempotency_key", "continuation"), IdempotencyKey("k"), None),
            Admission(idempotency_key=IdempotencyKey("k")),
        ),
    ]
    for fast, slow in made:
        assert type(fast) is type(slow) and fast == slow
        for field in dataclasses.fields(slow):
            assert getattr(fast, field.name) == getattr(slow, field.name), field.name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(fast, dataclasses.fields(slow)[0].name, None)


@pytest.mark.parametrize("make", BUILDS, ids=lambda make: "python" if make is _build_python else "c")
def test_build_takes_one_value_a_slot(make: Callable[..., Any]) -> None:
    """Too few or too many values are a TypeError, and nothing is built."""
    members = slots(Output, "content", "details")
    for values in [((),), ((), None, None)]:
        with pytest.raises(TypeError, match="one value a member"):
            make(Output, members, *values)


def test_build_in_c_checks_its_members() -> None:
    """The C build takes only a class and slot descriptors of it."""
    if build is _build_python:
        pytest.skip("the C fast path is not installed")
    with pytest.raises(TypeError, match="slot descriptors, not int"):
        build(Output, (1, 2), (), None)
    with pytest.raises(TypeError):  # the descriptor of another class's slot
        build(Result, slots(Output, "content", "details"), (), None)
    with pytest.raises(TypeError, match="takes a class"):
        build("Output", slots(Output, "content"), ())  # type: ignore[arg-type]


def test_speedups_is_off_with_the_pure_python_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    """SCOPETOOL_PURE_PYTHON=1 turns the extension off; 0 or empty leaves it to whether it is built."""
    monkeypatch.setenv("SCOPETOOL_PURE_PYTHON", "1")
    assert _native.speedups() is None
    built: ModuleType | None
    try:
        from scopetool import _speedups as built
    except ImportError:
        built = None
    for value in ("0", ""):
        monkeypatch.setenv("SCOPETOOL_PURE_PYTHON", value)
        assert _native.speedups() is built
