"""Where the third-party MCP programs installed by ``bash .ci/third_party`` are, for the tests.

Each function returns the command (a list for `subprocess` or the SDK's ``StdioServerParameters``)
or skips the test, naming the script to run, when the program is not installed; under CI
(``SCOPETOOL_REQUIRE_EXTRAS=1``) a missing one fails instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("SCOPETOOL_THIRD_PARTY", Path(__file__).resolve().parents[2] / ".third_party"))
"""The folder `.ci/third_party` installs into."""


def _require(path: Path, what: str) -> Path:
    if path.exists():
        return path
    message = f"{what} is not installed: run `bash .ci/third_party`"
    if os.environ.get("SCOPETOOL_REQUIRE_EXTRAS") == "1":
        pytest.fail(message)
    pytest.skip(message)


def everything_server() -> list[str]:
    """The reference "everything" server from npm (``@modelcontextprotocol/server-everything``), on stdio."""
    return [str(_require(ROOT / "npm" / "node_modules" / ".bin" / "mcp-server-everything", "server-everything"))]


def inspector_cli() -> list[str]:
    """The official MCP Inspector's CLI (npm ``@modelcontextprotocol/inspector``): append its arguments."""
    return [str(_require(ROOT / "npm" / "node_modules" / ".bin" / "mcp-inspector", "the MCP Inspector")), "--cli"]


def git_server(repository: Path) -> list[str]:
    """The reference git server from PyPI (``mcp-server-git``), serving REPOSITORY on stdio."""
    python = _require(ROOT / "pypi" / "bin" / "python", "mcp-server-git")
    return [str(python), "-m", "mcp_server_git", "--repository", str(repository)]


def oidc_provider() -> list[str]:
    """panva's OpenID Provider (npm ``oidc-provider``) under the tests' launcher: append PORT and a keys file."""
    module = _require(ROOT / "oauth" / "node_modules" / "oidc-provider" / "lib" / "index.js", "oidc-provider")
    return ["node", str(Path(__file__).with_name("oidc_provider.mjs")), str(module)]
