"""The ``scopetool`` command: see what the model sees, try calls, lint definitions, check logs, serve MCP.

``scopetool --help`` lists the subcommands and the exit codes; ``docs/cli.md`` describes them. Nothing
here is imported by ``import scopetool``, and each subcommand imports the provider adapters it uses
only when it runs.
"""

from __future__ import annotations

from ._main import main

__all__ = ["main"]
