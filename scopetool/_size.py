"""The cap on the size of a tool's result: what a call may put in front of the model.

`bind` sets it on the binding's contract (default `MAX_OUTPUT_BYTES`); a `@tool` function's call checks
the result it builds, and a `Binding` checks the result of any other tool (and of its middlewares).
So every path that runs a `Binding` (the MCP server, the provider loops, the Driver, the gateway)
refuses an oversize result the same way: a `FAILED` `Failure` whose public text says the result was
over the cap, never its content.
"""

from __future__ import annotations

from typing import Final

from ._errors import InvalidToolError, ScopetoolError
from ._outcome import Failure, FailureKind
from ._output import Output, Result, TextBlock

MAX_OUTPUT_BYTES: Final = 8 * 1024 * 1024
"""The default cap on one result, in bytes (UTF-8 text, media data, URIs and references, details): 8 MiB.

Twice the text the largest context windows hold (a million tokens is about 4 MiB), so no result a
model could read is refused; and base64-encoded (its media grow by a third) it still fits in one MCP
message under the client's 16 MiB cap, so an oversize remote result is refused cleanly.
"""
OUTPUT_TOO_LARGE: Final = 'error: tool "{name}" failed: its result was over {limit} bytes'
"""The public text of a call whose result was over its cap (the result itself is never shown)."""


class OutputTooLargeError(ScopetoolError, ValueError):
    """The private cause of a result refused for its size: the tool's name, the cap and the size."""

    def __init__(self, name: str, limit: int, size: int) -> None:
        super().__init__(f"tool {name!r} returned a result of at least {size} bytes, over its cap of {limit} bytes")
        self.name: Final = name
        """The tool's name."""
        self.limit: Final = limit
        """The cap, in bytes."""
        self.size: Final = size
        """The result's size in bytes (at least: text already over the cap in characters is not encoded)."""


def check_output_limit(limit: object, where: str) -> int | None:
    """`limit` as a number of bytes (a positive integer) or None.

    Raises:
        InvalidToolError: it is neither.
    """
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise InvalidToolError(f"{where}: max_output_bytes is a positive integer or None, not {limit!r}")
    return limit


def oversize(output: Output, limit: int) -> int | None:
    """The output's size in bytes (at least) when it is over `limit` bytes, else None.

    Text is encoded only when its length alone cannot tell: a character is one to four UTF-8 bytes,
    and an ASCII string says so in constant time.
    """
    details = output.details
    low = high = 0 if details is None else len(details)
    for block in output.content:
        if isinstance(block, TextBlock):
            size = len(block.text)
            low += size
            high += size if block.text.isascii() else 4 * size
        else:
            size = len(block.data or block.uri or block.reference or "")
            low += size
            high += size
    if high <= limit:
        return None
    if low > limit:
        return low
    exact = low
    for block in output.content:
        if isinstance(block, TextBlock) and not block.text.isascii():
            exact += len(block.text.encode("utf-8", "surrogatepass")) - len(block.text)
    return exact if exact > limit else None


def refuse_oversize(result: Result, limit: int, name: str) -> None:
    """Raise the `FAILED` `Failure` (`OUTPUT_TOO_LARGE`) of a result over `limit` bytes."""
    size = oversize(result.output, limit)
    if size is not None:
        raise too_large(name, limit, size)


def too_large(name: str, limit: int, size: int) -> Failure:
    """The `FAILED` `Failure` (`OUTPUT_TOO_LARGE`) of a result of `size` bytes, over `limit`."""
    return Failure(
        kind=FailureKind.FAILED,
        output=Output.from_text(OUTPUT_TOO_LARGE.format(name=name, limit=limit)),
        cause=OutputTooLargeError(name, limit, size),
    )
