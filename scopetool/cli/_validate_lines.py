"""One logged tool call line admitted, never run, and the report of many (`scopetool validate`'s checking).

`LineChecker` reads a line in its format (neutral or a provider's tool call item, recognised on its own
with ``--format auto``), checks it as I-JSON, and admits its arguments through `Contract.prepare`,
deciding the common neutral line from its bytes where it can; `validate_lines` writes the report of
the lines not admitted and counts them (`Tally`). Reading the file, the progress bar and ``--jobs`` are
`scopetool.cli._validate`'s.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, TextIO, final

from pydantic_core import ValidationError

from .._contract import Request
from .._errors import InvalidInvocationError
from .._json import MAX_INPUT_BYTES, is_object, parse_lenient, syntax_problem, value_span
from .._registry import Registry
from .._rejection import InputRejection, classify_input_rejection
from ..providers import Export, ProviderError, ToolCall, UnknownToolError, outcome_output
from ..providers._common import callable_names
from ._common import PROVIDERS, export_tools, provider_function

__all__ = [
    "BLANK",
    "FORMATS",
    "LINE_LIMIT",
    "LineChecker",
    "UNREADABLE",
    "Tally",
    "Verdict",
    "printable",
    "reasons",
    "validate_lines",
]

FORMATS: Final = ("auto", "neutral", *PROVIDERS)
"""The values of ``--format``."""
LINE_LIMIT: Final = 8 * MAX_INPUT_BYTES
"""The longest line read, newline included (8 MiB); a longer one is unreadable and skipped in bounded memory."""

_WS: Final = rb"[ \t\r\n]*+"
_ASCII_PLAIN: Final = rb'"[ !#-\[\]-~]*+"'  # printable ASCII without escapes: no decoding needed, nothing to check
# The common neutral line, read from its bytes: an optional "id" (printable ASCII, no escapes), the
# "name" (a tool name's characters), then one "arguments" object. The object's text runs to the line's
# last "}" but one; it stands for exactly the arguments when it is one JSON document (`Contract.prepare`
# admits it as one, or it parses as one), which is the only case this path decides. The envelope
# around it then holds no escape, no repeated name and nothing but ASCII, so the line is strict
# I-JSON exactly when the arguments are, and the arguments' text is exactly what is admitted. (The
# possessive quantifiers stop where the pattern would anyway: they only spare the matcher its bookkeeping.)
_FAST: Final = re.compile(
    _WS
    + rb"\{"
    + _WS
    + rb'(?:"id"'
    + _WS
    + b":"
    + _WS
    + _ASCII_PLAIN
    + _WS
    + b","
    + _WS
    + rb")?"
    + rb'"name"'
    + _WS
    + b":"
    + _WS
    + rb'"([A-Za-z0-9_-]{1,64}+)"'
    + _WS
    + b","
    + _WS
    + rb'"arguments"'
    + _WS
    + b":"
    + _WS
    + rb"(\{.*\})"
    + _WS
    + rb"\}"
    + _WS,
    re.S,
)
_UNKNOWN_CACHE: Final = 1024
"""The most verdicts (on unknown tools, on rejections) and rendered reports kept for reuse, one per message."""
_JSON_SPACE: Final = b" \t\r\n"
_NEUTRAL_MEMBERS: Final = frozenset({"name", "arguments", "id"})
_ABSENT: Final = object()
_CONTROL: Final = {code: f"\\x{code:02x}" for code in [*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}

_REASONS: Final = tuple(
    (re.compile(pattern), label)
    for pattern, label in (
        (r": missing required field$", "missing field"),
        (r": unknown field", "unknown field"),
        (r"the same member name twice", "duplicate member"),
        (r"it looks truncated$", "truncated JSON"),
        (r"^the arguments must be a JSON object, not", "not an object"),
        (r"NaN and Infinity are not JSON numbers|too large for a double|a number is out of range", "non-finite number"),
        (r"an integer a double cannot hold exactly", "inexact integer"),
        (r"; the limit is \d+ bytes$", "too large"),
        (r"not valid JSON|more after the JSON document|invalid escape|invalid UTF-8|lone surrogate", "not JSON"),
        (r"Input should be a valid (?:integer|number|string|boolean|list|array|dictionary|object)\b", "wrong type"),
        (r"\(got [^()]*\)$", "wrong type"),
        (r": expected (?:null|boolean|object|array|number|string|integer)(?: or [a-z]+)*$", "wrong type"),
    )
)
UNREADABLE: Final = "unreadable line"
"""The reason of a line that is not a tool call scopetool can read."""


@final
@dataclass(frozen=True, slots=True)
class Verdict:
    """Why one line was not admitted."""

    label: str
    """What the report shows in the tool column: the tool's name (made printable) or ``unreadable``."""
    message: str
    """The message the model would get, or what is wrong with an unreadable line."""
    reasons: tuple[str, ...]
    """Stable reason labels, such as ``missing field`` or ``unknown tool``."""
    tool: str | None = None
    """The registered tool the call named, or None (an unknown tool, an unreadable line)."""


BLANK: Final = Verdict("", "", ())
"""The verdict on a blank line: skipped, and not counted as a call."""


class _UnreadableError(Exception):
    """The line is not a tool call that can be read; the message says why."""


_UNREADABLE_REASONS: Final = (UNREADABLE,)


def _unreadable(why: str) -> Verdict:
    return Verdict("unreadable", why, _UNREADABLE_REASONS)


_TOO_LONG: Final = _unreadable(f"the line is over {LINE_LIMIT} bytes")


_UNDECIDED: Final = Verdict("", "", ())
"""What the fast path returns when the line is not its to decide."""


@final
class LineChecker:
    """Admits one line of a tool-call log against a registry, never running anything."""

    __slots__ = (
        "_contracts",
        "_exports",
        "_fast",
        "_format",
        "_parsers",
        "_registry",
        "_rejections",
        "_resolve",
        "_unknown",
    )

    def __init__(self, registry: Registry, line_format: str = "auto") -> None:
        if line_format not in FORMATS:
            raise ValueError(f"unknown format {line_format!r}")
        self._registry = registry
        self._resolve = registry.resolve
        # Tool names are ASCII without escapes, so a name's bytes in a line are the name itself.
        self._contracts: dict[bytes, tuple[Callable[[Request], object], str]] = {
            b.name.encode(): (b.contract.prepare, b.name) for b in registry
        }
        self._unknown: dict[str, Verdict] = {}
        self._rejections: dict[tuple[str, str], Verdict] = {}  # by tool and message
        self._format = line_format
        self._fast = line_format in ("auto", "neutral")
        self._exports: dict[str, Export | None] = {}
        self._parsers: dict[str, Callable[..., list[ToolCall]]] = {}

    def check(self, raw: bytes) -> Verdict | None:
        """None when the line's call is admitted, `BLANK` for a blank line, otherwise why it is not admitted."""
        if self._fast:
            match = _FAST.fullmatch(raw)
            if match is not None:
                arguments: bytes = match[2]
                tool = self._contracts.get(match[1])
                if tool is None:
                    verdict = self._fast_unknown(match[1], arguments)
                else:
                    prepare, name = tool
                    try:
                        prepare(Request(name, arguments))
                    except InvalidInvocationError as error:
                        verdict = self._fast_rejected(name, arguments, error)
                    else:
                        return None
                if verdict is not _UNDECIDED:
                    return verdict
        try:
            return self._checked(raw)
        except _UnreadableError as error:
            return _unreadable(str(error))

    def _fast_unknown(self, name: bytes, arguments: bytes) -> Verdict:
        """The verdict on a line naming no registered tool; `_UNDECIDED` unless its arguments are one document."""
        if syntax_problem(arguments, require_object=False, finite=False) is not None:
            return _UNDECIDED
        return self._unknown_tool(name.decode("ascii"))

    def _checked(self, raw: bytes) -> Verdict | None:
        if not raw.strip(_JSON_SPACE):
            return BLANK
        try:
            item, problem = parse_lenient(raw)
        except ValueError as error:
            raise _UnreadableError(str(error)) from None
        if not is_object(item):
            raise _UnreadableError("not a JSON object")
        line_format, path = self._shape(item)
        value = _get(item, path)
        if problem is None:
            if line_format == "neutral":
                return self._admit(Request(name=item["name"], arguments=_neutral_arguments(raw, path, value)))
            return self._admit(self._call(line_format, item).request)
        # The line breaks I-JSON: the call's rejection when the problem is inside its arguments only.
        if value is _ABSENT:
            raise _UnreadableError(f"not strict JSON: {problem.message}")
        start, end = _span(raw, path)
        outside = syntax_problem(raw[:start] + b"null" + raw[end:], require_object=False)
        if outside is not None:
            raise _UnreadableError(f"not strict JSON outside the arguments: {outside.message}")
        arguments = value if isinstance(value, str) else raw[start:end]
        if line_format == "neutral":
            name: str = item["name"]
        else:
            name = self._call(line_format, _replaced(item, path)).name
        return self._admit(Request(name=name, arguments=arguments))

    def _shape(self, item: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        """The line's format and the path of its arguments member."""
        line_format = _detect(item) if self._format == "auto" else self._format
        if line_format == "neutral":
            if not isinstance(item.get("name"), str):
                raise _UnreadableError('a neutral line needs a "name" string')
            unknown = sorted(set(item) - _NEUTRAL_MEMBERS)
            if unknown:
                raise _UnreadableError(
                    f"unknown member {json.dumps(unknown[0])[:80]}: a neutral line has name, arguments and id"
                )
            return line_format, ("arguments",)
        if line_format == "gemini":
            return line_format, ("functionCall" if "functionCall" in item else "function_call", "args")
        if line_format == "mcp":
            jsonrpc = any(key in item for key in ("jsonrpc", "method", "id"))
            return line_format, ("params", "arguments") if jsonrpc else ("arguments",)
        return line_format, _PATHS[line_format]

    def _call(self, line_format: str, item: dict[str, Any]) -> ToolCall:
        parse = self._parsers.get(line_format)
        if parse is None:
            parse = self._parsers[line_format] = provider_function(line_format, "parse_tool_calls")
        try:
            calls = parse(item if line_format == "mcp" else [item], self._export(line_format))
        except ProviderError as error:
            raise _UnreadableError(f"not a tool call of {line_format}: {error}") from None
        if len(calls) != 1:
            raise _UnreadableError(f"not a tool call of {line_format}")
        return calls[0]

    def _export(self, provider: str) -> Export | None:
        if provider not in self._exports:
            try:
                self._exports[provider] = export_tools(provider, self._registry)
            except ProviderError:
                self._exports[provider] = None  # a tool the provider refuses: its calls are read without repairs
        return self._exports[provider]

    def _admit(self, request: Request) -> Verdict | None:
        binding = self._resolve(request.name)
        if binding is None:
            return self._unknown_tool(request.name)
        try:
            binding.contract.prepare(request)
        except InvalidInvocationError as error:
            return self._rejected(binding.name, error, error.__cause__)
        return None

    def _fast_rejected(self, name: str, arguments: bytes, error: InvalidInvocationError) -> Verdict:
        """The verdict on a common neutral line prepare rejected; `_UNDECIDED` unless its arguments are one document.

        Arguments that do not parse may be more than the arguments member (or break I-JSON): the full
        reading decides those. A rejection that describes pydantic's errors (its cause is pydantic's
        `ValidationError`) says they parse: `Contract.prepare` describes them only once the arguments
        have parsed as one I-JSON document, as they are checked here, so they are not parsed again.
        """
        cause = error.__cause__
        if not (isinstance(cause, InputRejection) and isinstance(cause.cause, ValidationError)) and (
            syntax_problem(arguments, require_object=False, finite=False) is not None
        ):
            return _UNDECIDED
        return self._rejected(name, error, cause)

    def _rejected(self, name: str, error: InvalidInvocationError, cause: BaseException | None) -> Verdict:
        """The verdict on a call `Contract.prepare` rejected with `error`, whose `__cause__` is `cause`.

        A rejection of prepare's carries its `InputRejection` as its cause, so the general classification
        (`classify_input_rejection`) is needed only for any other error. Every call rejected with one
        message gets the same verdict.
        """
        rejection = cause if isinstance(cause, InputRejection) else classify_input_rejection(error)
        if rejection is None:
            output, _ = outcome_output(name, error)
            message = f"the tool's input validator is defective; the model is shown: {output.text()}"
            return Verdict(name, message, ("validator defect",), name)
        key = (name, rejection.message)
        verdict = self._rejections.get(key)
        if verdict is None:
            verdict = Verdict(name, rejection.message, reasons(rejection.message, name), name)
            if len(self._rejections) < _UNKNOWN_CACHE:
                self._rejections[key] = verdict
        return verdict

    def _unknown_tool(self, name: str) -> Verdict:
        """The verdict on a call of a tool the registry does not hold (the same for every call of one name)."""
        verdict = self._unknown.get(name)
        if verdict is None:
            output, _ = outcome_output(name, UnknownToolError(name, callable_names(self._registry)))
            verdict = Verdict(printable(name[:80]), str(output.text()), ("unknown tool",))
            if len(self._unknown) < _UNKNOWN_CACHE:
                self._unknown[name] = verdict
        return verdict


_PATHS: Final = {
    "openai_chat": ("function", "arguments"),
    "mistral": ("function", "arguments"),
    "ollama": ("function", "arguments"),
    "openai_responses": ("arguments",),
    "anthropic": ("input",),
    "bedrock": ("toolUse", "input"),
}


def _detect(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind == "function_call":
        return "openai_responses"
    if kind == "tool_use":
        return "anthropic"
    if "toolUse" in item:
        return "bedrock"
    if "functionCall" in item or "function_call" in item:
        return "gemini"
    if "jsonrpc" in item or "method" in item:
        return "mcp"
    if "function" in item:
        return "openai_chat"
    if "name" in item:
        return "neutral"
    raise _UnreadableError('not a tool call: expected {"name": ..., "arguments": ...} or a provider\'s tool call item')


def _get(item: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = item
    for key in path:
        if not is_object(node) or key not in node:
            return _ABSENT
        node = node[key]
    return node


def _replaced(item: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """A copy of `item` whose arguments (at `path`, which is present) are ``{}``."""
    copy = dict(item)
    if len(path) == 1:
        copy[path[0]] = {}
    else:
        copy[path[0]] = _replaced(item[path[0]], path[1:])
    return copy


def _neutral_arguments(raw: bytes, path: tuple[str, ...], value: object) -> str | bytes:
    if value is _ABSENT or value is None:
        return ""
    if isinstance(value, str):
        return value
    start, end = _span(raw, path)
    return raw[start:end]


def _span(raw: bytes, path: tuple[str, ...]) -> tuple[int, int]:
    """Where the value at `path` (present in the parsed line) is in `raw`: the last of a repeated name."""
    span = value_span(raw, path)
    if span is None:  # pragma: no cover - the member was parsed from this very line
        raise _UnreadableError("the arguments cannot be located in the line")
    return span


@functools.lru_cache(maxsize=_UNKNOWN_CACHE)
def reasons(message: str, tool: str) -> tuple[str, ...]:
    """The reason labels of a rejection message written by `Contract.prepare` for `tool`.

    A message that is not the contract's problem list is the tool's own rule (an `InputRejection`
    raised by its validator).
    """
    if not message.startswith(f"invalid arguments for tool {tool!r} ("):
        return ("tool's own rule",)
    found: dict[str, None] = {}
    for line in message.split("\n")[1:]:
        problem = line[2:]
        if problem.startswith("... and "):
            continue
        label = next((label for pattern, label in _REASONS if pattern.search(problem)), "invalid value")
        found[label] = None
    return tuple(found)


def printable(text: str) -> str:
    r"""`text` with control characters other than tabs and line breaks written as ``\xNN`` escapes."""
    return text.translate(_CONTROL)


@dataclass(slots=True)
class Tally:
    """What a run of `validate_lines` found."""

    lines: int = 0
    """Lines read, blank ones included."""
    blank: int = 0
    """Blank lines (skipped)."""
    rejected: int = 0
    """Lines whose call was not admitted."""
    unreadable: int = 0
    """Lines that are not a tool call that can be read."""
    by_tool: Counter[str] = field(default_factory=Counter[str])
    """Rejected lines by registered tool (unknown tools together, under ``(unknown tools)``)."""
    by_reason: Counter[str] = field(default_factory=Counter[str])
    """Rejected and unreadable lines by reason; a line with several reasons counts under each."""

    @property
    def calls(self) -> int:
        """Lines that are not blank."""
        return self.lines - self.blank

    @property
    def admitted(self) -> int:
        """Lines whose call was admitted."""
        return self.calls - self.rejected - self.unreadable

    def summary(self) -> str:
        """The summary printed after the report."""
        lines = [
            f"{self.calls} calls: {self.admitted} admitted, {self.rejected} rejected, {self.unreadable} unreadable"
        ]
        for title, counter in (("rejected, by tool:", self.by_tool), ("by reason:", self.by_reason)):
            if counter:
                lines.append(title)
                lines.extend(f"  {name}: {count}" for name, count in sorted(counter.items(), key=_by_count))
        return "\n".join(lines)


def _by_count(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def validate_lines(
    lines: Iterable[bytes | None],
    checker: LineChecker,
    out: TextIO,
    before_write: Callable[[], None] | None = None,
    *,
    start: int = 1,
) -> Tally:
    """Check every line (None stands for an over-long one), write each one not admitted to `out`, and count.

    Lines are numbered from `start` in the report (a part of a longer file starts at its own first line).
    """
    tally = Tally()
    by_tool, by_reason = tally.by_tool, tally.by_reason
    check = checker.check
    rendered: dict[tuple[str, str], str] = {}  # a verdict's report, by its label and message, after the line number
    number = start - 1
    for number, raw in enumerate(lines, start):
        verdict = _TOO_LONG if raw is None else check(raw)
        if verdict is None:
            continue
        if verdict is BLANK:
            tally.blank += 1
            continue
        reasons = verdict.reasons
        if reasons == _UNREADABLE_REASONS:
            tally.unreadable += 1
        else:
            tally.rejected += 1
            by_tool[verdict.tool or "(unknown tools)"] += 1
        for reason in reasons:
            by_reason[reason] += 1
        if before_write is not None:
            before_write()
        key = (verdict.label, verdict.message)
        report = rendered.get(key)
        if report is None:
            first, *rest = printable(verdict.message).split("\n")
            report = f": {verdict.label}: {first}\n" + "".join(f"    {line}\n" for line in rest)
            if len(rendered) < _UNKNOWN_CACHE:
                rendered[key] = report
        out.write(f"{number}{report}")
    tally.lines = number - start + 1
    return tally
