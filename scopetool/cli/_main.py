"""The ``scopetool`` command line: the parser, and the dispatch to one subcommand's module."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Final, NoReturn

from .. import __version__
from .._stdio import reserved_stdout
from .._target import TargetError
from . import _pins
from ._auth import add_auth_flags
from ._code import add_code_flags
from ._common import KEY_VALUE, PROVIDERS, ExitCode, UsageError, say
from ._tasks import add_task_flags

__all__ = ["EPILOG", "EXIT_CODES", "build_parser", "main"]

EXIT_CODES: Final[dict[ExitCode, str]] = {
    ExitCode.OK: "success: the call completed; no problems found; every line admitted",
    ExitCode.FAILED: "the call failed; check found problems; validate found lines not admitted; an export failed",
    ExitCode.USAGE: "usage error: bad arguments, TARGET, tool name or file",
    ExitCode.REJECTED: "call: the arguments were rejected (the model is shown why)",
    ExitCode.INPUT_REQUESTED: "call: the tool asked for input (answer it, then resume with --continuation)",
    ExitCode.UNKNOWN: "call: the call timed out and its tool made no SAFE promise: its outcome is unknown",
    ExitCode.INTERRUPTED: "interrupted",
}
"""What each exit code means, as ``--help`` lists them (every `ExitCode`)."""
EPILOG: Final = (
    "TARGET is module:attr or path/to/file.py:attr, naming a Registry, a tool or a list of tools.\n"
    "--traceback (after the command) shows the traceback when loading TARGET (or a gateway policy) raises.\n\n"
    "exit codes:\n" + "".join(f"  {code.value:<4} {meaning}\n" for code, meaning in EXIT_CODES.items())
)
_TARGET_HELP: Final = "module:attr or path/to/file.py:attr naming a Registry, a tool or a list of tools"
_FORMATS: Final = ("auto", "neutral", *PROVIDERS)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line."""

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: message`` on one line and exit with the usage-error code."""
        self.exit(ExitCode.USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``scopetool`` command and its subcommands."""
    parser = _Parser(
        prog="scopetool",
        description="See what the model sees, try calls by hand, lint definitions, check logged calls, serve MCP.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"scopetool {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    definitions = commands.add_parser(
        "definitions",
        help="print the definitions as JSON, neutral or for a provider",
        description="Print the definitions as JSON: the neutral form, or a provider's tool list with --provider.",
    )
    definitions.add_argument("target", metavar="TARGET", help=_TARGET_HELP)
    definitions.add_argument("--provider", choices=PROVIDERS, help="export for this provider")
    definitions.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ask for (or turn off) the provider's strict mode; default: the adapter's own default",
    )
    definitions.add_argument("--mode", choices=("json_schema", "openapi"), help="gemini's schema dialect")
    definitions.add_argument("--report", action="store_true", help="print the portability report instead")

    call = commands.add_parser(
        "call",
        help="admit and run one call; print what the model would see",
        description="Admit and run one call, and print its outcome as the model would see it. An input request "
        "is printed as a pending call (JSON): add a 'response' member holding the answer (or pass --answer) and "
        "resume it with --continuation FILE.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    call.add_argument("target", metavar="TARGET", help=_TARGET_HELP)
    call.add_argument(
        "name",
        metavar="NAME",
        nargs="?",
        help="the tool to call (may be left out when TARGET holds one tool; taken from FILE with --continuation)",
    )
    call.add_argument(
        "arguments", metavar="ARGS", nargs="?", help="the arguments as JSON text; - reads standard input; absent: {}"
    )
    call.add_argument("--idempotency-key", metavar="KEY", help="the call's idempotency key")
    call.add_argument("--continuation", metavar="FILE", help="resume the pending call saved in FILE")
    call.add_argument("--answer", metavar="JSON", help="the answer to the pending call, instead of FILE's 'response'")
    call.add_argument(
        "--provider",
        choices=PROVIDERS,
        help="read ARGS as this provider's parse_tool_calls does (a null a strict export introduced means omitted)",
    )
    call.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --provider: the export's strict mode (default: the adapter's own default)",
    )

    check = commands.add_parser(
        "check",
        help="lint the definitions for every provider (exit 1 on errors)",
        description="Lint the definitions: descriptions, docstrings, names and description lengths per provider, "
        "strict mode per provider. Errors exit 1; warnings do too with --strict.",
    )
    check.add_argument("target", metavar="TARGET", help=_TARGET_HELP)
    check.add_argument(
        "--provider", action="append", choices=PROVIDERS, help="check for this provider only (repeatable)"
    )
    check.add_argument("--strict", action="store_true", help="count warnings as errors")

    validate = commands.add_parser(
        "validate",
        help="admit logged tool calls in bulk, never running them",
        description="Admit every call of a JSONL file (one call a line) as Contract.prepare would, never running "
        "one; print each line not admitted and a summary.",
    )
    validate.add_argument("target", metavar="TARGET", help=_TARGET_HELP)
    validate.add_argument("calls", metavar="CALLS.jsonl", help="the calls, one JSON object a line; - reads stdin")
    validate.add_argument(
        "--format", choices=_FORMATS, default="auto", help="the lines' format (default: recognised per line)"
    )
    validate.add_argument(
        "--jobs",
        type=_jobs,
        default=1,
        metavar="N",
        help="check the lines in N processes (default 1); the output is the same, in the same order",
    )

    serve = commands.add_parser(
        "serve",
        help="serve the tools as an MCP server, over stdio or Streamable HTTP",
        description="Serve the tools to an MCP client over stdio, or over Streamable HTTP with --http "
        "(needs pip install 'scopetool[mcp]'). Ctrl-C stops it.",
    )
    serve.add_argument("target", metavar="TARGET", help=_TARGET_HELP)
    serve.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to 127.0.0.1, "
        "this machine only; PORT 0 picks a free one)",
    )
    serve.add_argument("--name", default="scopetool", help="the server name the client is told (default: scopetool)")
    serve.add_argument("--instructions", metavar="TEXT", help="instructions for the client's model")
    serve.add_argument(
        "--page-size", metavar="N", type=int, help="list the tools N to a tools/list page (default: all on one)"
    )
    serve.add_argument(
        "--tool-search",
        action="store_true",
        help="list search_tools and call_tool in place of the whole catalog; each found tool's call is still "
        "admitted by its own contract",
    )
    serve.add_argument(
        "--always-show", action="append", metavar="NAME", help="with --tool-search: list this tool too (repeatable)"
    )
    serve.add_argument(
        "--reveal",
        action="store_true",
        help="with --tool-search: list each tool search_tools finds for the rest of the session "
        "(notifications/tools/list_changed; 2025 sessions)",
    )
    _http_settings(serve)
    _principal_flags(serve)
    _limit_flags(serve)
    add_auth_flags(serve)
    add_task_flags(serve)
    add_code_flags(serve)

    proxy = commands.add_parser(
        "proxy",
        help="serve several MCP servers' tools (and local ones) as one MCP server, guarded and audited",
        description="Serve the tools of the MCP servers in CONFIG (the mcpServers JSON of MCP clients) and of "
        "its local tools over stdio or Streamable HTTP: every call admitted by the tool's schema, the config's "
        "guards and pins applied, each call audited (see docs/mcp-gateway.md; needs pip install 'scopetool[mcp]').",
    )
    proxy.add_argument("config", metavar="CONFIG", help="the gateway config (JSON)")
    proxy.add_argument("--pins", metavar="FILE", help="the lock file tools are pinned in (over the config's)")
    proxy.add_argument("--audit", metavar="FILE", help="append the audit log to FILE (over the config's)")
    proxy.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to 127.0.0.1)",
    )
    _http_settings(proxy, " (over the config's gateway section)")
    _principal_flags(proxy, " (over the config's gateway.principal)")
    add_auth_flags(proxy, " (over the config's gateway.auth)")
    add_task_flags(proxy)
    add_code_flags(proxy, " (over the config's gateway.codeMode)")
    _pins.add_parser(commands)
    for name, command in commands.choices.items():
        if name == "pins":  # it loads no code of the user's
            continue
        command.add_argument(
            "--traceback",
            action="store_true",
            help="when loading TARGET (or a gateway policy or tools target) raises, show the traceback",
        )
    return parser


def _http_settings(command: argparse.ArgumentParser, over: str = "") -> None:
    """The flags of ``--http``'s bounds and allowed hosts (`scopetool.mcp.server.HttpSettings`)."""
    group = command.add_argument_group(f"with --http{over}")
    group.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME",
        help="a host name (or name:port) clients reach the server by; any other Host header is refused (repeatable)",
    )
    group.add_argument(
        "--allowed-origin", action="append", metavar="ORIGIN", help="a browser origin allowed to call (repeatable)"
    )
    group.add_argument(
        "--session-idle-timeout", type=float, metavar="SECONDS", help="close a session idle this long (default 300)"
    )
    group.add_argument("--max-sessions", type=int, metavar="N", help="open sessions at most (default 1000)")
    group.add_argument(
        "--header-timeout", type=float, metavar="SECONDS", help="time to send a request's headers (default 10)"
    )
    group.add_argument(
        "--body-timeout", type=float, metavar="SECONDS", help="time to send a request's body (default 30)"
    )
    group.add_argument(
        "--keep-alive-timeout", type=float, metavar="SECONDS", help="close an idle connection after (default 5)"
    )
    group.add_argument("--max-connections", type=int, metavar="N", help="connections at once at most (default 2000)")
    group.add_argument(
        "--stateless",
        action="store_true",
        default=None,
        help="serve 2025 clients without sessions too, for instances behind a load balancer",
    )


def _principal_flags(command: argparse.ArgumentParser, over: str = "") -> None:
    """The flags naming the caller of a stdio server (`scopetool.Principal`), whom policies and scopes see."""
    group = command.add_argument_group(f"over stdio, who the caller is{over}")
    group.add_argument("--principal", metavar="SUBJECT", help="run every request as this caller (stdio only)")
    group.add_argument("--principal-client", metavar="ID", help="the caller's client id (with --principal)")
    group.add_argument(
        "--principal-scope", action="append", metavar="SCOPE", help="a scope the caller holds (repeatable)"
    )


def _limit_flags(command: argparse.ArgumentParser) -> None:
    """The flags of ``serve``'s call limits (`scopetool.mcp.limits.Limits`): a call over one is refused."""
    group = command.add_argument_group("limits (a call over one is refused: 429 over HTTP)")
    group.add_argument("--caller-rate", metavar="RATE", help="each caller's calls, e.g. 10/second or 100 per minute")
    group.add_argument("--caller-concurrency", type=int, metavar="N", help="each caller's calls in flight at once")
    group.add_argument("--tool-rate", metavar="RATE", help="each tool's calls, all callers together")
    group.add_argument("--tool-concurrency", type=int, metavar="N", help="each tool's calls in flight at once")
    group.add_argument("--limits-redis", metavar="URL", help="count the rates in this Redis (redis://HOST:PORT/DB)")


def _jobs(text: str) -> int:
    """``--jobs N``: a whole number of processes, at least 1."""
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes, at least 1, not {text!r}")
    return jobs


def _say_usage_error(error: UsageError | TargetError, *, traceback_shown: bool) -> None:
    """Say `error` on one line; when the user's code raised it, print that traceback first or say how to see it."""
    raised: BaseException | None = None
    link: BaseException | None = error
    while link is not None:  # the user's exception is a TargetError's cause (proxy: behind a ConfigError)
        if isinstance(link, TargetError):
            raised = link.__cause__
        link = link.__cause__
    if raised is None:
        say(str(error))
    elif traceback_shown:
        import traceback  # noqa: PLC0415 - only this error path needs it

        traceback.print_exception(raised, file=sys.stderr)
        say(str(error))
    else:
        say(f"{error}; rerun with --traceback to see the traceback")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``scopetool`` command with `argv` (default: ``sys.argv[1:]``); return its exit code."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # call's ARGS is one word: more key=value words are read (to suggest the JSON), anything else is refused
        if extra and not (args.command == "call" and all(KEY_VALUE.match(word) for word in extra)):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.extra_arguments = extra
    except SystemExit as stop:  # --help and --version (0), or a usage error (2)
        return stop.code if isinstance(stop.code, int) else ExitCode.USAGE
    module = importlib.import_module(f"scopetool.cli._{args.command}")
    run: Callable[[argparse.Namespace], int] = module.run
    try:
        # From here on, standard output is the command's alone: a print of the TARGET's module (on
        # import or later), of a tool or of a child process goes to standard error.
        with reserved_stdout():
            try:
                return run(args)
            except (UsageError, TargetError) as error:  # a TARGET that names nothing usable is a usage error
                _say_usage_error(error, traceback_shown=getattr(args, "traceback", False))
                return ExitCode.USAGE
            except KeyboardInterrupt:
                say("interrupted")
                return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (as with `| head`): stop quietly, and let nothing flush into the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.FAILED
