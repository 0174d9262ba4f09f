"""MCP tasks through the gateway (``gateway.tasks``, ``scopetool proxy --tasks``): its settings and their options.

The gateway answers a long call with a task as ``scopetool serve --tasks`` does (`scopetool.mcp.tasks`):
only calls of tools whose effect is `Effect.SAFE` or `Effect.IDEMPOTENT` become tasks. For an upstream
tool that effect is the one the gateway knows: its annotations (``readOnlyHint``, ``idempotentHint``)
are believed only for a server marked ``trusted``, so an untrusted server's calls are always answered
inline. A task is its creator's (`scopetool.current_principal`: the gateway runs each request as its
caller). With a ``store`` the tasks and their calls are kept on DBOS in that SQLite file.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from .._extras import missing_message
from .._registry import Registry
from .tasks import DEFAULT_MAX_RUNNING, DEFAULT_TTL, TaskOptions

__all__ = ["GatewayTasks", "TaskSettingError", "parse_tasks", "task_options"]

_KEYS = frozenset({"store", "ttl", "maxRunning"})


class TaskSettingError(ValueError):
    """A ``gateway.tasks`` value, or its store, that cannot be used (the gateway makes it a `ConfigError`)."""


@final
@dataclass(frozen=True, slots=True)
class GatewayTasks:
    """How the gateway answers long calls with MCP tasks (``gateway.tasks``)."""

    store: Path | None = None
    """The SQLite file the tasks and their calls are kept in (on DBOS), or None: in memory."""
    ttl: float = DEFAULT_TTL
    """Seconds a task is kept after it was created."""
    max_running: int = DEFAULT_MAX_RUNNING
    """The most tasks of one caller running at once (``maxRunning``)."""


def parse_tasks(value: object, base: Path) -> GatewayTasks | None:
    """``gateway.tasks``: false, true, or ``{"store": PATH, "ttl": SECONDS, "maxRunning": N}``; PATH is from `base`.

    Raises:
        TaskSettingError: one line naming what is wrong, after ``gateway.tasks``.
    """
    if value is False:
        return None
    if value is True:
        return GatewayTasks()
    if not isinstance(value, dict):
        raise TaskSettingError(f"must be true, false or an object, not {type(value).__name__}")
    entry: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType] - a JSON object's keys are strings
    for key in entry:
        if key not in _KEYS:
            raise TaskSettingError(f"unknown key {key!r} (known: {', '.join(sorted(_KEYS))})")
    store, ttl = entry.get("store"), entry.get("ttl", DEFAULT_TTL)
    if store is not None and (not isinstance(store, str) or not store):
        raise TaskSettingError("store: must be the path of a SQLite file")
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < math.inf:
        raise TaskSettingError(f"ttl: must be a positive number of seconds, not {ttl!r}")
    running = entry.get("maxRunning", DEFAULT_MAX_RUNNING)
    if isinstance(running, bool) or not isinstance(running, int) or running < 1:
        raise TaskSettingError(f"maxRunning: must be a whole number >= 1, not {running!r}")
    return GatewayTasks(None if store is None else base / store, float(ttl), running)


@contextlib.contextmanager
def task_options(settings: GatewayTasks | None, registry: Registry) -> Generator[TaskOptions | None]:
    """The `TaskOptions` of `settings` for the gateway's `registry` (None without tasks), their store open.

    Raises:
        TaskSettingError: the store cannot be opened (or DBOS is not installed).
    """
    if settings is None:
        yield None
        return
    if settings.store is None:
        yield TaskOptions(ttl=settings.ttl, max_running=settings.max_running)
        return
    try:
        dbos = importlib.import_module("scopetool.driver.dbos")
    except ImportError as error:  # pragma: no cover - the extra is installed wherever the tests run
        raise TaskSettingError(missing_message("store", error)) from None
    location = settings.store.resolve()
    backend = dbos.DbosBackend(registry, f"sqlite:///{location}")
    try:
        backend.open()
    except Exception as error:  # noqa: BLE001 - SQLite's, SQLAlchemy's or DBOS's own: one line for the config
        text = " ".join(str(error).split()) or type(error).__name__
        raise TaskSettingError(f"store: cannot open {str(settings.store)!r}: {text}") from None
    try:
        yield TaskOptions(backend=backend, store=location, ttl=settings.ttl, max_running=settings.max_running)
    finally:
        backend.close()
