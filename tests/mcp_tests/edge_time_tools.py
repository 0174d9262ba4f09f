"""Local tools that fail, for the gateway's test that every failure text names the tool as served."""

from __future__ import annotations

from scopetool import Effect, Failure, FailureKind, Registry, tool


@tool(effect=Effect.SAFE)
def breaks() -> str:
    """Raise an ordinary error: the binding's fixed text names the tool."""
    raise RuntimeError("private detail")


@tool
def says_why() -> str:
    """Fail in the tool's own words, which the gateway keeps."""
    raise Failure(kind=FailureKind.FAILED, output="the printer is out of paper", cause=OSError("tray"))


registry = Registry(breaks, says_why)
