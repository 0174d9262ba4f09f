"""The quick run's skips (tests/conftest.py): a missing optional package skips, naming it; nothing else does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ABSENT = "scopetool_test_absent_package"

FILES = {
    "tests/test_own_import.py": f"import {ABSENT}\n\n\ndef test_never_runs():\n    pass\n",
    "tests/test_import_in_body.py": f"def test_imports_late():\n    import {ABSENT}  # noqa: F401\n",
    "tests/test_optional_part.py": "import scopetool.optional_part\n\n\ndef test_never_runs():\n    pass\n",
    "tests/test_marked.py": (
        f"import pytest\n\n\n@pytest.mark.needs({ABSENT!r})\ndef test_runs_a_program_that_needs_it():\n    pass\n"
    ),
    "scopetool/__init__.py": "",
    "scopetool/optional_part.py": (
        f"try:\n    import {ABSENT}\nexcept ImportError as missing:\n"
        "    raise ImportError(\"this part needs the absent package: pip install 'scopetool[absent]'\") from missing\n"
    ),
    "scopetool/core_part.py": f"import {ABSENT}\n",
    "other/test_core_part.py": "import scopetool.core_part\n\n\ndef test_never_runs():\n    pass\n",
}


def run_pytest(folder: Path, *targets: str, required: bool = False) -> subprocess.CompletedProcess[str]:
    """pytest on `targets` inside `folder` (past collection errors), its own scopetool/ first on the path."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SCOPETOOL_")}
    env["PYTHONPATH"] = str(folder)
    if required:
        env["SCOPETOOL_REQUIRE_EXTRAS"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", *targets, "-rs", "-p", "no:cacheprovider", "--continue-on-collection-errors"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def make_project(tmp_path: Path) -> Path:
    """A small project: this conftest, test files that need an absent package, and a scopetool stand-in."""
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    shutil.copyfile(HERE / "conftest.py", tmp_path / "tests" / "conftest.py")
    shutil.copyfile(HERE / "conftest.py", tmp_path / "other" / "conftest.py")
    return tmp_path


def test_a_missing_optional_package_skips_what_needs_it_and_nothing_else(tmp_path: Path) -> None:
    """An own import (at the top or in a test), an optional scopetool part and a marker each skip, saying why;
    scopetool's own import of the absent package is an error, not a skip."""
    completed = run_pytest(make_project(tmp_path), "tests", "other")
    assert "4 skipped, 1 error" in completed.stdout, completed.stdout
    assert f"tests/test_own_import.py: needs {ABSENT}, which is not installed" in completed.stdout
    assert f"needs {ABSENT}, which is not installed; pip install -e '.[test-all]'" in completed.stdout
    assert f"pip install 'scopetool[absent]' ({ABSENT} is not installed)" in completed.stdout
    assert "ERROR collecting other/test_core_part.py" in completed.stdout, completed.stdout


def test_with_the_extras_required_nothing_is_skipped(tmp_path: Path) -> None:
    """SCOPETOOL_REQUIRE_EXTRAS=1 (as in CI) turns every such skip into an error or a failure."""
    completed = run_pytest(make_project(tmp_path), "tests", required=True)
    assert completed.returncode != 0
    assert "skipped" not in completed.stdout, completed.stdout
    assert "1 failed, 3 errors" in completed.stdout, completed.stdout
