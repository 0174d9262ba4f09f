"""Ollama ``/api/chat``: ``tools=[{"type": "function", "function": {...}}]``, calls with object arguments.

Ollama silently drops most of a JSON Schema before the model sees it (see `_ollama_schema`): the
export inlines ``$ref``s, writes nullable values as type lists, keeps only the keys Ollama keeps and
moves every other keyword (bounds, patterns, formats, defaults, nested object fields...) into the
property's description. The report lists every change; the contract still enforces what the model
no longer sees. A recursive schema cannot be inlined and is refused with `ProviderError`.

Tool calls carry ``arguments`` as an object and no id (`ToolCall.id` is None); a result is a
``{"role": "tool", "tool_name": ..., "content": ...}`` message. Ollama has no error flag: an error is
told in the text (a `Failure`'s output, a rejection's message, or a generic text), and media blocks
are named in the text.

Example:
    ```python
    from typing import Annotated

    from pydantic import Field

    from scopetool import Registry, tool
    from scopetool.providers import ollama

    @tool
    def search(query: str, limit: Annotated[int, Field(ge=1, le=50)] = 10) -> list[str]:
        \"\"\"Search the catalogue.\"\"\"
        return [query][:limit]

    export = ollama.export_tools(Registry(search))
    print(export.tools[0]["function"]["parameters"]["properties"]["limit"]["description"])
    #> (default: 10; maximum: 50; minimum: 1)
    ```
"""

from __future__ import annotations

from typing import Any, Final

from .._contract import Request
from .._output import Result
from ._common import (
    Export,
    ProviderError,
    ToolCall,
    ToolReport,
    Tools,
    check_export,
    check_name,
    definitions_of,
    is_mapping,
    make_export,
    object_arguments,
    outcome_output,
    output_text,
    plain,
    run_call,
    tool_call_list,
    tool_entry,
)
from ._ollama_schema import ollama_schema

__all__ = ["NAME_PATTERN", "PROVIDER", "export_tools", "parse_tool_calls", "result_message", "run_call"]

PROVIDER: Final = "ollama"
"""The name this adapter gives its provider in exports and reports."""
NAME_PATTERN: Final = r"[A-Za-z0-9_-]{1,64}"
"""Ollama enforces no name rule; this is scopetool's own, which every definition already meets."""


def export_tools(tools: Tools) -> Export:
    """The tools as Ollama function tools, their schemas fitted to what Ollama keeps.

    Each report lists what was inlined, converted, dropped or moved into a description; ``strict``
    is None (Ollama has no strict mode).

    Raises:
        ProviderError: A tool's schema is recursive (Ollama cannot resolve references), or two tools
            share a name.
    """
    definitions = definitions_of(tools)
    wire: list[dict[str, Any]] = []
    reports: list[ToolReport] = []
    for definition in definitions:
        check_name(PROVIDER, definition.name, NAME_PATTERN, 64)
        transformed = ollama_schema(definition.input_schema, definition.name)
        function = tool_entry(definition)
        function["parameters"] = transformed.schema
        wire.append({"type": "function", "function": function})
        reports.append(ToolReport(name=definition.name, strict=None, changes=transformed.changes))
    return make_export(PROVIDER, wire, reports, definitions)


def parse_tool_calls(payload: object, export: Export | None = None) -> list[ToolCall]:
    """The tool calls of a chat response, an assistant message or its ``tool_calls`` list, as `ToolCall`s.

    Each shape is read as the SDK object the ``ollama`` client returns (``ChatResponse``, its
    ``message``, the message's ``tool_calls``) or as its JSON (``/api/chat``'s
    ``{"message": {...}}``). Each call is ``{"function": {"name": ..., "arguments": {...}}}``; Ollama
    gives no call id, so every `ToolCall.id` is None: answer the calls in order. A message without tool
    calls gives ``[]``. The arguments arrive already parsed, so they are encoded as JSON text (see
    `object_arguments` for what the parse already lost).

    `export` is accepted for symmetry with the other providers; an Ollama export introduces no
    nulls, so no argument needs repair.

    Raises:
        ProviderError: The payload is not in Ollama's tool-call format.
    """
    check_export(export, PROVIDER)
    found: list[ToolCall] = []
    for index, raw in enumerate(tool_call_list(payload)):
        where = f"tool_calls[{index}]"
        call = plain(raw, where)
        function = plain(call.get("function"), where) if is_mapping(call) else None
        if not is_mapping(function):
            raise ProviderError(f"{where}: not a function tool call")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise ProviderError(f"{where}: missing function name")
        arguments = function.get("arguments")
        if not is_mapping(arguments):
            raise ProviderError(
                f"{where}: Ollama sends arguments as a JSON object, not {type(arguments).__name__} "
                "(for the OpenAI-compatible endpoint use scopetool.providers.openai_chat)"
            )
        text = object_arguments(arguments, where)
        found.append(ToolCall(id=None, request=Request(name=name, arguments=text)))
    return found


def result_message(call: ToolCall, outcome: Result | BaseException) -> dict[str, Any]:
    """The ``{"role": "tool"}`` message answering `call`.

    Ollama has no error flag, so an error is told in the text itself: a `Failure`'s output, a
    rejection's message, or a generic text.
    """
    output, _ = outcome_output(call.name, outcome)
    return {"role": "tool", "tool_name": call.name, "content": output_text(output)}
