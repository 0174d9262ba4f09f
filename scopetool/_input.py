"""Input requests and continuations: a tool asks the driver for external input, then resumes."""

from __future__ import annotations

import json
from typing import Any, final

import jiter

from ._errors import ScopetoolError
from ._feedback import describe_schema_errors
from ._json import MAX_INPUT_BYTES, canonical_json, is_object, loads_exact, syntax_problem
from ._schema import compile_schema

__all__ = ["Continuation", "InputRequest", "InvalidInputRequestError"]


class InvalidInputRequestError(ScopetoolError, ValueError):
    """An input request, or an answer to one, breaks its rules."""


def _json_value(value: Any, what: str) -> bytes:
    """Canonical exact bytes for a JSON value given as Python data, at most MAX_INPUT_BYTES."""
    try:
        data = canonical_json(value)
    except (TypeError, ValueError) as problem:
        raise InvalidInputRequestError(f"{what}: not a JSON value: {problem}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise InvalidInputRequestError(f"{what}: {len(data)} bytes exceeds the {MAX_INPUT_BYTES}-byte limit")
    return data


def _plain(data: bytes) -> Any:
    """A fresh Python copy of stored JSON: integers exact, other numbers as floats."""
    return jiter.from_json(data)


def _raw_value(raw: str | bytes, what: str) -> Any:
    if isinstance(raw, str):
        data = raw.encode("utf-8", "surrogatepass")
    elif isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(raw)
    else:
        raise InvalidInputRequestError(f"{what}: expected JSON text (str or bytes), not {type(raw).__name__}")
    if len(data) > MAX_INPUT_BYTES:
        raise InvalidInputRequestError(f"{what}: {len(data)} bytes exceeds the {MAX_INPUT_BYTES}-byte limit")
    problem = syntax_problem(data, require_object=False)
    if problem is not None:
        raise InvalidInputRequestError(f"{what}: not one RFC 7493 JSON document: {problem.message}")
    return loads_exact(data)


@final
class Continuation:
    """The frozen checkpoint and validated answer for one logical call, passed back through `Admission`."""

    __slots__ = ("_response", "_state")

    def __init__(self, *, state: bytes, response: bytes, _token: object = None) -> None:
        if _token is not _MINT:
            raise TypeError("a Continuation is made by InputRequest.continuation(response)")
        self._state = state
        self._response = response

    @property
    def state(self) -> Any:
        """A fresh copy of the tool's checkpoint state."""
        return _plain(self._state)

    @property
    def state_json(self) -> bytes:
        """The checkpoint state as canonical JSON."""
        return self._state

    @property
    def response(self) -> Any:
        """A fresh copy of the validated answer."""
        return _plain(self._response)

    @property
    def response_json(self) -> bytes:
        """The validated answer as canonical JSON."""
        return self._response

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Continuation):
            return NotImplemented
        return (self._state, self._response) == (other._state, other._response)

    def __hash__(self) -> int:
        return hash((self._state, self._response))

    def __repr__(self) -> str:
        return f"Continuation(state={len(self._state)} bytes, response={len(self._response)} bytes)"


_MINT = object()


@final
class InputRequest:
    """A tool's request for external input: a prompt, the answer's JSON Schema and the tool's checkpoint.

    Every value is JSON (I-JSON, at most `MAX_INPUT_BYTES` each, integers exact).

    Example:
        ```python
        from scopetool import InputRequest

        request = InputRequest(prompt="Approve the write?", response_schema={"type": "boolean"},
                               continuation_state={"record": "draft"})
        continuation = request.continuation(True)
        print(continuation.state, continuation.response)
        #> {'record': 'draft'} True
        ```
    """

    __slots__ = ("_prompt", "_schema", "_state", "_validator")

    def __init__(self, *, prompt: Any, response_schema: dict[str, Any] | bool, continuation_state: Any = None) -> None:
        self._prompt = _json_value(prompt, "prompt")
        if not isinstance(response_schema, dict | bool):
            raise InvalidInputRequestError("response_schema must be a JSON Schema (an object or a boolean)")
        self._schema = _json_value(response_schema, "response_schema")
        self._state = _json_value(continuation_state, "continuation_state")
        self._validator = compile_schema(json.loads(self._schema), "response_schema", InvalidInputRequestError)

    @property
    def prompt(self) -> Any:
        """A fresh copy of the prompt for whoever answers."""
        return _plain(self._prompt)

    @property
    def response_schema(self) -> Any:
        """A fresh copy of the JSON Schema an answer must satisfy."""
        return _plain(self._schema)

    @property
    def continuation_state(self) -> Any:
        """A fresh copy of the tool's checkpoint, returned only to the same call."""
        return _plain(self._state)

    def continuation(self, response: Any) -> Continuation:
        """Validate an answer (Python data) against the response schema and freeze it with the state."""
        data = _json_value(response, "response")
        return self._continue(data)

    def continuation_from_json(self, raw: str | bytes) -> Continuation:
        """Like `continuation`, for an answer given as JSON text (strict RFC 7493, at most 1 MiB)."""
        return self._continue(canonical_json(_raw_value(raw, "response")))

    def _continue(self, data: bytes) -> Continuation:
        value = jiter.from_json(data, float_mode="decimal")  # exact: the schema compares numbers exactly
        if not self._validator.is_valid(value):
            problems = describe_schema_errors(self._validator.iter_errors(value), json.loads(self._schema))
            raise InvalidInputRequestError("response does not satisfy the response schema: " + "; ".join(problems))
        return Continuation(state=self._state, response=data, _token=_MINT)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with exactly prompt, response_schema and continuation_state."""
        return {
            "prompt": self.prompt,
            "response_schema": self.response_schema,
            "continuation_state": self.continuation_state,
        }

    def to_json(self) -> bytes:
        """The request as one canonical JSON document, for a driver to persist."""
        return canonical_json(
            {
                "continuation_state": loads_exact(self._state),
                "prompt": loads_exact(self._prompt),
                "response_schema": loads_exact(self._schema),
            }
        )

    @classmethod
    def from_json(cls, raw: str | bytes) -> InputRequest:
        """Rebuild a persisted request; unknown members are rejected."""
        value = _raw_value(raw, "input request")
        if not is_object(value):
            raise InvalidInputRequestError("an input request must be a JSON object")
        unknown = sorted(set(value) - {"prompt", "response_schema", "continuation_state"})
        if unknown or "prompt" not in value or "response_schema" not in value:
            raise InvalidInputRequestError(
                "an input request has exactly prompt, response_schema and continuation_state"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            )
        return cls(
            prompt=value["prompt"],
            response_schema=value["response_schema"],
            continuation_state=value.get("continuation_state"),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InputRequest):
            return NotImplemented
        return (self._prompt, self._schema, self._state) == (other._prompt, other._schema, other._state)

    def __hash__(self) -> int:
        return hash((self._prompt, self._schema, self._state))

    def __repr__(self) -> str:
        return f"InputRequest(prompt={self._prompt.decode()[:60]!r})"
