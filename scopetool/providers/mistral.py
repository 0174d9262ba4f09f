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
from ._mistral_schema import mistral_strict

__all__ = ["NAME_PATTERN", "PROVIDER", "export_tools", "parse_tool_calls", "result_message", "run_call"]

PROVIDER: Final = "mistral"
"""The name this adapter gives its provider in exports and reports."""
NAME_PATTERN: Final = r"[a-zA-Z0-9_-]{1,64}"
"""The tool names this provider accepts (checked at export)."""

_DIALECT: Final = FunctionDialect(PROVIDER, NAME_PATTERN, None, mistral_strict, call_types=("function", None))


def export_tools(tools: Tools, *, strict: bool = True) -> Export:
    """The tools as Mistral function tools.

    With ``strict=True`` a schema whose every object is closed (``additionalProperties: false``) is
    sent with ``strict: true``; ``required`` is kept as written, so optional fields stay optional. A
    schema with an open object (a ``dict`` field, or an object without ``additionalProperties``, which
    JSON Schema leaves open) cannot be closed without changing its meaning, as Mistral's own helper
    would: it falls back to ``strict: false`` with its original schema, and the report says why.
    Mistral has no known description limit.
    """
    return function_tools(tools, _DIALECT, strict)


def parse_tool_calls(payload: object, export: Export | None = None) -> list[ToolCall]:
    """The tool calls of a chat response, an assistant message or its ``tool_calls`` list, as `ToolCall`s.

    Each shape is read as the SDK object ``mistralai`` returns (``ChatCompletionResponse``, its
    ``choices[0].message``, the message's ``tool_calls``) or as its JSON; a response is read from its
    first choice. Arguments may be a JSON string (kept exactly as the model wrote it) or an already
    parsed object (Mistral's SDK accepts both), which is encoded as JSON text.

    Raises:
        ProviderError: a tool call is malformed, or `export` was made for another provider.
    """
    return function_calls(payload, export, _DIALECT)


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
