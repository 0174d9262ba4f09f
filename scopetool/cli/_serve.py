"""``scopetool serve``: the registry as an MCP server over stdio or Streamable HTTP (`scopetool.mcp.server`)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import ipaddress
import sys
from typing import TYPE_CHECKING, Any, Final

from .._extras import missing_message
from .._principal import Principal
from .._registry import Registry
from .._stdio import reserved_stdin
from .._target import load_registry
from ._auth import http_auth
from ._code import code_limits
from ._common import ExitCode, UsageError, describe, say
from ._tasks import task_options

if TYPE_CHECKING:
    from ..mcp.limits import Limit, Limits
    from ..mcp.server import HttpSettings

__all__ = ["http_address", "http_settings", "principal", "run"]
"""What ``serve`` says when the ``mcp`` package is not installed."""
_LOOPBACK: Final = "127.0.0.1"
_SETTINGS: Final = (
    ("allowed_host", "allowed_hosts"),
    ("allowed_origin", "allowed_origins"),
    ("session_idle_timeout", "session_idle_timeout"),
    ("max_sessions", "max_sessions"),
    ("header_timeout", "header_timeout"),
    ("body_timeout", "body_timeout"),
    ("keep_alive_timeout", "keep_alive_timeout"),
    ("max_connections", "max_connections"),
    ("stateless", "stateless"),
)
"""Each ``--http`` settings flag (its argparse name) and the `HttpSettings` field it sets."""


def run(args: argparse.Namespace) -> int:
    """Load TARGET and serve it until the client disconnects (stdio) or Ctrl-C.

    Standard input is the protocol's from the start, as standard output is (`main`): the TARGET's
    module reads an empty input, even on import. A person at a terminal is told, in one line on
    standard error, what is served and that it waits for a client: always over HTTP, over stdio
    when standard input is a terminal (where a client would be a pipe).
    """
    address = None if args.http is None else http_address(args.http)
    _settings_need_http(args)
    for flag, given in (("--always-show", args.always_show), ("--reveal", args.reveal)):
        if given and not args.tool_search:
            raise UsageError(f"{flag} applies to --tool-search only")
    caller = principal(args)
    limits = _limits(args)
    code = code_limits(args)
    if args.http is None:
        http_auth(args)  # an auth flag without --http is a usage error
    if args.page_size is not None and args.page_size < 1:
        raise UsageError(f"--page-size must be a positive integer, not {args.page_size}")
    interactive = sys.stdin is not None and sys.stdin.isatty()
    with reserved_stdin(), contextlib.ExitStack() as stack:
        registry = load_registry(args.target)
        try:
            module = importlib.import_module("scopetool.mcp.server")
        except ImportError as error:
            raise UsageError(missing_message("scopetool serve", error)) from None
        options: dict[str, Any] = {"name": args.name, "instructions": args.instructions, "page_size": args.page_size}
        if limits is not None:
            from ..mcp.limits import Limiter  # noqa: PLC0415 - loaded with the server, which needs the MCP SDK

            options["limiter"] = Limiter(limits, tools=registry.names())
        options.update(stack.enter_context(task_options(args, registry)))  # the task store stays open while serving
        count = len(registry)
        served = f"serving {count} tool{'' if count == 1 else 's'} as MCP server {args.name!r}"
        fronts: list[str] = []
        if args.tool_search:
            shown = _always_shown(registry, args.always_show or [])
            options["tool_search"] = module.ToolSearch(always_show=shown, reveal=args.reveal)
            fronts += ["search_tools", "call_tool"]
        if code is not None:
            if registry.resolve("run_code") is not None:
                raise UsageError("--code-mode lists its own 'run_code': rename TARGET's tool of that name")
            options["code_mode"] = code
            fronts.append("run_code")
        if fronts:
            served += f" behind {', '.join(fronts[:-1])} and {fronts[-1]}" if len(fronts) > 1 else " behind run_code"
        if address is None:

            def waiting() -> None:
                say(f"{served} over stdio; waiting for a client on standard input (Ctrl-C stops)")

            module.run_stdio(registry, ready=waiting if interactive else None, principal=caller, **options)
            return ExitCode.OK
        host, port = address

        def ready(url: str) -> None:
            say(f"{served} at {url} (Streamable HTTP); waiting for a client (Ctrl-C stops)")

        settings = http_settings(args, module.HttpSettings())
        auth = http_auth(args)
        try:
            module.run_http(
                registry, host=host, port=port, settings=settings, auth=auth, ready=ready, warn=say, **options
            )
        except OSError as error:
            raise UsageError(f"--http {args.http}: cannot listen there: {describe(error)}") from None
    return ExitCode.OK


def _always_shown(registry: Registry, names: list[str]) -> list[str]:
    """The ``--always-show`` names, each a tool of TARGET, checked with the two names tool search lists.

    Raises:
        UsageError: a name TARGET does not have, or a tool of TARGET that tool search's own names shadow.
    """
    for own in ("search_tools", "call_tool"):
        if registry.resolve(own) is not None:
            raise UsageError(f"--tool-search lists its own {own!r}: rename TARGET's tool of that name")
    for name in names:
        if registry.resolve(name) is None:
            raise UsageError(f"--always-show {name}: TARGET has no tool of that name")
    return names


def _settings_need_http(args: argparse.Namespace) -> None:
    if args.http is None:
        given = [flag for flag, _ in _SETTINGS if getattr(args, flag) is not None]
        if given:
            raise UsageError(f"--{given[0].replace('_', '-')} applies to --http only")


def principal(args: argparse.Namespace) -> Principal | None:
    """The caller ``--principal`` names (with its ``--principal-client`` and ``--principal-scope``), or None.

    Raises:
        UsageError: a ``--principal-*`` flag without ``--principal``, or ``--principal`` with ``--http``
            (over HTTP each caller is authenticated, never named by the operator).
    """
    if args.principal is None:
        given = "--principal-client" if args.principal_client is not None else None
        given = given or ("--principal-scope" if args.principal_scope else None)
        if given is not None:
            raise UsageError(f"{given} needs --principal SUBJECT")
        return None
    if args.http is not None:
        raise UsageError("--principal applies to stdio only: over --http each caller is authenticated")
    if not args.principal.strip():
        raise UsageError("--principal needs a non-empty SUBJECT")
    return Principal(args.principal, args.principal_client, frozenset(args.principal_scope or ()))


def _limits(args: argparse.Namespace) -> Limits | None:
    """The `Limits` the limit flags give, or None when none is given.

    Raises:
        UsageError: a rate, a concurrency or the Redis URL out of its range (named as a flag), or
            ``--limits-redis`` with no rate to count there.
    """
    from ..mcp.limits import Limits  # noqa: PLC0415 - only a server with limits needs it

    flags = ("caller_rate", "caller_concurrency", "tool_rate", "tool_concurrency")
    if all(getattr(args, flag) is None for flag in flags):
        if args.limits_redis is not None:
            raise UsageError("--limits-redis needs a rate to count there: --caller-rate or --tool-rate")
        return None
    try:
        return Limits(
            caller=_limit(args.caller_rate, args.caller_concurrency, "--caller"),
            tool=_limit(args.tool_rate, args.tool_concurrency, "--tool"),
            redis=args.limits_redis,
        )
    except ValueError as error:
        raise UsageError(f"--limits-redis: {str(error).partition(' ')[2]}") from None


def _limit(rate: str | None, concurrency: int | None, flag: str) -> Limit:
    from ..mcp.limits import Limit  # noqa: PLC0415 - only a server with limits needs it

    try:
        Limit(rate=rate)
    except ValueError as error:
        raise UsageError(f"{flag}-rate: {error}") from None
    try:
        return Limit(rate=rate, concurrency=concurrency)
    except ValueError as error:
        raise UsageError(f"{flag}-concurrency: {error}") from None


def http_settings(args: argparse.Namespace, base: HttpSettings) -> HttpSettings:
    """`base` with what the ``--http`` settings flags of `args` give (every flag left out keeps its value).

    Raises:
        UsageError: a flag given without ``--http``, or out of its range (named as a flag).
    """
    _settings_need_http(args)
    given: dict[str, Any] = {}
    for flag, name in _SETTINGS:
        value = getattr(args, flag)
        if value is not None:
            given[name] = (*getattr(base, name), *value) if isinstance(value, list) else value
    try:
        return dataclasses.replace(base, **given)
    except ValueError as error:
        message = str(error)
        for flag, name in _SETTINGS:
            message = message.replace(name, f"--{flag.replace('_', '-')}", 1) if message.startswith(name) else message
        raise UsageError(message) from None


def http_address(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` as (host, port); the host is 127.0.0.1 when left out, ``[::1]:PORT`` for IPv6.

    Raises:
        UsageError: not a port number from 0 to 65535, or an IPv6 host without brackets.
    """
    host, colon, port = text.rpartition(":")
    if not colon:
        host = _LOOPBACK
    elif host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        _ipv6(host, text)
    elif ":" in host or not host:
        raise UsageError(f"--http {text}: give HOST:PORT, with an IPv6 host in brackets ([::1]:8000)")
    if not port.isdecimal() or not port.isascii() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--http {text}: the port must be a number from 0 to 65535")
    return host, int(port)


def _ipv6(host: str, text: str) -> None:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        raise UsageError(f"--http {text}: {host!r} is not an IPv6 address") from None
