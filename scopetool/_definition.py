"""`Effect` and `Definition`: what a tool promises and what the model is shown."""

from __future__ import annotations

import math
import re
from enum import StrEnum
from typing import Any, Final, cast, final

import jiter

from ._errors import InvalidDefinitionError
from ._json import canonical_json, is_array, is_object, loads_exact

__all__ = ["NAME_PATTERN", "Definition", "Effect"]

NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Every tool name fully matches this: ASCII letters, digits, ``_`` and ``-``, 1 to 64 characters."""


class Effect(StrEnum):
    """A replay promise, independent of concurrency and of any one call's outcome.

    Absent (None) means no promise: a driver must not run the call twice.
    """

    SAFE = "safe"
    """The call requests no change to application state; replaying it is harmless."""
    IDEMPOTENT = "idempotent"
    """Repeats under the same nonzero `IdempotencyKey` are deduplicated durably by the backend."""

    @property
    def replayable(self) -> bool:
        """Whether a driver may run the same logical call again (true for both promises)."""
        return True


@final
class Definition:
    """A frozen, detached wire snapshot of a tool: name, description, schemas and effect.

    The schemas are stored once in canonical JSON (compact, members in RFC 8785 order, numbers as
    written). Each accessor returns a fresh copy, so changing what you got never changes the tool.

    Example:
        ```python
        from scopetool import Definition

        d = Definition(name="add", input_schema={"type": "object", "properties": {"a": {"type": "integer"}}})
        print(d.input_schema_json.decode())
        #> {"properties":{"a":{"type":"integer"}},"type":"object"}
        ```
    """

    __slots__ = ("_description", "_effect", "_input_schema", "_name", "_output_schema")

    def __init__(
        self,
        *,
        name: str,
        input_schema: dict[str, Any] | str | bytes,
        description: str = "",
        output_schema: dict[str, Any] | bool | str | bytes | None = None,
        effect: Effect | None = None,
    ) -> None:
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise InvalidDefinitionError(f"name {name!r} must match ^[A-Za-z0-9_-]{{1,64}}$")
        if not isinstance(description, str):
            raise InvalidDefinitionError(f"description must be str, not {type(description).__name__}")
        if effect is not None and not isinstance(effect, Effect):
            raise InvalidDefinitionError(f"effect must be an Effect or None, not {effect!r}")
        schema = _canonical_schema(input_schema, "input schema")
        if not schema.startswith(b"{") or loads_exact(schema).get("type") != "object":
            raise InvalidDefinitionError('input schema must be a JSON object whose "type" is "object"')
        self._name = name
        self._description = description
        self._input_schema = schema
        self._output_schema = None if output_schema is None else _canonical_schema(output_schema, "output schema")
        self._effect = effect

    @property
    def name(self) -> str:
        """The tool's name, unique within a registry."""
        return self._name

    @property
    def description(self) -> str:
        """Free text that tells the model what the tool does."""
        return self._description

    @property
    def effect(self) -> Effect | None:
        """The tool's replay promise, or None for no promise."""
        return self._effect

    @property
    def input_schema(self) -> dict[str, Any]:
        """A fresh copy of the input JSON Schema (an object schema)."""
        value: dict[str, Any] = jiter.from_json(self._input_schema)
        return value

    @property
    def input_schema_json(self) -> bytes:
        """The input schema in canonical JSON, exactly the bytes the contract enforces."""
        return self._input_schema

    @property
    def output_schema(self) -> dict[str, Any] | bool | None:
        """A fresh copy of the output JSON Schema for `Output.details`, or None when undeclared."""
        return None if self._output_schema is None else jiter.from_json(self._output_schema)

    @property
    def output_schema_json(self) -> bytes | None:
        """The output schema in canonical JSON, or None."""
        return self._output_schema

    def to_dict(self) -> dict[str, Any]:
        """A fresh JSON-ready dict of the definition; empty description and absent schema or effect are left out."""
        data: dict[str, Any] = {"name": self._name}
        if self._description:
            data["description"] = self._description
        data["input_schema"] = self.input_schema
        if self._output_schema is not None:
            data["output_schema"] = self.output_schema
        if self._effect is not None:
            data["effect"] = self._effect.value
        return data

    def to_json(self) -> bytes:
        """The definition as one canonical JSON document (schema numbers kept as written)."""
        data = self.to_dict()
        data["input_schema"] = loads_exact(self._input_schema)
        if self._output_schema is not None:
            data["output_schema"] = loads_exact(self._output_schema)
        return canonical_json(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Definition:
        """Rebuild a definition from `to_dict` output; unknown members are rejected."""
        if not isinstance(data, dict):
            raise InvalidDefinitionError(f"a definition must be a JSON object, not {type(data).__name__}")
        unknown = sorted(set(data) - {"name", "description", "input_schema", "output_schema", "effect"})
        if unknown:
            raise InvalidDefinitionError(f"unknown definition members: {', '.join(unknown)}")
        if "name" not in data or "input_schema" not in data:
            raise InvalidDefinitionError("a definition needs name and input_schema")
        effect = data.get("effect")
        try:
            parsed_effect = None if effect is None else Effect(effect)
        except ValueError:
            raise InvalidDefinitionError(f"unknown effect {effect!r}; expected 'safe' or 'idempotent'") from None
        return cls(
            name=data["name"],
            description=data.get("description", ""),
            input_schema=data["input_schema"],
            output_schema=data.get("output_schema"),
            effect=parsed_effect,
        )

    @classmethod
    def from_json(cls, raw: str | bytes) -> Definition:
        """Parse `to_json` output (strict RFC 7493 JSON)."""
        try:
            data = loads_exact(raw.encode("utf-8") if isinstance(raw, str) else raw)
        except (ValueError, UnicodeEncodeError) as error:
            raise InvalidDefinitionError(f"a definition must be one RFC 7493 JSON document: {error}") from None
        return cls.from_dict(data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Definition):
            return NotImplemented
        return (self._name, self._description, self._input_schema, self._output_schema, self._effect) == (
            other._name,
            other._description,
            other._input_schema,
            other._output_schema,
            other._effect,
        )

    def __hash__(self) -> int:
        return hash((self._name, self._input_schema))

    def __repr__(self) -> str:
        effect = f", effect={self._effect.name}" if self._effect else ""
        return f"Definition(name={self._name!r}{effect})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Definition.from_json, (self.to_json(),))


def _canonical_schema(schema: object, what: str) -> bytes:
    if isinstance(schema, dict | bool):
        if not _finite(schema):
            raise InvalidDefinitionError(f"{what} holds a number beyond a double's range; numbers must be finite")
        try:
            return canonical_json(schema)
        except (TypeError, ValueError) as error:
            raise InvalidDefinitionError(f"{what} is not JSON: {error}") from None
    if isinstance(schema, str):
        raw = schema.encode("utf-8", "surrogatepass")
    elif isinstance(schema, bytes | bytearray | memoryview):
        raw = bytes(cast("bytes | bytearray | memoryview[int]", schema))  # isinstance cannot name the item type
    else:
        raise InvalidDefinitionError(f"{what} must be a dict or JSON text, not {type(schema).__name__}")
    try:
        value = loads_exact(raw)
    except ValueError as error:
        raise InvalidDefinitionError(f"{what} is not one RFC 7493 JSON document: {error}") from None
    if not isinstance(value, dict | bool):
        raise InvalidDefinitionError(f"{what} must be a JSON object or boolean schema")
    if not _finite(value):
        raise InvalidDefinitionError(f"{what} holds a number beyond a double's range; numbers must be finite")
    return canonical_json(value)


def _finite(value: Any) -> bool:
    if is_object(value):
        return all(_finite(member) for member in value.values())
    if is_array(value):
        return all(_finite(item) for item in value)
    if isinstance(value, jiter.LosslessFloat | float):
        return math.isfinite(float(value))
    return True
