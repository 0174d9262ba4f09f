"""What a model's turn that calls one tool looks like on each provider's wire: a payload its `parse_tool_calls` reads.

`PATHS` maps each provider module to a function of (call id, tool name, arguments) giving that payload, for
the offline loops that play a scripted model against every provider (tool search, code mode).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

from scopetool.providers import anthropic, bedrock, gemini, mcp, mistral, ollama, openai_chat, openai_responses

Payload = Callable[[str, str, dict[str, Any]], Any]

PATHS: dict[str, tuple[ModuleType, Payload]] = {
    "openai_chat": (
        openai_chat,
        lambda i, n, a: {
            "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}]
        },
    ),
    "openai_responses": (
        openai_responses,
        lambda i, n, a: [{"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)}],
    ),
    "anthropic": (anthropic, lambda i, n, a: [{"type": "tool_use", "id": i, "name": n, "input": a}]),
    "bedrock": (
        bedrock,
        lambda i, n, a: {"role": "assistant", "content": [{"toolUse": {"toolUseId": i, "name": n, "input": a}}]},
    ),
    "gemini": (gemini, lambda i, n, a: [{"functionCall": {"id": i, "name": n, "args": a}}]),
    "mistral": (
        mistral,
        lambda i, n, a: {
            "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}]
        },
    ),
    "ollama": (ollama, lambda i, n, a: {"message": {"tool_calls": [{"function": {"name": n, "arguments": a}}]}}),
    "mcp": (
        mcp,
        lambda i, n, a: {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": n, "arguments": a}},
    ),
}
