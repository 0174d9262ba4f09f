"""Tests for `@tool` and `Func`: typed functions as tools."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import threading
import time
import warnings
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, field_validator
from typing_extensions import TypedDict

from scopetool import (
    Effect,
    Func,
    InvalidInvocationError,
    InvalidOutputError,
    InvalidToolError,
    Output,
    Request,
    Result,
    Signature,
    TextBlock,
    bind,
    tool,
)

# -- helpers ------------------------------------------------------------------------------------


async def run(func: Func[..., Any], arguments: str = "") -> Result:
    """Bind `func`, admit `arguments` and call it."""
    binding = bind(func)
    invocation = binding.contract.prepare(Request(name=func.name, arguments=arguments))
    return await binding.call(invocation)


def rejects(func: Func[..., Any], arguments: str) -> bool:
    """Whether the contract of `func` refuses `arguments`."""
    binding = bind(func)
    try:
        binding.contract.prepare(Request(name=func.name, arguments=arguments))
    except InvalidInvocationError:
        return True
    return False


def problems(error: pytest.ExceptionInfo[InvalidToolError]) -> list[str]:
    """The listed problem lines of an InvalidToolError."""
    return [line for line in str(error.value).splitlines() if line.startswith("  - ")]


# -- decoration ---------------------------------------------------------------------------------


def test_bare_tool_uses_function_name_and_docstring() -> None:
    """Bare @tool names the tool after the function and describes it with the docstring."""

    @tool
    def greet(who: str) -> str:
        """Say hello."""
        return f"hello {who}"

    assert isinstance(greet, Func)
    definition = greet.definition()
    assert greet.name == "greet"
    assert definition.name == "greet"
    assert definition.description == "Say hello."
    assert definition.effect is None


def test_configured_tool_overrides_name_description_and_effect() -> None:
    """@tool(name=, description=, effect=) overrides every default."""

    @tool(name="say-hi", description="Greets someone.", effect=Effect.SAFE)
    def greet(who: str) -> str:
        """Docstring text that must not be used."""
        return f"hello {who}"

    definition = greet.definition()
    assert definition.name == "say-hi"
    assert definition.description == "Greets someone."
    assert definition.effect is Effect.SAFE
    assert greet.name == "say-hi"


def test_configured_tool_with_idempotent_effect() -> None:
    """effect=Effect.IDEMPOTENT reaches the definition."""

    @tool(effect=Effect.IDEMPOTENT)
    def put(key: str) -> None:
        """Store a key."""

    assert put.definition().effect is Effect.IDEMPOTENT


def test_func_is_still_the_plain_function() -> None:
    """Calling a Func calls the plain function and returns its result unchanged."""

    def add(a: int, b: int = 10) -> int:
        return a + b

    wrapped = tool(add)
    assert wrapped(2, 3) == add(2, 3) == 5
    assert wrapped(a=1) == 11
    assert wrapped.__name__ == "add"
    assert wrapped.__wrapped__ is add  # type: ignore[attr-defined]


async def test_async_plain_call_returns_coroutine() -> None:
    """Calling an async Func directly gives the function's coroutine."""

    @tool
    async def double(n: int) -> int:
        """Double."""
        return n * 2

    assert await double(4) == 8


async def test_sync_function_runs_through_binding() -> None:
    """A sync Func called through a binding returns its encoded value."""

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    result = await run(add, '{"a":2,"b":3}')
    assert result.output.text() == "5"
    assert result.output.details == b"5"


async def test_async_function_is_awaited_on_the_loop_thread() -> None:
    """An async Func is awaited on the event loop's own thread."""
    seen: list[int] = []

    @tool
    async def where(n: int) -> int:
        """Report the thread."""
        seen.append(threading.get_ident())
        await asyncio.sleep(0)
        return n + 1

    result = await run(where, '{"n":1}')
    assert result.output.details == b"2"
    assert seen == [threading.get_ident()]


async def test_sync_function_runs_in_worker_thread() -> None:
    """A sync Func runs on a thread other than the event loop's."""
    seen: list[int] = []

    @tool
    def where() -> str:
        """Report the thread."""
        seen.append(threading.get_ident())
        return "ok"

    result = await run(where)
    assert result.output.text() == "ok"
    assert len(seen) == 1
    assert seen[0] != threading.get_ident()


async def test_sync_function_does_not_block_the_event_loop() -> None:
    """While a sync tool sleeps 0.2 s, another task on the loop keeps making progress."""
    ticks = 0
    ticks_during: list[int] = []

    @tool
    def slow() -> str:
        """Sleep."""
        before = ticks
        time.sleep(0.2)
        ticks_during.append(ticks - before)
        return "slept"

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        result = await run(slow)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert result.output.text() == "slept"
    assert ticks_during[0] >= 5


# -- descriptions from docstrings -------------------------------------------------------------


def test_google_docstring() -> None:
    """A Google docstring gives summary + long description, and parameter descriptions in the schema."""

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        The sum is exact.

        Args:
            a: The first addend.
            b: The second addend.

        Returns:
            The sum.
        """
        return a + b

    definition = add.definition()
    assert definition.description == "Add two integers.\n\nThe sum is exact."
    properties = definition.input_schema["properties"]
    assert properties["a"]["description"] == "The first addend."
    assert properties["b"]["description"] == "The second addend."


def test_numpy_docstring() -> None:
    """A NumPy docstring gives summary + long description, and parameter descriptions in the schema."""

    @tool
    def scale(x: int, factor: int = 2) -> int:
        """Scale a number.

        Multiplies x by a factor.

        Parameters
        ----------
        x : int
            The number to scale.
        factor : int
            How much to scale by.
        """
        return x * factor

    definition = scale.definition()
    assert definition.description == "Scale a number.\n\nMultiplies x by a factor."
    assert "Parameters" not in definition.description
    properties = definition.input_schema["properties"]
    assert properties["x"]["description"] == "The number to scale."
    assert properties["factor"]["description"] == "How much to scale by."


def test_sphinx_docstring() -> None:
    """A Sphinx docstring gives summary + long description, and parameter descriptions in the schema."""

    @tool
    def shout(text: str) -> str:
        """Shout a text.

        Upper-cases everything.

        :param text: What to shout.
        :returns: The loud text.
        """
        return text.upper()

    definition = shout.definition()
    assert definition.description == "Shout a text.\n\nUpper-cases everything."
    assert ":param" not in definition.description
    assert definition.input_schema["properties"]["text"]["description"] == "What to shout."


def test_no_docstring_gives_empty_description() -> None:
    """A function without a docstring has an empty description and undescribed parameters."""

    @tool
    def bare(n: int) -> int:
        return n

    definition = bare.definition()
    assert definition.description == ""
    assert "description" not in definition.input_schema["properties"]["n"]


def test_explicit_description_replaces_docstring_text_but_keeps_parameter_docs() -> None:
    """description= replaces the tool text; the docstring still describes parameters."""

    @tool(description="Custom.")
    def add(a: int) -> int:
        """Docstring summary.

        Args:
            a: The addend.
        """
        return a

    definition = add.definition()
    assert definition.description == "Custom."
    assert definition.input_schema["properties"]["a"]["description"] == "The addend."


def test_field_metadata_wins_over_docstring() -> None:
    """Annotated[..., Field(description=)] and = Field(description=) beat the docstring."""

    @tool
    def f(
        a: Annotated[int, Field(description="from annotated")],
        b: int = Field(default=1, description="from default"),
        c: int = 0,
    ) -> int:
        """Summary.

        Args:
            a: docstring a
            b: docstring b
            c: docstring c
        """
        return a + b + c

    properties = f.definition().input_schema["properties"]
    assert properties["a"]["description"] == "from annotated"
    assert properties["b"]["description"] == "from default"
    assert properties["c"]["description"] == "docstring c"


# -- constraints --------------------------------------------------------------------------------


class Color(Enum):
    """A test enum."""

    RED = "red"
    BLUE = "blue"


@tool
def constrained(
    n: Annotated[int, Field(ge=1, le=10)],
    s: Annotated[str, Field(min_length=2, pattern="^[a-z]+$")],
    mode: Literal["fast", "slow"],
    color: Color,
) -> str:
    """Echo constrained values."""
    assert isinstance(color, Color)
    return f"{n}:{s}:{mode}:{color.value}"


def test_constraints_appear_in_schema() -> None:
    """ge/le, min_length, pattern, Literal and Enum appear in the input schema."""
    schema = constrained.definition().input_schema
    properties = schema["properties"]
    assert properties["n"]["minimum"] == 1
    assert properties["n"]["maximum"] == 10
    assert properties["s"]["minLength"] == 2
    assert properties["s"]["pattern"] == "^[a-z]+$"
    assert properties["mode"]["enum"] == ["fast", "slow"]
    color = properties["color"]
    if "$ref" in color:
        color = schema["$defs"][color["$ref"].rsplit("/", 1)[-1]]
    assert color["enum"] == ["red", "blue"]
    assert sorted(schema["required"]) == ["color", "mode", "n", "s"]
    assert schema["additionalProperties"] is False


async def test_valid_constrained_call_runs() -> None:
    """Arguments within every constraint are admitted and reach the function as typed values."""
    result = await run(constrained, '{"n":10,"s":"ab","mode":"slow","color":"blue"}')
    assert result.output.text() == "10:ab:slow:blue"


@pytest.mark.parametrize(
    "arguments",
    [
        '{"n":0,"s":"ab","mode":"fast","color":"red"}',
        '{"n":11,"s":"ab","mode":"fast","color":"red"}',
        '{"n":"5","s":"ab","mode":"fast","color":"red"}',
        '{"n":5,"s":"a","mode":"fast","color":"red"}',
        '{"n":5,"s":"AB","mode":"fast","color":"red"}',
        '{"n":5,"s":"ab","mode":"medium","color":"red"}',
        '{"n":5,"s":"ab","mode":"fast","color":"green"}',
        '{"n":5,"s":"ab","mode":"fast"}',
        '{"n":5,"s":"ab","mode":"fast","color":"red","extra":1}',
    ],
)
def test_constraints_are_enforced(arguments: str) -> None:
    """Each violated constraint (or unknown/missing member) is refused at admission."""
    assert rejects(constrained, arguments)


# -- defaults -----------------------------------------------------------------------------------


async def test_plain_python_defaults_apply_and_are_advertised() -> None:
    """Plain defaults are optional in the schema, advertised there and applied when omitted."""

    @tool
    def greet(name: str = "world", times: int = 1) -> str:
        """Greet."""
        return f"hello {name}" * times

    schema = greet.definition().input_schema
    assert "required" not in schema or schema["required"] == []
    assert schema["properties"]["name"]["default"] == "world"
    assert (await run(greet)).output.text() == "hello world"
    assert (await run(greet, '{"name":"you","times":2}')).output.text() == "hello youhello you"


async def test_field_default_applies() -> None:
    """A `= Field(default=...)` parameter gets its default when omitted."""

    @tool
    def f(a: int = Field(default=7)) -> int:
        """F."""
        return a

    assert f.definition().input_schema["properties"]["a"]["default"] == 7
    assert (await run(f)).output.details == b"7"
    assert (await run(f, '{"a":3}')).output.details == b"3"


async def test_default_factory_gives_fresh_list_per_call() -> None:
    """`Field(default_factory=list)` hands each call its own new list."""
    received: list[list[str]] = []

    @tool
    def collect(items: list[str] = Field(default_factory=list)) -> int:  # noqa: B008 - the behaviour under test
        """Collect."""
        items.append("x")
        received.append(items)
        return len(items)

    assert "items" not in collect.definition().input_schema.get("required", [])
    first = await run(collect)
    second = await run(collect)
    assert first.output.details == b"1"
    assert second.output.details == b"1"
    assert received[0] is not received[1]
    assert received[0] == received[1] == ["x"]


# -- a single model parameter -------------------------------------------------------------------


class Query(BaseModel):
    """A search query."""

    q: str
    limit: int = 3


async def test_single_model_parameter_is_flattened() -> None:
    """A lone pydantic-model parameter is the input object itself, and the function gets an instance."""
    received: list[object] = []

    @tool
    def search(query: Query) -> list[str]:
        """Search."""
        received.append(query)
        return [query.q] * query.limit

    schema = search.definition().input_schema
    assert set(schema["properties"]) == {"q", "limit"}
    assert "query" not in schema["properties"]
    assert schema["required"] == ["q"]
    assert schema["additionalProperties"] is False
    result = await run(search, '{"q":"cat","limit":2}')
    assert result.output.details == b'["cat","cat"]'
    assert len(received) == 1
    assert isinstance(received[0], Query)
    assert rejects(search, '{"query":{"q":"cat"}}')


COUNTED: list[int] = []


class Counted(BaseModel):
    """A model whose validator counts its runs."""

    n: int

    @field_validator("n")
    @classmethod
    def count(cls, value: int) -> int:
        COUNTED.append(value)
        return value


async def test_flattened_model_validator_runs_once_per_call() -> None:
    """The model decoded at admission is reused by the call: its validator runs once."""
    COUNTED.clear()

    @tool
    def f(arg: Counted) -> int:
        """F."""
        return arg.n

    assert (await run(f, '{"n":4}')).output.details == b"4"
    assert COUNTED == [4]


def test_model_parameter_with_other_parameters_is_nested() -> None:
    """A model parameter beside others stays a nested member."""

    @tool
    def f(query: Query, page: int) -> int:
        """F."""
        return page

    properties = f.definition().input_schema["properties"]
    assert set(properties) == {"query", "page"}


# -- bad signatures -----------------------------------------------------------------------------


def test_bad_signature_lists_every_problem() -> None:
    """*args, **kwargs, underscore names and missing annotations are all reported in one error."""

    def bad(*args: int, _hidden: int, untyped, **kwargs: int) -> int:  # type: ignore[no-untyped-def]
        return 0

    with pytest.raises(InvalidToolError) as error:
        tool(bad)
    listed = problems(error)
    assert len(listed) == 4
    text = str(error.value)
    assert "'args'" in text
    assert "'kwargs'" in text
    assert "'_hidden'" in text
    assert "'untyped'" in text
    assert "type annotation" in text


def test_positional_only_parameter_is_refused() -> None:
    """Positional-only parameters cannot be tool parameters."""

    def f(a: int, /, b: int) -> int:
        return a + b

    with pytest.raises(InvalidToolError, match="positional-only") as error:
        tool(f)
    assert "'a'" in str(error.value)
    assert len(problems(error)) == 1


def test_unresolvable_forward_reference_is_refused() -> None:
    """An annotation naming an undefined type is reported."""

    def f(a: Nope) -> int:  # type: ignore[name-defined]  # noqa: F821
        return 0

    with pytest.raises(InvalidToolError, match="Nope"):
        tool(f)


def test_unresolvable_forward_reference_listed_with_other_problems() -> None:
    """An unresolvable annotation is reported beside the other problems of the same signature."""

    def f(a: Nope, *rest: int) -> int:  # type: ignore[name-defined]  # noqa: F821
        return 0

    with pytest.raises(InvalidToolError) as error:
        tool(f)
    text = str(error.value)
    assert "Nope" in text
    assert "'rest'" in text
    assert len(problems(error)) == 2


def test_lambda_name_is_invalid() -> None:
    """A lambda's name is not a valid tool name; name= fixes it."""
    with pytest.raises(InvalidToolError, match="<lambda>"):
        tool(lambda: 1)
    fixed = tool(name="one")(lambda: 1)
    assert fixed.name == "one"
    assert fixed() == 1


@pytest.mark.parametrize("name", ["bad name", "", "a" * 65, "dot.ted"])
def test_invalid_configured_name_is_refused(name: str) -> None:
    """A configured name outside ^[A-Za-z0-9_-]{1,64}$ is refused at decoration."""

    def f() -> int:
        return 1

    with pytest.raises(InvalidToolError, match="must match"):
        tool(name=name)(f)


def test_generator_functions_are_refused() -> None:
    """Sync and async generator functions cannot be tools."""

    def gen(n: int):  # type: ignore[no-untyped-def]
        yield n

    async def agen(n: int):  # type: ignore[no-untyped-def]
        yield n

    for fn in (gen, agen):
        with pytest.raises(InvalidToolError, match="generator"):
            tool(fn)


def test_unsupported_parameter_type_is_refused() -> None:
    """A parameter type pydantic cannot describe is refused at decoration."""

    def f(lock: threading.Lock) -> int:  # type: ignore[valid-type]
        return 0

    with pytest.raises(InvalidToolError, match="cannot be a tool"):
        tool(f)


def test_unsupported_return_type_is_refused() -> None:
    """A return type that cannot be encoded is refused at decoration."""

    def f(a: int) -> threading.Lock:  # type: ignore[valid-type]
        return threading.Lock()

    with pytest.raises(InvalidToolError, match="return type"):
        tool(f)


def test_unsupported_parameter_type_is_listed_with_other_problems() -> None:
    """An unsupported parameter type is listed beside the signature's other problems."""

    def f(lock: threading.Lock, *rest: int) -> int:  # type: ignore[valid-type]
        return 0

    with pytest.raises(InvalidToolError) as error:
        tool(f)
    assert "'rest'" in str(error.value)
    assert len(problems(error)) == 2


def test_every_unsupported_parameter_type_is_listed() -> None:
    """Two parameters of unsupported types give two listed problems."""

    def f(lock: threading.Lock, sock: socket.socket) -> int:  # type: ignore[valid-type]
        return 0

    with pytest.raises(InvalidToolError) as error:
        tool(f)
    assert len(problems(error)) == 2


def test_not_callable_is_refused() -> None:
    """@tool on something that is not a function raises InvalidToolError."""
    with pytest.raises(InvalidToolError):
        tool(42)  # type: ignore[call-overload]


def test_parameter_names_shared_with_basemodel_attributes_are_accepted() -> None:
    """Ordinary parameter names such as `schema` and `json` decorate cleanly, without warnings."""

    def lookup(schema: str, json: int) -> str:
        """Look up a schema."""
        return schema * json

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wrapped = tool(lookup)
    assert set(wrapped.definition().input_schema["properties"]) == {"schema", "json"}


# -- output encoding ----------------------------------------------------------------------------


async def test_str_return_is_text_without_output_schema() -> None:
    """`-> str` gives text-only output and declares no output schema."""

    @tool
    def hello(name: str) -> str:
        """Hello."""
        return f"hi {name}"

    assert hello.definition().output_schema is None
    output = (await run(hello, '{"name":"bo"}')).output
    assert output.content == (TextBlock("hi bo"),)
    assert output.details is None


async def test_int_return_is_json_details_with_schema() -> None:
    """`-> int` gives JSON details and an integer output schema."""

    @tool
    def answer() -> int:
        """Answer."""
        return 42

    assert answer.definition().output_schema == {"type": "integer"}
    output = (await run(answer)).output
    assert output.content == ()
    assert output.details == b"42"


async def test_dict_return_is_json_details_with_schema() -> None:
    """`-> dict[str, int]` gives JSON details and an object output schema."""

    @tool
    def counts() -> dict[str, int]:
        """Counts."""
        return {"a": 1, "b": 2}

    schema = counts.definition().output_schema
    assert isinstance(schema, dict)
    assert schema["type"] == "object"
    output = (await run(counts)).output
    assert output.details_value() == {"a": 1, "b": 2}


class Point(BaseModel):
    """A point."""

    x: int
    y: int


async def test_model_return_is_json_details_with_model_schema() -> None:
    """`-> Model` gives the model's JSON as details and its schema as output schema."""

    @tool
    def origin() -> Point:
        """Origin."""
        return Point(x=0, y=1)

    schema = origin.definition().output_schema
    assert isinstance(schema, dict)
    assert set(schema["properties"]) == {"x", "y"}
    assert (await run(origin)).output.details_value() == {"x": 0, "y": 1}


async def test_none_return_is_empty_output() -> None:
    """`-> None` gives the empty output and no output schema."""

    @tool
    def noop() -> None:
        """Nothing."""

    assert noop.definition().output_schema is None
    output = (await run(noop)).output
    assert output == Output()
    assert output.text() == ""


async def test_output_return_passes_through() -> None:
    """`-> Output` hands the returned Output through unchanged."""
    made = Output(content=(TextBlock("a"), TextBlock("b")), details=b'{"k":1}')

    @tool
    def rich() -> Output:
        """Rich."""
        return made

    assert rich.definition().output_schema is None
    assert (await run(rich)).output is made


async def test_no_return_annotation_gives_json_details_without_schema() -> None:
    """Without a return annotation the value is JSON details and no output schema is declared."""

    @tool
    def loose(a: int):  # type: ignore[no-untyped-def]
        """Loose."""
        return {"a": a, "list": [1, 2]}

    assert loose.definition().output_schema is None
    assert (await run(loose, '{"a":5}')).output.details_value() == {"a": 5, "list": [1, 2]}


@pytest.mark.parametrize(
    ("annotation", "value"),
    [(str, 5), (int, "five"), (type(None), 1), (Output, "text"), (Point, {"x": 1, "y": 2})],
)
async def test_wrong_return_type_raises_invalid_output(annotation: Any, value: Any) -> None:
    """Returning a value that does not fit the declared type raises InvalidOutputError."""

    def wrong():  # type: ignore[no-untyped-def]
        return value

    wrong.__annotations__["return"] = annotation
    with pytest.raises(InvalidOutputError):
        await run(tool(wrong))


# -- tools defined in functions (closures, factories) ----------------------------------------------
# This module has ``from __future__ import annotations``: every annotation below is a string that only
# the defining function's own locals can resolve, as pydantic's `validate_call` resolves it.


def _factory() -> tuple[Func[..., Any], Func[..., Any], Func[..., Any]]:
    class Inner(BaseModel):
        x: int

    class Entry(TypedDict):
        inner: Inner

    @dataclasses.dataclass
    class Box:
        inner: Inner

    class Total(BaseModel):
        total: int

    @tool
    def bare(entry: Entry, box: Box, more: list[Inner]) -> Total:
        """Sum the inner values."""
        return Total(total=entry["inner"].x + box.inner.x + sum(item.x for item in more))

    @tool(name="configured")
    def configured(inner: Inner) -> Inner:
        """Echo the model parameter."""
        return inner

    def direct(inner: Inner | None = None) -> int:
        """Read an optional local model."""
        return 0 if inner is None else inner.x

    return bare, configured, Func(direct)


async def test_tools_defined_in_a_function_resolve_its_local_classes() -> None:
    """@tool, @tool(...) and Func(...) inside a function resolve the classes defined there, nested too."""
    bare, configured, direct = _factory()
    result = await run(bare, '{"entry":{"inner":{"x":1}},"box":{"inner":{"x":2}},"more":[{"x":3}]}')
    assert result.output.details_value() == {"total": 6}
    assert bare.definition().output_schema == {
        "additionalProperties": False, "properties": {"total": {"type": "integer"}}, "required": ["total"],
        "type": "object",
    }  # fmt: skip
    assert (await run(configured, '{"x":4}')).output.details_value() == {"x": 4}
    assert (await run(direct, '{"inner":{"x":5}}')).output.details_value() == 5
    assert rejects(bare, '{"entry":{"inner":{"x":"1"}},"box":{"inner":{"x":2}},"more":[]}')


def test_a_name_no_scope_defines_is_still_reported() -> None:
    """An annotation naming nothing in the function's locals or globals is listed as unresolvable."""

    def broken(a: Missing) -> int:  # type: ignore[name-defined]  # noqa: F821
        """Refer to an undefined class."""
        return 0

    with pytest.raises(InvalidToolError) as info:
        tool(broken)
    assert problems(info) == ["  - cannot resolve the annotations: NameError: name 'Missing' is not defined"]


def test_a_signature_made_in_a_function_resolves_its_local_output_type() -> None:
    """A Signature's output type defined in the same function resolves its string annotations there."""

    class Part(BaseModel):
        n: int

    class Parts(TypedDict):
        part: Part

    class In(BaseModel):
        n: int

    signature = Signature(In, Parts)
    assert signature.output_schema is not None
    assert signature.encode({"part": Part(n=1)}).details_value() == {"part": {"n": 1}}


class Shadowed(BaseModel):
    """A module-level model that a caller's local of the same name must not replace."""

    n: int


def module_level(item: Shadowed) -> int:
    """A module-level function whose string annotation names a module-level model."""
    return item.n


def test_a_module_level_function_resolves_in_its_own_globals_wherever_it_is_decorated() -> None:
    """Decorating a module-level function inside a function never resolves its annotations in that function."""
    Shadowed = int  # noqa: F841 - a local that would shadow the model if the caller's locals were used
    func = tool(module_level)
    assert func.definition().input_schema["properties"] == {"n": {"type": "integer"}}


def test_a_class_is_refused_at_decoration_with_what_to_do() -> None:
    """`@tool` on a class fails at once, pointing to a function or a bound method, instead of failing on call."""
    with pytest.raises(
        InvalidToolError, match=r"not the class Shop: decorate a function, or .*tool\(Shop\(\.\.\.\)\.method\)"
    ):

        @tool
        class Shop:
            """A shop."""
