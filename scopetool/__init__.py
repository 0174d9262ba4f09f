"""scopetool: a strict, provider-neutral tool protocol for LLM function calling.

Decorate functions with `@tool`, `bind` them, export their `Definition`s, and admit the model's
proposed calls through `Contract.prepare`, the one trust boundary, before anything runs.
"""

from __future__ import annotations

import contextlib
import typing

if typing.TYPE_CHECKING:
    from ._binding import Binding, Caller, CallMiddleware, InputValidatingTool, Tool, bind
    from ._catalog import Catalog, DeferredToolError
    from ._codec import InputDecoder
    from ._context import CallContext
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
        ToolNotFoundError,
    )
    from ._func import Func, tool
    from ._guard import Authorization, AuthorizationError, Authorizer, Guard
    from ._input import Continuation, InputRequest, InvalidInputRequestError
    from ._json import MAX_INPUT_BYTES
    from ._outcome import CallError, Failure, FailureKind, InvalidFailureError, classify_failure
    from ._output import ContentBlock, MediaBlock, Output, Result, TextBlock
    from ._principal import Identity, Principal, acting_as, current_principal
    from ._progress import InvalidProgressError, Progress, ProgressReporter, progress_reporter, report_progress
    from ._registry import Registry
    from ._rejection import InputRejection, classify_input_rejection
    from ._search import ToolIndex
    from ._signature import Signature
    from ._size import MAX_OUTPUT_BYTES, OutputTooLargeError
    from ._timeout import ToolTimeoutError, overrunning_calls
    from ._turnrules import Grant, Tally, TurnRule, TurnRuleError, TurnRules

__version__ = "0.1.0"

__all__ = [
    "Admission",
    "Authorization",
    "AuthorizationError",
    "Authorizer",
    "Binding",
    "CallContext",
    "CallError",
    "CallMiddleware",
    "Caller",
    "Catalog",
    "ContentBlock",
    "Continuation",
    "Contract",
    "DeferredToolError",
    "Definition",
    "DuplicateToolError",
    "Effect",
    "Failure",
    "FailureKind",
    "Func",
    "Grant",
    "Guard",
    "IdempotencyKey",
    "Identity",
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
    "MAX_OUTPUT_BYTES",
    "MediaBlock",
    "Output",
    "OutputTooLargeError",
    "Principal",
    "Progress",
    "ProgressReporter",
    "Registry",
    "Request",
    "Result",
    "ScopetoolError",
    "Signature",
    "Tally",
    "TextBlock",
    "Tool",
    "ToolIndex",
    "ToolNotFoundError",
    "ToolTimeoutError",
    "TurnRule",
    "TurnRuleError",
    "TurnRules",
    "acting_as",
    "bind",
    "classify_failure",
    "classify_input_rejection",
    "current_principal",
    "overrunning_calls",
    "progress_reporter",
    "report_progress",
    "tool",
]

# The private module each public name lives in. Importing scopetool loads none of them (nor pydantic),
# as ``import pydantic`` loads none of its own: reading a public name loads its module alone (with what
# that module imports), so ``from scopetool import tool`` does not load the registry or the contract.
_HOMES: typing.Final = {
    "Admission": "_contract",
    "Authorization": "_guard",
    "AuthorizationError": "_guard",
    "Authorizer": "_guard",
    "Binding": "_binding",
    "CallContext": "_context",
    "CallError": "_outcome",
    "CallMiddleware": "_binding",
    "Caller": "_binding",
    "Catalog": "_catalog",
    "ContentBlock": "_output",
    "Continuation": "_input",
    "Contract": "_contract",
    "DeferredToolError": "_catalog",
    "Definition": "_definition",
    "DuplicateToolError": "_errors",
    "Effect": "_definition",
    "Failure": "_outcome",
    "FailureKind": "_outcome",
    "Func": "_func",
    "Grant": "_turnrules",
    "Guard": "_guard",
    "IdempotencyKey": "_contract",
    "Identity": "_principal",
    "InputDecoder": "_codec",
    "InputRejection": "_rejection",
    "InputRequest": "_input",
    "InputValidatingTool": "_binding",
    "InputValidationError": "_errors",
    "InputValidator": "_contract",
    "InvalidDefinitionError": "_errors",
    "InvalidFailureError": "_outcome",
    "InvalidInputRequestError": "_input",
    "InvalidInvocationError": "_errors",
    "InvalidOutputError": "_errors",
    "InvalidProgressError": "_progress",
    "InvalidToolError": "_errors",
    "Invocation": "_contract",
    "MAX_INPUT_BYTES": "_json",
    "MAX_OUTPUT_BYTES": "_size",
    "MediaBlock": "_output",
    "Output": "_output",
    "OutputTooLargeError": "_size",
    "Principal": "_principal",
    "Progress": "_progress",
    "ProgressReporter": "_progress",
    "Registry": "_registry",
    "Request": "_contract",
    "Result": "_output",
    "ScopetoolError": "_errors",
    "Signature": "_signature",
    "Tally": "_turnrules",
    "TextBlock": "_output",
    "Tool": "_binding",
    "ToolIndex": "_search",
    "ToolNotFoundError": "_errors",
    "ToolTimeoutError": "_timeout",
    "TurnRule": "_turnrules",
    "TurnRuleError": "_turnrules",
    "TurnRules": "_turnrules",
    "acting_as": "_principal",
    "bind": "_binding",
    "classify_failure": "_outcome",
    "classify_input_rejection": "_rejection",
    "current_principal": "_principal",
    "overrunning_calls": "_timeout",
    "progress_reporter": "_progress",
    "report_progress": "_progress",
    "tool": "_func",
}


def _load(name: str, home: str) -> object:
    """`name`, imported from its private module `home`.

    The public names of every private module loaded so far (`home` and those it imported) are presented
    as scopetool's own.
    """
    import importlib  # noqa: PLC0415 - only reading a public name needs it
    import sys  # noqa: PLC0415 - built in: importing it costs nothing

    getattr(importlib.import_module(f"{__name__}.{home}"), name)  # raises as ``from module import name`` would
    names = globals()
    for public, where in _HOMES.items():
        module = sys.modules.get(f"{__name__}.{where}")
        if public in names or module is None:
            continue
        value = getattr(module, public, _MISSING)
        if value is _MISSING:  # a module still being imported: its names are presented when next read
            continue
        if getattr(value, "__module__", "").startswith("scopetool._"):
            with contextlib.suppress(AttributeError, TypeError):  # aliases and constants keep theirs
                value.__module__ = "scopetool"
        names[public] = value
    return names[name]


_MISSING: typing.Final = object()


if not typing.TYPE_CHECKING:  # pragma: no branch - type checkers see the imports above, not a catch-all

    def __getattr__(name: str) -> object:
        home = _HOMES.get(name)
        if home is not None:
            return _load(name, home)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
