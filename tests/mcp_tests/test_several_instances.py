"""Several gateway instances behind a load balancer: the protocol is stateless, the limits shared through Redis.

Two ``scopetool proxy --http`` processes behind nginx, which passes each request to the next in turn
(round robin), and one Redis; all on loopback, started here and stopped after. Both instances take the
same static tokens (``gateway.auth``). One client's calls land on both instances (each instance's audit
log shows them, with the caller its token names), a request without a token is refused by both, and a
tool's rate limit holds across both: the calls over it are answered ``429`` whichever instance they
reach. A 2026-07-28 client is stateless by the protocol; a 2025 client is too with the gateway's
``"stateless": true``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from loopback_servers import free_port, nginx_round_robin, redis, stop, wait_for_port
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "gateway_fixture.py"
MODERN = "2026-07-28"
LIMIT = 6
"""Calls of each tool per minute, across the instances."""
TOKEN = "alice-token-0123456789abcdef"
"""Alice's static token, which both instances take."""
BEARER = {"authorization": f"Bearer {TOKEN}"}


@dataclass
class Deployment:
    """Two instances behind nginx: the URL clients use, and each instance's audit log."""

    url: str
    audits: tuple[Path, Path]


def audit_calls(path: Path, tool: str) -> list[dict[str, Any]]:
    """The call lines of `tool` in one instance's audit log."""
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [entry for entry in entries if entry["event"] == "call" and entry["tool"] == tool]


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """Redis, two gateway instances sharing it for their limits, and nginx in front of them, round robin."""
    tmp_path = tmp_path_factory.mktemp("instances")
    with redis(tmp_path) as store:
        config = tmp_path / "gateway.json"
        (tmp_path / "team.tokens").write_text(f"alice {TOKEN}\n", encoding="utf-8")
        gateway = {
            "limits": {"redis": store, "tool": {"rate": f"{LIMIT}/minute"}},
            "stateless": True,
            "auth": {"tokenFile": "team.tokens"},
        }
        config.write_text(json.dumps({"scopetool": {"tools": [f"{FIXTURE}:team"]}, "gateway": gateway}))
        ports = (free_port(), free_port())
        audits = (tmp_path / "audit-a.jsonl", tmp_path / "audit-b.jsonl")
        instances: list[subprocess.Popen[bytes]] = []
        try:
            for port, audit in zip(ports, audits, strict=True):
                command = [sys.executable, "-m", "scopetool", "proxy", str(config), "--audit", str(audit)]
                instances.append(
                    subprocess.Popen(
                        [*command, "--http", f"127.0.0.1:{port}"],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE,
                        env={**os.environ, "PYTHONPATH": str(HERE.parents[1])},
                    )
                )
            for port, instance in zip(ports, instances, strict=True):
                wait_for_port(port, instance, "scopetool proxy --http")
            with nginx_round_robin(tmp_path / "nginx", ports) as front:
                yield Deployment(f"{front}/mcp", audits)
        finally:
            for instance in instances:
                stop(instance)


@contextlib.asynccontextmanager
async def client(url: str, mode: str) -> AsyncGenerator[Client]:
    """The SDK client of `url`, sending alice's token."""
    async with (
        httpx2.AsyncClient(headers=BEARER) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as connected,
    ):
        yield connected


def post_call(url: str, request_id: int, headers: dict[str, str] = BEARER) -> httpx.Response:
    """One 2026-07-28 ``tools/call`` of ``read_notes`` as a raw POST (no session: any instance may answer it)."""
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params: dict[str, Any] = {"name": "read_notes", "arguments": {}, "_meta": meta}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "read_notes",
        **headers,
    }
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return httpx.post(url, json=body, headers=headers, timeout=30)


async def test_one_clients_calls_land_on_both_instances_and_one_limit_holds_across_them(
    deployment: Deployment,
) -> None:
    """The SDK client's calls reach both instances; past the shared limit every call is 429, on either instance."""
    unauthenticated = [post_call(deployment.url, 90 + index, headers={}) for index in range(2)]
    async with client(deployment.url, MODERN) as alice:
        listed = [tool.name for tool in (await alice.list_tools()).tools]
        results = [await alice.call_tool("read_notes", {}) for _ in range(LIMIT)]
    over = [post_call(deployment.url, 100 + index) for index in range(4)]
    assert [answer.status_code for answer in unauthenticated] == [401, 401]  # one from each instance
    assert sorted(listed) == ["delete_note", "read_notes", "whoami", "write_note"]
    assert [result.is_error for result in results] == [False] * LIMIT
    assert [answer.status_code for answer in over] == [429] * 4
    assert all(int(answer.headers["retry-after"]) >= 1 for answer in over)
    assert {answer.json()["error"]["code"] for answer in over} == {429}
    per_instance = [audit_calls(audit, "read_notes") for audit in deployment.audits]
    admitted = [sum(call["admitted"] for call in calls) for calls in per_instance]
    limited = [sum(call["reason"] == "limited" for call in calls) for calls in per_instance]
    assert all(count >= 1 for count in admitted), admitted  # the client's calls landed on both
    assert sum(admitted) == LIMIT  # one limit: counted in Redis, not once per instance (which would admit 2x)
    assert limited == [2, 2]  # round robin: the refused calls too reached both, and each refused its own
    assert {call["subject"] for calls in per_instance for call in calls} == {"alice"}  # the same auth on both


async def test_a_2025_client_is_served_across_instances_when_the_gateway_is_stateless(deployment: Deployment) -> None:
    """``"stateless": true``: a 2025 client's handshake, list and calls go to either instance, no session needed."""
    async with client(deployment.url, "legacy") as alice:
        assert alice.protocol_version == "2025-11-25"
        listed = [tool.name for tool in (await alice.list_tools()).tools]
        results = [await alice.call_tool("whoami", {}) for _ in range(4)]
    assert "whoami" in listed
    assert [result.is_error for result in results] == [False] * 4
    assert {result.content[0].text for result in results} == {"alice via None with []"}  # type: ignore[union-attr]
    assert [len(audit_calls(audit, "whoami")) for audit in deployment.audits] == [2, 2]
