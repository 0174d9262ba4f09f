"""``scopetool serve --code-mode`` and ``scopetool proxy --code-mode``: ``run_code`` served in place of the tools."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from ._common import UsageError

if TYPE_CHECKING:
    from ..code import CodeLimits

__all__ = ["add_code_flags", "code_limits"]


def add_code_flags(command: argparse.ArgumentParser, over: str = "") -> None:
    """The code mode flags of ``serve`` and ``proxy``."""
    group = command.add_argument_group(f"code mode{over}")
    group.add_argument(
        "--code-mode",
        action="store_true",
        help="list run_code in place of the tools: the model's Python snippet calls them, each nested call "
        "admitted, limited and audited as a direct call (needs pip install 'scopetool[code]')",
    )
    group.add_argument(
        "--code-calls", type=int, metavar="N", help="with --code-mode: tool calls one snippet may make (default 50)"
    )


def code_limits(args: argparse.Namespace, current: CodeLimits | None = None) -> CodeLimits | None:
    """The snippets' limits ``--code-mode`` (or `current`, the config's) and ``--code-calls`` give; None: no code mode.

    Raises:
        UsageError: ``--code-calls`` without code mode or out of its range, or the sandbox not installed.
    """
    if not args.code_mode and current is None:
        if args.code_calls is not None:
            raise UsageError("--code-calls applies to --code-mode only")
        return None
    try:
        from ..code import CodeLimits  # noqa: PLC0415 - only code mode needs the sandbox
    except ImportError as error:  # pragma: no cover - the extra is installed wherever the tests run
        raise UsageError(str(error)) from None
    limits = CodeLimits() if current is None else current
    if args.code_calls is None:
        return limits
    try:
        return dataclasses.replace(limits, nested_calls=args.code_calls)
    except ValueError as error:
        raise UsageError(f"--code-calls: {str(error).partition('nested_calls ')[2]}") from None
