"""``scopetool pins``: show and accept the MCP tool definitions pinned in a lock file (`scopetool.mcp.pins`)."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import ExitCode, UsageError, stdout

__all__ = ["add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:  # pyright: ignore[reportPrivateUsage]
    """Add ``pins show`` and ``pins accept`` to the ``scopetool`` parser."""
    pins = commands.add_parser(
        "pins",
        help="show or accept the MCP tool definitions pinned in a lock file",
        description="Show the MCP tools pinned in LOCKFILE and the changes waiting to be accepted, or accept them.",
    )
    actions = pins.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = actions.add_parser("show", help="list each server's pinned tools and pending changes")
    show.add_argument("lockfile", metavar="LOCKFILE", help="the lock file (mcp.lock.json, say)")
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
            out = stdout()
            for server in pins.servers():
                pending = pins.pending(server)
                for name in sorted(pins.pinned(server)):
                    out.write(f"{server} {name} pinned{' (changed: pending)' if name in pending else ''}\n")
                for name in sorted(set(pending) - set(pins.pinned(server))):
                    out.write(f"{server} {name} new (pending)\n")
            return ExitCode.OK
        accepted = pins.accept(args.server, args.tools or None)
    except PinError as error:
        raise UsageError(str(error)) from None
    out = stdout()
    for name in accepted:
        out.write(f"accepted {args.server} {name}\n")
    if not accepted:
        out.write(f"nothing pending for {args.server}\n")
    return ExitCode.OK
