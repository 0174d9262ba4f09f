"""The quick run: a test that needs a package the quick install leaves out is skipped, saying which.

`pip install -e '.[test]'` installs what most of the suite needs; the provider SDKs, the MCP SDK, DBOS,
the docs tools and the type checkers come with `.[test-all]`, which CI installs. A test module (or a
test) whose own import of such a package fails is reported as skipped, with the module it could not
import, instead of as an error; so is one that imports an optional part of scopetool (the MCP server,
the DBOS backend) whose package is missing, which refuses to load with an ImportError saying what to
install. Any other failed import, inside scopetool above all, stays an error. A test whose dependency
is a program rather than an import says so with ``@pytest.mark.needs("module")``. With
``SCOPETOOL_REQUIRE_EXTRAS=1`` (as .ci/run sets it) nothing is skipped for a missing package.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# Every Hypothesis property draws the same examples in every run, so CI and the README's command are
# reproducible; `python -m pytest --hypothesis-profile=explore` draws new ones on each run.
settings.register_profile("reproducible", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile("reproducible")

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "scopetool"
EVERYTHING = "pip install -e '.[test-all]' installs every test dependency"


def _required() -> bool:
    return os.environ.get("SCOPETOOL_REQUIRE_EXTRAS") == "1"


def _innermost_file(error: BaseException) -> Path | None:
    """The last source file (not importlib's frozen frames) the error passed through."""
    files = []
    traceback = error.__traceback__
    while traceback is not None:
        files.append(Path(traceback.tb_frame.f_code.co_filename))
        traceback = traceback.tb_next
    ours = [file for file in files if file.is_absolute()]
    return ours[-1].resolve() if ours else None


def missing_package(error: BaseException | None) -> str | None:
    """Why a test could not import what it needs, when an optional package is missing; None otherwise.

    Two failures count: the test's own import of a module that is not installed, and an optional part
    of scopetool (the MCP server, the DBOS backend) refusing to load, as it does, with an ImportError
    raised from the ModuleNotFoundError of its package. Any other failure is a real error.
    """
    if isinstance(error, ImportError) and isinstance(error.__cause__, ModuleNotFoundError):
        innermost = _innermost_file(error)
        if innermost is not None and innermost.is_relative_to(PACKAGE):
            return f"{error} ({error.__cause__.name} is not installed)"
    if isinstance(error, ModuleNotFoundError) and error.name:
        if error.name.partition(".")[0] == "scopetool":
            return None  # scopetool's own modules are always there
        innermost = _innermost_file(error)
        if innermost is not None and innermost.is_relative_to(TESTS):
            return f"needs {error.name}, which is not installed"
        return None
    return None


class _Module(pytest.Module):
    """A test module that is skipped, not failed, when an optional package it imports is missing."""

    def _getobj(self) -> Any:
        try:
            return super()._getobj()
        except self.CollectError as error:
            why = missing_package(error.__cause__)
            if why is None or _required():
                raise
            where = Path(self.path).relative_to(TESTS.parent).as_posix()
            pytest.skip(f"{where}: {why}; {EVERYTHING}", allow_module_level=True)


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """Collect every test file (but packages' ``__init__.py``) through `_Module`."""
    if module_path.name == "__init__.py":
        return None
    return _Module.from_parent(parent, path=module_path)


def pytest_configure(config: pytest.Config) -> None:
    """Register the `needs` marker."""
    config.addinivalue_line("markers", "needs(*modules): the test needs these modules installed, not only imported")


def _installed(module: str) -> bool:
    parent = module.rpartition(".")[0]
    return (not parent or _installed(parent)) and importlib.util.find_spec(module) is not None


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a test marked ``needs(...)`` when one of its modules is not installed."""
    for marker in item.iter_markers("needs"):
        for module in marker.args:
            if not _installed(module):
                if _required():
                    pytest.fail(f"{module} is not installed, and SCOPETOOL_REQUIRE_EXTRAS=1")
                pytest.skip(f"needs {module}, which is not installed; {EVERYTHING}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Skip a test whose own import of an optional package fails because the package is missing."""
    try:
        return (yield)
    except ImportError as error:
        why = missing_package(error)
        if why is None or _required():
            raise
        pytest.skip(f"{why}; {EVERYTHING}")
