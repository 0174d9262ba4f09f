"""Mistral chat completions: OpenAI-like ``tools=[{"type": "function", "function": {...}}]``.

Example:
    ```python
    from scopetool import Registry, tool
    from scopetool.providers import mistral

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    export = mistral.export_tools(Registry(add))
    print(export.tools[0]["function"]["strict"])
    #> True
    calls = mistral.parse_tool_calls(
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "D681PevKs", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
        ]}
    )
    print(calls[0].id, calls[0].name)
    #> D681PevKs add
    ```
"""

from __future__ import annotations

import re
from typing import Any, Final

from .._contract import Request
from .._output import Result
from ._common import (
    Export,
    ProviderError,
    ToolCall,
    ToolReport,
    Tools,
    arguments_text,
    check_export,
    check_name,
    definitions_of,
    is_mapping,
    make_export,
    outcome_output,
    output_text,
    plain,
    repair_nulls,
    run_call,
    tool_call_list,
)
from ._mistral_schema import mistral_strict

__all__ = ["NAME_PATTERN", "PROVIDER", "export_tools", "parse_tool_calls", "result_message", "run_call"]

PROVIDER: Final = "mistral"
"""The name this adapter gives its provider in exports and reports."""
NAME_PATTERN: Final = r"[a-zA-Z0-9_-]{1,64}"
"""The tool names this provider accepts (checked at export)."""


def export_tools(tools: Tools, *, strict: bool = True) -> Export:
    """The tools as Mistral function tools.

    With ``strict=True`` a schema whose every object is closed (``additionalProperties: false``) is
    sent with ``strict: true``; ``required`` is kept as written, so optional fields stay optional. A
    schema with an open object (a ``dict`` field, or an object without ``additionalProperties``, which
    JSON Schema leaves open) cannot be closed without changing its meaning, as Mistral's own helper
    would: it falls back to ``strict: false`` with its original schema, and the report says why.
    Mistral has no known description limit.
    """
    definitions = definitions_of(tools)
    wire: list[dict[str, Any]] = []
    reports: list[ToolReport] = []
    for definition in definitions:
        check_name(PROVIDER, definition.name, NAME_PATTERN, 64)
        function: dict[str, Any] = {"name": definition.name}
        if definition.description:
            function["description"] = definition.description
        if strict:
            transformed = mistral_strict(definition.input_schema)
            function["parameters"] = transformed.schema
            function["strict"] = transformed.strict
            reports.append(
                ToolReport(
                    name=definition.name,
                    strict=transformed.strict,
                    changes=transformed.changes,
                    not_strict=transformed.not_strict,
                )
            )
        else:
            function["parameters"] = definition.input_schema
            function["strict"] = False
            reports.append(ToolReport(name=definition.name, strict=False))
        wire.append({"type": "function", "function": function})
    return make_export(PROVIDER, wire, reports, definitions)


def parse_tool_calls(payload: object, export: Export | None = None) -> list[ToolCall]:
    """The tool calls of a chat response, an assistant message or its ``tool_calls`` list, as `ToolCall`s.

    Each shape is read as the SDK object ``mistralai`` returns (``ChatCompletionResponse``, its
    ``choices[0].message``, the message's ``tool_calls``) or as its JSON; a response is read from its
    first choice. Arguments may be a JSON string (kept exactly as the model wrote it) or an already
    parsed object (Mistral's SDK accepts both), which is encoded as JSON text.

    Raises:
        ProviderError: a tool call is malformed, or `export` was made for another provider.
    """
    check_export(export, PROVIDER)
    found: list[ToolCall] = []
    for index, raw in enumerate(tool_call_list(payload)):
        where = f"tool_calls[{index}]"
        call = plain(raw, where)
        if not is_mapping(call) or call.get("type", "function") not in ("function", None):
            raise ProviderError(f"{where}: not a function tool call")
        function = plain(call.get("function"), where)
        if not is_mapping(function) or not isinstance(function.get("name"), str) or not function["name"]:
            raise ProviderError(f"{where}: missing function name")
        name = function["name"]
        arguments = arguments_text(function.get("arguments"), where)
        if export is not None:
            arguments = repair_nulls(arguments, export, name)
        call_id = call.get("id")
        found.append(
            ToolCall(id=call_id if isinstance(call_id, str) else None, request=Request(name=name, arguments=arguments))
        )
    return found


def result_message(call: ToolCall, outcome: Result | BaseException) -> dict[str, Any]:
    """The ``{"role": "tool"}`` message answering `call`.

    It carries the call's id and, when it is a valid tool name, the tool's name. Mistral has no error
    flag, so an error is told in the text itself: a `Failure`'s output, a rejection's message, or a
    generic text. Media are named in the text.

    Raises:
        ProviderError: the call has no id (Mistral requires ``tool_call_id``), or the outcome is not a
            tool result.
    """
    if call.id is None:
        raise ProviderError("a Mistral tool message needs the call's id")
    output, _ = outcome_output(call.name, outcome)
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call.id}
    if re.fullmatch(NAME_PATTERN, call.name):
        message["name"] = call.name
    message["content"] = output_text(output)
    return message
