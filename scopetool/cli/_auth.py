"""The authentication flags of ``serve --http`` and ``proxy --http`` (`scopetool.mcp.auth.HttpAuth`)."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import TYPE_CHECKING, Any, Final

from ._common import UsageError

if TYPE_CHECKING:
    from ..mcp.auth import HttpAuth

__all__ = ["add_auth_flags", "http_auth"]

_FLAGS: Final = ("auth_issuer", "auth_audience", "auth_scope", "auth_token_file")


def add_auth_flags(command: argparse.ArgumentParser, over: str = "") -> None:
    """Add ``--auth-issuer``, ``--auth-audience``, ``--auth-scope`` and ``--auth-token-file`` to `command`."""
    group = command.add_argument_group(
        f"authentication, with --http{over}",
        "callers send a bearer token: a JWT of the issuer for the audience, or a static token of the file or "
        "of the SCOPETOOL_AUTH_TOKENS variable (lines of NAME TOKEN [SCOPE ...])",
    )
    group.add_argument("--auth-issuer", metavar="URL", help="take the JWTs of this OAuth authorization server")
    group.add_argument(
        "--auth-audience", metavar="URL", help="this server's URL as clients reach it: the JWTs' audience"
    )
    group.add_argument("--auth-scope", action="append", metavar="SCOPE", help="a scope every caller needs (repeatable)")
    group.add_argument("--auth-token-file", metavar="PATH", help="take the static tokens of this file")


def http_auth(args: argparse.Namespace, base: HttpAuth | None = None) -> HttpAuth | None:
    """The `HttpAuth` of `base` (the gateway config's) with what the flags and ``SCOPETOOL_AUTH_TOKENS`` give.

    The flags replace the issuer, audience and token file of `base`, and add scopes to its own; the
    variable's tokens are added to the file's. None when nothing asks for authentication; without
    ``--http``, `base` as it is.

    Raises:
        UsageError: a flag given without ``--http``, a token file or entry that cannot be read, or settings
            that do not make an `HttpAuth` (one line naming the flag).
    """
    given = [flag for flag in _FLAGS if getattr(args, flag, None) is not None]
    if args.http is None:
        if given:
            raise UsageError(f"--{given[0].replace('_', '-')} applies to --http only")
        return base  # as the config has it: the gateway refuses a ``gateway.auth`` over stdio
    from ..mcp.auth import TOKENS_ENV, HttpAuth, load_tokens, tokens_from_env  # noqa: PLC0415 - needs the MCP SDK

    try:
        tokens = tokens_from_env(os.environ)
        if args.auth_token_file is not None:
            tokens = (*load_tokens(args.auth_token_file), *tokens)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if base is None and not given and not tokens:
        return None
    changes: dict[str, Any] = {
        "issuer": args.auth_issuer,
        "audience": args.auth_audience,
        "scopes": None if args.auth_scope is None else (*(() if base is None else base.scopes), *args.auth_scope),
        "tokens": None if args.auth_token_file is None and not tokens else tokens,
    }
    try:
        if base is None:
            return HttpAuth(**{name: value for name, value in changes.items() if value is not None})
        if args.auth_token_file is None:  # the config's file stays, the variable's tokens join it
            changes["tokens"] = (*base.tokens, *tokens)
        return dataclasses.replace(base, **{name: value for name, value in changes.items() if value is not None})
    except ValueError as error:
        message = str(error)
        for name in ("issuer", "audience", "scopes"):
            if message.startswith(name):
                message = f"--auth-{name.removesuffix('s')}{message.removeprefix(name)}"
        if message.startswith("authentication needs"):
            message = f"{message}: give --auth-issuer URL, --auth-token-file PATH or {TOKENS_ENV}"
        raise UsageError(message) from None
