"""``scopetool serve --code-mode``: the official SDK client over stdio and Streamable HTTP runs code that calls tools.

The server is the command itself, in a subprocess, serving `code_fixture_tools.py`. Its ``tools/list`` is
``run_code`` (with ``--tool-search``, beside ``search_tools`` and ``call_tool``); a snippet's nested calls
are admitted by each tool's contract; an approval asked by a nested call reaches the client as the code
call's elicitation and resumes the same run, whose completed nested calls do not run again.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, types
from mcp.client.session import ClientRequestContext

from scopetool import Principal, Registry, acting_as, current_principal
from scopetool.cli import main
from scopetool.code import CodeLimits
from scopetool.mcp.limits import Limit, Limiter, LimitError, Limits
from scopetool.mcp.server import create_server

FIXTURE = Path(__file__).with_name("code_fixture_tools.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
MODERN = "2026-07-28"

SNIPPET_TWO_TOOLS = "t = await tick()\nawait add(a=t, b=2)"
SNIPPET_APPROVAL = "t = await tick()\n[await add(a=t, b=10), await approve(item='invoice-7')]"
SNIPPET_BAD_CALL = "await add(a='one', b=2)"
SNIPPET_OVER_BUDGET = "[await add(a=1, b=1), await add(a=2, b=2), await add(a=3, b=3), await add(a=4, b=4)]"
SNIPPET_HIDDEN = (
    "out = []\n"
    "for step in [lambda: add(a=1, b=2), lambda: tick()]:\n"
    "    try:\n        out.append(await step())\n    except NameError as error:\n        out.append(str(error))\nout"
)
SNIPPET_TWO_ADDS = (
    "out = []\n"
    "for step in [lambda: add(a=1, b=2), lambda: add(a=3, b=4)]:\n"
    "    try:\n        out.append(await step())\n    except RuntimeError as error:\n        out.append(str(error))\nout"
)


def text(result: types.CallToolResult) -> str:
    """The result's one text block."""
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


class Person:
    """Accepts every elicitation with `answer`, and remembers the prompts."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.prompts.append(params.message)
        return types.ElicitResult(action="accept", content=self.answer)


def served(*flags: str) -> StdioServerParameters:
    """``scopetool serve code_fixture_tools.py:registry --code-mode FLAGS`` as a desktop client starts it."""
    args = ["-m", "scopetool", "serve", f"{FIXTURE}:registry", "--code-mode", *flags]
    return StdioServerParameters(command=sys.executable, args=args, env=ENV)


async def test_over_stdio_code_calls_tools_and_an_approval_resumes_the_same_run() -> None:
    """run_code alone is listed; nested calls run, a bad one is rejected by add's contract, one approval resumes."""
    person = Person({"answer": True})
    async with Client(served("--code-calls", "3", "--caller-concurrency", "1"), elicitation_callback=person) as client:
        listed = (await client.list_tools()).tools
        two = await client.call_tool("run_code", {"code": SNIPPET_TWO_TOOLS})
        approved = await client.call_tool("run_code", {"code": SNIPPET_APPROVAL})
        ticks = await client.call_tool("tick", {})  # the tools stay callable by name
        bad = await client.call_tool("run_code", {"code": SNIPPET_BAD_CALL})
        over = await client.call_tool("run_code", {"code": SNIPPET_OVER_BUDGET})
    assert [tool.name for tool in listed] == ["run_code"]
    assert "- add(a, b): Add two integers." in (listed[0].description or "")
    assert "- tick(): Count one more run" in (listed[0].description or "")
    # one call in flight per caller: the code call holds it, and its nested calls are not refused for it
    assert json.loads(text(two))["result"] == 3
    report = json.loads(text(approved))
    assert person.prompts == ["Approve the transfer?"]
    assert report["result"][0] == 12 and json.loads(report["result"][1])["answer"] is True
    assert [call["outcome"] for call in report["calls"]] == ["returned", "returned", "returned"]
    assert text(ticks) == "3"  # tick ran once per snippet: not again when the approved snippet resumed
    assert bad.is_error and "invalid arguments for tool 'add'" in text(bad) and "$.a" in text(bad)
    assert "'one'" not in text(bad)
    assert over.is_error and "this snippet used its 3 nested tool calls" in text(over)


async def test_over_http_with_tool_search_a_2026_client_answers_the_approval_by_retrying() -> None:
    """--tool-search --http: the three tools listed, run_code points to search_tools; input_required resumes the run."""
    command = [sys.executable, "-m", "scopetool", "serve", f"{FIXTURE}:registry", "--code-mode", "--tool-search"]
    command += ["--http", "127.0.0.1:0"]
    with subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV) as process:
        try:
            assert process.stderr is not None
            lines = [await asyncio.to_thread(process.stderr.readline) for _ in range(2)]
            assert "behind search_tools, call_tool and run_code at http://" in lines[1]
            url = lines[1].split(" at ", 1)[1].split(" ", 1)[0]
            person = Person({"answer": True})
            async with Client(url, mode=MODERN, elicitation_callback=person) as client:
                listed = (await client.list_tools()).tools
                found = await client.call_tool("search_tools", {"query": "add two integers"})
                approved = await client.call_tool("run_code", {"code": SNIPPET_APPROVAL})
        finally:
            process.kill()
    assert [tool.name for tool in listed] == ["search_tools", "call_tool", "run_code"]
    description = listed[2].description or ""
    assert "search_tools" in description and "add(" not in description
    assert found.structured_content is not None and found.structured_content["tools"][0]["name"] == "add"
    report = json.loads(text(approved))
    assert person.prompts == ["Approve the transfer?"] and report["result"][0] == 11
    assert json.loads(report["result"][1])["answer"] is True


@asynccontextmanager
async def as_caller(server: Any, caller: Principal) -> AsyncGenerator[Client]:
    """The official client over memory streams, every request of its server run as `caller`."""
    with acting_as(caller):
        async with Client(server, mode="legacy") as client:
            yield client


async def test_a_tool_hidden_from_a_caller_is_neither_in_its_description_nor_callable() -> None:
    """visible: each caller's run_code entry names its own tools; a hidden one is a NameError in its snippet."""
    from code_fixture_tools import registry

    def visible(name: str) -> bool:
        caller = current_principal()
        return name != "tick" or (caller is not None and caller.subject == "ops")

    server = create_server(registry, visible=visible, code_mode=True)
    async with as_caller(server, Principal("ada")) as ada:
        ada_listed = (await ada.list_tools()).tools
        ada_ran = await ada.call_tool("run_code", {"code": SNIPPET_HIDDEN})
    async with as_caller(server, Principal("ops")) as ops:
        ops_listed = (await ops.list_tools()).tools
    assert [tool.name for tool in ada_listed] == ["run_code"]
    assert "tick" not in (ada_listed[0].description or "") and "- add(a, b)" in (ada_listed[0].description or "")
    assert "- tick():" in (ops_listed[0].description or "")
    assert json.loads(text(ada_ran))["result"] == [3, "name 'tick' is not defined"]


async def test_nested_calls_count_against_the_tool_limits_and_are_told_with_the_caller() -> None:
    """A tool rate of 1: the second nested add is refused with the limit's text; on_call hears each, as the caller."""
    from code_fixture_tools import registry

    told: list[tuple[str, str, str | None]] = []

    def on_call(call: Any, outcome: Any) -> None:
        caller = current_principal()
        told.append((call.name, type(outcome).__name__, None if caller is None else caller.subject))

    limiter = Limiter(Limits(caller=Limit(concurrency=1), tools={"add": Limit(rate="1/minute")}))
    server = create_server(registry, limiter=limiter, on_call=on_call, code_mode=True)
    async with as_caller(server, Principal("ada")) as ada:
        ran = await ada.call_tool("run_code", {"code": SNIPPET_TWO_ADDS})
    result = json.loads(text(ran))["result"]
    assert result[0] == 3
    assert result[1].startswith('Rate limit exceeded: calls of tool "add" are limited to 1 per minute')
    assert told == [("add", "Result", "ada"), ("add", "LimitError", "ada"), ("run_code", "Result", "ada")]


def test_code_mode_is_checked_and_never_shadows_a_tool() -> None:
    """A code_mode that is not a bool or CodeLimits is a TypeError; a catalog tool named run_code a ProviderError."""
    from code_fixture_tools import registry

    from scopetool import tool
    from scopetool.providers import ProviderError

    with pytest.raises(TypeError, match="code_mode must be True, False or CodeLimits, not str"):
        create_server(registry, code_mode="yes")  # type: ignore[arg-type]

    @tool
    def run_code(code: str) -> str:
        """Mine."""
        return code

    with pytest.raises(ProviderError, match="code mode lists its own 'run_code'"):
        create_server(Registry(run_code), code_mode=True)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["serve", f"{FIXTURE}:registry", "--code-calls", "3"],
            "scopetool: --code-calls applies to --code-mode only\n",
        ),
        (
            ["serve", f"{FIXTURE}:registry", "--code-mode", "--code-calls", "0"],
            "scopetool: --code-calls: must be a positive int, not 0\n",
        ),
    ],
)
def test_a_code_mode_flag_mistake_is_one_line(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A code mode flag given wrongly: one usage line on stderr, exit 2, nothing served."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1


def test_a_target_tool_named_run_code_is_a_usage_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--code-mode over a TARGET with its own run_code: one line asking to rename it."""
    target = tmp_path / "tools.py"
    target.write_text(
        "from scopetool import tool\n\n@tool\ndef run_code(code: str) -> str:\n    '''Mine.'''\n    return code\n"
    )
    assert main(["serve", f"{target}:run_code", "--code-mode"]) == 2
    assert (
        capsys.readouterr().err
        == "scopetool: --code-mode lists its own 'run_code': rename TARGET's tool of that name\n"
    )


def test_a_proxy_code_calls_without_code_mode_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """proxy --code-calls with neither --code-mode nor the config's codeMode: one usage line, nothing started."""
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"git": {"command": "git"}}}))
    assert main(["proxy", str(config), "--code-calls", "3"]) == 2
    assert capsys.readouterr().err == "scopetool: --code-calls applies to --code-mode only\n"


def test_serve_code_mode_hands_run_stdio_its_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """In process: --code-mode (with --code-calls) reaches run_stdio as CodeLimits; without it, none is passed."""
    import scopetool.mcp.server as server_module

    given: list[dict[str, Any]] = []

    def run_stdio(registry: Registry, **options: Any) -> None:
        given.append(options)

    monkeypatch.setattr(server_module, "run_stdio", run_stdio)
    assert main(["serve", f"{FIXTURE}:registry", "--code-mode", "--code-calls", "9"]) == 0
    assert main(["serve", f"{FIXTURE}:registry", "--code-mode", "--tool-search"]) == 0
    assert main(["serve", f"{FIXTURE}:registry"]) == 0
    assert given[0]["code_mode"] == CodeLimits(nested_calls=9)
    assert given[1]["code_mode"] == CodeLimits() and given[1]["tool_search"] is not None
    assert "code_mode" not in given[2]


def test_per_caller_entries_are_kept_up_to_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each set of visible tools gets its own entry; past KEPT_DESCRIPTIONS the least recently listed goes."""
    from code_fixture_tools import registry

    import scopetool.mcp._code_mode as code_mode

    hidden = {"name": ""}
    monkeypatch.setattr(code_mode, "KEPT_DESCRIPTIONS", 2)
    front = code_mode.CodeFront(
        registry, None, visible=lambda name: name != hidden["name"], limiter=None, on_call=None, searching=False
    )
    descriptions: list[str] = []
    for name in ("add", "add", "tick", "approve"):
        hidden["name"] = name
        descriptions.append(front.entry()["description"])
    assert "- add(" not in descriptions[0] and "- tick(" in descriptions[0] and descriptions[1] == descriptions[0]
    assert "- tick(" not in descriptions[2] and "- add(" in descriptions[2]
    assert len(front._entries) == 2  # pyright: ignore[reportPrivateUsage] - the bound is what is tested


async def test_a_nested_entry_skips_the_callers_concurrency_but_not_its_rate() -> None:
    """Limiter.enter(nested=True): admitted while the caller's one slot is held; counted against its rate."""
    limiter = Limiter(Limits(caller=Limit(rate="2/minute", concurrency=1)))
    outer = await limiter.enter("run_code")
    assert not isinstance(outer, LimitError)
    direct = await limiter.enter("add")
    nested = await limiter.enter("add", nested=True)
    over = await limiter.enter("add", nested=True)
    assert isinstance(direct, LimitError) and str(direct).startswith("Concurrency limit exceeded: this caller's")
    assert not isinstance(nested, LimitError)
    assert isinstance(over, LimitError) and str(over).startswith("Rate limit exceeded: this caller's calls")
