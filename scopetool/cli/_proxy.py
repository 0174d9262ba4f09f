"""``scopetool proxy``: several MCP servers and local tools served as one MCP server (`scopetool.mcp.gateway`)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import math
from pathlib import Path
from types import ModuleType
from typing import Any

from .._extras import missing_message
from .._stdio import reserved_stdin
from ._auth import http_auth
from ._code import code_limits
from ._common import ExitCode, UsageError, describe
from ._serve import http_address, http_settings, principal

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Read CONFIG, start its servers and serve their tools over stdio (or ``--http``) until the client leaves.

    A config problem is one line (the key and where it is); ``--pins`` and ``--audit`` override the
    config's ``gateway.pins`` and ``gateway.audit``, the ``--http`` settings flags its HTTP settings,
    ``--principal`` (with its ``--principal-*`` flags) its ``gateway.principal``, and the ``--auth-*`` flags
    its ``gateway.auth``.
    """
    address = None if args.http is None else http_address(args.http)
    caller = principal(args)
    with reserved_stdin():
        try:
            gateway: ModuleType = importlib.import_module("scopetool.mcp.gateway")
        except ImportError as error:
            raise UsageError(missing_message("scopetool proxy", error)) from None
        try:
            config = gateway.load_config(args.config)
        except gateway.ConfigError as error:
            raise UsageError(str(error)) from None
        if args.pins is not None:
            config = dataclasses.replace(config, pins=Path(args.pins))
        if args.audit is not None:
            config = dataclasses.replace(config, audit=Path(args.audit))
        config = dataclasses.replace(config, http_settings=http_settings(args, config.http_settings))
        if caller is not None:
            config = dataclasses.replace(config, principal=caller)
        config = dataclasses.replace(config, auth=http_auth(args, config.auth))
        config = dataclasses.replace(config, tasks=_tasks(args, config.tasks, gateway.GatewayTasks))
        config = dataclasses.replace(config, code_mode=code_limits(args, config.code_mode))
        try:
            gateway.run_gateway(config, http=address)
        except gateway.ConfigError as error:  # its cause, if any, is what the user's code raised (--traceback)
            raise UsageError(str(error)) from error
        except OSError as error:
            raise UsageError(f"--http {args.http}: cannot listen there: {describe(error)}") from None
    return ExitCode.OK


def _tasks(args: argparse.Namespace, current: Any, make: Any) -> Any:
    """``gateway.tasks`` with the task flags over it: ``--tasks`` turns tasks on, the others set their store and TTL.

    Raises:
        UsageError: ``--task-store`` or ``--task-ttl`` while tasks are off (neither ``--tasks`` nor the config's),
            or a TTL that is not a positive number of seconds.
    """
    if not args.tasks and current is None:
        given = "--task-store" if args.task_store is not None else "--task-ttl" if args.task_ttl is not None else None
        if given is not None:
            raise UsageError(f"{given} applies to --tasks (or the config's gateway.tasks) only")
        return None
    settings = make() if current is None else current
    if args.task_store is not None:
        path = str(args.task_store).removeprefix("sqlite:///")
        if "://" in path:
            raise UsageError(f"--task-store {args.task_store}: give the path of a SQLite file")
        settings = dataclasses.replace(settings, store=Path(path).resolve())
    if args.task_ttl is not None:
        if not 0 < args.task_ttl < math.inf:
            raise UsageError(f"--task-ttl must be a positive number of seconds, not {args.task_ttl}")
        settings = dataclasses.replace(settings, ttl=args.task_ttl)
    running = getattr(args, "task_max_running", None)
    if running is not None:
        if running < 1:
            raise UsageError(f"--task-max-running must be a whole number >= 1, not {running}")
        settings = dataclasses.replace(settings, max_running=running)
    return settings
