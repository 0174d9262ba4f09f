"""What the subcommands share: exit codes, usage errors, provider lookup and JSON printing."""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Final, TextIO

import jiter

from .._json import is_array, is_object
from .._stdio import output_stream

if TYPE_CHECKING:  # the adapters (and asyncio, which they import) load only for a command that uses them
    from ..providers import Export

__all__ = [
    "PROVIDERS",
    "STRICT_PROVIDERS",
    "KEY_VALUE",
    "ExitCode",
    "UsageError",
    "describe",
    "dump_json",
    "export_tools",
    "one_line",
    "provider_function",
    "say",
    "stdout",
]


class ExitCode(IntEnum):
    """The exit codes of the ``scopetool`` command."""

    OK = 0
    """Success: the call completed, no problem was found, every line was admitted."""
    FAILED = 1
    """The call failed, the check found problems, some lines were rejected, or an export failed."""
    USAGE = 2
    """The command line or its inputs are wrong: bad arguments, TARGET, tool name or file."""
    REJECTED = 3
    """``call``: the arguments were not admitted (the model would be told why)."""
    INPUT_REQUESTED = 4
    """``call``: the tool asked for input; answer it and resume with ``--continuation``."""
    UNKNOWN = 5
    """``call``: the call timed out and its tool made no SAFE promise: its outcome is unknown."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C)."""


class UsageError(Exception):
    """A problem with the command line or its inputs, shown as one line; the exit code is `ExitCode.USAGE`."""


KEY_VALUE: Final = re.compile(r"[A-Za-z_][\w.-]*=", re.ASCII)
"""The start of a ``key=value`` word: what a user types where ``call`` takes ARGS, a JSON object."""

PROVIDERS: Final = (
    "openai_chat",
    "openai_responses",
    "anthropic",
    "bedrock",
    "gemini",
    "mcp",
    "mistral",
    "ollama",
)
"""The provider adapters of `scopetool.providers`, by module name."""
STRICT_PROVIDERS: Final = frozenset({"openai_chat", "openai_responses", "anthropic", "bedrock", "mistral"})
"""The adapters whose ``export_tools`` takes ``strict``."""


def provider_function(provider: str, name: str) -> Callable[..., Any]:
    """A function of one provider adapter, imported on first use (``export_tools``, ``parse_tool_calls``)."""
    module = importlib.import_module(f"scopetool.providers.{provider}")
    function: Callable[..., Any] = getattr(module, name)
    return function


def export_tools(provider: str, tools: object, **options: Any) -> Export:
    """``scopetool.providers.<provider>.export_tools(tools, **options)``."""
    export: Export = provider_function(provider, "export_tools")(tools, **options)
    return export


def one_line(text: str) -> str:
    """`text` with its line breaks and runs of white space collapsed, for a one-line message."""
    return " ".join(text.split())


def describe(error: BaseException) -> str:
    """``Type: message`` of an exception, on one line (the type alone when the message is empty)."""
    text = one_line(str(error))
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def stdout() -> TextIO:
    """Where a command writes its output: standard output, which `main` keeps for it alone."""
    return output_stream()


def say(message: str, stream: TextIO | None = None) -> None:
    """Write ``scopetool: <message>`` as one line to `stream` (standard error by default)."""
    (stream or sys.stderr).write(f"scopetool: {one_line(message)}\n")


def dump_json(value: Any) -> str:
    """`value` as indented JSON text: members in their given order, UTF-8 kept, exact numbers kept as written.

    Numbers parsed with jiter's lossless floats are written exactly as they were read.
    """
    parts: list[str] = []
    _emit(value, "", parts)
    return "".join(parts)


def _emit(value: Any, indent: str, out: list[str]) -> None:
    if is_object(value) or is_array(value):
        items = list(value.items()) if is_object(value) else [(None, item) for item in value]
        opening, closing = ("{", "}") if is_object(value) else ("[", "]")
        if not items:
            out.append(opening + closing)
            return
        inner = indent + "  "
        out.append(opening)
        for index, (key, member) in enumerate(items):
            out.append(",\n" if index else "\n")
            out.append(inner)
            if key is not None:
                out.append(json.dumps(key, ensure_ascii=False) + ": ")
            _emit(member, inner, out)
        out.append(f"\n{indent}{closing}")
    elif isinstance(value, jiter.LosslessFloat):
        out.append(bytes(value).decode("ascii"))
    else:
        out.append(json.dumps(value, ensure_ascii=False, allow_nan=False))
