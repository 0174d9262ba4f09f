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

from .._output import Result
from ._common import (
    Export,
    FunctionDialect,
    ProviderError,
    ToolCall,
    Tools,
    function_calls,
    function_tools,
    outcome_output,
    output_text,
    run_call,
)
from ._transform import openai_strict

__all__ = ["NAME_PATTERN", "PROVIDER", "export_tools", "parse_tool_calls", "result_message", "run_call"]

PROVIDER: Final = "openai-chat"
"""The name this adapter gives its provider in exports and reports."""
NAME_PATTERN: Final = r"[a-zA-Z0-9_-]{1,64}"
"""The tool names this provider accepts (checked at export)."""
DESCRIPTION_LIMIT: Final = 1024

_DIALECT: Final = FunctionDialect(PROVIDER, NAME_PATTERN, DESCRIPTION_LIMIT, openai_strict, unnamed_calls=True)


def export_tools(tools: Tools, *, strict: bool = True) -> Export:
    """The tools as Chat Completions function tools.

    With ``strict=True`` each schema that fits OpenAI's strict subset is sent with ``strict: true``
    (optional fields made required and nullable: see `ToolReport.null_defaults`); one that cannot be
    made strict falls back to ``strict: false`` with its original schema, and the report says why.
    """
    return function_tools(tools, _DIALECT, strict)


def parse_tool_calls(payload: object, export: Export | None = None) -> list[ToolCall]:
    """The tool calls of a chat completion, an assistant message or its ``tool_calls`` list, as `ToolCall`s.

    Each shape is read as the SDK object the OpenAI client returns (``ChatCompletion``, its
    ``choices[0].message``, the message's ``tool_calls``) or as its JSON; a completion is read from its
    first choice. ``arguments`` is kept exactly as the model wrote it. With the `Export` the tools were
    sent with, a ``null`` the strict export introduced for an optional field is read as "omitted", so
    the field's default applies.
    """
    return function_calls(payload, export, _DIALECT)


def result_message(call: ToolCall, outcome: Result | BaseException) -> dict[str, Any]:
    """The ``{"role": "tool"}`` message answering `call`.

    Chat Completions has no error flag, so an error is told in the text itself: a `Failure`'s output,
    a rejection's message, or a generic text.
    """
    if call.id is None:
        raise ProviderError("a Chat Completions tool message needs the call's id")
    output, _ = outcome_output(call.name, outcome)
    return {"role": "tool", "tool_call_id": call.id, "content": output_text(output)}
