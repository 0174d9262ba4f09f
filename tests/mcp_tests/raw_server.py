"""A stdio MCP server written by hand, answering what no SDK server would send: ``python raw_server.py``.

It speaks just enough JSON-RPC for a client to initialize (protocol 2025-11-25) and list three tools:
``hologram``, whose result holds a content block of a type MCP does not have, ``not_a_number``, whose
``structuredContent`` holds a NaN, and ``two_questions``,
which asks two form elicitations in the middle of its call, one after the other, and answers with
both answers.
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": "hologram", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "two_questions", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "not_a_number", "inputSchema": {"type": "object", "properties": {}}},
]
FORM = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def answer(message: dict[str, object]) -> dict[str, object] | None:
    """The response to one request (None for a notification)."""
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None
    if method == "initialize":
        result: object = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call" and message["params"]["name"] == "two_questions":  # type: ignore[index]
        answers = [ask(f"question {number}?") for number in (1, 2)]
        result = {"content": [{"type": "text", "text": json.dumps(answers)}]}
    elif method == "tools/call" and message["params"]["name"] == "not_a_number":  # type: ignore[index]
        result = {"content": [], "structuredContent": {"x": float("nan")}}  # json.dumps writes NaN
    elif method == "tools/call":
        result = {"content": [{"type": "hologram", "data": "?"}]}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def ask(question: str) -> object:
    """Send an ``elicitation/create`` request and wait for its response; the response's result."""
    ask.count += 1  # type: ignore[attr-defined]
    ident = f"ask-{ask.count}"  # type: ignore[attr-defined]
    request = {"message": question, "requestedSchema": FORM}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": "elicitation/create", "params": request}))
    sys.stdout.write("\n")
    sys.stdout.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == ident and "method" not in message:
            return message.get("result", message.get("error"))
    return None


ask.count = 0  # type: ignore[attr-defined]


def main() -> None:
    """Answer each line of standard input."""
    for line in sys.stdin:
        response = answer(json.loads(line))
        if response is not None:
            sys.stdout.write(json.dumps(response) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
