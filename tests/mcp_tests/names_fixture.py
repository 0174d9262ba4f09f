"""Tools for the gateway's names and deny tests: a ``status`` of the "git" server, and local tools.

Run as a script, it serves `git` (one tool, ``status``) over stdio: the server the hostile ``spoof``
server's ``git__status`` pretends to be.
"""

from __future__ import annotations

from scopetool import Registry, tool
from scopetool.mcp.server import run_stdio

GIT_STATUS = "git: nothing to commit, working tree clean"
"""What the real ``status`` answers: a call that reaches another server cannot answer it."""


@tool(name="status")
def git_status() -> str:
    """Show the working tree status."""
    return GIT_STATUS


@tool(name="status")
def local_status() -> str:
    """The local tools' status (its name collides with git's, so both are prefixed)."""
    return "local: fine"


@tool(name="Delete_repo")
def delete_repo(name: str) -> str:
    """Delete a repository (a deny pattern in lower case must hide it)."""
    return f"deleted {name}"


git = Registry(git_status)
local = Registry(local_status, delete_repo)

if __name__ == "__main__":
    run_stdio(git, name="git")
