"""Rate and concurrency limits, per caller and per tool: over stdio a JSON-RPC error, over HTTP a 429, never a run.

In process: the official SDK client under `acting_as` for the handlers' path (stdio's), and raw
2026-07-28 POSTs for the HTTP transport's, with the reference "everything" server behind the
recorder to prove that a call refused by a limit never reaches the upstream server.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, MCPError
from starlette.types import Receive, Scope, Send
from test_gateway import calls_received, recorded
from test_gateway_callers import raw_session
from third_party import everything_server

from scopetool import Principal, acting_as
from scopetool.cli import main
from scopetool.mcp import _http_server
from scopetool.mcp.gateway import ConfigError, GatewayConfig, open_gateway, parse_config, serve_gateway
from scopetool.mcp.limits import RATE_LIMITED, Admitted, Limit, Limiter, LimitError, Limits
from scopetool.mcp.server import HttpSettings, create_server

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "gateway_fixture.py"
MODERN = "2026-07-28"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Limit(rate="10/fortnight"), "rate '10/fortnight' is not a rate such as '10/second'"),
        (lambda: Limit(rate="0/second"), "rate '0/second' admits no call: give at least 1 per period"),
        (lambda: Limit(rate=10), "rate must be a string such as '10/second', not 10"),  # type: ignore[arg-type]
        (lambda: Limit(concurrency=0), "concurrency must be a whole number >= 1, not 0"),
        (lambda: Limit(concurrency=True), "concurrency must be a whole number >= 1, not True"),
        (lambda: Limits(redis="http://127.0.0.1:6379"), "redis must be a redis:// or rediss:// URL"),
        (lambda: Limits(store_timeout=0), "store_timeout must be a number of seconds > 0, not 0"),
    ],
)
def test_a_limit_out_of_range_is_a_value_error_naming_it(make: Any, message: str) -> None:
    """Each setting is checked when made, and the error names it."""
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        make()


@pytest.mark.parametrize(
    ("gateway", "message"),
    [
        ({"limits": []}, "config: gateway.limits: must be a JSON object, not an array"),
        (
            {"limits": {"callers": {}}},
            "config: gateway.limits: unknown key 'callers'; did you mean \"caller\"? (expected caller, redis, store",
        ),
        ({"limits": {"caller": {"rate": "1/sec"}}}, "config: gateway.limits.caller.rate: rate '1/sec' is not a rate"),
        ({"limits": {"tool": {"concurrency": 0}}}, "config: gateway.limits.tool.concurrency: concurrency must be"),
        ({"limits": {"tools": {"a": {"burst": 1}}}}, "config: gateway.limits.tools.a: unknown key 'burst'"),
        ({"limits": {"redis": "localhost"}}, "config: gateway.limits.redis: must be a redis:// or rediss:// URL"),
        ({"limits": {"storeTimeout": -1}}, "config: gateway.limits.storeTimeout: must be a number of seconds > 0"),
    ],
)
def test_a_bad_limits_key_is_one_line_naming_it(gateway: dict[str, Any], message: str) -> None:
    """Every limits key is checked, and a mistake is one line naming the key."""
    with pytest.raises(ConfigError) as raised:
        parse_config({"scopetool": {"tools": ["a:b"], "limits": {"rate": "1/second"}}, "gateway": gateway})
    assert str(raised.value).startswith(message)


def test_a_server_entry_limits_each_of_its_tools() -> None:
    """``limits`` in a server entry is one Limit; a mistake in it names the entry."""
    (git,) = parse_config({"mcpServers": {"git": {"command": "x", "limits": {"concurrency": 2}}}}).sections
    assert git.limits == Limit(concurrency=2)
    with pytest.raises(ConfigError, match=r"^config: mcpServers.git.limits.rate: rate 'x' is not"):
        parse_config({"mcpServers": {"git": {"command": "x", "limits": {"rate": "x"}}}})


async def test_a_concurrency_slot_is_held_until_released_and_nothing_is_held_by_a_refusal() -> None:
    """One in flight per tool: the second waits for nothing (refused, retry in 1 s), the slot comes back on release."""
    limiter = Limiter(Limits(tool=Limit(concurrency=1), caller=Limit(concurrency=5)))
    first = await limiter.enter("slow")
    refused = await limiter.enter("slow")
    other = await limiter.enter("fast")
    assert isinstance(first, Admitted) and isinstance(other, Admitted)
    assert isinstance(refused, LimitError) and (refused.status, refused.retry_after) == (429, 1)
    assert (
        str(refused) == 'Concurrency limit exceeded: calls of tool "slow" are limited to 1 in flight at once; the '
        "call was not run"
    )
    first.release()
    first.release()  # a second release gives nothing back twice
    again = await limiter.enter("slow")
    assert isinstance(again, Admitted) and isinstance(await limiter.enter("slow"), LimitError)


async def test_a_store_that_does_not_answer_refuses_the_call() -> None:
    """Fail closed: a Redis nobody listens on refuses the call with 503 within the store timeout."""
    limiter = Limiter(Limits(tool=Limit(rate="5/second"), redis="redis://127.0.0.1:9/0", store_timeout=0.5))
    with anyio.fail_after(5):
        refused = await limiter.enter("any")
    assert isinstance(refused, LimitError) and refused.status == 503


async def test_over_stdio_a_caller_over_its_rate_gets_the_error_and_others_go_on(tmp_path: Path) -> None:
    """Per caller: alice's third call in a minute is the JSON-RPC error 429 with a retry time; bob's first passes."""
    audit = tmp_path / "audit.jsonl"
    config = parse_config(
        {
            "scopetool": {"tools": [f"{FIXTURE}:team"]},
            "gateway": {"audit": str(audit), "limits": {"caller": {"rate": "2/minute"}}},
        }
    )
    outcomes: list[str] = []
    async with open_gateway(config, errlog=io.StringIO()) as gateway:
        assert gateway.limiter is not None
        server = create_server(gateway.registry, on_call=gateway.observe, limiter=gateway.limiter)
        for caller in ("alice", "alice", "alice", "bob"):
            with acting_as(Principal(caller)):
                async with Client(server) as client:
                    try:
                        outcomes.append((await client.call_tool("whoami", {})).content[0].text)  # type: ignore[union-attr]
                    except MCPError as error:
                        assert error.code == RATE_LIMITED and error.error.data["retryAfterSeconds"] > 0
                        outcomes.append(error.error.message)
    assert outcomes[:2] + outcomes[3:] == ["alice via None with []"] * 2 + ["bob via None with []"]
    assert outcomes[2] == "Rate limit exceeded: this caller's calls are limited to 2 per minute; the call was not run"
    calls = [json.loads(line) for line in audit.read_text().splitlines() if '"event":"call"' in line]
    assert [(call["subject"], call["reason"]) for call in calls] == [
        ("alice", None),
        ("alice", None),
        ("alice", "limited"),
        ("bob", None),
    ]


@asynccontextmanager
async def over_http(config: GatewayConfig) -> AsyncGenerator[str]:
    """The gateway of `config` served over HTTP on a free port, in process: its endpoint's URL."""
    said = io.StringIO()
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: serve_gateway(config, http=("127.0.0.1", 0), errlog=said))
        with anyio.fail_after(60):
            while " at http://" not in said.getvalue():
                await anyio.sleep(0.05)
        yield said.getvalue().split(" at ")[-1].split()[0]
        group.cancel_scope.cancel()


async def post_call(client: httpx.AsyncClient, url: str, request_id: int, name: str, arguments: str) -> httpx.Response:
    """One 2026-07-28 ``tools/call`` POST (stateless: no session), with the headers that era requires."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "_meta": META}}
    )
    body = body.replace('"_meta"', f'"arguments":{arguments},"_meta"', 1)
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    return await client.post(url, content=body, headers=headers, timeout=30)


async def test_over_http_a_call_over_a_limit_is_429_and_never_reaches_the_server(tmp_path: Path) -> None:
    """A server's tool limit (2 a minute) and a tool's concurrency (1): 429, Retry-After, a JSON-RPC body; no run."""
    received = tmp_path / "received.jsonl"
    config = parse_config(
        {
            "mcpServers": {
                "everything": {
                    **recorded(everything_server(), received),
                    "allow": ["echo"],
                    "limits": {"rate": "2/minute"},
                }
            },
            "scopetool": {"tools": [f"{FIXTURE}:slow_tools"], "prefix": "local"},
            "gateway": {"audit": str(tmp_path / "audit.jsonl"), "limits": {"tools": {"slow": {"concurrency": 1}}}},
        }
    )
    slow: list[httpx.Response] = []
    async with over_http(config) as url, httpx.AsyncClient() as client:
        answers = [await post_call(client, url, index, "echo", '{"message":"hi"}') for index in (1, 2, 3)]
        async with anyio.create_task_group() as group:

            async def first() -> None:
                slow.append(await post_call(client, url, 4, "slow", "{}"))

            group.start_soon(first)
            await anyio.sleep(0.2)
            slow.append(await post_call(client, url, 5, "slow", "{}"))
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[0].json()["result"]["content"][0]["text"] == "Echo: hi"
    refused = answers[2]
    assert 0 < int(refused.headers["retry-after"]) <= 60
    assert refused.json()["id"] == 3 and refused.json()["error"]["code"] == RATE_LIMITED
    assert refused.json()["error"]["data"] == {"retryAfterSeconds": int(refused.headers["retry-after"])}
    assert len(calls_received(received)) == 2  # the third never reached the everything server
    assert [answer.status_code for answer in slow] == [429, 200]  # the second ended first: refused at once
    busy: httpx.Response = slow[0]
    assert busy.headers["retry-after"] == "1" and "1 in flight at once" in busy.json()["error"]["message"]
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [entry["reason"] for entry in audit if entry["event"] == "call"] == [None, None, "limited", "limited", None]


def test_without_the_limits_package_a_rate_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rate needs the limits package (an extra): its absence is one line naming the extra; a concurrency does not."""
    monkeypatch.setitem(sys.modules, "limits", None)
    with pytest.raises(
        ValueError,
        match=r"^a rate needs the module 'limits', which is not installed: pip install 'scopetool\[limits\]'",
    ):
        Limit(rate="1/second")
    assert Limit(concurrency=1).limited


def test_without_a_redis_client_a_shared_limit_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rates in Redis need the package's Redis client: the gateway says so in one line, naming gateway.limits."""
    monkeypatch.setitem(sys.modules, "coredis", None)
    config = parse_config(
        {
            "scopetool": {"tools": [f"{FIXTURE}:team"]},
            "gateway": {"limits": {"redis": "redis://127.0.0.1:9/0", "tool": {"rate": "1/second"}}},
        }
    )

    async def start() -> None:
        async with open_gateway(config, errlog=io.StringIO()):
            pass  # pragma: no cover - it does not start

    with pytest.raises(ConfigError, match=r"^config: gateway.limits: redis limits need the Redis client: pip install"):
        anyio.run(start)


async def test_a_limit_for_a_name_nothing_is_served_as_is_said_at_start() -> None:
    """``gateway.limits.tools`` names served tools: a name no tool is served as is said on stderr at start."""
    limits = {"tools": {"read_note": {"rate": "1/second"}}}
    config = parse_config({"scopetool": {"tools": [f"{FIXTURE}:team"]}, "gateway": {"limits": limits}})
    said = io.StringIO()
    async with open_gateway(config, errlog=said) as gateway:
        assert gateway.limiter is not None
    assert (
        "scopetool proxy: gateway.limits.tools: no tool is served as 'read_note'; its limit applies to nothing\n"
        in said.getvalue()
    )


async def test_the_http_transport_holds_a_slot_until_the_answer_and_then_gives_it_back() -> None:
    """In front of any ASGI app: a tools/call holds its concurrency slot while answered, other messages none."""
    release = anyio.Event()
    seen: list[bool] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope.get("scopetool.limited", False))
        if scope["path"] == "/slow":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    limiter = Limiter(Limits(tool=Limit(concurrency=1)))
    hook = _http_server._Limits(limiter, None)  # pyright: ignore[reportPrivateUsage] - the hook itself
    front = _http_server._StrictBodies(app, HttpSettings(), hook)  # pyright: ignore[reportPrivateUsage]
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}})
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    transport = httpx.ASGITransport(app=front)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        statuses: list[int] = []
        async with anyio.create_task_group() as group:

            async def slow() -> None:
                statuses.append((await client.post("/slow", content=call)).status_code)

            group.start_soon(slow)
            await anyio.sleep(0.1)
            statuses.append((await client.post("/fast", content=call)).status_code)  # the slot is held: 429
            statuses.append((await client.post("/fast", content=ping)).status_code)  # not a call: not counted
            release.set()
        statuses.append((await client.post("/fast", content=call)).status_code)  # given back: admitted
    assert statuses == [429, 200, 200, 200]
    assert seen == [True, False, True]


def test_serve_takes_limits_as_flags() -> None:
    """``serve --caller-rate 1/minute`` over stdio: the caller's second call is the JSON-RPC error 429, never run."""
    calls: list[dict[str, Any]] = [{"name": "whoami", "arguments": {}}] * 2
    flags = ["--caller-rate", "1/minute", "--tool-concurrency", "2"]
    answers, _ = raw_session(["serve", f"{FIXTURE}:team", *flags], calls)
    ran, refused = sorted((answers[10], answers[11]), key=lambda answer: "error" in answer)  # both run at once
    assert ran["result"]["content"][0]["text"] == "nobody"
    assert refused["error"]["code"] == RATE_LIMITED and refused["error"]["data"]["retryAfterSeconds"] >= 1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--caller-rate", "1/sec"], "--caller-rate: rate '1/sec' is not a rate such as '10/second'"),
        (["--tool-concurrency", "0"], "--tool-concurrency: concurrency must be a whole number >= 1, not 0"),
        (["--limits-redis", "redis://127.0.0.1/0"], "--limits-redis needs a rate to count there"),
        (["--tool-rate", "1/second", "--limits-redis", "127.0.0.1"], "--limits-redis: must be a redis:// or rediss://"),
    ],
)
def test_a_serve_limit_flag_mistake_is_one_line(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each limit flag is checked before anything is loaded; a mistake is one line naming the flag."""
    assert main(["serve", "no_such_module:registry", *flags]) == 2
    assert capsys.readouterr().err.startswith(f"scopetool: {message}")


async def test_only_the_tools_served_are_counted_per_tool() -> None:
    """Made-up names fill no per-tool count: they meet their caller's limit only."""
    limiter = Limiter(Limits(tool=Limit(concurrency=1), caller=Limit(concurrency=3)), tools=["search"])
    made_up = [await limiter.enter(f"no-such-tool-{index}") for index in range(4)]
    assert [isinstance(found, Admitted) for found in made_up] == [True, True, True, False]
    assert str(made_up[3]).startswith("Concurrency limit exceeded: this caller's calls are limited to 3")


async def test_callers_whose_names_collide_are_counted_apart() -> None:
    """One caller at its concurrency limit leaves every look-alike free: another issuer, client, case or hyphen."""
    from scopetool import Principal, acting_as
    from scopetool.mcp.auth import STATIC_ISSUER
    from scopetool.mcp.limits import Limit, Limiter, LimitError, Limits

    limiter = Limiter(Limits(caller=Limit(concurrency=1)))
    holder = Principal("ci-bot", issuer=STATIC_ISSUER)
    others = [
        Principal("ci-bot", issuer="https://auth.example.com"),
        Principal("ci-bot", "ci-bot", issuer="https://auth.example.com"),
        Principal("ci-bot"),
        Principal("CI-bot", issuer=STATIC_ISSUER),
        Principal("ci\u2010bot", issuer=STATIC_ISSUER),
    ]
    with acting_as(holder):
        held = await limiter.enter("t")
        again = await limiter.enter("t")
    entered = []
    for other in others:
        with acting_as(other):
            entered.append(await limiter.enter("t"))
    assert not isinstance(held, LimitError) and isinstance(again, LimitError)
    assert not any(isinstance(found, LimitError) for found in entered)
