"""The public surface: what `import scopetool` offers, and what it costs."""

from __future__ import annotations

import subprocess
import sys

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
    """`import scopetool` loads no provider SDK, CLI, MCP server, driver, DBOS, OpenTelemetry or docs library."""
    heavy = ["openai", "anthropic", "mcp", "click", "typer", "rich", "mkdocs", "httpx", "jsonschema", "argparse"]
    heavy += [
        "scopetool.cli",
        "scopetool.mcp",
        "scopetool.mcp_server",
        "scopetool.driver",
        "scopetool.providers",
        "scopetool.otel",
        "dbos",
        "opentelemetry",
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
    """`import scopetool` loads neither pydantic nor a private module; reading one public name loads them all."""
    code = (
        "import sys, scopetool; "
        "before = sorted(m for m in sys.modules if m.startswith(('pydantic', 'scopetool.'))); "
        "scopetool.Request; "
        "homes = {'scopetool.' + home for home in scopetool._HOMES.values()}; "
        "print(before, homes <= set(sys.modules), scopetool.Request.__module__, scopetool.tool.__module__)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["[]", "True", "scopetool", "scopetool"]


def test_an_unknown_name_is_an_attribute_error_and_dir_lists_the_public_names() -> None:
    """A name scopetool does not have raises AttributeError; dir() lists every public name."""
    with pytest.raises(AttributeError, match="has no attribute 'Reqeust'"):
        getattr(scopetool, "Reqeust")  # noqa: B009 - the name is looked up on purpose
    assert set(scopetool.__all__) <= set(dir(scopetool))
