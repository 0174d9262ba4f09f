"""Mistral's strict mode: every object closed with ``additionalProperties: false``.

This is what Mistral's own SDK helper does (``rec_strict_json_schema``); unlike OpenAI's strict
mode it keeps ``required`` as written, so optional fields stay optional and no null repair is needed.
The helper also overwrites an open object's ``additionalProperties``, which turns a ``dict`` into
"always empty": here such a schema is not made strict and keeps its meaning.
"""

from __future__ import annotations

import copy
from typing import Any

from ._transform import Edit, Transformed, walk

__all__ = ["mistral_strict"]


def mistral_strict(schema: dict[str, Any]) -> Transformed:
    """Close every object of a schema, or say why it cannot be closed.

    An object without ``additionalProperties`` gets ``false``. An open object (``additionalProperties``
    true or a schema, as for ``dict[str, X]``) cannot be closed without changing its meaning: the schema
    then comes back unchanged, with the reasons in `not_strict`.
    """
    edit = Edit()
    result = copy.deepcopy(schema)

    def close(node: dict[str, Any], path: str) -> None:
        kind = node.get("type")
        if not (kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node):
            return
        extra = node.get("additionalProperties")
        if extra is None:
            node["additionalProperties"] = False
            edit.record(path, "closed", "additionalProperties", "strict mode needs closed objects")
        elif extra is not False:
            edit.refuse(path, "an open object (dict) cannot be closed without changing its meaning")

    walk(result, close)
    if edit.not_strict:
        return Transformed(copy.deepcopy(schema), changes=(), not_strict=tuple(edit.not_strict), null_defaults=())
    return Transformed(result, changes=tuple(edit.changes), not_strict=(), null_defaults=())
