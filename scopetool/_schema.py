"""Schema work done once, at bind: strict core schemas, their JSON Schema, and a member counter.

One pydantic core schema owns each typed input. `strict_core_schema` turns it strict everywhere
(no coercion, unknown members forbidden, no NaN or infinity); the validator and the advertised JSON
Schema are both built from that one transformed schema, so what is advertised is what is enforced.

`member_counter` builds, from the same schema, a function that counts how many JSON object members
the decoded value was built from, without walking the raw bytes. The admission path compares it with
the number of ``:`` bytes in the raw document: when they are equal no object can have held a
duplicate member, and the full duplicate-key parse is skipped (see `Contract.prepare`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

__all__ = [
    "NON_FINITE",
    "STRICT_CONFIG",
    "MemberCounter",
    "json_schema_of",
    "member_counter",
    "strict_core_schema",
]

STRICT_CONFIG: Final = core_schema.CoreConfig(strict=True, extra_fields_behavior="forbid", allow_inf_nan=False)
"""The configuration every admitting validator runs with."""

_OBJECT_SCHEMAS: Final = frozenset({"model-fields", "typed-dict", "dataclass-args"})
_CONFIGURED: Final = frozenset({"model", "typed-dict", "dataclass"})

MemberCounter = Callable[[Any], int]
"""Counts the JSON object members a decoded value was built from (never more than there were)."""


def strict_core_schema(schema: CoreSchema) -> CoreSchema:
    """A copy of `schema` made strict at every level: strict types, extra members forbidden, finite floats."""
    return cast(CoreSchema, _strict(schema))


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    copy = {key: _strict(value) for key, value in node.items()}
    kind = copy.get("type")
    if kind in _OBJECT_SCHEMAS:
        copy["extra_behavior"] = "forbid"
    if kind in _CONFIGURED:
        copy["config"] = {**copy.get("config", {}), **STRICT_CONFIG}
    if kind == "float":
        copy["allow_inf_nan"] = False
    return copy


class _Generator(GenerateJsonSchema):
    """JSON Schema for tools: closed objects and no generated titles (they only cost the model tokens)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        value = super().model_schema(schema)
        if value.get("type") == "object":
            value["additionalProperties"] = False
        return value

    def typed_dict_schema(self, schema: core_schema.TypedDictSchema) -> JsonSchemaValue:
        value = super().typed_dict_schema(schema)
        value["additionalProperties"] = False
        return value


def json_schema_of(schema: CoreSchema, *, mode: str = "validation") -> dict[str, Any]:
    """The JSON Schema (2020-12) that pydantic derives from `schema`, closed and without the root title."""
    value = _Generator(ref_template="#/$defs/{model}").generate(schema, mode=mode)  # type: ignore[arg-type]
    ref = value.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and set(value) <= {"$ref", "$defs"}:
        # A recursive model's root is a reference; the root itself must be the object schema, so it is
        # inlined (its definition stays for the recursion).
        value = {**value["$defs"][ref.removeprefix("#/$defs/")], "$defs": value["$defs"]}
    value.pop("title", None)
    return value


def _zero(_: Any) -> int:
    return 0


def member_counter(schema: CoreSchema) -> MemberCounter | None:
    """A counter for values validated by `schema`, or None when it cannot be sound.

    None means the schema lets a value hide members: a validator that rewrites input, a dataclass, a
    model with post-init hooks.
    """
    plans: dict[str, MemberCounter | None] = {}
    counter = _Planner(plans).plan(schema)
    return counter


class _UnsoundError(Exception):
    pass


class _Planner:
    def __init__(self, refs: dict[str, MemberCounter | None]) -> None:
        self.refs = refs
        self.definitions: dict[str, Any] = {}
        # Inside a model whose own (prebuilt) configuration may let non-finite floats through, float
        # positions are checked: pydantic-core validates such a model with its own configuration.
        self.lax_floats = False

    def plan(self, schema: Any) -> MemberCounter | None:
        try:
            return self._plan(schema)
        except _UnsoundError:
            return None

    def _plan(self, schema: Any) -> MemberCounter:
        kind = schema["type"]
        if kind == "float":
            return _finite if self.lax_floats else _zero
        if kind in _SCALARS:
            return _zero
        if kind == "definitions":
            for definition in schema["definitions"]:
                self.definitions[definition["ref"]] = definition
            return self._plan(schema["schema"])
        if kind == "definition-ref":
            return self._ref(schema["schema_ref"])
        if kind in ("nullable", "default", "custom-error"):
            inner = self._plan(schema["schema"])
            if inner is _zero or kind != "nullable":
                return inner
            return lambda value: 0 if value is None else inner(value)
        if kind == "lax-or-strict":
            return self._plan(schema["strict_schema"])
        if kind == "json-or-python":
            return self._plan(schema["json_schema"])
        if kind == "function-after":
            if self._plan(schema["schema"]) is _zero:
                return _zero
            raise _UnsoundError
        if kind in ("list", "set", "frozenset"):
            item = self._plan(schema.get("items_schema", {"type": "any"}))
            if item is _zero:
                return _zero
            return lambda value: sum(map(item, value))
        if kind == "tuple":
            items = [self._plan(s) for s in schema["items_schema"]]
            if all(p is _zero for p in items):
                return _zero
            variadic = schema.get("variadic_item_index")
            if variadic is None:
                return lambda value: sum(p(v) for p, v in zip(items, value, strict=False))
            raise _UnsoundError
        if kind == "dict":
            values = self._plan(schema.get("values_schema", {"type": "any"}))
            if values is _zero:
                return len
            return lambda value: len(value) + sum(map(values, value.values()))
        if kind == "any":
            return _count_any
        if kind == "model":
            return self._model(schema)
        if kind == "typed-dict":
            return self._typed_dict(schema)
        if kind in ("union", "tagged-union"):
            return self._union(schema)
        raise _UnsoundError

    def _ref(self, ref: str) -> MemberCounter:
        key = f"{ref}|{self.lax_floats}"
        if key in self.refs:
            known = self.refs[key]
            if known is None:
                raise _UnsoundError
            return known
        self.refs[key] = lambda value: resolved(value)  # noqa: PLW0108 - recursion calls it before `resolved` exists
        resolved = self._plan(self.definitions[ref])
        self.refs[key] = resolved
        return resolved

    def _model(self, schema: Any) -> MemberCounter:
        if schema.get("post_init") or schema.get("custom_init") or schema.get("root_model"):
            raise _UnsoundError
        fields_schema = schema["schema"]
        if fields_schema["type"] != "model-fields" or fields_schema.get("computed_fields"):
            raise _UnsoundError
        _one_member_per_field(fields_schema["fields"], schema.get("config", {}))
        outer, self.lax_floats = self.lax_floats, schema["cls"].model_config.get("allow_inf_nan", True) is not False
        try:
            nested = [
                (name, plan)
                for name, field in fields_schema["fields"].items()
                if (plan := self._plan(field["schema"])) is not _zero
            ]
        finally:
            self.lax_floats = outer
        # `__pydantic_fields_set__` is what the public `model_fields_set` property returns, read
        # without the property call: this runs on the admission hot path.
        if not nested:
            return lambda value: len(value.__pydantic_fields_set__)

        def count(value: BaseModel) -> int:
            provided = value.__pydantic_fields_set__
            total = len(provided)
            for name, plan in nested:
                if name in provided:
                    total += plan(getattr(value, name))
            return total

        return count

    def _typed_dict(self, schema: Any) -> MemberCounter:
        _one_member_per_field(schema["fields"], schema.get("config", {}))
        nested = []
        for name, field in schema["fields"].items():
            if field["schema"]["type"] == "default":
                raise _UnsoundError  # a default fills a key the JSON did not hold
            plan = self._plan(field["schema"])
            if plan is not _zero:
                nested.append((name, plan))
        if not nested:
            return len

        def count(value: dict[str, Any]) -> int:
            total = len(value)
            for name, plan in nested:
                if name in value:
                    total += plan(value[name])
            return total

        return count

    def _union(self, schema: Any) -> MemberCounter:
        raw_choices = schema["choices"]
        choices = raw_choices.values() if isinstance(raw_choices, dict) else raw_choices
        plans: dict[type, MemberCounter] = {}
        for choice in choices:
            choice_schema = choice[0] if isinstance(choice, tuple) else choice
            plan = self._plan(choice_schema)
            if plan is _zero:
                continue
            key = _runtime_type(choice_schema, self.definitions)
            if key is None or key in plans:
                raise _UnsoundError
            plans[key] = plan
        if not plans:
            return _zero

        def count(value: Any) -> int:
            for key, plan in plans.items():
                if isinstance(value, key):
                    return plan(value)
            return 0

        return count


def _runtime_type(schema: Any, definitions: dict[str, Any]) -> type | None:
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
    if kind == "tuple":
        return tuple
    return None


NON_FINITE: Final = -(1 << 62)
"""What a counter adds for a non-finite float: it drives the count below the ":" bytes of any document,
so admission runs the full I-JSON check, which names the number."""


def _finite(value: float | None) -> int:
    return 0 if value is None or value - value == 0 else NON_FINITE


def _count_any(value: Any) -> int:
    if isinstance(value, dict):
        return len(value) + sum(map(_count_any, value.values()))
    if isinstance(value, list):
        return sum(map(_count_any, value))
    if value.__class__ is float and value - value != 0:
        return NON_FINITE
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


_SCALARS: Final = frozenset(
    {
        "none", "bool", "int", "float", "decimal", "str", "bytes", "date", "time", "datetime", "timedelta",
        "literal", "enum", "uuid", "url", "multi-host-url", "complex", "json", "missing-sentinel",
    }
)  # fmt: skip
