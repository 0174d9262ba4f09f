"""Types of the optional C module `scopetool._speedups` (see `_speedups.c`)."""

from typing import Any

def scan(raw: str | bytes, /) -> bool:
    """Whether the module vouches for `raw`, a text a JSON parser accepted (False means only "cannot tell").

    True: one object, no repeated member name at any depth, no NaN, Infinity, exponent or number of
    more than 15 digits, well-formed strings. For text that is not JSON the answer means nothing.
    """

def installed() -> bool:
    """Whether `install` has run in this process (it runs once)."""

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
