"""A client's message checked as I-JSON (RFC 7493) before the SDK parses it: `screen`, for the stdio and HTTP servers.

The SDK would collapse a repeated member name on its way to ``Contract.prepare``; `screen` reads the
raw bytes first and says what passes (`Passed`), what is answered with a JSON-RPC error, and which
``tools/call`` arguments travel as their exact text (`RawArguments`, under `ARGUMENTS` in an HTTP
request's scope) to be rejected by the call's own contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, final

from mcp import types as mcp_types
from mcp.shared.message import SessionMessage

from .._json import is_object, member_spans, parse_lenient, syntax_problem, value_span

__all__ = ["ARGUMENTS", "BLANK", "LIMITED", "Passed", "RawArguments", "invalid", "screen"]

ARGUMENTS: Final = "scopetool.raw_arguments"
"""The ASGI scope key holding a ``tools/call``'s exact arguments, where they broke I-JSON."""
LIMITED: Final = "scopetool.limited"
"""The ASGI scope key set (True) on a ``tools/call`` the HTTP transport already counted against the limits."""
BLANK: Final = b" \t\r\n"


@final
@dataclass(frozen=True, slots=True)
class RawArguments:
    """The exact text of a ``tools/call`` request's arguments, for a request whose arguments break I-JSON.

    The SDK would parse them and the server re-encode them, hiding a repeated member name; this
    carries them to `Contract.prepare` as the client sent them (as the request's transport context).
    """

    text: bytes


@final
@dataclass(frozen=True, slots=True)
class Passed:
    """A message that is I-JSON, as the SDK may read it, and the exact arguments it had, if they were not."""

    text: bytes
    value: object
    arguments: RawArguments | None


def screen(raw: bytes) -> Passed | tuple[SessionMessage | None, SessionMessage | None]:
    """A message checked as I-JSON, before the SDK (which would collapse a repeated name) reads it.

    I-JSON (RFC 7493): no repeated member name at any depth, no lone surrogate, no NaN or Infinity,
    no number beyond a double. Stdio lines and HTTP request bodies are screened alike:

    * not JSON at all: a ``-32700`` parse error (id null) for the client;
    * a ``tools/call`` request that breaks I-JSON inside its ``arguments`` only: passed with ``{}`` as
      the arguments and their exact text beside, for `Contract.prepare`, whose rejection is the
      call's ``isError`` result;
    * anything else that breaks I-JSON: a ``-32600`` invalid request, with the request's id when it
      is one unique string or integer (null otherwise); a response the client sends (the answer to
      an elicitation) becomes that error for the server instead, so the server's request ends as
      unanswered.

    Returns:
        The message that passed, or the (message for the server, error for the client) pair.
    """
    try:
        value, problem = parse_lenient(raw)
    except ValueError as error:
        return None, _jsonrpc_error(None, mcp_types.PARSE_ERROR, f"Parse error: {error}")
    if problem is None:
        return Passed(raw, value, None)
    span = _arguments_span(raw, value)
    if span is None:
        return invalid(raw, value, f"the message is not I-JSON (RFC 7493): {problem.message}")
    start, end = span
    return Passed(raw[:start] + b"{}" + raw[end:], value, RawArguments(raw[start:end]))


def _arguments_span(raw: bytes, value: object) -> tuple[int, int] | None:
    """Where the arguments of a ``tools/call`` request are, when they hold every I-JSON problem of the line."""
    if not is_object(value) or value.get("method") != "tools/call":
        return None
    params = value.get("params")
    if not is_object(params) or "arguments" not in params:
        return None
    span = value_span(raw, ("params", "arguments"))
    if span is None:  # pragma: no cover - the member was parsed from this very line
        return None
    start, end = span
    return span if syntax_problem(raw[:start] + b"{}" + raw[end:], require_object=False) is None else None


def invalid(raw: bytes, value: object, why: str) -> tuple[SessionMessage | None, SessionMessage | None]:
    """A ``-32600`` for a message that cannot be read: to the client, or to the server for a response."""
    request_id = _unique_id(raw, value)
    error = _jsonrpc_error(request_id, mcp_types.INVALID_REQUEST, f"Invalid request: {why}")
    if (
        request_id is not None
        and is_object(value)
        and "method" not in value
        and ("result" in value or "error" in value)
    ):
        return error, None
    return None, error


def _unique_id(raw: bytes, value: object) -> mcp_types.RequestId | None:
    """The message's id when it has exactly one, a strict string or integer; None otherwise."""
    if not is_object(value):
        return None
    spans = member_spans(raw, "id")
    if len(spans) != 1:
        return None
    start, end = spans[0]
    text = raw[start:end]
    if syntax_problem(text, require_object=False) is not None:
        return None
    found = value["id"]
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def _jsonrpc_error(request_id: mcp_types.RequestId | None, code: int, message: str) -> SessionMessage:
    return SessionMessage(
        mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(code=code, message=message))
    )
