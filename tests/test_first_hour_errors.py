"""The errors a person gets from the Python API in their first hour each say what to do.

Each test makes one mistake a newcomer makes (issue 27) and reads the message it gets. The messages
written for the model (`InputRejection` texts) are pinned elsewhere and do not change here.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scopetool import (
    Contract,
    DuplicateToolError,
    InvalidInvocationError,
    InvalidToolError,
    Registry,
    Request,
    ScopetoolError,
    ToolNotFoundError,
    bind,
    tool,
)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def subtract(a: int, b: int) -> int:
    """Subtract b from a."""
    return a - b


def double(n: int) -> int:
    """Double n (not decorated: a plain function)."""
    return 2 * n


def refused(awaitable: Any) -> str:
    """The message of the InvalidInvocationError that awaiting `awaitable` raises."""
    with pytest.raises(InvalidInvocationError) as error:
        asyncio.run(awaitable)
    return str(error.value)


# -- looking a tool up by name


def test_a_misspelt_name_raises_and_suggests_the_nearest() -> None:
    """``registry["ad"]`` raises a ToolNotFoundError (a KeyError) that suggests 'add', not a None to trip on."""
    registry = Registry(add, subtract)
    with pytest.raises(ToolNotFoundError) as error:
        registry["ad"]
    assert isinstance(error.value, KeyError) and isinstance(error.value, ScopetoolError)
    assert str(error.value) == "no tool named 'ad' is registered; did you mean 'add'?"
    assert error.value.name == "ad"
    assert registry["add"] is registry.resolve("add")
    assert registry.resolve("ad") is None  # the protocol's lookup keeps None for "unknown tool"


def test_a_name_like_none_lists_the_registered_ones() -> None:
    """A name close to none of the tools lists the registered names; an empty registry says it is empty."""
    with pytest.raises(KeyError) as listed:
        Registry(add, subtract)["weather"]
    assert str(listed.value) == "no tool named 'weather' is registered; the registered tools are 'add', 'subtract'"
    with pytest.raises(KeyError) as empty:
        Registry()["add"]
    assert str(empty.value) == "no tool named 'add' is registered: the registry is empty"


def test_a_large_registry_points_to_its_names() -> None:
    """In a registry of many tools, an unmatched name points to ``registry.names()`` rather than listing them."""
    many = [tool(name=f"tool_{index}")(double) for index in range(13)]
    with pytest.raises(ToolNotFoundError, match=r"^no tool named 'zzz' is registered \(the registry holds 13 tools: "):
        Registry(*many)["zzz"]


# -- calling a binding


def test_calling_a_binding_with_a_request_says_to_admit_it_first() -> None:
    """A Request where an Invocation belongs gets told to go through ``binding.contract.prepare`` first."""
    binding = Registry(add)["add"]
    message = refused(binding.call(Request(name="add", arguments='{"a": 2, "b": 3}')))  # type: ignore[arg-type]
    assert message == (
        "Binding.call needs an admitted Invocation, not a Request: admit the request first with "
        "binding.contract.prepare(request), then call the Invocation it returns"
    )


@pytest.mark.parametrize("given", [{"a": 2, "b": 3}, '{"a": 2, "b": 3}', None])
def test_calling_a_binding_with_anything_else_names_what_was_given(given: object) -> None:
    """Any other value given to ``Binding.call`` is named, with the way to make an Invocation."""
    message = refused(bind(add).call(given))  # type: ignore[arg-type]
    assert message == (
        f"Binding.call needs an Invocation, not {type(given).__name__}: "
        "binding.contract.prepare(Request(name=..., arguments=json_text)) makes one"
    )


def test_an_invocation_of_another_binding_says_whose_it_is() -> None:
    """An invocation admitted by another contract is refused with the tool names, once, without a stutter."""
    first, second = bind(add), bind(add)
    invocation = first.contract.prepare(Request(name="add", arguments='{"a": 2, "b": 3}'))
    assert refused(second.call(invocation)) == (
        "the invocation of 'add' does not belong to this binding of 'add': another contract admitted it"
    )


def test_calling_a_func_with_a_request_says_how_to_run_it() -> None:
    """``add.call(request)`` (a tool called directly) says to bind it, or to call the plain function."""
    message = refused(add.call(Request(name="add", arguments="{}")))  # type: ignore[arg-type]
    assert message == (
        "add.call needs an Invocation, not Request: bind the tool (Registry(add) or bind(add)) and call the "
        "binding with what binding.contract.prepare(request) returns, or call add(...) to run the plain function"
    )


# -- admitting a request


def test_arguments_given_as_a_dict_say_to_send_json_text() -> None:
    """Arguments given as a parsed dict are refused with the way to make them JSON text."""
    with pytest.raises(InvalidInvocationError) as error:
        bind(add).contract.prepare(Request(name="add", arguments={"a": 2, "b": 3}))  # type: ignore[arg-type]
    assert str(error.value) == (
        "Request.arguments must be str or bytes (JSON text), not dict: pass the JSON text, json.dumps(arguments)"
    )


def test_prepare_of_a_dict_says_to_build_a_request() -> None:
    """``prepare`` of a dict says it expected a Request and how to build one."""
    with pytest.raises(InvalidInvocationError) as error:
        bind(add).contract.prepare({"name": "add", "arguments": "{}"})  # type: ignore[arg-type]
    assert str(error.value) == (
        "Contract.prepare expected a Request, not dict: pass Request(name=..., arguments=json_text)"
    )


def test_a_misnamed_call_reads_once() -> None:
    """A call of another name reads once: no ``tool: invalid invocation:`` prefix repeating the error's class."""
    with pytest.raises(InvalidInvocationError) as error:
        bind(add).contract.prepare(Request(name="ad", arguments="{}"))
    assert str(error.value) == "call name 'ad' does not match bound tool 'add'"


def test_a_contract_of_a_tool_points_to_bind() -> None:
    """``Contract(tool)`` says that a tool's contract is its binding's."""
    with pytest.raises(InvalidToolError) as error:
        Contract(add)  # type: ignore[arg-type]
    assert (
        str(error.value)
        == "a contract needs a Definition, not Func: a tool's contract is its binding's, bind(tool).contract"
    )


# -- registering tools


def test_a_plain_function_says_to_decorate_it() -> None:
    """An undecorated function given to Registry or bind is named, with ``@tool`` as the fix."""
    with pytest.raises(InvalidToolError) as registered:
        Registry(add, double)  # type: ignore[arg-type]
    assert (
        str(registered.value) == "tools[1]: double is a plain function: decorate it with @tool (or pass tool(double))"
    )
    with pytest.raises(InvalidToolError) as bound:
        bind(double)  # type: ignore[arg-type]
    assert str(bound.value) == "double is a plain function: decorate it with @tool (or pass tool(double))"


@pytest.mark.parametrize("batch", [[add, subtract], (add, subtract), {add}])
def test_a_list_of_tools_says_to_unpack_it(batch: Any) -> None:
    """``Registry([a, b])`` suggests ``Registry(*tools)``."""
    with pytest.raises(InvalidToolError) as error:
        Registry(batch)
    assert str(error.value) == (
        f"tools[0] is a {type(batch).__name__}, not a tool: pass the tools themselves, "
        "Registry(*tools) or registry.register(*tools)"
    )


def test_a_tool_name_says_to_pass_the_tool() -> None:
    """A tool's name where the tool belongs says to pass the function itself."""
    with pytest.raises(InvalidToolError) as error:
        Registry("add")  # type: ignore[arg-type]
    assert str(error.value) == "tools[0]: 'add' is a str, not a tool: pass the @tool function itself, not its name"


def test_a_duplicate_reads_once() -> None:
    """A duplicate name reads once: no ``tool: duplicate tool:`` stutter."""
    with pytest.raises(DuplicateToolError) as error:
        Registry(add, add)
    assert str(error.value) == "tool name 'add' appears more than once in the batch"
