"""The one hook the runners offer an observer (tracing): admissions and calls, seen from outside.

The runners (`run_call` and the provider loop, the CLI, the Driver, the MCP server, the
integrations) admit a model's call with `Contract.prepare` and run it with `Binding.call`. When an
`Observer` is installed (`scopetool.otel.instrument` installs one), they hand both steps to it
instead, so it can wrap each in a span; it must do exactly what they would have done, raising what
they would have raised. While none is installed (the default), a runner pays one module attribute
read per step. This module imports nothing: the observer brings its own dependencies.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._binding import Binding
    from ._contract import Admission, Contract, Invocation, Request
    from ._output import Result

__all__ = ["Observer", "current", "install"]


class Observer(Protocol):
    """Sees every admission and call a runner makes (see the module's docstring)."""

    def admit(self, contract: Contract, request: Request, admission: Admission, call_id: str | None) -> Invocation:
        """``contract.prepare(request, admission)``, observed; `call_id` is the provider's, if any."""
        ...

    def unknown(self, name: str, call_id: str | None) -> None:
        """A call named a tool the runner does not have (it is answered without admission)."""
        ...

    def call(self, binding: Binding, invocation: Invocation) -> Coroutine[Any, Any, Result]:
        """``binding.call(invocation)``, observed."""
        ...


current: Observer | None = None
"""The installed observer, or None (the runners read it at every admission and call)."""


def install(observer: Observer | None) -> Observer | None:
    """Make `observer` the current one (None: none); the one it replaces."""
    global current  # the process's one switch, read by every runner
    previous, current = current, observer
    return previous
