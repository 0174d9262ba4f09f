"""Members named like JSON Schema or core-schema keywords survive every provider export, strict or not.

A parameter or field called ``type``, ``properties``, ``items``, ``$ref``... is a name, not a keyword:
each export must keep it, and the schema it sends must admit what the contract admits and refuse what it
refuses, at every level (parameters, nested models, TypedDicts, dataclasses, discriminated unions).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from scopetool import Func, InvalidInvocationError, Request, bind, tool
from scopetool.providers import (
    ProviderError,
    anthropic,
    bedrock,
    gemini,
    mcp,
    mistral,
    ollama,
    openai_chat,
    openai_responses,
)


class Click(BaseModel):
    """A click, tagged by its ``type``."""

    type: Literal["click"]
    x: int


class Key(BaseModel):
    """A key press, tagged by its ``type``."""

    type: Literal["key"]
    key: str


class Keywords(BaseModel):
    """A model whose members are named like JSON Schema keywords, two of them through aliases."""

    model_config = ConfigDict(populate_by_name=False)

    type: str
    properties: dict[str, int]
    items: list[int]
    required: bool
    enum: Literal["a", "b"]
    ref: str = Field(alias="$ref")
    any_of: int = Field(alias="anyOf")


class Entry(TypedDict):
    """A TypedDict with keyword keys."""

    type: str
    default: int
    schema: str


@dataclasses.dataclass
class Spec:
    """A dataclass with keyword fields."""

    fields: list[str]
    definitions: int
    additionalProperties: bool


@tool
def keyword_parameters(  # noqa: PLR0917 - one parameter per keyword
    type: str,  # noqa: A002 - named like the keyword, on purpose
    schema: str,
    fields: int,
    ref: str,
    default: int,
    enum: str,
    items: list[int],
) -> str:
    """Parameters named like schema keywords."""
    return type


@tool
def act(action: Annotated[Click | Key, Field(discriminator="type")], keywords: Keywords) -> str:
    """A discriminated union on ``type``, and a model of keyword-named members."""
    return action.type


@tool
def nested(entry: Entry, spec: Spec, entries: list[Entry]) -> str:
    """A TypedDict and a dataclass with keyword-named members."""
    return entry["type"]


KEYWORDS = {"type": "t", "properties": {"a": 1}, "items": [1], "required": True, "enum": "a", "$ref": "r", "anyOf": 1}
ENTRY = {"type": "t", "default": 1, "schema": "s"}
VALID: dict[str, dict[str, Any]] = {
    "keyword_parameters": {
        "type": "t", "schema": "s", "fields": 1, "ref": "r", "default": 2, "enum": "e", "items": [1, 2]
    },
    "act": {"action": {"type": "key", "key": "k"}, "keywords": KEYWORDS},
    "nested": {
        "entry": ENTRY,
        "spec": {"fields": ["f"], "definitions": 1, "additionalProperties": False},
        "entries": [ENTRY],
    },
}  # fmt: skip
# Each breaks one keyword-named member, at a different depth.
INVALID: dict[str, list[dict[str, Any]]] = {
    "keyword_parameters": [{**VALID["keyword_parameters"], "type": 1}, {**VALID["keyword_parameters"], "items": "x"}],
    "act": [
        {**VALID["act"], "action": {"type": "scroll", "key": "k"}},
        {**VALID["act"], "keywords": {**KEYWORDS, "properties": {"a": "x"}}},
        {**VALID["act"], "keywords": {**KEYWORDS, "$ref": 1}},
    ],
    "nested": [
        {**VALID["nested"], "entry": {**ENTRY, "default": "x"}},
        {**VALID["nested"], "spec": {"fields": [1], "definitions": 1, "additionalProperties": False}},
        {**VALID["nested"], "entries": [{**ENTRY, "schema": None}]},
    ],
}
TOOLS: list[Func[..., Any]] = [keyword_parameters, act, nested]

Extract = Callable[[dict[str, Any]], dict[str, Any]]
EXPORTS: dict[str, tuple[Callable[[list[Any]], Any], Extract]] = {
    "openai_chat strict": (lambda t: openai_chat.export_tools(t, strict=True), lambda e: e["function"]["parameters"]),
    "openai_chat": (lambda t: openai_chat.export_tools(t, strict=False), lambda e: e["function"]["parameters"]),
    "openai_responses strict": (lambda t: openai_responses.export_tools(t, strict=True), lambda e: e["parameters"]),
    "openai_responses": (lambda t: openai_responses.export_tools(t, strict=False), lambda e: e["parameters"]),
    "anthropic strict": (lambda t: anthropic.export_tools(t, strict=True), lambda e: e["input_schema"]),
    "anthropic": (lambda t: anthropic.export_tools(t, strict=False), lambda e: e["input_schema"]),
    "bedrock strict": (lambda t: bedrock.export_tools(t, strict=True), lambda e: e["toolSpec"]["inputSchema"]["json"]),
    "bedrock": (lambda t: bedrock.export_tools(t, strict=False), lambda e: e["toolSpec"]["inputSchema"]["json"]),
    "gemini": (gemini.export_tools, lambda e: e["parametersJsonSchema"]),
    "mcp": (mcp.export_tools, lambda e: e["inputSchema"]),
    "mistral strict": (lambda t: mistral.export_tools(t, strict=True), lambda e: e["function"]["parameters"]),
    "mistral": (lambda t: mistral.export_tools(t, strict=False), lambda e: e["function"]["parameters"]),
    "ollama": (ollama.export_tools, lambda e: e["function"]["parameters"]),
}


def _admits(func: Func[..., Any], value: dict[str, Any]) -> bool:
    try:
        bind(func).contract.prepare(Request(func.name, json.dumps(value)))
    except InvalidInvocationError:
        return False
    return True


def _names(node: Any) -> set[str]:
    """Every property name anywhere in a schema (the names, never the keywords around them)."""
    found: set[str] = set()
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            found.update(properties)
        for value in node.values():
            found |= _names(value)
    elif isinstance(node, list):
        for item in node:
            found |= _names(item)
    return found


@pytest.mark.parametrize("func", TOOLS, ids=lambda f: f.name)
def test_keyword_named_members_build_and_are_enforced(func: Func[..., Any]) -> None:
    """The tools build; the contract admits the valid document and rejects each broken one."""
    assert _admits(func, VALID[func.name])
    for value in INVALID[func.name]:
        assert not _admits(func, value), value


@pytest.mark.parametrize("func", TOOLS, ids=lambda f: f.name)
def test_the_advertised_schema_agrees_with_the_contract(func: Func[..., Any]) -> None:
    """The contract's own schema allows the valid document and forbids each broken one."""
    validator = jsonschema.Draft202012Validator(func.definition().input_schema)
    assert validator.is_valid(VALID[func.name])
    assert not any(validator.is_valid(value) for value in INVALID[func.name])


# Ollama keeps no nested object structure: it describes nested members in words (the contract still
# enforces them), so its schema is checked for the top-level members and for naming every nested one.
DESCRIBED = {"ollama"}


@pytest.mark.parametrize("export", EXPORTS)
def test_every_export_keeps_keyword_named_members(export: str) -> None:
    """Each export keeps every keyword-named member and sends a schema that agrees with the contract."""
    make, extract = EXPORTS[export]
    for func, entry in zip(TOOLS, make(TOOLS).tools, strict=True):
        schema = extract(entry)
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        assert validator.is_valid(VALID[func.name]), func.name
        advertised = func.definition().input_schema
        if export in DESCRIBED:
            assert set(schema["properties"]) == set(advertised["properties"]), func.name
            text = json.dumps(schema)
            assert all(json.dumps(name) in text or f'\\"{name}\\"' in text for name in _names(advertised))
            continue
        assert _names(schema) == _names(advertised), func.name
        assert not any(validator.is_valid(value) for value in INVALID[func.name]), func.name


def test_gemini_openapi_export_keeps_keyword_named_members() -> None:
    """Gemini's OpenAPI-subset export keeps keyword-named members, and names the one its dialect refuses."""
    for func, entry in zip(TOOLS[::2], gemini.export_tools(TOOLS[::2], mode="openapi").tools, strict=True):
        assert _names(entry["parameters"]) == _names(func.definition().input_schema), func.name
    with pytest.raises(ProviderError, match=r"property name '\$ref' is not allowed"):
        gemini.export_tools([act], mode="openapi")
