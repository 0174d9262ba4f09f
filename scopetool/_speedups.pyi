"""Types of the optional C module `scopetool._speedups` (see `_speedups.c`)."""

from typing import Any

def scan(raw: str | bytes, /) -> bool:
    """Whether `raw` is one JSON object the module can vouch for (False means only "cannot tell")."""

def install(
    *,
    contract: type,
    invocation: type,
    request: type,
    admission: type,
    error: type,
    default_admission: object,
    validation_error: type,
    pure_prepare: Any,
    explain: Any,
    rejected_after: Any,
    check_members: Any,
    surely_small: int,
    max_bytes: int,
) -> Any:
    """Resolve the classes and slots once; return the C `prepare` as a method descriptor."""
