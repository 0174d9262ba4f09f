"""MCP tasks through the gateway (``gateway.tasks``, ``scopetool proxy --tasks``), the "everything" server upstream.

Raw 2026-07-28 exchanges checked against the extension's JSON Schema, with `test_tasks`' helpers: over
stdio through ``scopetool proxy`` as a subprocess, and over Streamable HTTP in process (each request's
principal set by the test's own ASGI layer, as an authenticating layer would).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from test_tasks import Stdio, conforms, http_client, poll_http, post, refused_to, text_of
from third_party import everything_server

from scopetool.cli._common import UsageError
from scopetool.cli._main import build_parser
from scopetool.cli._proxy import _tasks  # pyright: ignore[reportPrivateUsage]
from scopetool.driver.dbos import DbosBackend, _sqlite_problem  # pyright: ignore[reportPrivateUsage]
from scopetool.mcp._gateway_tasks import GatewayTasks, task_options
from scopetool.mcp.gateway import (
    ConfigError,
    _config_error_unwrapped,  # pyright: ignore[reportPrivateUsage]
    load_config,
    open_gateway,
    parse_config,
    serve_gateway,
)
from scopetool.mcp.tasks import TaskOptions

FIXTURE = Path(__file__).with_name("gateway_fixture.py")
LONG = "trigger-long-running-operation"
DONE = "Long running operation completed. Duration: {seconds} seconds, Steps: 2."


def write_config(folder: Path, tasks: object = True) -> Path:
    """A gateway config: the everything server twice, ``trusted`` (its annotations believed) and not."""
    command = everything_server()
    servers = {
        "trusted": {"command": command[0], "trusted": True},
        "plain": {"command": command[0]},
    }
    path = folder / "gateway.json"
    path.write_text(json.dumps({"mcpServers": servers, "gateway": {"name": "relay", "tasks": tasks}}))
    return path


def test_a_long_call_through_the_proxy_becomes_a_gateway_task_that_completes(tmp_path: Path) -> None:
    """``proxy``: a trusted SAFE tool's long call is a task polled to its result; an untrusted one's is inline."""
    config = write_config(tmp_path, tasks={"ttl": 120})
    proxy = Stdio([sys.executable, "-m", "scopetool", "proxy", str(config)], timeout=60)
    try:
        discovered = proxy.result("server/discover", {})
        assert "io.modelcontextprotocol/tasks" in discovered["capabilities"]["extensions"]
        arguments = {"duration": 1.5, "steps": 2}
        created = conforms(
            "CreateTaskResult", proxy.result("tools/call", {"name": f"trusted__{LONG}", "arguments": arguments})
        )
        assert created["status"] == "working" and created["ttlMs"] == 120_000
        done = proxy.poll(created["taskId"], until="working", bound=60)
        assert done["status"] == "completed" and text_of(done["result"]) == DONE.format(seconds=1.5)
        inline = proxy.result("tools/call", {"name": f"plain__{LONG}", "arguments": arguments})
        assert inline["resultType"] == "complete" and text_of(inline) == DONE.format(seconds=1.5)
    finally:
        proxy.close()


async def test_a_gateway_task_read_by_another_principal_is_refused(tmp_path: Path) -> None:
    """Over HTTP: alice's gateway task is hers; bob's get, update and cancel are -32602, and it completes for alice."""
    async with (
        open_gateway(load_config(write_config(tmp_path)), errlog=io.StringIO()) as gateway,
        http_client(TaskOptions(answer_within=0.1), tools=gateway.registry) as client,
    ):
        arguments = {"duration": 1, "steps": 2}
        created = await post(client, "alice", "tools/call", {"name": f"trusted__{LONG}", "arguments": arguments})
        task_id = conforms("CreateTaskResult", created["result"])["taskId"]
        await refused_to(client, "bob", task_id)
        got = await poll_http(client, task_id, "working", polls=200)
        assert got["status"] == "completed" and text_of(got["result"]) == DONE.format(seconds=1)


def test_gateway_tasks_config_is_checked(tmp_path: Path) -> None:
    """``gateway.tasks``: true, false or {store, ttl, maxRunning}; the store is from the config dir; mistakes named."""
    servers = {"mcpServers": {"s": {"command": "x"}}}
    assert parse_config(servers).tasks is None
    assert parse_config({**servers, "gateway": {"tasks": True}}).tasks == GatewayTasks()
    given = parse_config({**servers, "gateway": {"tasks": {"store": "t.sqlite", "ttl": 5}}}, base=tmp_path)
    assert given.tasks == GatewayTasks(tmp_path / "t.sqlite", 5.0)
    capped = parse_config({**servers, "gateway": {"tasks": {"maxRunning": 3}}})
    assert capped.tasks is not None and capped.tasks.max_running == 3
    for value, problem in [
        ("yes", "must be true, false or an object, not str"),
        ({"ttl": 0}, "ttl: must be a positive number of seconds, not 0"),
        ({"store": 3}, "store: must be the path of a SQLite file"),
        ({"stor": "x"}, "unknown key 'stor' (known: maxRunning, store, ttl)"),
        ({"maxRunning": 0}, "maxRunning: must be a whole number >= 1, not 0"),
        ({"maxRunning": True}, "maxRunning: must be a whole number >= 1, not True"),
    ]:
        with pytest.raises(ConfigError) as error:
            parse_config({**servers, "gateway": {"tasks": value}})
        assert str(error.value) == f"config: gateway.tasks: {problem}"


def test_proxy_task_flags_set_gateway_tasks(tmp_path: Path) -> None:
    """``--tasks`` turns tasks on, ``--task-store`` and ``--task-ttl`` set them, and need tasks on."""
    parser = build_parser()

    def flags(*given: str) -> Any:
        return parser.parse_args(["proxy", "gateway.json", *given])

    assert _tasks(flags(), None, GatewayTasks) is None
    assert _tasks(flags("--tasks"), None, GatewayTasks) == GatewayTasks()
    store = tmp_path / "t.sqlite"
    both = _tasks(flags("--task-store", f"sqlite:///{store}", "--task-ttl", "9"), GatewayTasks(), GatewayTasks)
    assert both == GatewayTasks(store, 9.0)
    for given, problem in [
        (("--task-ttl", "5"), "--task-ttl applies to --tasks (or the config's gateway.tasks) only"),
        (("--task-store", "x"), "--task-store applies to --tasks (or the config's gateway.tasks) only"),
        (("--tasks", "--task-ttl", "-1"), "--task-ttl must be a positive number of seconds, not -1.0"),
        (
            ("--tasks", "--task-store", "postgresql://h/db"),
            "--task-store postgresql://h/db: give the path of a SQLite file",
        ),
    ]:
        with pytest.raises(UsageError) as error:
            _tasks(flags(*given), None, GatewayTasks)
        assert str(error.value) == problem


async def test_a_gateway_task_store_that_cannot_be_opened_is_a_config_error(tmp_path: Path) -> None:
    """A store that is a folder: serving fails before it starts, with one line naming gateway.tasks."""
    config = parse_config(
        {"scopetool": {"tools": [f"{FIXTURE}:registry"]}, "gateway": {"tasks": {"store": "."}}},
        base=tmp_path,
        source="gateway.json",
    )
    with pytest.raises(ConfigError, match=r"^gateway\.json: gateway\.tasks: store: cannot open '.*': .+$"):
        await serve_gateway(config, http=("127.0.0.1", 0), errlog=io.StringIO())


def test_task_options_without_a_store_are_in_memory() -> None:
    """No settings: no tasks; settings without a store: a TaskOptions with their TTL and the memory backend."""
    from scopetool import Registry

    with task_options(None, Registry()) as none:
        assert none is None
    with task_options(GatewayTasks(ttl=7), Registry()) as options:
        assert options == TaskOptions(ttl=7)


def test_task_options_with_a_store_run_on_dbos(tmp_path: Path) -> None:
    """A store: the tasks' calls run on a DbosBackend over that SQLite file, closed on exit."""
    from scopetool import Registry

    store = tmp_path / "t.sqlite"
    problem = _sqlite_problem(f"sqlite:///{store}")
    if problem is not None:
        pytest.skip(problem)
    with task_options(GatewayTasks(store=store, ttl=5), Registry()) as options:
        assert options is not None and isinstance(options.backend, DbosBackend)
        assert (options.store, options.ttl) == (store.resolve(), 5)
    assert store.exists()


async def test_only_a_config_error_is_taken_out_of_its_group() -> None:
    """A ConfigError raised inside the servers' task group comes out alone; any other group is left as it is."""
    with pytest.raises(ConfigError, match=r"^bad$"):
        async with _config_error_unwrapped():
            raise ExceptionGroup("servers", [ConfigError("bad")])
    with pytest.raises(ExceptionGroup):
        async with _config_error_unwrapped():
            raise ExceptionGroup("servers", [RuntimeError("other")])
