"""The runnable examples run, and print what the README says they print."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(name: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, check=True, timeout=60
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
