"""``scopetool serve``: the registry as an MCP server over stdio (the server is `scopetool.mcp.server`)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Final

from .._registry import Registry
from .._stdio import reserved_stdin
from ._common import ExitCode, UsageError, describe
from ._target import load_registry

__all__ = ["MISSING_SDK", "import_problem", "run"]

MISSING_SDK: Final = "scopetool serve needs the MCP SDK: pip install 'scopetool[mcp]'"
"""What ``serve`` says when the ``mcp`` package is not installed."""


def run(args: argparse.Namespace) -> int:
    """Load TARGET and serve it over stdio until the client disconnects.

    Standard input is the protocol's from the start, as standard output is (`main`): the TARGET's
    module reads an empty input, even on import.
    """
    with reserved_stdin():
        registry = load_registry(args.target)
        try:
            module = importlib.import_module("scopetool.mcp.server")
        except ImportError as error:
            raise UsageError(import_problem(error)) from None
        run_stdio: Callable[[Registry], None] = module.run_stdio
        run_stdio(registry)
    return ExitCode.OK


def import_problem(error: ImportError) -> str:
    """The one line to show when the MCP server cannot be imported: the SDK's absence, or the error itself."""
    link: BaseException | None = error
    seen: set[int] = set()
    while link is not None and id(link) not in seen:  # the server may re-raise the SDK's error as its cause
        seen.add(id(link))
        name = getattr(link, "name", None) or ""
        if name == "mcp" or name.startswith("mcp."):
            return MISSING_SDK
        link = link.__cause__
    return f"scopetool serve cannot start: {describe(error)}"
