"""The README's code runs as shown, and it holds no figure that goes stale."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def readme() -> str:
    return README.read_text(encoding="utf-8")


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", readme(), re.S)


def bash_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.S)]


def claimed_output(block: str) -> list[str]:
    """What a block says it prints: a `#> value` after a print call, and the `#>` lines that follow it."""
    claimed: list[str] = []
    for line in block.splitlines():
        trailing = re.match(r"^print\(.*\)\s+#> (.+)$", line)
        if trailing:
            claimed.append(trailing.group(1))
        elif line.startswith("#> "):
            claimed.append(line[3:])
    return claimed


def run_blocks(blocks: list[str]) -> list[str]:
    """Run the blocks in order in one namespace, as a reader pastes them, and check what each prints."""
    namespace: dict[str, Any] = {"__name__": "readme"}
    printed: list[str] = []
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, str(README), "exec"), namespace)
        lines = out.getvalue().splitlines()
        for value in claimed_output(block):
            assert value in lines, (value, lines)
        printed += lines
    return printed


def test_readme_python_blocks_run_and_print_what_they_claim() -> None:
    """Each Python block that needs no provider SDK runs; its `#>` comments are lines it prints."""
    blocks = [block for block in python_blocks() if "from openai import" not in block]
    assert blocks
    run_blocks(blocks)


def test_readme_first_program_takes_the_short_path() -> None:
    """The first program admits and runs a call with `registry.run_sync`, without the protocol's explicit steps."""
    first = python_blocks()[0]
    assert "registry.run_sync(" in first
    assert "prepare(" not in first and "asyncio" not in first
    assert len([line for line in first.splitlines() if line.strip() and not line.startswith("#>")]) <= 14


def test_readme_provider_loop_runs_against_a_recorded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI loop runs with the SDK's own types: the model's call is admitted, run and answered."""
    openai = pytest.importorskip("openai")
    from openai.types.chat import ChatCompletion

    def completion(message: dict[str, Any]) -> ChatCompletion:
        finish = "tool_calls" if "tool_calls" in message else "stop"
        choice = {"index": 0, "finish_reason": finish, "message": {"role": "assistant", **message}}
        return ChatCompletion.model_validate(
            {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
        )

    sent: list[list[dict[str, Any]]] = []

    class Completions:
        def create(self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatCompletion:
            assert [tool["function"]["name"] for tool in tools] == ["add"]
            sent.append(list(messages))
            if len(sent) == 1:
                arguments = json.dumps({"a": 1234, "b": 4321})
                call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": arguments}}
                return completion({"content": None, "tool_calls": [call]})
            return completion({"content": "1234 + 4321 = 5555"})

    class Client:
        def __init__(self) -> None:
            self.chat = type("Chat", (), {"completions": Completions()})()

    monkeypatch.setattr(openai, "OpenAI", Client)
    printed = run_blocks(python_blocks())
    assert printed[-1] == "1234 + 4321 = 5555"
    assert sent[1][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "5555"}


def test_readme_gives_the_install_and_the_test_command() -> None:
    """A user gets an install from the checkout that runs the quickstart; a contributor CONTRIBUTING's test command."""
    commands = bash_blocks(readme())
    assert commands[0] == (
        "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/python examples/quickstart.py"
    )
    assert "'.[test]'" in commands[-1] and "pytest" in commands[-1]
    contributing = bash_blocks((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert commands[-1] == contributing[0]


def test_readme_test_command_is_the_one_first_run_times() -> None:
    """benchmarks/first_run.py times the README's test command: the same install and the same pytest run."""
    report = (ROOT / "benchmarks" / "first_run.md").read_text(encoding="utf-8")
    assert re.search(r"^\| `pip install -e '\.\[test\]'` \|", report, re.M), report
    command = bash_blocks(readme())[-1]
    assert "pip install -e '.[test]'" in command and command.endswith("python -m pytest")


def test_readme_holds_no_figure_that_goes_stale() -> None:
    """No test counts, timings or speed ratios: the README links the benchmark report instead."""
    text = readme()
    assert not re.search(r"\d+(\.\d+)?x\b", text), "a speed ratio belongs in docs/benchmarks.md"
    assert not re.search(r"\d[\d,]* (passed|tests)\b|\d+(\.\d+)? ?s\b(?! of)", text)
    assert "docs/benchmarks.md" in text


def test_readme_shows_what_the_quickstart_prints() -> None:
    """The README's output block is the quickstart's output after the definitions, exactly as it prints it."""
    shown = re.findall(r"```text\n(.*?)```", readme(), re.S)[0]
    printed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")], capture_output=True, text=True, check=True
    ).stdout
    after_definitions = printed[printed.rindex("\n}\n") + 3 :].lstrip("\n")
    assert shown == after_definitions
