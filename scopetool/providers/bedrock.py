"""AWS Bedrock Converse: ``toolConfig={"tools": [{"toolSpec": {...}}]}``.

The model calls tools with ``toolUse`` content blocks; each answer is a ``toolResult`` block (with
``status``) in the next user message. Strict mode (``toolSpec.strict``) is accepted only by models
on Bedrock's structured-output allowlist; this module applies Claude's strict rules and limits
(Claude is the strict-capable family on Bedrock), so use
``strict=True`` with Claude models.

Example:
    ```python
    from scopetool import Registry, tool
    from scopetool.providers import bedrock

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    export = bedrock.export_tools(Registry(add))
    config = bedrock.tool_configuration(export)
    print(config["tools"][0]["toolSpec"]["name"], sorted(config["tools"][0]["toolSpec"]["inputSchema"]["json"]))
    #> add ['additionalProperties', 'properties', 'required', 'type']
    block = {"toolUse": {"toolUseId": "tooluse_1", "name": "add", "input": {"a": 2, "b": 3}}}
    calls = bedrock.parse_tool_calls({"output": {"message": {"role": "assistant", "content": [block]}}})
    print(calls[0].id, calls[0].request.arguments)
    #> tooluse_1 {"a":2,"b":3}
    ```
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from .._output import MediaBlock, Output, Result, TextBlock
from ._claude import ClaudeDialect, claude_calls, claude_export
from ._common import Export, ProviderError, ToolCall, Tools, check_answers, outcome_output, run_call

__all__ = [
    "NAME_PATTERN",
    "PROVIDER",
    "export_tools",
    "parse_tool_calls",
    "result_message",
    "results_message",
    "run_call",
    "tool_configuration",
]

PROVIDER: Final = "bedrock"
"""The name this adapter gives its provider in exports and reports."""
NAME_PATTERN: Final = r"[a-zA-Z0-9_-]{1,64}"
"""The tool names this provider accepts (checked at export)."""
NAME_LIMIT: Final = 64
"""The longest tool name this provider accepts."""
IMAGE_FORMATS: Final = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
"""Image media types a ``toolResult`` can carry (inline bytes, or an ``s3://`` URI), and their formats."""
DOCUMENT_FORMATS: Final = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
"""Document media types a ``toolResult`` can carry (inline bytes, or an ``s3://`` URI), and their formats."""

_DIALECT: Final = ClaudeDialect(
    provider=PROVIDER,
    name_pattern=NAME_PATTERN,
    name_limit=NAME_LIMIT,
    schema_field="inputSchema",
    schema_wrapper="json",
    entry_wrapper="toolSpec",
    refuses_root_union=False,
    block="toolUse",
    id_field="toolUseId",
    id_word="a toolUseId",
    converse=True,
    text_calls_nothing=False,
)


def export_tools(tools: Tools, *, strict: bool = False) -> Export:
    """The tools as Converse tool specifications (`Export.tools` is the ``toolConfig.tools`` list).

    Without ``strict`` each schema is sent as the contract has it. With ``strict=True`` (for Claude
    models) the Anthropic strict rules apply, as in `scopetool.providers.anthropic.export_tools`: a
    tool that cannot be strict, or that would exceed Claude's per-request limits, is sent without
    ``strict`` and the report says why. An empty description is left out (Bedrock refuses ``""``).
    A root union is sent as is, with a note: Claude refuses one.

    Raises:
        ProviderError: a name breaks Bedrock's rule (``[a-zA-Z0-9_-]+``, 1 to 64 characters).
    """
    return claude_export(tools, _DIALECT, strict)


def tool_configuration(export: Export, *, choice: str | None = None) -> dict[str, Any]:
    """The Converse ``toolConfig`` for an export: ``{"tools": [...]}``, with ``toolChoice`` if asked.

    Args:
        export: A Bedrock export (from `export_tools`).
        choice: None (the model decides; Bedrock's default), ``"auto"``, ``"any"`` (some tool must be
            called) or the name of the one tool the model must call.

    Raises:
        ProviderError: the export is not a Bedrock one, has no tools, or `choice` names no tool of it.
    """
    if not isinstance(export, Export) or export.provider != PROVIDER:
        raise ProviderError(f"tool_configuration needs a {PROVIDER} export")
    tools = export.tools
    if not tools:
        raise ProviderError("a Bedrock toolConfig needs at least one tool")
    config: dict[str, Any] = {"tools": tools}
    if choice in ("auto", "any"):
        config["toolChoice"] = {choice: {}}
    elif choice is not None:
        if choice not in {tool["toolSpec"]["name"] for tool in tools}:
            raise ProviderError(f"toolChoice names {choice[:80]!r}, which is not in the export")
        config["toolChoice"] = {"tool": {"name": choice}}
    return config


def parse_tool_calls(payload: object, export: Export | None = None) -> list[ToolCall]:
    """The ``toolUse`` blocks of a Converse response, an assistant message or its content, as `ToolCall`s.

    boto3's ``converse`` returns plain dicts (its ``output.message``, that message's ``content`` list):
    each of them is read as it is, as is the same JSON from elsewhere. Other blocks (text, reasoning,
    server tool uses) are skipped. The ``input`` arrives already parsed (botocore decodes the response
    body), so it is encoded as JSON text (see `object_arguments` for what the parse already lost).
    `export` is accepted for symmetry with the other providers: strict mode here keeps optional
    fields optional, so there are no nulls to repair.

    Raises:
        ProviderError: the export is not a Bedrock one, the payload is not an assistant message, or a
            ``toolUse`` block has no ``toolUseId``, no name, or an ``input`` that is not an object.
    """
    return claude_calls(payload, export, _DIALECT)


def result_message(call: ToolCall, outcome: Result | BaseException, *, status: bool = True) -> dict[str, Any]:
    """The ``{"toolResult": ...}`` content block answering `call` (put it in a user message).

    Text becomes ``{"text": ...}`` blocks; PNG/JPEG/GIF/WebP images and documents (PDF, CSV, Word,
    Excel, HTML, text, Markdown) become ``image`` and ``document`` blocks from inline bytes (raw
    bytes, as boto3 takes them) or an ``s3://`` URI; other media are named in a text block. With no
    content, object `Output.details` are sent as ``{"json": ...}`` and any other JSON value as its
    text. ``status`` is ``"error"`` for errors and ``"success"`` otherwise; pass ``status=False``
    for model families that refuse the field (only Claude and Nova take it): the error is then
    only in the text.
    """
    if call.id is None:
        raise ProviderError("a Bedrock toolResult needs the call's toolUseId")
    output, error = outcome_output(call.name, outcome)
    result: dict[str, Any] = {"toolUseId": call.id, "content": _content(output)}
    if status:
        result["status"] = "error" if error else "success"
    return {"toolResult": result}


def results_message(pairs: Iterable[tuple[ToolCall, Result | BaseException]], *, status: bool = True) -> dict[str, Any]:
    """The user message answering an assistant turn: one ``toolResult`` block per call, in order.

    Send it with the same ``toolConfig`` (`tool_configuration`): Converse refuses ``toolUse`` and
    ``toolResult`` blocks in a request without one.

    Raises:
        ProviderError: no results, or two results for the same call.
    """
    blocks = [result_message(call, outcome, status=status) for call, outcome in pairs]
    check_answers([b["toolResult"]["toolUseId"] for b in blocks], "toolUseId")
    return {"role": "user", "content": blocks}


def _content(output: Output) -> list[dict[str, Any]]:
    if not output.content:
        if output.details is None:
            return []
        value = json.loads(output.details)
        return [{"json": value}] if isinstance(value, dict) else [{"text": output.details.decode("utf-8")}]
    blocks: list[dict[str, Any]] = []
    documents = 0
    for item in output.content:
        if isinstance(item, TextBlock):
            blocks.append({"text": item.text})
            continue
        block = _media(item, documents + 1)
        documents += "document" in block
        blocks.append(block)
    return blocks


def _media(block: MediaBlock, number: int) -> dict[str, Any]:
    mime = block.mime_type.split(";", 1)[0].strip().lower()
    source: dict[str, Any] | None = None
    if block.data is not None:
        source = {"bytes": block.data}
    elif block.uri is not None and block.uri.lower().startswith("s3://"):
        source = {"s3Location": {"uri": block.uri}}
    if source is not None and mime in IMAGE_FORMATS:
        return {"image": {"format": IMAGE_FORMATS[mime], "source": source}}
    if source is not None and mime in DOCUMENT_FORMATS:
        return {"document": {"format": DOCUMENT_FORMATS[mime], "name": f"document-{number}", "source": source}}
    return {
        "text": f"[{mime} media not shown: Bedrock tool results carry PNG, JPEG, GIF and WebP images and "
        "PDF, CSV, Word, Excel, HTML, text and Markdown documents, as bytes or an s3:// URI]"
    }
