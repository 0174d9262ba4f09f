"""A driver for a model's tool calls: identity, order, input waits and outcomes, in memory or durably.

`Driver` runs one turn's `ToolCall`s (from a provider adapter): it mints each call's
`IdempotencyKey` from the run and the provider's call id, admits the call, runs it through a
`Backend`, and hands back a `Turn` whose outcomes become the provider's result messages. A call that
asks for input waits; `Driver.answer` resumes it, and running the turn again returns its outcome.

Backends: `MemoryBackend` (the default, one process), ``scopetool.driver.dbos.DbosBackend``
(durable, on DBOS Transact; install ``scopetool[dbos]``) and ``scopetool.driver.temporal.TemporalBackend``
(durable, on Temporal; install ``scopetool[temporal]``), which this package never imports itself.
"""

from __future__ import annotations

from ._backend import (
    AdmittedCall,
    Backend,
    CallState,
    Conflict,
    Finished,
    GrantStore,
    MemoryBackend,
    RevealStore,
    Waiting,
)
from ._driver import (
    CallResult,
    CallStatus,
    Driver,
    IncompleteTurnError,
    ReplayConflictError,
    ResultMessage,
    RetryBudgetExceededError,
    Turn,
)
from ._identity import call_digest, mint_key
from ._records import StoredCauseError

__all__ = [
    "AdmittedCall",
    "Backend",
    "CallResult",
    "CallState",
    "CallStatus",
    "Conflict",
    "Driver",
    "Finished",
    "GrantStore",
    "IncompleteTurnError",
    "MemoryBackend",
    "ReplayConflictError",
    "ResultMessage",
    "RetryBudgetExceededError",
    "RevealStore",
    "StoredCauseError",
    "Turn",
    "Waiting",
    "call_digest",
    "mint_key",
]
