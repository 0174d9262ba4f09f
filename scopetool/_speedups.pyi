"""Types of the optional C module `scopetool._speedups` (see `_speedups.c`)."""

from typing import Any, TypeVar

T = TypeVar("T")

def scan(raw: str | bytes, /) -> bool:
    """Whether the module vouches for `raw`, a text a JSON parser accepted (False means only "cannot tell").

    True: one object, no repeated member name at any depth, no NaN, Infinity, exponent or number of
    more than 15 digits, well-formed strings. For text that is not JSON the answer means nothing.
    """

def validate(contract: Any, raw: str | bytes, /) -> Any:
    """The contract's validator on `raw`, called as the C `prepare` calls it (keyword flags included).

    Returns what the validator returns and raises what it raises. It exists so the benchmarks can time
    prepare's parts apart; it checks nothing of its own.
    """

def base32(digest: bytes, /) -> str:
    """Lowercase, unpadded RFC 4648 base32 of `digest` (the driver's key text)."""

def canonical(prefix: bytes, value: Any, lossless_float: type, /) -> bytes | None:
    """`prefix` and `canonical_json(value)`'s bytes; None where only that encoder can say (the driver's digest)."""

def build(cls: type[T], members: tuple[Any, ...], /, *values: Any) -> T:
    """A new `cls` made without its ``__init__``, each slot descriptor of `members` set to its value in turn."""

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
