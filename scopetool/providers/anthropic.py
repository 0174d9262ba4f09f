"""Anthropic Messages: ``tools=[{"name", "description", "input_schema", "strict"?}]``.

Claude calls tools with ``tool_use`` content blocks; each answer is a ``tool_result`` block (with
``is_error`` for errors) in the next user message, before any other content.

Example:
    ```python
    from scopetool import Registry, tool
    from scopetool.providers import anthropic

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    export = anthropic.export_tools(Registry(add), strict=True)
    print(export.tools[0]["strict"], export.tools[0]["input_schema"]["required"])
    #> True ['a', 'b']
    block = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}
    calls = anthropic.parse_tool_calls({"role": "assistant", "content": [block]})
    print(calls[0].id, calls[0].request.arguments)
    #> toolu_1 {"a":2,"b":3}
    ```
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from .._json import is_array
from .._output import MediaBlock, Output, Result, TextBlock
from ._claude import ClaudeDialect, claude_calls, claude_export
from ._common import (
    Export,
    ProviderError,
    ToolCall,
    Tools,
    check_answers,
    deferred_of,
    is_mapping,
    outcome_output,
    plain,
    run_call,
    with_native_search,
)

__all__ = [
    "NAME_PATTERN",
    "PROVIDER",
    "export_tools",
    "TOOL_SEARCH",
    "parse_tool_calls",
    "result_message",
    "results_message",
    "revealed_tools",
    "run_call",
]

PROVIDER: Final = "anthropic"
"""The name this adapter gives its provider in exports and reports."""
NAME_PATTERN: Final = r"[a-zA-Z0-9_-]{1,128}"
"""The tool names this provider accepts (checked at export)."""
NAME_LIMIT: Final = 128
"""The longest tool name this provider accepts."""
IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""Image media types a ``tool_result`` can carry (as base64 data, an http(s) URL or a file id)."""
DOCUMENT_TYPES: Final = frozenset({"application/pdf"})
"""Document media types a ``tool_result`` can carry (as base64 data, an http(s) URL or a file id)."""

TOOL_SEARCH: Final = {
    "bm25": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    "regex": {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
}
"""Anthropic's server-side tool search tools, by variant: the model searches in words (BM25) or with a regex."""

_DIALECT: Final = ClaudeDialect(
    provider=PROVIDER,
    name_pattern=NAME_PATTERN,
    name_limit=NAME_LIMIT,
    schema_field="input_schema",
    schema_wrapper=None,
    entry_wrapper=None,
    refuses_root_union=True,
    block="tool_use",
    id_field="id",
    id_word="an id",
    converse=False,
    text_calls_nothing=True,
)


def export_tools(tools: Tools, *, strict: bool = False, tool_search: Literal["bm25", "regex"] = "bm25") -> Export:
    """The tools as Anthropic Messages tool definitions.

    Deferred tools (a registry's `Registry.deferred_names`, or bindings marked ``defer_loading=True``)
    are sent with ``"defer_loading": true``, followed by Anthropic's own tool search tool
    (`TOOL_SEARCH`: ``"bm25"``, the model searches in words, or ``"regex"``): the model sees them only
    once its search finds them (`revealed_tools` reads which). A `Catalog` is sent as it shows itself:
    its shown and revealed tools and the local ``search_tools``.

    Without ``strict`` each schema is sent exactly as the contract has it. With ``strict=True`` each
    schema that fits Claude's strict subset is sent with ``strict: true``: objects closed already,
    ``required`` as written, ``oneOf`` as ``anyOf``, unsupported keywords moved into descriptions
    (see `ToolReport.changes`). A tool that cannot be strict (open objects: dicts, or objects
    without ``additionalProperties``, which JSON Schema leaves open; recursion, ``Any``, tuples
    of different types), or that would take the request over Claude's limits (20 strict tools, 24
    optional and 16 union parameters across them, first come first served in export order), is
    sent as is without ``strict``, and `ToolReport.not_strict` says why.

    Raises:
        ProviderError: a name breaks Anthropic's rule, or a schema's root is a union (``anyOf``,
            ``oneOf`` or ``allOf``), which Anthropic refuses at the top level in every mode.
    """
    if tool_search not in TOOL_SEARCH:
        raise ProviderError(f"tool_search must be 'bm25' or 'regex', not {tool_search!r}")
    export = claude_export(tools, _DIALECT, strict)
    deferred = deferred_of(tools)
    return with_native_search(export, deferred, dict(TOOL_SEARCH[tool_search])) if deferred else export


def revealed_tools(payload: object) -> list[str]:
    """The tools Anthropic's server-side tool search revealed in a response (its ``tool_reference`` names).

    `payload` is a Messages response, an assistant message or its content, as the SDK object or its JSON.
    Give them to a run's `Catalog` (``catalog.reveal(...)``) when its calls are refused until revealed.
    """
    payload = plain(payload, "payload")
    content = plain(payload.get("content"), "content") if is_mapping(payload) else payload
    if not is_array(content):
        raise ProviderError("expected a Messages response, an assistant message or its content list")
    names: list[str] = []
    for index, raw in enumerate(content):
        block = plain(raw, f"content[{index}]")
        if not is_mapping(block) or block.get("type") != "tool_search_tool_result":
            continue
        result = plain(block.get("content"), f"content[{index}].content")
        references = plain(result.get("tool_references"), "tool_references") if is_mapping(result) else None
        for raw_reference in references if is_array(references) else []:
            reference = plain(raw_reference, "tool_reference")
            name = reference.get("tool_name") if is_mapping(reference) else None
            if isinstance(name, str):
                names.append(name)
    return names


def parse_tool_calls(payload: object, export: Export | None = None) -> list[ToolCall]:
    """The ``tool_use`` blocks of a Messages response, an assistant message or its content, as `ToolCall`s.

    Each shape is read as the SDK object the Anthropic client returns (``Message``, its ``content``
    list of blocks) or as its JSON (a response, an assistant message ``{"role": "assistant",
    "content": [...]}``, or the list). Other blocks (text, thinking, server tools) are skipped. The
    ``input`` arrives already parsed, so it is encoded as JSON text (see `object_arguments` for what
    the parse already lost). `export` is accepted for symmetry with the other providers: Anthropic's
    strict mode keeps optional fields optional, so there are no nulls to repair.

    Raises:
        ProviderError: the export is not an Anthropic one, the payload is not an assistant message,
            or a ``tool_use`` block has no id, no name, or an ``input`` that is not an object.
    """
    return claude_calls(payload, export, _DIALECT)


def result_message(call: ToolCall, outcome: Result | BaseException) -> dict[str, Any]:
    """The ``tool_result`` content block answering `call` (put it in a user message, first).

    Text becomes text blocks, JPEG/PNG/GIF/WebP images and PDFs become image and document blocks
    (inline bytes as base64, an http(s) URI as a URL source, a reference as a file id); other media
    are named in a text block. With no content, `Output.details` is sent as JSON text. An error sets
    ``is_error: true`` and shows only what `outcome_output` allows.
    """
    if call.id is None:
        raise ProviderError("an Anthropic tool_result needs the call's tool_use id")
    output, error = outcome_output(call.name, outcome)
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id}
    content = _content(output)
    if content:
        block["content"] = content
    if error:
        block["is_error"] = True
    return block


def results_message(
    pairs: Iterable[tuple[ToolCall, Result | BaseException]], *, text: str | None = None
) -> dict[str, Any]:
    """The user message answering an assistant turn: every ``tool_result`` block, then `text` if any.

    Raises:
        ProviderError: no results, or two results for the same call.
    """
    blocks = [result_message(call, outcome) for call, outcome in pairs]
    check_answers([b["tool_use_id"] for b in blocks], "tool_use id")
    if text:
        blocks.append({"type": "text", "text": text})
    return {"role": "user", "content": blocks}


def _content(output: Output) -> list[dict[str, Any]]:
    if not output.content:
        text = output.text()
        return [{"type": "text", "text": text}] if text else []
    blocks: list[dict[str, Any]] = []
    for item in output.content:
        if isinstance(item, TextBlock):
            blocks.append({"type": "text", "text": item.text})
        else:
            blocks.append(_media(item))
    return blocks


def _media(block: MediaBlock) -> dict[str, Any]:
    mime = block.mime_type.split(";", 1)[0].strip().lower()
    kind = "image" if mime in IMAGE_TYPES else "document" if mime in DOCUMENT_TYPES else None
    source: dict[str, Any] | None = None
    if kind is not None:
        if block.data is not None:
            source = {"type": "base64", "media_type": mime, "data": base64.b64encode(block.data).decode("ascii")}
        elif block.uri is not None:
            if urlsplit(block.uri).scheme.lower() in ("http", "https"):
                source = {"type": "url", "url": block.uri}
        elif block.reference is not None:
            source = {"type": "file", "file_id": block.reference}
    if kind is None or source is None:
        return {
            "type": "text",
            "text": f"[{mime} media not shown: Anthropic tool results carry JPEG, PNG, GIF and WebP images "
            "and PDF documents, as data, an http(s) URL or a file id]",
        }
    return {"type": kind, "source": source}
