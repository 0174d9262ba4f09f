"""The policy `mcp_gateway.json` puts in front of the "work" notes server: no secrets in a note.

A policy is a scopetool `Authorizer`: it sees the tool's definition (its name as the gateway serves
it) and the arguments the tool's own schema already admitted, and answers True (send the call on)
or False (refuse it: the model is told the tool is not authorized). Raising refuses the call too.
"""

from __future__ import annotations

import json

from scopetool import Authorization

WORDS = ("password", "secret", "api key")


def no_secrets(authorization: Authorization) -> bool:
    """Refuse a note whose text mentions a password, a secret or an API key."""
    text = str(json.loads(authorization.arguments).get("text", "")).lower()
    return not any(word in text for word in WORDS)
