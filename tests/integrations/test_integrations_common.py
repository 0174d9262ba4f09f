"""scopetool.integrations._common: what both integrations share."""

from __future__ import annotations

import pytest

from scopetool import Registry, tool
from scopetool.integrations._common import CallKeys, registry_of, shown


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def test_call_keys_are_stable_per_scope_and_call_and_opaque() -> None:
    """The same secret, scope and call id give the same key; another scope or call another; no id, no key."""
    keys = CallKeys(b"secret")
    assert keys.key("conv", "c1") == CallKeys(b"secret").key("conv", "c1")
    assert keys.key("conv", "c1") != keys.key("conv", "c2") != keys.key("other", "c2")
    assert "c1" not in (keys.key("conv", "c1") or "")
    assert keys.key("conv", None) is None and keys.key("conv", "") is None
    assert CallKeys().key(None, "c1") != CallKeys().key(None, "c1")  # a random secret per instance
    with pytest.raises(TypeError, match="non-empty bytes"):
        CallKeys(b"")


def test_registry_of_serves_a_registry_as_it_is_and_registers_tools() -> None:
    """A registry is served as it is; a tool or an iterable of tools makes a new one."""
    registry = Registry(ping)
    assert registry_of(registry) is registry
    assert registry_of(ping).names() == ["ping"] == registry_of([ping]).names()
    with pytest.raises(TypeError, match="expected a Registry"):
        registry_of(42)  # type: ignore[arg-type]


def test_shown_is_what_the_provider_adapters_show() -> None:
    """An ordinary error is the generic text; nothing of its message is shown."""
    assert shown("t", RuntimeError("secret")) == ('error: tool "t" failed', True)


def test_no_framework_is_imported_by_scopetool_or_its_integrations_package() -> None:
    """`import scopetool.integrations` loads no framework; only a framework's own module does."""
    import subprocess
    import sys

    frameworks = ["pydantic_ai", "agents", "langchain_core", "langgraph", "mcp"]
    code = (
        "import sys, scopetool, scopetool.integrations; "
        f"print(sorted({{k.split('.')[0] for k in sys.modules}} & set({frameworks!r})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("pydantic_ai_tools", "pydantic_ai", "pydantic-ai"),
        ("openai_agents", "agents", "openai-agents"),
        ("langchain", "langchain_core", "langchain"),
        ("mcp_sdk", "mcp", "mcp"),
    ],
)
def test_a_module_whose_framework_is_missing_says_what_to_install(module: str, framework: str, extra: str) -> None:
    """Without its framework, an integration module fails to import with an ImportError naming it and its extra."""
    import subprocess
    import sys

    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        "try:\n"
        f"    import scopetool.integrations.{module}\n"
        "except ImportError as error:\n"
        "    print(error.name)\n"
        "    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    name, message = result.stdout.splitlines()
    assert name.split(".")[0] == framework  # the missing module, as ModuleNotFoundError named it
    assert message.startswith(f"scopetool.integrations.{module} needs ")
    assert message.endswith(f"pip install 'scopetool[{extra}]'")
