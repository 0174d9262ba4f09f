"""The whole provider loop, twice, with recorded payloads (no network): export the tools, read the
model's tool calls, admit and run them, and answer in the provider's own result format.

Run it with ``python examples/provider_loop.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from scopetool import Registry, tool
from scopetool.providers import anthropic, openai_chat, run_call


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def search(query: str, limit: int = 3) -> list[str]:
    """Search the catalogue.

    Args:
        query: Words to look for.
        limit: How many results to return.
    """
    return [f"{query} #{i}" for i in range(1, limit + 1)]


REGISTRY = Registry(add, search)

# What each API sent back in one turn, recorded: a good call, a call with a wrong type (the model can
# fix it), a call to a tool that does not exist, and (OpenAI strict) a null meaning "use the default".
OPENAI_TURN = {
    "role": "assistant",
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}},
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "search", "arguments": '{"query": "lamp", "limit": null}'},
        },
        {"id": "call_3", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": "three"}'}},
        {"id": "call_4", "type": "function", "function": {"name": "delete_all", "arguments": "{}"}},
    ],
}
ANTHROPIC_TURN = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Let me add those."},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 40, "b": 2}},
        {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {"query": "desk", "colour": "red"}},
    ],
}


async def main() -> None:
    """Run one recorded turn through each of two providers."""
    export = openai_chat.export_tools(REGISTRY, strict=True)
    print("openai tools:", json.dumps([t["function"]["name"] for t in export.tools]))
    print(export.report)
    answers: list[dict[str, Any]] = [
        openai_chat.result_message(call, await run_call(REGISTRY, call))
        for call in openai_chat.parse_tool_calls(OPENAI_TURN, export)
    ]
    print("openai answers:", json.dumps(answers, indent=1))

    export = anthropic.export_tools(REGISTRY)
    print("anthropic tools:", json.dumps([t["name"] for t in export.tools]))
    calls = anthropic.parse_tool_calls(ANTHROPIC_TURN, export)
    message = anthropic.results_message([(call, await run_call(REGISTRY, call)) for call in calls])
    print("anthropic answer:", json.dumps(message, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
