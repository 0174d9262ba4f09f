"""Admission against the peers: the model's raw JSON arguments to validated call arguments.

Every runner takes the same bytes for the three signatures of `admission.py` (small, medium, large;
valid and invalid) along the path its framework takes before calling the function:

- scopetool: `Contract.prepare` (size cap, I-JSON with duplicate keys, strict schema, validation hook).
- pydantic-ai: ``Tool(fn).function_schema``: ``validator.validate_json(raw or "{}")`` then ``_call_args``.
- openai-agents: the ``_prepare_arguments`` closure ``function_tool(fn).on_invoke_tool`` runs first.
- mcp: ``func_metadata(fn).validate_arguments(pydantic_core.from_json(raw))``.
- mcp+rpc: the same from a whole JSON-RPC ``tools/call`` line, parsed as the stdio transport does.
- langchain: ``parse_tool_call`` then ``StructuredTool._to_args_and_kwargs``.
- bare: a strict pydantic-core typed-dict ``validate_json`` (the floor, and the ratios' denominator).

A peer that is not installed (or whose internals moved) is skipped with a one-line note. Timing is
`harness.medians`: calibrated batches, the runners taking turns over the rounds, median ns per call.

    python benchmarks/peers.py            # full run
    python benchmarks/peers.py --quick    # a smoke run (CI)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import harness
import pydantic_core
from admission import CASES, bare_validator, interleaved_medians, scopetool_prepare

Runner = Callable[[Any], Any]
Maker = Callable[[Callable[..., Any], str], tuple[Runner, Any]]

BASE = "bare"
REFERENCE = "pydantic-ai"


def _scopetool(fn: Callable[..., Any], raw: str) -> tuple[Runner, Any]:
    return scopetool_prepare(fn, raw), raw


def _bare(fn: Callable[..., Any], raw: str) -> tuple[Runner, Any]:
    return bare_validator(fn, raw), raw


def _pydantic_ai(fn: Callable[..., Any], raw: str) -> tuple[Runner, Any]:
    from pydantic_ai import Tool

    schema = Tool(fn).function_schema
    validate, call_args = schema.validator.validate_json, schema._call_args

    def run(raw: str) -> Any:
        return call_args(validate(raw or "{}", allow_partial="off", context=None), None)

    return run, raw


def _closure_named(obj: Any, name: str, depth: int = 0) -> Any:
    """The function called `name` among the closures (and wrapped callables) reachable from `obj`."""
    if depth > 4 or obj is None:
        return None
    if callable(obj) and getattr(obj, "__name__", None) == name:
        return obj
    reachable = []
    for cell in getattr(obj, "__closure__", None) or ():
        try:
            reachable.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    reachable += [getattr(obj, attr, None) for attr in ("_invoke_tool_impl", "__wrapped__")]
    for candidate in reachable:
        found = _closure_named(candidate, name, depth + 1) if callable(candidate) else None
        if found is not None:
            return found
    return None


def _openai_agents(fn: Callable[..., Any], raw: str) -> tuple[Runner, Any]:
    from agents import function_tool

    function = function_tool(fn)
    prepare = _closure_named(function.on_invoke_tool, "_prepare_arguments")
    if prepare is None:
        raise RuntimeError("no _prepare_arguments closure in FunctionTool.on_invoke_tool")
    name = function.name

    def run(raw: str) -> Any:
        prepared = prepare(raw, name)
        return prepared.args, prepared.kwargs

    return run, raw


def _func_metadata(fn: Callable[..., Any]) -> Any:
    try:
        from mcp.server.mcpserver.utilities.func_metadata import func_metadata
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp.utilities.func_metadata import func_metadata
    return func_metadata(fn)


def _mcp(fn: Callable[..., Any], raw: str) -> tuple[Runner, Any]:
    validate_arguments = _func_metadata(fn).validate_arguments
    from_json = pydantic_core.from_json

    def run(raw: str) -> Any:
        return validate_arguments(from_json(raw))

    return run, raw


def _mcp_rpc(fn: Callable[..., Any], raw: str) -> tuple[Runner, Any]:
    from mcp.types import CallToolRequestParams
    from mcp_types import jsonrpc_message_adapter

    validate_arguments = _func_metadata(fn).validate_arguments
    message, params_of = jsonrpc_message_adapter.validate_json, CallToolRequestParams.model_validate
    line = f'{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{fn.__name__}","arguments":{raw}}}}}'

    def run(line: str) -> Any:
        request = message(line, by_name=False)
        params = params_of({} if request.params is None else request.params, by_name=False)
        return validate_arguments(params.arguments or {})

    return run, line


def _langchain(fn: Callable[..., Any], raw: str) -> tuple[Runner, Any]:
    from langchain_core.output_parsers.openai_tools import parse_tool_call
    from langchain_core.tools import tool

    to_args, name = tool(fn)._to_args_and_kwargs, fn.__name__

    def run(raw: str) -> Any:
        call = parse_tool_call({"id": "call_1", "function": {"name": name, "arguments": raw}}, return_id=True)
        assert call is not None
        return to_args(call["args"], call["id"])

    return run, raw


MAKERS: dict[str, Maker] = {
    "scopetool": _scopetool,
    "pydantic-ai": _pydantic_ai,
    "openai-agents": _openai_agents,
    "mcp": _mcp,
    "mcp+rpc": _mcp_rpc,
    "langchain": _langchain,
    "bare": _bare,
}
LABELS = {
    "scopetool": "scopetool Contract.prepare",
    "pydantic-ai": "pydantic-ai",
    "openai-agents": "OpenAI Agents SDK",
    "mcp": "MCP SDK (parsed arguments)",
    "mcp+rpc": "MCP SDK (JSON-RPC line)",
    "langchain": "langchain-core",
    "bare": "bare pydantic-core validate_json",
}
# The column heads of the peer table, short enough for eight columns at the docs' width.
SHORT = {
    "scopetool": "prepare",
    "pydantic-ai": "pydantic-ai",
    "openai-agents": "Agents SDK",
    "mcp": "MCP SDK",
    "mcp+rpc": "MCP, JSON-RPC",
    "langchain": "langchain",
    "bare": "bare",
}


def _accepts(run: Runner, arg: Any) -> bool:
    try:
        run(arg)
    except Exception:  # any rejection counts
        return False
    return True


def measure(rounds: int, target: float) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Median ns per call of every available runner on every case, and a note per skipped runner."""
    notes: dict[str, str] = {}
    rows = []
    for case, fn, raw in CASES:
        expect_valid = case.endswith("/valid")
        runners: dict[str, tuple[Runner, Any]] = {}
        for label, make in MAKERS.items():
            if label in notes:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    runners[label] = make(fn, raw)
            except ImportError as error:
                notes[label] = f"not installed ({error.name or error})"
                continue
            except Exception as error:  # a peer whose internals moved is skipped, not fatal
                notes[label] = f"skipped: {type(error).__name__}: {error}"[:160]
                continue
            if _accepts(*runners[label]) != expect_valid:
                notes.setdefault(label, f"note: {'rejects' if expect_valid else 'accepts'} the {case} input")
        rows.append({"case": case, "bytes": len(raw), "ns": interleaved_medians(runners, rounds, target)})
    return rows, notes


def ratio(value: float) -> str:
    """A ratio as the tables and the chart print it: two decimals below 10x, one above."""
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown: one row per case, the bare validator's ns per call and every runner's time as a multiple of it."""
    shown = [label for label in MAKERS if label != BASE and any(label in row["ns"] for row in rows)]
    lines = [
        "| case | bare (ns) | " + " | ".join(SHORT[label] for label in shown) + " |",
        "|---|---:|" + "---:|" * len(shown),
    ]
    for row in rows:
        ns = row["ns"]
        cells = [ratio(ns[label] / ns[BASE]) if label in ns else "-" for label in shown]
        lines.append(f"| {row['case']} | {ns[BASE]:.0f} | " + " | ".join(cells) + " |")
    return lines


def skipped(notes: dict[str, str]) -> list[str]:
    """One line per runner that was skipped or behaved unexpectedly."""
    return [f"- {LABELS[label]}: {note}" for label, note in notes.items()]


def report(options: harness.Options) -> str:
    """The comparison's Markdown: how it was run, the table, and the runners skipped."""
    rows, notes = measure(options.rounds, options.target)
    how = harness.timing(options)
    versions = ("pydantic-core", "pydantic-ai-slim", "openai-agents", "mcp", "langchain-core")
    return "\n".join([harness.header(options, *versions, how=how), "", *table(rows), "", *skipped(notes)])


def main() -> None:
    """Run the comparison and print its tables."""
    harness.run(__doc__, report)


if __name__ == "__main__":
    main()
