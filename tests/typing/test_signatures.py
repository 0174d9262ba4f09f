"""What a type checker sees of scopetool's public API, checked by pyright and mypy (strict).

The ``check_*`` functions are never called: the checkers read them. `assert_type` pins each inferred
type. A line that must be a type error carries both checkers' markers with the exact error code,
``# type: ignore[code]`` for mypy and ``# pyright: ignore[rule]`` for pyright, and both run with
unused-ignore reporting (mypy's strict mode, pyright through ``pyrightconfig.json`` here), so an
expected error that stops happening fails the run as surely as an unexpected one.
``test_pyright_accepts_the_checks`` and ``test_mypy_accepts_the_checks`` run the checkers on this file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, assert_type, cast

import pytest
from anthropic.types import Message
from google.genai.types import GenerateContentResponse
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

from scopetool import (
    Admission,
    Binding,
    CallContext,
    Continuation,
    Contract,
    Definition,
    Effect,
    Failure,
    FailureKind,
    Func,
    IdempotencyKey,
    InputDecoder,
    InputRejection,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    Signature,
    Tool,
    bind,
    classify_failure,
    classify_input_rejection,
    tool,
)
from scopetool.providers import ToolCall, anthropic, gemini, openai_chat

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]

# -- the tools the checks use (built for real when pytest imports this file) --------------------------


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


@tool(name="greet", effect=Effect.SAFE)
def greet(name: str, *, loud: bool = False) -> str:
    """Greet someone."""
    return name.upper() if loud else name


@tool
async def pause(seconds: float) -> int:
    """Wait, then report the seconds waited."""
    return int(seconds)


@tool(description="Wait, configured.")
async def pause_configured(seconds: float) -> int:
    """Wait, then report the seconds waited."""
    return int(seconds)


class AddInput(BaseModel):
    a: int
    b: int


ADD_SIGNATURE = Signature(AddInput, int)


class Adder:
    """A hand-written `Tool` over a `Signature`."""

    signature = ADD_SIGNATURE

    def definition(self) -> Definition:
        return self.signature.definition("adder", "Add two integers.")

    def input_validator(self) -> InputDecoder[AddInput]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation, /) -> Result:
        value = self.signature.decode(invocation)
        return Result(output=self.signature.encode(value.a + value.b))


# -- @tool and @tool(...) keep the function's call signature -------------------------------------


def check_bare_tool_keeps_the_call_signature() -> None:
    assert_type(add(1, 2), int)
    assert_type(add(1), int)
    assert_type(add(a=1, b=2), int)
    add("1", 2)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    add(1, b="2")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    add(1, 2, 3)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    add(1, c=3)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    add()  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    _keeps: Callable[[int, int], int] = add
    _refuses: Callable[[str], int] = add  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]


def check_configured_tool_keeps_the_call_signature() -> None:
    assert_type(greet("ada"), str)
    assert_type(greet("ada", loud=True), str)
    greet(1)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    greet("ada", True)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    greet("ada", loud="yes")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


async def check_async_tools_keep_the_call_signature() -> None:
    # Bare @tool declares an Awaitable (its first overload); @tool(...) keeps the coroutine type.
    assert_type(pause(1.0), Awaitable[int])
    assert_type(await pause(1.0), int)
    assert_type(await pause_configured(1.0), int)
    await pause("soon")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    await pause_configured("soon")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    await pause_configured(1.0, 2.0)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]


def check_a_func_is_a_tool() -> None:
    _func: Func[..., int] = add
    _wrong_result: Func[..., str] = add  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
    _tool: Tool = add
    assert_type(add.name, str)
    assert_type(add.definition(), Definition)
    assert_type(add.input_validator(), InputDecoder[Any])
    assert_type(bind(add), Binding)
    assert_type(bind(Adder()), Binding)
    bind(AddInput(a=1, b=2))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


# -- Signature[In, Out] types flow through --------------------------------------------------------


def check_signature_types_flow_through(invocation: Invocation) -> None:
    assert_type(ADD_SIGNATURE, Signature[AddInput, int])
    assert_type(ADD_SIGNATURE.decode(invocation), AddInput)
    assert_type(ADD_SIGNATURE.decode(invocation).a, int)
    assert_type(ADD_SIGNATURE.encode(5), Output)
    ADD_SIGNATURE.encode("five")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    assert_type(ADD_SIGNATURE.input_validator(), InputDecoder[AddInput])
    assert_type(ADD_SIGNATURE.input_validator().decode(invocation), AddInput)
    assert_type(ADD_SIGNATURE.input_type, type[AddInput])
    assert_type(ADD_SIGNATURE.output_type, type[int])
    assert_type(ADD_SIGNATURE.definition("add"), Definition)
    assert_type(Signature(AddInput, str).encode("five"), Output)
    Signature(int, int)  # type: ignore[type-var]  # pyright: ignore[reportArgumentType]


# -- Registry, bind, prepare, call ----------------------------------------------------------------


async def check_registry_bind_prepare_call() -> None:
    registry = Registry(add, bind(greet))
    assert_type(registry.resolve("add"), Binding | None)
    assert_type(registry.definitions(), list[Definition])
    assert_type(registry.names(), list[str])
    assert_type(registry["add"], Binding)
    assert_type(await registry.run("add", '{"a": 1}'), Result | BaseException)
    assert_type(registry.run_sync("add", b"{}", admission=Admission()), Result | BaseException)
    registry.run_sync("add", "{}", Admission())  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    binding = bind(add)
    assert_type(binding.contract, Contract)
    assert_type(binding.definition(), Definition)
    invocation = binding.contract.prepare(Request(name="add", arguments='{"a": 1}'))
    assert_type(invocation, Invocation)
    assert_type(binding.contract.prepare(Request(name="add"), Admission()), Invocation)
    assert_type(invocation.arguments, bytes)
    assert_type(await binding.call(invocation), Result)
    assert_type((await binding.call(invocation)).output, Output)
    binding.contract.prepare("add")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    binding.contract.prepare(Request(name="add"), Admission(), Admission())  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    await binding.call(Request(name="add"))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    bind(add, "not a middleware")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


# -- Failure and classify_failure -----------------------------------------------------------------


def check_failure_and_its_classification(error: BaseException) -> None:
    failure = classify_failure(error)
    assert_type(failure, Failure | None)
    if failure is not None:
        assert_type(failure.kind, FailureKind)
        assert_type(failure.output, Output)
        assert_type(failure.cause, BaseException | None)
    assert_type(classify_failure(None), Failure | None)
    assert_type(classify_input_rejection(error), InputRejection | None)
    assert_type(Failure(kind=FailureKind.FAILED, output="error: the tool failed"), Failure)
    Failure(kind="failed")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    Failure(FailureKind.FAILED)  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    classify_failure("failed")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def check_parse_tool_calls_takes_the_sdks_objects(
    completion: ChatCompletion, message: Message, response: GenerateContentResponse
) -> None:
    assert_type(openai_chat.parse_tool_calls(completion), list[ToolCall])
    assert_type(openai_chat.parse_tool_calls(completion.choices[0].message.tool_calls), list[ToolCall])
    assert_type(anthropic.parse_tool_calls(message.content), list[ToolCall])
    assert_type(gemini.parse_tool_calls(response), list[ToolCall])


# -- CallContext, deps and approval ----------------------------------------------------------------


class Database:
    """An application dependency."""

    def user(self) -> str:
        return "ada"


class Pick(BaseModel):
    size: int


def delete_prompt(path: str) -> str:
    return f"Delete {path}?"


@tool(approval=delete_prompt)
def delete(ctx: CallContext[Database], path: str) -> str:
    """Delete a file, once a person approves it."""
    assert_type(ctx.deps, Database)
    assert_type(ctx.deps.user(), str)
    assert_type(ctx.idempotency_key, IdempotencyKey | None)
    assert_type(ctx.continuation, Continuation | None)
    assert_type(ctx.tool_name, str)
    assert_type(ctx.ask("Really?", bool), bool)
    assert_type(ctx.ask("Which size?", Pick), Pick)
    assert_type(ctx.report_progress(1, 2, "half"), None)
    ctx.deps.missing()  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    ctx.ask("Really?")  # type: ignore[call-arg]  # pyright: ignore[reportCallIssue]
    return path


@tool(approval=True)
async def bare_context(ctx: CallContext, item: str) -> int:
    """A context without deps: its deps are None."""
    assert_type(ctx.deps, None)
    return len(item)


async def check_context_tools_and_deps(database: Database, context: CallContext[Database], plain: CallContext) -> None:
    assert_type(delete(context, "a.txt"), str)
    assert_type(await bare_context(plain, "tea"), int)
    delete(plain, "a.txt")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    _sync: Func[[CallContext[Database], str], str] = delete
    _wrong: Func[[Database, str], str] = delete  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]
    assert_type(bind(delete, deps=database), Binding)
    assert_type(bind(delete, deps=database).with_deps(Database()), Binding)
    assert_type(Registry(delete, deps=database), Registry)
    assert_type(Registry(delete).with_deps(database), Registry)
    _wide: CallContext[object] = cast("CallContext[Database]", None)  # covariant: read-only deps
    tool(approval="yes")  # type: ignore[call-overload]  # pyright: ignore[reportArgumentType]


# -- the checkers ---------------------------------------------------------------------------------


def test_pyright_accepts_the_checks() -> None:
    """pyright (strict, unused ignores reported) finds exactly the errors this file marks, and no other."""
    pyright = shutil.which("pyright")
    if pyright is None:
        pytest.skip("pyright is not installed (npm install -g pyright); mypy still checks this file")
    result = subprocess.run(
        [pyright, "--outputjson", "--pythonpath", sys.executable, "-p", str(HERE.parent / "pyrightconfig.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    try:
        report: dict[str, Any] = json.loads(result.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"pyright did not report (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    problems = [
        f"{Path(d['file']).name}:{d['range']['start']['line'] + 1}: {d['message']} ({d.get('rule', d['severity'])})"
        for d in report["generalDiagnostics"]
    ]
    assert report["summary"]["filesAnalyzed"] == 1, result.stdout
    assert problems == [], "\n".join(problems)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.needs("mypy")
def test_mypy_accepts_the_checks() -> None:
    """mypy (strict, unused ignores reported) finds exactly the errors this file marks, and no other."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(HERE)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found in 1 source file" in result.stdout, result.stdout
