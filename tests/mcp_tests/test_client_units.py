"""The client's pure parts: ``mcpServers`` entries as specs, and listed MCP tools as definitions."""

from __future__ import annotations

from typing import Any

import pytest

from scopetool import Effect, InvalidToolError
from scopetool.mcp.client import HttpServer, StdioServer, remote_definition, server_spec


def test_server_spec_reads_the_mcp_servers_shape() -> None:
    """A stdio entry and an HTTP entry, as MCP clients configure them."""
    assert server_spec({"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}, "cwd": "/tmp"}) == StdioServer(
        command="uvx", args=("mcp-server-git",), env={"A": "1"}, cwd="/tmp"
    )
    assert server_spec({"type": "stdio", "command": "x"}) == StdioServer(command="x")
    assert server_spec({"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer t"}}) == HttpServer(
        url="https://example.invalid/mcp", headers={"Authorization": "Bearer t"}
    )
    assert server_spec({"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"}) == HttpServer(
        url="http://127.0.0.1:1/mcp"
    )


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ([], "must be a JSON object"),
        ({"type": "sse", "url": "http://x"}, "'sse' is not supported"),
        ({"command": "x", "url": "http://x"}, "not both"),
        ({"url": "ftp://x"}, '"url" must be an http'),
        ({"url": "http://x", "allow": ["a"]}, "unknown key 'allow'"),
        ({"command": "x", "disabled": True}, "unknown key 'disabled'"),
        ({}, 'needs "command"'),
        ({"command": "x", "args": "a b"}, '"args" must be a list of strings'),
        ({"command": "x", "cwd": 1}, '"cwd" must be a string'),
        ({"command": "x", "env": {"A": 1}}, '"env" must be an object of strings'),
        ({"url": "http://x", "headers": []}, '"headers" must be an object of strings'),
    ],
)
def test_server_spec_names_the_bad_key(entry: Any, problem: str) -> None:
    """Each malformed entry is a ValueError naming the key or value at fault."""
    with pytest.raises(ValueError, match=problem):
        server_spec(entry)


ECHO: dict[str, Any] = {
    "name": "echo",
    "description": "Echo",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
    "annotations": {"readOnlyHint": False, "idempotentHint": True, "destructiveHint": True},
}


def test_the_root_is_closed_only_where_it_can_be() -> None:
    """``additionalProperties: false`` is added to a plain root, never where the root says more."""
    assert remote_definition(ECHO, trusted=False).input_schema["additionalProperties"] is False
    open_root = {**ECHO, "inputSchema": {**ECHO["inputSchema"], "additionalProperties": True}}
    assert remote_definition(open_root, trusted=False).input_schema["additionalProperties"] is True
    combined = {**ECHO, "inputSchema": {**ECHO["inputSchema"], "allOf": [{"required": ["message"]}]}}
    assert "additionalProperties" not in remote_definition(combined, trusted=False).input_schema
    bare = {"name": "ping", "inputSchema": {"type": "object"}}
    assert remote_definition(bare, trusted=False).input_schema == {"type": "object"}


def test_effects_need_trust() -> None:
    """idempotentHint is IDEMPOTENT when trusted; destructiveHint and absent annotations promise nothing."""
    assert remote_definition(ECHO, trusted=True).effect is Effect.IDEMPOTENT
    assert remote_definition(ECHO, trusted=False).effect is None
    assert remote_definition({**ECHO, "annotations": {"destructiveHint": False}}, trusted=True).effect is None
    assert remote_definition({"name": "ping", "inputSchema": {"type": "object"}}, trusted=True).effect is None


@pytest.mark.parametrize(
    ("listed", "problem"),
    [
        ({"name": "a" * 65, "inputSchema": {"type": "object"}}, "not a scopetool tool name"),
        ({"name": "echo", "inputSchema": []}, "inputSchema is not a JSON object"),
        ({"name": "echo", "inputSchema": {"type": "array"}}, '"type" is "object"'),
        ({"name": "echo", "inputSchema": {"type": "object", "$ref": "https://example.invalid/s.json"}}, "inputSchema"),
        (
            {"name": "echo", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object", "format": "nope"}},
            'outputSchema: keyword "format"',
        ),
    ],
)
def test_what_cannot_be_enforced_is_refused(listed: dict[str, Any], problem: str) -> None:
    """A name, a schema or a format the contract cannot carry whole: InvalidToolError saying which."""
    with pytest.raises(InvalidToolError, match=problem):
        remote_definition(listed, trusted=False)


def test_a_result_that_is_not_mcp_is_invalid_result() -> None:
    """A hand-written server's result the SDK cannot parse: a Failure with the fixed text, the cause private."""
    import sys
    from pathlib import Path

    from anyio.from_thread import start_blocking_portal
    from client_support import served

    from scopetool import Failure
    from scopetool.mcp.client import INVALID_RESULT

    raw = StdioServer(command=sys.executable, args=(str(Path(__file__).with_name("raw_server.py")),))
    with start_blocking_portal() as portal, served(portal, raw, name="raw") as server:
        with pytest.raises(Failure) as caught:
            server.call("hologram")
        assert caught.value.output.text() == INVALID_RESULT.format(name="hologram")
        assert "hologram" in str(caught.value.cause)
        with pytest.raises(Failure) as nan:
            server.call("not_a_number")
        assert nan.value.output.text() == INVALID_RESULT.format(name="not_a_number")


def test_import_without_the_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the client without the mcp package says how to install it."""
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.delitem(sys.modules, "scopetool.mcp.client")
    with pytest.raises(ImportError, match=r"pip install 'scopetool\[mcp\]'"):
        importlib.import_module("scopetool.mcp.client")


def test_empty_text_blocks_are_dropped() -> None:
    """An empty text block, or an embedded resource with empty text, shows nothing (scopetool has no empty block)."""
    import mcp_types as types

    from scopetool.mcp.client import result_output

    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text=""),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(uri="memo://a", text="")),
            types.TextContent(type="text", text="kept"),
        ]
    )
    assert result_output(result).text() == "kept"


def test_two_in_call_elicitations_of_one_call() -> None:
    """A legacy server asking twice in one call: two input requests in turn, both answers sent back."""
    import json
    import sys
    from pathlib import Path

    from anyio.from_thread import start_blocking_portal
    from client_support import served

    from scopetool import Admission, Request

    raw = StdioServer(command=sys.executable, args=(str(Path(__file__).with_name("raw_server.py")),))
    with start_blocking_portal() as portal, served(portal, raw, name="raw") as server:
        binding = server.binding("two_questions")
        result = server.run(binding, binding.contract.prepare(Request("two_questions", "{}")))
        for answer in ("yes", "no"):
            assert result.input_request is not None
            continuation = result.input_request.continuation({"action": "accept", "content": {"answer": answer}})
            admitted = binding.contract.prepare(Request("two_questions", "{}"), Admission(continuation=continuation))
            result = server.run(binding, admitted)
        assert result.input_request is None
        assert json.loads(result.output.text() or "") == [
            {"action": "accept", "content": {"answer": "yes"}},
            {"action": "accept", "content": {"answer": "no"}},
        ]
