"""The whole provider loop, twice, on the objects the OpenAI and Anthropic clients return: export the
tools, read the model's tool calls from the SDK's response, admit and run them, and answer in the
provider's own result format.

The responses are recorded and built with the SDKs' own types, exactly what
``client.chat.completions.create(...)`` and ``client.messages.create(...)`` return, so the example
runs without network or API keys. It needs the two SDKs (``pip install openai anthropic``); scopetool
itself imports neither. Run it with ``python examples/provider_loop.py``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from scopetool import Registry, tool
from scopetool.providers import anthropic, openai_chat

try:
    from anthropic.types import Message
    from openai.types.chat import ChatCompletion
except ImportError as missing:
    raise SystemExit(
        f"examples/provider_loop.py reads the SDKs' own response objects, and "
        f"{str(missing.name).split('.')[0]!r} is not installed: pip install openai anthropic"
    ) from None


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
OPENAI_RESPONSE = {
    "id": "chatcmpl-Bq1",
    "object": "chat.completion",
    "created": 1764580000,
    "model": "gpt-4.1-2025-04-14",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}},
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"query": "lamp", "limit": null}'},
                    },
                    {
                        "id": "call_3",
                        "type": "function",
                        "function": {"name": "add", "arguments": '{"a": 2, "b": "three"}'},
                    },
                    {"id": "call_4", "type": "function", "function": {"name": "delete_all", "arguments": "{}"}},
                ],
            },
        }
    ],
}
ANTHROPIC_RESPONSE = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [
        {"type": "text", "text": "Let me add those."},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 40, "b": 2}},
        {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {"query": "desk", "colour": "red"}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 310, "output_tokens": 74},
}


async def main() -> None:
    """Run one recorded turn through each of two providers."""
    export = openai_chat.export_tools(REGISTRY, strict=True)
    print("openai tools:", json.dumps([t["function"]["name"] for t in export.tools]))
    print(export.report)
    # completion = client.chat.completions.create(model=..., messages=..., tools=export.tools)
    completion = ChatCompletion.model_validate(OPENAI_RESPONSE)
    answers: list[dict[str, Any]] = [
        openai_chat.result_message(call, await openai_chat.run_call(REGISTRY, call))
        for call in openai_chat.parse_tool_calls(completion, export)
    ]
    print("openai answers:", json.dumps(answers, indent=1))

    export = anthropic.export_tools(REGISTRY)
    print("anthropic tools:", json.dumps([t["name"] for t in export.tools]))
    # message = client.messages.create(model=..., max_tokens=..., messages=..., tools=export.tools)
    message = Message.model_validate(ANTHROPIC_RESPONSE)
    calls = anthropic.parse_tool_calls(message, export)
    answer = anthropic.results_message([(call, await anthropic.run_call(REGISTRY, call)) for call in calls])
    print("anthropic answer:", json.dumps(answer, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
