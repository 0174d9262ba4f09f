"""What Anthropic Messages and Bedrock Converse share: Claude's strict export, and reading tool-use blocks.

The two adapters differ only in names and nesting, which `ClaudeDialect` holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, final

from .._contract import Request
from ._anthropic_schema import anthropic_strict, fit_request, root_union
from ._common import (
    Export,
    ProviderError,
    ToolCall,
    ToolReport,
    Tools,
    check_export,
    check_name,
    definitions_of,
    is_iterable,
    is_mapping,
    make_export,
    object_arguments,
    plain,
    repair_nulls,
    strict_report,
    tool_entry,
)


@final
@dataclass(frozen=True, slots=True)
class ClaudeDialect:
    """What differs between the Claude-shaped providers: field names, nesting, and what is refused."""

    provider: str
    """The adapter's `PROVIDER`."""
    name_pattern: str
    """The tool names the provider accepts."""
    name_limit: int
    """The longest tool name the provider accepts."""
    schema_field: str
    """The tool entry's input schema field (``input_schema``, ``inputSchema``)."""
    schema_wrapper: str | None
    """The key the schema is wrapped under in that field (``json``), None when it is sent bare."""
    entry_wrapper: str | None
    """The key each tool entry is wrapped under (``toolSpec``), None when it is sent bare."""
    refuses_root_union: bool
    """Whether a root union is refused at export (True) or sent with a note (False)."""
    block: str
    """A tool call block: its ``type`` (``tool_use``), or with `converse` the key that holds it (``toolUse``)."""
    id_field: str
    """The call's id field in the block (``id``, ``toolUseId``)."""
    id_word: str
    """The id as an error names it (``an id``, ``a toolUseId``)."""
    converse: bool
    """Converse's nesting: a response holds its message in ``output``, a block its call under `block`."""
    text_calls_nothing: bool
    """Whether a message whose content is a string (text only) has no calls, rather than being refused."""


def claude_export(tools: Tools, dialect: ClaudeDialect, strict: bool) -> Export:
    """The tools as Claude tool entries; with `strict`, Claude's strict rules and per-request limits apply."""
    definitions = definitions_of(tools)
    schemas: list[dict[str, Any]] = []
    unions: list[tuple[str, ...]] = []
    for definition in definitions:
        check_name(dialect.provider, definition.name, dialect.name_pattern, dialect.name_limit)
        schema = definition.input_schema
        keyword = root_union(schema)
        if keyword is not None and dialect.refuses_root_union:
            raise ProviderError(
                f"tool {definition.name!r} cannot be exported to {dialect.provider}: input_schema does not support "
                f"oneOf, allOf, or anyOf at the top level (its root uses {keyword})"
            )
        unions.append(
            () if keyword is None else (f"the root uses {keyword}: Claude models refuse a union at the top level",)
        )
        schemas.append(schema)
    results = fit_request([anthropic_strict(s) for s in schemas], schemas) if strict else None
    wire: list[dict[str, Any]] = []
    reports: list[ToolReport] = []
    for index, definition in enumerate(definitions):
        tool = tool_entry(definition)
        result = None if results is None else results[index]
        schema = schemas[index] if result is None else result.schema
        tool[dialect.schema_field] = schema if dialect.schema_wrapper is None else {dialect.schema_wrapper: schema}
        if result is not None and result.strict:
            tool["strict"] = True
        reports.append(strict_report(definition.name, result, unions[index]))
        wire.append(tool if dialect.entry_wrapper is None else {dialect.entry_wrapper: tool})
    return make_export(dialect.provider, wire, reports, definitions)


def claude_calls(payload: object, export: Export | None, dialect: ClaudeDialect) -> list[ToolCall]:
    """The tool-use blocks of a response, an assistant message or its content, as `ToolCall`s.

    Other blocks are skipped; the parsed ``input`` is encoded as JSON text (`object_arguments`).
    """
    check_export(export, dialect.provider)
    block_name, id_field, converse = dialect.block, dialect.id_field, dialect.converse
    payload = plain(payload, "payload")
    if converse and is_mapping(payload) and "output" in payload:
        output = plain(payload["output"], "output")
        if not is_mapping(output):
            raise ProviderError(f"a Converse response's output must be an object, not {type(output).__name__}")
        message = plain(output.get("message"), "output.message")
        if not is_mapping(message):
            return []  # a response without a message (such as a guardrail intervention) calls nothing
        payload = message
    if is_mapping(payload):
        role = payload.get("role", "assistant")
        if role != "assistant":
            raise ProviderError(f"tool calls come in an assistant message, not a {str(role)[:40]!r} one")
        content = plain(payload.get("content"), "content")
        if content is None or (dialect.text_calls_nothing and isinstance(content, str)):
            return []
    else:
        content = payload
    if isinstance(content, str | bytes) or not is_iterable(content):
        raise ProviderError(f"message content must be a list of content blocks, not {type(content).__name__}")
    found: list[ToolCall] = []
    for index, raw in enumerate(content):
        where = f"content[{index}]"
        block = plain(raw, where)
        if converse:
            if not is_mapping(block):
                raise ProviderError(f"{where}: not a content block")
            if block_name not in block:
                continue
            block = plain(block[block_name], where)
            if not is_mapping(block):
                raise ProviderError(f"{where}: {block_name} must be an object")
            if block.get("type") == "server_tool_use":
                continue  # run by Bedrock itself
        else:
            if not is_mapping(block) or not isinstance(block.get("type"), str):
                raise ProviderError(f"{where}: not a content block")
            if block["type"] != block_name:
                continue
        call_id, name = block.get(id_field), block.get("name")
        if not isinstance(call_id, str) or not call_id:
            raise ProviderError(f"{where}: a {block_name} block needs {dialect.id_word}")
        if not isinstance(name, str):
            raise ProviderError(f"{where}: a {block_name} block needs a name")
        text = object_arguments(block.get("input"), where, f"{block_name} input")
        if export is not None:
            text = repair_nulls(text, export, name)
        found.append(ToolCall(id=call_id, request=Request(name=name, arguments=text)))
    return found
