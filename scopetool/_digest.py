"""The identity of an admitted call: `call_digest`, its tool name and arguments in canonical JSON, hashed.

The driver's backends tell a replay from a conflict by it, and the turn rules (`TurnRules`) tell a
repeat from a new call by it. It is the same text for the same inputs in every version: durable stores keep it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Final

from jiter import LosslessFloat

from ._json import canonical_json, loads_exact

__all__ = ["call_digest"]


def call_digest(name: str, arguments: bytes) -> str:
    """SHA-256 (hex) of a tool name and admitted arguments in canonical JSON (member order and spacing ignored)."""
    prefix = name.encode("ascii") + b"\x00"
    value = loads_exact(arguments)
    if _canonical is not None:
        text = _canonical(prefix, value, LosslessFloat)
        if text is not None:
            return hashlib.sha256(text).hexdigest()
    return hashlib.sha256(prefix + canonical_json(value)).hexdigest()


def _canonical_in_c() -> Callable[[bytes, Any, type], bytes | None] | None:
    """`scopetool._speedups.canonical`, unless the C extension is missing or turned off.

    It gives the prefix and `canonical_json`'s bytes, or None where only that encoder can say.
    """
    from ._contract import SPEEDUPS  # noqa: PLC0415 - read once, at import (the C prepare's own switch)

    if not SPEEDUPS:
        return None
    from . import _speedups  # noqa: PLC0415 - present when SPEEDUPS is set

    return _speedups.canonical


_canonical: Final = _canonical_in_c()
