"""scopetool.otel, read back through OpenTelemetry's in-memory span exporter and metric reader."""

from __future__ import annotations

import importlib
import itertools
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel, field_validator

from scopetool import (
    Admission,
    CallError,
    Definition,
    Effect,
    Failure,
    FailureKind,
    InputRejection,
    InputRequest,
    Invocation,
    Registry,
    Request,
    Result,
    bind,
    tool,
)
from scopetool import _observe as observe
from scopetool.driver import Driver
from scopetool.driver._records import run_request
from scopetool.otel import DURATION_BUCKETS, REJECTION_KINDS, Instrumentation, instrument
from scopetool.providers import ToolCall, run_call

CANARY = "c4n4ry-7f3e9b"
"""Sent in every argument (and echoed in outputs): it must never appear in telemetry unless asked for."""

PROVIDER = TracerProvider()
SPANS = InMemorySpanExporter()
PROVIDER.add_span_processor(SimpleSpanProcessor(SPANS))
TRACER = PROVIDER.get_tracer("tests")


class Note(BaseModel):
    """A note to keep."""

    text: str

    @field_validator("text")
    @classmethod
    def not_forbidden(cls, value: str) -> str:
        if value.startswith("forbidden"):
            raise InputRejection(f"the text {value!r} is forbidden")  # a message that quotes the value
        return value


@tool(effect=Effect.SAFE)
def echo(text: str) -> str:
    """Say the text back."""
    return text


@tool(effect=Effect.SAFE)
def lookup(text: str) -> str:
    """A safe tool that breaks."""
    raise ValueError(f"no such entry: {text}")


@tool
def write(text: str) -> str:
    """An unsafe tool that breaks."""
    raise KeyError(text)


@tool
def refuse(text: str) -> str:
    """A tool that refuses."""
    raise Failure(kind=FailureKind.REJECTED, output=f"not allowed: {text}")


@tool
def keep(note: Note) -> str:
    """Keep a note."""
    return note.text


@tool
def nested(text: str) -> str:
    """A tool that traces its own work."""
    with TRACER.start_as_current_span("inside the tool"):
        return text


class Unavailable(Exception):
    """An application's own error."""


@tool
def reach(text: str) -> str:
    """A tool whose service is down."""
    raise Unavailable(text)


@tool
def wrap(text: str) -> str:
    """A tool that wraps its error in evidence."""
    raise CallError(RuntimeError(text), evidence=text)


class Asking:
    """A tool that asks a person before it does anything."""

    def definition(self) -> Definition:
        return Definition(name="asking", input_schema={"type": "object"})

    async def call(self, invocation: Invocation) -> Result:
        return Result(input_request=InputRequest(prompt=f"really {CANARY}?", response_schema={"type": "boolean"}))


def registry() -> Registry:
    """Every test tool."""
    return Registry(echo, lookup, write, refuse, keep, nested, reach, wrap, Asking())


@dataclass
class Telemetry:
    """What one test's instrumentation exported."""

    reader: InMemoryMetricReader
    instrumentation: Instrumentation

    def spans(self) -> list[ReadableSpan]:
        return list(SPANS.get_finished_spans())

    def named(self, name: str) -> ReadableSpan:
        [span] = [s for s in self.spans() if s.name == name]
        return span

    def points(self, metric: str) -> list[tuple[dict[str, Any], Any]]:
        """Each data point of `metric`: its attributes and its value (a sum, or a histogram's count)."""
        data = self.reader.get_metrics_data()
        found: list[tuple[dict[str, Any], Any]] = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for entry in scope.metrics:
                    if entry.name == metric:
                        found.extend(
                            (dict(point.attributes or {}), getattr(point, "value", None) or point.count)
                            for point in entry.data.data_points
                        )
        return sorted(found, key=lambda item: json.dumps(item[0], sort_keys=True))

    def no_canary(self) -> None:
        """No value sent as an argument appears anywhere: names, attributes, events, links, status, metrics."""
        exported = [span.to_json() for span in self.spans()]
        data = self.reader.get_metrics_data()
        exported.append(data.to_json() if data else "")
        assert exported[:-1]
        for text in exported:
            assert CANARY not in text


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    """A fresh exporter and metric reader, with scopetool instrumented into them for the test."""
    SPANS.clear()
    reader = InMemoryMetricReader()
    with instrument(tracer_provider=PROVIDER, meter_provider=MeterProvider(metric_readers=[reader])) as handle:
        yield Telemetry(reader, handle)
    assert observe.current is None


def call(name: str, text: str = CANARY, call_id: str | None = "call_1") -> ToolCall:
    return ToolCall(id=call_id, request=Request(name=name, arguments=json.dumps({"text": text})))


def tool_attributes(name: str, operation: str, call_id: str | None, description: str, effect: str) -> dict[str, Any]:
    expected = {
        "gen_ai.operation.name": operation,
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": description,
        "scopetool.tool.effect": effect,
    }
    if call_id is not None:
        expected["gen_ai.tool.call.id"] = call_id
    return expected


async def test_an_admitted_call_is_two_spans_under_the_callers_span(telemetry: Telemetry) -> None:
    """run_call: an admit_tool span and an execute_tool span, both children of the caller's, with GenAI attributes."""
    with TRACER.start_as_current_span("agent turn") as turn:
        outcome = await run_call(registry(), call("echo"))
    assert not isinstance(outcome, BaseException) and outcome.output.text() == CANARY
    admit, execute = telemetry.named("admit_tool echo"), telemetry.named("execute_tool echo")
    assert [s.name for s in telemetry.spans()] == ["admit_tool echo", "execute_tool echo", "agent turn"]
    assert dict(admit.attributes or {}) == {
        **tool_attributes("echo", "admit_tool", "call_1", "Say the text back.", "safe"),
        "scopetool.outcome": "admitted",
    }
    assert dict(execute.attributes or {}) == {
        **tool_attributes("echo", "execute_tool", "call_1", "Say the text back.", "safe"),
        "scopetool.outcome": "result",
    }
    for span in (admit, execute):
        assert span.kind is SpanKind.INTERNAL and span.status.status_code is StatusCode.UNSET
        assert span.parent is not None and span.parent.span_id == turn.get_span_context().span_id
        assert not span.events
    assert telemetry.points("scopetool.tool.admissions") == [({"gen_ai.tool.name": "echo"}, 1)]
    assert telemetry.points("scopetool.tool.rejections") == []
    assert telemetry.points("gen_ai.execute_tool.duration") == [
        ({"gen_ai.tool.name": "echo", "gen_ai.tool.type": "function"}, 1)
    ]
    telemetry.no_canary()


async def test_a_tools_own_spans_nest_under_its_execute_tool_span(telemetry: Telemetry) -> None:
    """The execute_tool span is current while the tool runs."""
    await run_call(registry(), call("nested"))
    inner, execute = telemetry.named("inside the tool"), telemetry.named("execute_tool nested")
    assert inner.parent is not None and inner.parent.span_id == execute.context.span_id
    assert execute.parent is None  # no caller span: a root


async def test_rejections_are_error_spans_with_their_kind_and_are_counted(telemetry: Telemetry) -> None:
    """Each rejection: an admit_tool span with ERROR status and its kind; no execute_tool span; never the message."""
    tools = registry()
    bad_json = ToolCall(id="call_2", request=Request(name="echo", arguments='{"text": "' + CANARY))
    wrong_type = ToolCall(id="call_3", request=Request(name="echo", arguments='{"text": 7, "x": "' + CANARY + '"}'))
    refused = call("keep", "forbidden " + CANARY, call_id="call_5")  # its message quotes the value
    for item in (bad_json, wrong_type, call("unknown_" + "tool", call_id="call_4"), refused):
        outcome = await run_call(tools, item)
        assert isinstance(outcome, Exception)
    spans = telemetry.spans()
    assert all(span.name.startswith("admit_tool") for span in spans)
    assert [(span.name, (span.attributes or {})["error.type"]) for span in spans] == [
        ("admit_tool echo", "invalid_arguments"),
        ("admit_tool echo", "invalid_arguments"),
        ("admit_tool", "unknown_tool"),
        ("admit_tool keep", "invalid_arguments"),
    ]
    for span in spans:
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == (span.attributes or {})["error.type"]
        assert (span.attributes or {})["scopetool.outcome"] == "rejected"
    unknown = telemetry.named("admit_tool")
    assert dict(unknown.attributes or {}) == {
        "gen_ai.operation.name": "admit_tool",
        "gen_ai.tool.name": "unknown_tool",
        "gen_ai.tool.call.id": "call_4",
        "error.type": "unknown_tool",
        "scopetool.outcome": "rejected",
    }
    assert telemetry.points("scopetool.tool.rejections") == [
        ({"gen_ai.tool.name": "echo", "error.type": "invalid_arguments"}, 2),
        ({"gen_ai.tool.name": "keep", "error.type": "invalid_arguments"}, 1),
        ({"gen_ai.tool.name": "_OTHER", "error.type": "unknown_tool"}, 1),
    ]
    assert telemetry.points("scopetool.tool.admissions") == []
    telemetry.no_canary()
    assert set(REJECTION_KINDS) >= {"invalid_arguments", "unknown_tool"}


class Validated:
    """A hand-written tool whose input validator raises `raised` (a defect, or an interrupt)."""

    def __init__(self, name: str, raised: BaseException) -> None:
        self.name = name
        self.raised = raised

    def definition(self) -> Definition:
        return Definition(name=self.name, input_schema={"type": "object"}, description="A validated tool.")

    def input_validator(self) -> Any:
        def check(raw: bytes) -> Any:
            raise self.raised

        return check

    async def call(self, invocation: Invocation) -> Result:  # pragma: no cover - never admitted
        raise AssertionError("never admitted")


async def test_a_validator_defect_and_a_misrouted_request_have_their_own_kinds(telemetry: Telemetry) -> None:
    """validator_defect and invalid_request: the admission's error.type, named, never its text."""
    broken = bind(Validated("broken", RuntimeError(CANARY)))
    assert isinstance(await run_call(Registry(broken), call("broken")), Exception)
    instrumentation = telemetry.instrumentation
    with pytest.raises(ValueError):
        instrumentation.admit(bind(echo).contract, Request("other", "{}"), Admission(), None)
    with pytest.raises(KeyboardInterrupt):
        instrumentation.admit(
            bind(Validated("interrupting", KeyboardInterrupt())).contract,
            Request("interrupting", "{}"),
            Admission(),
            None,
        )
    assert [(s.name, (s.attributes or {})["error.type"]) for s in telemetry.spans()] == [
        ("admit_tool broken", "validator_defect"),
        ("admit_tool echo", "invalid_request"),
        ("admit_tool interrupting", "KeyboardInterrupt"),
    ]
    telemetry.no_canary()


async def test_failures_are_error_spans_with_the_failure_kind_or_the_error_class(telemetry: Telemetry) -> None:
    """A safe tool's error is a definite failure, an unsafe one's is named by its class, a refusal is rejected."""
    tools = registry()
    for name in ("lookup", "write", "refuse", "reach", "wrap"):
        assert isinstance(await run_call(tools, call(name)), Exception)
    executed = [s for s in telemetry.spans() if s.name.startswith("execute_tool")]
    assert [
        (s.name, (s.attributes or {})["error.type"], (s.attributes or {})["scopetool.outcome"], s.status.description)
        for s in executed
    ] == [
        ("execute_tool lookup", "failed", "failed", "failed"),
        ("execute_tool write", "KeyError", "failed", "KeyError"),
        ("execute_tool refuse", "rejected", "rejected", "rejected"),
        ("execute_tool reach", f"{__name__}.Unavailable", "failed", f"{__name__}.Unavailable"),
        ("execute_tool wrap", "scopetool.CallError", "failed", "scopetool.CallError"),
    ]
    assert all(s.status.status_code is StatusCode.ERROR and not s.events for s in executed)
    assert telemetry.points("gen_ai.execute_tool.duration")[:3] == [
        ({"gen_ai.tool.name": "write", "gen_ai.tool.type": "function", "error.type": "KeyError"}, 1),
        ({"gen_ai.tool.name": "lookup", "gen_ai.tool.type": "function", "error.type": "failed"}, 1),
        ({"gen_ai.tool.name": "refuse", "gen_ai.tool.type": "function", "error.type": "rejected"}, 1),
    ]
    telemetry.no_canary()


async def test_an_input_request_is_a_call_that_asks_and_no_error(telemetry: Telemetry) -> None:
    """A result that asks for input: outcome input_required, status unset, and a tool without a description has none."""
    outcome = await run_call(registry(), ToolCall(id=None, request=Request(name="asking")))
    assert not isinstance(outcome, BaseException) and outcome.input_request is not None
    execute = telemetry.named("execute_tool asking")
    assert dict(execute.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "asking",
        "gen_ai.tool.type": "function",
        "scopetool.tool.effect": "none",
        "scopetool.outcome": "input_required",
    }
    assert execute.status.status_code is StatusCode.UNSET
    telemetry.no_canary()


async def test_values_are_recorded_only_when_asked_and_then_bounded() -> None:
    """record_values=True: the arguments on both spans and the output, each cut at max_value_chars."""
    SPANS.clear()
    reader = InMemoryMetricReader()
    long = CANARY + "x" * 100
    with instrument(
        tracer_provider=PROVIDER,
        meter_provider=MeterProvider(metric_readers=[reader]),
        record_values=True,
        max_value_chars=40,
    ) as handle:
        assert handle.records_values and handle.active
        await run_call(registry(), call("echo", long))
    admit, execute = (SPANS.get_finished_spans()[i].attributes or {} for i in (0, 1))
    arguments = json.dumps({"text": long})
    assert admit["gen_ai.tool.call.arguments"] == execute["gen_ai.tool.call.arguments"] == arguments[:39] + "…"
    assert execute["gen_ai.tool.call.result"] == long[:39] + "…"
    assert not handle.active and repr(handle) == "Instrumentation(active=False, record_values=True)"


def test_instrument_refuses_a_bad_limit_and_replaces_an_earlier_instrumentation() -> None:
    """A bad max_value_chars is a ValueError; a second instrument replaces the first (whose uninstrument is moot)."""
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_value_chars must be a positive int"):
            instrument(max_value_chars=bad)  # type: ignore[arg-type]
    first = instrument(tracer_provider=PROVIDER)
    second = instrument(tracer_provider=PROVIDER)
    assert observe.current is second and not first.active
    first.uninstrument()
    assert observe.current is second
    second.uninstrument()
    assert observe.current is None


async def test_tracing_off_records_nothing() -> None:
    """Without instrument, nothing is exported and the call runs as before."""
    SPANS.clear()
    outcome = await run_call(registry(), call("echo", "hello"))
    assert not isinstance(outcome, BaseException) and outcome.output.text() == "hello"
    assert SPANS.get_finished_spans() == ()


async def test_the_call_id_is_remembered_for_a_bounded_number_of_admitted_calls(telemetry: Telemetry) -> None:
    """An admission's call id reaches its call span; past 1024 waiting invocations the oldest ids are dropped."""
    binding = bind(echo)
    instrumentation = telemetry.instrumentation
    admitted = [
        instrumentation.admit(binding.contract, Request("echo", '{"text": "a"}'), Admission(), f"call_{n}")
        for n in range(1025)
    ]
    await instrumentation.call(binding, admitted[0])
    await instrumentation.call(binding, admitted[-1])
    first, last = (s for s in telemetry.spans() if s.name == "execute_tool echo")
    assert "gen_ai.tool.call.id" not in (first.attributes or {})
    assert (last.attributes or {})["gen_ai.tool.call.id"] == "call_1024"


async def test_the_driver_on_the_memory_backend_traces_each_call_with_its_id(telemetry: Telemetry) -> None:
    """Driver.run: an admission span per call and a call span per admitted one, the provider's id on both."""
    driver = Driver(registry())
    with TRACER.start_as_current_span("agent turn") as turn:
        turn_result = await driver.run(
            "run-1", [call("echo", call_id="a"), call("gone", call_id="b"), call("write", call_id="c")]
        )
    assert len(turn_result.results) == 3
    seen = [
        (s.name, (s.attributes or {}).get("gen_ai.tool.call.id"), (s.attributes or {})["scopetool.outcome"])
        for s in telemetry.spans()
        if s.name != "agent turn"
    ]
    assert sorted(seen) == [
        ("admit_tool", "b", "rejected"),
        ("admit_tool echo", "a", "admitted"),
        ("admit_tool write", "c", "admitted"),
        ("execute_tool echo", "a", "result"),
        ("execute_tool write", "c", "failed"),
    ]
    trace_id = turn.get_span_context().trace_id
    assert all(s.context.trace_id == trace_id for s in telemetry.spans())
    telemetry.no_canary()


async def test_a_resumed_or_vanished_call_is_admitted_again_under_the_observer(telemetry: Telemetry) -> None:
    """The backends' re-admission (run_request) is observed too, a tool gone since included."""
    assert (await run_request(bind(echo), "echo", json.dumps({"text": CANARY}), Admission()))["kind"] == "result"
    assert (await run_request(None, "gone", "{}", Admission()))["kind"] == "error"
    assert [s.name for s in telemetry.spans()] == ["admit_tool echo", "execute_tool echo", "admit_tool"]
    telemetry.no_canary()


async def test_an_openai_agents_run_traces_its_calls_under_the_callers_span(telemetry: Telemetry) -> None:
    """The Agents SDK's own Runner loop (ScriptedModel): spans carry the SDK's call ids, inside the caller's trace."""
    agents = pytest.importorskip("agents")
    from agents.testing import ScriptedModel, assistant_message, function_call

    from scopetool.integrations.openai_agents import function_tools

    model = ScriptedModel(
        [
            [
                function_call("echo", json.dumps({"text": CANARY}), call_id="fc_1"),
                function_call("echo", json.dumps({"text": 5}), call_id="fc_2"),
            ],
            [assistant_message("done")],
        ]
    )
    agent = agents.Agent(name="t", model=model, tools=list(function_tools(registry())))
    with TRACER.start_as_current_span("agent turn") as turn:
        result = await agents.Runner.run(agent, "go", run_config=agents.RunConfig(tracing_disabled=True))
    assert result.final_output == "done"
    seen = sorted(
        (s.name, (s.attributes or {}).get("gen_ai.tool.call.id"), (s.attributes or {})["scopetool.outcome"])
        for s in telemetry.spans()
        if s.name != "agent turn"
    )
    assert seen == [
        ("admit_tool echo", "fc_1", "admitted"),
        ("admit_tool echo", "fc_2", "rejected"),
        ("execute_tool echo", "fc_1", "result"),
    ]
    assert all(s.context.trace_id == turn.get_span_context().trace_id for s in telemetry.spans())
    telemetry.no_canary()


async def test_a_pydantic_ai_run_traces_admission_and_call_apart_with_the_call_id(telemetry: Telemetry) -> None:
    """pydantic-ai admits in its validation stage and calls later: the call span still carries the call id."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from scopetool.integrations.pydantic_ai import ScopetoolToolset

    turns = [[ToolCallPart("echo", json.dumps({"text": CANARY}), tool_call_id="p1")]]

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=list(turns.pop(0)) if turns else [TextPart("done")])

    agent = Agent(FunctionModel(script), toolsets=[ScopetoolToolset(registry())])
    with TRACER.start_as_current_span("agent turn"):
        assert (await agent.run("go")).output == "done"
    seen = [
        (s.name, (s.attributes or {}).get("gen_ai.tool.call.id")) for s in telemetry.spans() if s.name != "agent turn"
    ]
    assert seen == [("admit_tool echo", "p1"), ("execute_tool echo", "p1")]
    telemetry.no_canary()


def test_import_without_the_api_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing scopetool.otel without opentelemetry-api says how to install it."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.delitem(sys.modules, "scopetool.otel")
    with pytest.raises(ImportError, match=r"pip install 'scopetool\[otel\]'"):
        importlib.import_module("scopetool.otel")


def test_the_buckets_are_the_conventions() -> None:
    """The duration histogram's advised boundaries double from 10 ms to 81.92 s."""
    assert DURATION_BUCKETS[0] == 0.01 and all(b == a * 2 for a, b in itertools.pairwise(DURATION_BUCKETS))
