"""The public surface: what `import scopetool` offers, and what it costs."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

import scopetool


def test_all_is_sorted_and_complete() -> None:
    """`__all__` is sorted, names only real public objects, and every public attribute is in it."""
    assert scopetool.__all__ == sorted(scopetool.__all__)
    assert len(set(scopetool.__all__)) == len(scopetool.__all__)
    for name in scopetool.__all__:
        assert hasattr(scopetool, name), name
    public = {
        name
        for name in vars(scopetool)
        if not name.startswith("_") and not isinstance(getattr(scopetool, name), type(sys)) and name != "annotations"
    }
    assert public == set(scopetool.__all__)


def test_public_classes_present_themselves_as_scopetool() -> None:
    """Public classes and functions report `scopetool` as their module, not a private one."""
    for name in scopetool.__all__:
        value = getattr(scopetool, name)
        module = getattr(value, "__module__", None)
        if isinstance(value, type) or (callable(value) and module is not None and module.startswith("scopetool")):
            assert module == "scopetool", (name, module)


def test_import_is_light() -> None:
    """`import scopetool` loads no provider SDK, CLI, MCP server, driver, DBOS, Temporal, OpenTelemetry or docs."""
    heavy = ["openai", "anthropic", "mcp", "click", "typer", "rich", "mkdocs", "httpx", "jsonschema", "argparse"]
    heavy += [
        "scopetool.cli",
        "scopetool.mcp",
        "scopetool.driver",
        "scopetool.providers",
        "scopetool.otel",
        "scopetool.code",
        "pydantic_monty",
        "dbos",
        "temporalio",
        "opentelemetry",
        "bm25s",
        "numpy",
    ]
    code = (
        "import sys, scopetool; "
        f"print([m for m in {heavy!r} if m in sys.modules or any(k.startswith(m + '.') for k in sys.modules)])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_provider_modules_import_no_sdk() -> None:
    """Every provider adapter imports without loading any provider SDK: exports are plain dicts."""
    modules = ["openai_chat", "openai_responses", "anthropic", "gemini", "mcp", "bedrock", "mistral", "ollama"]
    sdks = ["openai", "anthropic", "google", "mcp", "botocore", "boto3", "mistralai", "ollama"]
    code = (
        "import sys, importlib; "
        f"[importlib.import_module('scopetool.providers.' + m) for m in {modules!r}]; "
        f"print(sorted({{k.split('.')[0] for k in sys.modules}} & set({sdks!r})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_import_loads_nothing_until_a_public_name_is_read() -> None:
    """`import scopetool` loads no pydantic nor private module; a name read loads its own module, as scopetool."""
    code = (
        "import sys, scopetool; "
        "before = sorted(m for m in sys.modules if m.startswith(('pydantic', 'scopetool.'))); "
        "scopetool.Request; "
        "print(before, 'scopetool._contract' in sys.modules, 'scopetool._registry' in sys.modules, "
        "scopetool.Request.__module__, scopetool.InvalidInvocationError.__module__, scopetool.tool.__module__)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["[]", "True", "False", "scopetool", "scopetool", "scopetool"]


# A plain function tool, and what each step of using it may load (checked in a fresh interpreter).
_STEPS = """
import sys

def loaded(*names):
    return [name for name in names if name in sys.modules]

from scopetool import tool
print("import", loaded("scopetool._binding", "scopetool._registry", "scopetool._contract", "scopetool._guard",
    "scopetool._signature", "docstring_parser", "jsonschema_rs", "logging", "queue"))

@tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

print("decorate", loaded("scopetool._contract", "jsonschema_rs", "logging", "queue"))
from scopetool import Registry, Request
registry = Registry(add)
contract = registry.resolve("add").contract
invocation = contract.prepare(Request(name="add", arguments='{"a": 2, "b": 3}'))
print("bind and admit", loaded("jsonschema_rs", "logging", "queue"))
import asyncio
contract.validate_result(asyncio.run(registry.resolve("add").call(invocation)))
print("call", loaded("jsonschema_rs"))  # asyncio loads logging; the output schema is compiled at its first use
"""


def test_a_plain_function_tool_loads_only_what_it_uses() -> None:
    """`@tool` loads no contract; bind and admit load no jsonschema-rs, logging or queue; checking the output does."""
    result = subprocess.run([sys.executable, "-c", _STEPS], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == [
        "import []",
        "decorate []",
        "bind and admit []",
        "call ['jsonschema_rs']",
    ]


def test_a_module_still_being_imported_is_not_read_half_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """A private module in sys.modules without its names yet is skipped, then read in full when its name is."""
    names = vars(scopetool)
    monkeypatch.delitem(names, "Guard", raising=False)
    monkeypatch.setitem(sys.modules, "scopetool._guard", types.ModuleType("scopetool._guard"))
    assert scopetool.__getattr__("tool") is scopetool.tool  # pyright: ignore[reportAttributeAccessIssue]
    assert "Guard" not in names
    with pytest.raises(AttributeError, match="'Guard'"):
        scopetool.__getattr__("Guard")  # pyright: ignore[reportAttributeAccessIssue]


def test_an_unknown_name_is_an_attribute_error_and_dir_lists_the_public_names() -> None:
    """A name scopetool does not have raises AttributeError; dir() lists every public name."""
    with pytest.raises(AttributeError, match="has no attribute 'Reqeust'"):
        getattr(scopetool, "Reqeust")  # noqa: B009 - the name is looked up on purpose
    assert set(scopetool.__all__) <= set(dir(scopetool))
