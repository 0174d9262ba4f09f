"""Local tools and a policy for the gateway tests (named in the test configs as file targets)."""

from __future__ import annotations

import json

from scopetool import Authorization, Registry, tool


@tool
def echo(message: str) -> str:
    """Echo the message back, locally (its name collides with the everything server's echo)."""
    return f"local: {message}"


registry = Registry(echo)


def policy(authorization: Authorization) -> bool:
    """Refuse any call whose ``message`` is "forbidden"."""
    arguments = json.loads(authorization.arguments)
    return arguments.get("message") != "forbidden"


def broken_policy(authorization: Authorization) -> bool:
    """A policy that cannot decide: it raises (with a secret in its message)."""
    raise RuntimeError("SECRET-POLICY-DETAIL")


@tool
def a_tool_whose_name_is_already_as_long_as_providers_accept_it() -> str:
    """A tool whose name, 59 characters, cannot take a prefix (64 at most)."""
    return "long"


long_names = Registry(a_tool_whose_name_is_already_as_long_as_providers_accept_it)
