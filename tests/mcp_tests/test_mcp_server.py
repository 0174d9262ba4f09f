"""The MCP server in process: the real SDK client against `create_server`, over its in-memory transports.

`mode="legacy"` runs the 2025-11-25 handshake over JSON-RPC memory streams (elicitation is a
server-to-client request); the default mode runs the 2026-07-28 protocol (elicitation is an
``input_required`` result and a retry). The same server over real stdio is in test_stdio.py.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import Client, MCPError, types
from mcp.client.session import ClientRequestContext
from mcp.server.request_state import RequestStateBoundary
from mcp_fixture_tools import PROFILE_SCHEMA, SECRET, registry
from mcp_types import _v2025_11_25 as wire_2025
from mcp_types import _v2026_07_28 as wire_2026
from pydantic import TypeAdapter

from scopetool import Effect, Registry, tool
from scopetool.mcp.server import create_server, requested_schema

Answer = types.ElicitResult | types.ErrorData


class Person:
    """Answers elicitations in order, and remembers what it was asked."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[types.ElicitRequestFormParams] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> Answer:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params)
        return self.answers.pop(0)


def accept(**content: Any) -> types.ElicitResult:
    """An accepted form with `content`."""
    return types.ElicitResult(action="accept", content=content)


@asynccontextmanager
async def connect(
    *, mode: str = "legacy", person: Person | None = None, server: Any = None, notes: list[Any] | None = None
) -> AsyncGenerator[Client]:
    """A real SDK client connected in process to the fixture registry's server."""

    async def record(message: Any) -> None:
        if notes is not None:
            notes.append(message)

    async with Client(
        server or create_server(registry, name="fixture-tools"),
        mode=mode,
        raise_exceptions=True,
        elicitation_callback=person,
        message_handler=record,
    ) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    """The result's one text block."""
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


# --- the elicitation schema mapping -------------------------------------------------------------

EXPRESSIBLE: list[tuple[dict[str, Any], dict[str, Any], bool]] = [
    (
        {"type": "boolean", "title": "Approve", "description": "Send it?", "$schema": "x"},
        {"type": "object", "properties": {"answer": {"type": "boolean", "title": "Approve", "description": "Send it?"}},
         "required": ["answer"]},
        True,
    ),
    (
        {"type": "integer", "minimum": 1, "maximum": 9, "default": 3},
        {"type": "object", "properties": {"answer": {"type": "integer", "minimum": 1, "maximum": 9, "default": 3}},
         "required": ["answer"]},
        True,
    ),
    (
        {"type": "string", "format": "date", "minLength": 10, "maxLength": 10},
        {"type": "object", "properties": {"answer": {"type": "string", "format": "date", "minLength": 10,
         "maxLength": 10}}, "required": ["answer"]},
        True,
    ),
    (
        PROFILE_SCHEMA,
        {"type": "object", "properties": PROFILE_SCHEMA["properties"], "required": ["email", "plan"]},
        False,
    ),
    (
        {"type": "object", "properties": {
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1, "default": ["a"]},
            "more": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}},
            "ratio": {"type": "number", "default": 0.5},
        }},
        {"type": "object", "properties": {
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1, "default": ["a"]},
            "more": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}},
            "ratio": {"type": "number", "default": 0.5},
        }},
        False,
    ),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "form", "wrapped"), EXPRESSIBLE)
def test_expressible_schemas_become_the_form_mcp_accepts(
    schema: dict[str, Any], form: dict[str, Any], wrapped: bool
) -> None:
    """Each expressible response schema maps to exactly this form, one both 2025 and 2026 clients accept."""
    assert requested_schema(schema) == (form, wrapped)
    for wire in (wire_2025, wire_2026):
        wire.RequestedSchema.model_validate(form)
        adapter: TypeAdapter[Any] = TypeAdapter(wire.PrimitiveSchemaDefinition)
        for prop in form["properties"].values():
            parsed = adapter.validate_python(prop)
            assert parsed.model_dump(by_alias=True, exclude_none=True) == prop  # no keyword was lost


NOT_EXPRESSIBLE: list[Any] = [
    True,
    {},
    {"type": "string", "pattern": "^[A-Z]+$"},
    {"type": ["string", "null"]},
    {"type": "null"},
    {"$ref": "#/$defs/Plan", "$defs": {"Plan": {"type": "string"}}},
    {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    {"type": "string", "format": "ipv4"},
    {"type": "string", "format": 3},
    {"type": "string", "enum": ["a", 1]},
    {"type": "string", "enum": []},
    {"type": "string", "enum": ["a"], "minLength": 1},
    {"type": "string", "oneOf": [{"const": "a"}]},
    {"type": "string", "oneOf": "a"},
    {"type": "string", "default": 1},
    {"type": "string", "title": 1},
    {"type": "string", "minLength": -1},
    {"type": "string", "maxLength": True},
    {"type": "integer", "exclusiveMinimum": 0},
    {"type": "number", "minimum": float("inf")},
    {"type": "number", "default": "1"},
    {"type": "boolean", "default": "yes"},
    {"type": "array", "items": {"type": "string"}},
    {"type": "array", "items": {"type": "integer", "enum": [1]}},
    {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A", "x": 1}]}},
    {"type": "array", "items": "a"},
    {"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": [1]},
    {"type": "array", "items": {"type": "string", "enum": ["a"]}, "uniqueItems": True},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": [["a"]]},
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"},
    {"type": "object", "properties": [{"type": "string"}]},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "minProperties": 1},
    {"type": "object", "properties": {"a": "string"}},
]


@pytest.mark.parametrize("schema", NOT_EXPRESSIBLE)
def test_schemas_elicitation_cannot_say_in_full_are_not_requested(schema: Any) -> None:
    """A response schema with anything elicitation cannot carry gives no form at all."""
    assert requested_schema(schema) is None


def test_an_object_schema_without_required_members_asks_for_nothing_in_particular() -> None:
    """An object schema with no `required` gives a form without `required`, and no properties is fine."""
    assert requested_schema({"type": "object", "additionalProperties": False}) == (
        {"type": "object", "properties": {}},
        False,
    )


# --- the server -----------------------------------------------------------------------------------


def test_create_server_needs_a_registry() -> None:
    """Anything but a Registry is refused with a TypeError naming what was given."""
    with pytest.raises(TypeError, match="needs a Registry, not list"):
        create_server([])  # type: ignore[arg-type]


def test_import_without_the_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the server without the mcp package says how to install it."""
    monkeypatch.setitem(sys.modules, "mcp", None)
    for name in [name for name in sys.modules if name.startswith("scopetool.mcp.")]:  # the server and its parts
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match=r"pip install 'scopetool\[mcp\]'"):
        importlib.import_module("scopetool.mcp.server")


def test_importing_scopetool_does_not_import_the_sdk() -> None:
    """`import scopetool` (and its MCP adapter) loads nothing of the mcp SDK."""
    code = (
        "import sys, scopetool, scopetool.providers.mcp; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout == "[]\n"


async def test_the_client_lists_every_tool_with_its_schemas_and_annotations() -> None:
    """tools/list carries each tool's description, input schema, effect annotations and output schema."""
    async with connect() as client:
        assert client.server_info is not None and client.server_info.name == "fixture-tools"
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert sorted(listed) == sorted(d.name for d in registry.definitions())
    add, forecast, greet = listed["add"], listed["forecast"], listed["greet"]
    assert add.description == "Add two integers."
    assert add.input_schema == registry.resolve("add").definition().input_schema  # type: ignore[union-attr]
    assert add.annotations is not None
    assert (add.annotations.read_only_hint, add.annotations.destructive_hint, add.annotations.idempotent_hint) == (
        True,
        False,
        True,
    )
    assert add.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert forecast.annotations is not None and forecast.annotations.destructive_hint is True
    assert forecast.output_schema is not None and forecast.output_schema["required"] == ["city", "high"]
    assert greet.annotations is None and greet.output_schema is None  # text out: no output schema


async def test_a_call_returns_content_and_structured_content() -> None:
    """A good call answers with its text and its details as structuredContent (wrapped when not an object)."""
    async with connect() as client:
        added = await client.call_tool("add", {"a": 2, "b": 3})
        forecast = await client.call_tool("forecast", {"city": "Oslo"})
    assert (added.is_error, text(added), added.structured_content) == (False, "5", {"result": 5})
    assert forecast.is_error is False
    assert forecast.structured_content == {"city": "Oslo", "high": 21}
    assert json.loads(text(forecast)) == {"city": "Oslo", "high": 21}


async def test_rejections_failures_and_unknown_tools_are_error_results() -> None:
    """Bad input, a Failure and a crash are isError results showing only safe text; an unknown name is -32602."""
    async with connect() as client:
        rejected = await client.call_tool("add", {"a": "two-point-five", "b": 3, "colour": SECRET})
        failed = await client.call_tool("reserve", {"seat": "12A"})
        crashed = await client.call_tool("connect", {"host": "db.internal"})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("drop_tables", {"password": SECRET})
    assert rejected.is_error and text(rejected).startswith("invalid arguments for tool 'add' (2 problems):")
    assert "$.a: Input should be a valid integer (got a string)" in text(rejected)
    assert "$.colour: unknown field" in text(rejected)
    assert (failed.is_error, text(failed)) == (True, "the flight is full")
    assert (crashed.is_error, text(crashed)) == (True, 'error: tool "connect" failed')
    assert (unknown.value.code, unknown.value.message) == (-32602, 'error: tool "drop_tables" is not available')
    assert SECRET not in str(unknown.value.error.model_dump())
    for result in (rejected, failed, crashed):
        dumped = result.model_dump_json()
        assert result.structured_content is None
        assert SECRET not in dumped and "two-point-five" not in dumped and "db.internal" not in dumped


async def test_arguments_that_are_not_json_are_an_error_result() -> None:
    """Arguments no JSON encoder accepts (a NaN from a lenient transport) end the call with a fixed text."""
    server = create_server(registry)
    entry = server.get_request_handler("tools/call")
    assert entry is not None
    params = types.CallToolRequestParams(name="add", arguments={"a": float("nan"), "b": 1})
    context = SimpleNamespace(request_id=7, meta=None, request=None)  # what is read before the refusal
    result = await entry.handler(context, params)  # type: ignore[arg-type]
    assert result == {"content": [{"type": "text", "text": 'error: the arguments for tool "add" are not JSON'}],
                      "isError": True, "resultType": "complete"}  # fmt: skip


async def test_a_tool_registered_after_the_server_was_made_is_not_served() -> None:
    """The tool list is frozen at create_server: a later registration is neither listed nor callable."""
    late_registry = Registry()
    server = create_server(late_registry)

    @tool(effect=Effect.SAFE)
    def late() -> str:
        """Arrive late."""
        return "here"

    late_registry.register(late)
    async with connect(server=server) as client:
        assert (await client.list_tools()).tools == []
        with pytest.raises(MCPError, match='error: tool "late" is not available'):
            await client.call_tool("late", {})


# --- progress -----------------------------------------------------------------------------------


async def test_progress_reaches_a_client_that_asked_for_it_in_order() -> None:
    """Every advancing report of a sync tool becomes a progress notification, in order; repeats are dropped."""
    notes: list[Any] = []
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect(notes=notes) as client:
        result = await client.call_tool("count", {"steps": 4}, progress_callback=on_progress)
    assert text(result) == "counted to 4"
    assert seen == [(float(n), 4.0, f"step {n}") for n in range(1, 5)]
    assert len([n for n in notes if isinstance(n, types.ProgressNotification)]) == 4


async def test_an_async_tool_reports_without_total_or_message() -> None:
    """An unbounded report with no message is sent as bare progress (total and message left out)."""
    notes: list[Any] = []
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect(notes=notes) as client:
        await client.call_tool("count_async", {"steps": 3}, progress_callback=on_progress)
    assert seen == [(1.0, None, None), (2.0, None, None), (3.0, None, None)]
    sent = [n.params for n in notes if isinstance(n, types.ProgressNotification)]
    assert [(p.progress, p.total, p.message) for p in sent] == [(1, None, None), (2, None, None), (3, None, None)]


async def test_no_progress_is_sent_without_a_progress_token() -> None:
    """A call made without a progress token gets no progress notifications at all."""
    notes: list[Any] = []
    async with connect(notes=notes) as client:
        result = await client.call_tool("count", {"steps": 3})
    assert text(result) == "counted to 3"
    assert not [n for n in notes if isinstance(n, types.ProgressNotification)]


# --- input requests -----------------------------------------------------------------------------

MODES = ["legacy", "2026-07-28"]


@pytest.mark.parametrize("mode", MODES)
async def test_an_accepted_answer_resumes_the_same_call(mode: str) -> None:
    """The prompt is asked as a form; the accepted answer reaches the same call with its checkpoint."""
    person = Person(accept(answer=True))
    async with connect(mode=mode, person=person) as client:
        result = await client.call_tool("approve", {"item": "invoice-7"})
    [asked] = person.asked
    assert asked.message == "Approve the transfer?"
    assert asked.requested_schema == {
        "type": "object",
        "properties": {"answer": {"type": "boolean", "title": "Approve"}},
        "required": ["answer"],
    }
    assert result.is_error is False
    assert json.loads(text(result)) == {"answer": True, "item": "invoice-7", "state": {"item": "invoice-7"}}


@pytest.mark.parametrize("mode", MODES)
async def test_an_object_answer_drops_empty_members_and_a_json_prompt_is_shown_as_text(mode: str) -> None:
    """An object schema is asked as is; a null member counts as not given; a non-string prompt is JSON text."""
    person = Person(accept(email="ada@example.com", plan="pro", age=None))
    async with connect(mode=mode, person=person) as client:
        result = await client.call_tool("profile", {"item": "account"})
    assert person.asked[0].message == '{"ask": "your profile"}'
    assert json.loads(text(result))["answer"] == {"email": "ada@example.com", "plan": "pro"}


DECLINED = 'error: tool "profile" needs input, and the request for it was declined'
CANCELLED = 'error: tool "profile" needs input, and the request for it was cancelled'
INVALID = 'error: the answer to tool "profile"\'s request for input is not valid'


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (types.ElicitResult(action="decline"), DECLINED),
        (types.ElicitResult(action="cancel"), CANCELLED),
        (accept(email="not an email", plan="pro"), INVALID),
    ],
)
async def test_an_answer_that_cannot_resume_the_call_ends_it(mode: str, answer: Answer, error: str) -> None:
    """Declined, cancelled or invalid answers end the call with a fixed text that repeats no value."""
    async with connect(mode=mode, person=Person(answer)) as client:
        result = await client.call_tool("profile", {"item": "account"})
    assert (result.is_error, text(result)) == (True, error)


async def test_a_client_error_instead_of_an_answer_ends_the_call() -> None:
    """An elicitation the client answers with a JSON-RPC error ends the call, without the client's text."""
    refusal = types.ErrorData(code=types.INVALID_REQUEST, message=f"no UI here {SECRET}")
    async with connect(person=Person(refusal)) as client:
        result = await client.call_tool("approve", {"item": "x"})
    assert (result.is_error, text(result)) == (
        True,
        'error: tool "approve" needs input, and the client did not answer the request for it',
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("name", "capable"), [("approve", False), ("upload", True)])
async def test_input_that_cannot_be_requested_ends_the_call(mode: str, name: str, capable: bool) -> None:
    """Without the elicitation capability, or for a schema it cannot express, the call ends clearly."""
    person = Person(accept(answer="ABC")) if capable else None
    async with connect(mode=mode, person=person) as client:
        result = await client.call_tool(name, {"item": "x"})
    assert (result.is_error, text(result)) == (
        True,
        f'error: tool "{name}" needs input that cannot be requested over this connection',
    )
    assert person is None or person.asked == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_that_keeps_asking_is_stopped(mode: str) -> None:
    """A call that asks for input more than eight times ends with an error result after eight answers."""
    person = Person(*[accept(answer=True)] * 9)
    async with connect(mode=mode, person=person) as client:
        result = await client.call_tool("nag", {"item": "x"})
    assert (result.is_error, text(result)) == (True, 'error: tool "nag" asked for input too many times')
    assert len(person.asked) == 8


async def test_a_forged_request_state_is_refused_by_the_sdk_boundary() -> None:
    """A 2026-07-28 retry whose requestState the server did not seal is a JSON-RPC error, not a call."""
    async with connect(mode="2026-07-28", person=Person()) as client:
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await client.session.call_tool(
                "approve", {"item": "x"}, request_state="1:{}", input_responses={"input": accept(answer=True)}
            )


@pytest.mark.parametrize(
    ("state", "responses", "error"),
    [
        ("garbage", {"input": accept(answer=True)}, "unknown or expired; call the tool again"),
        ("x:" + json.dumps({"prompt": "?", "response_schema": {"type": "boolean"}}), {}, "unknown or expired"),
        ("1:" + json.dumps({"prompt": "?", "response_schema": {"type": "string", "pattern": "a"}}), {}, "expired"),
        ("1:" + json.dumps({"prompt": "?", "response_schema": {"type": "boolean"}}), {}, "did not answer"),
    ],
)
async def test_a_server_without_the_boundary_still_refuses_states_it_cannot_read(
    state: str, responses: dict[str, Any], error: str
) -> None:
    """With the sealing middleware removed, an unreadable state or a missing answer ends the call."""
    server = create_server(registry)
    server.middleware = [m for m in server.middleware if not isinstance(m, RequestStateBoundary)]
    async with connect(mode="2026-07-28", person=Person(), server=server) as client:
        result = await client.session.call_tool(
            "approve", {"item": "x"}, request_state=state, input_responses=responses
        )
    assert result.is_error is True and error in text(result)
