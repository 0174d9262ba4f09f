"""Progress: how far a call has advanced, reported to whoever drives it. Observation only."""

from __future__ import annotations

import contextvars
import math
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final, Protocol, final

from ._errors import ScopetoolError

__all__ = ["InvalidProgressError", "Progress", "ProgressReporter", "progress_reporter", "report_progress"]


class InvalidProgressError(ScopetoolError, ValueError):
    """A `Progress` value breaks its rules."""


@final
@dataclass(frozen=True, slots=True)
class Progress:
    """How far one call has advanced. `total` is 0 when the tool cannot bound its work."""

    completed: float
    """Work done so far; finite and not negative."""
    total: float = 0
    """All the work, or 0 when unknown; when set, at least `completed`."""
    message: str = ""
    """A short human-readable note."""

    def __post_init__(self) -> None:
        for name in ("completed", "total"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise InvalidProgressError(f"progress {name} must be a finite number >= 0, not {value!r}")
        if self.total and self.completed > self.total:
            raise InvalidProgressError(f"progress completed ({self.completed}) exceeds total ({self.total})")
        if not isinstance(self.message, str):
            raise InvalidProgressError(f"progress message must be str, not {type(self.message).__name__}")


class ProgressReporter(Protocol):
    """Receives a call's progress. It must be quick and thread-safe: sync tools report from worker threads."""

    def __call__(self, progress: Progress, /) -> None: ...


_REPORTER: Final[contextvars.ContextVar[ProgressReporter | None]] = contextvars.ContextVar(
    "scopetool_progress_reporter", default=None
)


def report_progress(progress: Progress) -> None:
    """Send `progress` to the reporter the driver installed; a no-op when there is none.

    Works from async tools and from sync tools in worker threads alike (the context travels with the
    call). A reporter that raises is logged and ignored: progress never changes a call's outcome.
    """
    if not isinstance(progress, Progress):
        raise InvalidProgressError(f"report_progress needs a Progress, not {type(progress).__name__}")
    reporter = _REPORTER.get()
    if reporter is None:
        return
    try:
        reporter(progress)
    except Exception:  # observation must not change the outcome
        import logging  # noqa: PLC0415 - only a failing reporter needs it

        logging.getLogger("scopetool").exception("scopetool: the progress reporter raised; the report was dropped")


@contextmanager
def progress_reporter(reporter: ProgressReporter | None) -> Generator[None, None, None]:
    """Install `reporter` for the calls made inside the ``with`` block (None removes one)."""
    if reporter is not None and not callable(reporter):
        raise InvalidProgressError("a progress reporter must be callable")
    token = _REPORTER.set(reporter)
    try:
        yield
    finally:
        _REPORTER.reset(token)
