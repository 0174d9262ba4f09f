"""The driver on the in-memory backend: keys, digests, order, input waits, replays and outcomes."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from scopetool import (
    Definition,
    Effect,
    Failure,
    FailureKind,
    IdempotencyKey,
    InputDecoder,
    InputRejection,
    InputRequest,
    InvalidInputRequestError,
    InvalidInvocationError,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    Signature,
    classify_failure,
    tool,
)
from scopetool.driver import (
    Backend,
    CallStatus,
    Driver,
    IncompleteTurnError,
    MemoryBackend,
    ReplayConflictError,
    StoredCauseError,
    Turn,
    call_digest,
    mint_key,
)
from scopetool.providers import ToolCall, UnknownToolError, anthropic, ollama, openai_chat


def call(name: str, arguments: Any = None, call_id: str | None = "auto") -> ToolCall:
    """A tool call as a provider adapter makes it (the id defaults to one derived from the name)."""
    text = json.dumps(arguments if arguments is not None else {})
    return ToolCall(id=f"call_{name}" if call_id == "auto" else call_id, request=Request(name=name, arguments=text))


class Log:
    """What the test tools did, in order."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.running = 0
        self.peak = 0

    async def step(self, label: str) -> None:
        """Record a call's start and end, yielding in between so concurrent calls overlap."""
        self.running += 1
        self.peak = max(self.peak, self.running)
        self.events.append(f"start {label}")
        for _ in range(3):
            await asyncio.sleep(0)
        self.events.append(f"end {label}")
        self.running -= 1


class Label(BaseModel):
    """A label."""

    label: str = "x"


class Asker:
    """Asks for a boolean `rounds` times before it acts; logs its keys and its effect."""

    signature = Signature(Label, str)

    def __init__(self, log: Log, name: str = "approve", rounds: int = 1) -> None:
        self.log = log
        self.name = name
        self.rounds = rounds

    def definition(self) -> Definition:
        return self.signature.definition(self.name, "Act once a person approves.")

    def input_validator(self) -> InputDecoder[Label]:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        label = self.signature.decode(invocation).label
        self.log.events.append(f"key {invocation.idempotency_key}")
        continuation = invocation.continuation
        asked = 0 if continuation is None else continuation.state["asked"]
        if continuation is not None and continuation.response is not True:
            return Result(output=Output.from_text("declined"))
        if asked < self.rounds:
            return Result(
                input_request=InputRequest(
                    prompt=f"approve {label}? ({asked + 1})",
                    response_schema={"type": "boolean"},
                    continuation_state={"asked": asked + 1},
                )
            )
        self.log.events.append(f"acted {label}")
        return Result(output=Output.from_text(f"done {label}"))


def make_registry(log: Log) -> Registry:
    @tool(effect=Effect.SAFE)
    async def read(label: str = "r") -> str:
        """Read something."""
        await log.step(f"read {label}")
        return f"read {label}"

    @tool(effect=Effect.SAFE)
    async def peek(label: str = "p") -> str:
        """Peek at something (serial when the driver says so)."""
        await log.step(f"peek {label}")
        return f"peek {label}"

    @tool
    async def write(label: str = "w") -> str:
        """Write something (no replay promise)."""
        await log.step(f"write {label}")
        return f"wrote {label}"

    @tool(effect=Effect.IDEMPOTENT)
    async def charge(cents: int) -> str:
        """Charge an amount."""
        await log.step(f"charge {cents}")
        return f"charged {cents}"

    @tool
    def refuse() -> str:
        """Always refuses."""
        raise Failure(kind=FailureKind.REJECTED, output="not allowed here", cause=PermissionError("policy 7"))

    @tool
    def crash() -> str:
        """Always fails with an ordinary error."""
        raise RuntimeError("secret internal detail")

    @tool
    def picky(word: str) -> str:
        """Refuses some input only when it runs."""
        raise InvalidInvocationError("tool: invalid invocation") from InputRejection(
            f"the word has {len(word)} letters"
        )

    return Registry(read, peek, write, charge, refuse, crash, picky, Asker(log), Asker(log, "twice", rounds=2))


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
def driver(log: Log) -> Driver:
    return Driver(make_registry(log))


def texts(turn: Turn) -> list[str]:
    return [
        json.dumps(m["content"]) if not isinstance(m["content"], str) else m["content"]
        for m in turn.messages(openai_chat)
    ]


# -- keys and digests


def test_keys_are_opaque_stable_and_distinct() -> None:
    """A key is lowercase base32 of an HMAC, the same for the same run and call, different otherwise."""
    key = mint_key(b"s" * 32, "conversation-42", "call_1", 0)
    assert key == mint_key(b"s" * 32, "conversation-42", "call_1", 5)  # a provider id, not the position, names it
    assert len(key) == 52 and key.isalnum() and key == key.lower()
    assert "42" not in key and "call" not in key
    others = {
        mint_key(b"t" * 32, "conversation-42", "call_1", 0),
        mint_key(b"s" * 32, "conversation-43", "call_1", 0),
        mint_key(b"s" * 32, "conversation-42", "call_2", 0),
        mint_key(b"s" * 32, "conversation-42", None, 0),
        mint_key(b"s" * 32, "conversation-42", None, 1),
    }
    assert key not in others and len(others) == 5


def test_keys_are_the_hmac_of_the_calls_compact_json() -> None:
    """A key is the HMAC-SHA256 of json.dumps of the call's identity (what durable backends stored stays valid)."""
    import base64
    import hashlib
    import hmac
    import json

    def reference(secret: bytes, name: list[object]) -> str:
        identity = json.dumps(name, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        mac = hmac.new(secret, identity, hashlib.sha256).digest()
        return base64.b32encode(mac).decode("ascii").rstrip("=").lower()

    for run, call in [("r", "c"), ("", "call_1"), ('run "x"\\', "\u00e9\ud800\n"), ("\U0001f600", "")]:
        for secret in (b"k", b"", b"s" * 64, b"x" * 65):
            assert mint_key(secret, run, call, 3) == reference(secret, ["id", run, call])
            assert mint_key(secret, run, None, 3) == reference(secret, ["position", run, 3])


def test_keys_are_base32_of_the_digest_for_any_digest() -> None:
    """The key's base32 is base64.b32encode's, unpadded and lowercase, for every bit pattern tried."""
    import base64
    import os

    from scopetool._contract import SPEEDUPS
    from scopetool.driver._identity import _base32, _base32_text  # pyright: ignore[reportPrivateUsage]

    assert (_base32_text is _base32) is not SPEEDUPS  # the C one where the extension is installed
    for digest in [bytes(32), b"\xff" * 32, *(os.urandom(32) for _ in range(500))]:
        expected = base64.b32encode(digest).decode("ascii").rstrip("=").lower()
        assert _base32(digest) == expected
        assert _base32_text(digest) == expected
    from scopetool.driver._identity import _base32_in_c  # pyright: ignore[reportPrivateUsage]

    assert (_base32_in_c() is None) is not SPEEDUPS
    if SPEEDUPS:  # the C one takes any length
        for digest in [b"", *(os.urandom(n) for n in range(1, 70))]:
            assert _base32_text(digest) == base64.b32encode(digest).decode("ascii").rstrip("=").lower()


# Keys and digests computed by the code at commit 1668bb3, before the driver's speed work (issue 20): durable
# backends store both, so every later version must give exactly these bytes.
PINNED_KEYS = [
    ((b"s" * 32, "conversation-42", "call_1", 0), "m3yymrb4n3vpxqdt65hjy7577tw54m4v35ore5kggdj4j37lefpq"),
    ((b"s" * 32, "conversation-42", None, 7), "clihjuhrgwt5kenvqi77jqds6z6qxufllugjdabq4zm24f3cd2ma"),
    ((b"x" * 65, 'run "\u00e9"\\', "\ud800\n", 0), "c72uljaziy437iiw6swzlupa65dc6d2kpys52hxg3dpyacqnbcaa"),
    ((b"", "\U0001f600", "", 3), "7fdf2olgjepjpdeogxszve5lnvqprqe73wn5su2hjw2k4v3vdrmq"),
]
PINNED_DIGESTS = [
    (b'{"a": 1, "b": 3}', "5218caac40f864ae8689536faff02c448c6ca16be6c2ba363c73aec29d90af84"),
    (b"{}", "8cd3d75d37b27583f190cfc6386ab624a27849c872fbe8a7f13d880418017581"),
    (
        b' { "z" : [1.50, -0, -0.0, 1e5, 1E-7, 123456789012345678901234567890, true, false, null] , '
        b'"a":{"y":"\\u00e9\\ud83d\\ude00 \\u2028/\\/\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f"}}',
        "f2d1ef3440cd8934933ded32f12ebb1653a098bd2282bd47d01a06f72c38df9b",
    ),
    (
        '{"\uffff": 1, "\U0001f600": 2, "\u00e9": [], "a": {}}'.encode(),
        "90446727aef0f801b6ee8770723b48ddcb5e0d6dc50aaa2998144ecf1c4c2b84",
    ),
    (b'{"n": [[], [{}], -12.5e+3, 0.0]}', "303773dbf6b3d3ef66ea60ce193a8738233e7307cb8adb36b83cfa43562c61bb"),
]


def test_keys_and_digests_are_the_bytes_stored_before() -> None:
    """Keys and digests equal those today's durable stores hold (pinned from the code before the speed work)."""
    for arguments, key in PINNED_KEYS:
        assert mint_key(*arguments) == key
    for raw, digest in PINNED_DIGESTS:
        assert call_digest("add", raw) == digest


_JSON_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
_JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**30), 10**30),
        st.floats(allow_nan=False, allow_infinity=False),
        _JSON_TEXT,
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_JSON_TEXT, inner, max_size=5)),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON_VALUES, ascii_only=st.booleans(), indent=st.sampled_from([None, 1]))
def test_digests_are_the_canonical_forms_whichever_encoder(value: Any, ascii_only: bool, indent: int | None) -> None:
    """The C encoder gives the Python one's canonical bytes for every parsed document, or leaves it to it."""
    import hashlib

    from jiter import LosslessFloat

    from scopetool._json import canonical_json, loads_exact

    raw = json.dumps({"v": value}, ensure_ascii=ascii_only, indent=indent).encode("utf-8")
    parsed = loads_exact(raw)
    expected = hashlib.sha256(b"add\x00" + canonical_json(parsed)).hexdigest()
    assert call_digest("add", raw) == expected
    from scopetool._digest import _canonical  # pyright: ignore[reportPrivateUsage]

    if _canonical is not None:
        text = _canonical(b"add\x00", parsed, LosslessFloat)
        assert text is None or text == b"add\x00" + canonical_json(parsed)


def test_the_c_encoder_leaves_what_it_cannot_order_or_type_to_python() -> None:
    """Names beyond the BMP, other types, lone surrogates and deep nesting are the Python encoder's."""
    from jiter import LosslessFloat

    from scopetool._contract import SPEEDUPS
    from scopetool._digest import _canonical  # pyright: ignore[reportPrivateUsage]
    from scopetool._json import canonical_json

    assert (_canonical is None) is not SPEEDUPS
    if _canonical is None:
        return
    deep: Any = 1
    for _ in range(150):
        deep = [deep]
    for value in [{"\U0001f600": 1}, 1.5, {1: 2}, "\ud800", deep, [True, 1 << 70, -(1 << 63), (1 << 63) - 1]]:
        text = _canonical(b"", value, LosslessFloat)
        if text is not None:
            assert text == canonical_json(value)
        else:
            assert value != [True, 1 << 70, -(1 << 63), (1 << 63) - 1]
    assert (
        _canonical(b"p", [True, 1 << 70, -(1 << 63)], LosslessFloat)
        == b"p[true,1180591620717411303424,-9223372036854775808]"
    )
    assert _canonical(b"", {"\U0001f600": 1}, LosslessFloat) is None
    assert _canonical(b"", {"a": "x" * 400, "b": list(range(40))}, LosslessFloat) == canonical_json(
        {"a": "x" * 400, "b": list(range(40))}
    )
    with pytest.raises(TypeError):
        _canonical("p", 1, LosslessFloat)  # type: ignore[arg-type]


def test_keys_accept_any_text() -> None:
    """Run and call ids with lone surrogates or quotes still give distinct keys."""
    assert mint_key(b"k", "run\ud800", '"', 0) != mint_key(b"k", "run\ud801", '"', 0)


def test_digest_ignores_spacing_and_member_order_only() -> None:
    """The digest is of the canonical arguments and the tool name."""
    base = call_digest("add", b'{"a": 1, "b": [1, 2]}')
    assert base == call_digest("add", b'{"b":[1,2],"a":1}')
    assert base != call_digest("add", b'{"a": 2, "b": [1, 2]}')
    assert base != call_digest("sum", b'{"a": 1, "b": [1, 2]}')
    assert len(base) == 64


async def test_the_tool_receives_the_driver_minted_key(driver: Driver, log: Log) -> None:
    """The invocation carries the key the driver reports for the call."""
    turn = await driver.run("run-1", [call("approve")])
    assert log.events == [f"key {turn.results[0].key}"]


async def test_calls_without_ids_are_named_by_position(driver: Driver) -> None:
    """Two id-less calls of a turn (Ollama's) get distinct keys, the same on every replay of the turn."""
    calls = ollama.parse_tool_calls(
        {"message": {"tool_calls": [{"function": {"name": "charge", "arguments": {"cents": 1}}}] * 2}}
    )
    first = await driver.run("turn-1", calls)
    again = await driver.run("turn-1", calls)
    keys = [r.key for r in first.results]
    assert keys[0] != keys[1]
    assert keys == [r.key for r in again.results]


# -- outcomes


async def test_unknown_tools_and_rejected_arguments_are_error_results(driver: Driver, log: Log) -> None:
    """Neither ends the turn, nothing runs, and the model sees the usual texts."""
    turn = await driver.run("run-1", [call("nope"), call("charge", {"cents": "5"}), call("read")])
    assert [r.status for r in turn.results] == [CallStatus.DONE] * 3
    assert isinstance(turn.results[0].outcome, UnknownToolError)
    assert isinstance(turn.results[1].outcome, InvalidInvocationError)
    messages = texts(turn)
    assert messages[0] == 'error: tool "nope" is not available'
    assert "$.cents: Input should be a valid integer" in messages[1] and '"5"' not in messages[1]
    assert messages[2] == "read r"
    assert log.events == ["start read r", "end read r"]


async def test_each_result_carries_its_own_calls_key(driver: Driver) -> None:
    """The one call that runs, followed by one that cannot, gets its own key in its result, not the last one's."""
    turn = await driver.run("run-1", [call("read"), call("nope")])
    secret = await driver.backend.secret()
    assert [r.key for r in turn.results] == [
        mint_key(secret, "run-1", "call_read", 0),
        mint_key(secret, "run-1", "call_nope", 1),
    ]
    assert texts(turn) == ["read r", 'error: tool "nope" is not available']


async def test_error_outcomes_keep_only_what_the_model_may_see(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    """A Failure keeps its kind and public output, an ordinary error becomes generic and is logged for the host."""
    with caplog.at_level(logging.WARNING, logger="scopetool.driver"):
        turn = await driver.run("run-1", [call("refuse"), call("crash"), call("picky", {"word": "hello"})])
    refused, crashed, _ = (r.outcome for r in turn.results)
    assert isinstance(refused, Failure) and refused.kind is FailureKind.REJECTED
    assert refused.cause is None
    assert isinstance(crashed, Failure) and crashed.kind is FailureKind.FAILED
    assert isinstance(crashed.cause, StoredCauseError)
    assert texts(turn) == ["not allowed here", 'error: tool "crash" failed', "the word has 5 letters"]
    assert "secret internal detail" not in repr(turn)
    logged = [r.exc_info[1] for r in caplog.records if r.exc_info]
    assert len(logged) == 1 and str(logged[0]) == "secret internal detail"


async def test_a_finished_call_returns_its_stored_outcome(driver: Driver, log: Log) -> None:
    """Driving the same turn again runs nothing and returns the same outcomes."""
    calls = [call("write", {"label": "a"}), call("charge", {"cents": 3})]
    first = await driver.run("run-1", calls)
    again = await driver.run("run-1", calls)
    assert log.events.count("start write a") == 1 and log.events.count("start charge 3") == 1
    assert texts(first) == texts(again) == ["wrote a", "charged 3"]
    other_run = await driver.run("run-2", calls)
    assert log.events.count("start write a") == 2
    assert [r.key for r in other_run.results] != [r.key for r in first.results]


async def test_a_replay_with_other_arguments_is_refused(
    driver: Driver, log: Log, caplog: pytest.LogCaptureFixture
) -> None:
    """The same call id with other arguments is not run; the model is told, the host warned."""
    await driver.run("run-1", [call("write", {"label": "a"})])
    with caplog.at_level(logging.WARNING, logger="scopetool.driver"):
        turn = await driver.run("run-1", [call("write", {"label": "b"})])
    result = turn.results[0]
    assert result.status is CallStatus.REFUSED and turn.complete
    failure = classify_failure(result.outcome)
    assert failure is not None and failure.kind is FailureKind.REJECTED
    assert isinstance(failure.cause, ReplayConflictError) and failure.cause.key == result.key
    assert texts(turn) == ['error: tool "write" was not run: this call id was already used with other arguments']
    assert "start write b" not in log.events
    assert any(result.key in r.getMessage() for r in caplog.records)


async def test_same_arguments_in_another_spelling_are_the_same_call(driver: Driver, log: Log) -> None:
    """Member order and spacing do not make a replay a different call."""
    await driver.run("run-1", [ToolCall(id="c", request=Request(name="charge", arguments='{"cents":3}'))])
    turn = await driver.run("run-1", [ToolCall(id="c", request=Request(name="charge", arguments='{ "cents" : 3 }'))])
    assert turn.results[0].status is CallStatus.DONE
    assert log.events.count("start charge 3") == 1


# -- order


async def test_safe_calls_run_concurrently(driver: Driver, log: Log) -> None:
    """Adjacent SAFE calls overlap; results stay in the model's order."""
    turn = await driver.run("run-1", [call("read", {"label": "1"}, "a"), call("read", {"label": "2"}, "b")])
    assert log.peak == 2
    assert texts(turn) == ["read 1", "read 2"]


async def test_other_calls_run_alone_in_model_order(driver: Driver, log: Log) -> None:
    """Calls without the SAFE promise never overlap, and run in the order emitted."""
    calls = [call("write", {"label": "1"}, "a"), call("charge", {"cents": 2}, "b"), call("write", {"label": "3"}, "c")]
    await driver.run("run-1", calls)
    assert log.peak == 1
    assert log.events == [
        "start write 1",
        "end write 1",
        "start charge 2",
        "end charge 2",
        "start write 3",
        "end write 3",
    ]


async def test_a_serial_call_is_a_barrier_for_safe_calls(driver: Driver, log: Log) -> None:
    """A SAFE call after a serial one starts only once it ended, and the SAFE calls before it ended first."""
    calls = [call("read", {"label": "1"}, "a"), call("write", {"label": "2"}, "b"), call("read", {"label": "3"}, "c")]
    await driver.run("run-1", calls)
    assert log.events == ["start read 1", "end read 1", "start write 2", "end write 2", "start read 3", "end read 3"]


async def test_safe_tools_named_serial_run_alone(log: Log) -> None:
    """`serial` keeps a SAFE tool from running next to others."""
    driver = Driver(make_registry(log), serial={"peek"})
    await driver.run("run-1", [call("read", {"label": "1"}, "a"), call("peek", {"label": "2"}, "b")])
    assert log.peak == 1


async def test_concurrent_drives_of_one_call_run_it_once(driver: Driver, log: Log) -> None:
    """Tasks driving the same turn at once share one execution (the later ones wait for the first)."""
    calls = [call("write", {"label": "a"})]
    first, second, third = await asyncio.gather(*(driver.run("run-1", calls) for _ in range(3)))
    assert log.events.count("start write a") == 1
    assert texts(first) == texts(second) == texts(third) == ["wrote a"]


async def test_a_repeated_call_id_in_one_turn_is_one_call(driver: Driver, log: Log) -> None:
    """A SAFE call listed twice under one id runs once; both entries get its outcome."""
    turn = await driver.run("run-1", [call("read", {"label": "1"}, "same"), call("read", {"label": "1"}, "same")])
    assert log.events.count("start read 1") == 1
    assert texts(turn) == ["read 1", "read 1"]


# -- input requests


async def test_a_waiting_call_holds_later_calls_until_answered(driver: Driver, log: Log) -> None:
    """The request waits, later calls are held (not run), the answer resumes the same call."""
    calls = [
        call("read", {"label": "1"}, "a"),
        call("approve", {"label": "x"}, "b"),
        call("write", {}, "c"),
        call("nope"),
    ]
    turn = await driver.run("run-1", calls)
    assert [r.status for r in turn.results] == [CallStatus.DONE, CallStatus.WAITING, CallStatus.HELD, CallStatus.DONE]
    assert not turn.complete and turn.waiting == (turn.results[1],)
    waiting = turn.results[1]
    assert waiting.request is not None and waiting.request.prompt == "approve x? (1)"
    assert "start write w" not in log.events
    with pytest.raises(IncompleteTurnError, match="'approve' is waiting"):
        turn.outcomes()
    with pytest.raises(IncompleteTurnError, match="'approve' is waiting"):
        turn.messages(openai_chat)

    assert await driver.answer(waiting.key, True)
    resumed = await driver.run("run-1", calls)
    assert resumed.complete
    assert texts(resumed)[:3] == ["read 1", "done x", "wrote w"]
    assert log.events.count("acted x") == 1 and log.events.count("start read 1") == 1
    assert log.events.count(f"key {waiting.key}") == 2  # the resumed attempt had the same key


async def test_duplicate_and_stray_answers_are_ignored(driver: Driver, log: Log) -> None:
    """Only the first answer to a request counts; a call that waits on nothing takes none."""
    calls = [call("approve")]
    key = (await driver.run("run-1", calls)).results[0].key
    assert await driver.answer(key, True)
    assert not await driver.answer(key, False)
    assert texts(await driver.run("run-1", calls)) == ["done x"]
    assert not await driver.answer(key, True)
    assert not await driver.answer(IdempotencyKey("unknown"), True)
    assert log.events.count("acted x") == 1


async def test_an_invalid_answer_is_an_error_for_the_host(driver: Driver) -> None:
    """An answer off the response schema raises and leaves the call waiting."""
    key = (await driver.run("run-1", [call("approve")])).results[0].key
    with pytest.raises(InvalidInputRequestError):
        await driver.answer(key, "yes")
    assert (await driver.run("run-1", [call("approve")])).results[0].status is CallStatus.WAITING
    with pytest.raises(ValueError, match="key"):
        await driver.answer(IdempotencyKey(""), True)


async def test_a_call_may_ask_more_than_once(driver: Driver, log: Log) -> None:
    """Each answer resumes the call, which may ask again; a declined answer ends it without acting."""
    calls = [call("twice", {"label": "t"})]
    first = await driver.run("run-1", calls)
    assert await driver.answer(first.results[0].key, True)
    second = await driver.run("run-1", calls)
    assert second.results[0].status is CallStatus.WAITING
    assert second.results[0].request is not None and second.results[0].request.prompt == "approve t? (2)"
    assert await driver.answer(first.results[0].key, True)
    assert texts(await driver.run("run-1", calls)) == ["done t"]

    declined = await driver.run("run-2", calls)
    assert await driver.answer(declined.results[0].key, False)
    assert texts(await driver.run("run-2", calls)) == ["declined"]
    assert log.events.count("acted t") == 1


# -- cancellation (what a crash is to a durable backend)


async def test_a_cancelled_call_without_promise_is_not_run_again(log: Log) -> None:
    """Interrupted mid-call, a tool with no effect promise ends as "interrupted; outcome unknown"."""
    entered = asyncio.Event()

    @tool
    async def send() -> str:
        """Send something."""
        log.events.append("send")
        entered.set()
        await asyncio.Event().wait()
        return "sent"

    driver = Driver(Registry(send))
    task = asyncio.create_task(driver.run("run-1", [call("send")]))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    turn = await driver.run("run-1", [call("send")])
    assert texts(turn) == ['error: tool "send" was interrupted; its outcome is unknown']
    assert log.events == ["send"]


async def test_a_cancelled_replayable_call_runs_again(log: Log) -> None:
    """Interrupted mid-call, an IDEMPOTENT tool runs again under the same key."""
    entered = asyncio.Event()
    keys: list[str | None] = []

    class Pay:
        signature = Signature(Label, str)

        def definition(self) -> Definition:
            return self.signature.definition("pay", "Pay.", effect=Effect.IDEMPOTENT)

        async def call(self, invocation: Invocation) -> Result:
            keys.append(invocation.idempotency_key)
            if len(keys) == 1:
                entered.set()
                await asyncio.Event().wait()
            return Result(output=Output.from_text("paid"))

    driver = Driver(Registry(Pay()))
    task = asyncio.create_task(driver.run("run-1", [call("pay")]))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert texts(await driver.run("run-1", [call("pay")])) == ["paid"]
    assert len(keys) == 2 and keys[0] == keys[1]


# -- the driver's surface


async def test_messages_take_a_provider_module_or_its_function(driver: Driver) -> None:
    """`messages` renders with the provider's result_message; `outcomes` feeds results_message."""
    turn = await driver.run("run-1", [call("read", {"label": "1"}, "toolu_1")])
    assert turn.messages(anthropic) == turn.messages(anthropic.result_message)
    assert anthropic.results_message(turn.outcomes())["content"][0]["tool_use_id"] == "toolu_1"


def test_the_memory_backend_is_a_backend() -> None:
    """The protocol is runtime-checkable, and the default backend satisfies it."""
    assert isinstance(MemoryBackend(), Backend)
    assert isinstance(Driver(Registry()).backend, MemoryBackend)
    assert isinstance(Driver(Registry()).registry, Registry)


async def test_bad_arguments_are_refused(driver: Driver) -> None:
    """Wrong types fail fast with one clear error."""
    with pytest.raises(TypeError, match="Registry"):
        Driver([])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="backend"):
        Driver(Registry(), object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="serial"):
        Driver(Registry(), serial=[1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="run_id"):
        await driver.run("", [])
    with pytest.raises(TypeError, match="ToolCall"):
        await driver.run("run-1", [Request(name="read")])  # type: ignore[list-item]
    assert (await driver.run("run-1", [])).results == ()


def test_importing_the_driver_does_not_import_dbos() -> None:
    """DBOS is an optional extra: only scopetool.driver.dbos imports it."""
    code = "import sys, scopetool, scopetool.driver, scopetool.providers; print('dbos' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert completed.stdout.strip() == "False"


# -- the hot path's constructors


def test_the_hot_paths_constructors_build_what_the_dataclasses_build() -> None:
    """Every field set, equal to the dataclass's own construction (a field added later and missed fails here)."""
    import dataclasses

    from scopetool._native import build
    from scopetool.driver._backend import (  # pyright: ignore[reportPrivateUsage]
        _ENTRY,
        AdmittedCall,
        Finished,
        _Entry,
        new_admitted_call,
        new_finished,
    )
    from scopetool.driver._driver import CallResult, CallStatus, _done  # pyright: ignore[reportPrivateUsage]

    @tool
    async def echo(text: str) -> str:
        """Say the text back."""
        return text

    binding = Registry(echo).resolve("echo")
    assert binding is not None
    invocation = binding.contract.prepare(Request(name="echo", arguments='{"text": "hi"}'))
    key = IdempotencyKey("k")
    call = ToolCall(id="c", request=Request(name="echo", arguments='{"text": "hi"}'))
    outcome = Result(output=Output.from_text("hi"))
    built = [
        (new_admitted_call(key, binding, invocation), AdmittedCall(key, binding, invocation)),
        (new_finished(outcome), Finished(outcome)),
        (_done(call, key, outcome), CallResult(call, key, CallStatus.DONE, outcome)),
    ]
    for fast, slow in built:
        assert type(fast) is type(slow)
        for field in dataclasses.fields(slow):
            assert getattr(fast, field.name) is getattr(slow, field.name), field.name
        assert fast == slow
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(fast, dataclasses.fields(slow)[0].name, None)
    fast_entry = build(_Entry, _ENTRY, built[0][0], None, None, None, False, None)
    slow_entry = _Entry(built[0][0])
    assert set(_Entry.__slots__) == {member.__name__ for member in _ENTRY}
    assert [getattr(fast_entry, name) for name in _Entry.__slots__] == [
        getattr(slow_entry, name) for name in _Entry.__slots__
    ]


async def test_the_memory_backend_digests_a_call_only_when_its_key_comes_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call run once is never digested; a replay digests the stored and the new call, and a conflict is caught."""
    from scopetool.driver import _backend

    digested: list[tuple[str, bytes]] = []

    def counted(name: str, arguments: bytes) -> str:
        digested.append((name, arguments))
        return call_digest(name, arguments)

    monkeypatch.setattr(_backend, "call_digest", counted)

    @tool(effect=Effect.SAFE)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    driver = Driver(Registry(add))
    first = [ToolCall(id="c1", request=Request(name="add", arguments='{"a": 1, "b": 2}'))]
    done = (await driver.run("run", first)).results[0]
    assert done.status is CallStatus.DONE and digested == []
    assert not await driver.answer(done.key, True)  # a completed call waits on nothing
    assert (await driver.run("run", first)).results[0].status is CallStatus.DONE  # a replay: the stored outcome
    assert digested == [("add", b'{"a": 1, "b": 2}')] * 2
    other = [ToolCall(id="c1", request=Request(name="add", arguments='{"b": 2, "a": 5}'))]
    assert (await driver.run("run", other)).results[0].status is CallStatus.REFUSED
    assert digested[2:] == [("add", b'{"a": 1, "b": 2}'), ("add", b'{"b": 2, "a": 5}')]


async def test_the_memory_backend_keeps_completed_results_out_of_the_collectors_walk() -> None:
    """A completed call of details alone or of one text is kept as str and bytes, which the garbage
    collector stops tracking; a replay gets an equal result, of every output shape."""
    import gc

    from scopetool import MediaBlock, TextBlock

    @tool(effect=Effect.SAFE)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool(effect=Effect.SAFE)
    def shout(text: str) -> str:
        """Repeat the text in capitals."""
        return text.upper()

    @tool(effect=Effect.SAFE)
    def mixed() -> Output:
        """Return text and an image."""
        return Output(content=(TextBlock("see"), MediaBlock(mime_type="image/png", data=b"\x89PNG")))

    @tool(effect=Effect.SAFE)
    def nothing() -> Output:
        """Return the empty output."""
        return Output()

    backend = MemoryBackend()
    driver = Driver(Registry(add, shout, mixed, nothing), backend)
    calls = [call("add", {"a": 1, "b": 2}), call("shout", {"text": "hi"}), call("mixed"), call("nothing")]
    first = await driver.run("run", calls)
    gc.collect()
    kept = dict(backend._calls)  # pyright: ignore[reportPrivateUsage] - what the store holds
    assert [type(entry[0]) for entry in kept.values()] == [bytes, str, Result, Result]
    assert [gc.is_tracked(entry) for entry in kept.values()] == [False, False, True, True]
    again = await driver.run("run", calls)
    assert [r.status for r in again.results] == [CallStatus.DONE] * 4
    assert [r.outcome for r in again.results] == [r.outcome for r in first.results]
    assert texts(again) == texts(first)


def test_an_admitted_calls_digest_is_worked_out_once() -> None:
    """`AdmittedCall.digest` is `call_digest` of its name and arguments, the same object at every read."""
    from scopetool.driver import AdmittedCall

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    binding = Registry(add).resolve("add")
    assert binding is not None
    invocation = binding.contract.prepare(Request(name="add", arguments='{"b":2, "a":1}'))
    call = AdmittedCall(IdempotencyKey("k"), binding, invocation)
    assert "_digest" not in repr(call)
    digest = call.digest
    assert digest == call_digest("add", b'{"a": 1, "b": 2}')
    assert call.digest is digest
    assert call == AdmittedCall(IdempotencyKey("k"), binding, invocation)  # the kept digest is not compared


def test_keys_fall_back_to_the_pure_base32_without_the_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the C prepare off (SCOPETOOL_PURE_PYTHON=1, or no extension), keys are not written in C either."""
    from scopetool import _contract
    from scopetool.driver._identity import _base32_in_c  # pyright: ignore[reportPrivateUsage]

    monkeypatch.setattr(_contract, "SPEEDUPS", False)
    assert _base32_in_c() is None


def test_digests_fall_back_to_the_python_encoder_without_the_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the C prepare off (SCOPETOOL_PURE_PYTHON=1, or no extension), digests are not encoded in C either."""
    from scopetool import _contract
    from scopetool._digest import _canonical_in_c  # pyright: ignore[reportPrivateUsage]

    monkeypatch.setattr(_contract, "SPEEDUPS", False)
    assert _canonical_in_c() is None
