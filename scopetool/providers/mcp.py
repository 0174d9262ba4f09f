"""MCP ``tools/list`` and ``tools/call``: `Tool` objects out, ``tools/call`` requests in, `CallToolResult`s back.

A tool is exported as an MCP ``Tool``: its input schema unchanged (MCP takes JSON Schema 2020-12), its
output schema as ``outputSchema``, and its `Effect` as ``annotations``:

* `Effect.SAFE`: ``readOnlyHint: true``, ``destructiveHint: false``, ``idempotentHint: true``;
* `Effect.IDEMPOTENT`: ``readOnlyHint: false``, ``destructiveHint: true`` (it changes state, and
  nothing says the change is only additive), ``idempotentHint: true``;
* no effect: no ``annotations`` at all. MCP's defaults for absent hints (not read-only, destructive,
  not idempotent, open world) are already the most conservative reading, which is what "no promise"
  means; spelling them out would add nothing.

``openWorldHint`` is never set: scopetool does not know whether a tool reaches outside systems.

Output schemas: clients up to protocol 2025-11-25 accept only an object root, so by default a
non-object output schema (``-> int``, ``-> list[str]``, a union...) is wrapped as
``{"type": "object", "properties": {"result": <schema>}, "required": ["result"]}`` (its ``$defs`` and
``$schema`` lifted to the wrapper, local ``$ref``s rebased), exactly as the MCP Python SDK does, and the
result's ``structuredContent`` is then ``{"result": value}``. The report names each wrapped tool.
``export_tools(..., object_output=False)`` sends output schemas as they are, for 2026-07-28 clients.

Results (`result_message`): text blocks as ``text`` content; inline image and audio media as
``image`` / ``audio`` content (base64 ``data`` and ``mimeType``); media given by URI as a
``resource_link``; other media (inline data of another type, host references) are named in a text
block, as everywhere else in scopetool. A successful result of a tool with an output schema carries
its details as ``structuredContent``; when the output has no content, the details' JSON is also sent
as a text block for clients that read only ``content``. Failures, input rejections, unknown tools and
any other error set ``isError: true``; the model sees only what `outcome_output` allows.

Example:
    ```python
    from scopetool import Effect, Registry, tool
    from scopetool.providers import mcp

    @tool(effect=Effect.SAFE)
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    export = mcp.export_tools(Registry(add))
    print(export.tools[0]["annotations"]["readOnlyHint"])
    #> True
    print(export.tools[0]["outputSchema"]["required"])
    #> ['result']
    ```
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Mapping
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from .._contract import Request
from .._definition import Effect
from .._json import is_array, is_object
from .._output import MediaBlock, Result, TextBlock
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
    outcome_output,
    plain,
    run_call,
)
from ._mcp_schema import client_schema
from ._transform import Change, subschemas

__all__ = [
    "NAME_PATTERN",
    "PROVIDER",
    "export_tools",
    "list_tools_result",
    "parse_tool_calls",
    "result_message",
    "run_call",
]

PROVIDER: Final = "mcp"
"""The name this adapter gives its provider in exports and reports."""
NAME_PATTERN: Final = r"[A-Za-z0-9_.-]{1,128}"
"""MCP's tool-name guidance (2025-11-25 and later): 1 to 128 of ASCII letters, digits, ``_``, ``-`` and ``.``."""
NAME_LIMIT: Final = 128
"""The longest tool name this provider accepts."""

HINTS: Final[Mapping[Effect, Mapping[str, bool]]] = {
    Effect.SAFE: {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    Effect.IDEMPOTENT: {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True},
}
"""The ``annotations`` each effect becomes; a tool without an effect gets none (MCP's defaults)."""

_WRAPPED: Final = Change(
    path="outputSchema",
    action="converted",
    keyword="type",
    reason='the root is not an object: wrapped as {"result": <schema>} for clients up to 2025-11-25; '
    'structuredContent is {"result": value}',
)


def export_tools(
    tools: Tools, *, object_output: bool = True, tool_fields: Mapping[str, Mapping[str, Any]] | None = None
) -> Export:
    """The tools as MCP ``Tool`` objects, for a ``tools/list`` result.

    Args:
        tools: A registry, bindings, tools or definitions.
        object_output: Wrap a non-object output schema in ``{"result": ...}`` (needed by clients up to
            protocol 2025-11-25). False sends output schemas as they are (2026-07-28 clients).
        tool_fields: Per tool name, the MCP ``Tool`` fields scopetool has no source for: ``title``
            (a string), ``icons`` (a list of ``{"src": ..., "mimeType": ..., "sizes": [...],
            "theme": "light" | "dark"}``) and ``_meta`` (a JSON object). A copy is sent.

    Returns:
        The export; its report names every wrapped output schema and every schema shaped for
        clients (``$ref`` inlined, unions of plain types as type lists). MCP has no strict
        mode, so each report's ``strict`` is None.

    Raises:
        ProviderError: A name breaks MCP's name rule, two tools share a name, or `tool_fields` names a
            tool that is not exported or holds a field that is not one of the three, or not of its shape.
    """
    definitions = definitions_of(tools)
    fields = _tool_fields(tool_fields, {definition.name for definition in definitions})
    wire: list[dict[str, Any]] = []
    reports: list[ToolReport] = []
    outputs: dict[str, tuple[bool, bool]] = {}
    for definition in definitions:
        check_name(PROVIDER, definition.name, NAME_PATTERN, NAME_LIMIT)
        extra = fields.get(definition.name, {})
        entry: dict[str, Any] = {"name": definition.name}
        if "title" in extra:
            entry["title"] = extra["title"]
        if definition.description:
            entry["description"] = definition.description
        if "icons" in extra:
            entry["icons"] = extra["icons"]
        changes: list[Change] = []
        notes: list[str] = []
        entry["inputSchema"] = client_schema(definition.input_schema, "inputSchema", changes, notes)
        output_schema = definition.output_schema
        if output_schema is not None:
            entry["outputSchema"] = client_schema(
                _output_schema(output_schema, object_output, changes), "outputSchema", changes, notes
            )
        if definition.effect is not None:
            entry["annotations"] = dict(HINTS[definition.effect])
        if "_meta" in extra:
            entry["_meta"] = extra["_meta"]
        wire.append(entry)
        reports.append(ToolReport(name=definition.name, strict=None, changes=tuple(changes), notes=tuple(notes)))
        outputs[definition.name] = ("outputSchema" in entry, _WRAPPED in changes)
    return make_export(PROVIDER, wire, reports, definitions, outputs)


_FIELDS: Final = ("title", "icons", "_meta")
_ICON_KEYS: Final = frozenset({"src", "mimeType", "sizes", "theme"})


def _tool_fields(given: Mapping[str, Mapping[str, Any]] | None, names: set[str]) -> dict[str, dict[str, Any]]:
    """`tool_fields`, checked and copied (plain JSON, detached from the caller's objects)."""
    if given is None:
        return {}
    if not is_mapping(given):
        raise ProviderError(f"tool_fields must be a mapping of tool names to fields, not {type(given).__name__}")
    found: dict[str, dict[str, Any]] = {}
    for name, fields in given.items():
        where = f"tool_fields[{name!r}]"
        if name not in names:
            raise ProviderError(f"{where}: no tool of that name is exported")
        if not is_mapping(fields):
            raise ProviderError(f"{where} must be a mapping, not {type(fields).__name__}")
        unknown = sorted(set(fields) - set(_FIELDS))
        if unknown:
            raise ProviderError(f"{where}: {unknown[0]!r} is not one of {', '.join(_FIELDS)}")
        try:
            copied: dict[str, Any] = json.loads(json.dumps(dict(fields), allow_nan=False))
        except (TypeError, ValueError) as error:
            raise ProviderError(f"{where} is not JSON: {error}") from None
        if "title" in copied and not isinstance(copied["title"], str):
            raise ProviderError(f"{where}['title'] must be a string")
        if "icons" in copied and not _icons(copied["icons"]):
            raise ProviderError(
                f"{where}['icons'] must be a list of objects with a string 'src' (and optional 'mimeType', "
                "'sizes', 'theme': 'light' or 'dark')"
            )
        if "_meta" in copied and not isinstance(copied["_meta"], dict):
            raise ProviderError(f"{where}['_meta'] must be an object")
        found[name] = copied
    return found


def _icons(value: object) -> bool:
    """Whether `value` is a list of MCP ``Icon`` objects."""
    return is_array(value) and all(_icon(icon) for icon in value)


def _icon(icon: object) -> bool:
    if not is_object(icon) or not set(icon) <= _ICON_KEYS:
        return False
    src, mime_type, sizes = icon.get("src"), icon.get("mimeType", ""), icon.get("sizes", [])
    return (
        isinstance(src, str)
        and bool(src)
        and isinstance(mime_type, str)
        and is_array(sizes)
        and all(isinstance(size, str) for size in sizes)
        and icon.get("theme", "light") in ("light", "dark")
    )


def _output_schema(schema: dict[str, Any] | bool, object_output: bool, changes: list[Change]) -> dict[str, Any]:
    if isinstance(schema, dict) and schema.get("type") == "object":
        return schema
    if object_output:
        changes.append(_WRAPPED)
        return _wrap(schema)
    if isinstance(schema, bool):
        changes.append(
            Change(
                "outputSchema",
                "converted",
                str(schema).lower(),
                "MCP wants an object: a boolean schema in its object form",
            )
        )
        return {} if schema else {"not": {}}
    return schema


def _wrap(schema: dict[str, Any] | bool) -> dict[str, Any]:
    """``{"result": schema}``, with the schema's root-only keywords lifted and its local refs rebased."""
    wrapper: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if isinstance(schema, bool) or "$id" in schema:
        return wrapper  # a schema with its own $id is its own resource: its refs resolve inside it
    inner = copy.deepcopy(schema)
    wrapper["properties"]["result"] = inner
    for key in ("$schema", "$defs", "definitions"):
        if key in inner:
            wrapper[key] = inner.pop(key)
    _rebase(wrapper, "$")
    return wrapper


def _rebase(node: dict[str, Any], path: str) -> None:
    ref = node.get("$ref")
    if (
        isinstance(ref, str)
        and (ref == "#" or ref.startswith("#/"))
        and not ref.startswith(("#/$defs/", "#/definitions/"))
    ):
        node["$ref"] = "#/properties/result" + ref[1:]
    for child_path, child in subschemas(node, path):
        _rebase(child, child_path)


def list_tools_result(
    export: Export,
    *,
    next_cursor: str | None = None,
    ttl_ms: int = 0,
    cache_scope: Literal["public", "private"] = "private",
) -> dict[str, Any]:
    """The ``tools/list`` result object for an MCP export.

    ``resultType``, ``ttlMs`` and ``cacheScope`` are required from protocol 2026-07-28 on; older
    clients ignore them. The defaults (immediately stale, private) are the MCP SDK's.

    Raises:
        ProviderError: The export is not an MCP export, or a caching directive is invalid.
    """
    _check_export(export)
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0:
        raise ProviderError(f"ttl_ms must be a non-negative integer, not {ttl_ms!r}")
    if cache_scope not in ("public", "private"):
        raise ProviderError(f"cache_scope must be 'public' or 'private', not {cache_scope!r}")
    result: dict[str, Any] = {"tools": export.tools}
    if next_cursor is not None:
        if not isinstance(next_cursor, str):
            raise ProviderError(f"next_cursor must be a string, not {type(next_cursor).__name__}")
        result["nextCursor"] = next_cursor
    result.update({"resultType": "complete", "ttlMs": ttl_ms, "cacheScope": cache_scope})
    return result


def parse_tool_calls(payload: object, export: Export | None = None) -> list[ToolCall]:
    """The tool call of a ``tools/call`` request, or of its ``params``, as a one-item list.

    Each shape is read as the MCP SDK's object (``mcp.types.JSONRPCRequest``, ``CallToolRequest``,
    ``CallToolRequestParams``) or as its JSON.
    A whole JSON-RPC request (``{"jsonrpc": "2.0", "id": ..., "method": "tools/call", "params":
    {...}}``) gives its ``id`` as the call id (an integer id as its decimal text: answer the JSON-RPC
    request with its own id). ``params`` alone (``{"name": ..., "arguments": {...}}``) carry no id,
    so the call id is None. A list (a JSON-RPC batch) gives one call per item. ``arguments`` must be
    an object or absent (absent means no arguments).

    `export` is accepted for symmetry with the other providers; an MCP export changes no input
    schema, so no argument needs repair.

    Raises:
        ProviderError: The payload is not a ``tools/call`` request or its params.
    """
    check_export(export, PROVIDER)
    payload = plain(payload, "tools/call")
    if is_mapping(payload):
        items: list[Any] = [payload]
    elif isinstance(payload, str | bytes | bytearray) or not is_iterable(payload):
        raise ProviderError(f"a tools/call payload is a JSON object or a list of them, not {type(payload).__name__}")
    else:
        items = list(payload)
    return [
        _parse_one(item, "tools/call" if len(items) == 1 else f"tools/call[{index}]")
        for index, item in enumerate(items)
    ]


def _parse_one(raw: object, where: str) -> ToolCall:
    item = plain(raw, where)
    if not is_mapping(item):
        raise ProviderError(f"{where}: not a JSON object")
    call_id: str | None = None
    params: Mapping[str, Any] = item
    if any(key in item for key in ("jsonrpc", "method", "id")):
        if "jsonrpc" in item and item["jsonrpc"] != "2.0":
            raise ProviderError(f"{where}: not a JSON-RPC 2.0 request")
        if item.get("method") != "tools/call":
            raise ProviderError(f"{where}: method must be 'tools/call'")
        if "id" in item:
            raw_id = item["id"]
            if isinstance(raw_id, str):
                call_id = raw_id
            elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
                call_id = str(raw_id)
            else:
                raise ProviderError(f"{where}: a request id is a string or an integer (MCP forbids null)")
        found = plain(item.get("params"), where)
        if not is_mapping(found):
            raise ProviderError(f"{where}: params must be an object")
        params = found
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise ProviderError(f"{where}: params.name must be a non-empty string")
    arguments = params.get("arguments")
    text = "" if arguments is None else object_arguments(arguments, where, "params.arguments")
    return ToolCall(id=call_id, request=Request(name=name, arguments=text))


def result_message(call: ToolCall, outcome: Result | BaseException, export: Export | None = None) -> dict[str, Any]:
    """The ``CallToolResult`` answering `call` (the ``result`` of the JSON-RPC response).

    Pass the `Export` the tools were listed with to send ``structuredContent``: it says which tools
    have an output schema and which were wrapped in ``{"result": ...}``. Without it, details are sent
    as text only.

    Errors (a `Failure`, an input rejection, an unknown tool, any other exception) set ``isError``:
    the model sees the Failure's output, the rejection's message or a generic text, never the
    exception. A server that prefers it may answer an unknown tool with a JSON-RPC error (-32602)
    instead.

    Raises:
        ProviderError: The outcome is not a tool result, or `call` names a tool the export lacks.
    """
    output, is_error = outcome_output(call.name, outcome)
    content = [_content_block(block) for block in output.content]
    structured: Any = None
    if not is_error and export is not None and output.details is not None:
        has_schema, wrapped = _output_contract(export, call.name)
        if has_schema:
            value = json.loads(output.details)
            structured = {"result": value} if wrapped else value
    if not content and output.details is not None:
        content.append({"type": "text", "text": output.details.decode("utf-8")})
    message: dict[str, Any] = {"content": content}
    if structured is not None:
        message["structuredContent"] = structured
    message["isError"] = is_error
    message["resultType"] = "complete"
    return message


def _content_block(block: TextBlock | MediaBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    base = block.mime_type.split(";", 1)[0].strip().lower()
    if block.data is not None:
        kind = "image" if base.startswith("image/") else "audio" if base.startswith("audio/") else None
        if kind is not None:
            return {"type": kind, "data": base64.b64encode(block.data).decode("ascii"), "mimeType": block.mime_type}
    if block.uri is not None:
        return {"type": "resource_link", "uri": block.uri, "name": _link_name(block.uri), "mimeType": block.mime_type}
    return {"type": "text", "text": f"[{block.mime_type} media]"}


def _link_name(uri: str) -> str:
    segment = urlsplit(uri).path.rstrip("/").rsplit("/", 1)[-1]
    return segment or uri


def _output_contract(export: Export, name: str) -> tuple[bool, bool]:
    _check_export(export)
    found = export._outputs.get(name)  # pyright: ignore[reportPrivateUsage]  # the index export_tools built
    if found is None:
        raise ProviderError(f"tool {name!r} is not in this export")
    return found


def _check_export(export: object) -> None:
    if not isinstance(export, Export) or export.provider != PROVIDER:
        raise ProviderError(f"expected an export made by scopetool.providers.mcp, not {export!r}")
