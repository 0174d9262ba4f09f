"""OpenTelemetry traces and metrics of every admission and call (``pip install 'scopetool[otel]'``).

`instrument` installs an observer that every runner hands its admissions and calls to: the
provider loop (`run_call`), the CLI, the `Driver` (every backend), the MCP server and the
integrations. Each admission becomes an ``admit_tool {name}`` span and each call of an admitted
invocation an ``execute_tool {name}`` span, following the OpenTelemetry GenAI semantic conventions
for tool execution; counters count admissions and rejections by reason, and a histogram times the
calls. Argument values and outputs are never recorded unless `record_values` asks for them (and then
cut at `max_value_chars`). Only the OpenTelemetry API is needed: the application picks the SDK and
the exporters; without them every span and measurement is a no-op.

Example:
    ```python
    import asyncio
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from scopetool import Registry, Request, tool
    from scopetool.otel import instrument
    from scopetool.providers import ToolCall, run_call

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with instrument(tracer_provider=provider):
        call = ToolCall(id="call_1", request=Request(name="add", arguments='{"a": 2, "b": 3}'))
        asyncio.run(run_call(Registry(add), call))
    for span in exporter.get_finished_spans():
        print(span.name, span.attributes["gen_ai.tool.call.id"], span.attributes["scopetool.outcome"])
    #> admit_tool add call_1 admitted
    #> execute_tool add call_1 result
    ```
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Final, final

from ._extras import missing_dependency

try:
    from opentelemetry import metrics, trace
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider
    from opentelemetry.util.types import AttributeValue
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

from . import __version__, _observe
from ._binding import Binding
from ._contract import Admission, Contract, Invocation, Request
from ._errors import InputValidationError, InvalidInvocationError
from ._outcome import classify_failure
from ._output import Result
from ._rejection import classify_input_rejection
from .providers._common import output_text

__all__ = ["REJECTION_KINDS", "Instrumentation", "instrument"]

REJECTION_KINDS: Final = ("invalid_arguments", "invalid_request", "unknown_tool", "validator_defect")
"""The ``error.type`` of a rejected admission: input the model can correct (it is told why), a request
that does not fit the tool (a wrong name or type, from a runner's bug), a tool the runner does not
have, an input validator that itself failed. Anything else an admission raises is named by its class."""

DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
"""The bucket boundaries (seconds) the conventions advise for ``gen_ai.execute_tool.duration``."""

_REMEMBERED: Final = 1024
"""Admitted invocations whose call id is kept for their call span at most (the oldest go first)."""


@final
class Instrumentation:
    """The installed tracing of admissions and calls; `uninstrument` (or leaving a ``with``) removes it.

    Made by `instrument`; it is the observer the runners call, not something to call yourself.
    """

    __slots__ = (
        "_admissions",
        "_call_ids",
        "_durations",
        "_limit",
        "_rejections",
        "_tracer",
        "_values",
    )

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        record_values: bool,
        max_value_chars: int,
    ) -> None:
        self._tracer = trace.get_tracer("scopetool", __version__, tracer_provider)
        meter = metrics.get_meter("scopetool", __version__, meter_provider)
        self._admissions = meter.create_counter(
            "scopetool.tool.admissions", unit="{admission}", description="Tool calls a contract admitted."
        )
        self._rejections = meter.create_counter(
            "scopetool.tool.rejections", unit="{rejection}", description="Tool calls refused at admission, by reason."
        )
        self._durations = meter.create_histogram(
            "gen_ai.execute_tool.duration",
            unit="s",
            description="The duration of a single tool execution.",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self._values = record_values
        self._limit = max_value_chars
        self._call_ids: dict[int, tuple[Invocation, str]] = {}

    @property
    def records_values(self) -> bool:
        """Whether argument values and outputs are recorded (`instrument`'s `record_values`)."""
        return self._values

    @property
    def active(self) -> bool:
        """Whether this is the installed instrumentation."""
        return _observe.current is self

    def uninstrument(self) -> None:
        """Stop tracing (when this is still the installed instrumentation)."""
        if _observe.current is self:
            _observe.install(None)
        self._call_ids.clear()

    def __enter__(self) -> Instrumentation:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.uninstrument()

    # -- the observer (scopetool._observe.Observer)

    def admit(self, contract: Contract, request: Request, admission: Admission, call_id: str | None) -> Invocation:
        """Admit `request` with `contract` inside an ``admit_tool`` span (the runners call this)."""
        name = contract.name
        attributes = _tool_attributes(contract, "admit_tool", call_id)
        if self._values:
            attributes["gen_ai.tool.call.arguments"] = self._bounded(request.arguments)
        with self._tracer.start_as_current_span(
            f"admit_tool {name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                invocation = contract.prepare(request, admission)
            except BaseException as error:
                kind = _rejection_kind(error)
                _failed(span, kind, "rejected")
                self._rejections.add(1, {"gen_ai.tool.name": name, "error.type": kind})
                raise
            span.set_attribute("scopetool.outcome", "admitted")
            self._admissions.add(1, {"gen_ai.tool.name": name})
        if call_id is not None:
            remembered = self._call_ids
            if len(remembered) >= _REMEMBERED:
                remembered.pop(next(iter(remembered)), None)
            remembered[id(invocation)] = (invocation, call_id)
        return invocation

    def unknown(self, name: str, call_id: str | None) -> None:
        """Record a call of a tool the runner does not have as a rejected admission."""
        attributes: dict[str, AttributeValue] = {"gen_ai.operation.name": "admit_tool", "gen_ai.tool.name": name[:80]}
        if call_id is not None:
            attributes["gen_ai.tool.call.id"] = call_id
        with self._tracer.start_as_current_span("admit_tool", kind=SpanKind.INTERNAL, attributes=attributes) as span:
            _failed(span, "unknown_tool", "rejected")
        # The name is the model's: a metric keeps only bounded attributes.
        self._rejections.add(1, {"gen_ai.tool.name": "_OTHER", "error.type": "unknown_tool"})

    async def call(self, binding: Binding, invocation: Invocation) -> Result:
        """Run `invocation` with `binding` inside an ``execute_tool`` span (the runners call this)."""
        remembered = self._call_ids.pop(id(invocation), None)
        call_id = remembered[1] if remembered is not None and remembered[0] is invocation else None
        contract = binding.contract
        name = contract.name
        attributes = _tool_attributes(contract, "execute_tool", call_id)
        if self._values:
            attributes["gen_ai.tool.call.arguments"] = self._bounded(invocation.arguments)
        measured: dict[str, AttributeValue] = {"gen_ai.tool.name": name, "gen_ai.tool.type": "function"}
        with self._tracer.start_as_current_span(
            f"execute_tool {name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            start = time.perf_counter()
            try:
                result = await binding.call(invocation)
            except BaseException as error:
                failure = classify_failure(error)
                kind = failure.kind.value if failure is not None else _error_type(error)
                _failed(span, kind, "failed" if failure is None else failure.kind.value)
                measured["error.type"] = kind
                raise
            finally:
                self._durations.record(time.perf_counter() - start, measured)
            if result.input_request is not None:
                span.set_attribute("scopetool.outcome", "input_required")
            else:
                span.set_attribute("scopetool.outcome", "result")
                if self._values:
                    span.set_attribute("gen_ai.tool.call.result", self._bounded(output_text(result.output)))
        return result

    def _bounded(self, value: str | bytes) -> str:
        text = value if isinstance(value, str) else value.decode("utf-8", "replace")
        limit = self._limit
        return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"

    def __repr__(self) -> str:
        return f"Instrumentation(active={self.active}, record_values={self._values})"


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    record_values: bool = False,
    max_value_chars: int = 2048,
) -> Instrumentation:
    """Trace and count every admission and call the runners make, from now on, in this process.

    Args:
        tracer_provider: Where spans go; OpenTelemetry's global provider when None.
        meter_provider: Where the counters and the histogram go; the global provider when None.
        record_values: Also record the arguments (``gen_ai.tool.call.arguments``, on both spans) and a
            result's output (``gen_ai.tool.call.result``). They may hold personal or secret data: only
            for telemetry stores that may keep it.
        max_value_chars: The longest recorded value; longer ones are cut with an ellipsis.

    It replaces an instrumentation already installed. The spans start under the caller's current
    span, and a tool's own spans nest under its ``execute_tool`` span.
    """
    if not isinstance(max_value_chars, int) or isinstance(max_value_chars, bool) or max_value_chars < 1:
        raise ValueError(f"max_value_chars must be a positive int, not {max_value_chars!r}")
    instrumentation = Instrumentation(tracer_provider, meter_provider, bool(record_values), max_value_chars)
    _observe.install(instrumentation)
    return instrumentation


def _rejection_kind(error: BaseException) -> str:
    """The ``error.type`` of an admission that raised `error` (one of `REJECTION_KINDS`, or its class)."""
    if isinstance(error, InvalidInvocationError):
        if classify_input_rejection(error) is not None:
            return "invalid_arguments"
        if isinstance(error.__cause__, InputValidationError):
            return "validator_defect"
        return "invalid_request"
    return _error_type(error)


def _error_type(error: BaseException) -> str:
    """An exception's low-cardinality name for ``error.type``: its class, qualified by its module."""
    kind = type(error)
    module = kind.__module__
    if module == "builtins":
        return kind.__qualname__
    return f"{module}.{kind.__qualname__}"  # scopetool's own exceptions all say their module is "scopetool"


def _tool_attributes(contract: Contract, operation: str, call_id: str | None) -> dict[str, AttributeValue]:
    definition = contract.definition()
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": operation,
        "gen_ai.tool.name": contract.name,
        "gen_ai.tool.type": "function",
    }
    if call_id is not None:
        attributes["gen_ai.tool.call.id"] = call_id
    description = definition.description
    if description:
        attributes["gen_ai.tool.description"] = description
    effect = definition.effect
    attributes["scopetool.tool.effect"] = "none" if effect is None else effect.value
    return attributes


def _failed(span: Span, kind: str, outcome: str) -> None:
    span.set_attribute("error.type", kind)
    span.set_attribute("scopetool.outcome", outcome)
    span.set_status(Status(StatusCode.ERROR, kind))
