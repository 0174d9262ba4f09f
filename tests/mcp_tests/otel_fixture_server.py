"""The MCP fixture tools over stdio with `scopetool.otel` on: each finished span is a JSON line in $SCOPETOOL_SPANS.

The OpenTelemetry SDK provider is also the global one, so the MCP SDK's own server spans are kept too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from mcp_fixture_tools import registry
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from scopetool.mcp.server import run_stdio
from scopetool.otel import instrument


class JsonLines(SpanExporter):
    """Appends each span, as one line of JSON, to a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as file:
            for span in spans:
                file.write(json.dumps(json.loads(span.to_json())) + "\n")
        return SpanExportResult.SUCCESS


if __name__ == "__main__":
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLines(os.environ["SCOPETOOL_SPANS"])))
    trace.set_tracer_provider(provider)
    with instrument(tracer_provider=provider):
        run_stdio(registry, name="otel-fixture")
