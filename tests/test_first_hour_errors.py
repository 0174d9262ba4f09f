"""The errors a person gets from the Python API in their first hour each say what to do.

Each test makes one mistake a newcomer makes (issue 27) and reads the message it gets. The messages
written for the model (`InputRejection` texts) are pinned elsewhere and do not change here.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from typing import Annotated, Any

import pytest
from pydantic import Field

from scopetool import (
    Contract,
    DuplicateToolError,
    Effect,
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


def problems_of(error: pytest.ExceptionInfo[InvalidToolError]) -> list[str]:
    """The problems an InvalidToolError lists, one per line after its first."""
    return [line.removeprefix("  - ") for line in str(error.value).splitlines()[1:]]


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


# -- decorating


def test_a_method_says_to_decorate_a_function_or_bind_an_instance() -> None:
    """``@tool`` on a method names the method and says what works instead, not "'self' needs an annotation"."""
    with pytest.raises(InvalidToolError) as error:

        class Calculator:  # pyright: ignore[reportUnusedClass] - decorating its method raises
            @tool
            def scale(self, a: int) -> int:
                """Scale a."""
                return a

    assert problems_of(error) == [
        "parameter 'self': test_a_method_says_to_decorate_a_function_or_bind_an_instance.<locals>.Calculator.scale "
        "is a method (a model cannot send its self): decorate a plain function or a @staticmethod instead, or make "
        "the tool of the bound method of an instance, tool(instance.scale)"
    ]


class Scaler:
    """A class whose methods become tools the ways the messages recommend."""

    def __init__(self, factor: int) -> None:
        self.factor = factor

    def scale(self, a: int) -> int:
        """Scale a by the factor."""
        return a * self.factor

    @classmethod
    def unit(cls, a: int) -> int:
        """Return a."""
        return a

    @staticmethod
    @tool
    def negate(a: int) -> int:
        """Negate a."""
        return -a


def test_the_recommended_ways_to_make_a_method_a_tool_work() -> None:
    """What the messages recommend runs: a bound method, a class's classmethod, a @staticmethod under @tool."""
    registry = Registry(tool(Scaler(3).scale), tool(Scaler.unit), Scaler.negate)
    outputs: list[bytes | None] = []
    for name in ("scale", "unit", "negate"):
        binding = registry[name]
        invocation = binding.contract.prepare(Request(name=name, arguments='{"a": 2}'))
        outputs.append(asyncio.run(binding.call(invocation)).output.details)
    assert outputs == [b"6", b"2", b"-2"]
    with pytest.raises(InvalidToolError) as unbound:
        tool(Scaler.scale)
    assert problems_of(unbound)[0].startswith("parameter 'self': Scaler.scale is a method")


def test_a_classmethod_under_tool_says_what_to_do() -> None:
    """``@tool`` above ``@classmethod`` says to make the tool once the class exists."""
    with pytest.raises(InvalidToolError) as error:
        tool(vars(Scaler)["unit"])
    assert str(error.value) == (
        "@tool cannot decorate a classmethod: make the tool of the method once the class exists, "
        "tool(TheClass.method), or decorate a @staticmethod"
    )


def test_cls_names_the_class_to_use() -> None:
    """An unbound function taking ``cls`` names its class in the fix."""
    with pytest.raises(InvalidToolError) as error:
        tool(vars(Scaler)["unit"].__func__)
    assert problems_of(error)[0].endswith("or make the tool of tool(Scaler.unit) once the class exists")


def test_a_self_parameter_outside_a_class_is_only_unannotated() -> None:
    """A module-level function whose first parameter is called self is not taken for a method."""

    def helper(self, a: int) -> int:  # type: ignore[no-untyped-def]
        """Not a method."""
        return a

    with pytest.raises(InvalidToolError) as error:
        tool(helper)  # pyright: ignore[reportUnknownArgumentType] - self is unannotated on purpose
    assert problems_of(error) == ["parameter 'self': needs a type annotation"]


class Client:
    """An object a tool needs, which no model can send."""


def test_an_object_parameter_is_named_with_what_to_use() -> None:
    """A parameter of a class pydantic cannot describe is named, with no advice to set arbitrary_types_allowed."""

    def fetch(client: Client, path: str) -> str:
        """Fetch a path."""
        return path

    with pytest.raises(InvalidToolError) as error:
        tool(fetch)
    assert problems_of(error) == [
        "parameter 'client': its type Client cannot be described as JSON Schema, so a model cannot send it: use a "
        "JSON-compatible type (str, int, float, bool, a list, a dict, a pydantic model, a dataclass); an object "
        "the tool needs (a client, a callback) belongs in its deps (a CallContext[Deps] parameter)"
    ]
    assert "arbitrary_types_allowed" not in str(error.value)


def test_a_callable_parameter_is_named() -> None:
    """A Callable parameter, which pydantic validates but cannot describe, is named with its type."""

    def apply(count: int, callback: Callable[[int], int]) -> int:
        """Apply the callback."""
        return callback(count)

    with pytest.raises(InvalidToolError) as error:
        tool(apply)
    assert problems_of(error)[0].startswith(
        "parameter 'callback': its type collections.abc.Callable[[int], int] cannot be described as JSON Schema"
    )


def test_a_callable_return_type_says_what_to_return() -> None:
    """A return type with no JSON Schema says what a tool can return instead."""

    def make() -> Callable[[int], int]:
        """Make a function."""
        return abs

    with pytest.raises(InvalidToolError) as error:
        tool(make)
    assert problems_of(error) == [
        "the return type collections.abc.Callable[[int], int] cannot be described as JSON Schema, so its value "
        "cannot be sent to a model: return a JSON-compatible type (str, int, float, bool, a list, a dict, a "
        "pydantic model, a dataclass) or an Output"
    ]


def test_a_type_pydantic_refuses_for_another_reason_keeps_its_reason() -> None:
    """A type pydantic refuses for a reason other than having no schema keeps pydantic's own first line."""

    def find(code: Annotated[str, Field(pattern="(")]) -> int:
        """Find a code."""
        return len(code)

    with pytest.raises(InvalidToolError) as error:
        tool(find)
    (problem,) = problems_of(error)
    assert problem.startswith("parameter 'code': type typing.Annotated[str, ")
    assert problem.endswith('is not supported: Error building "str" validator:')


# -- a missing extra


@pytest.mark.parametrize(
    ("module", "package", "extra"),
    [
        ("scopetool.mcp.gateway", "mcp", "mcp"),
        ("scopetool.mcp.server", "mcp", "mcp"),
        ("scopetool.mcp.auth", "mcp", "mcp"),
        ("scopetool.mcp.tasks", "mcp", "mcp"),
        ("scopetool.driver.dbos", "dbos", "dbos"),
        ("scopetool.driver.temporal", "temporalio", "temporal"),
        ("scopetool.integrations.pydantic_ai_temporal", "temporalio", "pydantic-ai,temporal"),
        ("scopetool.integrations.openai_agents_temporal", "temporalio", "openai-agents,temporal"),
        ("scopetool.otel", "opentelemetry", "otel"),
    ],
)
def test_a_missing_extra_says_what_to_install(module: str, package: str, extra: str) -> None:
    """Importing an optional module without its package raises an ImportError naming the extra to install."""
    code = (
        f"import sys; sys.modules[{package!r}] = None\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    # the extra of the first missing module met: the one blocked, or another of the extras listed where it is missing
    named = {f"pip install 'scopetool[{name}]'" for name in [extra, *extra.split(",")]}
    assert any(result.stdout.strip().endswith(advice) for advice in named), result.stdout


def test_a_tool_where_its_name_belongs_says_to_look_up_by_name() -> None:
    """``registry[add]`` (the tool, not its name) says tools are looked up by name, and gives the name."""
    registry = Registry(add)
    with pytest.raises(ToolNotFoundError) as error:
        registry[add]  # type: ignore[index]
    assert str(error.value) == "tools are looked up by name (a str), not by Func: registry['add']"
    with pytest.raises(ToolNotFoundError) as number:
        registry[0]  # type: ignore[index]
    assert str(number.value) == "tools are looked up by name (a str), not by int"


def test_a_result_of_text_says_to_wrap_it_in_an_output() -> None:
    """``Result("text")`` says to wrap the text in an Output."""
    from scopetool import InvalidOutputError, Result

    with pytest.raises(InvalidOutputError) as error:
        Result("done")  # type: ignore[arg-type]
    assert str(error.value) == "result: output must be an Output, not str: Result(Output.from_text(text))"


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("search", "@tool takes its settings as keywords: @tool(name='search'), not @tool('search')"),
        (Effect.SAFE, "@tool takes its settings as keywords: @tool(effect=Effect.SAFE), not @tool(Effect.SAFE)"),
    ],
)
def test_a_positional_setting_says_to_give_it_as_a_keyword(setting: Any, expected: str) -> None:
    """``@tool("search")`` or ``@tool(Effect.SAFE)`` says to give the setting as a keyword."""
    with pytest.raises(InvalidToolError) as error:
        tool(setting)
    assert str(error.value) == expected


def test_a_second_tool_given_to_bind_is_not_taken_for_a_middleware() -> None:
    """``bind(a, b)`` says bind takes one tool, instead of binding b as a middleware that fails per call."""
    with pytest.raises(InvalidToolError) as error:
        bind(add, subtract)  # type: ignore[arg-type]
    assert str(error.value) == (
        "middlewares[0] is a tool, not a middleware: bind takes one tool; put several in one Registry(*tools)"
    )


# -- the provider loop


def test_run_call_with_its_arguments_swapped_says_what_it_takes() -> None:
    """``run_call(call, registry)`` and ``run_call([tools], call)`` say what run_call takes, not an AttributeError."""
    from scopetool.providers import ToolCall, run_call

    call = ToolCall(id="c1", request=Request(name="add", arguments='{"a": 2, "b": 3}'))
    with pytest.raises(TypeError) as swapped:
        asyncio.run(run_call(call, Registry(add)))  # type: ignore[arg-type]
    assert str(swapped.value) == "run_call takes a Registry and a ToolCall, not ToolCall and Registry"
    with pytest.raises(TypeError) as listed:
        asyncio.run(run_call([add], call))  # type: ignore[arg-type]
    assert str(listed.value) == (
        "run_call takes a Registry and a ToolCall, not list and ToolCall: Registry(*tools) makes one of tools"
    )


@pytest.mark.parametrize("tools", [double, [add, double]], ids=["alone", "in-a-list"])
def test_exporting_a_plain_function_says_to_decorate_it(tools: Any) -> None:
    """A plain function given to a provider's export says to decorate it with @tool."""
    from scopetool.providers import ProviderError, openai_chat

    with pytest.raises(ProviderError) as error:
        openai_chat.export_tools(tools)
    assert (
        str(error.value)
        == "cannot export double: it is a plain function; decorate it with @tool (or pass tool(double))"
    )


def test_an_outcome_not_awaited_says_to_await_it() -> None:
    """A forgotten ``await run_call(...)`` passed to ``result_message`` says to await it."""
    from scopetool.providers import ProviderError, ToolCall, openai_chat, run_call

    call = ToolCall(id="c1", request=Request(name="add", arguments='{"a": 2, "b": 3}'))
    pending = run_call(Registry(add), call)
    with pytest.raises(ProviderError) as error:
        openai_chat.result_message(call, pending)  # type: ignore[arg-type]
    pending.close()
    assert (
        str(error.value) == "an outcome is a Result or an exception, not coroutine: await run_call(...) for its outcome"
    )
