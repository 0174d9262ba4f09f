"""Tests for `Registry`: instance-scoped, thread-safe, atomic batches of bindings by name."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scopetool import (
    Binding,
    Definition,
    DuplicateToolError,
    Func,
    InvalidToolError,
    Registry,
    bind,
    tool,
)


def make(name: str) -> Func[..., Any]:
    """A small Func tool named `name`."""

    def f(a: int) -> int:
        """Return a."""
        return a

    return tool(name=name)(f)


class Broken:
    """Not a Tool: it has no definition() nor call()."""


def test_constructor_accepts_bindings_and_tools() -> None:
    """Registry(*values) registers both Bindings and plain Tools."""
    binding = bind(make("alpha"))
    registry = Registry(make("beta"), binding)
    assert registry.names() == ["alpha", "beta"]
    assert registry.resolve("alpha") is binding
    resolved = registry.resolve("beta")
    assert isinstance(resolved, Binding)
    assert resolved.name == "beta"


def test_empty_registry() -> None:
    """A new empty registry has nothing."""
    registry = Registry()
    assert len(registry) == 0
    assert registry.names() == []
    assert registry.definitions() == []
    assert list(registry) == []
    assert registry.resolve("x") is None


def test_register_adds_bindings_and_tools() -> None:
    """register(*values) adds Bindings as given and binds Tools without middlewares."""
    registry = Registry()
    binding = bind(make("one"))
    registry.register(binding, make("two"))
    assert len(registry) == 2
    assert registry.resolve("one") is binding
    two = registry.resolve("two")
    assert two is not None
    assert "middlewares=0" in repr(two)


def test_empty_batch_is_a_noop() -> None:
    """register() with no values changes nothing and raises nothing."""
    registry = Registry(make("a"))
    registry.register()
    assert registry.names() == ["a"]


def test_constructor_failure_raises() -> None:
    """A constructor batch with an invalid tool raises, so no half-filled registry exists."""
    with pytest.raises(InvalidToolError, match=r"^tools\[1\]: "):
        Registry(make("a"), Broken())  # type: ignore[arg-type]


def test_bind_failure_is_prefixed_with_index() -> None:
    """A tool that cannot be bound fails with a zero-based `tools[i]:` prefix and its cause."""
    registry = Registry()
    with pytest.raises(InvalidToolError, match=r"^tools\[2\]: ") as error:
        registry.register(make("a"), make("b"), Broken())  # type: ignore[arg-type]
    assert isinstance(error.value.__cause__, InvalidToolError)


def test_invalid_tool_leaves_registry_unchanged() -> None:
    """A batch holding an invalid tool registers nothing."""
    registry = Registry(make("base"))
    with pytest.raises(InvalidToolError):
        registry.register(make("new1"), Broken(), make("new2"))  # type: ignore[arg-type]
    assert registry.names() == ["base"]
    assert "new1" not in registry


def test_duplicate_within_batch() -> None:
    """A name repeated within a batch raises the exact duplicate-in-batch message; nothing is added."""
    registry = Registry()
    with pytest.raises(DuplicateToolError) as error:
        registry.register(make("x"), make("y"), make("x"))
    assert str(error.value) == "tool name 'x' appears more than once in the batch"
    assert len(registry) == 0


def test_same_binding_twice_in_batch_is_a_duplicate() -> None:
    """The same binding twice in one batch is a duplicate."""
    binding = bind(make("x"))
    with pytest.raises(DuplicateToolError, match="more than once in the batch"):
        Registry(binding, binding)


def test_duplicate_of_registered_name() -> None:
    """A name already registered raises the exact already-registered message; the batch is not added."""
    registry = Registry(make("x"))
    with pytest.raises(DuplicateToolError) as error:
        registry.register(make("fresh"), make("x"))
    assert str(error.value) == "tool name 'x' is already registered"
    assert registry.names() == ["x"]


def test_duplicate_error_names_first_conflict_in_batch_order() -> None:
    """With several conflicts with registered names, the first in batch order is named."""
    registry = Registry(make("a"), make("b"))
    with pytest.raises(DuplicateToolError) as error:
        registry.register(make("c"), make("b"), make("a"))
    assert str(error.value) == "tool name 'b' is already registered"
    assert registry.names() == ["a", "b"]


def test_first_problem_in_batch_order_wins() -> None:
    """An in-batch duplicate before an invalid tool is reported; an invalid tool before a duplicate is."""
    registry = Registry()
    with pytest.raises(DuplicateToolError, match="'d' appears more than once"):
        registry.register(make("d"), make("d"), Broken())  # type: ignore[arg-type]
    with pytest.raises(InvalidToolError, match=r"^tools\[0\]: "):
        registry.register(Broken(), make("d"), make("d"))  # type: ignore[arg-type]
    assert len(registry) == 0


def test_duplicate_error_is_a_scopetool_value_error() -> None:
    """DuplicateToolError is a ValueError, distinct from InvalidToolError."""
    registry = Registry(make("x"))
    with pytest.raises(ValueError, match="already registered") as error:
        registry.register(make("x"))
    assert not isinstance(error.value, InvalidToolError)


def test_resolve() -> None:
    """resolve returns the registered binding, or None for a missing name."""
    binding = bind(make("found"))
    registry = Registry(binding)
    assert registry.resolve("found") is binding
    assert registry.resolve("missing") is None
    assert registry.resolve("FOUND") is None


def test_definitions_sorted_by_name() -> None:
    """definitions() lists every frozen definition sorted by name."""
    registry = Registry(make("zeta"), make("Alpha"), make("beta"), make("alpha"))
    definitions = registry.definitions()
    assert all(isinstance(definition, Definition) for definition in definitions)
    assert [definition.name for definition in definitions] == ["Alpha", "alpha", "beta", "zeta"]
    binding = registry.resolve("beta")
    assert binding is not None
    assert definitions[2] == binding.definition()


def test_definitions_are_detached() -> None:
    """Mutating what definitions() hands out never changes the registry."""
    registry = Registry(make("a"))
    definitions = registry.definitions()
    schema = definitions[0].input_schema
    schema["properties"]["a"]["type"] = "string"
    definitions.clear()
    again = registry.definitions()
    assert len(again) == 1
    assert again[0].input_schema["properties"]["a"] == {"type": "integer"}


def test_names_len_contains_and_iteration() -> None:
    """names, len, `in` and iteration all reflect the registry, sorted by name."""
    registry = Registry(make("c"), make("a"))
    registry.register(make("b"))
    assert registry.names() == ["a", "b", "c"]
    assert len(registry) == 3
    assert "b" in registry
    assert "d" not in registry
    assert 42 not in registry
    assert [binding.name for binding in registry] == ["a", "b", "c"]


def test_iteration_is_a_snapshot() -> None:
    """Registering while iterating neither fails nor changes the running iteration."""
    registry = Registry(make("a"), make("b"))
    seen = []
    for binding in registry:
        seen.append(binding.name)
        if binding.name == "a":
            registry.register(make("aa"))
    assert seen == ["a", "b"]
    assert registry.names() == ["a", "aa", "b"]


def test_registries_are_instance_scoped() -> None:
    """Two registries share nothing."""
    first = Registry(make("a"))
    second = Registry()
    assert "a" in first
    assert "a" not in second
    second.register(make("a"))
    assert len(first) == len(second) == 1


def test_concurrent_disjoint_registration() -> None:
    """16 threads registering disjoint names and resolving concurrently end with every name once."""
    registry = Registry()
    threads_count = 16
    per_thread = 20
    batches = [[make(f"t{t}_{i}") for i in range(per_thread)] for t in range(threads_count)]
    barrier = threading.Barrier(threads_count)
    errors: list[BaseException] = []
    missing: list[str] = []

    def work(index: int) -> None:
        try:
            barrier.wait()
            for item in batches[index]:
                registry.register(item)
                if registry.resolve(item.name) is None:
                    missing.append(item.name)
                registry.resolve(f"t{(index + 1) % threads_count}_0")
                registry.definitions()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert missing == []
    expected = sorted(f"t{t}_{i}" for t in range(threads_count) for i in range(per_thread))
    assert registry.names() == expected
    assert len(registry) == threads_count * per_thread
    assert [definition.name for definition in registry.definitions()] == expected


def test_concurrent_same_name_has_one_winner() -> None:
    """Concurrent registration of one name lets exactly one thread win; the others get DuplicateToolError."""
    registry = Registry()
    threads_count = 16
    bindings = [bind(make("shared")) for _ in range(threads_count)]
    barrier = threading.Barrier(threads_count)
    winners: list[Binding] = []
    losers: list[BaseException] = []
    lock = threading.Lock()

    def work(binding: Binding) -> None:
        barrier.wait()
        try:
            registry.register(binding)
        except DuplicateToolError as error:
            with lock:
                losers.append(error)
        else:
            with lock:
                winners.append(binding)

    threads = [threading.Thread(target=work, args=(binding,)) for binding in bindings]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(winners) == 1
    assert len(losers) == threads_count - 1
    assert all(str(error) == "tool name 'shared' is already registered" for error in losers)
    assert registry.resolve("shared") is winners[0]
    assert len(registry) == 1


def test_concurrent_overlapping_batches_are_atomic() -> None:
    """Concurrent batches that overlap on one name: each batch is registered whole or not at all."""
    registry = Registry()
    threads_count = 8
    batches = [[make(f"own{t}"), make("common")] for t in range(threads_count)]
    barrier = threading.Barrier(threads_count)
    won: list[int] = []

    def work(index: int) -> None:
        barrier.wait()
        try:
            registry.register(*batches[index])
        except DuplicateToolError:
            return
        won.append(index)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    assert registry.names() == sorted(["common", f"own{won[0]}"])


@settings(max_examples=25, deadline=None)
@given(st.sets(st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True), max_size=6))
def test_views_follow_sorted_names(names: set[str]) -> None:
    """For any set of valid names, names(), iteration and definitions() are sorted by name."""
    registry = Registry(*(make(name) for name in names))
    expected = sorted(names)
    assert registry.names() == expected
    assert [binding.name for binding in registry] == expected
    assert [definition.name for definition in registry.definitions()] == expected
    assert len(registry) == len(names)
