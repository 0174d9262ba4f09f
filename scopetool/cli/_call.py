"""``scopetool call``: admit and run one call by hand, and resume it after an input request.

An input request is printed as one JSON object (a *pending call*) holding everything the resumption
needs: ``tool``, ``arguments`` (the JSON text, exactly as admitted), ``idempotency_key`` (a string or
null) and ``input_request`` (`InputRequest.to_json`). To answer it, add a ``response`` member holding
the answer (or pass ``--answer JSON``) and run ``scopetool call TARGET --continuation FILE``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .._contract import Admission, IdempotencyKey, Request
from .._errors import InputValidationError
from .._input import Continuation, InputRequest, InvalidInputRequestError
from .._json import canonical_json, is_blank, is_object, loads_exact
from .._outcome import classify_failure
from .._output import MediaBlock, Output, Result, TextBlock
from .._progress import Progress, progress_reporter
from .._registry import Registry
from .._rejection import classify_input_rejection
from .._run import call_outcome
from .._target import load_registry
from .._timeout import ToolTimeoutError
from ..providers import Export, ProviderError, outcome_output
from ..providers._common import repair_nulls
from ._common import KEY_VALUE, ExitCode, UsageError, dump_json, export_tools, one_line, say, stdout
from ._definitions import export_options

__all__ = ["PENDING_MEMBERS", "run"]

PENDING_MEMBERS: Final = ("tool", "arguments", "idempotency_key", "input_request", "response")
"""The members of a pending-call file: what ``call`` prints for an input request, plus the answer."""


@dataclass(frozen=True, slots=True)
class _Call:
    name: str
    arguments: str | bytes
    key: str | None
    continuation: Continuation | None = None


def run(args: argparse.Namespace) -> int:
    """Admit and run one call; print its outcome as the model would see it (or the pending call)."""
    options = export_options(args.provider, args.strict, None)
    resumed = args.continuation is not None
    registry = load_registry(args.target)
    call = _resumed(args) if resumed else _fresh(args, registry)
    binding = registry.resolve(call.name)
    if binding is None:
        raise UsageError(_unknown_tool(call.name, registry, args.target))
    arguments = call.arguments
    if args.provider is not None and not resumed:
        try:
            export = export_tools(args.provider, binding, **options)
        except ProviderError as error:
            say(str(error))
            return ExitCode.FAILED
        arguments = _as_provider_reads(arguments, export, call.name)
    key = IdempotencyKey(call.key) if call.key else None
    admission = Admission(idempotency_key=key, continuation=call.continuation)
    request = Request(name=call.name, arguments=arguments)
    with progress_reporter(_show_progress):
        outcome = asyncio.run(call_outcome(binding, request, admission))
    if isinstance(outcome, Result):
        try:
            binding.contract.validate_result(outcome)
        except Exception as error:  # noqa: BLE001 - a result that breaks its schema is an outcome like any error
            outcome = error
    if isinstance(outcome, BaseException):
        return _not_completed(call.name, outcome, arguments)
    if outcome.input_request is not None:
        admitted = arguments if isinstance(arguments, str) else arguments.decode()  # admitted: UTF-8
        return _pending(call, "{}" if is_blank(admitted) else admitted, outcome.input_request)
    stdout().write(_text(outcome.output) + "\n")
    return ExitCode.OK


def _as_provider_reads(arguments: str | bytes, export: Export, name: str) -> str | bytes:
    """The arguments as that provider's ``parse_tool_calls`` reads them with `export` (`repair_nulls`).

    A null a strict export introduced for an optional field stands for "omitted": it is dropped.
    """
    if isinstance(arguments, bytes):
        try:
            text = arguments.decode("utf-8")
        except UnicodeDecodeError:
            return arguments  # the contract says what is wrong with them
        return repair_nulls(text, export, name)
    return repair_nulls(arguments, export, name)


def _fresh(args: argparse.Namespace, registry: Registry) -> _Call:
    if args.answer is not None:
        raise UsageError("--answer answers a pending call: use it with --continuation FILE")
    name: str | None = args.name
    raw: str | None = args.arguments
    only = registry.names()[0] if len(registry) == 1 else None
    words = [word for word in (name, raw, *args.extra_arguments) if word is not None]
    if any(KEY_VALUE.match(word) for word in words):
        named = None if name is None or KEY_VALUE.match(name) else name
        pairs = [word for word in words if word != named]
        raise UsageError(
            f"ARGS must be one JSON object, not key=value words: {_json_call(args.target, named, registry, pairs)}"
        )
    if (
        only is not None
        and name != only
        and raw is None
        and (name is None or name == "-" or name.lstrip().startswith("{"))
    ):
        name, raw = only, name  # a TARGET of one tool needs no NAME: what was given is ARGS
    if name is None:
        raise UsageError("call needs the NAME of the tool to call (or --continuation FILE)")
    if (name == "-" or name.lstrip().startswith(("{", "["))) and registry.resolve(name) is None:
        raise UsageError(
            f"{name!r} is where NAME goes, and it looks like ARGS: name the tool first, as in "
            f"scopetool call {args.target} NAME {shlex.quote(name)} (NAME: one of {', '.join(registry.names())})"
        )
    arguments: str | bytes = ""
    if raw == "-":
        arguments = sys.stdin.buffer.read()
    elif raw is not None:
        arguments = raw
    return _Call(name=name, arguments=arguments, key=args.idempotency_key)


def _json_call(target: str, name: str | None, registry: Registry, pairs: list[str]) -> str:
    """The ``call`` command line that passes the ``key=value`` `pairs` as the JSON object ARGS must be."""
    members: dict[str, object] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            members[key] = json.loads(value)  # a number, true, false, null, an array or an object as written
        except ValueError:
            members[key] = value
    only = registry.names()[0] if len(registry) == 1 else None
    tool = name or only or "NAME"
    named = "" if tool == only and name is None else f" {shlex.quote(tool)}"
    listed = f" (NAME: one of {', '.join(registry.names())})" if tool == "NAME" else ""
    return f"scopetool call {target}{named} {shlex.quote(json.dumps(members, ensure_ascii=False))}{listed}"


def _unknown_tool(name: str, registry: Registry, target: str) -> str:
    """No tool has `name`: say so, with the nearest names first when some are near."""
    import difflib  # noqa: PLC0415 - only this error needs it

    names = registry.names()
    folded = {known.casefold(): known for known in names}
    near = [folded[match] for match in difflib.get_close_matches(name.casefold(), folded, n=3, cutoff=0.6)]
    guess = f"did you mean {' or '.join(map(repr, near))}? " if near else ""
    return f"no tool named {name!r} in {target}; {guess}its tools: {', '.join(names)}"


def _resumed(args: argparse.Namespace) -> _Call:
    if args.arguments is not None or args.idempotency_key is not None:
        raise UsageError("with --continuation the arguments and the idempotency key come from FILE: give neither")
    path: str = args.continuation
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {path!r}: {error.strerror or error}") from None
    try:
        document = loads_exact(raw)
    except ValueError as error:
        raise UsageError(f"{path!r} is not strict JSON: {error}") from None
    if not is_object(document) or set(document) - set(PENDING_MEMBERS) or "input_request" not in document:
        members = ", ".join(PENDING_MEMBERS)
        raise UsageError(f"{path!r} is not a pending call printed by scopetool call: expected the members {members}")
    name, arguments, key = document.get("tool"), document.get("arguments"), document.get("idempotency_key")
    if not isinstance(name, str) or not isinstance(arguments, str) or not (key is None or isinstance(key, str)):
        raise UsageError(f"{path!r}: tool and arguments must be strings, idempotency_key a string or null")
    if args.name is not None and args.name != name:
        raise UsageError(f"{path!r} resumes a call of {name!r}, not of {args.name!r}")
    answer: str | None = args.answer
    if answer is None and "response" not in document:
        raise UsageError(f'{path!r} holds no answer: add a "response" member holding it, or pass --answer JSON')
    if answer is not None and "response" in document:
        raise UsageError(f'{path!r} already holds an answer in "response": drop it or --answer')
    try:
        request = InputRequest.from_json(canonical_json(document["input_request"]))
    except InvalidInputRequestError as error:
        raise UsageError(f"{path!r}: {error}") from None
    try:
        continuation = request.continuation_from_json(
            canonical_json(document["response"]) if answer is None else answer
        )
    except InvalidInputRequestError as error:  # the answer's fault, wherever it was given
        where = "--answer" if answer is not None else f"{path!r}"
        raise UsageError(f"{where}: {error}") from None
    return _Call(name=name, arguments=arguments, key=key, continuation=continuation)


def _not_completed(name: str, error: BaseException, arguments: str | bytes) -> int:
    output, _ = outcome_output(name, error)
    stdout().write(_text(output) + "\n")
    failure = classify_failure(error)
    if failure is not None:
        private = f" (its private cause: {type(failure.cause).__name__})" if failure.cause is not None else ""
        say(f"the call ended with a {failure.kind.value} outcome{private}: the model is shown the output above")
        return ExitCode.FAILED
    if classify_input_rejection(error) is not None:
        hint = "" if _is_json_object(arguments) else """ (ARGS is one JSON object, as in '{"city": "Lisbon"}')"""
        say(f"the arguments were rejected: the model is shown the message above{hint}")
        return ExitCode.REJECTED
    if isinstance(error, ToolTimeoutError):
        say(
            f"the call timed out after {error.elapsed:.3f} s (its timeout: {error.timeout:g} s) and its outcome is "
            "unknown: the model is shown the text above"
        )
        return ExitCode.UNKNOWN
    cause = error.__cause__
    if isinstance(cause, InputValidationError):
        say(
            f"the input validator of {name!r} raised {type(cause.cause).__name__}; "
            "the model is shown only the generic text above"
        )
        return ExitCode.FAILED
    behind = f" (caused by {type(cause).__name__})" if cause is not None else ""
    say(f"the call raised {type(error).__name__}{behind}; the model is shown only the generic text above")
    return ExitCode.FAILED


def _is_json_object(arguments: str | bytes) -> bool:
    """Whether `arguments` are a JSON object, or nothing (read as ``{}``)."""
    if is_blank(arguments):
        return True
    try:
        return is_object(loads_exact(arguments if isinstance(arguments, bytes) else arguments.encode()))
    except ValueError:
        return False


def _pending(call: _Call, arguments: str, request: InputRequest) -> int:
    document = {
        "tool": call.name,
        "arguments": arguments,
        "idempotency_key": call.key,
        "input_request": loads_exact(request.to_json()),
    }
    stdout().write(dump_json(document) + "\n")
    say(
        'the tool asks for input: save the JSON above to a file, add a "response" member holding the answer, '
        "then run: scopetool call TARGET --continuation FILE"
    )
    return ExitCode.INPUT_REQUESTED


def _show_progress(progress: Progress) -> None:
    total = f"/{progress.total:g}" if progress.total else ""
    message = f" {one_line(progress.message)}" if progress.message else ""
    sys.stderr.write(f"progress: {progress.completed:g}{total}{message}\n")


def _text(output: Output) -> str:
    """What the model is shown of an output: its text (or details JSON); media are named."""
    text = output.text()
    if text is not None:
        return text
    return "".join(block.text if isinstance(block, TextBlock) else _media(block) for block in output.content)


def _media(block: MediaBlock) -> str:
    where = f"{len(block.data)} bytes" if block.data is not None else block.uri or block.reference
    return f"[{block.mime_type} media: {where}]"
