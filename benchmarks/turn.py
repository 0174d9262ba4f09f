"""A whole tool turn: a provider's assistant message with 1 or 8 calls to the provider's result messages.

Every runner does the same job with its own API, on the same message, for a sync and an async
``add(a: int, b: int) -> int`` tool, in the OpenAI Chat and the Anthropic formats:

- scopetool: ``parse_tool_calls`` -> ``run_call`` -> ``result_message`` (`scopetool.providers`).
- Driver: ``parse_tool_calls`` -> ``Driver.run`` on the memory backend (a fresh run id a turn, so every
  call really runs) -> ``Turn.messages``.
- OpenAI Agents SDK: ``FunctionTool.on_invoke_tool`` per call (the JSON text it takes: Anthropic's parsed
  ``input`` encoded with ``json.dumps``), its output put into the provider's message.
- pydantic-ai: a ``ToolCallPart`` per call through the run step's ``ToolManager.handle_call``.
- MCP SDK: ``MCPServer.call_tool(name, arguments)`` per call (OpenAI's argument text parsed with
  ``pydantic_core.from_json``), its text content put into the provider's message.
- langchain-core: ``BaseTool.ainvoke`` of a tool call (OpenAI's read with ``parse_tool_call``), its
  ``ToolMessage`` put into the provider's message.

The calls of a turn run concurrently (``asyncio.gather``) as every framework's loop runs them; a turn
of one call is awaited directly. A peer that is not installed is skipped with a note. Timing: one
event loop, `harness.medians`; the median microseconds per turn. Where valgrind is installed (not with
``--quick``), the instructions per turn are counted beside the timings (`harness.instructions`).

A second table times the hop of a sync tool to a worker thread on its own (`hops`); a third, the cost
of building a `Request` beside `prepare`'s on the 15-byte call (`request_cost`).

    python benchmarks/turn.py            # full run
    python benchmarks/turn.py --quick    # a smoke run (CI)
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextvars
import functools
import gc
import itertools
import json
import os
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import harness
import pydantic_core
from harness import IDLE, Step, awaits, calls

from scopetool import Effect, Registry, Request, bind, tool
from scopetool.driver import Driver, MemoryBackend
from scopetool.providers import anthropic, openai_chat, run_call

Turn = Callable[[Any], Awaitable[Any]]
KINDS = ("async", "sync")
PROVIDERS = ("openai-chat", "anthropic")
SIZES = (1, 8)
BASE = "scopetool"
LABELS = {
    "scopetool": "scopetool (parse_tool_calls, run_call, result_message)",
    "driver": "scopetool Driver (memory backend)",
    "openai-agents": "OpenAI Agents SDK (FunctionTool.on_invoke_tool)",
    "pydantic-ai": "pydantic-ai (ToolManager.handle_call)",
    "mcp": "MCP SDK (MCPServer.call_tool)",
    "langchain": "langchain-core (BaseTool.ainvoke)",
}
SHORT = {
    "scopetool": "scopetool",
    "driver": "Driver",
    "openai-agents": "Agents SDK",
    "pydantic-ai": "pydantic-ai",
    "mcp": "MCP SDK",
    "langchain": "langchain",
}
PEERS = ("openai-agents", "pydantic-ai", "mcp", "langchain")


def sync_add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def async_add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


FUNCTIONS = {"sync": sync_add, "async": async_add}


def message(provider: str, size: int) -> dict[str, Any]:
    """The assistant message of one turn: `size` calls of ``add`` (as JSON, the way the SDKs dump theirs)."""
    if provider == "openai-chat":
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{k}",
                    "type": "function",
                    "function": {"name": "add", "arguments": f'{{"a": {k}, "b": 3}}'},
                }
                for k in range(size)
            ],
        }
    return {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": f"toolu_{k}", "name": "add", "input": {"a": k, "b": 3}} for k in range(size)
        ],
    }


def _module(provider: str) -> Any:
    return openai_chat if provider == "openai-chat" else anthropic


async def _all(coroutines: list[Awaitable[Any]]) -> list[Any]:
    """The calls of a turn: one awaited directly, more run concurrently."""
    if len(coroutines) == 1:
        return [await coroutines[0]]
    return list(await asyncio.gather(*coroutines))


def _answer(provider: str, call_id: str, text: str) -> dict[str, Any]:
    """A peer's output as the provider's result message (what scopetool's ``result_message`` writes)."""
    if provider == "openai-chat":
        return {"role": "tool", "tool_call_id": call_id, "content": text}
    return {"type": "tool_result", "tool_use_id": call_id, "content": [{"type": "text", "text": text}]}


def _calls(provider: str, payload: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(id, name, arguments) of each call as the provider gives it: OpenAI's text, Anthropic's parsed input."""
    if provider == "openai-chat":
        return [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in payload["tool_calls"]]
    return [(b["id"], b["name"], b["input"]) for b in payload["content"] if b["type"] == "tool_use"]


def _scopetool(kind: str, provider: str) -> Turn:
    registry = Registry(tool(name="add", effect=Effect.SAFE)(FUNCTIONS[kind]))
    module = _module(provider)
    parse, answer = module.parse_tool_calls, module.result_message

    async def turn(payload: dict[str, Any]) -> list[dict[str, Any]]:
        calls = parse(payload)
        outcomes = await _all([run_call(registry, call) for call in calls])
        return [answer(call, outcome) for call, outcome in zip(calls, outcomes, strict=True)]

    return turn


def _driver(kind: str, provider: str) -> Turn:
    registry = Registry(tool(name="add", effect=Effect.SAFE)(FUNCTIONS[kind]))
    module = _module(provider)
    parse = module.parse_tool_calls
    runs = itertools.count()
    state = {"driver": Driver(registry, MemoryBackend()), "turns": 0}

    async def turn(payload: dict[str, Any]) -> list[dict[str, Any]]:
        state["turns"] += 1
        if state["turns"] % 4096 == 0:  # a new store now and then, so memory stays flat
            state["driver"] = Driver(registry, MemoryBackend())
        driven = await state["driver"].run(f"run-{next(runs)}", parse(payload))
        return driven.messages(module)

    return turn


def _openai_agents(kind: str, provider: str) -> Turn:
    from agents import function_tool
    from agents.tool_context import ToolContext

    function = function_tool(FUNCTIONS[kind], name_override="add")
    invoke = function.on_invoke_tool
    dumps = json.dumps

    async def one(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
        text = arguments if isinstance(arguments, str) else dumps(arguments)
        context = ToolContext(context=None, tool_name=name, tool_call_id=call_id, tool_arguments=text)
        return _answer(provider, call_id, str(await invoke(context, text)))

    async def turn(payload: dict[str, Any]) -> list[dict[str, Any]]:
        return await _all([one(*call) for call in _calls(provider, payload)])

    return turn


def _pydantic_ai(kind: str, provider: str) -> Turn:
    from pydantic_ai import RunContext
    from pydantic_ai import Tool as AiTool
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tool_manager import ToolManager
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import RunUsage

    context = RunContext(deps=None, model=TestModel(), usage=RunUsage(), run_id="run-1", conversation_id="conv-1")
    start = ToolManager(toolset=FunctionToolset([AiTool(FUNCTIONS[kind], name="add")]), ctx=context)
    prepared: list[Any] = []

    async def one(manager: Any, call_id: str, name: str, arguments: Any) -> dict[str, Any]:
        returned = await manager.handle_call(ToolCallPart(name, arguments, tool_call_id=call_id))
        return _answer(provider, call_id, str(returned))

    async def turn(payload: dict[str, Any]) -> list[dict[str, Any]]:
        if not prepared:  # the run step's manager, made once (as the agent graph makes one a step)
            prepared.append(await start.for_run_step(context))
        return await _all([one(prepared[0], *call) for call in _calls(provider, payload)])

    return turn


def _mcp(kind: str, provider: str) -> Turn:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")
    server.add_tool(FUNCTIONS[kind], name="add")
    from_json = pydantic_core.from_json

    async def one(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
        parsed = from_json(arguments) if isinstance(arguments, str) else arguments
        result = await server.call_tool(name, parsed)
        return _answer(provider, call_id, "".join(block.text for block in result.content))

    async def turn(payload: dict[str, Any]) -> list[dict[str, Any]]:
        return await _all([one(*call) for call in _calls(provider, payload)])

    return turn


def _langchain(kind: str, provider: str) -> Turn:
    from langchain_core.output_parsers.openai_tools import parse_tool_call
    from langchain_core.tools import tool as lc_tool

    native = lc_tool("add")(FUNCTIONS[kind])

    async def one(call: dict[str, Any]) -> dict[str, Any]:
        reply = await native.ainvoke(call)
        return _answer(provider, reply.tool_call_id, str(reply.content))

    def read(payload: dict[str, Any]) -> list[dict[str, Any]]:
        if provider == "openai-chat":
            return [parse_tool_call(raw, return_id=True) for raw in payload["tool_calls"]]  # type: ignore[misc]
        return [
            {"name": name, "args": arguments, "id": call_id, "type": "tool_call"}
            for call_id, name, arguments in _calls(provider, payload)
        ]

    async def turn(payload: dict[str, Any]) -> list[dict[str, Any]]:
        return await _all([one(call) for call in read(payload)])

    return turn


MAKERS: dict[str, Callable[[str, str], Turn]] = {
    "scopetool": _scopetool,
    "driver": _driver,
    "openai-agents": _openai_agents,
    "pydantic-ai": _pydantic_ai,
    "mcp": _mcp,
    "langchain": _langchain,
}


def cases() -> list[tuple[str, str, str, int]]:
    """(case name, tool kind, provider, calls per turn) of every case (those of ``--cases``, when given)."""
    chosen = os.environ.get("TURN_CASES", "").split(",")
    return [
        (f"{kind}/{provider}/{size}", kind, provider, size)
        for kind in KINDS
        for provider in PROVIDERS
        for size in SIZES
        if chosen == [""] or f"{kind}/{provider}/{size}" in chosen
    ]


def runners(kind: str, provider: str, notes: dict[str, str]) -> dict[str, Turn]:
    """Every installed runner of a case (a skipped one gets a note)."""
    made: dict[str, Turn] = {}
    chosen = os.environ.get("TURN_RUNNERS", "").split(",")
    for label, make in MAKERS.items():
        if label in notes or (chosen != [""] and label not in chosen):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                made[label] = make(kind, provider)
        except ImportError as error:
            notes[label] = f"not installed ({error.name or error})"
    return made


async def _check(turn: Turn, payload: dict[str, Any], provider: str, size: int) -> None:
    """Every runner answers every call with its sum (so no runner is timed doing less)."""
    answers = await turn(payload)
    texts = [
        a["content"] if provider == "openai-chat" else "".join(block["text"] for block in a["content"]) for a in answers
    ]
    if texts != [str(k + 3) for k in range(size)]:
        raise SystemExit(f"turn.py: a runner answered {texts!r}")


def timed(made: dict[str, Turn], payload: dict[str, Any], rounds: int, target: float) -> dict[str, float]:
    """Median µs per turn of each runner on `payload` (`harness.medians`, on one event loop)."""
    loop = asyncio.new_event_loop()
    try:
        runs = {label: awaits(functools.partial(turn, payload), loop) for label, turn in made.items()}
        return {label: ns / 1000 for label, ns in harness.medians(runs, rounds, target).items()}
    finally:
        loop.close()


def measure(
    rounds: int, target: float, counted: int | None
) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, float]]:
    """Every case's median µs per turn (and, with `counted` calls, instructions per turn) of every runner; skip
    notes; the instructions of the `PARTS` (empty without `counted` or valgrind)."""
    notes: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for case, kind, provider, size in cases():
        payload = message(provider, size)
        made = runners(kind, provider, notes)
        for turn in made.values():
            asyncio.run(_check(turn, payload, provider, size))
        harness.settle()
        rows.append({"case": case, "calls": size, "us": timed(made, payload, rounds, target)})
    parts: dict[str, float] = {}
    if counted is not None and harness.can_count():
        found = harness.instructions(__file__, counted)
        for row in rows:
            row["instructions"] = found.get(row["case"], {})
        parts = {**found.get(PART, {}), **{f"hop: {label}": value for label, value in found.get(HOP, {}).items()}}
    return rows, notes, parts


def parts_table(parts: dict[str, float]) -> list[str]:
    """Markdown: the instructions of each part (callgrind), the hops apart (`hops_table` shows them)."""
    shown = {label: value for label, value in parts.items() if not label.startswith("hop: ")}
    if not shown:
        return []
    return ["| part | instructions |", "|---|---:|", *(f"| {label} | {value:,.0f} |" for label, value in shown.items())]


PART = "parts"
HOP = "hops"


def steps(count: int) -> list[Step]:
    """Under callgrind: every runner of every case (`count` calls a turn's worth), each way of the hop table
    (counted whole), and each part (less its idle loop)."""
    loop = asyncio.new_event_loop()
    notes: dict[str, str] = {}
    found: list[Step] = []
    for case, kind, provider, size in cases():
        payload = message(provider, size)
        for label, turn in {IDLE: _idle, **runners(kind, provider, notes)}.items():
            found.append(Step(case, label, awaits(functools.partial(turn, payload), loop), max(1, count // size)))
    found += [Step(HOP, label, awaits(make(), loop), count) for label, make in _hop_makers().items()]
    parts = {IDLE: lambda: None, **{label: part() for label, part in PARTS.items()}}
    found += [Step(PART, label, calls(lambda _, run=run: run()), count) for label, run in parts.items()]
    return found


async def _idle(_: Any) -> None:
    return None


def _mint() -> Callable[[], Any]:
    from scopetool.driver._identity import KeyMinter

    key = KeyMinter(b"s" * 32).key
    return lambda: key("run-1", "call_1", 0)


def _digest() -> Callable[[], Any]:
    from scopetool.driver import call_digest

    return lambda: call_digest("add", b'{"a": 1, "b": 3}')


def _request() -> Callable[[], Any]:
    raw = '{"a":17,"b":25}'
    return lambda: Request(name="add", arguments=raw)  # as the timed table builds it


def _prepare() -> Callable[[], Any]:
    prepare = bind(tool(name="add")(sync_add)).contract.prepare
    request = Request(name="add", arguments='{"a":17,"b":25}')
    return lambda: prepare(request)


PARTS: dict[str, Callable[[], Callable[[], Any]]] = {
    "Driver: minting one call's key": _mint,
    "Driver: the digest of one call's arguments": _digest,
    "Request(name=..., arguments=...)": _request,
    "prepare(request) on the 15-byte call": _prepare,
}


# The hop of a sync tool to a worker thread, on its own.


def _hop_makers() -> dict[str, Callable[[], Callable[[], Awaitable[Any]]]]:
    def to_thread() -> Callable[[], Awaitable[Any]]:
        return lambda: asyncio.to_thread(sync_add, 2, 3)

    def default_executor() -> Callable[[], Awaitable[Any]]:
        def hop() -> Awaitable[Any]:
            return asyncio.get_running_loop().run_in_executor(None, functools.partial(sync_add, 2, 3))

        return hop

    def dedicated_pool() -> Callable[[], Awaitable[Any]]:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="bench")

        def hop() -> Awaitable[Any]:
            context = contextvars.copy_context()
            return asyncio.get_running_loop().run_in_executor(pool, functools.partial(context.run, sync_add, 2, 3))

        return hop

    def func_call() -> Callable[[], Awaitable[Any]]:
        binding = bind(tool(name="add")(sync_add))
        prepare, call = binding.contract.prepare, binding.call
        request = Request(name="add", arguments='{"a": 2, "b": 3}')

        def hop() -> Awaitable[Any]:
            return call(prepare(request))  # each call needs its own invocation

        return hop

    def pool() -> Callable[[], Awaitable[Any]]:
        from scopetool._threads import run_sync

        kwargs = {"a": 2, "b": 3}
        return lambda: run_sync(sync_add, kwargs)

    def inline() -> Callable[[], Awaitable[Any]]:
        async def hop() -> Any:
            return sync_add(2, 3)

        return hop

    return {
        "inline (no hop: the floor)": inline,
        "asyncio.to_thread": to_thread,
        "loop.run_in_executor(None, ...)": default_executor,
        "loop.run_in_executor(a dedicated pool, ...), context copied": dedicated_pool,
        "scopetool's pool (scopetool._threads.run_sync)": pool,
        "scopetool prepare + Binding.call of the sync tool (the hop and the call)": func_call,
    }


def hops(rounds: int, target: float) -> dict[str, float]:
    """Median µs per call of each way to run a trivial sync function from a coroutine."""
    made = {label: make() for label, make in _hop_makers().items()}
    return timed({label: (lambda _, hop=hop: hop()) for label, hop in made.items()}, {}, rounds, target)


# The request's own cost, beside prepare's.


def request_cost(rounds: int, target: float) -> dict[str, float]:
    """Median ns of ``Request(name=..., arguments=...)`` and of `prepare` on the 15-byte call, interleaved."""
    raw = '{"a":17,"b":25}'
    prepare = bind(tool(name="add")(sync_add)).contract.prepare
    request = Request(name="add", arguments=raw)
    runs = {
        REQUEST: calls(lambda a: Request(name="add", arguments=a), raw),
        "Request('add', raw)": calls(lambda a: Request("add", a), raw),
        PREPARE: calls(lambda _: prepare(request), raw),
    }
    return harness.medians(runs, rounds, target)


# What collecting the Driver's store costs its turn.

COLLECTOR_CASE = "async/openai-chat/1"
COLLECTOR_OFF = "driver, collector off"
KEPT = "objects kept a turn"


def collector_cost(rounds: int, target: float) -> dict[str, float]:
    """Median µs per turn of `COLLECTOR_CASE`: the plain loop, the Driver, the Driver with the collector off;
    and how many objects the collector tracks the Driver keeps a turn (`KEPT`).

    The Driver's memory backend keeps every call for replays (`_driver` renews the store every 4096
    turns), and the garbage collector walks what is kept; the third runner is the same Driver with
    ``gc`` disabled during its own batches, so the difference is what collecting costs its turn.
    """
    kind, provider, size = COLLECTOR_CASE.split("/")
    payload = message(provider, int(size))
    made = {BASE: _scopetool(kind, provider), "driver": _driver(kind, provider), COLLECTOR_OFF: _driver(kind, provider)}
    loop = asyncio.new_event_loop()
    runs = {label: awaits(functools.partial(turn, payload), loop) for label, turn in made.items()}
    collected = runs[COLLECTOR_OFF]

    def uncollected(count: int) -> int:
        gc.disable()
        try:
            return collected(count)
        finally:
            gc.enable()

    runs[COLLECTOR_OFF] = uncollected

    async def kept() -> float:  # objects the collector tracks, left per turn by a fresh Driver
        turn = _driver(kind, provider)
        await turn(payload)
        gc.collect()
        before = len(gc.get_objects())
        for _ in range(1000):
            await turn(payload)
        gc.collect()
        return (len(gc.get_objects()) - before) / 1000

    harness.settle()
    try:
        medians = {label: ns / 1000 for label, ns in harness.medians(runs, rounds, target).items()}
    finally:
        loop.close()
    return {**medians, KEPT: asyncio.run(kept())}


def ratio(value: float) -> str:
    """Two decimals below 10x, one above."""
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown: per case, scopetool's µs per turn, every runner's time as a multiple of it, then instructions."""
    shown = [label for label in MAKERS if label != BASE and any(label in row["us"] for row in rows)]
    lines = [
        "| case (tool/format/calls) | scopetool (µs) | " + " | ".join(SHORT[label] for label in shown) + " |",
        "|---|---:|" + "---:|" * len(shown),
    ]
    for row in rows:
        us = row["us"]
        cells = [ratio(us[label] / us[BASE]) if label in us else "-" for label in shown]
        lines.append(f"| {row['case']} | {us[BASE]:.1f} | " + " | ".join(cells) + " |")
    if any(row.get("instructions") for row in rows):
        lines += [
            "",
            "Instructions per turn (callgrind), and every runner's as a multiple of scopetool's:",
            "",
            "| case | scopetool (instructions) | " + " | ".join(SHORT[label] for label in shown) + " |",
            "|---|---:|" + "---:|" * len(shown),
        ]
        for row in rows:
            counts = row.get("instructions") or {}
            if BASE not in counts:
                continue
            cells = [ratio(counts[label] / counts[BASE]) if label in counts else "-" for label in shown]
            lines.append(f"| {row['case']} | {counts[BASE]:,.0f} | " + " | ".join(cells) + " |")
    return lines


def targets(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown table rows (target, measured, met) of the turn's targets."""
    lines: list[str] = []
    ahead = [(row["us"][p] / row["us"][BASE], row["case"], p) for row in rows for p in PEERS if p in row["us"]]
    if ahead:
        least, case, peer = min(ahead)
        lines.append(
            "| a whole tool turn at least 1.5x ahead of the nearest peer in every case (their time / scopetool's, "
            f"the least: {SHORT[peer]}, {case}) | {least:.2f}x | {'yes' if least >= 1.5 else '**no**'} |"
        )
    driven = [(row["us"]["driver"] / row["us"][BASE], row["case"]) for row in rows if "driver" in row["us"]]
    if driven:
        most, case = max(driven)
        lines.append(
            "| the Driver (memory) at most 1.5x the plain loop in every case (the most: "
            f"{case}) | {most:.2f}x | {'yes' if most <= 1.5 else '**no**'} |"
        )
    return lines


POOL = "scopetool's pool (scopetool._threads.run_sync)"
REQUEST = "Request(name=..., arguments=...)"
PREPARE = "prepare(request)"


def more_targets(
    hops_measured: dict[str, float] | None,
    request_measured: dict[str, float] | None,
    parts: dict[str, float] | None = None,
) -> list[str]:
    """Markdown table rows of the sync hop's and the request's targets (with instruction counts when there are)."""
    lines: list[str] = []
    parts = parts or {}
    if hops_measured:
        value = hops_measured[POOL] / hops_measured["asyncio.to_thread"]
        pool, floor = parts.get(f"hop: {POOL}"), parts.get("hop: asyncio.to_thread")
        counted = f"; instructions {pool / floor:.2f}x" if pool and floor else ""
        lines.append(
            f"| a sync tool's hop to a worker thread: scopetool's pool at most 1.0x `asyncio.to_thread`{counted} "
            f"| {value:.2f}x | {'yes' if value <= 1.0 else '**no**'} |"
        )
    if request_measured:
        value = request_measured[REQUEST] / request_measured[PREPARE]
        request, prepare = parts.get(REQUEST), parts.get("prepare(request) on the 15-byte call")
        counted = f"; instructions {request / prepare:.2f}x" if request and prepare else ""
        lines.append(
            f"| `Request(name=..., arguments=...)` at most 0.15x `prepare` on the 15-byte call{counted} | {value:.2f}x "
            f"| {'yes' if value <= 0.15 else '**no**'} |"
        )
    return lines


MINT, DIGEST = "Driver: minting one call's key", "Driver: the digest of one call's arguments"


def _counted(counts: dict[str, float], label: str) -> str:
    if label in counts and BASE in counts:
        return f"; instructions {counts[label] / counts[BASE]:.2f}x"
    return ""


def shortfalls(turns: dict[str, Any]) -> list[str]:
    """Markdown bullets: every case that misses a turn target, by how much, and what the counts say of why."""
    lines: list[str] = []
    slow_driver: list[str] = []
    for row in turns["rows"]:
        us, counts = row["us"], row.get("instructions") or {}
        behind = [peer for peer in PEERS if peer in us and us[peer] / us[BASE] < 1.5]
        lines += [
            f"- {row['case']}: the {LABELS[peer]} took {us[peer] / us[BASE]:.2f}x scopetool's time per turn "
            f"(the target is at least 1.5x){_counted(counts, peer)}."
            for peer in behind
        ]
        if "driver" in us and us["driver"] / us[BASE] > 1.5:
            slow_driver.append(row["case"])
            lines.append(
                f"- {row['case']}: the Driver took {us['driver'] / us[BASE]:.2f}x the plain loop's time (the target is "
                f"at most 1.5x){_counted(counts, 'driver')}."
            )
    parts = turns.get("parts") or {}
    rows = {row["case"]: row for row in turns["rows"]}
    base = rows.get("async/openai-chat/1", {}).get("instructions", {}).get(BASE)
    driver = rows.get("async/openai-chat/1", {}).get("instructions", {}).get("driver")
    if slow_driver and MINT in parts and DIGEST in parts and base and driver:
        mint, digest = parts[MINT], parts[DIGEST]
        rest = driver - base - mint
        counted = [
            (row["instructions"]["driver"] / row["instructions"][BASE], case)
            for case, row in rows.items()
            if {"driver", BASE} <= set(row.get("instructions") or {})
        ]
        most, most_case = max(counted)
        within = (
            f"by instructions every case is within the target (the most: {most:.2f}x, {most_case}); by time, "
            f"{', '.join(slow_driver)} {'is' if len(slow_driver) == 1 else 'are'} not. "
            if most <= 1.5
            else ""
        )
        lines.append(
            f"- Why the Driver misses: {within}Beyond the plain loop, it mints each call's key ({mint:,.0f} "
            "instructions: "
            "HMAC-SHA256 of the call's identity, two copies of hashlib's keyed states, in base32), "
            f"{mint / base:.0%} of a whole plain one-call turn ({base:,.0f} instructions, async tool, OpenAI Chat); "
            "keys are the same text in every backend and version (durable stores keep them), so every call gets "
            f"one. The digest of a call's arguments ({digest:,.0f} instructions) is not on this path: the memory "
            "backend works it out only when a key comes again. The rest, "
            f"{rest:,.0f} instructions ({rest / base:.0%}), is the Driver's own Python: the admission under the "
            "minted key, the admitted call and its entry in the backend's store, the backend's coroutine, the "
            f"call's result and the `Turn`.{_collecting(turns.get('collector'))}"
        )
    return lines + _why_sync_turns_miss(turns)


def _collecting(collector: dict[str, float] | None) -> str:
    """A sentence on what collecting the Driver's store costs its turn (`collector_cost`), or nothing."""
    if not collector:
        return ""
    plain, driver, off = collector[BASE], collector["driver"], collector[COLLECTOR_OFF]
    kept = collector[KEPT]
    walked = (
        f"({kept:.0f} objects the garbage collector tracks, a turn of one call) is walked by its collections"
        if round(kept)
        else "is left alone by the garbage collector (a turn of one call leaves no object it tracks)"
    )
    return (
        f" What the Driver keeps for replays (each call's outcome, name and arguments) {walked}: on "
        f"{COLLECTOR_CASE}, measured on its own, the Driver took {driver:.1f} µs a turn against the plain loop's "
        f"{plain:.1f} µs ({driver / plain:.2f}x), and {off:.1f} µs ({off / plain:.2f}x) with the collector off "
        "during its batches."
    )


def _why_sync_turns_miss(turns: dict[str, Any]) -> list[str]:
    """A bullet on the sync-tool turns behind a peer: what the hop to a thread takes of scopetool's turn."""
    rows = {row["case"]: row for row in turns["rows"]}
    pool = (turns.get("hops") or {}).get(POOL)
    hop_counted = (turns.get("parts") or {}).get(f"hop: {POOL}")
    cases = []
    for case, row in rows.items():
        us, twin = row["us"], rows.get(case.replace("sync/", "async/", 1), {}).get("us")
        behind = [p for p in PEERS if p in us and us[p] / us[BASE] < 1.5]
        if not case.startswith("sync/") or not behind or not twin:
            continue
        hop = us[BASE] - twin[BASE]  # the same turn with an async tool: all but the hop
        peer = min(behind, key=lambda p: us[p])
        counted = row.get("instructions", {}).get(BASE, 0) - rows[case.replace("sync/", "async/", 1)].get(
            "instructions", {}
        ).get(BASE, 0)
        instructions = f" ({counted:,.0f} instructions more than the async turn's)" if counted > 0 else ""
        cases.append(
            f"{case}: scopetool {us[BASE]:.0f} µs, {hop:.0f} µs of it ({hop / us[BASE]:.0%}) the hop, the async "
            f"turn's {twin[BASE]:.1f} µs the rest{instructions}; the {LABELS[peer]} {us[peer]:.0f} µs, "
            f"{us[peer] / hop:.2f}x the hop alone"
        )
    if not cases or pool is None:
        return []
    alone = f"; {hop_counted:,.0f} instructions" if hop_counted else ""
    return [
        "- Why the sync one-call turns miss: a sync tool's turn is mostly its hop to a worker thread and back, two "
        "thread wake-ups every runner pays (the Agents SDK through `asyncio.to_thread`). "
        f"{'; '.join(cases)}. The hop costs more in a turn than back to back in the hop table ({pool:.0f} µs"
        f"{alone}): there, the worker is handed its next call before it has gone to sleep. Where a peer's "
        "whole turn is under 1.5x the hop alone, no cut to the rest of scopetool's turn reaches the target; only a "
        "cheaper wake-up would, and the pool already does the least a correct hop needs (`scopetool/_threads.py`)."
    ]


def skipped(notes: dict[str, str]) -> list[str]:
    """One line per runner that was skipped."""
    return [f"- {LABELS[label]}: {note}" for label, note in notes.items()]


def hops_table(measured: dict[str, float], parts: dict[str, float] | None = None) -> list[str]:
    """Markdown: µs and instructions per call of each way to run a sync function off the loop, and their ratios."""
    base = measured["asyncio.to_thread"]
    counts = {label[len("hop: ") :]: value for label, value in (parts or {}).items() if label.startswith("hop: ")}
    if not counts:
        lines = ["| way | µs per call | / asyncio.to_thread |", "|---|---:|---:|"]
        lines += [f"| {label} | {value:.1f} | {value / base:.2f}x |" for label, value in measured.items()]
        return lines
    floor = counts["asyncio.to_thread"]
    lines = [
        "| way | µs per call | / asyncio.to_thread | instructions per call | / asyncio.to_thread |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, value in measured.items():
        count = counts.get(label, 0.0)
        lines.append(f"| {label} | {value:.1f} | {value / base:.2f}x | {count:,.0f} | {count / floor:.2f}x |")
    return lines


def request_table(measured: dict[str, float]) -> list[str]:
    """Markdown: ns per call of building the request and of prepare, and the request's share of prepare."""
    base = measured["prepare(request)"]
    lines = ["| what | ns per call | / prepare |", "|---|---:|---:|"]
    lines += [f"| {label} | {value:.0f} | {value / base:.2f}x |" for label, value in measured.items()]
    return lines


def report(options: harness.Options) -> str:
    """The tables asked for (all three by default), with how they were measured."""
    args, rounds, target = options.args, options.rounds, options.target
    if args.cases:  # through the environment, so the callgrind child sees them too
        os.environ["TURN_CASES"] = args.cases
    if args.runners:
        os.environ["TURN_RUNNERS"] = f"{BASE},{args.runners}"
    how = f"{harness.timing(options, 'turn')} {harness.counting(options, 'a turn of 8 calls an eighth of them')}"
    lines = [harness.header(options, "pydantic-ai-slim", "openai-agents", "mcp", "langchain-core", how=how), ""]
    if args.only in (None, "turn"):
        rows, notes, parts = measure(rounds, target, options.calls if options.count else None)
        lines += [*table(rows), "", *(skipped(notes) or ["Every peer ran."]), "", *targets(rows), ""]
        lines += [*parts_table(parts), ""]
        if not args.runners or "driver" in args.runners.split(","):
            collector = collector_cost(rounds, target)
            lines += [f"- {COLLECTOR_CASE}, {label}: {value:.1f}" for label, value in collector.items()]
            lines += [""]
    if args.only in (None, "hops"):
        measured_hops = hops(rounds, target)
        lines += [*hops_table(measured_hops), "", *more_targets(measured_hops, None), ""]
    if args.only in (None, "request"):
        measured_request = request_cost(rounds, target)
        lines += [*request_table(measured_request), "", *more_targets(None, measured_request), ""]
    return "\n".join(lines)


def main() -> None:
    """Run every case and print the tables."""

    def flags(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--only", choices=("turn", "hops", "request"), help="run one table only")
        parser.add_argument("--cases", help="comma-separated cases (tool/format/calls) to run, not all")
        parser.add_argument("--runners", help="comma-separated runners to run, not all (scopetool always runs)")

    harness.run(__doc__, report, full=harness.Plan(calls=200), steps=steps, flags=flags)


if __name__ == "__main__":
    main()
