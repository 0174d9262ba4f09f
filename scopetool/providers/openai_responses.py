"""OpenAI Responses API: flat ``tools=[{"type": "function", "name": ..., "parameters": ...}]``.

Tool calls come back as ``function_call`` output items; each result goes back as a
``function_call_output`` input item with the same ``call_id``.

Example:
    ```python
    from scopetool import Registry, tool
    from scopetool.providers import openai_responses

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    export = openai_responses.export_tools(Registry(add))
    print(export.tools[0]["strict"], export.tools[0]["output_schema"])
    #> True {'type': 'integer'}
    calls = openai_responses.parse_tool_calls(
        {"output": [{"type": "function_call", "call_id": "call_1", "name": "add", "arguments": '{"a": 2, "b": 3}'}]}
    )
    print(calls[0].id, calls[0].request.arguments)
    #> call_1 {"a": 2, "b": 3}
    ```
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Final, final

from .._contract import Request
from .._json import is_array
from .._output import MediaBlock, Output, Result, TextBlock
from ._common import (
    Export,
    FunctionDialect,
    ProviderError,
    ToolCall,
    ToolReport,
    Tools,
    arguments_text,
    check_export,
    check_name,
    deferred_of,
    definitions_of,
    function_spec,
    is_iterable,
    is_mapping,
    make_export,
    outcome_output,
    output_text,
    plain,
    repair_nulls,
    run_call,
    with_native_search,
)
from ._transform import openai_strict

__all__ = [
    "NAME_PATTERN",
    "PROVIDER",
    "Namespace",
    "export_tools",
    "parse_tool_calls",
    "result_message",
    "revealed_tools",
    "run_call",
]

PROVIDER: Final = "openai-responses"
"""The name this adapter gives its provider in exports and reports."""
NAME_PATTERN: Final = r"[a-zA-Z0-9_-]{1,64}"
"""The tool names this provider accepts (checked at export)."""
DESCRIPTION_LIMIT: Final = 1024
"""Chat Completions' limit; the Responses API is assumed to share it."""
_FILE_TYPES: Final = frozenset({"application/pdf"})
"""Non-image media a ``function_call_output`` carries as an ``input_file``; other media are named in text."""
_DIALECT: Final = FunctionDialect(PROVIDER, NAME_PATTERN, DESCRIPTION_LIMIT, openai_strict)


@final
@dataclass(frozen=True, slots=True)
class Namespace:
    """A group of tools the Responses API shows under one name and description (say, one MCP server's)."""

    name: str
    """The namespace's name, as calls of its tools carry it (``crm``)."""
    description: str
    """What the namespace's tools are for, shown to the model."""
    tools: tuple[str, ...]
    """The names of its tools (exported inside it, in this order)."""


def export_tools(
    tools: Tools, *, strict: bool = True, output_schema: bool = True, namespaces: Iterable[Namespace] = ()
) -> Export:
    """The tools as Responses API function tools.

    Deferred tools (a registry's `Registry.deferred_names`, or bindings marked ``defer_loading=True``)
    are sent with ``"defer_loading": true`` and the hosted ``{"type": "tool_search"}`` tool last: the
    model loads them with its search (`revealed_tools` reads which it loaded). The tools each
    `Namespace` names are sent inside a ``namespace`` entry (after the other tools, in the order given);
    their calls come back with the namespace and are read as the tool's own name. A `Catalog` is sent
    as it shows itself: its shown and revealed tools and the local ``search_tools``.

    ``strict`` is always sent explicitly: when it is omitted the API tries strict mode on its own and
    may make optional fields required. With ``strict=True`` each schema that fits OpenAI's strict
    subset is sent with ``strict: true`` (optional fields made required and nullable: see
    `ToolReport.null_defaults`); one that cannot be made strict falls back to ``strict: false`` with its
    original schema, and the report says why.

    Args:
        tools: A registry, bindings, tools or definitions.
        strict: Ask for OpenAI's strict mode where the schema allows it.
        output_schema: Send a definition's output schema as the tool's ``output_schema`` (it describes
            the JSON of a result's details, which is the string output when the result has no content).
            Turn it off for deployments that do not know the field.
        namespaces: Groups of the exported tools, each sent as one ``namespace`` entry.

    Raises:
        ProviderError: a name breaks the rule, or a namespace names a tool not exported or already
            in another namespace.
    """
    definitions = definitions_of(tools)
    wire: list[dict[str, Any]] = []
    reports: list[ToolReport] = []
    for definition in definitions:
        function, report = function_spec(definition, _DIALECT, strict)
        entry: dict[str, Any] = {"type": "function", **function}
        declared = definition.output_schema
        if output_schema and declared is not None:
            # The SDK type takes an object; a boolean schema has an object twin of the same meaning.
            entry["output_schema"] = declared if isinstance(declared, dict) else ({} if declared else {"not": {}})
        wire.append(entry)
        reports.append(report)
    export = make_export(PROVIDER, wire, reports, definitions)
    grouped = tuple(namespaces)
    if grouped:
        export = _grouped(export, grouped)
    deferred = deferred_of(tools)
    return with_native_search(export, deferred, {"type": "tool_search"}) if deferred else export


def _grouped(export: Export, namespaces: tuple[Namespace, ...]) -> Export:
    """`export` with the tools each namespace names moved into a ``namespace`` entry of their own."""
    entries = {entry["name"]: entry for entry in export.tools}
    members: dict[str, frozenset[str]] = {}
    placed: set[str] = set()
    for namespace in namespaces:
        if not isinstance(namespace, Namespace):
            raise ProviderError(f"namespaces holds Namespace values, not {type(namespace).__name__}")
        check_name(PROVIDER, namespace.name, NAME_PATTERN, 64)
        for name in namespace.tools:
            if name not in entries or name in placed:
                why = "is not exported" if name not in entries else "is in two namespaces"
                raise ProviderError(f"namespace {namespace.name!r}: tool {name!r} {why}")
            placed.add(name)
        members[namespace.name] = frozenset(namespace.tools)
    wire: list[dict[str, Any]] = [entry for name, entry in entries.items() if name not in placed]
    wire.extend(
        {
            "type": "namespace",
            "name": namespace.name,
            "description": namespace.description,
            "tools": [entries[name] for name in namespace.tools],
        }
        for namespace in namespaces
    )
    return replace(
        export,
        _tools=json.dumps(wire, ensure_ascii=False).encode("utf-8"),
        _namespaces=MappingProxyType(members),
    )


def revealed_tools(payload: object) -> list[str]:
    """The tools the hosted tool search loaded in a response (its ``tool_search_output`` items' tools).

    `payload` is a response or a list of items, as the SDK object or its JSON. Give them to a run's
    `Catalog` (``catalog.reveal(...)``) when its calls are refused until revealed.
    """
    names: list[str] = []
    for index, raw in enumerate(_items(payload)):
        item = plain(raw, f"output[{index}]")
        if not is_mapping(item) or item.get("type") != "tool_search_output":
            continue
        loaded = plain(item.get("tools"), f"output[{index}].tools")
        for raw_entry in loaded if is_array(loaded) else []:
            entry = plain(raw_entry, "tool")
            if not is_mapping(entry):
                continue
            inner = plain(entry.get("tools"), "tools") if entry.get("type") == "namespace" else [entry]
            for raw_tool in inner if is_array(inner) else []:
                tool = plain(raw_tool, "tool")
                name = tool.get("name") if is_mapping(tool) else None
                if isinstance(name, str):
                    names.append(name)
    return names


def _items(payload: object) -> list[Any]:
    """The output items of a response, or the list of items given."""
    payload = plain(payload, "payload")
    if is_mapping(payload):
        items = plain(payload.get("output"), "output")
        if not is_array(items):
            raise ProviderError("a Responses API response needs an output list of items")
        return items
    if isinstance(payload, str | bytes) or not is_iterable(payload):
        raise ProviderError(f"expected a response or a list of items, not {type(payload).__name__}")
    return list(payload)


def parse_tool_calls(payload: object, export: Export | None = None) -> list[ToolCall]:
    """The ``function_call`` items of a response (or of a list of items), as `ToolCall`s.

    Each shape is read as the SDK object the OpenAI client returns (``Response``, its ``output`` list
    of items) or as its JSON. Each call's id is its ``call_id``, which the result item must echo, and
    its ``arguments`` are kept exactly as the model wrote them. Items of other types (messages,
    reasoning, built-in tool calls, tool search items) are skipped. A call inside a ``namespace`` keeps
    the namespace in its name (``namespace.name``), so it never reaches a top-level tool of the same
    name, unless `export` put that tool in that namespace (`Namespace`), or the namespace is the tool's
    own name (as the API sends it for a deferred tool outside any namespace). With the
    `Export` the tools were sent with, a ``null`` the strict export introduced for an optional field is
    read as "omitted", so the field's default applies.

    Raises:
        ProviderError: the payload is not a response or a list of items, or a function call is malformed.
    """
    check_export(export, PROVIDER)
    items = _items(payload)
    grouped: Mapping[str, frozenset[str]] = export._namespaces if export is not None else {}  # pyright: ignore[reportPrivateUsage]
    found: list[ToolCall] = []
    for index, raw in enumerate(items):
        where = f"output[{index}]"
        item = plain(raw, where)
        if not is_mapping(item) or not isinstance(item.get("type"), str):
            raise ProviderError(f"{where}: not a Responses API item (an object with a type)")
        if item["type"] != "function_call":
            continue
        name = item.get("name")
        call_id = item.get("call_id")
        if not isinstance(name, str) or not name:
            raise ProviderError(f"{where}: function call without a name")
        if not isinstance(call_id, str) or not call_id:
            raise ProviderError(f"{where}: function call without a call_id")
        namespace = item.get("namespace")
        if namespace is not None:
            if not isinstance(namespace, str):
                raise ProviderError(f"{where}: function call namespace must be a string")
            if namespace and namespace != name and name not in grouped.get(namespace, ()):
                name = f"{namespace}.{name}"  # a flat deferred tool's namespace is its own name
        arguments = arguments_text(item.get("arguments"), where)
        if export is not None:
            arguments = repair_nulls(arguments, export, name)
        found.append(ToolCall(id=call_id, request=Request(name=name, arguments=arguments)))
    return found


def result_message(call: ToolCall, outcome: Result | BaseException) -> dict[str, Any]:
    """The ``function_call_output`` input item answering `call`.

    Text-only output goes as a string (details as their JSON when there is no content). Output with
    media goes as a list of ``input_text``, ``input_image`` (images) and ``input_file`` (PDF) items;
    other media are named in text. The Responses API has no error flag, so an error is told in the text
    itself: a `Failure`'s output, a rejection's message, or a generic text.

    Raises:
        ProviderError: the call has no id, or the outcome is not a tool result.
    """
    if call.id is None:
        raise ProviderError("a Responses API function_call_output needs the call's call_id")
    output, _ = outcome_output(call.name, outcome)
    return {"type": "function_call_output", "call_id": call.id, "output": _output_value(output)}


def _output_value(output: Output) -> str | list[dict[str, Any]]:
    if all(isinstance(block, TextBlock) for block in output.content):
        return output_text(output)
    parts: list[dict[str, Any]] = []
    for block in output.content:
        if isinstance(block, TextBlock):
            parts.append({"type": "input_text", "text": block.text})
        else:
            parts.append(_media_part(block))
    return parts


def _media_part(block: MediaBlock) -> dict[str, Any]:
    mime = block.mime_type.split(";", 1)[0].strip().lower()
    if mime.startswith("image/"):
        if block.reference is not None:
            return {"type": "input_image", "file_id": block.reference}
        return {"type": "input_image", "image_url": block.uri if block.uri is not None else _data_url(block)}
    if mime in _FILE_TYPES:
        if block.reference is not None:
            return {"type": "input_file", "file_id": block.reference}
        if block.uri is not None:
            return {"type": "input_file", "file_url": block.uri}
        return {"type": "input_file", "filename": "attachment.pdf", "file_data": _data_url(block)}
    return {"type": "input_text", "text": f"[{block.mime_type} media]"}


def _data_url(block: MediaBlock) -> str:
    data = block.data or b""
    return f"data:{block.mime_type};base64,{base64.b64encode(data).decode('ascii')}"
