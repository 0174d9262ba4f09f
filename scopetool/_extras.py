"""What each optional extra brings, and the ImportError of a module when what it needs is missing.

`EXTRAS` is the one table of scopetool's extras (``pip install 'scopetool[NAME]'``): what each is for,
the top-level modules scopetool imports from what it installs, and scopetool's own modules that import
only with it (every other module imports with no extra; `CORE` lists what the core itself imports).
The table is checked each CI run, each extra installed alone into a fresh venv (``tests/extras/``): every
module named here imports where its extras are, every other one with none, and every module scopetool
imports is one of ``brings`` and comes from a package scopetool declares (or one such package declares).
The extras' table in ``docs/getting-started.md`` is written from it.

`missing_dependency` is the ImportError a module raises when one of its imports fails: it names the
module it actually met missing (the caught error's ``name``) and the extra that brings it, only when an
extra does.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
from dataclasses import dataclass
from typing import Final

__all__ = ["CORE", "EXTRAS", "Extra", "extra_of", "missing_dependency", "missing_message"]


@dataclass(frozen=True, slots=True)
class Extra:
    """One optional extra: what it gives, the modules it brings that scopetool imports, the modules needing it."""

    does: str
    """What it gives, in one line (the docs' table)."""
    brings: tuple[str, ...]
    """The top-level modules scopetool imports from what it installs (its packages or their own dependencies)."""
    modules: tuple[str, ...] = ()
    """scopetool's modules that import only with it (each also needs the extras it is listed under elsewhere)."""


CORE: Final = ("pydantic", "pydantic_core", "jiter", "jsonschema_rs", "docstring_parser", "orjson", "typing_extensions")
"""The top-level modules the core imports: its declared dependencies, and typing_extensions (pydantic's)."""

_MCP_MODULES: Final = tuple(
    f"scopetool.mcp.{name}"
    for name in (
        "_gateway_config",
        "_gateway_tasks",
        "_http_server",
        "_lean",
        "_lean_server",
        "_stdio_server",
        "_strict_messages",
        "_task_client",
        "_tool_handlers",
        "_tool_updates",
        "_transport",
        "auth",
        "client",
        "gateway",
        "server",
        "tasks",
    )
)

EXTRAS: Final[dict[str, Extra]] = {
    "mcp": Extra(
        "`scopetool serve`, `scopetool proxy` (the gateway) and the MCP client, on the official MCP SDK",
        ("mcp", "mcp_types", "anyio", "httpx2", "starlette", "uvicorn", "jwt"),
        (*_MCP_MODULES, "scopetool.integrations.mcp_sdk"),
    ),
    "dbos": Extra(
        "the durable driver's DBOS backend (SQLite or PostgreSQL)", ("dbos", "sqlalchemy"), ("scopetool.driver.dbos",)
    ),
    "temporal": Extra(
        "the durable driver's Temporal backend, and the frameworks' Temporal integrations",
        ("temporalio",),
        (
            "scopetool.driver.temporal",
            "scopetool.integrations.pydantic_ai_temporal",
            "scopetool.integrations.openai_agents_temporal",
        ),
    ),
    "pydantic-ai": Extra(
        "tools for pydantic-ai agents (a toolset), and pydantic-ai's tools in a registry",
        ("pydantic_ai",),
        (
            "scopetool.integrations.pydantic_ai",
            "scopetool.integrations.pydantic_ai_tools",
            "scopetool.integrations.pydantic_ai_temporal",
        ),
    ),
    "openai-agents": Extra(
        "tools for the OpenAI Agents SDK",
        ("agents",),
        ("scopetool.integrations.openai_agents", "scopetool.integrations.openai_agents_temporal"),
    ),
    "langchain": Extra(
        "tools for LangGraph's ToolNode and LangChain agents",
        ("langchain_core", "langgraph"),
        ("scopetool.integrations.langchain",),
    ),
    "otel": Extra("OpenTelemetry spans and metrics of admissions and calls", ("opentelemetry",), ("scopetool.otel",)),
    "limits": Extra("rates in `scopetool.mcp.limits` (a moving window, in memory or in Redis)", ("limits",)),
    "search": Extra(
        "`ToolIndex`'s BM25 on sparse matrices: the same ranking, faster on large catalogs", ("bm25s", "numpy")
    ),
    "code": Extra(
        "code mode's sandbox (`scopetool.code`, `run_code`), on Monty", ("pydantic_monty",), ("scopetool.code",)
    ),
}
"""scopetool's extras by name, as ``pyproject.toml`` declares them (a test checks both agree)."""


def extra_of(module: str) -> str | None:
    """The extra whose packages bring the top-level module of `module`, or None (the core's, or no extra's)."""
    top = module.partition(".")[0]
    return next((name for name, extra in EXTRAS.items() if top in extra.brings), None)


def missing_message(who: str, error: ImportError) -> str:
    """What `who` (a module, or a command) says when `error` stopped one of its imports; see the module.

    A module not installed is named with the extra that brings it (``pip install 'scopetool[mcp]'``), or
    said to come with no extra; one that is installed but is not what scopetool needs (too old, broken) is
    named with its version and the extra's requirement. An error without a module's name is quoted.
    """
    name = error.name
    if not name or name.partition(".")[0] == "scopetool":  # not a dependency: quoted as it is
        return f"{who} cannot import what it needs: {error}"
    top = name.partition(".")[0]
    extra = extra_of(top)
    if isinstance(error, ModuleNotFoundError) and (name == top or sys.modules.get(top, None) is None):
        if extra is None:
            return f"{who} needs the module {name!r}, which is not installed (no scopetool extra brings it)"
        return f"{who} needs the module {name!r}, which is not installed: pip install 'scopetool[{extra}]'"
    original = error  # a module's error re-raised by one importing it: the first says what failed
    while isinstance(original.__cause__, ImportError) and original.__cause__.name == name:
        original = original.__cause__
    installed = _installed(top)
    needed = "" if extra is None else _requirement(extra, installed)
    return f"{who} cannot import from the installed {installed or top} ({original}){needed}"


def missing_dependency(who: str, error: ImportError) -> ImportError:
    """The ImportError `who` raises from `error`: `missing_message`, with the missing module's ``name``.

    A `ModuleNotFoundError` when `error` is one, so a module importing `who` reads it as `error` is read.
    """
    kind = ModuleNotFoundError if isinstance(error, ModuleNotFoundError) else ImportError
    return kind(missing_message(who, error), name=error.name)


def _installed(top: str) -> str:
    """The distribution that installed the top-level module `top`, with its version ("mcp 2.1.0"), or ""."""
    for distribution in importlib.metadata.packages_distributions().get(top, ()):
        try:
            return f"{distribution} {importlib.metadata.version(distribution)}"
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover - listed, then removed
            continue
    return ""


def _requirement(extra: str, installed: str) -> str:
    """``"; scopetool[EXTRA] requires REQUIREMENT"`` for the installed distribution, or "" where unknown."""
    try:
        requirements = importlib.metadata.requires("scopetool") or []
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return ""
    wanted = _normal(installed.partition(" ")[0])
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", spec)
        if match and _normal(match[0]) == wanted and re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", marker):
            return f"; scopetool[{extra}] requires {spec.strip()}"
    return ""


def _normal(distribution: str) -> str:
    """A distribution's name in its normal form (PEP 503): ``Pydantic_AI.slim`` is ``pydantic-ai-slim``."""
    return re.sub(r"[-_.]+", "-", distribution).lower()
