"""Tool search on the MCP server: the SDK client sees ``search_tools`` and ``call_tool`` in place of the catalog.

In process (both protocol eras) the client searches, calls a found tool through ``call_tool`` and gets
exactly what a direct call of that tool gets: its result, its rejection (naming the inner tool and its
paths), its failure, its elicitation, its progress. ``scopetool serve --tool-search`` is then run as a
user runs it, over stdio and over Streamable HTTP, with raw lines for what no SDK client can send.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, types
from mcp.client.session import ClientRequestContext
from mcp_fixture_tools import SECRET, registry
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from third_party import inspector_cli

from scopetool import Registry, tool
from scopetool.cli import main
from scopetool.mcp import server as server_module
from scopetool.mcp.server import ToolSearch, create_server
from scopetool.otel import instrument
from scopetool.providers import ToolCall
from scopetool.providers._common import ProviderError

FIXTURE = Path(__file__).with_name("mcp_fixture_tools.py")
MODES = ["legacy", "2026-07-28"]


def text(result: types.CallToolResult) -> str:
    """A result's text blocks, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


class Person:
    """Accepts every elicitation with `content`, and remembers the prompts."""

    def __init__(self, **content: Any) -> None:
        self.content = content
        self.prompts: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.prompts.append(params.message)
        return types.ElicitResult(action="accept", content=self.content)


@asynccontextmanager
async def searching(
    *, mode: str = "legacy", person: Person | None = None, seen: list[tuple[str, str]] | None = None
) -> AsyncGenerator[Client]:
    """The SDK client in process with the fixture registry served behind tool search (``add`` always shown)."""

    def observe(call: ToolCall, outcome: object) -> None:
        if seen is not None:
            seen.append((call.name, type(outcome).__name__))

    server = create_server(registry, name="searching", tool_search=ToolSearch(always_show=["add"]), on_call=observe)
    async with Client(server, mode=mode, raise_exceptions=True, elicitation_callback=person) as client:
        yield client


@asynccontextmanager
async def direct() -> AsyncGenerator[Client]:
    """The SDK client in process with the same registry served whole, to compare with."""
    async with Client(create_server(registry, name="direct"), mode="legacy", raise_exceptions=True) as client:
        yield client


@pytest.mark.parametrize("mode", MODES)
async def test_the_list_is_the_two_tools_and_the_always_shown_one(mode: str) -> None:
    """tools/list: search_tools, call_tool (its input schema strict), then add; nothing else of the catalog."""
    async with searching(mode=mode) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["search_tools", "call_tool", "add"]
    call_schema = tools[1].input_schema
    assert call_schema["required"] == ["name", "arguments"] and call_schema["additionalProperties"] is False
    assert {key: value["type"] for key, value in call_schema["properties"].items()} == {
        "name": "string",
        "arguments": "object",
    }
    assert tools[0].annotations is not None and tools[0].annotations.read_only_hint is True


async def test_search_answers_with_the_entries_tools_list_would_have_listed() -> None:
    """The found tools are the catalog's own entries, best first, as structured content and as the same JSON text."""
    async with direct() as client:
        listed = {t.name: t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in
                  (await client.list_tools()).tools}  # fmt: skip
    async with searching() as client:
        found = await client.call_tool("search_tools", {"query": "weather forecast for a city", "limit": 2})
        capped = await client.call_tool("search_tools", {"query": "greet count add", "limit": 21})
        empty = await client.call_tool("search_tools", {"query": ""})
    assert found.is_error is False and found.structured_content is not None
    tools = found.structured_content["tools"]
    assert tools[0]["name"] == "forecast" and len(tools) <= 2
    assert all(entry == listed[entry["name"]] for entry in tools)
    assert json.loads(text(found)) == found.structured_content
    assert capped.is_error and "$.limit" in text(capped) and "search_tools" in text(capped)
    assert empty.is_error and "$.query" in text(empty)


@pytest.mark.parametrize("mode", MODES)
async def test_an_inner_call_is_answered_exactly_as_a_direct_call(mode: str) -> None:
    """A good call, a rejected one, a failure and a crash through call_tool: the same result a direct call gets."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("forecast", {"city": "Paris"}),
        ("add", {"a": "two", "b": 3, "colour": SECRET}),
        ("reserve", {"seat": "1A"}),
        ("connect", {"host": "db.internal"}),
    ]
    async with direct() as client:
        expected = [await client.call_tool(name, arguments) for name, arguments in calls]
    async with searching(mode=mode) as client:
        got = [await client.call_tool("call_tool", {"name": name, "arguments": args}) for name, args in calls]
    for want, have in zip(expected, got, strict=True):
        assert (have.is_error, have.content, have.structured_content) == (
            want.is_error,
            want.content,
            want.structured_content,
        )
    assert text(got[0]) == '{"city":"Paris","high":21}'
    assert text(got[1]).startswith("invalid arguments for tool 'add' (2 problems):")
    assert "- $.a: Input should be a valid integer (got a string)" in text(got[1])
    assert "- $.colour: unknown field" in text(got[1]) and SECRET not in got[1].model_dump_json()
    assert (text(got[2]), text(got[3])) == ("the flight is full", 'error: tool "connect" failed')


async def test_call_tools_own_arguments_and_unknown_names_are_error_results() -> None:
    """A bad call_tool call names call_tool and the path; an unknown inner name suggests the nearest one."""
    seen: list[tuple[str, str]] = []
    async with searching(seen=seen) as client:
        no_arguments = await client.call_tool("call_tool", {"name": "add"})
        extra = await client.call_tool("call_tool", {"name": "add", "arguments": {}, "why": SECRET})
        not_object = await client.call_tool("call_tool", {"name": "add", "arguments": [1, 2]})
        typo = await client.call_tool("call_tool", {"name": "forcast", "arguments": {"city": "Paris"}})
        nothing_near = await client.call_tool("call_tool", {"name": "zzzz", "arguments": {}})
        itself = await client.call_tool("call_tool", {"name": "search_tools", "arguments": {"query": "x"}})
    assert (
        text(no_arguments)
        == "invalid arguments for tool 'call_tool' (1 problem):\n- $.arguments: missing required field"
    )
    assert extra.is_error and "- $.why: unknown field" in text(extra) and SECRET not in text(extra)
    assert not_object.is_error and "$.arguments" in text(not_object) and "'call_tool'" in text(not_object)
    assert (
        text(typo)
        == 'error: tool "forcast" is not available; did you mean "forecast"? (search_tools finds tools by what they do)'
    )
    assert text(nothing_near) == 'error: tool "zzzz" is not available (search_tools finds tools by what they do)'
    assert text(itself) == 'error: call "search_tools" directly, not through call_tool'
    assert seen == [("forcast", "UnknownToolError"), ("zzzz", "UnknownToolError"), ("search_tools", "UnknownToolError")]


@pytest.mark.parametrize("mode", MODES)
async def test_elicitation_and_the_observer_are_the_inner_tools(mode: str) -> None:
    """An inner call that asks for input is resumed through call_tool; the observer is told the inner name."""
    person, seen = Person(answer=True), list[tuple[str, str]]()
    async with searching(mode=mode, person=person, seen=seen) as client:
        approved = await client.call_tool("call_tool", {"name": "approve", "arguments": {"item": "invoice-7"}})
        await client.call_tool("call_tool", {"name": "count", "arguments": {"steps": 1}})
        await client.call_tool("search_tools", {"query": "count"})
    assert person.prompts == ["Approve the transfer?"]
    assert json.loads(text(approved)) == {"answer": True, "item": "invoice-7", "state": {"item": "invoice-7"}}
    assert seen == [("approve", "Result"), ("approve", "Result"), ("count", "Result")]


async def test_the_inner_tools_result_cap_applies() -> None:
    """A result over the inner tool's own cap is its FAILED failure, through call_tool as directly."""

    @tool(max_output_bytes=64)
    def dump(size: int) -> str:
        """Return `size` characters."""
        return "x" * size

    server = create_server(Registry(dump), tool_search=True)
    async with Client(server, mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["search_tools", "call_tool"]
        small = await client.call_tool("call_tool", {"name": "dump", "arguments": {"size": 3}})
        large = await client.call_tool("call_tool", {"name": "dump", "arguments": {"size": 1000}})
        plain = await client.call_tool("dump", {"size": 1000})  # still callable by its own name
    assert text(small) == "xxx"
    assert large.is_error and text(large) == text(plain) and "64" in text(large)


async def test_reveal_lists_found_tools_for_the_rest_of_a_2025_session() -> None:
    """With reveal: listChanged declared; each search that finds new tools grows the list once and says so."""
    notes: list[object] = []

    async def record(message: object) -> None:
        notes.append(message)

    server = create_server(registry, tool_search=ToolSearch(always_show=["add"], reveal=True))
    async with Client(server, mode="legacy", message_handler=record) as client:
        capabilities = client.server_capabilities
        await client.call_tool("search_tools", {"query": "tomorrow forecast city", "limit": 1})
        first = [t.name for t in (await client.list_tools()).tools]
        await client.call_tool("search_tools", {"query": "tomorrow forecast city", "limit": 1})
        await client.call_tool("search_tools", {"query": "add two integers greet someone", "limit": 3})
        second = [t.name for t in (await client.list_tools()).tools]
        greeted = await client.call_tool("greet", {"name": "Ada"})
    async with Client(server, mode="legacy") as other:
        fresh = [t.name for t in (await other.list_tools()).tools]
    assert capabilities is not None and capabilities.tools is not None and capabilities.tools.list_changed is True
    assert first == ["search_tools", "call_tool", "add", "forecast"]
    assert second[:4] == first and "greet" in second[4:] and second.count("add") == 1
    assert len([n for n in notes if isinstance(n, types.ToolListChangedNotification)]) == 2
    assert (greeted.is_error, text(greeted)) == (False, "hello Ada")
    assert fresh == ["search_tools", "call_tool", "add"]


async def test_reveal_changes_nothing_for_a_2026_client_and_is_off_by_default() -> None:
    """A 2026-07-28 request has no session to keep revealed tools; without reveal no 2025 list changes either."""
    for mode, options in (("2026-07-28", ToolSearch(reveal=True)), ("legacy", ToolSearch())):
        async with Client(create_server(registry, tool_search=options), mode=mode) as client:
            await client.call_tool("search_tools", {"query": "forecast"})
            assert [t.name for t in (await client.list_tools()).tools] == ["search_tools", "call_tool"]


def test_tool_search_is_refused_when_it_cannot_list_what_it_should() -> None:
    """A catalog tool named call_tool, an always-shown name the catalog lacks, and bad option types."""

    @tool
    def call_tool(name: str) -> str:
        """A tool whose name tool search needs."""
        return name

    with pytest.raises(ProviderError, match="its own 'call_tool': the catalog has a tool of that name"):
        create_server(Registry(call_tool), tool_search=True)
    with pytest.raises(ProviderError, match="always_show: the catalog has no tool named 'nope'"):
        create_server(registry, tool_search=ToolSearch(always_show=("add", "nope")))
    with pytest.raises(TypeError, match="tool_search must be True, False or a ToolSearch, not str"):
        create_server(registry, tool_search="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="always_show must be a list of tool names, not str"):
        ToolSearch(always_show="add")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="always_show must hold tool names"):
        ToolSearch(always_show=[1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="reveal must be True or False, not str"):
        ToolSearch(reveal="yes")  # type: ignore[arg-type]


# --- `scopetool serve --tool-search`, as a user runs it ------------------------------------------


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


async def test_scopetool_serve_tool_search_over_stdio_with_the_sdk_client() -> None:
    """The command over stdio (2026-07-28): the list, a search, a good and a bad inner call, the inner progress."""
    reported: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append(progress)

    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "scopetool", "serve", f"{FIXTURE}:registry", "--tool-search", "--always-show", "greet"],
        env=_environment(),
    )
    async with Client(server) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        found = await client.call_tool("search_tools", {"query": "add two integers"})
        good = await client.call_tool("call_tool", {"name": "add", "arguments": {"a": 2, "b": 3}})
        bad = await client.call_tool("call_tool", {"name": "add", "arguments": {"a": 2}})
        counted = await client.call_tool(
            "call_tool", {"name": "count", "arguments": {"steps": 3}}, progress_callback=on_progress
        )
    assert (text(counted), reported) == ("counted to 3", [1.0, 2.0, 3.0])
    assert names == ["search_tools", "call_tool", "greet"]
    assert found.structured_content is not None and found.structured_content["tools"][0]["name"] == "add"
    assert (text(good), good.structured_content) == ("5", {"result": 5})
    assert text(bad) == "invalid arguments for tool 'add' (1 problem):\n- $.b: missing required field"


def test_a_repeated_member_name_inside_the_inner_arguments_is_the_inner_tools_rejection() -> None:
    """Raw stdio: a duplicate inside call_tool's arguments reaches add's contract; one in call_tool's own is its own."""
    handshake = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": handshake}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":'
        '{"name":"add","arguments":{"a":1,"a":2,"b":3}}}}',
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"a":2,"b":3}}}',
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call_tool","arguments":'
        '{"name":"add","name":"greet","arguments":{"name":"x"}}}}',
    ]
    done = subprocess.run(
        [sys.executable, "-m", "scopetool", "serve", f"{FIXTURE}:registry", "--tool-search"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=_environment(),
    )
    answers = {message["id"]: message for message in map(json.loads, done.stdout.splitlines()) if "id" in message}
    inner, direct_call, outer = (answers[key]["result"] for key in (2, 3, 4))
    assert inner["isError"] and inner["content"] == direct_call["content"]
    assert inner["content"][0]["text"].startswith("invalid arguments for tool 'add'")
    assert "same member name twice" in inner["content"][0]["text"]
    assert outer["isError"] and outer["content"][0]["text"].startswith("invalid arguments for tool 'call_tool'")


async def test_scopetool_serve_tool_search_over_http() -> None:
    """``--http``: after the warning, the line says the tools are behind search; the SDK client searches and calls."""
    command = [sys.executable, "-m", "scopetool", "serve", f"{FIXTURE}:registry", "--tool-search", "--http", "0"]
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_environment()
    ) as process:
        try:
            assert process.stderr is not None
            warning = await asyncio.to_thread(process.stderr.readline)
            assert "WARNING: no authentication" in warning  # then what is served, and where
            line = await asyncio.to_thread(process.stderr.readline)
            assert (
                f"serving {len(registry)} tools as MCP server 'scopetool' behind search_tools and call_tool at" in line
            )
            url = line.split(" at ", 1)[1].split(" ", 1)[0]
            async with Client(url, mode="legacy") as client:
                names = [t.name for t in (await client.list_tools()).tools]
                greeted = await client.call_tool("call_tool", {"name": "greet", "arguments": {"name": "Ada"}})
        finally:
            process.kill()
    assert (names, text(greeted)) == (["search_tools", "call_tool"], "hello Ada")


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--always-show", "add"], "scopetool: --always-show applies to --tool-search only\n"),
        (["--reveal"], "scopetool: --reveal applies to --tool-search only\n"),
        (
            ["--tool-search", "--always-show", "nope"],
            "scopetool: --always-show nope: TARGET has no tool of that name\n",
        ),
    ],
)
def test_serve_tool_search_mistakes_are_one_line(
    arguments: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misused --always-show is one usage line, exit 2, before anything is served."""
    assert main(["serve", f"{FIXTURE}:registry", *arguments]) == 2
    assert capsys.readouterr().err == said


def test_serve_tool_search_refuses_a_target_with_a_tool_of_its_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A TARGET with its own search_tools: one usage line saying which name to change."""
    target = tmp_path / "tools.py"
    target.write_text(
        "from scopetool import tool\n\n@tool\ndef search_tools(q: str) -> str:\n    '''Mine.'''\n    return q\n"
    )
    assert main(["serve", f"{target}:search_tools", "--tool-search"]) == 2
    assert capsys.readouterr().err == (
        "scopetool: --tool-search lists its own 'search_tools': rename TARGET's tool of that name\n"
    )


def test_serve_tool_search_hands_run_stdio_a_tool_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """In process: --tool-search with --always-show reaches run_stdio as a ToolSearch; without it, none is passed."""
    given: list[dict[str, Any]] = []

    def run_stdio(registry: Registry, **options: Any) -> None:
        given.append(options)

    monkeypatch.setattr(server_module, "run_stdio", run_stdio)
    assert (
        main(["serve", f"{FIXTURE}:registry", "--tool-search", "--always-show", "add", "--always-show", "greet"]) == 0
    )
    assert main(["serve", f"{FIXTURE}:registry", "--tool-search", "--reveal"]) == 0
    assert main(["serve", f"{FIXTURE}:registry"]) == 0
    assert given[0]["tool_search"] == ToolSearch(always_show=("add", "greet"))
    assert given[1]["tool_search"] == ToolSearch(reveal=True)
    assert "tool_search" not in given[2]


async def test_tracing_names_the_inner_tool() -> None:
    """With scopetool.otel: a call through call_tool is traced as the inner tool's admit and execute spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with instrument(tracer_provider=provider):
        async with searching() as client:
            await client.call_tool("call_tool", {"name": "greet", "arguments": {"name": SECRET}})
            await client.call_tool("call_tool", {"name": "forcast", "arguments": {}})
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert {"admit_tool greet", "execute_tool greet", "admit_tool"} <= set(spans)
    assert not [name for name in spans if "call_tool" in name]
    assert (spans["admit_tool"].attributes or {})["error.type"] == "unknown_tool"
    assert all(SECRET not in span.to_json() for span in spans.values())


async def test_the_mcp_inspector_searches_and_calls_through_serve_tool_search() -> None:
    """The official Inspector's CLI over stdio: the two tools listed; call_tool's object argument sent as JSON."""
    example = Path(__file__).resolve().parents[2] / "examples" / "mcp_server.py"
    target = ["-e", f"PYTHONPATH={os.pathsep.join(sys.path)}", sys.executable, "-m", "scopetool", "serve"]
    target += [f"{example}:registry", "--tool-search"]

    async def inspect(*arguments: str) -> dict[str, Any]:
        process = await asyncio.create_subprocess_exec(
            *inspector_cli(), *target, *arguments, "--format", "json", "-q", stdout=subprocess.PIPE
        )
        out, _ = await asyncio.wait_for(process.communicate(), 120)
        found: dict[str, Any] = json.loads(out)
        return found

    listed, saved, rejected = await asyncio.gather(
        inspect("--method", "tools/list"),
        inspect(
            "--method", "tools/call", "--tool-name", "call_tool", "--tool-arg", "name=save_note",
            "--tool-arg", 'arguments={"title": "groceries", "text": "Eggs"}',
        ),
        inspect(
            "--method", "tools/call", "--tool-name", "call_tool", "--tool-arg", "name=save_note",
            "--tool-arg", 'arguments={"title": "groceries"}',
        ),
    )  # fmt: skip
    assert [tool["name"] for tool in listed["result"]["tools"]] == ["search_tools", "call_tool"]
    assert saved["result"]["isError"] is False and saved["result"]["content"][0]["text"].startswith("saved 'groceries'")
    assert rejected["result"]["isError"] is True
    assert rejected["result"]["content"][0]["text"].startswith("invalid arguments for tool 'save_note'")


async def test_a_tool_marked_always_shown_is_listed_beside_the_two() -> None:
    """A tool marked ``defer_loading=False`` is listed from the start, as an ``always_show`` name is."""

    @tool(defer_loading=False)
    def clock() -> str:
        """Tell the time."""
        return "noon"

    @tool
    def weather(city: str) -> str:
        """Weather for a city."""
        return city

    server = create_server(Registry(clock, weather), name="marked", tool_search=True)
    async with Client(server, mode="legacy", raise_exceptions=True) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["search_tools", "call_tool", "clock"]
