"""The MCP client against the reference "everything" server from npm, over stdio (protocol 2025-11-25).

One server runs for the module, under the recorder (`recorder.py`), so a test can read exactly what
the client sent it: arguments the contract refuses must never appear there.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from client_support import Served, recorded, served, tool_calls
from third_party import everything_server

from scopetool import (
    Admission,
    Failure,
    InvalidInvocationError,
    MediaBlock,
    Progress,
    Request,
    TextBlock,
    classify_failure,
    classify_input_rejection,
    progress_reporter,
)
from scopetool.mcp.client import EXPIRED, UNAVAILABLE, remote_definition
from scopetool.mcp.pins import PinFile, fingerprint


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    """An event loop in a thread for the module's connections."""
    with start_blocking_portal() as portal:
        yield portal


@pytest.fixture(scope="module")
def everything(portal: BlockingPortal, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The everything server, recorded, its tools pinned in a fresh lock file."""
    folder = tmp_path_factory.mktemp("everything")
    log, lock = folder / "sent.jsonl", folder / "mcp.lock.json"
    with served(portal, recorded(log, everything_server()), name="everything", log=log, lock=lock) as server:
        yield server


def test_lists_every_tool_as_a_scopetool_tool(everything: Served) -> None:
    """Every listed tool is handed out, with the server's schema, and no effect from an untrusted server."""
    client = everything.client
    names = [tool.definition().name for tool in client.tools]
    assert {"echo", "get-sum", "get-structured-content", "trigger-long-running-operation"} <= set(names)
    assert "trigger-elicitation-request" in names  # listed only to clients that can answer elicitations
    assert names == list(client.definitions)  # the server's order, nothing refused
    assert dict(client.refused) == {}
    assert client.protocol_version == "2025-11-25"
    echo = everything.binding("echo").definition()
    listed = client.definitions["echo"]
    assert echo.description == listed["description"]
    assert echo.input_schema == {**listed["inputSchema"], "additionalProperties": False}
    assert listed["annotations"]["readOnlyHint"] is True
    assert all(tool.definition().effect is None for tool in client.tools)


def test_first_contact_pins_every_tool(everything: Served) -> None:
    """The first listing is recorded in the lock file: each tool's definition and its digest."""
    assert everything.lock is not None
    pins = PinFile(everything.lock)
    assert pins.servers() == ("everything",)
    pinned = pins.pinned("everything")
    assert pinned == dict(everything.client.definitions)
    document = json.loads(everything.lock.read_text())
    entry = document["servers"]["everything"]["tools"]["echo"]
    assert entry["sha256"] == fingerprint(entry["definition"])
    assert everything.lock.read_text() == json.dumps(document, indent=2, sort_keys=True) + "\n"


def test_calls_map_content_to_output(everything: Served) -> None:
    """Text, numbers, an image, resource links and an embedded resource come back as scopetool blocks."""
    assert everything.call("echo", '{"message": "hi"}').output.text() == "Echo: hi"
    assert "3" in (everything.call("get-sum", '{"a": 1, "b": 2}').output.text() or "")
    image = everything.call("get-tiny-image").output.content
    media = [block for block in image if isinstance(block, MediaBlock)]
    assert media and media[0].mime_type == "image/png" and media[0].data and media[0].data.startswith(b"\x89PNG")
    links = everything.call("get-resource-links", '{"count": 2}').output.content
    uris = [block.uri for block in links if isinstance(block, MediaBlock)]
    assert len(uris) == 2 and all(uri and "://" in uri for uri in uris)
    embedded = everything.call("get-resource-reference", '{"resourceType": "Text", "resourceId": 2}').output.content
    assert any(isinstance(block, TextBlock) and "Resource 2" in block.text for block in embedded)


def test_structured_content_is_checked_details(everything: Served) -> None:
    """``structuredContent`` is the output's details, and satisfies the tool's output schema."""
    binding = everything.binding("get-structured-content")
    assert binding.definition().output_schema is not None
    result = everything.call("get-structured-content", '{"location": "Chicago"}')
    details = result.output.details_value()
    assert set(details) == {"temperature", "conditions", "humidity"}
    binding.contract.validate_result(result)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"message": 5}', "string"),
        ('{"message": "hi", "extra": 1}', "extra"),
        ('{"message": "a", "message": "b"}', "same member name twice"),
        ('{"message": "\\ud800"}', "surrogate"),
        ("{}", "message"),
    ],
)
def test_bad_arguments_never_leave(everything: Served, arguments: str, problem: str) -> None:
    """Arguments the server's own schema refuses (or I-JSON does) are rejected, and nothing is sent."""
    assert everything.log is not None
    before = len(tool_calls(everything.log))
    binding = everything.binding("echo")
    with pytest.raises(InvalidInvocationError) as caught:
        binding.contract.prepare(Request("echo", arguments))
    rejection = classify_input_rejection(caught.value)
    assert rejection is not None and problem in rejection.message.lower()
    everything.call("echo", '{"message": "after"}')  # the connection still works, and is recorded
    calls = tool_calls(everything.log)
    assert len(calls) == before + 1 and calls[-1]["params"]["arguments"] == {"message": "after"}


def test_oversize_arguments_never_leave(everything: Served) -> None:
    """An argument set over the size cap is refused before it is parsed or sent."""
    assert everything.log is not None
    before = len(tool_calls(everything.log))
    with pytest.raises(InvalidInvocationError):
        everything.binding("echo").contract.prepare(Request("echo", '{"message": "' + "x" * (1 << 21) + '"}'))
    assert len(tool_calls(everything.log)) == before


def test_is_error_is_a_failure_with_the_tools_text(everything: Served) -> None:
    """An ``isError`` result is a Failure whose public output is the remote tool's own error text."""
    with pytest.raises(Failure) as caught:
        everything.call("get-resource-reference", '{"resourceType": "Text", "resourceId": 1.5}')
    failure = classify_failure(caught.value)
    assert failure is not None
    assert "Invalid resourceId" in (failure.output.text() or "")


def test_progress_reaches_report_progress(everything: Served) -> None:
    """The server's progress notifications arrive through scopetool's progress reporter."""
    seen: list[Progress] = []
    binding = everything.binding("trigger-long-running-operation")
    invocation = binding.contract.prepare(Request(binding.name, '{"duration": 0.3, "steps": 3}'))

    async def run() -> str | None:
        with progress_reporter(seen.append):
            return (await binding.call(invocation)).output.text()

    text = everything.portal.call(run)
    assert "completed" in (text or "").lower()
    assert [report.completed for report in seen] == [1, 2, 3]
    assert all(report.total == 3 for report in seen)


def test_elicitation_is_an_input_request_and_the_answer_goes_back(everything: Served) -> None:
    """The server's elicitation is an InputRequest; the continuation's answer is the elicitation's response."""
    binding = everything.binding("trigger-elicitation-request")
    first = everything.run(binding, binding.contract.prepare(Request(binding.name, "{}")))
    request = first.input_request
    assert request is not None
    assert request.prompt == "Please provide inputs for the following fields:"
    accept = request.response_schema["oneOf"][0]
    assert accept["properties"]["content"]["properties"]["name"]["type"] == "string"
    continuation = request.continuation({"action": "accept", "content": {"name": "Ada", "check": True}})
    invocation = binding.contract.prepare(Request(binding.name, "{}"), Admission(continuation=continuation))
    done = everything.run(binding, invocation)
    assert done.input_request is None
    assert "Ada" in (done.output.text() or "")
    # The same continuation again: the in-call elicitation it answered is over.
    with pytest.raises(Failure) as caught:
        everything.run(
            binding, binding.contract.prepare(Request(binding.name, "{}"), Admission(continuation=continuation))
        )
    assert caught.value.output.text() == EXPIRED.format(name=binding.name)


def test_an_answer_breaking_the_form_is_refused(everything: Served) -> None:
    """An answer outside the server's requested schema is refused before it is sent."""
    binding = everything.binding("trigger-elicitation-request")
    request = everything.run(binding, binding.contract.prepare(Request(binding.name, "{}"))).input_request
    assert request is not None
    from scopetool import InvalidInputRequestError

    with pytest.raises(InvalidInputRequestError):
        request.continuation({"action": "accept", "content": {"integer": "many"}})
    declined = request.continuation({"action": "decline"})
    invocation = binding.contract.prepare(Request(binding.name, "{}"), Admission(continuation=declined))
    assert "decline" in (everything.run(binding, invocation).output.text() or "").lower()


def test_trusted_annotations_become_effects(everything: Served) -> None:
    """Only for a trusted server: readOnlyHint is SAFE, idempotentHint IDEMPOTENT, nothing else a promise."""
    from scopetool import Effect

    definitions = everything.client.definitions
    assert remote_definition(definitions["echo"], trusted=True).effect is Effect.SAFE
    assert remote_definition(definitions["echo"], trusted=False).effect is None
    assert remote_definition(definitions["trigger-elicitation-request"], trusted=True).effect is None


def test_a_server_that_dies_mid_call(portal: BlockingPortal, tmp_path: Path) -> None:
    """A server killed during a call: the call is a Failure with a fixed text, and this process carries on."""
    log = tmp_path / "sent.jsonl"
    with served(portal, recorded(log, everything_server()), name="doomed") as server:
        binding = server.binding("trigger-long-running-operation")
        invocation = binding.contract.prepare(Request(binding.name, '{"duration": 30, "steps": 30}'))
        future = portal.start_task_soon(binding.call, invocation)
        while not tool_calls(log):
            time.sleep(0.05)
        os.kill(int(Path(f"{log}.pid").read_text()), signal.SIGKILL)
        with pytest.raises(Failure) as caught:
            future.result(timeout=30)
        assert caught.value.output.text() == UNAVAILABLE.format(name=binding.name)
        with pytest.raises(Failure) as again:
            server.call("echo", '{"message": "anyone?"}')
        assert again.value.output.text() == UNAVAILABLE.format(name="echo")


PROVIDERS = ("openai_chat", "openai_responses", "anthropic", "bedrock", "gemini", "mcp", "mistral", "ollama")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_provider_exports_remote_tools(everything: Served, provider: str) -> None:
    """Each provider adapter exports the remote tools, with the remote schema's properties."""
    import importlib

    export = importlib.import_module(f"scopetool.providers.{provider}").export_tools(everything.registry)
    text = json.dumps(export.tools)
    names = [tool.definition().name for tool in everything.client.tools]
    assert len(export.tools) == len(names)
    assert all(f'"{name}"' in text for name in names)
    assert '"Message to echo"' in text  # echo's own schema, as the server wrote it


def test_the_driver_runs_remote_tools_and_their_elicitations(everything: Served) -> None:
    """The Driver (memory backend) runs a remote call, waits on a remote elicitation, resumes it once answered."""
    from scopetool.driver import CallStatus, Driver
    from scopetool.providers import anthropic

    driver = Driver(everything.registry)
    message = {
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"message": "hello"}},
            {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {"message": 5}},
            {"type": "tool_use", "id": "toolu_3", "name": "trigger-elicitation-request", "input": {}},
        ]
    }
    calls = anthropic.parse_tool_calls(message)
    turn = everything.portal.call(driver.run, "run-1", calls)
    assert [result.status for result in turn.results] == [CallStatus.DONE, CallStatus.DONE, CallStatus.WAITING]
    (waiting,) = turn.waiting
    assert waiting.request is not None and waiting.request.prompt.startswith("Please provide inputs")
    answered = everything.portal.call(driver.answer, waiting.key, {"action": "accept", "content": {"name": "Grace"}})
    assert answered is True
    again = everything.portal.call(driver.run, "run-1", calls)
    assert again.complete
    blocks = anthropic.results_message(again.outcomes())["content"]
    assert blocks[0]["content"][0]["text"] == "Echo: hello"
    assert blocks[1].get("is_error") is True  # refused by the contract: never sent
    assert "Grace" in json.dumps(blocks[2]["content"])


def test_langchain_runs_a_remote_tool(everything: Served) -> None:
    """A remote tool inside LangChain: the contract admits its arguments, the server answers."""
    from scopetool.integrations.langchain import langchain_tools

    tools = {tool.name: tool for tool in langchain_tools(everything.registry)}
    echo = tools["echo"]

    async def invoke(arguments: dict[str, object]) -> tuple[str, object]:
        call = {"name": "echo", "args": arguments, "id": "call_1", "type": "tool_call"}
        message = await echo.ainvoke(call)
        return message.status, message.content

    assert everything.portal.call(invoke, {"message": "from langchain"}) == ("success", "Echo: from langchain")
    status, content = everything.portal.call(invoke, {"message": ["not", "a", "string"]})
    assert status == "error" and "$.message" in str(content)


def test_an_embedded_blob_is_inline_media(everything: Served) -> None:
    """An embedded blob resource is an inline media block of its type."""
    content = everything.call("get-resource-reference", '{"resourceType": "Blob", "resourceId": 2}').output.content
    blobs = [block for block in content if isinstance(block, MediaBlock) and block.data is not None]
    assert blobs and blobs[0].mime_type == "text/plain" and (blobs[0].data or b"").startswith(b"Resource 2:")


def test_elicitations_that_cannot_be_placed_are_declined(everything: Served) -> None:
    """A URL-mode elicitation, and one asked while two calls are in flight, are declined, not misrouted."""
    url = everything.call("trigger-url-elicitation", '{"url": "https://example.invalid/consent"}')
    assert "decline" in (url.output.text() or "").lower()
    binding = everything.binding("trigger-elicitation-request")
    first = everything.portal.start_task_soon(binding.call, binding.contract.prepare(Request(binding.name, "{}")))
    second = everything.portal.start_task_soon(binding.call, binding.contract.prepare(Request(binding.name, "{}")))
    results = [first.result(timeout=30), second.result(timeout=30)]
    asked = [result for result in results if result.input_request is not None]
    answered = [result for result in results if result.input_request is None]
    assert len(asked) <= 1 and answered  # at most one was routed; any other was declined
    assert all("decline" in (result.output.text() or "").lower() for result in answered)
    for result in asked:
        assert result.input_request is not None
        continuation = result.input_request.continuation({"action": "cancel"})
        resumed = binding.contract.prepare(Request(binding.name, "{}"), Admission(continuation=continuation))
        assert "cancel" in (everything.run(binding, resumed).output.text() or "").lower()


def test_a_closed_client_ends_its_pending_calls(portal: BlockingPortal, tmp_path: Path) -> None:
    """Leaving the connection with an elicitation unanswered: resuming it, or calling again, is a Failure."""
    with served(portal, recorded(tmp_path / "sent.jsonl", everything_server()), name="brief") as server:
        client = server.client
        tool = client.tools[0]
        assert (tool.server, repr(tool)) == ("brief", f"RemoteTool(server='brief', name={tool.definition().name!r})")
        assert repr(client) == f"MCPClient(name='brief', tools={len(client.tools)})"
        binding = server.binding("trigger-elicitation-request")
        request = server.run(binding, binding.contract.prepare(Request(binding.name, "{}"))).input_request
        assert request is not None
    continuation = request.continuation({"action": "decline"})
    with pytest.raises(Failure) as expired:
        server.run(binding, binding.contract.prepare(Request(binding.name, "{}"), Admission(continuation=continuation)))
    assert expired.value.output.text() == EXPIRED.format(name=binding.name)
    with pytest.raises(Failure) as closed:
        server.call("echo", '{"message": "late"}')
    assert closed.value.output.text() == UNAVAILABLE.format(name="echo")
    assert client.protocol_version is None
    with pytest.raises(RuntimeError, match="closed"):
        client.session  # noqa: B018 - the property raises


def test_connect_refuses_what_it_cannot_start(portal: BlockingPortal, tmp_path: Path) -> None:
    """A bad spec or name is a ValueError; a command that cannot start is a ConnectError naming the server."""
    from scopetool.mcp.client import ConnectError, StdioServer, connect

    async def attempt(spec: object, name: str) -> None:
        async with connect(spec, name=name):  # type: ignore[arg-type]
            pass  # pragma: no cover - never connected

    with pytest.raises(ValueError, match="StdioServer or an HttpServer"):
        portal.call(attempt, {"command": "x"}, "x")
    with pytest.raises(ValueError, match="non-empty"):
        portal.call(attempt, StdioServer("x"), "")
    with pytest.raises(ConnectError, match="cannot connect to MCP server 'ghost'"):
        portal.call(attempt, StdioServer(str(tmp_path / "no-such-server")), "ghost")


def test_a_remote_tool_runs_only_its_own_invocations(everything: Served) -> None:
    """An invocation admitted by another tool's contract is refused by the remote tool itself: nothing is sent."""
    assert everything.log is not None
    before = len(tool_calls(everything.log))
    echo, add = everything.binding("echo"), everything.binding("get-sum")
    invocation = echo.contract.prepare(Request("echo", '{"message": "hi"}'))
    with pytest.raises(InvalidInvocationError, match="does not belong to remote tool 'get-sum'"):
        everything.portal.call(add.tool.call, invocation)
    assert len(tool_calls(everything.log)) == before
    assert add.tool.listed == everything.client.definitions["get-sum"]  # type: ignore[attr-defined]
