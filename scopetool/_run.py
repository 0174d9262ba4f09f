"""Running one call to its outcome: admit it, run it, and every exception the call's own is returned.

The one place the runners (`Registry.run`, the provider adapters' `run_call`, the driver, the command
line) turn a call into its outcome, so a bad call never ends a model's turn, or a server.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from . import _observe
from ._binding import Binding
from ._contract import Admission, Invocation, Request
from ._output import Result

if TYPE_CHECKING:
    from ._turnrules import Tally

__all__ = ["call_outcome", "invocation_outcome"]


async def call_outcome(
    binding: Binding, request: Request, admission: Admission, call_id: str | None = None, tally: Tally | None = None
) -> Result | BaseException:
    """Admit `request` with `binding` and run it: the result, or whatever it raised, as the outcome.

    Every exception is the call's outcome, `BaseException`s included: a `KeyboardInterrupt` or a
    `SystemExit` out of a tool (or its validator) is the tool's own (a real Ctrl-C under `asyncio.run`
    cancels the main task instead), and so is a `CancelledError` while the awaiting task is not being
    cancelled. Only that task's cancellation propagates (see `invocation_outcome`). `call_id` (the
    provider's) is only told to an observer (`scopetool.otel`). A `tally` (the run's `TurnRules`) is
    asked once the call is admitted: a refusal is the outcome, and the tool does not run.
    """
    try:
        observer = _observe.current
        if observer is None:
            invocation = binding.contract.prepare(request, admission)
        else:
            invocation = observer.admit(binding.contract, request, admission, call_id)
    except BaseException as error:  # noqa: BLE001 - sorted by _outcome_of
        return _outcome_of(error)
    if tally is not None:
        refusal = tally.admit(invocation)
        if refusal is not None:
            return refusal
    return await invocation_outcome(binding, invocation)


async def invocation_outcome(binding: Binding, invocation: Invocation) -> Result | BaseException:
    """Run an admitted invocation: its result, or whatever the tool raised, as the outcome.

    Only the cancellation of the awaiting task (a client's, a shutdown's) propagates, and the closing
    of this coroutine; everything else the tool raises, `BaseException`s included, is returned.
    """
    try:
        observer = _observe.current
        if observer is None:
            return await binding.call(invocation)
        return await observer.call(binding, invocation)
    except BaseException as error:  # noqa: BLE001 - sorted by _outcome_of
        return _outcome_of(error)


def _outcome_of(error: BaseException) -> BaseException:
    """`error` as a call's outcome; raised again when it is not the call's to report."""
    if isinstance(error, GeneratorExit):
        raise error  # the coroutine itself is being closed
    asyncio = sys.modules.get("asyncio")  # not imported here: a CancelledError means asyncio is loaded
    if asyncio is not None and isinstance(error, asyncio.CancelledError):
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise error  # the caller's cancellation, not the tool's doing
    return error
