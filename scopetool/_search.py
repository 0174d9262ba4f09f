"""Searching a catalog of tool definitions: `ToolIndex`.

A first, plain ranking (query words found in a tool's name, description and parameter names); the
interface is what the exports, the runners and the MCP server build on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final, cast, final

from ._definition import Definition

__all__ = ["ToolIndex"]

_WORD: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def words(text: str) -> list[str]:
    """The lower-cased words of `text`, split on punctuation and on case (``getUserID`` -> get, user, id)."""
    return [word.lower() for word in _WORD.findall(text)]


def _parameter_text(schema: dict[str, Any]) -> str:
    properties: object = schema.get("properties")
    if not isinstance(properties, dict):
        return ""
    parts: list[str] = []
    for name, spec in cast("dict[str, object]", properties).items():
        parts.append(name)
        description = cast("dict[str, object]", spec).get("description") if isinstance(spec, dict) else None
        if isinstance(description, str):
            parts.append(description)
    return " ".join(parts)


@final
class ToolIndex:
    """An index over tool definitions, queried in words: ``ToolIndex(registry.definitions()).search("weather")``."""

    __slots__ = ("_definitions", "_words")

    def __init__(self, definitions: Iterable[Definition]) -> None:
        self._definitions = list(definitions)
        self._words = [
            (set(words(d.name)), set(words(d.description)) | set(words(_parameter_text(d.input_schema))))
            for d in self._definitions
        ]

    def search(self, query: str, *, limit: int = 5) -> list[Definition]:
        """The definitions that best match `query`, best first, at most `limit` of them."""
        wanted = set(words(query))
        scored: list[tuple[int, int]] = []
        for position, (name_words, other_words) in enumerate(self._words):
            score = 2 * len(wanted & name_words) + len(wanted & other_words)
            if score:
                scored.append((-score, position))
        scored.sort()
        return [self._definitions[position] for _, position in scored[:limit]]

    def __len__(self) -> int:
        return len(self._definitions)
