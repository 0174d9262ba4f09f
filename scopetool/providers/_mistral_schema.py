"""Mistral's strict mode: every object closed with ``additionalProperties: false``.

Mistral's own SDK helper (``rec_strict_json_schema``) sets ``additionalProperties: false`` on every
object; unlike OpenAI's strict mode it keeps ``required`` as written, so optional fields stay optional
and no null repair is needed. The helper also overwrites an open object's ``additionalProperties``
(missing, ``true`` or a ``dict``'s schema), which forbids members the contract admits: here such a
schema is not made strict and keeps its meaning (see `close_object`).
"""

from __future__ import annotations

import copy
from typing import Any

from ._transform import Edit, Transformed, close_object, walk

__all__ = ["mistral_strict"]


def mistral_strict(schema: dict[str, Any]) -> Transformed:
    """Check that every object of a schema is closed, or say why one cannot be.

    An open object (``additionalProperties`` missing, true or a schema, as for ``dict[str, X]``)
    cannot be closed without changing its meaning: the schema then comes back unchanged, with the
    reasons in `not_strict`.
    """
    edit = Edit()
    result = copy.deepcopy(schema)

    def close(node: dict[str, Any], path: str) -> None:
        kind = node.get("type")
        if kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node:
            close_object(node, path, edit)

    walk(result, close)
    if edit.not_strict:
        return Transformed(copy.deepcopy(schema), changes=(), not_strict=tuple(edit.not_strict), null_defaults=())
    return Transformed(result, changes=tuple(edit.changes), not_strict=(), null_defaults=())
