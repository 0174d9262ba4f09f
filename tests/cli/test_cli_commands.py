"""Every subcommand of ``scopetool`` as a user runs it: real files, real processes, output and exit codes.

Tests taking the `command` fixture run twice: as a new process (``python -m scopetool ...``, what a
user does) and in-process through `scopetool.cli.main` (which is what the coverage measurement sees).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_support import FIXTURES, Command, run_process

from scopetool import __version__, overrunning_calls
from scopetool.cli._common import ExitCode

T = "cli_tools.py:registry"
IMPOSSIBLE = "impossible: all: warning:"
TRACEBACK = "; rerun with --traceback to see the traceback\n"
ARGS_HINT = """(ARGS is one JSON object, as in '{"city": "Lisbon"}')"""
KEY_VALUE = "ARGS must be one JSON object, not key=value words"
UNSATISFIABLE = "no value satisfies this schema"


@dataclass(frozen=True)
class Case:
    """One command line, what it reads on standard input, and what it must print and return."""

    argv: tuple[str, ...]
    code: int
    out: tuple[str, ...] = ()
    err: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    """Texts that must appear nowhere in standard output (what the model would be shown)."""
    unsaid: tuple[str, ...] = ()
    """Texts that must appear nowhere in standard error (a tool's private messages)."""
    stdin: str | None = None


def case(*argv: str, code: int, out: str | tuple[str, ...] = (), err: str | tuple[str, ...] = (), **more: object):
    """A `Case` as a pytest parameter, named by its command line."""
    outs = (out,) if isinstance(out, str) else out
    errs = (err,) if isinstance(err, str) else err
    return pytest.param(Case(argv, code, outs, errs, **more), id=" ".join(argv)[:90])  # type: ignore[arg-type]


CASES = [
    # definitions: neutral, for a provider, the report; the target forms
    case("definitions", "cli_tools.py:calculator", code=0, out=('"name": "add"', '"name": "divide"')),
    case("definitions", "cli_tools:calculator", code=0, out='"name": "divide"'),
    case("definitions", T, code=0, out=('"name": "greet"', '"name": "transfer"')),
    case("definitions", "cli_tools.py:Holder.tool", code=0, out='"effect": "safe"'),
    case("definitions", T, "--provider", "openai_chat", code=0, out=('"type": "function"', '"strict": true')),
    case("definitions", T, "--provider", "openai_chat", "--no-strict", code=0, out='"strict": false'),
    case("definitions", T, "--provider", "gemini", "--mode", "openapi", code=0, out='"parameters"'),
    case("definitions", T, "--provider", "anthropic", "--strict", "--report", code=0, out="- add (strict)"),
    case("definitions", "messy_tools.py:registry", "--provider", "gemini", code=1, err="cannot be exported to gemini"),
    case("definitions", T, "--provider", "gemini", "--strict", code=2, err="--strict: gemini has no strict mode"),
    case("definitions", T, "--no-strict", code=2, err="--no-strict: it needs --provider"),
    case("definitions", T, "--report", code=2, err="--report needs --provider"),
    case("definitions", T, "--provider", "mcp", "--mode", "openapi", code=2, err="--mode is gemini's"),
    case("definitions", T, "--provider", "openai", code=2, err="invalid choice: 'openai'"),
    # TARGET: every way it can be wrong is one line and exit code 2
    case("definitions", "cli_tools.py", code=2, err="must be module:attr or path/to/file.py:attr"),
    case("definitions", "cli_tools.py:1st", code=2, err="must be module:attr"),
    case("definitions", "nowhere.py:registry", code=2, err="cannot load 'nowhere.py': no such file"),
    case("definitions", "nowhere.tools:registry", code=2, err="no module named 'nowhere'"),
    case("definitions", "cli_tools.py:registy", code=2, err="'cli_tools.py' has no attribute 'registy'"),
    case(
        "definitions", "cli_tools.py:NOT_A_TOOL", code=2, err="must name a Registry, a tool or a list of tools, not int"
    ),
    case("definitions", "odd_targets.py:mixed", code=2, err="'odd_targets.py:mixed'[1] must be a tool, not int"),
    case(
        "definitions",
        "odd_targets.py:lazy.tools",
        code=2,
        err=f"of 'odd_targets.py' raised RuntimeError: not configured: token=hunter2 (at odd_targets.py:18){TRACEBACK}",
    ),
    case(
        "definitions",
        "odd_targets.py:lazy.other",
        code=2,
        err="reading 'lazy.other' of 'odd_targets.py' raised KeyError",
    ),
    case("definitions", "odd_targets.py:undefinable", code=2, err="definition: reading it raised ValueError"),
    case("definitions", "odd_targets.py:lazy", code=2, err="must name a Registry, a tool or a list of tools, not Lazy"),
    case("definitions", "cli_tools.py:undecorated", code=2, err="(decorate the function with @scopetool.tool)"),
    case("definitions", "cli_tools.py:DUPLICATES", code=2, err="tool name 'add' appears more than once"),
    case("definitions", "broken_import.py:x", code=2, err=f"cannot be imported (at broken_import.py:3){TRACEBACK}"),
    case(
        "check",
        "missing_dependency:x",
        code=2,
        err="ModuleNotFoundError: No module named 'scopetool_no_such_dependency' (at missing_dependency.py:3); rerun",
    ),
    case("call", "broken_import:x", code=2, err="importing 'broken_import' raised RuntimeError: this module"),
    case("definitions", "./notes.txt:x", code=2, err="cannot load './notes.txt' as a Python module"),
    # call: each outcome as the model would see it
    case("call", T, "add", '{"a": 2, "b": 3}', code=0, out="5\n"),
    case("call", T, "add", "-", stdin='{"a": 1, "b": 1}\n', code=0, out="2\n"),
    case(
        "call",
        T,
        "add",
        '{"a": 2}',
        code=3,
        out="- $.b: missing required field",
        err="were rejected",
        unsaid=("ARGS is one JSON object",),
    ),
    # ARGS that are not a JSON object: key=value words are a usage error that shows the JSON; others are rejected
    case(
        "call", T, "add", "a:2", code=3, out="not valid JSON", err=f"the model is shown the message above {ARGS_HINT}"
    ),
    case("call", T, "add", "[2, 3]", code=3, out="must be a JSON object", err=ARGS_HINT),
    case("call", T, "add", "a=2", "b=3", code=2, err=f'{KEY_VALUE}: scopetool call {T} add \'{{"a": 2, "b": 3}}\'\n'),
    case(
        "call", "cli_tools.py:add", "a=2", code=2, err=f"{KEY_VALUE}: scopetool call cli_tools.py:add '{{\"a\": 2}}'\n"
    ),
    case(
        "call",
        T,
        "city=Lisbon",
        "days=[1, 2]",
        "units=metric",
        code=2,
        err=f'{KEY_VALUE}: scopetool call {T} NAME \'{{"city": "Lisbon", "days": [1, 2], "units": "metric"}}\' '
        "(NAME: one of add, count,",
    ),
    case("call", T, "add", "{}", "extra", code=2, err="unrecognized arguments: extra (see scopetool --help)"),
    case("definitions", T, "a=1", code=2, err="unrecognized arguments: a=1"),
    # a forgotten NAME: ARGS where NAME goes
    case(
        "call",
        T,
        '{"a": 2}',
        code=2,
        err=f"""'{{"a": 2}}' is where NAME goes, and it looks like ARGS: name the tool first, as in """
        f"""scopetool call {T} NAME '{{"a": 2}}' (NAME: one of add, count,""",
    ),
    case("call", T, "-", stdin="{}", code=2, err="'-' is where NAME goes, and it looks like ARGS"),
    case("call", T, "add", '{"a": 1, "a": 2, "b": 3}', code=3, out="the same member name twice"),
    case("call", T, "count", code=3, out="- $.to: missing required field"),
    case("call", T, "pay", '{"amount": -1}', code=3, out="amount must be a positive number of cents\n"),
    case(
        "call",
        T,
        "divide",
        '{"dividend": 1, "divisor": 0}',
        code=1,
        out="cannot divide by zero\n",
        err="(its private cause: ZeroDivisionError)",
        unsaid=("internal",),
    ),
    case(
        "call",
        T,
        "explode",
        '{"reason": "x"}',
        code=1,
        out='error: tool "explode" failed\n',
        err="the call raised RuntimeError; the model is shown only the generic text above",
        hidden=("hunter2", "RuntimeError"),
        unsaid=("hunter2",),
    ),
    case("call", T, "count", '{"to": 2}', code=0, out="counted to 2\n", err=("progress: 1/2 at 1", "progress: 2/2")),
    case("call", T, "stats", '{"values": [1, 2.5]}', code=0, out='{"min":1.0,"max":2.5}\n'),
    case("call", T, "greet", '{"name": "Ada"}', code=0, out="Grüß Gott, Ada!\n"),
    case("call", T, "picture", code=0, out="a dot: [image/png media: 8 bytes]\n"),
    case(
        "call",
        "cli_tools.py:defective",
        "defective",
        code=1,
        out='error: tool "defective" failed\n',
        err="the input validator of 'defective' raised KeyError; the model is shown only the generic text",
        unsaid=("validator bug",),
    ),
    # a TARGET of one tool needs no NAME; --provider reads ARGS as that provider's parse_tool_calls does
    case("call", "cli_tools.py:add", '{"a": 2, "b": 3}', code=0, out="5\n"),
    case("call", "cli_tools.py:add", "-", stdin='{"a": 1, "b": 1}', code=0, out="2\n"),
    case("call", "cli_tools.py:add", code=3, out="- $.a: missing required field"),
    case(
        "call", "cli_tools.py:add", "ad", code=2, err="no tool named 'ad' in cli_tools.py:add; did you mean 'add'? its"
    ),
    case("call", T, "Stat", code=2, err=f"no tool named 'Stat' in {T}; did you mean 'stats'? its tools: add, count"),
    case("call", T, "grete", code=2, err="did you mean 'greet'?"),
    case("call", "odd_targets.py:search", '{"query": "x", "limit": null}', code=3, out="$.limit: Input should be"),
    case(
        "call",
        "odd_targets.py:search",
        '{"query": "x", "limit": null}',
        "--provider",
        "openai_chat",
        code=0,
        out="10 results for x\n",
    ),
    case(
        "call",
        "odd_targets.py:search",
        '{"query": "x", "limit": 2}',
        "--provider",
        "openai_responses",
        code=0,
        out="2 results",
    ),
    case(
        "call",
        "odd_targets.py:search",
        '{"query": "x", "limit": null}',
        "--provider",
        "openai_chat",
        "--no-strict",
        code=3,
    ),
    case("call", "odd_targets.py:search", "--provider", "gemini", "--strict", code=2, err="gemini has no strict mode"),
    case(
        "call",
        "messy_tools.py:registry",
        "1st-place",
        "--provider",
        "gemini",
        code=1,
        err="cannot be exported to gemini",
    ),
    case(
        "call", "odd_targets.py:search", "-", "--provider", "openai_chat", stdin='{"query": "x", "limit": null}', code=0
    ),
    case(
        "call",
        "odd_targets.py:liar",
        code=1,
        out='error: tool "liar" failed\n',
        err="the call raised InvalidOutputError; the model is shown only the generic text above",
    ),
    case("call", T, "nope", code=2, err="no tool named 'nope' in cli_tools.py:registry; its tools: add, count"),
    case("call", T, code=2, err="call needs the NAME of the tool"),
    case("call", T, "add", "--answer", "true", code=2, err="--answer answers a pending call"),
    case("call", T, "--continuation", "nowhere.json", code=2, err="cannot read 'nowhere.json'"),
    # check: errors fail, warnings fail only with --strict
    case(
        "check",
        "messy_tools.py:registry",
        code=1,
        out=(
            "stale: all: error: the docstring describes 'country', which is not a parameter",
            "undocumented: all: error: parameter 'query' has no description",
            "raw: all: error: the tool has no description",
            "raw: all: error: parameter 'any' has no description",
            "1st-place: openai_chat: error: description has 1100 characters; this provider accepts at most 1024",
            "1st-place: gemini: error: cannot be exported: names must match",
            "filtered: all: warning: the docstring describes 'filters', the input model itself",
            "tagged: anthropic: warning: cannot be strict: $.labels: an open object",
            "raw: all: warning: open object (no additionalProperties) at $: JSON Schema, and so the contract, "
            "admits members it does not name",
            "10 errors, 12 warnings in 6 of 6 tools (8 providers checked)",
        ),
    ),
    case("check", "messy_tools.py:tagged", code=0, out="0 errors, 5 warnings in 1 of 1 tool (8 providers checked)"),
    case("check", "messy_tools.py:tagged", "--strict", code=1, out="tagged: mistral: error: cannot be strict"),
    case(
        "check",
        "messy_tools.py:tagged",
        "--provider",
        "anthropic",
        "--provider",
        "gemini",
        code=0,
        out="tagged: anthropic: warning: cannot be strict",
        hidden=("openai_chat", "mistral"),
    ),
    case(
        "check",
        "messy_tools.py:either",
        "--provider",
        "anthropic",
        code=1,
        out=(
            "either: anthropic: error: cannot be exported: input_schema does not support oneOf, allOf, or anyOf",
            "either: all: warning: open object (no additionalProperties) at $",
            "1 error, 1 warning in 1 of 1 tool (1 provider checked)",
        ),
    ),
    case("check", "messy_tools.py:located", code=0, out="no problems in 1 tool (8 providers checked)\n"),
    # check: what a hand-written schema says that its author may not mean (warnings)
    case(
        "check",
        "handwritten_tools.py:registry",
        "--provider",
        "mcp",
        code=0,
        out=(
            "opened: all: warning: open objects (no additionalProperties) at $, $.filter: JSON Schema, and so the "
            'contract, admits members they do not name, and strict modes cannot be used; add "additionalProperties": '
            "false to refuse them",
            f"{IMPOSSIBLE} $: {UNSATISFIABLE} (it requires 'missing', which it does not allow)",
            f"{IMPOSSIBLE} $.tags: {UNSATISFIABLE} (an enum of string values on type array)",
            f"{IMPOSSIBLE} $.flag: {UNSATISFIABLE} (an enum of string values on type boolean)",
            f"{IMPOSSIBLE} $.code: {UNSATISFIABLE} (a const integer on type string)",
            f"{IMPOSSIBLE} $.n: {UNSATISFIABLE} (minimum 5, maximum 1)",
            f"{IMPOSSIBLE} $.ratio: {UNSATISFIABLE} (exclusiveMinimum 1, exclusiveMaximum 1)",
            f"{IMPOSSIBLE} $.word: {UNSATISFIABLE} (minLength 3, maxLength 2)",
            f"{IMPOSSIBLE} $.none: {UNSATISFIABLE} (an empty enum)",
            f"{IMPOSSIBLE} $.never: {UNSATISFIABLE} (it requires 'x', which it does not allow)",
            f"{IMPOSSIBLE} $.odd: {UNSATISFIABLE} (an enum of array/boolean/null/number/object values on type string)",
            f"{IMPOSSIBLE} $.empty: {UNSATISFIABLE} (items: false, yet minItems over 0)",
            f"{IMPOSSIBLE} $.banned: {UNSATISFIABLE} (it requires 'x', which it does not allow)",
            "impossible: all: warning: open object (no additionalProperties) at $.banned:",
            "0 errors, 14 warnings in 2 of 3 tools (1 provider checked)",
        ),
        hidden=("sound:", "$.ok"),
    ),
    case(
        "check", "handwritten_tools.py:registry", "--provider", "mcp", "--strict", code=1, out="14 errors, 0 warnings"
    ),
    case(
        "check",
        "handwritten_tools.py:registry",
        "--provider",
        "openai_chat",
        code=0,
        out="opened: openai_chat: warning: cannot be strict: $: an open object (without additionalProperties",
    ),
    case(
        "check",
        "messy_tools.py:vanishing",
        code=1,
        out="vanishing: all: error: parameter 'value' has no description",
        hidden=("the input model itself",),
    ),
    case("check", "cli_tools.py:registry", code=0, out="no problems in 9 tools (8 providers checked)\n"),
    case("check", "cli_tools.py:registry", "--provider", "x", code=2, err="invalid choice: 'x'"),
    # validate and serve: the usage errors (files are in the tests below)
    case("validate", T, "nowhere.jsonl", code=2, err="cannot read 'nowhere.jsonl': No such file or directory"),
    case("validate", T, ".", code=2, err="cannot read '.': Is a directory"),
    case("validate", "nowhere.py:x", "nowhere.jsonl", code=2, err="cannot load 'nowhere.py'"),
    case("validate", T, "-", "--format", "xml", code=2, err="invalid choice: 'xml'"),
    case("serve", "cli_tools.py:NOT_A_TOOL", code=2, err="not int"),
    case("bogus", code=2, err="invalid choice: 'bogus'"),
    case(code=2, err="the following arguments are required: COMMAND"),
]


def _check(given: Case, code: int, out: str, err: str) -> None:
    assert (code, "Traceback" in err) == (given.code, False), (out, err)
    for text in given.out:
        assert text in out, (text, out)
    for text in given.err:
        assert text in err, (text, err)
    for text in given.hidden:
        assert text not in out, (text, out)
    for text in given.unsaid:
        assert text not in err, (text, err)
    if given.code == 2:
        assert out == ""
        assert err.count("\n") == 1, err
        assert err.startswith("scopetool")


@pytest.mark.parametrize("given", CASES)
def test_command_prints_and_exits_as_expected(command: Command, given: Case) -> None:
    """The command, run in the fixtures folder, prints what it should and exits with the right code."""
    result = command(*given.argv, stdin=given.stdin)
    _check(given, result.returncode, result.stdout, result.stderr)


def test_help_version_and_console_script() -> None:
    """``--help`` lists the commands and the exit codes; ``--version``; the installed ``scopetool`` script works."""
    shown = run_process("--help")
    assert shown.returncode == 0
    for text in ("definitions", "call", "check", "validate", "serve", "exit codes:", "4    call: the tool asked"):
        assert text in shown.stdout
    assert run_process("--version").stdout == f"scopetool {__version__}\n"
    script = Path(sys.executable).with_name("scopetool")
    by_script = subprocess.run(
        [str(script), "definitions", "cli_tools.py:add"], cwd=FIXTURES, capture_output=True, text=True, check=False
    )
    by_module = run_process("definitions", "cli_tools.py:add")
    assert (by_script.returncode, by_script.stdout) == (0, by_module.stdout)
    assert json.loads(by_script.stdout)[0]["name"] == "add"


def test_help_and_the_docs_list_every_exit_code() -> None:
    """``--help``, ``call --help`` and docs/cli.md list every ExitCode, and the command uses every one of them."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    for argv in (("--help",), ("call", "--help")):
        shown = run_process(*argv).stdout
        listed = shown.partition("exit codes:\n")[2].splitlines()
        assert [int(line.split()[0]) for line in listed if line.strip()] == [code.value for code in ExitCode], shown
    for code in ExitCode:
        assert re.search(rf"^\| {code.value} \| \S", page, re.MULTILINE), code
    package = Path(__file__).resolve().parents[2] / "scopetool" / "cli"
    source = "".join(path.read_text(encoding="utf-8") for path in package.glob("*.py"))
    returned = set(re.findall(r"ExitCode\.([A-Z_]+)", source.replace("class ExitCode", "")))
    assert returned == {code.name for code in ExitCode}  # each code the command returns is a listed ExitCode


@pytest.mark.parametrize("target", ["broken_import.py:x", "missing_dependency:x"])
def test_traceback_shows_where_the_target_raised(command: Command, target: str) -> None:
    """``--traceback`` prints the traceback of the TARGET's exception before the one line; without it, one line."""
    ran = command("call", target, "--traceback")
    assert (ran.returncode, ran.stdout) == (2, "")
    *trace, line = ran.stderr.splitlines()
    assert trace[0] == "Traceback (most recent call last):" and trace[-1].startswith(("RuntimeError", "ModuleNotFound"))
    assert any(target.partition(":")[0].removesuffix(".py") + ".py" in frame for frame in trace)
    assert line.startswith("scopetool: importing") and line.endswith(":3)")


@pytest.mark.needs("mcp")
@pytest.mark.parametrize("section", ["mcpServers.git", "scopetool", "gateway"])
def test_a_policy_that_cannot_be_loaded_is_named_by_its_key_and_file(tmp_path: Path, section: str) -> None:
    """``proxy``: a policy whose module raises names the config file, the key and the line; --traceback shows it."""
    (tmp_path / "policies.py").write_text('raise ValueError("no policy today")\n')
    config: dict[str, Any] = {"scopetool": {"tools": [f"{FIXTURES / 'cli_tools.py'}:add"]}}
    if section == "mcpServers.git":
        config["mcpServers"] = {"git": {"command": "unused", "policy": "policies.py:allow"}}
    else:
        config.setdefault(section, {})["policy"] = "policies.py:allow"
    (tmp_path / "gateway.json").write_text(json.dumps(config))
    ran = run_process("proxy", "gateway.json", cwd=tmp_path, stdin="")
    assert (ran.returncode, ran.stdout) == (2, ""), ran
    assert ran.stderr == (
        f"scopetool: gateway.json: {section}.policy: importing '{tmp_path / 'policies.py'}' raised ValueError: "
        f"no policy today (at policies.py:1){TRACEBACK}"
    )
    traced = run_process("proxy", "gateway.json", "--traceback", cwd=tmp_path, stdin="")
    assert traced.returncode == 2 and 'policies.py", line 1, in <module>' in traced.stderr, traced


def test_definitions_are_the_registry_definitions_as_utf8_json() -> None:
    """The neutral JSON is exactly each definition's dict, in name order, UTF-8 whatever the locale."""
    sys.path.insert(0, str(FIXTURES))
    try:
        from cli_tools import registry  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(FIXTURES))
        sys.modules.pop("cli_tools", None)
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    result = run_process("definitions", T, env=env)
    assert result.returncode == 0
    assert json.loads(result.stdout) == [d.to_dict() for d in registry.definitions()]
    assert "„Grüß Gott“" in result.stdout


def test_call_resumes_a_pending_call(command: Command, tmp_path: Path) -> None:
    """An input request prints a pending call; with an answer added, ``--continuation`` resumes that call."""
    target = f"{FIXTURES / 'cli_tools.py'}:registry"
    asked = command("call", target, "transfer", '{"to_account": "A-1", "cents": 5}', "--idempotency-key", "k1")
    assert asked.returncode == 4
    assert 'add a "response" member holding the answer' in asked.stderr
    pending = json.loads(asked.stdout)
    assert pending == {
        "tool": "transfer",
        "arguments": '{"to_account": "A-1", "cents": 5}',
        "idempotency_key": "k1",
        "input_request": {
            "continuation_state": {"cents": 5, "rate": 1.1},
            "prompt": "Send 5 cents to A-1?",
            "response_schema": {"type": "boolean"},
        },
    }
    unanswered = tmp_path / "pending.json"
    unanswered.write_text(asked.stdout, encoding="utf-8")
    answered = tmp_path / "answered.json"
    answered.write_text(json.dumps({**pending, "response": True}), encoding="utf-8")

    resumed = command("call", target, "--continuation", str(answered), cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout) == (0, "sent 5 cents (key k1)\n")
    declined = command("call", target, "transfer", "--continuation", "pending.json", "--answer", "false", cwd=tmp_path)
    assert (declined.returncode, declined.stdout) == (0, "declined; nothing was sent\n")

    def broken(name: str, text: str) -> str:
        (tmp_path / name).write_text(text, encoding="utf-8")
        return name

    wrong = {
        ("--continuation", "pending.json"): 'holds no answer: add a "response" member',
        ("--continuation", "answered.json", "--answer", "true"): 'already holds an answer in "response"',
        ("--continuation", "pending.json", "--answer", '"yes"'): "--answer: response does not satisfy the response",
        ("--continuation", "pending.json", "--answer", "yes"): "scopetool: --answer: response: not one RFC 7493 JSON "
        "document: not valid JSON: expected value (line 1, column 1)",
        ("--continuation", broken("f.json", json.dumps({**pending, "response": "yes"}))): "'f.json': response does",
        ("add", "--continuation", "pending.json", "--answer", "true"): "resumes a call of 'transfer', not of 'add'",
        ("transfer", "{}", "--continuation", "pending.json"): "give neither",
        ("--continuation", "pending.json", "--idempotency-key", "k2"): "give neither",
        ("--continuation", broken("a.json", "{")): "is not strict JSON",
        ("--continuation", broken("b.json", "[]")): "is not a pending call printed by scopetool call",
        ("--continuation", broken("c.json", json.dumps({**pending, "extra": 1}))): "expected the members tool, ",
        ("--continuation", broken("d.json", json.dumps({**pending, "tool": 1}))): "tool and arguments must be",
        (
            "--continuation",
            broken("e.json", json.dumps({**pending, "input_request": {}, "response": 1})),
        ): "an input request has",
    }
    if command is run_process:  # the same code writes each message in a process: one shows it crosses the boundary
        wrong = dict(list(wrong.items())[:1])
    for argv, message in wrong.items():
        result = command("call", target, *argv, cwd=tmp_path)
        assert (result.returncode, result.stdout) == (2, ""), argv
        assert result.stderr.count("\n") == 1 and message in result.stderr, (argv, result.stderr)
        if "--answer:" in message:  # the answer's fault: neither the file nor its arguments are blamed
            assert "arguments" not in result.stderr and "pending.json" not in result.stderr


CALLS = """\
{"name": "add", "arguments": {"a": 1, "b": 2}}
{"name": "add", "arguments": {"a": 1}}

{"id": "c3", "name": "add", "arguments": "{\\"a\\": 1, \\"b\\": \\"2\\"}"}
{"name": "add", "arguments": {"a": 1, "a": 2, "b": 3}}
{"name": "nope", "arguments": {}}
{"name": "add", "name": "add", "arguments": {"a": 1, "b": 2}}
{"name": "add", "arguments": {"a": 1, "b": 2}
{"id":"call_1","type":"function","function":{"name":"add","arguments":"{\\"a\\":1,\\"c\\":2}"}}
{"type":"tool_use","id":"toolu_1","name":"add","input":{"a":1,"b":2,"b":3}}
{"functionCall":{"name":"add","args":{"a":1,"b":true}}}
{"name": "pay", "arguments": {"amount": 0}}
"""


def test_validate_reports_each_line_not_admitted_and_a_summary(command: Command, tmp_path: Path) -> None:
    """Rejected lines show the model's message, unreadable lines say why, and the summary counts both."""
    (tmp_path / "calls.jsonl").write_text(CALLS, encoding="utf-8")
    target = f"{FIXTURES / 'cli_tools.py'}:registry"
    result = command("validate", target, "calls.jsonl", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == ""
    assert result.stdout == (
        "2: add: invalid arguments for tool 'add' (1 problem):\n"
        "    - $.b: missing required field\n"
        "4: add: invalid arguments for tool 'add' (1 problem):\n"
        "    - $.b: Input should be a valid integer (got a string)\n"
        "5: add: invalid arguments for tool 'add' (1 problem):\n"
        "    - an object has the same member name twice (line 1, column 14); each name may appear once\n"
        '6: nope: error: tool "nope" is not available\n'
        "7: unreadable: not strict JSON outside the arguments: an object has the same member name twice "
        "(line 1, column 24); each name may appear once\n"
        "8: unreadable: not JSON: Expecting ',' delimiter (character 47)\n"
        "9: add: invalid arguments for tool 'add' (2 problems):\n"
        "    - $.b: missing required field\n"
        "    - $.c: unknown field; expected one of 'a', 'b'\n"
        "10: add: invalid arguments for tool 'add' (1 problem):\n"
        "    - an object has the same member name twice (line 1, column 18); each name may appear once\n"
        "11: add: invalid arguments for tool 'add' (1 problem):\n"
        "    - $.b: Input should be a valid integer (got a boolean)\n"
        "12: pay: amount must be a positive number of cents\n"
        "11 calls: 1 admitted, 8 rejected, 2 unreadable\n"
        "rejected, by tool:\n"
        "  add: 6\n"
        "  (unknown tools): 1\n"
        "  pay: 1\n"
        "by reason:\n"
        "  duplicate member: 2\n"
        "  missing field: 2\n"
        "  unreadable line: 2\n"
        "  wrong type: 2\n"
        "  tool's own rule: 1\n"
        "  unknown field: 1\n"
        "  unknown tool: 1\n"
    )


def test_validate_admits_a_clean_log_from_stdin_and_honours_the_format(command: Command) -> None:
    """A log whose calls are all admitted exits 0; ``--format`` reads every line in that format only."""
    lines = '{"name": "add", "arguments": {"a": 1, "b": 2}}\n{"type":"tool_use","id":"t","name":"add","input":{}}\n'
    clean = command("validate", T, "-", stdin=lines.replace("{}", '{"a": 0, "b": 0}'))
    assert (clean.returncode, clean.stdout) == (0, "2 calls: 2 admitted, 0 rejected, 0 unreadable\n")
    forced = command("validate", T, "-", "--format", "anthropic", stdin=lines)
    assert forced.returncode == 1
    assert forced.stdout.startswith("1: unreadable: not a tool call of anthropic: content[0]: not a content block\n")


def test_validate_streams_in_bounded_memory(tmp_path: Path) -> None:
    """Peak memory does not grow with the file: 20 times the lines (10 MB more) cost about the same."""
    block = b'{"name": "add", "arguments": {"a": 1, "b": 2}}\n' * 99 + b'{"name": "add", "arguments": {"a": 1}}\n'
    (tmp_path / "short.jsonl").write_bytes(block * 100)
    (tmp_path / "long.jsonl").write_bytes(block * 2_000)
    code = (
        "import resource, subprocess, sys; "
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    peaks = []
    for name in ("short.jsonl", "long.jsonl"):
        command = [sys.executable, "-m", "scopetool", "validate", f"{FIXTURES / 'cli_tools.py'}:add", name]
        measured = subprocess.run([sys.executable, "-c", code, *command], cwd=tmp_path, capture_output=True, check=True)
        returncode, peak = measured.stdout.split()
        assert returncode == b"1"
        peaks.append(int(peak))
    assert peaks[1] - peaks[0] < 4 * 1024, peaks  # KiB: a small fraction of the 10 MB more it read


def test_validate_stops_quietly_when_its_reader_goes_away(tmp_path: Path) -> None:
    """Piped into a reader that stops early (``| head``), validate ends without a traceback."""
    (tmp_path / "calls.jsonl").write_text('{"name": "nope"}\n' * 20_000, encoding="utf-8")
    command = [sys.executable, "-m", "scopetool", "validate", f"{FIXTURES / 'cli_tools.py'}:add", "calls.jsonl"]
    with subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.read(10) == b"1: nope: e"
        process.stdout.close()
        errors = process.stderr.read()
        assert process.wait(timeout=60) == 1
    assert errors == b""


def test_call_ends_quietly_when_interrupted() -> None:
    """Ctrl-C during a call ends it with exit code 130 and one line, no traceback."""
    command = [sys.executable, "-m", "scopetool", "call", "interrupting.py:wait", "wait"]
    with subprocess.Popen(command, cwd=FIXTURES, stderr=subprocess.PIPE, text=True) as process:
        assert process.stderr is not None
        assert process.stderr.readline() == "progress: 0 waiting\n"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
        assert process.stderr.read() == "scopetool: interrupted\n"


def test_serve_without_the_mcp_sdk_says_how_to_install_it() -> None:
    """Without the ``mcp`` package, ``serve`` prints the install command on one line and exits with 2."""
    code = (
        "import sys; sys.modules['mcp'] = None; from scopetool.cli import main; "
        "sys.exit(main(['serve', 'cli_tools.py:add']))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=FIXTURES, capture_output=True, text=True, check=False)
    assert (result.returncode, result.stdout) == (2, "")
    # the first of the MCP SDK's modules serve imports that is missing: mcp itself, or anyio where it is missing too
    assert re.fullmatch(
        r"scopetool: scopetool serve needs the module '(mcp|anyio)', which is not installed: "
        r"pip install 'scopetool\[mcp\]'\n",
        result.stderr,
    ), result.stderr


NOISE = ("noisy: print on import", "noisy: os.write(1) on import", "noisy: a child process on import")
"""What ``fixtures/noisy.py`` prints on import: through Python, through file descriptor 1, from a child process."""


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("definitions", "noisy.py:registry"), lambda out: json.loads(out)[0]["name"] == "shout"),
        (("definitions", "noisy.py:shout", "--provider", "openai_chat"), lambda out: len(json.loads(out)) == 1),
        (("call", "noisy.py:registry", "shout", '{"text": "hi"}'), lambda out: out == "HI\n"),
        (("check", "noisy.py:registry"), lambda out: out == "no problems in 1 tool (8 providers checked)\n"),
        (("validate", "noisy.py:registry", "-"), lambda out: out.startswith("1 calls: 1 admitted")),
    ],
    ids=["definitions", "definitions-provider", "call", "check", "validate"],
)
def test_what_a_target_prints_never_reaches_standard_output(
    command: Command, argv: tuple[str, ...], expected: Any
) -> None:
    """The TARGET's module printing on import, and its tool when called, write to standard error."""
    ran = command(*argv, stdin='{"name": "shout", "arguments": {"text": "x"}}\n' if argv[-1] == "-" else None)
    assert ran.returncode == 0 and "noisy" not in ran.stdout and expected(ran.stdout), ran
    assert "noisy: print on import" in ran.stderr
    if command is run_process:  # a new process: what the descriptor and a child process write is seen too
        assert all(line in ran.stderr for line in NOISE), ran.stderr
        assert argv[0] != "call" or "noisy: os.write(1) in the tool" in ran.stderr


@pytest.mark.needs("mcp")
def test_serve_keeps_standard_output_for_the_protocol_from_the_start() -> None:
    """``scopetool serve`` of a module that prints on import and in its tool: stdout holds only JSON-RPC."""
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "shout", "arguments": {"text": "hi"}}},
    ]
    ran = run_process("serve", "noisy.py:registry", stdin="".join(json.dumps(m) + "\n" for m in messages))
    answers = [json.loads(line) for line in ran.stdout.splitlines()]  # every line is a protocol message
    assert ran.returncode == 0 and [a["id"] for a in answers] == [1, 2]
    assert answers[1]["result"]["content"] == [{"type": "text", "text": "HI"}]
    assert all(line in ran.stderr for line in (*NOISE, "noisy: print in the tool", "noisy: os.write(1) in the tool"))


def test_call_reports_a_timed_out_call_by_its_effect(command: Command) -> None:
    """A SAFE tool past its timeout failed (exit 1); one with no promise has an unknown outcome (exit 5)."""
    target = f"{FIXTURES / 'slow_tools.py'}:registry"
    safe = command("call", target, "slow_lookup", '{"sku": "LAMP-1"}')
    assert (safe.returncode, safe.stdout) == (1, 'error: tool "slow_lookup" timed out\n')
    assert "failed outcome (its private cause: ToolTimeoutError)" in safe.stderr
    unknown = command("call", target, "slow_transfer", '{"cents": 5}')
    assert (unknown.returncode, unknown.stdout) == (
        5,
        'error: tool "slow_transfer" timed out; its outcome is unknown\n',
    )
    assert "its timeout: 0.05 s) and its outcome is unknown" in unknown.stderr
    assert "sent" not in unknown.stdout + unknown.stderr
    # In process, let the abandoned function return now. The second target load finds the name "slow_tools" taken
    # and loads the file again as "_scopetool_target": release every copy, or the wait below runs out its 10 s.
    loaded = [sys.modules[name] for name in ("slow_tools", "_scopetool_target") if name in sys.modules]
    for module in loaded:
        module.RELEASE.set()
    if loaded:
        for _ in range(2000):
            if "slow_transfer" not in overrunning_calls():
                break
            time.sleep(0.005)
