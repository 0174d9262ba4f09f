"""`@tool` and `Func`: ordinary typed Python functions as tools."""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, Generic, ParamSpec, TypeAlias, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict, create_model
from pydantic_core import PydanticUndefined, core_schema

from ._codec import NOTHING, InputDecoder, OutputEncoder, caller_namespace, take_decoded, type_adapter
from ._context import APPROVAL_DECLINED, CONTEXT_TOKEN, CallContext, InputNeeded, close_context
from ._definition import NAME_PATTERN, Definition, Effect
from ._errors import InvalidDefinitionError, InvalidInvocationError, InvalidOutputError, InvalidToolError
from ._outcome import Failure, FailureKind
from ._output import Result
from ._search import check_defer_loading
from ._size import check_output_limit, oversize, too_large
from ._timeout import UNDER_TIMEOUT, check_timeout, run_in_own_thread

if TYPE_CHECKING:
    import docstring_parser
    from pydantic.fields import FieldInfo

    from ._contract import Invocation  # only a call needs one, and `prepare` made it: decorating loads no contract

__all__ = ["Func", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

_EMPTY = inspect.Parameter.empty
_PARAMETERS_CONFIG = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

Approval: TypeAlias = "bool | Callable[..., str] | None"
"""``@tool(approval=...)``: True (a default prompt), a function that builds the prompt from the call's
arguments (given as keywords, as the tool's function takes them), or None/False for no approval."""


class Func(Generic[P, R]):
    """A `Tool` made from a typed function by `@tool`; still callable as the plain function.

    Its parameters become one strict input object (a single pydantic-model parameter is the input
    object itself); descriptions come from the docstring (Google, NumPy or Sphinx style) and from
    `Field`/`Annotated` metadata. Async functions are awaited; sync functions run in a worker thread so
    they never block the event loop (a reused pool of threads, in a copy of the caller's context; under
    a timeout, a thread of their own: see `call_timeout`). A parameter annotated with `CallContext` is
    not an input: it receives the call's context (its key, continuation, progress, questions and deps).
    """

    def __init__(
        self,
        fn: Callable[P, R] | Callable[P, Awaitable[R]],
        *,
        name: str | None = None,
        description: str | None = None,
        effect: Effect | None = None,
        approval: Approval = None,
        timeout: float | None = None,
        max_output_bytes: int | None = None,
        defer_loading: bool | None = None,
    ) -> None:
        if isinstance(fn, classmethod):
            raise InvalidToolError(
                "@tool cannot decorate a classmethod: make the tool of the method once the class exists, "
                "tool(TheClass.method), or decorate a @staticmethod"
            )
        if isinstance(fn, str):  # a name, or an Effect (a str enum)
            given = f"Effect.{fn.name}" if isinstance(fn, Effect) else repr(fn)
            setting = "effect" if isinstance(fn, Effect) else "name"
            raise InvalidToolError(
                f"@tool takes its settings as keywords: @tool({setting}={given}), not @tool({given})"
            )
        if not callable(fn):
            raise InvalidToolError(f"@tool needs a function, not {type(fn).__name__}")
        if isinstance(fn, type):  # calling a class makes an instance: a tool of its constructor is never meant
            raise InvalidToolError(
                f"@tool needs a function, not the class {fn.__name__}: decorate a function, or make the tool of"
                f" a bound method (tool({fn.__name__}(...).method))"
            )
        if approval is not None and not isinstance(approval, bool) and not callable(approval):
            raise InvalidToolError(f"approval must be True, False, None or a function, not {type(approval).__name__}")
        self._timeout = check_timeout(timeout, f"@tool {getattr(fn, '__qualname__', fn)!r}")
        self._output_limit = check_output_limit(max_output_bytes, f"@tool {getattr(fn, '__qualname__', fn)!r}")
        self._defer_loading = check_defer_loading(defer_loading, f"@tool {getattr(fn, '__qualname__', fn)!r}")
        functools.update_wrapper(self, fn)
        self._fn = fn
        # Exactly one is set: the coroutine function to await, or the sync function to run in a thread.
        # For a function that `_call_in_context` runs, they move to `_in_context` (see below).
        self._coroutine: Callable[..., Awaitable[Any]] | None = None
        self._sync: Callable[..., Any] | None = None
        if inspect.iscoroutinefunction(fn):
            self._coroutine = fn
        else:
            self._sync = fn
        # Only a function defined inside another one can name that function's locals; a module-level
        # function's annotations resolve in its own globals, whoever decorates it.
        namespace = caller_namespace() if "<locals>" in getattr(fn, "__qualname__", "") else None
        plan = _plan(fn, name, description, effect, namespace)
        self._definition = plan.definition
        self._decoder: InputDecoder[Any] = plan.decoder
        self._encoder: OutputEncoder[Any] = plan.encoder
        self._model_parameter = plan.model_parameter
        self._fills = plan.fills
        # Whether the decoded arguments are the function's keyword arguments as they are (checked once).
        self._as_decoded = plan.model_parameter is None and not plan.fills
        self._context_parameter = plan.context_parameter
        self._deps_class = plan.deps_class
        self._approval: Callable[..., str] | None = (
            _default_prompt if approval is True else approval if callable(approval) else None
        )
        # A function with a context parameter or an approval to ask first runs in `_call_in_context`:
        # `call` finds both `_coroutine` and `_sync` None (it reads nothing more for a plain function).
        self._in_context: tuple[Callable[..., Any] | None, Callable[..., Any] | None] | None = None
        if plan.context_parameter is not None or self._approval is not None:
            self._in_context = (self._coroutine, self._sync)
            self._coroutine = self._sync = None

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the plain function, bypassing admission."""
        return self._fn(*args, **kwargs)  # type: ignore[return-value]

    @property
    def name(self) -> str:
        """The tool's name."""
        return self._definition.name

    def definition(self) -> Definition:
        """The tool's definition (immutable; its accessors hand out fresh copies)."""
        return self._definition

    def call_timeout(self) -> float | None:
        """The timeout in seconds declared with ``@tool(timeout=...)`` (None: none), which `bind` reads once."""
        return self._timeout

    def max_output_bytes(self) -> int | None:
        """The result cap in bytes declared with ``@tool(max_output_bytes=...)`` (None: the default), read by `bind`."""
        return self._output_limit

    def defer_loading(self) -> bool | None:
        """Whether the tool is deferred (True), always shown (False) or left to its registry's rule (None).

        Declared with ``@tool(defer_loading=...)``; read once by `bind`.
        """
        return self._defer_loading

    def input_validator(self) -> InputDecoder[Any]:
        """The strict decoder of the parameters, which `bind` uses as the whole admission check."""
        return self._decoder

    async def call(self, invocation: Invocation, /) -> Result:
        """Decode the admitted arguments, run the function and encode what it returns."""
        try:
            value = take_decoded(invocation, self._decoder)
        except AttributeError:  # not an Invocation: it has no contract to read
            raise InvalidInvocationError(
                f"{self.name}.call needs an Invocation, not {type(invocation).__name__}: bind the tool "
                f"(Registry({self.name}) or bind({self.name})) and call the binding with what "
                f"binding.contract.prepare(request) returns, or call {self.name}(...) to run the plain function"
            ) from None
        if value is NOTHING:
            value = self._decoder.decode(invocation)
        kwargs: dict[str, Any] = value if self._as_decoded else self._keywords(value)
        coroutine = self._coroutine
        if coroutine is not None:
            returned = await coroutine(**kwargs)
        else:
            sync = self._sync
            if sync is None:  # the function takes a context or asks for approval
                if self._deps_class is not None and self._context_parameter is not None:
                    raise InvalidToolError(
                        f"tool {self.name!r} takes CallContext[{self._deps_class.__name__}] but was bound without "
                        "deps: give deps= to bind, Registry or with_deps"
                    )
                return await self._call_in_context(None, invocation, kwargs)
            if UNDER_TIMEOUT.get():  # a timed call: the function gets a thread of its own (see _timeout)
                returned = await run_in_own_thread(sync, kwargs, self.name)
            else:
                returned = await (_run_sync or _load_run_sync())(sync, kwargs)
        return self._result(returned, invocation)

    def _result(self, returned: Any, invocation: Invocation) -> Result:
        """The result of what the function returned, refused past the contract's output cap."""
        result = self._encoder.result(returned)
        limit = invocation._contract._output_limit  # pyright: ignore[reportPrivateUsage]
        size = oversize(result.output, limit)
        if size is not None:  # the name is read only for the refusal
            raise too_large(self.name, limit, size)
        return result

    async def _call_in_context(
        self, deps: Any, invocation: Invocation, decoded: dict[str, Any] | None = None, /
    ) -> Result:
        """`call` with a `CallContext` for the function (holding `deps`) and the approval asked first.

        `decoded` is the keyword arguments when `call` has decoded them already. A question the context
        asks ends the call with its `InputRequest` as the result.
        """
        kwargs = decoded
        if kwargs is None:
            value = take_decoded(invocation, self._decoder)
            if value is NOTHING:
                value = self._decoder.decode(invocation)
            kwargs = value if self._as_decoded else self._keywords(value)
        coroutine, sync = cast("tuple[Callable[..., Any] | None, Callable[..., Any]]", self._in_context)
        context = CallContext(invocation, deps, CONTEXT_TOKEN)
        try:
            approval = self._approval
            if approval is not None:
                prompt = approval(invocation) if approval is _default_prompt else approval(**kwargs)
                if not context.ask(prompt, bool):
                    raise Failure(kind=FailureKind.REJECTED, output=APPROVAL_DECLINED.format(name=self.name))
            if self._context_parameter is not None:
                kwargs[self._context_parameter] = context
            if coroutine is not None:
                returned = await coroutine(**kwargs)
            elif UNDER_TIMEOUT.get():  # a timed call: the function gets a thread of its own (see _timeout)
                returned = await run_in_own_thread(sync, kwargs, self.name)
            else:
                returned = await (_run_sync or _load_run_sync())(sync, kwargs)
        except InputNeeded as stop:
            if stop.context is not context:
                raise  # another call's question: not this call's to answer
            close_context(context)
            return Result(input_request=stop.request)
        if close_context(context) is not None:
            raise InvalidOutputError(
                f"tool {self.name!r} caught the signal CallContext.ask raises to end the call, and returned: "
                "let it through (it is a BaseException; except Exception does not catch it)"
            )
        return self._result(returned, invocation)

    def _deps_problem(self, deps: Any) -> str | None:
        """Why `deps` cannot be this function's context deps, or None (checked when a binding gets them)."""
        expected = self._deps_class
        if expected is None or self._context_parameter is None or isinstance(deps, expected):
            return None
        given = type(deps).__name__
        return f"tool {self.name!r} takes CallContext[{expected.__name__}], but the deps given are {given}"

    def _keywords(self, value: Any) -> dict[str, Any]:
        """The keyword arguments of the decoded `value`: the model parameter, or the defaults filled in."""
        if self._model_parameter is not None:
            return {self._model_parameter: value}
        kwargs: dict[str, Any] = value
        for parameter, field in self._fills:
            if parameter not in kwargs:
                kwargs[parameter] = field.get_default(call_default_factory=True, validated_data=kwargs)
        return kwargs

    def __repr__(self) -> str:
        return f"Func(name={self.name!r})"


_run_sync: Callable[[Callable[..., Any], dict[str, Any]], Awaitable[Any]] | None = None
"""``scopetool._threads.run_sync``, once a sync tool has run (importing scopetool does not start asyncio)."""


def _load_run_sync() -> Callable[[Callable[..., Any], dict[str, Any]], Awaitable[Any]]:
    global _run_sync  # noqa: PLW0603 - loaded once, at the first sync call
    from ._threads import run_sync  # noqa: PLC0415 - a running event loop has imported asyncio already

    _run_sync = run_sync
    return run_sync


@overload
def tool(fn: Callable[P, Awaitable[R]], /) -> Func[P, Awaitable[R]]: ...
@overload
def tool(fn: Callable[P, R], /) -> Func[P, R]: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    effect: Effect | None = None,
    approval: Approval = None,
    timeout: float | None = None,
    max_output_bytes: int | None = None,
    defer_loading: bool | None = None,
) -> Callable[[Callable[P, R]], Func[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: Effect | None = None,
    approval: Approval = None,
    timeout: float | None = None,
    max_output_bytes: int | None = None,
    defer_loading: bool | None = None,
) -> Func[P, R] | Callable[[Callable[P, R]], Func[P, R]]:
    """Make a `Func` tool from a typed function, bare (``@tool``) or configured (``@tool(name=...)``).

    Args:
        fn: The function; sync or async.
        name: The tool name; defaults to the function's name.
        description: What the tool does; defaults to the docstring's text.
        effect: The replay promise (`Effect.SAFE`, `Effect.IDEMPOTENT`) or None for none.
        approval: Ask a person before every call: True (the prompt names the tool and its arguments) or a
            function that builds the prompt from the arguments (as keywords). The call ends with an
            `InputRequest` for a boolean; resumed with True it runs, with False it is a `REJECTED`
            `Failure` showing the model `APPROVAL_DECLINED`'s fixed text. The prompt is for the person,
            never for the model.
        timeout: Seconds a call may run before it is cancelled (None: no timeout). A SAFE tool that
            times out definitely failed; any other has an unknown outcome (`ToolTimeoutError`).
        max_output_bytes: The cap on one result's size in bytes (None: `MAX_OUTPUT_BYTES`, 8 MiB). A larger
            result is a `FAILED` `Failure` that says so; the model never sees the content.
        defer_loading: True keeps the tool's definition out of what the model is first shown: it finds the
            tool with a search (see docs/tool-search.md); False always shows it; None (the default) leaves
            it to the registry's ``defer_loading`` rule.

    Raises:
        InvalidToolError: the signature cannot be a tool; the message lists every problem.

    Example:
        ```python
        from typing import Annotated
        from pydantic import Field
        from scopetool import tool

        @tool
        def add(a: Annotated[int, Field(description="The first addend.")], b: int) -> int:
            \"\"\"Add two integers.\"\"\"
            return a + b

        print(add(2, 3), add.definition().input_schema["properties"]["a"])
        #> 5 {'description': 'The first addend.', 'type': 'integer'}
        ```
    """
    if fn is not None:
        return Func(
            fn,
            name=name,
            description=description,
            effect=effect,
            approval=approval,
            timeout=timeout,
            max_output_bytes=max_output_bytes,
            defer_loading=defer_loading,
        )

    def decorate(function: Callable[P, R]) -> Func[P, R]:
        return Func(
            function,
            name=name,
            description=description,
            effect=effect,
            approval=approval,
            timeout=timeout,
            max_output_bytes=max_output_bytes,
            defer_loading=defer_loading,
        )

    return decorate


class _Plan:
    """What decoration derives from a function, collected before the Func is built."""

    __slots__ = ("context_parameter", "decoder", "definition", "deps_class", "encoder", "fills", "model_parameter")

    decoder: InputDecoder[Any]
    definition: Definition
    encoder: OutputEncoder[Any]

    def __init__(self) -> None:
        self.model_parameter: str | None = None
        self.fills: tuple[tuple[str, FieldInfo], ...] = ()
        self.context_parameter: str | None = None
        self.deps_class: type | None = None  # the class deps must be an instance of, when it can be checked


def _plan(
    fn: Callable[..., Any],
    name: str | None,
    description: str | None,
    effect: Effect | None,
    namespace: dict[str, Any] | None = None,
) -> _Plan:
    problems: list[str] = []
    label = getattr(fn, "__qualname__", repr(fn))
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    if not isinstance(tool_name, str) or not NAME_PATTERN.fullmatch(tool_name):
        problems.append(f"name {tool_name!r} must match ^[A-Za-z0-9_-]{{1,64}}$ (pass name=...)")
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        problems.append("generator functions cannot be tools: return the whole value")
    import docstring_parser  # noqa: PLC0415 - decoration needs it, importing scopetool does not

    docs = docstring_parser.parse(inspect.getdoc(fn) or "")
    documented = {param.arg_name: param.description or "" for param in docs.params}
    try:
        hints = typing.get_type_hints(fn, localns=namespace, include_extras=True)
    except Exception as error:  # noqa: BLE001 - any failure to resolve annotations is reported as a problem
        hints = {}
        problems.append(f"cannot resolve the annotations: {type(error).__name__}: {error}")
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError) as error:
        raise InvalidToolError(f"{label}: no inspectable signature: {error}") from None

    fields: dict[str, Any] = {}
    plan = _Plan()
    method = _unbound_method(fn, parameters, hints)
    if method is not None:
        problems.append(method)
        parameters = parameters[1:]
    for parameter in parameters:
        where = f"parameter {parameter.name!r}"
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            problems.append(f"{where}: *args and **kwargs cannot be described to a model")
            continue
        if parameter.kind is parameter.POSITIONAL_ONLY:
            problems.append(f"{where}: positional-only parameters cannot be passed by name")
            continue
        if parameter.name.startswith("_"):
            problems.append(f"{where}: names starting with an underscore are not allowed")
            continue
        if parameter.name not in hints:
            if hints or parameter.annotation is _EMPTY:
                problems.append(f"{where}: needs a type annotation")
            continue
        if _is_context(hints[parameter.name]):
            if plan.context_parameter is not None:
                problems.append(f"{where}: only one parameter can take the CallContext")
            plan.context_parameter = parameter.name
            plan.deps_class = _deps_class(hints[parameter.name])
            continue
        try:
            type_adapter(hints[parameter.name], namespace)
        except Exception as error:  # noqa: BLE001 - pydantic reports unsupported types in many ways
            problems.append(_unsupported(where, hints[parameter.name], error))
            continue
        fields[parameter.name] = _field(
            parameter.name, hints[parameter.name], parameter.default, documented.get(parameter.name)
        )

    text = description if description is not None else _describe(docs)
    returns = hints.get("return", Any)
    try:
        plan.encoder = OutputEncoder(returns, namespace=namespace)
    except Exception as error:  # noqa: BLE001 - reported with the other problems
        problems.append(_unsupported("the return type", returns, error))
    if not problems:
        try:
            _build_input(plan, tool_name, parameters, fields, hints, namespace=namespace)
        except Exception as error:  # noqa: BLE001 - pydantic reports unsupported types in many ways
            problems.append(_undescribed(fields, hints, namespace) or f"parameters: {_first_line(error)}")
    if not problems:
        try:
            plan.definition = Definition(
                name=tool_name,
                description=text,
                input_schema=plan.decoder.schema_json,
                output_schema=plan.encoder.schema,
                effect=effect,
            )
        except InvalidDefinitionError as error:
            problems.append(f"definition: {error}")
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        raise InvalidToolError(f"{label} cannot be a tool:\n{listed}")
    return plan


def _field(name: str, annotation: Any, default: Any, documented: str | None) -> tuple[Any, Any]:
    """A create_model field spec for one parameter.

    The parameter's name becomes the field's alias, so names that a pydantic model reserves (``schema``,
    ``json``, ``model_config``) still work; the docstring describes the parameter unless `Field`
    metadata already does.
    """
    # Decoration needs pydantic's field machinery; importing scopetool does not.
    from pydantic import Field  # noqa: PLC0415
    from pydantic.fields import FieldInfo  # noqa: PLC0415

    declared = FieldInfo.from_annotated_attribute(annotation, PydanticUndefined if default is _EMPTY else default)
    extra: dict[str, Any] = {}
    if declared.alias is None and declared.validation_alias is None:
        extra["alias"] = name
    if documented and declared.description is None:
        extra["description"] = documented
    if extra:
        annotation = Annotated[annotation, Field(**extra)]
    return annotation, (... if default is _EMPTY else default)


def _build_input(
    plan: _Plan,
    tool_name: str,
    parameters: list[inspect.Parameter],
    fields: dict[str, Any],
    hints: dict[str, Any],
    *,
    namespace: dict[str, Any] | None,
) -> None:
    named = [p for p in parameters if p.name in fields]
    if len(named) == 1 and _is_model(hints[named[0].name]) and named[0].default is _EMPTY:
        model = cast(type[BaseModel], hints[named[0].name])
        plan.decoder = InputDecoder(model.__pydantic_core_schema__)
        plan.model_parameter = named[0].name
        return
    # Fields get neutral names (p0, p1, ...) and the parameters' names as aliases, so no parameter name
    # can collide with a BaseModel attribute.
    internal = {parameter.name: f"p{index}" for index, parameter in enumerate(named)}
    model = create_model(
        tool_name.replace("-", "_") or "arguments",
        __config__=_PARAMETERS_CONFIG,
        **{internal[name]: spec for name, spec in fields.items()},
    )
    if namespace is not None and not model.__pydantic_complete__:
        model.model_rebuild(_types_namespace=namespace)  # classes local to the tool's own definition
    parameter_of = {field: name for name, field in internal.items()}
    plan.decoder = InputDecoder(_arguments_schema(model, parameter_of), advertised=model.__pydantic_core_schema__)
    from pydantic.fields import FieldInfo  # noqa: PLC0415 - loaded already by `_field`

    plan.fills = tuple(
        (parameter.name, model.model_fields[internal[parameter.name]])
        for parameter in named
        if not model.model_fields[internal[parameter.name]].is_required()
        and (parameter.default is _EMPTY or isinstance(parameter.default, FieldInfo))
    )


def _arguments_schema(model: type[BaseModel], parameter_of: dict[str, str]) -> core_schema.CoreSchema:
    """The parameters as a typed dict holding only the members the JSON gave.

    Defaults are applied at call time (they are the function's own); the field schemas are the model's.
    """
    schema: Any = model.__pydantic_core_schema__
    definitions = None
    if schema["type"] == "definitions":
        definitions, schema = schema["definitions"], schema["schema"]
    fields: dict[str, core_schema.TypedDictField] = {}
    for key, field in schema["schema"]["fields"].items():
        inner = field["schema"]
        required = inner["type"] != "default"
        fields[parameter_of[key]] = core_schema.typed_dict_field(
            inner if required else inner["schema"],
            required=required,
            validation_alias=field.get("validation_alias"),
        )
    arguments: core_schema.CoreSchema = core_schema.typed_dict_schema(fields, extra_behavior="forbid")
    if definitions:
        arguments = core_schema.definitions_schema(arguments, definitions)
    return arguments


def _is_context(annotation: Any) -> bool:
    """Whether `annotation` is `CallContext` or ``CallContext[Deps]`` (not an input)."""
    return annotation is CallContext or typing.get_origin(annotation) is CallContext


def _deps_class(annotation: Any) -> type | None:
    """The class the deps of ``CallContext[Deps]`` are checked against, or None when unchecked.

    It is Deps (or its origin) when that is an ordinary class other than object and None; unions,
    protocols and Any are not checked.
    """
    arguments = typing.get_args(annotation)
    declared = typing.get_origin(arguments[0]) or arguments[0] if arguments else None
    if not isinstance(declared, type) or declared in (object, type(None), types.UnionType):
        return None
    try:
        isinstance(None, declared)
    except TypeError:  # a protocol that is not runtime-checkable
        return None
    return declared


def _default_prompt(invocation: Invocation) -> str:
    """The approval prompt when the tool gives no function for one: the tool's name and its arguments."""
    from ._json import canonical_json, loads_exact  # noqa: PLC0415 - loaded already by admission

    arguments = canonical_json(loads_exact(invocation.arguments)).decode("utf-8")
    return f'Allow the tool "{invocation.name}" to run with the arguments {arguments}?'


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _describe(docs: docstring_parser.Docstring) -> str:
    parts = [part for part in (docs.short_description, docs.long_description) if part]
    return "\n\n".join(parts)


def _unbound_method(fn: Callable[..., Any], parameters: list[inspect.Parameter], hints: dict[str, Any]) -> str | None:
    """The problem of a function defined in a class body whose first parameter is an unannotated self or cls."""
    owner, _, _ = getattr(fn, "__qualname__", "").rpartition(".")
    if not owner or owner.endswith("<locals>") or not parameters:
        return None
    first = parameters[0].name
    if first not in ("self", "cls") or first in hints or parameters[0].annotation is not _EMPTY:
        return None
    method = fn.__name__
    if first == "cls":
        fix = f"tool({owner.rpartition('.')[2]}.{method}) once the class exists"
    else:
        fix = f"the bound method of an instance, tool(instance.{method})"
    return (
        f"parameter {first!r}: {fn.__qualname__} is a method (a model cannot send its {first}): "
        f"decorate a plain function or a @staticmethod instead, or make the tool of {fix}"
    )


def _unsupported(where: str, annotation: Any, error: BaseException) -> str:
    """The problem of a type pydantic cannot validate or describe as JSON Schema, with what to use instead."""
    from pydantic.errors import PydanticInvalidForJsonSchema, PydanticSchemaGenerationError  # noqa: PLC0415

    shown = annotation.__qualname__ if isinstance(annotation, type) else repr(annotation)
    if not isinstance(error, PydanticSchemaGenerationError | PydanticInvalidForJsonSchema):
        return f"{where}: type {shown} is not supported: {_first_line(error)}"
    if where == "the return type":
        return (
            f"the return type {shown} cannot be described as JSON Schema, so its value cannot be sent to a "
            "model: return a JSON-compatible type (str, int, float, bool, a list, a dict, a pydantic model, "
            "a dataclass) or an Output"
        )
    return (
        f"{where}: its type {shown} cannot be described as JSON Schema, so a model cannot send it: use a "
        "JSON-compatible type (str, int, float, bool, a list, a dict, a pydantic model, a dataclass); "
        "an object the tool needs (a client, a callback) belongs in its deps (a CallContext[Deps] parameter)"
    )


def _undescribed(fields: dict[str, Any], hints: dict[str, Any], namespace: dict[str, Any] | None) -> str | None:
    """The problem of the first parameter whose type has no JSON Schema (pydantic validates a Callable, say)."""
    for name in fields:
        try:
            type_adapter(hints[name], namespace).json_schema()
        except Exception as error:  # noqa: BLE001 - the first failing parameter is the one to name
            return _unsupported(f"parameter {name!r}", hints[name], error)
    return None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
