"""A gateway policy of the auth tests (named in their configs as a file target): only alice may call."""

from __future__ import annotations

from scopetool import Authorization, current_principal


def only_alice(authorization: Authorization) -> bool:
    """Permit the call when the caller the gateway authenticated is alice."""
    principal = current_principal()
    return principal is not None and principal.subject == "alice"
