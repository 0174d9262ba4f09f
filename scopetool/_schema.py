"""Schema work done once, at bind: strict core schemas, their JSON Schema, and a member counter.

One pydantic core schema owns each typed input. `strict_core_schema` turns it strict everywhere
(no coercion, unknown members forbidden, no NaN or infinity); the validator and the advertised JSON
Schema are both built from that one transformed schema, so what is advertised is what is enforced.

`member_counter` builds, from the same schema, a function that counts how many JSON object members
the decoded value was built from, without walking the raw bytes. The admission path compares it with
the number of ``:`` bytes in the raw document: when they are equal no object can have held a
duplicate member, and the full duplicate-key parse is skipped (see `Contract.prepare`). When there are
more ``:`` than members, `string_colons` counts the ``:`` inside the value's verbatim strings, which
may account for the rest.

`compile_schema` compiles the hand-written JSON Schemas (a tool's own input or output schema, an
input request's response schema) with jsonschema-rs.
"""

from __future__ import annotations

import itertools
import linecache
import math
import operator
from collections.abc import Callable, Hashable, Iterable, Iterator
from decimal import Decimal
from typing import Any, Final, TypeGuard, cast, final

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from ._json import is_array, is_object

__all__ = [
    "NON_FINITE",
    "STRICT_CONFIG",
    "MemberCounter",
    "compile_schema",
    "core_schema_nodes",
    "decimal_pattern",
    "exact_core_schema",
    "fail_fast_core_schema",
    "is_dict",
    "json_schema_of",
    "map_core_schema",
    "member_counter",
    "string_colons",
    "strict_core_schema",
]

is_dict: Final = cast("Callable[[object], TypeGuard[dict[Any, Any]]]", dict.__instancecheck__)
"""``isinstance(value, dict)``, typed for core-schema nodes and decoded values, whose keys need not be str
(a tagged union's tags, a ``dict[int, ...]`` field). Like `is_object`, it costs what ``isinstance`` does."""

STRICT_CONFIG: Final = core_schema.CoreConfig(strict=True, extra_fields_behavior="forbid", allow_inf_nan=False)
"""The configuration every admitting validator runs with."""

_OBJECT_SCHEMAS: Final = frozenset({"model-fields", "typed-dict", "dataclass-args"})
_CONFIGURED: Final = frozenset({"model", "typed-dict", "dataclass"})

MemberCounter = Callable[[Any], int]
"""Counts the JSON object members a decoded value was built from (never more than there were)."""


def strict_core_schema(schema: CoreSchema) -> CoreSchema:
    """A copy of `schema` made strict at every level: strict types, extra members forbidden, finite floats."""
    return cast(CoreSchema, map_core_schema(schema, _strict))


def _strict(node: dict[str, Any]) -> dict[str, Any]:
    kind = node.get("type")
    if kind in _OBJECT_SCHEMAS:
        node["extra_behavior"] = "forbid"
    if kind in _CONFIGURED:
        node["config"] = {**node.get("config", {}), **STRICT_CONFIG}
    if kind == "float":
        node["allow_inf_nan"] = False
    return node


def exact_core_schema(schema: CoreSchema) -> CoreSchema:
    """A copy of a strict schema that admits exactly what its JSON Schema advertises, where pydantic is laxer.

    Sets refuse repeated items (pydantic would drop them; the schema says ``uniqueItems``), integer
    ``Literal``s and ``IntEnum``s refuse booleans and ``1.0`` (pydantic compares them equal), and a
    ``Decimal`` given as a string must match the advertised `decimal_pattern`, and so must a number or
    boolean member name of a dict its propertyNames (pydantic would also take white space, ``_`` between
    digits, non-ASCII digits, ``yes``, which no pattern of the schema says). Only the
    validator uses this copy; the advertised JSON Schema comes from the strict one. Classes that bring a
    prebuilt validator (nested pydantic models) keep theirs, so their fields are not tightened.
    """
    return cast(CoreSchema, map_core_schema(schema, _exact))


def _exact(node: dict[str, Any]) -> dict[str, Any]:
    kind = node.get("type")
    if kind in ("set", "frozenset"):
        items = {"type": "list", "items_schema": node.get("items_schema", {"type": "any"}), "strict": True}
        items.update({key: node[key] for key in ("min_length", "max_length") if key in node})
        unique = _unique_set if kind == "set" else _unique_frozenset
        return cast("dict[str, Any]", core_schema.no_info_after_validator_function(unique, cast(CoreSchema, items)))
    expected = node.get("expected")
    if kind == "literal" and expected and all(type(value) is int for value in expected):
        return cast(
            "dict[str, Any]",
            core_schema.no_info_after_validator_function(_one_of(expected), core_schema.int_schema(strict=True)),
        )
    if kind == "decimal":
        return _spelled_decimal(node)
    keys = node.get("keys_schema")
    if kind == "dict" and keys is not None and keys.get("type") in _NAME_READERS:
        # pydantic reads a number or boolean member name as lax text (" 1", "+1", "1_0", "yes"); the
        # schema's propertyNames (`_member_names`) says the plain JSON spelling, and so does this copy.
        pattern, read, error = _NAME_READERS[keys["type"]]
        spelled = core_schema.chain_schema(
            [
                core_schema.custom_error_schema(
                    core_schema.str_schema(pattern=pattern, strict=True), custom_error_type=error
                ),
                core_schema.no_info_plain_validator_function(read),
                keys,
            ]
        )
        return {**node, "keys_schema": spelled}
    if kind == "enum" and node.get("sub_type") == "int":
        return cast(
            "dict[str, Any]",
            core_schema.no_info_after_validator_function(_member_of(node["cls"]), core_schema.int_schema(strict=True)),
        )
    return node


# Where a core schema node holds other nodes: one, or a list (``arguments_schema`` is a list of
# parameters in an arguments schema and one schema in a call schema; ``definitions``, ``steps`` and
# ``computed_fields`` are lists), besides the name-keyed maps and lists of ``fields`` (a dataclass's
# ``fields`` names them as str) and a union's ``choices``. Every other member (``default``, ``expected``,
# ``metadata``, ``cls``, ``config``, ``serialization``...) is data, never walked: a field or a default
# may be named or shaped like a schema keyword (``{"type": "float"}``) without being one.
_SCHEMA_MEMBERS: Final = frozenset(
    {
        "schema", "items_schema", "keys_schema", "values_schema", "extras_schema", "extras_keys_schema",
        "strict_schema", "lax_schema", "json_schema", "python_schema", "return_schema", "var_args_schema",
        "var_kwargs_schema", "json_schema_input_schema", "arguments_schema", "definitions", "steps",
        "computed_fields",
    }
)  # fmt: skip


def map_core_schema(schema: Any, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """A copy of a core schema with `change` applied to a fresh copy of every node, innermost first.

    Only the members that hold nodes are walked (see `core_schema_nodes`), so data such as a default
    value or a field named ``type`` is copied as it is.
    """
    copy = dict(schema)
    for key, value in schema.items():
        if key in _SCHEMA_MEMBERS:
            copy[key] = (
                [map_core_schema(item, change) for item in value] if is_array(value) else map_core_schema(value, change)
            )
        elif key == "fields":
            if is_dict(value):
                copy[key] = {name: map_core_schema(field, change) for name, field in value.items()}
            elif is_array(value):
                copy[key] = [map_core_schema(field, change) if is_dict(field) else field for field in value]
        elif key == "choices":
            if is_dict(value):  # a tagged union's, keyed by tag (a tag may be any value, "type" too)
                copy[key] = {tag: map_core_schema(choice, change) for tag, choice in value.items()}
            else:  # a union's: schemas, or (schema, label) pairs
                copy[key] = [
                    (map_core_schema(choice[0], change), choice[1])
                    if isinstance(choice, tuple)
                    else map_core_schema(choice, change)
                    for choice in value
                ]
    return change(copy)


def core_schema_nodes(schema: Any) -> Iterator[dict[str, Any]]:
    """Every node of a core schema (schemas, fields, parameters), outermost first; data is not entered."""
    yield schema
    for key, value in schema.items():
        if key in _SCHEMA_MEMBERS:
            for item in value if is_array(value) else (value,):
                yield from core_schema_nodes(item)
        elif key == "fields":
            for field in value.values() if is_dict(value) else value:
                if is_dict(field):
                    yield from core_schema_nodes(field)
        elif key == "choices":
            for choice in value.values() if is_dict(value) else value:
                yield from core_schema_nodes(choice[0] if isinstance(choice, tuple) else choice)


def decimal_pattern(schema: core_schema.DecimalSchema) -> str:
    """The pattern a `Decimal` given as a JSON string must match: advertised and enforced alike.

    It is pydantic's own validation pattern (the `Decimal` constructor's syntax, digits counted against
    ``max_digits`` and ``decimal_places``), without NaN and infinity. Under a digit constraint, numbers
    with an exponent are left out: their digits no pattern can count.
    """
    pattern = _PATTERNS.build_decimal_pattern({**schema, "allow_inf_nan": False})
    if schema.get("max_digits") is not None or schema.get("decimal_places") is not None:
        pattern = pattern.replace(_EXPONENT_CHOICE, "")
    return pattern


_PATTERNS: Final = GenerateJsonSchema()
INTEGER_NAME_PATTERN: Final = "^-?(?:0|[1-9][0-9]*)$"
"""The member names an ``int``-keyed dict takes: integers as JSON writes them (advertised as propertyNames)."""
NUMBER_NAME_PATTERN: Final = r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$"
"""The member names a ``float``-keyed dict takes: numbers as JSON writes them."""


def _float_name(text: str) -> float:
    """A float member name's value, refused (as a float member would be) when not finite or an integer it changes."""
    value = float(text)
    if value - value != 0:
        raise PydanticCustomError("finite_number", "Input should be a finite number")
    if text.lstrip("-").isdigit() and int(text) != value:
        raise PydanticCustomError(
            "float_parsing", "Input should be an integer a double holds exactly (at most 2**53 in magnitude)"
        )
    return value


def _bool_name(text: str) -> bool:
    return text == "true"


_NAME_READERS: Final[dict[str, tuple[str, Callable[[str], Any], str]]] = {
    "int": (INTEGER_NAME_PATTERN, int, "int_parsing"),
    "float": (NUMBER_NAME_PATTERN, _float_name, "float_parsing"),
    "bool": ("^(?:true|false)$", _bool_name, "bool_parsing"),
}


def _member_names(keys: Any) -> dict[str, Any] | None:
    """The propertyNames a dict keyed by `keys` advertises, when its keys are numbers or booleans."""
    kind = keys.get("type")
    if kind == "decimal":
        return {"pattern": decimal_pattern(keys)}
    if kind in _NAME_READERS:
        return {"pattern": _NAME_READERS[kind][0]}
    return None


_EXPONENT_CHOICE: Final = r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]+"


def _spelled_decimal(node: dict[str, Any]) -> dict[str, Any]:
    """A decimal that takes JSON numbers as they are and strings only when they match `decimal_pattern`."""
    text = core_schema.chain_schema(
        [
            core_schema.custom_error_schema(
                core_schema.str_schema(pattern=decimal_pattern(cast(core_schema.DecimalSchema, node)), strict=True),
                custom_error_type="decimal_parsing",
            ),
            core_schema.no_info_plain_validator_function(Decimal),
            cast(CoreSchema, node),
        ]
    )
    # Chosen by the class of the JSON value (``type`` is a C call, no Python frame): a string goes
    # through the pattern, a number to the decimal as it is; anything else is no decimal.
    number = cast(CoreSchema, node)
    choices: dict[Hashable, CoreSchema] = {str: text, int: number, float: number}
    return cast(
        "dict[str, Any]",
        core_schema.tagged_union_schema(choices, discriminator=type, custom_error_type="decimal_type"),
    )


_CONTAINERS: Final = frozenset({"list", "tuple", "set", "frozenset", "dict", "deque"})


def fail_fast_core_schema(schema: CoreSchema) -> CoreSchema:
    """A copy of `schema` whose arrays and maps stop at their first bad item (pydantic-core's ``fail_fast``).

    It admits exactly what `schema` admits; only a rejection costs less: a 1 MiB array of wrong items
    yields one error instead of one per item. Classes that bring a prebuilt validator (pydantic models)
    keep theirs, so their own fields are not bounded this way unless they ask for it
    (``Field(fail_fast=True)``); a rejection reads at most `MAX_DESCRIBED` of their errors one by one.
    """
    return cast(CoreSchema, map_core_schema(schema, _fail_fast))


def _fail_fast(node: dict[str, Any]) -> dict[str, Any]:
    if node.get("type") in _CONTAINERS:
        node["fail_fast"] = True  # `map_core_schema` hands over a fresh copy
    return node


def _unique_set(items: list[Any]) -> set[Any]:
    found = set(items)
    if len(found) != len(items):
        raise PydanticCustomError("set_unique", "Items should be unique")
    return found


def _unique_frozenset(items: list[Any]) -> frozenset[Any]:
    return frozenset(_unique_set(items))


def _one_of(expected: list[int]) -> Callable[[int], int]:
    allowed = frozenset(expected)
    shown = ", ".join(str(value) for value in expected)

    def check(value: int) -> int:
        if value not in allowed:
            raise PydanticCustomError("literal_error", "Input should be one of {expected}", {"expected": shown})
        return value

    return check


def _member_of(cls: Any) -> Callable[[int], Any]:
    shown = ", ".join(str(member.value) for member in cls)

    def convert(value: int) -> Any:
        try:
            return cls(value)
        except ValueError:
            raise PydanticCustomError("enum", "Input should be one of {expected}", {"expected": shown}) from None

    return convert


class _Generator(GenerateJsonSchema):
    """JSON Schema for tools: closed objects and no generated titles (they only cost the model tokens)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def get_decimal_pattern(self, schema: core_schema.DecimalSchema) -> str:
        return decimal_pattern(schema)

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        value = super().dict_schema(schema)
        names = _member_names(schema.get("keys_schema", {}))
        if names is not None and "propertyNames" not in value:
            value["propertyNames"] = names
        return value

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        value = super().model_schema(schema)
        if value.get("type") == "object":
            value["additionalProperties"] = False
        return value

    def typed_dict_schema(self, schema: core_schema.TypedDictSchema) -> JsonSchemaValue:
        value = super().typed_dict_schema(schema)
        value["additionalProperties"] = False
        return value


def json_schema_of(schema: CoreSchema, *, mode: JsonSchemaMode = "validation") -> dict[str, Any]:
    """The JSON Schema (2020-12) that pydantic derives from `schema`, closed and without the root title."""
    value = _Generator(ref_template="#/$defs/{model}").generate(schema, mode=mode)
    ref = value.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and set(value) <= {"$ref", "$defs"}:
        # A recursive model's root is a reference; the root itself must be the object schema, so it is
        # inlined (its definition stays for the recursion).
        value = {**value["$defs"][ref.removeprefix("#/$defs/")], "$defs": value["$defs"]}
    value.pop("title", None)
    return value


def member_counter(schema: CoreSchema) -> MemberCounter | None:
    """A counter for values validated by `schema`, or None when it cannot be sound.

    None means the schema lets a value hide members: a validator that rewrites input, a dataclass, a
    model with post-init hooks, two fields reading one member. The counter is generated as straight-line
    Python once, at bind, because it runs on every admission.
    """
    planner = _Planner()
    try:
        plan = planner.plan(schema)
    except _UnsoundError:
        return None
    if plan == _FLAT:
        return len  # an object of scalar members: its own length is its member count
    return _compile(plan, planner.refs)


def string_colons(schema: CoreSchema) -> MemberCounter | None:
    r"""A counter of the ``:`` in the strings of a value validated by `schema` that came verbatim from JSON.

    It never counts more than the JSON's strings held (written as ``:`` or escaped as ``\u003a``): it
    skips every string a validator may have rewritten, every default, and every value decoded from a
    string into something else (a date, an enum). So when a document's ``:`` bytes, plus its escaped
    ``:``, are no more than the members counted plus these, every ``:`` outside the members is inside a
    string, and no object held a name twice (see `Contract.prepare`). None when it cannot be sound.
    """
    planner = _Planner(strings=True)
    try:
        plan = planner.plan(schema)
    except _UnsoundError:
        return None
    return _compile(plan, planner.refs)


class _UnsoundError(Exception):
    pass


# The plan is a small tree of tuples: ("zero",), ("finite",), ("any",), ("nullable", p),
# ("seq", p), ("tuple", [p...]), ("dict", p), ("typed", [(key, p)...]),
# ("model", [(attr, p)...], in_bulk), ("union", [(cls, p)...]) and ("ref", name) for recursive
# definitions; `in_bulk` says a list of the model can be counted without visiting each item. A plan of
# ":" in strings has ("str",), ("strings",) for an unconstrained value, ("keyed", keys, p) for a dict
# (whose names count when they are JSON names), and ("typed-strings", ...) and ("model-strings", ...),
# which visit their fields without counting members.
Plan = tuple[Any, ...]
_ZERO: Final[Plan] = ("zero",)
_FLAT: Final[Plan] = ("typed", [])
_FINITE: Final[Plan] = ("finite",)
_STR: Final[Plan] = ("str",)
_COUNTERS: Final = itertools.count()
# What `_count_any` counts exactly: no members, members of unconstrained values, or a map of them.
_COUNTED_AS_ANY: Final = frozenset({_ZERO, ("any",), ("dict", ("any",)), ("dict", _ZERO)})


class _Planner:
    """Plans a member counter or, with ``strings=True``, a counter of ``:`` in verbatim strings."""

    def __init__(self, *, strings: bool = False) -> None:
        self.definitions: dict[str, Any] = {}
        self.refs: dict[str, Plan | None] = {}
        self.strings = strings

    def plan(self, schema: Any) -> Plan:
        kind = schema["type"]
        if kind == "float":
            # Every float is checked: a prebuilt model may let infinity through, and an integer literal
            # a double cannot hold exactly changes on its way into a float.
            return _ZERO if self.strings else _FINITE
        if kind == "enum" and schema.get("sub_type") == "float":
            # A float enum's member is looked up from the float an integer literal became (and is no
            # float the counter's check sees): no count vouches for it, so the full checks compare.
            raise _UnsoundError
        if kind == "str" and self.strings:
            return _STR
        if kind in _TIMES_AND_URLS and self.strings:
            # Parsed from text that usually holds ":" the value no longer shows: a document with one would
            # only pay for a count that cannot settle anything, before the full parse.
            raise _UnsoundError
        if kind in _SCALARS:
            return _ZERO
        if kind == "definitions":
            for definition in schema["definitions"]:
                self.definitions[definition["ref"]] = definition
            return self.plan(schema["schema"])
        if kind == "definition-ref":
            return self._ref(schema["schema_ref"])
        if kind in ("default", "custom-error"):
            return self.plan(schema["schema"])
        if kind == "nullable":
            inner = self.plan(schema["schema"])
            return _ZERO if inner == _ZERO else ("nullable", inner)
        if kind == "chain":
            # Later steps only convert what the first one read (a decimal's string): no members, and
            # no verbatim string, unless the first step holds more.
            if self.plan(schema["steps"][0]) in (_ZERO, _STR):
                return _ZERO
            raise _UnsoundError
        if kind == "lax-or-strict":
            return self.plan(schema["strict_schema"])
        if kind == "json-or-python":
            return self.plan(schema["json_schema"])
        if kind == "function-after":
            if self.strings:
                return _ZERO  # the function may have rewritten the strings: none of them is counted
            if self.plan(schema["schema"]) == _ZERO:
                return _ZERO
            raise _UnsoundError
        if kind in ("list", "set", "frozenset"):
            item = self.plan(schema.get("items_schema", {"type": "any"}))
            return _ZERO if item == _ZERO else ("seq", item)
        if kind == "tuple":
            if schema.get("variadic_item_index") is not None:
                if len(schema["items_schema"]) == 1:
                    item = self.plan(schema["items_schema"][0])
                else:  # items of several schemas: members of any of them; strings of none
                    plans = [self.plan(s) for s in schema["items_schema"]]
                    if not self.strings and not all(p in _COUNTED_AS_ANY for p in plans):
                        raise _UnsoundError  # a float (or a model) among them: counting as JSON would miss it
                    item = _ZERO if self.strings else ("any",)
                return _ZERO if item == _ZERO else ("seq", item)
            items = [self.plan(s) for s in schema["items_schema"]]
            return _ZERO if all(p == _ZERO for p in items) else ("tuple", items)
        if kind == "dict":
            values = self.plan(schema.get("values_schema", {"type": "any"}))
            if not self.strings:
                return ("dict", values)
            keys = schema.get("keys_schema", {"type": "any"})["type"] in ("str", "any")  # a JSON name, verbatim
            return _ZERO if not keys and values == _ZERO else ("keyed", keys, values)
        if kind == "any":
            return ("strings",) if self.strings else ("any",)
        if kind == "model":
            return self._model(schema)
        if kind == "typed-dict":
            return self._typed_dict(schema)
        if kind in ("union", "tagged-union"):
            return self._union(schema)
        raise _UnsoundError

    def _ref(self, ref: str) -> Plan:
        key = f"{ref}|"  # the "|" keeps definition keys apart from the generated function names
        name = f"r{len(self.refs)}" if key not in self.refs else None
        if name is None:
            known = self.refs[key]
            if known is None:
                raise _UnsoundError
            return ("ref", known[1])
        self.refs[key] = ("ref", name)  # recursion refers to the function being planned
        self.refs[name] = self.plan(self.definitions[ref])
        return ("ref", name)

    def _model(self, schema: Any) -> Plan:
        if schema.get("post_init") or schema.get("custom_init") or schema.get("root_model"):
            raise _UnsoundError
        fields_schema = schema["schema"]
        if fields_schema["type"] != "model-fields" or fields_schema.get("computed_fields"):
            raise _UnsoundError
        _one_member_per_field(fields_schema["fields"], schema.get("config", {}))
        nested = [
            (name, plan)
            for name, field in fields_schema["fields"].items()
            if (plan := self.plan(field["schema"])) != _ZERO
        ]
        if self.strings:
            return ("model-strings", nested) if nested else _ZERO
        # A list of these models is counted in C when its only nested checks are of float fields that
        # always hold a number, whether the JSON gave them or their default stands.
        in_bulk = all(
            plan == _FINITE and _holds_a_number(fields_schema["fields"][name]["schema"]) for name, plan in nested
        )
        return ("model", nested, in_bulk)

    def _typed_dict(self, schema: Any) -> Plan:
        _one_member_per_field(schema["fields"], schema.get("config", {}))
        nested: list[tuple[str, Plan]] = []
        for name, field in schema["fields"].items():
            if field["schema"]["type"] == "default":
                raise _UnsoundError  # a default fills a key the JSON did not hold
            plan = self.plan(field["schema"])
            if plan != _ZERO:
                nested.append((name, plan))
        if self.strings:
            return ("typed-strings", nested) if nested else _ZERO
        return ("typed", nested)

    def _union(self, schema: Any) -> Plan:
        raw_choices = schema["choices"]  # a union's list, or a tagged union's dict keyed by tag
        choices: Iterable[CoreSchema | tuple[CoreSchema, str]] = (
            cast("dict[Hashable, CoreSchema]", raw_choices).values() if is_dict(raw_choices) else raw_choices
        )
        plans: list[tuple[type, Plan]] = []
        for choice in choices:
            choice_schema = choice[0] if isinstance(choice, tuple) else choice
            plan = self.plan(choice_schema)
            if plan == _ZERO:
                continue
            key = _runtime_type(choice_schema, self.definitions)
            if key is None or any(key is known for known, _ in plans):
                raise _UnsoundError
            plans.append((key, plan))
        return ("union", plans) if plans else _ZERO


def _compile(plan: Plan, refs: dict[str, Plan | None]) -> MemberCounter:
    """Generate the counter as Python source and compile it once."""
    namespace: dict[str, Any] = {
        "_count_any": _count_any,
        "_colons_any": _colons_any,
        "NON_FINITE": NON_FINITE,
        "EXACT": EXACT_INTEGERS,
        "_sum": sum,
        "_map": map,
        "_len": len,
        "_abs": abs,
        "_FIELDS_SET": operator.attrgetter("__pydantic_fields_set__"),
    }
    lines: list[str] = []
    for name, body in refs.items():
        if name.startswith("r") and "|" not in name and body is not None:
            _function(name, body, lines, namespace)
    _function("count", plan, lines, namespace)
    source = "\n".join(lines) + "\n"
    filename = f"<scopetool member counter {next(_COUNTERS)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)  # readable tracebacks
    exec(compile(source, filename, "exec"), namespace)
    return namespace["count"]  # type: ignore[no-any-return]


def _function(name: str, plan: Plan, lines: list[str], namespace: dict[str, Any]) -> None:
    lines.append(f"def {name}(v0):")
    lines.append("    n = 0")
    _Emitter(lines, namespace).emit(plan, "v0", 1)
    lines.append("    return n")


class _Emitter:
    """Writes the statements that add a value's members to ``n``."""

    def __init__(self, lines: list[str], namespace: dict[str, Any]) -> None:
        self.lines = lines
        self.namespace = namespace
        self.names = 0

    def fresh(self) -> str:
        self.names += 1
        return f"v{self.names}"

    def emit(self, plan: Plan, value: str, depth: int) -> None:
        pad = "    " * depth
        kind = plan[0]
        if kind == "zero":
            return
        if kind == "finite":
            self.lines.append(
                f"{pad}if {value}.__class__ is float and ({value} - {value} != 0 or not -EXACT < {value} < EXACT):"
                " n += NON_FINITE"
            )
        elif kind == "any":
            self.lines.append(f"{pad}n += _count_any({value})")
        elif kind == "str":
            self.lines.append(f"{pad}n += {value}.count(':')")
        elif kind == "strings":
            self.lines.append(f"{pad}n += _colons_any({value})")
        elif kind == "keyed":
            key, item = self.fresh(), self.fresh()
            self.lines.append(f"{pad}for {key}, {item} in {value}.items():")
            if plan[1]:
                self.lines.append(f"{pad}    n += {key}.count(':')")
            self.emit(plan[2], item, depth + 1)
        elif kind == "ref":
            self.lines.append(f"{pad}n += {plan[1]}({value})")
        elif kind == "nullable":
            self.lines.append(f"{pad}if {value} is not None:")
            self.emit(plan[1], value, depth + 1)
        elif kind == "seq" and plan[1] == _FINITE:
            self.lines.append(f"{pad}if not _sum(_map(_abs, {value})) < EXACT: n += NON_FINITE")
        elif kind == "seq" and plan[1][0] == "model" and plan[1][2]:
            # Models of scalar and float fields, counted in C (map and sum) rather than item by item.
            # Float fields are checked whether or not the JSON gave them: a default is a number, and a
            # default that is not finite only sends the document to the full checks.
            self.lines.append(f"{pad}n += _sum(_map(_len, _map(_FIELDS_SET, {value})))")
            for attr, _ in plan[1][1]:
                getter = f"g{len(self.namespace)}"
                self.namespace[getter] = operator.attrgetter(attr)
                self.lines.append(f"{pad}if not _sum(_map(_abs, _map({getter}, {value}))) < EXACT: n += NON_FINITE")
        elif kind == "seq":
            item = self.fresh()
            self.lines.append(f"{pad}for {item} in {value}:")
            self.emit(plan[1], item, depth + 1)
        elif kind == "tuple":
            for index, item_plan in enumerate(plan[1]):
                if item_plan != _ZERO:
                    item = self.fresh()
                    self.lines.append(f"{pad}if len({value}) > {index}:")
                    self.lines.append(f"{pad}    {item} = {value}[{index}]")
                    self.emit(item_plan, item, depth + 1)
        elif kind == "dict":
            self.lines.append(f"{pad}n += len({value})")
            if plan[1] != _ZERO:
                item = self.fresh()
                self.lines.append(f"{pad}for {item} in {value}.values():")
                self.emit(plan[1], item, depth + 1)
        elif kind in ("typed", "typed-strings"):
            if kind == "typed":
                self.lines.append(f"{pad}n += len({value})")
            for key, field_plan in plan[1]:
                item = self.fresh()
                self.lines.append(f"{pad}{item} = {value}.get({key!r}, None)")
                self.lines.append(f"{pad}if {item} is not None:")
                self.emit(field_plan, item, depth + 1)
        elif kind in ("model", "model-strings"):
            # `__pydantic_fields_set__` is what the public `model_fields_set` returns, read without the
            # property call; only members the JSON gave are counted, never defaults.
            provided = self.fresh()
            self.lines.append(f"{pad}{provided} = {value}.__pydantic_fields_set__")
            if kind == "model":
                self.lines.append(f"{pad}n += len({provided})")
            for attr, field_plan in plan[1]:
                item = self.fresh()
                self.lines.append(f"{pad}if {attr!r} in {provided}:")
                self.lines.append(f"{pad}    {item} = {value}.{attr}")
                self.emit(field_plan, item, depth + 1)
        elif kind == "union":
            for index, (cls, choice_plan) in enumerate(plan[1]):
                alias = f"c{len(self.namespace)}"
                self.namespace[alias] = cls
                keyword = "if" if index == 0 else "elif"
                self.lines.append(f"{pad}{keyword} isinstance({value}, {alias}):")
                self.emit(choice_plan, value, depth + 1)


def _holds_a_number(field: Any) -> bool:
    """Whether a float field's value is always a number: it is required, or its default is one."""
    if field["type"] != "default":
        return True
    return "default" in field and type(field["default"]) in (int, float)


def _runtime_type(schema: Any, definitions: dict[str, Any]) -> type | None:
    """The Python type a union choice decodes to, when one type identifies it."""
    kind = schema["type"]
    if kind == "definition-ref":
        return _runtime_type(definitions[schema["schema_ref"]], definitions)
    if kind in ("nullable", "default"):
        return _runtime_type(schema["schema"], definitions)
    if kind == "model":
        return cast(type, schema["cls"])
    if kind in ("typed-dict", "dict"):
        return dict
    if kind == "list":
        return list
    if kind == "str":
        return str
    if kind == "tuple":
        return tuple
    return None


EXACT_INTEGERS: Final = 9007199254740992.0
"""2**53: past it a double no longer holds every integer, so a float there may stand for a changed integer."""

NON_FINITE: Final = -(1 << 62)
"""What a counter adds for a non-finite float, or one beyond 2**53: it drives the count below the ":"
bytes of any document, so admission runs the full checks, which look at the number's own literal."""


def _count_any(value: Any) -> int:
    if is_dict(value):
        return len(value) + sum(map(_count_any, value.values()))
    if is_array(value):
        return sum(map(_count_any, value))
    if value.__class__ is float and value - value != 0:
        return NON_FINITE
    return 0


def _colons_any(value: Any) -> int:
    """The ``:`` in the strings of an unconstrained value, member names included."""
    if is_dict(value):
        return sum(key.count(":") + _colons_any(member) for key, member in value.items())
    if is_array(value):
        return sum(map(_colons_any, value))
    if value.__class__ is str:
        return value.count(":")
    return 0


def _one_member_per_field(fields: dict[str, Any], config: dict[str, Any]) -> None:
    """Counting provided fields counts members only if no two fields can read the same member."""
    keys: list[str] = []
    by_name = bool(config.get("validate_by_name") or config.get("populate_by_name"))
    for name, field in fields.items():
        alias = field.get("validation_alias")
        if alias is not None and not isinstance(alias, str):
            raise _UnsoundError  # AliasPath / AliasChoices: one field, several members
        keys.append(alias or name)
        if by_name and alias:
            keys.append(name)
    if len(keys) != len(set(keys)):
        raise _UnsoundError


_TIMES_AND_URLS: Final = frozenset({"datetime", "time", "timedelta", "url", "multi-host-url"})
_SCALARS: Final = frozenset(
    {
        "none", "bool", "int", "float", "decimal", "str", "bytes", "date", "time", "datetime", "timedelta",
        "literal", "enum", "uuid", "url", "multi-host-url", "complex", "json", "missing-sentinel",
    }
)  # fmt: skip


# -- JSON Schemas compiled with jsonschema-rs (hand-written input, output and response schemas)


def compile_schema(schema: Any, what: str, error: type[Exception], *, eager: bool = False) -> Any:
    """Compile a hand-written JSON Schema with jsonschema-rs: formats asserted, no remote `$ref` loading.

    A schema of the plain keywords alone (`_plainly_valid`: what pydantic writes for scalars, lists and
    flat objects) cannot fail to compile, so it is compiled when first used instead (jsonschema-rs is
    not even imported for a tool that returns an int); any other is compiled now, and refused here.
    `eager` compiles every schema now: for a validator used on every call, whose first use is at hand
    (the deferred one reads each method through a Python call).
    """
    if not eager and _plainly_valid(schema, 0):
        return _CompiledOnFirstUse(schema)
    return _compiled(schema, what, error)


def _compiled(schema: Any, what: str, error: type[Exception]) -> Any:
    import jsonschema_rs  # noqa: PLC0415 - only hand-written schemas and output schemas need it

    try:
        return jsonschema_rs.validator_for(schema, validate_formats=True, offline=True)
    except (jsonschema_rs.ValidationError, ValueError, TypeError) as problem:
        first = str(problem).splitlines()[0] if str(problem) else type(problem).__name__
        raise error(f"{what}: not a valid JSON Schema: {first}") from None


@final
class _CompiledOnFirstUse:
    """A jsonschema-rs validator of a schema known to compile, compiled when one of its methods is first read.

    Two threads reading at once may both compile it; either validator is the same.
    """

    __slots__ = ("_schema", "_validator")

    def __init__(self, schema: Any) -> None:
        self._schema = schema
        self._validator: Any = None

    def __getattr__(self, name: str) -> Any:  # is_valid, iter_errors, validate: the validator's own
        validator = self._validator
        if validator is None:
            validator = self._validator = _compiled(self._schema, "schema", ValueError)
        return getattr(validator, name)


_TYPES: Final = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_TEXTS: Final = frozenset({"title", "description"})
_BOUNDS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COUNTS: Final = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
_SUBSCHEMAS: Final = frozenset({"items", "additionalProperties"})
_DEFAULT_SCALARS: Final = (str, int, bool, type(None))
_DEEPEST: Final = 32


def _plainly_valid(schema: Any, depth: int) -> bool:
    """Whether `schema` uses only keywords whose values are checked here to be as the metaschema wants.

    No ``$ref``, ``pattern`` or ``format`` (what can fail beyond the metaschema): such a schema always
    compiles. Anything else answers False and is compiled at once.
    """
    if schema is True or schema is False:
        return True
    if not is_object(schema) or depth > _DEEPEST:
        return False
    for key, value in schema.items():
        if key == "type":
            kinds = value if is_array(value) else [value]
            if not kinds or not all(kind.__class__ is str and kind in _TYPES for kind in kinds):
                return False
            if len(set(kinds)) != len(kinds):
                return False
        elif key in _TEXTS:
            if value.__class__ is not str:
                return False
        elif key in _BOUNDS:
            if value.__class__ not in (int, float) or not math.isfinite(value):
                return False
        elif key in _COUNTS:
            if value.__class__ is not int or value < 0:
                return False
        elif key in _SUBSCHEMAS:
            if not _plainly_valid(value, depth + 1):
                return False
        elif key == "properties":
            if not is_object(value) or not all(_plainly_valid(inner, depth + 1) for inner in value.values()):
                return False
        elif key == "required":
            if not is_array(value) or not all(name.__class__ is str for name in value):
                return False
            if len(set(value)) != len(value):
                return False
        elif key == "anyOf":
            if not is_array(value) or not value or not all(_plainly_valid(inner, depth + 1) for inner in value):
                return False
        elif key == "default":
            if value.__class__ not in _DEFAULT_SCALARS and not (value.__class__ is float and math.isfinite(value)):
                return False
        else:
            return False
    return True
