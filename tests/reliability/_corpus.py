"""The agreement corpus: the provider corpus's 33 tools plus typed and hand-written-schema tools.

Typed tools (`@tool`, `Signature`) are admitted by pydantic-core; hand-written schemas by jsonschema-rs.
Both kinds are checked against the schema they advertise.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import importlib
import inspect
import ipaddress
import sys
import typing
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from typing_extensions import TypedDict

from scopetool import Binding, Definition, Func, InputRejection, Invocation, Output, Result, Signature, bind, tool

_PROVIDERS = str(Path(__file__).resolve().parent.parent / "providers")
if _PROVIDERS not in sys.path:
    sys.path.insert(0, _PROVIDERS)
provider_corpus = importlib.import_module("corpus")


class Shade(enum.Enum):
    """A string enum."""

    LIGHT = "light"
    DARK = "dark"


class Options(TypedDict, total=False):
    """A TypedDict with optional keys."""

    verbose: bool
    depth: int


@dataclasses.dataclass
class Point:
    """A stdlib dataclass."""

    x: int
    y: int = 0


class Transfer(BaseModel):
    """A model whose validator raises a public InputRejection."""

    amount: int
    memo: str = ""

    @field_validator("amount")
    @classmethod
    def positive(cls, value: int) -> int:
        """Refuse non-positive amounts."""
        if value <= 0:
            raise InputRejection("amount must be a positive number of cents")
        return value


class Aliased(BaseModel):
    """A model with an aliased field."""

    model_config = ConfigDict(populate_by_name=False)
    user_id: int = Field(alias="userId")
    display: str | None = None


class Leaf(BaseModel):
    """A leaf of an expression tree."""

    kind: Literal["leaf"]
    value: int


class Branch(BaseModel):
    """A branch of an expression tree (recursive through a discriminated union)."""

    kind: Literal["branch"]
    op: Literal["+", "*"]
    items: list[Annotated[Leaf | Branch, Field(discriminator="kind")]] = []


class Expression(BaseModel):
    """A recursive discriminated union at the root's member."""

    root: Annotated[Leaf | Branch, Field(discriminator="kind")]


class Inventory(BaseModel):
    """Maps of lists of models."""

    by_shelf: dict[str, list[provider_corpus.Address]] = {}
    labels: frozenset[str] = frozenset()


@tool
def typed_dict(opts: Options) -> str:
    """A TypedDict parameter."""
    return str(opts)


@tool
def dataclass_param(point: Point) -> int:
    """A dataclass parameter."""
    return point.x


@tool
def timing(delay: dt.timedelta, at: dt.time) -> str:
    """Duration and time formats."""
    return str(delay)


@tool
def multiples(
    step: Annotated[int, Field(multiple_of=5, gt=0, lt=100)], half: Annotated[float, Field(multiple_of=0.5)] = 0.0
) -> int:
    """multipleOf with exclusive bounds."""
    return step


@tool
def variadic(values: tuple[int, ...], bag: frozenset[int] = frozenset()) -> int:
    """A variadic tuple and a frozenset."""
    return len(values)


@tool
def shelves(by_shelf: dict[str, list[provider_corpus.Address]]) -> int:
    """A dict of lists of models."""
    return len(by_shelf)


@tool
def shades(values: list[Shade] | None = None) -> int:
    """An optional list of enums."""
    return len(values or [])


@tool
def short_text(tag: Annotated[str, Field(max_length=3)], note: Annotated[str, Field(min_length=1)] = "x") -> str:
    """Unicode length bounds."""
    return tag


@tool
def address(ip: ipaddress.IPv4Address) -> str:
    """An IPv4 address (format ipv4)."""
    return str(ip)


@tool
def wide_ints(value: Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]) -> int:
    """A 64-bit integer range."""
    return value


@tool
def json_map(data: dict[str, Any]) -> int:
    """An open object of any values."""
    return len(data)


@tool
def nullable_bounded(score: Annotated[int, Field(ge=0, le=5)] | None) -> int:
    """A required, nullable, bounded integer."""
    return score or 0


@tool
def number_or_text(value: float | str, flags: list[bool] = []) -> str:  # noqa: B006 - a frozen default
    """A float-or-string union and a list of booleans."""
    return str(value)


@tool
def unicode_pattern(word: Annotated[str, Field(pattern=r"^\w{1,6}$")]) -> str:
    """A pattern with a Unicode class."""
    return word


class Click(BaseModel):
    """A click, tagged by a member named ``type``."""

    type: Literal["click"]
    x: int


class Press(BaseModel):
    """A key press, tagged by a member named ``type``."""

    type: Literal["press"]
    key: str


class KeywordEntry(TypedDict):
    """A TypedDict whose keys are named like JSON Schema and core-schema keywords."""

    type: str
    fields: list[int]
    default: int


@dataclasses.dataclass
class KeywordSpec:
    """A dataclass whose fields are named like keywords."""

    schema: str
    definitions: int = 0


class Keywords(BaseModel):
    """A model of keyword-named members, two of them through aliases."""

    type: str
    properties: dict[str, int] = {}
    items: list[int] = []
    required: bool = False
    ref: str = Field("", alias="$ref")
    any_of: int = Field(0, alias="anyOf")
    price: Decimal = Decimal(0)
    by_id: dict[int, str] = {}


@tool
def keyword_parameters(  # noqa: PLR0917 - one parameter per keyword
    type: str,  # noqa: A002 - a parameter named like the keyword, on purpose
    schema: str,
    properties: dict[str, int],
    ref: str = "",
    enum: Literal["a", "b"] = "a",
    items: list[int] = [],  # noqa: B006 - a frozen default
) -> str:
    """Parameters named like schema keywords."""
    return type


@tool
def keyword_shapes(
    action: Annotated[Click | Press, Field(discriminator="type")], entry: KeywordEntry, spec: KeywordSpec
) -> str:
    """A discriminated union on ``type``, a TypedDict and a dataclass of keyword-named members."""
    return action.type


@tool
def decimals(amount: Annotated[Decimal, Field(max_digits=6, decimal_places=2)], rate: Decimal = Decimal(0)) -> str:
    """A constrained and a plain decimal: JSON numbers, or strings matching the advertised pattern."""
    return str(amount)


@tool
def bounded_decimal(value: Annotated[Decimal, Field(ge=0, le=100)]) -> str:
    """A decimal with bounds."""
    return str(value)


@tool
def blobs(data: bytes, short: Annotated[bytes, Field(max_length=4)] = b"") -> int:
    """Bytes, read as UTF-8 text."""
    return len(data)


@tool
def int_keys(by_id: dict[int, str]) -> int:
    """A dict keyed by integers (JSON member names that spell one)."""
    return len(by_id)


@tool
def calendar(day: dt.date, span: dt.timedelta | None = None) -> str:
    """A date and an optional duration."""
    return str(day)


class _SignatureTool:
    """A `Tool` built from a `Signature` (its model is the input object)."""

    def __init__(self, name: str, model: type[BaseModel]) -> None:
        self.signature: Signature[Any, Any] = Signature(model, str)
        self._definition = self.signature.definition(name, f"The {model.__name__} model.")

    def definition(self) -> Definition:
        return self._definition

    def input_validator(self) -> Any:
        return self.signature.input_validator()

    async def call(self, invocation: Invocation) -> Result:
        value = self.signature.decode(invocation)
        return Result(output=Output.from_text(type(value).__name__))


class RawTool:
    """A tool with a hand-written JSON Schema (enforced by jsonschema-rs); it echoes its arguments."""

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self._definition = Definition(name=name, description="A hand-written schema.", input_schema=schema)

    def definition(self) -> Definition:
        return self._definition

    async def call(self, invocation: Invocation) -> Result:
        return Result(output=Output.from_json(invocation.arguments))


RAW_SCHEMAS: dict[str, dict[str, Any]] = {
    "raw_scalars": {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": -5, "maximum": 50, "multipleOf": 5},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "code": {"type": "string", "minLength": 2, "maxLength": 6, "pattern": "^[a-z]+$"},
            "choice": {"enum": ["x", 1, None, True]},
            "fixed": {"const": "v1"},
        },
        "required": ["count", "fixed"],
        "additionalProperties": False,
    },
    "raw_formats": {
        "type": "object",
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "id": {"type": "string", "format": "uuid"},
            "mail": {"type": "string", "format": "email"},
            "v4": {"type": "string", "format": "ipv4"},
            "v6": {"type": "string", "format": "ipv6"},
        },
        "additionalProperties": False,
    },
    "raw_arrays": {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
            "set": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "maxItems": 4},
            "some": {"type": "array", "contains": {"type": "boolean"}, "minItems": 1},
        },
        "additionalProperties": False,
    },
    "raw_composition": {
        "type": "object",
        "properties": {
            "either": {"anyOf": [{"type": "integer", "minimum": 10}, {"type": "string", "maxLength": 2}]},
            "exactly": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]},
            "neither": {"not": {"type": "string"}},
            "both": {"allOf": [{"type": "integer"}, {"minimum": 0}]},
        },
        "additionalProperties": False,
    },
    "raw_conditional": {
        "type": "object",
        "properties": {"kind": {"enum": ["card", "bank"]}, "number": {"type": "string"}, "iban": {"type": "string"}},
        "required": ["kind"],
        "if": {"properties": {"kind": {"const": "card"}}},
        "then": {"required": ["number"]},
        "else": {"required": ["iban"]},
        "additionalProperties": False,
    },
    "raw_objects": {
        "type": "object",
        "properties": {
            "meta": {
                "type": "object",
                "patternProperties": {"^x-": {"type": "string"}},
                "propertyNames": {"maxLength": 8},
                "additionalProperties": {"type": "integer"},
                "maxProperties": 3,
            },
            "a": {"type": "integer"},
            "b": {"type": "integer"},
        },
        "dependentRequired": {"a": ["b"]},
        "additionalProperties": False,
    },
    "raw_tree": {
        "type": "object",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["name"],
                "additionalProperties": False,
            }
        },
        "properties": {"root": {"$ref": "#/$defs/node"}},
        "required": ["root"],
        "additionalProperties": False,
    },
    "raw_open": {"type": "object"},
    "raw_unevaluated": {
        "type": "object",
        "allOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"b": {"type": "boolean"}}}],
        "unevaluatedProperties": False,
    },
}


EXTRA_TYPED: list[Func[..., Any]] = [
    typed_dict, dataclass_param, timing, multiples, variadic, shelves, shades, short_text, address, wide_ints,
    json_map, nullable_bounded, number_or_text, unicode_pattern, keyword_parameters, keyword_shapes, decimals,
    bounded_decimal, blobs, int_keys, calendar,
]  # fmt: skip

SIGNATURE_MODELS: dict[str, type[BaseModel]] = {
    "sig_transfer": Transfer,
    "sig_aliased": Aliased,
    "sig_expression": Expression,
    "sig_inventory": Inventory,
    "sig_window": provider_corpus.Window,
    "sig_keywords": Keywords,
}


def typed_tools() -> list[Any]:
    """Every typed tool of the corpus: the provider corpus, the extra functions and the signatures."""
    signatures = [_SignatureTool(name, model) for name, model in SIGNATURE_MODELS.items()]
    return [*provider_corpus.CORPUS, *EXTRA_TYPED, *signatures]


def raw_tools() -> list[RawTool]:
    """Every hand-written-schema tool of the corpus."""
    return [RawTool(name, schema) for name, schema in RAW_SCHEMAS.items()]


def all_bindings() -> dict[str, Binding]:
    """A fresh binding of every corpus tool, by name."""
    return {tool.definition().name: bind(tool) for tool in [*typed_tools(), *raw_tools()]}


def parameters_of(tool: Any) -> tuple[dict[str, Any], set[str]] | None:
    """A typed tool's input as (member name -> annotation, required names); None for raw tools.

    A `Func` whose only parameter is a model takes that model's members; a `Signature` tool likewise.
    """
    if isinstance(tool, _SignatureTool):
        return _model_members(tool.signature.input_type)
    if not isinstance(tool, Func):
        return None
    hints = typing.get_type_hints(tool.__wrapped__, include_extras=True)  # type: ignore[attr-defined]
    hints.pop("return", None)
    defaults = {
        name: parameter.default
        for name, parameter in inspect.signature(tool.__wrapped__).parameters.items()  # type: ignore[attr-defined]
    }
    if len(hints) == 1:
        (only,) = hints.values()
        if isinstance(only, type) and issubclass(only, BaseModel) and defaults[next(iter(hints))] is _EMPTY:
            return _model_members(only)
    required = {name for name in hints if defaults[name] is _EMPTY}
    return hints, required


_EMPTY = inspect.Parameter.empty


def _model_members(model: type[BaseModel]) -> tuple[dict[str, Any], set[str]]:
    members: dict[str, Any] = {}
    required: set[str] = set()
    for name, field in model.model_fields.items():
        key = field.alias or name
        members[key] = Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
        if field.is_required():
            required.add(key)
    return members, required


__all__ = ["RawTool", "all_bindings", "parameters_of", "raw_tools", "typed_tools"]
