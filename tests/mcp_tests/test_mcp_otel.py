"""scopetool.otel in the MCP server over stdio, driven by the official client: spans join the client's trace."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_fixture_tools import registry
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from scopetool.mcp.server import create_server
from scopetool.otel import instrument

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).with_name("otel_fixture_server.py")
CANARY = "c4n4ry-5d1a0e"


async def test_server_spans_nest_under_the_clients_span_and_hold_no_argument(tmp_path: Path) -> None:
    """The client's trace context reaches the server: admit/execute spans under the SDK's tools/call span."""
    spans_file = tmp_path / "spans.jsonl"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    server = StdioServerParameters(
        command=sys.executable, args=[str(FIXTURE)], env={"PYTHONPATH": path, "SCOPETOOL_SPANS": str(spans_file)}
    )
    tracer = TracerProvider().get_tracer("client")
    with tracer.start_as_current_span("agent turn") as turn:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            greeted = await client.call_tool("greet", {"name": CANARY})
            rejected = await client.call_tool("add", {"a": CANARY, "b": 1})
            with pytest.raises(MCPError) as unknown:  # MCP 2026-07-28: an unknown tool is a protocol error
                await client.call_tool("drop_tables", {"why": CANARY})
    assert (greeted.is_error, rejected.is_error, unknown.value.code) == (False, True, -32602)
    text = spans_file.read_text(encoding="utf-8")
    assert CANARY not in text
    spans: list[dict[str, Any]] = [json.loads(line) for line in text.splitlines()]
    by_name = {span["name"]: span for span in spans}
    trace_id = f"0x{turn.get_span_context().trace_id:032x}"
    # Every request joins the client's trace (a notification carries no trace context).
    assert {span["context"]["trace_id"] for span in spans if not span["name"].startswith("notifications/")} == {
        trace_id
    }
    served = by_name["tools/call greet"]
    assert served["kind"] == "SpanKind.SERVER"
    assert served["parent_id"] == f"0x{turn.get_span_context().span_id:016x}"
    admit, execute = by_name["admit_tool greet"], by_name["execute_tool greet"]
    for span in (admit, execute):
        assert span["parent_id"] == served["context"]["span_id"]
        assert span["attributes"]["gen_ai.tool.call.id"] == served["attributes"]["jsonrpc.request.id"]
    assert execute["attributes"]["scopetool.outcome"] == "result"
    add = by_name["admit_tool add"]
    assert (add["status"]["status_code"], add["attributes"]["error.type"]) == ("ERROR", "invalid_arguments")
    assert add["parent_id"] == by_name["tools/call add"]["context"]["span_id"]
    assert "execute_tool add" not in by_name
    gone = by_name["admit_tool"]
    assert (gone["attributes"]["error.type"], gone["attributes"]["gen_ai.tool.name"]) == ("unknown_tool", "drop_tables")


async def test_an_in_process_server_traces_calls_and_unknown_names_under_the_callers_span() -> None:
    """The server in this process (the SDK's in-memory client): a call's two spans and an unknown name's one."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with instrument(tracer_provider=provider), provider.get_tracer("client").start_as_current_span("turn") as turn:
        async with Client(create_server(registry, name="fixture-tools"), raise_exceptions=True) as client:
            await client.call_tool("greet", {"name": CANARY})
            with pytest.raises(MCPError):
                await client.call_tool("drop_tables", {"why": CANARY})
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"admit_tool greet", "execute_tool greet", "admit_tool", "turn"}
    assert (spans["admit_tool"].attributes or {})["error.type"] == "unknown_tool"
    assert all(span.context.trace_id == turn.get_span_context().trace_id for span in spans.values())
    assert all(CANARY not in span.to_json() for span in spans.values())
