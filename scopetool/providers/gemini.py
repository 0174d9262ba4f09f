"""Google Gemini (google-genai): ``tools=[{"functionDeclarations": [...]}]``.

Two schema dialects: ``mode="json_schema"`` (the default) sends ``parametersJsonSchema`` and
``responseJsonSchema``, a JSON Schema with only what Gemini refuses removed; ``mode="openapi"`` sends
``parameters`` and ``response`` in the OpenAPI-3.0 subset of ``types.Schema`` (what the Live API
reads), which cannot express recursion, typed dicts or non-string enums. Gemini has no per-tool strict
flag: `tool_config` asks for ``VALIDATED`` (API-side schema enforcement) only when no tool's schema was
narrowed on the way.

Example:
    ```python
    from scopetool import Registry, tool
    from scopetool.providers import gemini

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    export = gemini.export_tools(Registry(add))
    print(gemini.tool(export)["functionDeclarations"][0]["parametersJsonSchema"]["required"])
    #> ['a', 'b']
    print(gemini.tool_config(export))
    #> {'functionCallingConfig': {'mode': 'VALIDATED'}}
    ```
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any, Final, Literal

from .._contract import Request
from .._json import is_array, is_object
from .._output import MediaBlock, Output, Result, TextBlock
from ._common import (
    Export,
    ProviderError,
    ToolCall,
    ToolReport,
    Tools,
    check_export,
    check_name,
    definitions_of,
    is_iterable,
    is_mapping,
    make_export,
    object_arguments,
    outcome_output,
    plain,
    repair_nulls,
    run_call,
    tool_entry,
)
from ._gemini_schema import GeminiTransformed, json_schema, openapi
from ._transform import Change

__all__ = [
    "CallingMode",
    "Mode",
    "NAME_LIMIT",
    "NAME_PATTERN",
    "PROVIDER",
    "VALIDATED_NOTE",
    "export_tools",
    "parse_tool_calls",
    "result_message",
    "results_message",
    "run_call",
    "tool",
    "tool_config",
]

PROVIDER: Final = "gemini"
"""The name this adapter gives its provider in exports and reports."""
NAME_PATTERN: Final = r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}"
"""Function names: a letter or underscore first, then letters, digits, ``_ . : -``.

At most 64 characters, the limit of older API versions; google-genai 3.6 documents 128.
"""
NAME_LIMIT: Final = 64
"""The longest tool name this provider accepts."""
VALIDATED_NOTE: Final = "not for VALIDATED mode, which would hold the model to a narrowed schema: "
"""The start of the note on a tool whose exported schema is narrower than its contract's."""

Mode = Literal["json_schema", "openapi"]
"""The schema dialect: ``parametersJsonSchema`` (JSON Schema) or ``parameters`` (the OpenAPI subset)."""
CallingMode = Literal["VALIDATED", "AUTO", "ANY"]
"""The ``functionCallingConfig.mode`` `tool_config` sets."""


def export_tools(tools: Tools, *, mode: Mode = "json_schema", output_schema: bool = True) -> Export:
    """The tools as Gemini function declarations (`tool` wraps them in a ``Tool``).

    Args:
        tools: A registry, bindings or definitions.
        mode: ``"json_schema"`` sends ``parametersJsonSchema`` (and ``responseJsonSchema``);
            ``"openapi"`` sends ``parameters`` (and ``response``) in the OpenAPI subset, for the Live
            API. A tool without arguments gets no ``parameters`` in that mode.
        output_schema: Declare each tool's output schema as its response schema, where it has one.

    Raises:
        ProviderError: a name breaks Gemini's rule, or (in ``"openapi"`` mode) an input schema cannot
            be expressed: recursion, a property name outside ``[A-Za-z_][A-Za-z0-9_]{0,63}``.
    """
    if mode not in ("json_schema", "openapi"):
        raise ProviderError(f"mode must be 'json_schema' or 'openapi', not {mode!r}")
    definitions = definitions_of(tools)
    wire: list[dict[str, Any]] = []
    reports: list[ToolReport] = []
    for definition in definitions:
        name = definition.name
        check_name(PROVIDER, name, NAME_PATTERN, NAME_LIMIT)
        declaration = tool_entry(definition)
        changes: list[Change] = []
        notes: list[str] = []
        if mode == "json_schema":
            params = json_schema(definition.input_schema)
            declaration["parametersJsonSchema"] = params.schema
        else:
            try:
                params = openapi(definition.input_schema)
            except ProviderError as error:
                raise ProviderError(f"tool {name!r} cannot be exported to gemini (parameters): {error}") from None
            if params.schema.get("properties") or set(params.schema) - {"type", "properties", "required"}:
                declaration["parameters"] = params.schema
        changes.extend(params.changes)
        notes.extend(params.notes)
        if params.not_strict:
            notes.append(VALIDATED_NOTE + "; ".join(params.not_strict))
        schema = definition.output_schema
        if output_schema and isinstance(schema, dict):
            response = _response_schema(schema, mode, notes)
            if response is not None:
                declaration["responseJsonSchema" if mode == "json_schema" else "response"] = response.schema
                changes.extend(
                    Change(path=f"output:{c.path}", action=c.action, keyword=c.keyword, reason=c.reason)
                    for c in response.changes
                )
                notes.extend(f"output: {note}" for note in response.notes)
        wire.append(declaration)
        reports.append(ToolReport(name=name, strict=None, changes=tuple(changes), notes=tuple(notes)))
    return make_export(PROVIDER, wire, reports, definitions)


def _response_schema(schema: dict[str, Any], mode: Mode, notes: list[str]) -> GeminiTransformed | None:
    if mode == "json_schema":
        return json_schema(schema)
    try:
        return openapi(schema, output=True)
    except ProviderError as error:
        notes.append(f"no response schema declared: the output schema cannot be expressed ({error})")
        return None


def tool(export: Export) -> dict[str, Any]:
    """The ``Tool`` that carries an export's declarations: ``{"functionDeclarations": [...]}``."""
    _check_export(export)
    return {"functionDeclarations": export.tools}


def tool_config(
    export: Export, mode: CallingMode = "VALIDATED", *, allowed: Iterable[str] | None = None
) -> dict[str, Any]:
    """The request's ``toolConfig``: ``{"functionCallingConfig": {"mode": ...}}``.

    ``VALIDATED`` (the API enforces the declared schemas) is used only when every tool exported without
    narrowing its schema; otherwise the mode is ``AUTO``, and the tools' notes (`VALIDATED_NOTE`) say
    why. ``ANY`` forces a call, to one of `allowed` when given.
    """
    _check_export(export)
    if mode not in ("VALIDATED", "AUTO", "ANY"):
        raise ProviderError(f"mode must be 'VALIDATED', 'AUTO' or 'ANY', not {mode!r}")
    if mode == "VALIDATED" and any(
        note.startswith(VALIDATED_NOTE) for report in export.report.tools for note in report.notes
    ):
        mode = "AUTO"
    config: dict[str, Any] = {"mode": mode}
    if allowed is not None:
        if mode != "ANY":
            raise ProviderError("allowed function names go only with mode 'ANY'")
        names = list(allowed)
        known = {report.name for report in export.report.tools}
        unknown = [name for name in names if name not in known]
        if unknown or not names:
            raise ProviderError(f"allowed names must be tools of this export: {unknown or 'none given'}")
        config["allowedFunctionNames"] = names
    return {"functionCallingConfig": config}


def _check_export(export: Export) -> None:
    if not isinstance(export, Export) or export.provider != PROVIDER:
        raise ProviderError("expected an export made by gemini.export_tools")


def parse_tool_calls(payload: object, export: Export | None = None) -> list[ToolCall]:
    """The function calls of a response, a content, a list of parts or one part, as `ToolCall`s.

    Each shape is read as the SDK object google-genai returns (``GenerateContentResponse``, its
    ``candidates[0].content``, the content's ``parts``, one ``Part``) or as its JSON; a response is
    read from its first candidate. Parts are read in the wire form (``functionCall``) or the SDK's
    snake_case (``function_call``); parts without a call (text, thoughts) are skipped. A call without
    an ``id`` gets None. The ``args`` arrive already parsed, so they are encoded as JSON text (see
    `object_arguments` for what the parse already lost).
    """
    check_export(export, PROVIDER)
    parts = _parts_of(plain(payload, "payload"))
    found: list[ToolCall] = []
    for index, raw in enumerate(parts):
        where = f"parts[{index}]"
        part = plain(raw, where)
        if not is_mapping(part):
            raise ProviderError(f"{where}: a part must be an object, not {type(part).__name__}")
        call = plain(part.get("functionCall", part.get("function_call")), where)
        if call is None:
            continue
        if not is_mapping(call):
            raise ProviderError(f"{where}: functionCall must be an object")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise ProviderError(f"{where}: functionCall has no name")
        args = call.get("args")
        arguments = "{}" if args is None else object_arguments(args, where, "functionCall args")
        if export is not None:
            arguments = repair_nulls(arguments, export, name)
        call_id = call.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise ProviderError(f"{where}: functionCall id must be a string")
        found.append(ToolCall(id=call_id or None, request=Request(name=name, arguments=arguments)))
    return found


def _parts_of(payload: object) -> list[Any]:
    if is_mapping(payload):
        if "candidates" in payload:
            candidates = plain(payload["candidates"], "candidates")
            if not is_array(candidates):
                raise ProviderError("candidates must be a list")
            if not candidates:
                return []
            first = plain(candidates[0], "candidates[0]")
            if not is_mapping(first):
                raise ProviderError("candidates[0] must be an object")
            payload = plain(first.get("content"), "candidates[0].content")
            if payload is None:
                return []
            if not is_mapping(payload):
                raise ProviderError("candidates[0].content must be an object")
        if "functionCall" in payload or "function_call" in payload:
            return [payload]
        if "parts" not in payload and "role" not in payload:
            raise ProviderError("not a Gemini response, content or part")
        parts = plain(payload.get("parts"), "parts")
        if parts is None:
            return []
        if not is_array(parts):
            raise ProviderError("parts must be a list")
        return parts
    if isinstance(payload, str | bytes) or not is_iterable(payload):
        raise ProviderError(f"expected a Gemini response, content or list of parts, not {type(payload).__name__}")
    return list(payload)


def result_message(call: ToolCall, outcome: Result | BaseException) -> dict[str, Any]:
    """The ``functionResponse`` part answering `call`.

    ``response`` is ``{"output": ...}`` for a result and ``{"error": ...}`` for an error (a `Failure`'s
    output, a rejection's message or a generic text). Text becomes a string, details with no content
    their JSON value (sent as a JSON string when it holds a ``"$ref"`` key, which Gemini would read as a
    reference), and media go in ``parts`` (inline data base64-encoded, a URI or reference as
    ``fileData``; Gemini 3 models accept media parts).
    """
    output, is_error = outcome_output(call.name, outcome)
    value, parts = _response_value(output)
    response: dict[str, Any] = {"id": call.id} if call.id is not None else {}
    response["name"] = call.name
    response["response"] = {"error" if is_error else "output": value}
    if parts:
        response["parts"] = parts
    return {"functionResponse": response}


def results_message(pairs: Iterable[tuple[ToolCall, Result | BaseException]]) -> dict[str, Any]:
    """The ``{"role": "user", "parts": [...]}`` content answering every call of a model turn, in order."""
    parts = [result_message(call, outcome) for call, outcome in pairs]
    if not parts:
        raise ProviderError("a results message needs at least one result")
    return {"role": "user", "parts": parts}


def _response_value(output: Output) -> tuple[Any, list[dict[str, Any]]]:
    if not output.content:
        if output.details is None:
            return "", []
        text = output.details.decode("utf-8")
        value = json.loads(text)
        return (text if _has_ref(value) else value), []
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    for block in output.content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        else:
            parts.append(_media_part(block))
    return "".join(texts), parts


def _media_part(block: MediaBlock) -> dict[str, Any]:
    if block.data is not None:
        return {"inlineData": {"mimeType": block.mime_type, "data": base64.b64encode(block.data).decode("ascii")}}
    uri = block.uri if block.uri is not None else block.reference
    return {"fileData": {"mimeType": block.mime_type, "fileUri": uri}}


def _has_ref(value: Any) -> bool:
    if is_object(value):
        return "$ref" in value or any(_has_ref(v) for v in value.values())
    if is_array(value):
        return any(_has_ref(v) for v in value)
    return False
