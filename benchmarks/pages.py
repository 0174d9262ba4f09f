"""The docs pages the benchmark scripts write their figures into, between a pair of marker lines."""

from __future__ import annotations

from pathlib import Path


def replace_between(page: Path, start: str, end: str, body: str) -> None:
    """Put `body` between the markers `start` and `end` of `page`, in place of what stood there."""
    text = page.read_text(encoding="utf-8")
    head, found, rest = text.partition(start)
    _, ended, tail = rest.partition(end)
    if not found or not ended:
        raise SystemExit(f"{page}: the markers {start!r} and {end!r} are missing")
    page.write_text(f"{head}{start}{body}{end}{tail}", encoding="utf-8")
