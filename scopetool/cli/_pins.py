"""``scopetool pins``: show and accept the MCP tool definitions pinned in a lock file (`scopetool.mcp.pins`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ._common import ExitCode, UsageError, stdout

if TYPE_CHECKING:
    from ..mcp.pins import PinFile

__all__ = ["add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:  # pyright: ignore[reportPrivateUsage]
    """Add ``pins show`` and ``pins accept`` to the ``scopetool`` parser."""
    pins = commands.add_parser(
        "pins",
        help="show or accept the MCP tool definitions pinned in a lock file",
        description="Show the MCP tools pinned in LOCKFILE and the changes waiting to be accepted, or accept them.",
    )
    actions = pins.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = actions.add_parser(
        "show",
        help="list each server's pinned tools and pending changes, with what screening found in them",
        description="List each server's pinned tools and pending changes. Under each, one indented line per "
        "thing the poisoning screen found in its definition (invisible characters, instruction-like text).",
    )
    show.add_argument("lockfile", metavar="LOCKFILE", help="the lock file (mcp.lock.json, say)")
    show.add_argument("--server", metavar="SERVER", help="only this server's tools")
    accept = actions.add_parser(
        "accept",
        help="accept the pending definitions of a server's tools (all, or those named)",
        description="Make each pending definition of SERVER's tools the pinned one: all of them, or the TOOLs "
        "named. A TOOL the server no longer lists is forgotten.",
    )
    accept.add_argument("lockfile", metavar="LOCKFILE", help="the lock file")
    accept.add_argument("server", metavar="SERVER", help="the server's name in the lock file")
    accept.add_argument("tools", metavar="TOOL", nargs="*", help="the tools to accept (default: every pending one)")


def run(args: argparse.Namespace) -> int:
    """Run ``pins show`` or ``pins accept``."""
    from ..mcp.pins import PinError, PinFile  # noqa: PLC0415 - the parser of every other command needs none of it

    try:
        pins = PinFile(args.lockfile)
        if args.action == "show":
            return _show(pins, args.server)
        accepted = pins.accept(args.server, args.tools or None)
    except PinError as error:
        raise UsageError(str(error)) from None
    out = stdout()
    for name in accepted:
        out.write(f"accepted {args.server} {name}\n")
    if not accepted:
        out.write(f"nothing pending for {args.server}\n")
    return ExitCode.OK


def _show(pins: PinFile, only: str | None) -> int:
    """Print each pinned and pending tool of the lock file (of server `only`), with its screening findings."""
    from ..mcp.screening import screen_definition  # noqa: PLC0415 - as in run

    servers = pins.servers()
    if only is not None and only not in servers:
        raise UsageError(f"{pins.path}: no MCP server {only!r} is pinned (pinned: {', '.join(servers) or 'none'})")
    out = stdout()
    for server in servers if only is None else (only,):
        pinned, pending = pins.pinned(server), pins.pending(server)
        for name in sorted(set(pinned) | set(pending)):
            if name not in pinned:
                out.write(f"{server} {name} new (pending)\n")
            else:
                out.write(f"{server} {name} pinned{' (changed: pending)' if name in pending else ''}\n")
            for state, definitions in (("pinned", pinned), ("pending", pending)):
                for finding in screen_definition(definitions.get(name, {})):
                    out.write(f"  flagged ({state}): {finding}\n")
    return ExitCode.OK
