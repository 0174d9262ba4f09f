"""``scopetool serve --tasks``: long calls answered with MCP tasks (`scopetool.mcp.tasks`), durable with a store."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import math
from collections.abc import Generator
from pathlib import Path
from typing import Any

from .._extras import missing_message
from .._registry import Registry
from ._common import UsageError, describe

__all__ = ["add_task_flags", "task_options"]

_SQLITE: tuple[str, ...] = ("sqlite:///",)


def add_task_flags(command: argparse.ArgumentParser) -> None:
    """The ``--tasks`` flags of ``serve``."""
    group = command.add_argument_group("MCP tasks")
    group.add_argument(
        "--tasks",
        action="store_true",
        help="answer long calls of SAFE and IDEMPOTENT tools with MCP tasks, to clients that declare the "
        "io.modelcontextprotocol/tasks extension",
    )
    group.add_argument(
        "--task-store",
        metavar="PATH",
        help="keep the tasks and their calls in this SQLite file (on DBOS: pip install 'scopetool[dbos]'), "
        "so they survive a restart (default: in memory)",
    )
    group.add_argument(
        "--task-ttl", type=float, metavar="SECONDS", help="keep a task this long after it was created (default 3600)"
    )
    group.add_argument(
        "--task-max-running",
        type=int,
        metavar="N",
        help="run at most N tasks of one caller at once; one more is refused (default 16)",
    )


@contextlib.contextmanager
def task_options(args: argparse.Namespace, registry: Registry) -> Generator[dict[str, Any]]:
    """The ``tasks`` option of `create_server` the flags ask for (none without ``--tasks``), its store open.

    Raises:
        UsageError: a task flag without ``--tasks``, a TTL that is not a positive number of seconds, or a
            store that cannot be opened.
    """
    running = getattr(args, "task_max_running", None)
    if not args.tasks:
        given = "--task-store" if args.task_store is not None else "--task-ttl" if args.task_ttl is not None else None
        given = given or ("--task-max-running" if running is not None else None)
        if given is not None:
            raise UsageError(f"{given} applies to --tasks only")
        yield {}
        return
    ttl = 3600.0 if args.task_ttl is None else args.task_ttl
    if not 0 < ttl < math.inf:
        raise UsageError(f"--task-ttl must be a positive number of seconds, not {args.task_ttl}")
    tasks = importlib.import_module("scopetool.mcp.tasks")
    if running is not None and running < 1:
        raise UsageError(f"--task-max-running must be a whole number >= 1, not {running}")
    cap: dict[str, int] = {} if running is None else {"max_running": running}
    if args.task_store is None:
        yield {"tasks": tasks.TaskOptions(ttl=ttl, **cap)}
        return
    path = str(args.task_store)
    path = path.removeprefix(_SQLITE[0])
    if "://" in path:
        raise UsageError(f"--task-store {args.task_store}: give the path of a SQLite file")
    try:
        dbos = importlib.import_module("scopetool.driver.dbos")
    except ImportError as error:  # pragma: no cover - the extra is installed wherever the tests run
        raise UsageError(missing_message("--task-store", error)) from None
    location = Path(path).resolve()
    backend = dbos.DbosBackend(registry, f"sqlite:///{location}")
    try:
        backend.open()
    except Exception as error:  # noqa: BLE001 - SQLite's, SQLAlchemy's or DBOS's own: each one line for the CLI
        raise UsageError(f"--task-store {args.task_store}: cannot open it: {describe(error)}") from None
    try:
        yield {"tasks": tasks.TaskOptions(backend=backend, store=location, ttl=ttl, **cap)}
    finally:
        backend.close()
