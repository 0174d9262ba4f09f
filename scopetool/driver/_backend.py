"""The backend protocol: where a driver's calls run and what it remembers of them; and the in-memory backend."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeAlias, final, runtime_checkable

from .._binding import Binding
from .._contract import Admission, IdempotencyKey, Invocation
from .._input import Continuation, InputRequest
from .._native import build, slots
from .._outcome import Failure
from .._output import Output, Result, TextBlock, completed, completed_details
from .._run import invocation_outcome
from .._turnrules import Grant
from ._identity import call_digest
from ._records import Record, decode_outcome, interrupted_record, is_input, outcome_record, record_request, run_request

__all__ = [
    "AdmittedCall",
    "Backend",
    "CallState",
    "Conflict",
    "Finished",
    "GrantStore",
    "MemoryBackend",
    "RevealStore",
    "Waiting",
]


@final
@dataclass(frozen=True, slots=True)
class AdmittedCall:
    """One call the driver admitted and hands to a backend: its key, binding and invocation, and their digest."""

    key: IdempotencyKey
    """The call's idempotency key (the driver minted it; the invocation carries it too)."""
    binding: Binding
    """The binding that admitted the invocation."""
    invocation: Invocation
    """The admitted first attempt of the call."""
    _digest: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def digest(self) -> str:
        """`call_digest` of the tool name and the admitted arguments, worked out the first time it is read.

        A backend reads it to tell a replay of a key from a conflict: a durable one when it stores the
        call, the memory backend only when a key comes again, so a call run once is never digested.
        """
        digest = self._digest
        if digest is None:
            digest = call_digest(self.binding.name, self.invocation.arguments)
            _set_digest(self, digest)
        return digest

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.binding.name

    @property
    def arguments(self) -> str:
        """The admitted arguments, exactly as the model sent them."""
        return self.invocation.arguments.decode("utf-8")

    @property
    def replayable(self) -> bool:
        """Whether the tool promised an effect (SAFE or IDEMPOTENT) that lets a backend run it again."""
        effect = self.binding.definition().effect
        return effect is not None and effect.replayable


@final
@dataclass(frozen=True, slots=True)
class Finished:
    """The call has its final outcome (stored: a `Result`, or a `Failure` showing the model-visible output)."""

    outcome: Result | Failure


# The slots `build` writes, as the frozen dataclasses' own __init__ writes them, for less: the driver's
# hot path builds one of each per call (tests check these build what the constructors build).
_ADMITTED_CALL: Final = slots(AdmittedCall, "key", "binding", "invocation", "_digest")
_FINISHED: Final = slots(Finished, "outcome")
_set_digest = AdmittedCall.__dict__["_digest"].__set__


def new_admitted_call(key: IdempotencyKey, binding: Binding, invocation: Invocation) -> AdmittedCall:
    """``AdmittedCall(key, binding, invocation)``, built without its __init__."""
    return build(AdmittedCall, _ADMITTED_CALL, key, binding, invocation, None)


def new_finished(outcome: Result | Failure) -> Finished:
    """``Finished(outcome)``, built without its __init__."""
    return build(Finished, _FINISHED, outcome)


@final
@dataclass(frozen=True, slots=True)
class Waiting:
    """The call committed an input request and waits for its answer."""

    request: InputRequest


@final
@dataclass(frozen=True, slots=True)
class Conflict:
    """The key names an earlier call with other arguments (another digest): nothing was run."""


CallState: TypeAlias = Finished | Waiting | Conflict
"""Where a call stands after `Backend.start`."""


@runtime_checkable
class Backend(Protocol):
    """Where a driver's calls run, and what it keeps of them.

    A backend runs each admitted call at most once per key and keeps its outcome; starting a key again
    returns the stored state, or `Conflict` when the digest differs. A call that asks for input waits
    until `answer` delivers a valid answer, then resumes with a `Continuation` of the same key.
    """

    async def secret(self) -> bytes:
        """The secret the driver mints keys with: the same for every start of this backend's store."""
        ...

    async def start(self, call: AdmittedCall) -> CallState:
        """Run `call` (or attach to its earlier run) until it finishes or waits for input."""
        ...

    async def answer(self, key: IdempotencyKey, response: Any) -> bool:
        """Deliver the answer to the input request `key` waits on; False when it waits on none.

        Raises:
            InvalidInputRequestError: the response does not satisfy the request's response schema.
        """
        ...


@final
class _Entry:
    """What the memory backend keeps of one key."""

    __slots__ = ("answer", "call", "finished", "record", "running", "waiters")

    def __init__(self, call: AdmittedCall) -> None:
        self.call = call
        self.finished: Finished | None = None
        """The state of a call that completed with a result, for the tasks that waited on this entry (the
        store keeps the call as `_Completed` from then on; a `Result` has no private cause)."""
        self.record: Record | None = None
        """The latest record otherwise: the final error outcome, or the input request the call waits on."""
        self.answer: Continuation | None = None
        """The accepted answer to the request in `record`, until the resumed attempt finishes."""
        self.running = False
        """Whether a task runs the call now."""
        self.waiters: asyncio.Future[None] | None = None
        """Done when the running attempt ends: made by the first task that waits for it, if any does."""


_ENTRY: Final = slots(_Entry, "call", "finished", "record", "answer", "running", "waiters")
"""The slots of an `_Entry` in its ``__init__``'s order, for `build` (a test checks it builds what ``_Entry`` does)."""

_Completed: TypeAlias = tuple[bytes | str | Result, str, bytes]
"""What the memory backend keeps of a call that completed with a result: the result (`_kept`), the tool
name and the admitted arguments (for the digest a replay is checked against). Less memory, and fewer
objects for the garbage collector to walk, than the call's `_Entry` with its admitted call and invocation."""


def _kept(result: Result) -> bytes | str | Result:
    """A completed result as the store keeps it: its JSON details alone, or its one text, where that is all.

    A tuple of str and bytes is left alone by the garbage collector, which would otherwise walk every
    stored result and its output for as long as the store lives.
    """
    output = result.output
    content, details = output.content, output.details
    if not content and details is not None:
        return details
    if details is None and len(content) == 1 and type(block := content[0]) is TextBlock and block.text:
        return block.text
    return result


def _restored(kept: bytes | str | Result) -> Result:
    """The result `_kept` kept: an equal one."""
    if isinstance(kept, bytes):
        return completed_details(kept)  # details stored from a result, so one finite I-JSON document
    if isinstance(kept, str):
        return completed(Output.from_text(kept))
    return kept


@runtime_checkable
class RevealStore(Protocol):
    """What a backend may also keep: the tools each run's searches revealed (see `Driver.catalog`).

    A backend without it leaves a run's reveals in the driver's memory, where a new driver (a restarted
    process) does not find them; `MemoryBackend` and `DbosBackend` keep them.
    """

    async def revealed(self, run_id: str) -> tuple[str, ...]:
        """The tools the run's searches revealed, in the order revealed (empty for a run with none)."""
        ...

    async def reveal(self, run_id: str, names: Sequence[str]) -> None:
        """Append `names` (new to the run) to the run's revealed tools."""
        ...


@runtime_checkable
class GrantStore(Protocol):
    """What a backend may also keep: the calls each run's `TurnRules` granted (see `Driver`'s `rules`).

    A driver with rules reads a run's grants at each turn and appends the turn's new ones before its
    calls start, so a replayed turn counts none twice (a grant names its call's key) and a driver made
    again on the same store (a restarted process) forgets none. A backend without it leaves the counts
    in the driver's memory; `MemoryBackend` and `DbosBackend` keep them.
    """

    async def granted(self, run_id: str) -> tuple[Grant, ...]:
        """The calls the run's rules granted, in the order granted (empty for a run with none)."""
        ...

    async def grant(self, run_id: str, grants: Sequence[Grant]) -> None:
        """Append `grants` (new to the run) to the run's granted calls."""
        ...


@final
class MemoryBackend:
    """The default backend: calls run in this process and are remembered for its lifetime.

    Nothing survives the process. A call cancelled while its tool runs is treated as a crash would be
    on a durable backend: a replayable tool is run again by the next start, a tool with no effect
    promise is not (its outcome becomes "interrupted; outcome unknown").

    Example:
        ```python
        import asyncio
        from scopetool import Registry, tool
        from scopetool.driver import Driver, MemoryBackend
        from scopetool.providers import openai_chat

        @tool
        def shout(text: str) -> str:
            \"\"\"Repeat the text in capitals.\"\"\"
            return text.upper()

        driver = Driver(Registry(shout), MemoryBackend())
        calls = openai_chat.parse_tool_calls({"tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "shout", "arguments": '{"text": "hi"}'}}]})
        turn = asyncio.run(driver.run("conversation-1", calls))
        print(turn.messages(openai_chat))
        #> [{'role': 'tool', 'tool_call_id': 'call_1', 'content': 'HI'}]
        ```
    """

    __slots__ = ("_calls", "_grants", "_reveals", "_secret")

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)
        self._calls: dict[str, _Entry | _Completed] = {}
        self._reveals: dict[str, tuple[str, ...]] = {}
        self._grants: dict[str, tuple[Grant, ...]] = {}

    async def granted(self, run_id: str) -> tuple[Grant, ...]:
        """The calls the run's turn rules granted, in the order granted (kept as long as the backend)."""
        return self._grants.get(run_id, ())

    async def grant(self, run_id: str, grants: Sequence[Grant]) -> None:
        """Append `grants` to the run's granted calls."""
        self._grants[run_id] = (*self._grants.get(run_id, ()), *grants)

    async def revealed(self, run_id: str) -> tuple[str, ...]:
        """The tools the run's searches revealed, in the order revealed (kept as long as the backend)."""
        return self._reveals.get(run_id, ())

    async def reveal(self, run_id: str, names: Sequence[str]) -> None:
        """Append `names` to the run's revealed tools (a name already there keeps its first place)."""
        self._reveals[run_id] = tuple(dict.fromkeys((*self._reveals.get(run_id, ()), *names)))

    async def secret(self) -> bytes:
        """A random secret drawn when the backend was made (its store lives no longer)."""
        return self._secret

    async def start(self, call: AdmittedCall) -> CallState:
        """Run `call`, resume it with its accepted answer, or return what it already came to."""
        key = call.key
        entry = self._calls.get(key)
        if entry is None:
            entry = self._calls[key] = build(_Entry, _ENTRY, call, None, None, None, False, None)  # _Entry(call)
        elif isinstance(entry, tuple):
            kept, name, arguments = entry
            return new_finished(_restored(kept)) if call_digest(name, arguments) == call.digest else Conflict()
        elif entry.call.digest != call.digest:
            return Conflict()
        while entry.running:  # another task runs this call: share its outcome
            if entry.waiters is None:
                entry.waiters = asyncio.get_running_loop().create_future()
            await asyncio.shield(entry.waiters)
        if entry.finished is not None:
            return entry.finished
        record = entry.record
        if record is not None and not (is_input(record) and entry.answer is not None):
            return _state(record)
        entry.running = True
        try:
            if entry.answer is None:
                outcome = await invocation_outcome(call.binding, call.invocation)
                if isinstance(outcome, Result) and outcome.input_request is None:
                    entry.finished = finished = build(Finished, _FINISHED, outcome)  # new_finished(outcome)
                    self._calls[key] = (_kept(outcome), call.binding.name, call.invocation.arguments)
                    return finished
                entry.record = outcome_record(call.name, outcome)
            else:
                admission = Admission(idempotency_key=call.key, continuation=entry.answer)
                entry.record = await run_request(call.binding, call.name, call.arguments, admission)
            entry.answer = None
        except BaseException:
            if not call.replayable:
                entry.record = interrupted_record(call.name)
                entry.answer = None
            raise
        finally:
            entry.running = False
            waiters, entry.waiters = entry.waiters, None
            if waiters is not None:
                waiters.set_result(None)
        return _state(entry.record)

    async def answer(self, key: IdempotencyKey, response: Any) -> bool:
        """Accept the answer to the request `key` waits on; the next start resumes the call with it."""
        entry = self._calls.get(key)
        if (
            not isinstance(entry, _Entry)
            or entry.record is None
            or not is_input(entry.record)
            or entry.answer is not None
        ):
            return False
        entry.answer = record_request(entry.record).continuation(response)
        return True


def _state(record: Record) -> CallState:
    return Waiting(record_request(record)) if is_input(record) else Finished(decode_outcome(record))
