"""What every provider adapter shares: tool calls, exports, the portability report, outcome rendering."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import FunctionType, MappingProxyType
from typing import Any, Final, TypeAlias, TypeGuard, cast, final

import orjson

from .. import _observe
from .._binding import Binding, Tool
from .._catalog import Catalog, DeferredToolError
from .._chain import find_one
from .._contract import Admission, Request
from .._definition import Definition
from .._errors import ScopetoolError, ToolNotFoundError
from .._feedback import nearest, unknown_tool_message
from .._json import JsonObject, canonical_json, is_array, is_object, loads_exact, syntax_problem
from .._outcome import classify_failure
from .._output import Output, Result
from .._registry import Registry
from .._rejection import classify_input_rejection
from .._run import call_outcome
from .._timeout import TIMED_OUT_UNKNOWN, ToolTimeoutError
from ._transform import Change, Transformed, allows_null, resolve_ref

__all__ = [
    "Export",
    "PortabilityReport",
    "ProviderError",
    "ToolCall",
    "ToolReport",
    "Tools",
    "UnknownToolError",
    "callable_names",
    "check_export",
    "deferred_of",
    "definitions_of",
    "is_iterable",
    "is_mapping",
    "outcome_output",
    "plain",
    "run_call",
    "tool_call_list",
    "with_native_search",
]

is_mapping: Final = cast("Callable[[object], TypeGuard[Mapping[str, Any]]]", Mapping.__instancecheck__)
"""``isinstance(value, Mapping)``, typed for payloads: a provider's JSON objects (or SDK dumps) have str keys.

Like `is_object`, it is the type's own check, so it costs what ``isinstance`` does."""
is_iterable: Final = cast("Callable[[object], TypeGuard[Iterable[Any]]]", Iterable.__instancecheck__)
"""``isinstance(value, Iterable)``, typed for payloads: what it yields is checked item by item."""


class ProviderError(ScopetoolError, ValueError):
    """A definition cannot be exported to a provider, or a provider payload cannot be read."""


class UnknownToolError(ScopetoolError, LookupError):
    """A tool call names a tool the caller may not call; its message is what the model is told.

    `known` are the names the caller may call: the message suggests the nearest of them
    (`unknown_tool_message`), and no other.
    """

    def __init__(self, name: str, known: Iterable[str] = ()) -> None:
        near = tuple(nearest(name, known))
        super().__init__(unknown_tool_message(name, near))
        self.name = name
        """The name the model asked for (untrusted)."""
        self.near = near
        """The nearest names the caller may call, nearest first."""


_JSON_TYPES: Final = frozenset({dict, list, str, int, float, bool, type(None)})


def plain(value: object, where: str) -> Any:
    """One node of a provider payload as plain data (dicts, lists, strings, numbers), SDK object or not.

    Plain JSON (and boto3's dicts) is returned as it is. An SDK object is read through its own
    serializer, without scopetool importing any SDK: a pydantic model (the response types of OpenAI,
    Anthropic, google-genai, MCP, Mistral and Ollama) through ``model_dump(by_alias=True)``, which gives
    the wire names and keeps every string as it is, so OpenAI's argument text arrives byte for byte;
    another object with a ``to_dict()`` method through that. Values keep their Python types: the JSON
    mode of ``model_dump`` would turn an infinite or NaN number in parsed arguments into ``null``
    without a word, where the argument encoder refuses it. Anything else is returned unchanged, for
    the caller to refuse by name. `where` names the node in an error.
    """
    if type(value) in _JSON_TYPES or is_mapping(value) or isinstance(value, type):
        return value
    dump = getattr(value, "model_dump", None)
    to_dict = getattr(value, "to_dict", None)
    try:
        if callable(dump):
            return dump(by_alias=True, warnings=False)
        if callable(to_dict):
            return to_dict()
    except Exception as error:  # noqa: BLE001 - any failure of the SDK's own serializer is the payload's problem
        raise ProviderError(f"{where}: cannot read {type(value).__name__} as JSON: {error}") from None
    return value


def tool_call_list(payload: object) -> list[Any]:
    """The ``tool_calls`` of an OpenAI-style chat payload (each call still to be read with `plain`).

    `payload` is a chat completion (its first choice is read: the only one unless ``n`` asked for
    alternatives), one choice or chat response (its ``message``), an assistant message (its
    ``tool_calls``), or the list of calls itself; an SDK object or its JSON. A payload without calls
    gives ``[]``.
    """
    payload = plain(payload, "payload")
    if not is_mapping(payload):
        if isinstance(payload, str | bytes | bytearray) or not is_iterable(payload):
            raise ProviderError(
                f"expected a chat completion, an assistant message or its tool_calls, not {type(payload).__name__}"
            )
        return list(payload)
    if "choices" in payload:
        choices = plain(payload["choices"], "choices")
        if not is_array(choices):
            raise ProviderError(f"a chat completion's choices must be a list, not {type(choices).__name__}")
        if not choices:
            return []
        payload = plain(choices[0], "choices[0]")
        if not is_mapping(payload):
            raise ProviderError(f"choices[0] must be an object, not {type(payload).__name__}")
    if "tool_calls" not in payload and "message" in payload:
        payload = plain(payload["message"], "message")
        if payload is None:
            return []
        if not is_mapping(payload):
            raise ProviderError(f"message must be an object, not {type(payload).__name__}")
    calls = plain(payload.get("tool_calls"), "tool_calls")
    if calls is None:
        return []
    if not is_array(calls):
        raise ProviderError(f"tool_calls must be a list, not {type(calls).__name__}")
    return calls


Tools: TypeAlias = Registry | Catalog | Iterable[Binding | Tool | Definition] | Binding | Tool | Definition
"""What an export accepts: a registry, a run's catalog, bindings, tools' definitions (or one of them)."""


def definitions_of(tools: Tools) -> list[Definition]:
    """The definitions to export, in a stable order (a registry's is sorted by name; a catalog's its own)."""
    if isinstance(tools, Registry):
        return tools.definitions()
    if isinstance(tools, Catalog):
        return tools.definitions()
    single = isinstance(tools, Binding | Definition | FunctionType) or callable(getattr(tools, "definition", None))
    items = cast(Iterable[object], [tools] if single else tools)
    found: list[Definition] = []
    for item in items:
        declare = getattr(item, "definition", None)
        if isinstance(item, Definition):
            found.append(item)
        elif callable(declare):
            definition = declare()
            if not isinstance(definition, Definition):
                raise ProviderError(f"{type(item).__name__}.definition() returned {type(definition).__name__}")
            found.append(definition)
        elif isinstance(item, FunctionType):
            raise ProviderError(
                f"cannot export {item.__name__}: it is a plain function; decorate it with @tool "
                f"(or pass tool({item.__name__}))"
            )
        else:
            raise ProviderError(
                f"cannot export {type(item).__name__}: expected a Registry, Binding, Tool or Definition"
            )
    names = [d.name for d in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ProviderError(f"tool names must be unique in one export: {', '.join(duplicates)}")
    return found


@final
@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call a model proposed: the provider's call id beside the untrusted `Request`."""

    id: str | None
    """The provider's correlation id (None where the provider has none, as with Ollama)."""
    request: Request
    """The tool name and JSON arguments, for `Contract.prepare`."""

    @property
    def name(self) -> str:
        """The tool the model asked for."""
        return self.request.name


@final
@dataclass(frozen=True, slots=True)
class ToolReport:
    """What one tool's export changed, and whether it could be strict."""

    name: str
    """The tool's name."""
    strict: bool | None
    """True or False where the provider has a strict switch, None where it has none."""
    changes: tuple[Change, ...] = ()
    """Every change made to the tool's schema, in order."""
    not_strict: tuple[str, ...] = ()
    """Why strict mode could not be used (the tool fell back to non-strict), when it was asked for."""
    null_defaults: tuple[str, ...] = ()
    """Optional fields a strict export made required and nullable: a ``null`` there, coming back
    through this provider's `parse_tool_calls` with this export, means "omitted" (the default)."""
    notes: tuple[str, ...] = ()
    """Anything else worth knowing, such as a description over the provider's limit."""

    @property
    def lossless(self) -> bool:
        """Whether the model sees exactly the contract's schema."""
        return not self.changes and not self.not_strict and not self.notes


@final
@dataclass(frozen=True, slots=True)
class PortabilityReport:
    """Per tool, what an export to one provider changed or could not do.

    Nothing is lost silently: a constraint the model no longer sees is still enforced by the tool's
    contract.
    """

    provider: str
    """The provider the report is about."""
    tools: tuple[ToolReport, ...]
    """One report per exported tool, in export order."""

    def for_tool(self, name: str) -> ToolReport:
        """The report of one tool."""
        for report in self.tools:
            if report.name == name:
                return report
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form of the report."""
        return {
            "provider": self.provider,
            "tools": [
                {
                    "name": r.name,
                    "strict": r.strict,
                    "changes": [
                        {"path": c.path, "action": c.action, "keyword": c.keyword, "reason": c.reason}
                        for c in r.changes
                    ],
                    "not_strict": list(r.not_strict),
                    "null_defaults": list(r.null_defaults),
                    "notes": list(r.notes),
                }
                for r in self.tools
            ],
        }

    def __str__(self) -> str:
        lines = [f"portability report for {self.provider}:"]
        for report in self.tools:
            mode = {True: "strict", False: "non-strict", None: "no strict mode"}[report.strict]
            lines.append(f"- {report.name} ({mode}){'' if report.lossless else ':'}")
            lines.extend(f"    not strict: {reason}" for reason in report.not_strict)
            lines.extend(f"    {change}" for change in report.changes)
            lines.extend(f"    null means default: {path}" for path in report.null_defaults)
            lines.extend(f"    note: {note}" for note in report.notes)
        return "\n".join(lines)


@final
@dataclass(frozen=True)
class Export:
    """An export: the provider's JSON-ready tool list and the report of what it took.

    `tools` returns a fresh copy on every access. Keep the export to parse the provider's calls: it
    knows which nulls stand for omitted fields (see `ToolReport.null_defaults`).
    """

    provider: str
    """The provider the tools were exported for (the adapter's `PROVIDER`)."""
    report: PortabilityReport
    """What the export changed, per tool."""
    _tools: bytes = field(repr=False)
    _schemas: Mapping[str, dict[str, Any]] = field(repr=False, default_factory=dict[str, dict[str, Any]])
    _outputs: Mapping[str, tuple[bool, bool]] = field(repr=False, default_factory=dict[str, tuple[bool, bool]])
    """Per tool, built once: whether its entry has an output schema, and whether it was wrapped."""
    _namespaces: Mapping[str, frozenset[str]] = field(repr=False, default_factory=dict[str, frozenset[str]])
    """Per namespace the export grouped tools in (OpenAI Responses), the names of its tools."""

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool definitions in the provider's wire format (a fresh copy)."""
        value: list[dict[str, Any]] = json.loads(self._tools)
        return value

    def original_schema(self, name: str) -> dict[str, Any] | None:
        """The contract's own input schema of a tool in this export (for repairs), or None."""
        schema = self._schemas.get(name)
        return None if schema is None else json.loads(json.dumps(schema))


def make_export(
    provider: str,
    tools: Sequence[dict[str, Any]],
    reports: Sequence[ToolReport],
    definitions: Sequence[Definition],
    outputs: Mapping[str, tuple[bool, bool]] | None = None,
) -> Export:
    """Freeze an export (internal helper for the provider modules); `outputs` is the output index, if any."""
    return Export(
        provider=provider,
        report=PortabilityReport(provider=provider, tools=tuple(reports)),
        _tools=json.dumps(list(tools), ensure_ascii=False).encode("utf-8"),
        _schemas={d.name: d.input_schema for d, r in zip(definitions, reports, strict=True) if r.null_defaults},
        _outputs=MappingProxyType(dict(outputs or {})),
    )


def deferred_of(tools: Tools) -> frozenset[str]:
    """The names of the deferred tools in `tools`, for a provider's native search.

    A registry's (`Registry.deferred_names`), or the bindings marked ``defer_loading=True`` among those
    given. A `Catalog` gives none: it hides its deferred tools itself, behind the local search tool.
    """
    if isinstance(tools, Registry):
        return frozenset(tools.deferred_names())
    if isinstance(tools, Binding):
        return frozenset([tools.name] if tools.defer_loading else [])
    if isinstance(tools, Catalog | Definition) or not is_iterable(tools):
        return frozenset()
    return frozenset(item.name for item in tools if isinstance(item, Binding) and item.defer_loading)


def with_native_search(export: Export, deferred: frozenset[str], search: dict[str, Any]) -> Export:
    """`export` with ``"defer_loading": true`` on each deferred tool's entry and the provider's `search` tool last."""
    tools = export.tools
    for entry in tools:
        for inner in entry["tools"] if entry.get("type") == "namespace" else [entry]:  # OpenAI's namespaces
            if inner.get("name") in deferred:
                inner["defer_loading"] = True
    tools.append(search)
    return replace(export, _tools=json.dumps(tools, ensure_ascii=False).encode("utf-8"))


def check_name(provider: str, name: str, pattern: str, limit: int) -> None:
    """Raise `ProviderError` naming the tool and the rule when `name` breaks the provider's rule."""
    if len(name) > limit or not re.fullmatch(pattern, name):
        raise ProviderError(
            f"tool {name!r} cannot be exported to {provider}: names must match {pattern} (at most {limit} characters)"
        )


def description_note(description: str, limit: int | None) -> tuple[str, ...]:
    """A note when a description exceeds the provider's limit (it is sent as is; the provider may refuse it)."""
    if limit is not None and len(description) > limit:
        return (f"description has {len(description)} characters; this provider accepts at most {limit}",)
    return ()


def tool_entry(definition: Definition) -> dict[str, Any]:
    """How every provider's tool entry starts: ``{"name": ...}``, with ``"description"`` unless it is empty."""
    entry: dict[str, Any] = {"name": definition.name}
    if definition.description:
        entry["description"] = definition.description
    return entry


def strict_report(name: str, transformed: Transformed | None, notes: tuple[str, ...]) -> ToolReport:
    """The report of a tool exported with a strict switch: not strict without a transform, else what it took."""
    if transformed is None:
        return ToolReport(name=name, strict=False, notes=notes)
    return ToolReport(
        name=name,
        strict=transformed.strict,
        changes=transformed.changes,
        not_strict=transformed.not_strict,
        null_defaults=transformed.null_defaults,
        notes=notes,
    )


@final
@dataclass(frozen=True, slots=True)
class FunctionDialect:
    """What differs between the OpenAI-style function-tool providers (Chat Completions, Responses, Mistral)."""

    provider: str
    """The adapter's `PROVIDER`."""
    name_pattern: str
    """The tool names the provider accepts (64 characters at most)."""
    description_limit: int | None
    """The longest description the provider accepts, None where none is known."""
    transform: Callable[[dict[str, Any]], Transformed]
    """The provider's strict transform of an input schema."""
    call_types: tuple[str | None, ...] = ("function",)
    """The ``type`` values a tool call may have (a call without one is a function call)."""
    unnamed_calls: bool = False
    """Whether a call with an empty function name is read (for the contract to refuse) rather than refused here."""


def function_spec(definition: Definition, dialect: FunctionDialect, strict: bool) -> tuple[dict[str, Any], ToolReport]:
    """One tool as ``{"name", "description"?, "parameters", "strict"}`` and its report, strict where asked and able.

    A schema the transform cannot make strict is sent as the contract has it, with ``strict: false``.
    """
    check_name(dialect.provider, definition.name, dialect.name_pattern, 64)
    function = tool_entry(definition)
    transformed = dialect.transform(definition.input_schema) if strict else None
    if transformed is None:
        function["parameters"] = definition.input_schema
        function["strict"] = False
    else:
        function["parameters"] = transformed.schema
        function["strict"] = transformed.strict
    notes = description_note(definition.description, dialect.description_limit)
    return function, strict_report(definition.name, transformed, notes)


def function_tools(tools: Tools, dialect: FunctionDialect, strict: bool) -> Export:
    """The tools as chat-style ``{"type": "function", "function": {...}}`` entries (see `function_spec`)."""
    definitions = definitions_of(tools)
    wire: list[dict[str, Any]] = []
    reports: list[ToolReport] = []
    for definition in definitions:
        function, report = function_spec(definition, dialect, strict)
        wire.append({"type": "function", "function": function})
        reports.append(report)
    return make_export(dialect.provider, wire, reports, definitions)


def function_calls(payload: object, export: Export | None, dialect: FunctionDialect) -> list[ToolCall]:
    """The function calls of a chat-style payload (see `tool_call_list`), their arguments kept as written.

    A string is kept byte for byte, a parsed object encoded (`arguments_text`); with `export`, a null
    its strict export introduced is read as "omitted" (`repair_nulls`).
    """
    check_export(export, dialect.provider)
    call_types, name_required = dialect.call_types, not dialect.unnamed_calls
    found: list[ToolCall] = []
    for index, raw in enumerate(tool_call_list(payload)):
        where = f"tool_calls[{index}]"
        call = plain(raw, where)
        if not is_mapping(call) or call.get("type", "function") not in call_types:
            raise ProviderError(f"{where}: not a function tool call")
        function = plain(call.get("function"), where)
        name = function.get("name") if is_mapping(function) else None
        if not isinstance(name, str) or (name_required and not name):
            raise ProviderError(f"{where}: missing function name")
        arguments = arguments_text(function.get("arguments"), where)
        if export is not None:
            arguments = repair_nulls(arguments, export, name)
        call_id = call.get("id")
        found.append(
            ToolCall(id=call_id if isinstance(call_id, str) else None, request=Request(name=name, arguments=arguments))
        )
    return found


async def run_call(
    registry: Registry | Catalog, call: ToolCall, admission: Admission | None = None
) -> Result | BaseException:
    """Resolve, admit and run one tool call; the outcome, ready for a provider's `result_message`.

    An unknown name gives an `UnknownToolError`; a rejected call gives its `InvalidInvocationError`; a
    tool's error is returned as is. Given a run's `Catalog` in place of its registry, a call of the
    local search tool runs the search and reveals what it finds, and a call of a deferred tool the run
    has not revealed gives a `DeferredToolError` (its text tells the model to search first). Nothing is
    raised for any of them, so one bad call never ends a model's turn, or a server: that includes what
    a tool (or its validator) raises beyond `Exception`,
    a `KeyboardInterrupt`, a `SystemExit` (``sys.exit``) or an `asyncio.CancelledError` nobody asked
    for (see `call_outcome`). Only the cancellation of the task that awaits the call propagates.

    Example:
        ```python
        import asyncio
        from scopetool import Registry, Request, tool
        from scopetool.providers import ToolCall, run_call

        @tool
        def add(a: int, b: int) -> int:
            \"\"\"Add two integers.\"\"\"
            return a + b

        call = ToolCall(id="call_1", request=Request(name="add", arguments='{"a": 2, "b": 3}'))
        print(asyncio.run(run_call(Registry(add), call)).output.text())
        #> 5
        ```
    """
    try:
        binding = registry.resolve(call.name)
    except AttributeError:  # not a Registry and a ToolCall
        raise _misused(registry, call) from None
    if binding is not None and isinstance(registry, Catalog) and not registry.is_visible(call.name):
        return DeferredToolError(call.name)
    if binding is None:
        observer = _observe.current
        if observer is not None:
            observer.unknown(call.name, call.id)
        return UnknownToolError(call.name, callable_names(registry))
    return await call_outcome(binding, call.request, admission or _NO_ADMISSION, call.id)


def callable_names(registry: Registry | Catalog) -> list[str]:
    """The names a model may call now, which an unknown name's suggestion is drawn from (`UnknownToolError`).

    A registry's tools less its deferred ones (found only by a search); a catalog's shown tools.
    """
    if isinstance(registry, Catalog):
        return [definition.name for definition in registry.definitions()]
    return [name for name in registry.names() if not registry.is_deferred(name)]


def _misused(registry: object, call: object) -> TypeError:
    """The error of a `run_call` given something other than a Registry and a ToolCall."""
    given = type(registry).__name__
    hint = ": Registry(*tools) makes one of tools" if given in ("list", "tuple") else ""
    return TypeError(f"run_call takes a Registry and a ToolCall, not {given} and {type(call).__name__}{hint}")


_NO_ADMISSION: Final = Admission()

GENERIC_FAILURE: Final = 'error: tool "{name}" failed'


def outcome_output(name: str, outcome: Result | BaseException) -> tuple[Output, bool]:
    """What the model is shown for an outcome, and whether it is an error.

    A `Result` shows its output. An error shows, in this order: a `Failure`'s public output, an input
    rejection's message, a deferred tool's "search first" (`NOT_LOADED`), an unknown tool's text with the
    nearest names it may call (`unknown_tool_message`, of `run_call`'s `UnknownToolError` or
    `Registry.run`'s `ToolNotFoundError`), a timed-out call's fixed text
    (``error: tool "<name>" timed out; its outcome is unknown``), or a generic
    ``error: tool "<name>" failed``: nothing of any other error reaches the model. A result that
    requests input is not a tool result: the driver must answer it and resume the call first.
    """
    if isinstance(outcome, Result):
        if outcome.input_request is not None:
            raise ProviderError("a result that requests input is not a tool result; answer it and resume the call")
        return outcome.output, False
    if not isinstance(outcome, BaseException):
        hint = ": await run_call(...) for its outcome" if type(outcome).__name__ == "coroutine" else ""
        raise ProviderError(f"an outcome is a Result or an exception, not {type(outcome).__name__}{hint}")
    failure = classify_failure(outcome)
    if failure is not None:
        return failure.output, True
    rejection = classify_input_rejection(outcome)
    if rejection is not None:
        return Output.from_text(rejection.message), True
    if isinstance(outcome, DeferredToolError):
        return Output.from_text(outcome.message), True
    if isinstance(outcome, UnknownToolError | ToolNotFoundError):  # run_call's, or Registry.run's
        return Output.from_text(unknown_tool_message(outcome.name, outcome.near)), True
    if find_one(outcome, ToolTimeoutError) is not None:
        return Output.from_text(TIMED_OUT_UNKNOWN.format(name=name)), True
    return Output.from_text(GENERIC_FAILURE.format(name=name)), True


def output_text(output: Output) -> str:
    """The output as one string: its text, or its details' JSON; media are named, not dropped silently."""
    text = output.text()
    if text is not None:
        return text
    return "".join(
        getattr(block, "text", None) or f"[{block.mime_type} media]"  # type: ignore[union-attr]
        for block in output.content
    )


def arguments_text(arguments: object, where: str) -> str:
    """A provider's arguments as JSON text: kept as given when a string, encoded when already parsed."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    if isinstance(arguments, dict):
        try:
            return _encode_arguments(arguments)
        except (TypeError, ValueError) as error:
            raise ProviderError(f"{where}: tool call arguments are not JSON: {error}") from None
    raise ProviderError(f"{where}: tool call arguments must be a JSON string or object, not {type(arguments).__name__}")


def _encode_arguments(arguments: Any) -> str:
    """Parsed arguments as JSON text, compact: orjson's text, with the refusals of `json`.

    orjson writes JSON's own values (str keys; str, int, float, bool, None, list, tuple and dict values)
    several times faster than `json` (`benchmarks/orjson_use.py` measures both). What orjson does not write (a
    key that is not a str, an int past 64 bits, a subclass of a JSON type, a lone surrogate, a datetime or
    a dataclass) `json` writes or refuses as it always did. orjson writes NaN and the infinities as null,
    so text that holds null is checked by `json` too, which refuses them. orjson also writes a UUID as its
    string and an enum member as its value, which `json` refuses; a provider's parsed arguments hold
    neither.
    """
    try:
        text = _orjson_dumps(arguments, None, _ORJSON_OPTIONS).decode()  # positional: a keyword costs more
    except TypeError:  # orjson.JSONEncodeError: `json` decides
        return _json_encode(arguments)
    if "null" in text:  # a str search: several times faster than one in bytes
        _json_encode(arguments)  # raises ValueError for NaN or an infinity, which orjson wrote as null
    return text


_orjson_dumps: Final = orjson.dumps
_ORJSON_OPTIONS: Final = (
    orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
)
"""What orjson leaves to `json` rather than writing its own way."""
_json_encode: Final = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
"""`json`'s encoder, made once (``json.dumps`` with options makes one a call), compact as orjson is."""


def check_export(export: object, provider: str) -> None:
    """Refuse, in ``parse_tool_calls``, an export that is not one of `provider`'s (None passes).

    Its null repairs are only right for the calls of the provider it was made for.
    """
    if export is None or (isinstance(export, Export) and export.provider == provider):
        return
    found = f"one for {export.provider}" if isinstance(export, Export) else f"a {type(export).__name__}"
    raise ProviderError(
        f"parse_tool_calls needs an export made by scopetool.providers.{provider.replace('-', '_')}, not {found}"
    )


def check_answers(ids: Sequence[str], what: str) -> None:
    """Refuse a batch of results that is empty or answers one call twice (`what` names the id field)."""
    if not ids:
        raise ProviderError("a results message needs at least one tool result")
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ProviderError(f"each {what} is answered once; repeated: {', '.join(repeated)}")


def object_arguments(arguments: object, where: str, what: str = "arguments") -> str:
    """Arguments a provider delivers already parsed (a JSON object) as JSON text for `Request`.

    Anthropic's ``input``, Gemini's ``args``, Ollama's, Bedrock's and MCP's ``arguments`` are parsed
    by the SDK or transport before scopetool sees them, so the model's exact text is gone: a repeated
    member name was collapsed (the last one won), a number keeps its value but not its spelling
    (``1.50`` comes back as ``1.5``, ``1e2`` as ``100.0``), and a number beyond a double became
    infinite, which is refused here as not JSON. The text is encoded again, compact (members in their
    order, non-ASCII as is; see `_encode_arguments`); everything else (types, unknown members, the
    schema) the contract still checks.
    """
    if type(arguments) is not dict:  # the common case first: `is_mapping` asks an ABC
        if not is_mapping(arguments):
            raise ProviderError(f"{where}: {what} must be a JSON object, not {type(arguments).__name__}")
        arguments = dict(arguments)
    try:
        return _encode_arguments(arguments)
    except (TypeError, ValueError) as error:
        raise ProviderError(f"{where}: {what} is not JSON: {error}") from None


def repair_nulls(arguments: str, export: Export, name: str) -> str:
    """Drop members whose ``null`` only a strict export's nullable repair could have produced.

    A member is dropped when it is null and, in the contract's own schema (as `export` keeps it for
    tool `name`), optional and not nullable: the strict export made it required and nullable, so null
    means "omitted" and the default applies. Anything that does not parse is returned unchanged: the
    contract reports it.
    """
    if "null" not in arguments:
        return arguments
    schema = export.original_schema(name)
    if schema is None:
        return arguments
    try:
        data = arguments.encode("utf-8")
    except UnicodeEncodeError:
        return arguments
    # Only a document the contract would admit is touched: re-encoding must never hide a duplicate
    # member, a lone surrogate or an overflowing number from it. Numbers keep their spelling.
    if syntax_problem(data) is not None:
        return arguments
    value = loads_exact(data)
    if not _repair(value, schema, schema, 0):
        return arguments
    return canonical_json(value).decode("utf-8")


def _repair(value: Any, schema: Any, root: JsonObject, depth: int) -> bool:
    if depth > 64:
        return False
    if is_array(value):
        item = _object_schemas(schema, root, 0)
        changed = False
        for node in item:
            items = node.get("items")
            if is_object(items):
                for element in value:
                    changed |= _repair(element, items, root, depth + 1)
        return changed
    if not is_object(value):
        return False
    candidates = [node for node in _object_schemas(schema, root, 0) if "properties" in node]
    if not candidates:
        return False
    changed = False
    for key in list(value):
        member = value[key]
        props = [node["properties"].get(key) for node in candidates if key in node.get("properties", {})]
        if not props:
            continue
        if (
            member is None
            and all(key not in node.get("required", []) for node in candidates if key in node.get("properties", {}))
            and not any(allows_null(p, root, 0) for p in props)
        ):
            del value[key]
            changed = True
            continue
        for prop in props:
            changed |= _repair(member, prop, root, depth + 1)
    return changed


def _object_schemas(schema: Any, root: JsonObject, depth: int) -> list[JsonObject]:
    if not is_object(schema) or depth > 32:
        return []
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _object_schemas(resolve_ref(ref, root), root, depth + 1)
    found = [schema]
    for keyword in ("anyOf", "oneOf", "allOf"):
        for choice in schema.get(keyword, []):
            found.extend(_object_schemas(choice, root, depth + 1))
    return found
