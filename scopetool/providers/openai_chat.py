"""OpenAI Chat Completions: ``tools=[{"type": "function", "function": {...}}]``.

Example:
    ```python
    from scopetool import Registry, tool
    from scopetool.providers import openai_chat

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    export = openai_chat.export_tools(Registry(add), strict=True)
    print(export.tools[0]["function"]["strict"])
    #> True
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
    arguments_text,
    check_export,
    check_name,
    definitions_of,
    description_note,
    is_mapping,
    make_export,
    outcome_output,
    output_text,
    plain,
    repair_nulls,
    run_call,
    tool_call_list,
)
from ._transform import openai_strict

__all__ = ["NAME_PATTERN", "PROVIDER", "export_tools", "parse_tool_calls", "result_message", "run_call"]

PROVIDER: Final = "openai-chat"
"""The name this adapter gives its provider in exports and reports."""
NAME_PATTERN: Final = r"[a-zA-Z0-9_-]{1,64}"
"""The tool names this provider accepts (checked at export)."""
DESCRIPTION_LIMIT: Final = 1024


def export_tools(tools: Tools, *, strict: bool = True) -> Export:
    """The tools as Chat Completions function tools.

    With ``strict=True`` each schema that fits OpenAI's strict subset is sent with ``strict: true``
    (optional fields made required and nullable: see `ToolReport.null_defaults`); one that cannot be
    made strict falls back to ``strict: false`` with its original schema, and the report says why.
    """
    definitions = definitions_of(tools)
    wire: list[dict[str, Any]] = []
    reports: list[ToolReport] = []
    for definition in definitions:
        check_name(PROVIDER, definition.name, NAME_PATTERN, 64)
        schema = definition.input_schema
        function: dict[str, Any] = {"name": definition.name}
        if definition.description:
            function["description"] = definition.description
        if strict:
            transformed = openai_strict(schema)
            function["parameters"] = transformed.schema
            function["strict"] = transformed.strict
            reports.append(
                ToolReport(
                    name=definition.name,
                    strict=transformed.strict,
                    changes=transformed.changes,
                    not_strict=transformed.not_strict,
                    null_defaults=transformed.null_defaults,
                    notes=description_note(definition.description, DESCRIPTION_LIMIT),
                )
            )
        else:
            function["parameters"] = schema
            function["strict"] = False
            reports.append(
                ToolReport(
                    name=definition.name,
                    strict=False,
                    notes=description_note(definition.description, DESCRIPTION_LIMIT),
                )
            )
        wire.append({"type": "function", "function": function})
    return make_export(PROVIDER, wire, reports, definitions)


def parse_tool_calls(payload: object, export: Export | None = None) -> list[ToolCall]:
    """The tool calls of a chat completion, an assistant message or its ``tool_calls`` list, as `ToolCall`s.

    Each shape is read as the SDK object the OpenAI client returns (``ChatCompletion``, its
    ``choices[0].message``, the message's ``tool_calls``) or as its JSON; a completion is read from its
    first choice. ``arguments`` is kept exactly as the model wrote it. With the `Export` the tools were
    sent with, a ``null`` the strict export introduced for an optional field is read as "omitted", so
    the field's default applies.
    """
    check_export(export, PROVIDER)
    found: list[ToolCall] = []
    for index, raw in enumerate(tool_call_list(payload)):
        where = f"tool_calls[{index}]"
        call = plain(raw, where)
        if not is_mapping(call) or call.get("type", "function") != "function":
            raise ProviderError(f"{where}: not a function tool call")
        function = plain(call.get("function"), where)
        if not is_mapping(function) or not isinstance(function.get("name"), str):
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

    Chat Completions has no error flag, so an error is told in the text itself: a `Failure`'s output,
    a rejection's message, or a generic text.
    """
    if call.id is None:
        raise ProviderError("a Chat Completions tool message needs the call's id")
    output, _ = outcome_output(call.name, outcome)
    return {"role": "tool", "tool_call_id": call.id, "content": output_text(output)}
