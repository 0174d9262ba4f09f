"""``scopetool call`` with tools that take a CallContext: registry deps, a one-line approval, a question."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import FIXTURES, Command

TARGET = f"{FIXTURES / 'context_tools.py'}:registry"


def test_an_approval_waits_then_runs_once_with_yes_and_is_rejected_with_no(command: Command, tmp_path: Path) -> None:
    """A pending approval prints; ``--continuation`` with true runs it (with the deps), with false rejects it."""
    asked = command("call", TARGET, "remove", '{"path": "a.txt"}', "--idempotency-key", "k1")
    assert asked.returncode == 4
    pending = json.loads(asked.stdout)
    assert pending["input_request"]["prompt"] == "Delete a.txt?"
    assert pending["input_request"]["response_schema"] == {"type": "boolean"}
    (tmp_path / "pending.json").write_text(asked.stdout, encoding="utf-8")

    approved = command("call", TARGET, "--continuation", "pending.json", "--answer", "true", cwd=tmp_path)
    assert (approved.returncode, approved.stdout) == (0, "ada deleted a.txt (it existed; key k1)\n")
    refused = command("call", TARGET, "--continuation", "pending.json", "--answer", "false", cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stdout == 'error: tool "remove" was not run: approval was declined\n'
    assert "rejected" in refused.stderr


def test_a_question_resumes_with_the_typed_answer(command: Command, tmp_path: Path) -> None:
    """`CallContext.ask` prints a pending call whose answer, given back, reaches the function."""
    asked = command("call", TARGET, "label", '{"path": "a.txt"}')
    assert asked.returncode == 4
    pending = json.loads(asked.stdout)
    assert pending["input_request"]["response_schema"] == {"type": "string"}
    answered = tmp_path / "answered.json"
    answered.write_text(json.dumps({**pending, "response": "greeting"}), encoding="utf-8")
    resumed = command("call", TARGET, "--continuation", str(answered))
    assert (resumed.returncode, resumed.stdout) == (0, "a.txt is labelled 'greeting' by ada\n")


def test_the_context_parameter_is_not_in_the_printed_definitions(command: Command) -> None:
    """``scopetool definitions`` shows only the model's inputs."""
    listed = command("definitions", TARGET)
    assert listed.returncode == 0
    assert [sorted(d["input_schema"]["properties"]) for d in json.loads(listed.stdout)] == [["path"], ["path"]]
