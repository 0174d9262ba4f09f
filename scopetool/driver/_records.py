"""What a backend stores about a call: its outcome as JSON, and the one way every backend runs a call.

A record is a JSON object (only strings, booleans and nested objects and arrays), so a backend can
store it as JSON text anywhere. It keeps exactly what a provider's ``result_message`` needs:

* ``{"kind": "result", "output": OUTPUT}``: the call completed;
* ``{"kind": "error", "failure": "failed" | "rejected", "output": OUTPUT}``: the call did not
  complete; OUTPUT is the model-visible text `outcome_output` chose (a `Failure`'s public output, an
  input rejection's message or a generic text), never an exception's own text;
* ``{"kind": "input", "request": "<InputRequest JSON>"}``: the call asks for input.

OUTPUT is ``{"content": [BLOCK, ...], "details": "<JSON text>" | null}`` with BLOCK
``{"type": "text", "text": ...}`` or ``{"type": "media", "mime_type": ..., "data" (base64) | "uri" |
"reference": ...}``. Details and the input request are kept as the exact JSON text.
"""

from __future__ import annotations

import base64
import logging
from typing import Any, Final, TypeAlias

from .. import _observe
from .._binding import Binding
from .._contract import Admission, Invocation, Request
from .._errors import InvalidInvocationError
from .._input import InputRequest
from .._outcome import Failure, FailureKind, classify_failure
from .._output import ContentBlock, MediaBlock, Output, Result, TextBlock
from .._rejection import classify_input_rejection
from .._run import invocation_outcome
from .._timeout import ToolTimeoutError
from ..providers._common import UnknownToolError, outcome_output

__all__ = [
    "Record",
    "decode_outcome",
    "error_record",
    "interrupted_record",
    "is_input",
    "lost_record",
    "outcome_record",
    "record_request",
    "run_invocation",
    "run_request",
]

Record: TypeAlias = dict[str, Any]
"""A call's stored outcome: a JSON object (see the module's docstring)."""

logger: Final = logging.getLogger("scopetool.driver")

INTERRUPTED: Final = 'error: tool "{name}" was interrupted; its outcome is unknown'
FAILED: Final = 'error: tool "{name}" failed'


class StoredCauseError(RuntimeError):
    """Stands for the private cause of a stored `Failure`: backends store outcomes, never causes."""


async def run_invocation(binding: Binding, invocation: Invocation) -> Record:
    """Run one admitted invocation and record its outcome; never raises for the tool's errors.

    That includes a tool's own `KeyboardInterrupt`, `SystemExit` or `CancelledError`; only the
    cancellation of the awaiting task propagates: a cancelled call has no outcome.
    """
    return outcome_record(binding.name, await invocation_outcome(binding, invocation))


def outcome_record(name: str, outcome: Result | BaseException) -> Record:
    """The record of a call's outcome: its output, the input it asks for, or an `error_record`."""
    if isinstance(outcome, BaseException):
        return error_record(name, outcome)
    if outcome.input_request is not None:
        return {"kind": "input", "request": outcome.input_request.to_json().decode("utf-8")}
    return {"kind": "result", "output": _encode_output(outcome.output)}


async def run_request(binding: Binding | None, name: str, arguments: str, admission: Admission) -> Record:
    """Admit the arguments under `admission` with `binding` (None: the tool is gone) and run the call."""
    observer = _observe.current
    if binding is None:
        if observer is not None:
            observer.unknown(name, None)
        return error_record(name, UnknownToolError(name))
    try:
        if observer is None:
            invocation = binding.contract.prepare(Request(name=name, arguments=arguments), admission)
        else:
            invocation = observer.admit(binding.contract, Request(name=name, arguments=arguments), admission, None)
    except InvalidInvocationError as error:
        return error_record(name, error)
    return await run_invocation(binding, invocation)


def error_record(name: str, error: BaseException) -> Record:
    """The record of an error outcome: only what the model may see, and whether it was a rejection.

    An error that is neither a `Failure` nor an input rejection is a defect or an unknown outcome: it is
    logged (with its traceback, for the host) before its text is dropped; a timeout was logged already,
    with its figures, by ``scopetool.timeouts``.
    """
    failure = classify_failure(error)
    if (
        failure is None
        and classify_input_rejection(error) is None
        and not isinstance(error, UnknownToolError | ToolTimeoutError)
    ):
        logger.warning("tool %r failed; the model is told only that it failed", name, exc_info=error)
    output, _ = outcome_output(name, error)
    rejected = failure is not None and failure.kind is FailureKind.REJECTED
    return {"kind": "error", "failure": "rejected" if rejected else "failed", "output": _encode_output(output)}


def interrupted_record(name: str) -> Record:
    """The record of a call with no replay promise that was interrupted: its outcome is unknown."""
    return _failed(INTERRUPTED.format(name=name))


def lost_record(name: str) -> Record:
    """The record of a call whose durable execution ended without an outcome (the engine gave up on it)."""
    return _failed(FAILED.format(name=name))


def is_input(record: Record) -> bool:
    """Whether the record asks for input (the call is not finished)."""
    kind: str = record["kind"]
    return kind == "input"


def record_request(record: Record) -> InputRequest:
    """The input request of a record that asks for input."""
    return InputRequest.from_json(record["request"])


def decode_outcome(record: Record) -> Result | Failure:
    """The outcome a finished record stands for: a `Result`, or a `Failure` showing the stored output.

    A stored error comes back as a `Failure` (its kind kept, its cause a `StoredCauseError`), so a
    provider's ``result_message`` shows the model exactly what it was shown when the call ran.
    """
    kind = record["kind"]
    if kind not in ("result", "error"):
        raise ValueError(f"a finished call's record has kind 'result' or 'error', not {kind!r}")
    output = _decode_output(record["output"])
    if kind == "result":
        return Result(output=output)
    if record["failure"] == "rejected":
        return Failure(kind=FailureKind.REJECTED, output=output)
    return Failure(kind=FailureKind.FAILED, output=output, cause=StoredCauseError("the cause is not stored"))


def _failed(text: str) -> Record:
    return {"kind": "error", "failure": "failed", "output": _encode_output(Output.from_text(text))}


def _encode_output(output: Output) -> dict[str, Any]:
    return {
        "content": [_encode_block(block) for block in output.content],
        "details": None if output.details is None else output.details.decode("utf-8"),
    }


def _encode_block(block: ContentBlock) -> dict[str, str]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if block.data is not None:
        return {"type": "media", "mime_type": block.mime_type, "data": base64.b64encode(block.data).decode("ascii")}
    if block.uri is not None:
        return {"type": "media", "mime_type": block.mime_type, "uri": block.uri}
    return {"type": "media", "mime_type": block.mime_type, "reference": str(block.reference)}


def _decode_output(data: dict[str, Any]) -> Output:
    details = data["details"]
    return Output(
        content=tuple(_decode_block(block) for block in data["content"]),
        details=None if details is None else details.encode("utf-8"),
    )


def _decode_block(data: dict[str, str]) -> ContentBlock:
    if data["type"] == "text":
        return TextBlock(data["text"])
    if "data" in data:
        return MediaBlock(mime_type=data["mime_type"], data=base64.b64decode(data["data"], validate=True))
    return MediaBlock(mime_type=data["mime_type"], uri=data.get("uri"), reference=data.get("reference"))
