"""Call identity: the idempotency key the driver mints for a call, and the digest of its arguments.

Both are the same text for the same inputs in every backend and every version: durable stores keep them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Final, cast

from .._contract import IdempotencyKey
from .._digest import call_digest

__all__ = ["KeyMinter", "call_digest", "mint_key"]


def mint_key(secret: bytes, run_id: str, call_id: str | None, position: int) -> IdempotencyKey:
    """The idempotency key of one call: HMAC-SHA256 of the run and the call, as lowercase base32 text.

    A call with a provider id is named by it; a call without one (Ollama's) by its position in the turn.
    The key is opaque: it reveals nothing of the run or the call to whoever receives it.
    """
    return KeyMinter(secret).key(run_id, call_id, position)


class KeyMinter:
    """Mints `mint_key`'s keys under one secret, with the secret's HMAC state computed once (copied per key).

    The key is HMAC-SHA256 (RFC 2104) of the compact ASCII JSON ``["id", run_id, call_id]`` (or
    ``["position", run_id, position]``), in unpadded lowercase base32: the same text for the same
    secret, run and call, in every version (durable backends store keys).
    """

    __slots__ = ("_inner", "_outer")

    def __init__(self, secret: bytes) -> None:
        # RFC 2104 with its two hash states kept: SHA-256 of the padded key XOR ipad, and XOR opad. A
        # key is then two copies, two updates and two digests (what `hmac` does, less its Python layer).
        block = (hashlib.sha256(secret).digest() if len(secret) > _BLOCK else bytes(secret)).ljust(_BLOCK, b"\0")
        self._inner: Final = hashlib.sha256(block.translate(_IPAD))
        self._outer: Final = hashlib.sha256(block.translate(_OPAD))

    def key(self, run_id: str, call_id: str | None, position: int) -> IdempotencyKey:
        """The key of one call (see `mint_key`)."""
        return self.key_in_run(json_quote(run_id), call_id, position)

    def key_in_run(self, quoted_run_id: str, call_id: str | None, position: int) -> IdempotencyKey:
        """The key of one call, the run id already quoted as JSON text (a turn quotes it once)."""
        # json.dumps's own string quoting, without its encoder setup: the same bytes.
        if call_id is not None:
            identity = f'["id",{quoted_run_id},{json_quote(call_id)}]'
        else:
            identity = f'["position",{quoted_run_id},{int.__repr__(position)}]'
        inner = self._inner.copy()
        inner.update(identity.encode("ascii"))
        outer = self._outer.copy()
        outer.update(inner.digest())
        return _key_text(outer.digest())


_BLOCK: Final = 64
"""SHA-256's block size in bytes: an HMAC key longer than it is hashed first (RFC 2104)."""
_IPAD: Final = bytes(byte ^ 0x36 for byte in range(256))
_OPAD: Final = bytes(byte ^ 0x5C for byte in range(256))


json_quote: Final[Callable[[str], str]] = json.encoder.encode_basestring_ascii
"""A str as JSON text, ASCII only: `json.dumps`'s own string quoting, without its encoder setup."""


def _base32(digest: bytes) -> str:
    """A SHA-256 digest as unpadded lowercase base32 (`base64.b32encode`'s digits), in a few C-level steps.

    The 256 bits, zero-padded to 52 five-bit digits (the top 12 of 64 zero), are moved apart to one
    digit a byte by six halvings (each moves the upper half of every block of digits up), and the
    bytes are translated to the alphabet.
    """
    bits = int.from_bytes(digest, "big") << 4
    for keep, move, shift in _SPREAD_STEPS:
        bits = bits & keep | (bits & move) << shift
    return bits.to_bytes(64, "big")[12:].translate(_BASE32_ALPHABET).decode("ascii")


def _spread_steps() -> tuple[tuple[int, int, int], ...]:
    """Per halving, from blocks of 64 digits down to 2: (bits that stay, bits that move, how far)."""
    steps: list[tuple[int, int, int]] = []
    for level in range(6, 0, -1):
        half = 1 << (level - 1)  # digits in each block's upper half
        move = 0
        for block in range(64 >> level):  # blocks are already 8 bits a digit apart
            move |= ((1 << (5 * half)) - 1) << (block * 8 * (1 << level) + 5 * half)
        steps.append((((1 << 512) - 1) & ~move, move, 3 * half))  # 5-bit digits to 8-bit slots
    return tuple(steps)


_SPREAD_STEPS: Final = _spread_steps()
_BASE32_ALPHABET: Final = bytes.maketrans(bytes(range(32)), b"abcdefghijklmnopqrstuvwxyz234567")


def _base32_in_c() -> Callable[[bytes], str] | None:
    """`scopetool._speedups.base32` (the same text as `_base32`), unless the C extension is missing or turned off."""
    from .._contract import SPEEDUPS  # noqa: PLC0415 - read once, at import

    if not SPEEDUPS:
        return None
    from .. import _speedups  # noqa: PLC0415 - present when SPEEDUPS is set

    return _speedups.base32


_base32_text: Final[Callable[[bytes], str]] = _base32_in_c() or _base32
"""A digest as the key's text: in C where scopetool._speedups is installed, else `_base32`."""
_key_text: Final = cast("Callable[[bytes], IdempotencyKey]", _base32_text)
"""`_base32_text`, typed as making keys (an `IdempotencyKey` is its text; calling the NewType costs a call)."""
