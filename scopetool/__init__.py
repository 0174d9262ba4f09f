"""scopetool: a strict, fast, provider-neutral tool protocol for LLM function calling.

Decorate functions with `@tool`, `bind` them, export their `Definition`s, and admit the model's
proposed calls through `Contract.prepare`, the one trust boundary, before anything runs.
"""

from __future__ import annotations

import contextlib

from ._binding import Binding, Caller, CallMiddleware, InputValidatingTool, Tool, bind
from ._codec import InputDecoder
from ._contract import Admission, Contract, IdempotencyKey, InputValidator, Invocation, Request
from ._definition import Definition, Effect
from ._errors import (
    DuplicateToolError,
    InputValidationError,
    InvalidDefinitionError,
    InvalidInvocationError,
    InvalidOutputError,
    InvalidToolError,
    ScopetoolError,
)
from ._func import Func, tool
from ._guard import Authorization, AuthorizationError, Authorizer, Guard
from ._input import Continuation, InputRequest, InvalidInputRequestError
from ._json import MAX_INPUT_BYTES
from ._outcome import CallError, Failure, FailureKind, InvalidFailureError, classify_failure
from ._output import ContentBlock, MediaBlock, Output, Result, TextBlock
from ._progress import InvalidProgressError, Progress, ProgressReporter, progress_reporter, report_progress
from ._registry import Registry
from ._rejection import InputRejection, classify_input_rejection
from ._signature import Signature

__version__ = "0.1.0"

__all__ = [
    "Admission",
    "Authorization",
    "AuthorizationError",
    "Authorizer",
    "Binding",
    "CallError",
    "CallMiddleware",
    "Caller",
    "ContentBlock",
    "Continuation",
    "Contract",
    "Definition",
    "DuplicateToolError",
    "Effect",
    "Failure",
    "FailureKind",
    "Func",
    "Guard",
    "IdempotencyKey",
    "InputDecoder",
    "InputRejection",
    "InputRequest",
    "InputValidatingTool",
    "InputValidationError",
    "InputValidator",
    "InvalidDefinitionError",
    "InvalidFailureError",
    "InvalidInputRequestError",
    "InvalidInvocationError",
    "InvalidOutputError",
    "InvalidProgressError",
    "InvalidToolError",
    "Invocation",
    "MAX_INPUT_BYTES",
    "MediaBlock",
    "Output",
    "Progress",
    "ProgressReporter",
    "Registry",
    "Request",
    "Result",
    "ScopetoolError",
    "Signature",
    "TextBlock",
    "Tool",
    "bind",
    "classify_failure",
    "classify_input_rejection",
    "progress_reporter",
    "report_progress",
    "tool",
]


def _present_as_scopetool() -> None:
    """Public names report `scopetool` as their module, not the private module that defines them."""
    names = globals()
    for name in __all__:
        value = names[name]
        if getattr(value, "__module__", "").startswith("scopetool._"):
            with contextlib.suppress(AttributeError, TypeError):  # aliases and constants keep theirs
                value.__module__ = "scopetool"


_present_as_scopetool()
del _present_as_scopetool
