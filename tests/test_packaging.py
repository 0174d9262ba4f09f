"""Packaging: the C extension is optional, at build time and at import time."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_a_wheel_builds_without_a_c_compiler(tmp_path: Path) -> None:
    """With no working compiler the wheel still builds: pure Python, with the C sources, and no extension."""
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(".*", "build", "dist", "site", "*.egg-info", "__pycache__", "*.so", "*.pyd"),
    )
    environment = {**os.environ, "CC": "false", "LDSHARED": "false"}
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=600,
    )
    if result.returncode != 0 and "setuptools" in result.stderr and "No matching distribution" in result.stderr:
        pytest.skip("the build backend (setuptools) cannot be downloaded here")
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("scopetool-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "scopetool/_speedups.c" in names
    assert "scopetool/_contract.py" in names
    assert [name for name in names if name.endswith(".dist-info/licenses/LICENSE")]
    assert not [name for name in names if name.endswith((".so", ".pyd"))]


def test_scopetool_runs_on_the_pure_python_prepare_when_the_extension_cannot_load() -> None:
    """An extension that fails to import leaves SPEEDUPS False, and prepare still admits and rejects."""
    code = "\n".join(
        [
            "import sys",
            "sys.modules['scopetool._speedups'] = None  # importing it now raises ImportError",
            "import scopetool._contract as c",
            "from scopetool import InvalidInvocationError, Request, bind, tool",
            "def add(a: int, b: int) -> int:",
            "    return a + b",
            "contract = bind(tool(add)).contract",
            'assert contract.prepare(Request(\'add\', \'{"a":1,"b":2}\')).arguments == b\'{"a":1,"b":2}\'',
            "try:",
            '    contract.prepare(Request(\'add\', \'{"a":1,"a":2,"b":3}\'))',
            "except InvalidInvocationError:",
            "    pass",
            "else:",
            "    raise AssertionError('a duplicate member was admitted')",
            "print(c.SPEEDUPS, c.Contract.prepare is c._prepare_python)",
        ]
    )
    assert _run_fresh(code) == ["False", "True"]


def test_reloading_the_contract_module_keeps_a_working_prepare() -> None:
    """importlib.reload of scopetool._contract works: the new classes run the pure prepare (C binds the first)."""
    code = "\n".join(
        [
            "import importlib",
            "import scopetool._contract as c",
            "first = c.SPEEDUPS",
            "importlib.reload(c)",
            "from scopetool import Definition",
            "contract = c.Contract(Definition(name='t', input_schema={'type': 'object'}))",
            "assert contract.prepare(c.Request('t', '{}')).arguments == b'{}'",
            "print(first, c.SPEEDUPS, c.Contract.prepare is c._prepare_python)",
        ]
    )
    assert _run_fresh(code)[1:] == ["False", "True"]


def _run_fresh(code: str) -> list[str]:
    """What `code` prints, split into words, run in a fresh interpreter with the C path allowed."""
    environment = {key: value for key, value in os.environ.items() if key != "SCOPETOOL_PURE_PYTHON"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=False, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


_OUTWARD = ("cli", "code", "driver", "integrations", "mcp", "otel", "providers")


def _scopetool_imports(path: Path) -> set[str]:
    """The scopetool subpackages and modules a source file imports, at its top or inside functions."""
    package = path.relative_to(ROOT).parent.parts  # ("scopetool",) or ("scopetool", "mcp") ...
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                parts = [*base[1:], *(node.module or "").split(".")] if node.module else list(base[1:])
                names = [parts[0]] if parts and parts[0] else [alias.name for alias in node.names]
            elif (node.module or "").startswith("scopetool."):
                names = [(node.module or "").split(".")[1]]
            else:
                continue
            found.update(names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("scopetool."))
    return found


def test_the_core_never_imports_outward_and_mcp_never_imports_the_cli() -> None:
    """No core module imports a provider, server, driver, CLI or integration; the MCP package no CLI module."""
    core = [path for path in (ROOT / "scopetool").glob("_*.py") if path.name != "__main__.py"]  # __main__ runs the CLI
    outward = {path.name: sorted(_scopetool_imports(path) & set(_OUTWARD)) for path in core}
    assert {name: found for name, found in outward.items() if found} == {}
    mcp = {path.name: "cli" in _scopetool_imports(path) for path in (ROOT / "scopetool" / "mcp").glob("*.py")}
    assert mcp and not any(mcp.values()), mcp
