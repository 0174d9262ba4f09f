"""``scopetool check``: lint the definitions a registry shows models, for every provider or the ones named.

Errors (exit 1): a tool or a parameter without a description, a docstring entry for no parameter, a
name a provider refuses, a description over a provider's limit. Warnings (exit 0, or 1 with
``--strict``): a tool that cannot use a provider's strict mode (and why), a docstring entry the model
never sees, the other notes of a provider's portability report, and what a schema says that its
author may not mean: open objects (no ``additionalProperties``, so unknown members are admitted, as
JSON Schema says; scopetool's own schemas are always closed) and parts no value can satisfy.
"""

from __future__ import annotations

import argparse
import inspect
import re
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeGuard, cast

import docstring_parser
from pydantic import BaseModel

from .._binding import Binding
from .._func import Func
from .._json import JsonObject, is_array, is_object
from .._registry import Registry
from .._target import load_registry
from ..providers import ProviderError
from ..providers._transform import subschemas
from ._common import PROVIDERS, STRICT_PROVIDERS, ExitCode, export_tools, stdout

__all__ = ["ALL", "Finding", "lint", "run"]

ALL: Final = "all"
"""The provider column of a finding that holds for every provider."""
_EXPORT_PREFIX: Final = re.compile(r"^tool .*? cannot be exported to [\w-]+: ")


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem of one tool: an error, or a warning that ``--strict`` makes an error."""

    tool: str
    """The tool's name."""
    provider: str
    """The provider module it concerns, or `ALL`."""
    problem: str
    """What is wrong, in words."""
    error: bool
    """Whether it is an error (otherwise a warning)."""

    def line(self, *, strict: bool = False) -> str:
        """``tool: provider: severity: problem``."""
        severity = "error" if self.error or strict else "warning"
        return f"{self.tool}: {self.provider}: {severity}: {self.problem}"


def run(args: argparse.Namespace) -> int:
    """Print one line per finding and a summary; exit 1 when there are errors (or warnings with ``--strict``)."""
    chosen: list[str] = args.provider or []
    providers = [p for p in PROVIDERS if p in chosen] if chosen else list(PROVIDERS)
    strict: bool = args.strict
    registry = load_registry(args.target)
    findings = lint(registry, providers)
    out = stdout()
    for finding in findings:
        out.write(finding.line(strict=strict) + "\n")
    errors = sum(1 for f in findings if f.error or strict)
    warnings = len(findings) - errors
    tools, scope = _count(len(registry), "tool"), f"{_count(len(providers), 'provider')} checked"
    if not findings:
        out.write(f"no problems in {tools} ({scope})\n")
    else:
        found = f"{_count(errors, 'error')}, {_count(warnings, 'warning')}"
        out.write(f"{found} in {len({f.tool for f in findings})} of {tools} ({scope})\n")
    return ExitCode.FAILED if errors else ExitCode.OK


def lint(registry: Registry, providers: Sequence[str]) -> list[Finding]:
    """Every finding for the registry's tools, by tool (sorted), provider-independent ones first."""
    findings: list[Finding] = []
    exportable: dict[str, list[Binding]] = {provider: [] for provider in providers}
    for binding in registry:
        findings.extend(_descriptions(binding))
        findings.extend(_docstring(binding))
        findings.extend(_schema(binding))
        for provider in providers:
            try:
                export = export_tools(provider, binding)
            except ProviderError as error:
                problem = _EXPORT_PREFIX.sub("", str(error))
                findings.append(Finding(binding.name, provider, f"cannot be exported: {problem}", error=True))
                continue
            exportable[provider].append(binding)
            findings.extend(
                Finding(binding.name, provider, note, error=note.startswith("description has"))
                for note in export.report.tools[0].notes
            )
    for provider in providers:
        if provider in STRICT_PROVIDERS and exportable[provider]:
            report = export_tools(provider, exportable[provider], strict=True).report
            findings.extend(
                Finding(tool.name, provider, "cannot be strict: " + "; ".join(tool.not_strict), error=False)
                for tool in report.tools
                if tool.not_strict
            )
    order = {provider: index for index, provider in enumerate([ALL, *PROVIDERS])}
    return sorted(findings, key=lambda f: (f.tool, order[f.provider]))


def _descriptions(binding: Binding) -> list[Finding]:
    definition = binding.definition()
    found: list[Finding] = []
    if not definition.description.strip():
        found.append(Finding(binding.name, ALL, "the tool has no description", error=True))
    schema = definition.input_schema
    properties = schema.get("properties")
    if is_object(properties):
        found.extend(
            Finding(binding.name, ALL, f"parameter {name!r} has no description", error=True)
            for name, node in properties.items()
            if not _described(node, schema, 0)
        )
    return found


def _described(node: Any, root: JsonObject, depth: int) -> bool:
    """Whether the model sees a description for this schema node (its own, or that of what it refers to)."""
    if not is_object(node) or depth > 16:
        return False
    description = node.get("description")
    if isinstance(description, str) and description.strip():
        return True
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~")) if is_object(target) else None
        return _described(target, root, depth + 1)
    choices = [choice for keyword in ("anyOf", "oneOf", "allOf") for choice in node.get(keyword, [])]
    return any(_described(choice, root, depth + 1) for choice in choices)


# -- what a schema says that its author may not mean

_JSON_TYPES: Final = ("null", "boolean", "integer", "number", "string", "array", "object")
_BOUNDS: Final = (
    # lower bound, upper bound, whether they may meet
    ("minimum", "maximum", True),
    ("exclusiveMinimum", "maximum", False),
    ("minimum", "exclusiveMaximum", False),
    ("exclusiveMinimum", "exclusiveMaximum", False),
    ("minLength", "maxLength", True),
    ("minItems", "maxItems", True),
    ("minProperties", "maxProperties", True),
)


def _schema(binding: Binding) -> list[Finding]:
    """Open objects, and parts of the input schema no value can satisfy."""
    schema = binding.definition().input_schema
    open_paths: list[str] = []
    problems: list[str] = []

    def visit(node: dict[str, Any], path: str, depth: int) -> None:
        if _is_object(node) and "additionalProperties" not in node and not node.get("patternProperties"):
            open_paths.append(path)
        problems.extend(f"{path}: no value satisfies this schema {problem}" for problem in _unsatisfiable(node))
        if depth < 64:
            for child_path, child in subschemas(node, path):
                visit(child, child_path, depth + 1)

    visit(schema, "$", 0)
    found: list[Finding] = []
    if open_paths:
        many = len(open_paths) > 1
        found.append(
            Finding(
                binding.name,
                ALL,
                f"open object{'s' if many else ''} (no additionalProperties) at {', '.join(open_paths)}: JSON "
                f"Schema, and so the contract, admits members {'they do' if many else 'it does'} not name, and "
                'strict modes cannot be used; add "additionalProperties": false to refuse them',
                error=False,
            )
        )
    found.extend(Finding(binding.name, ALL, problem, error=False) for problem in dict.fromkeys(problems))
    return found


def _is_object(node: JsonObject) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"  # 1.0 is an integer to JSON Schema
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _fits(value: object, kinds: list[str]) -> bool:
    found = _json_type(value)
    return found in kinds or (found == "integer" and "number" in kinds)


def _unsatisfiable(node: JsonObject) -> list[str]:
    """What makes one schema node match nothing: its own keywords contradicting each other."""
    found: list[str] = []
    kind = node.get("type")
    # The schema compiled at bind, so a list of types holds type names.
    kinds: list[str] | None = [kind] if isinstance(kind, str) else cast("list[str]", kind) if is_array(kind) else None
    if isinstance(node.get("enum"), list):
        values = node["enum"]
        if not values:
            found.append("(an empty enum)")
        elif kinds and not any(_fits(value, kinds) for value in values):
            shown = "/".join(sorted({_json_type(value) for value in values}))
            found.append(f"(an enum of {shown} values on type {' or '.join(kinds)})")
    if "const" in node and kinds and not _fits(node["const"], kinds):
        found.append(f"(a const {_json_type(node['const'])} on type {' or '.join(kinds)})")
    for low_key, high_key, inclusive in _BOUNDS:
        low, high = node.get(low_key), node.get(high_key)
        if _number(low) and _number(high) and (low > high if inclusive else low >= high):
            found.append(f"({low_key} {low}, {high_key} {high})")
    if node.get("items") is False and _number(node.get("minItems")) and node["minItems"] > 0:
        found.append("(items: false, yet minItems over 0)")
    listed = node.get("properties")
    properties: JsonObject = listed if is_object(listed) else {}
    names = node.get("required")
    required: list[Any] = names if is_array(names) else []
    for name in required:
        forbidden = properties.get(name) is False or (
            name not in properties and node.get("additionalProperties") is False and not node.get("patternProperties")
        )
        if isinstance(name, str) and forbidden:
            found.append(f"(it requires {name!r}, which it does not allow)")
    return found


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _docstring(binding: Binding) -> list[Finding]:
    tool: object = binding.tool
    if not isinstance(tool, Func):
        return []  # a hand-written tool: no docstring of parameters to compare
    function: Any = cast("Any", tool).__wrapped__  # the decorated function, kept by update_wrapper
    entries = docstring_parser.parse(inspect.getdoc(function) or "").params
    parameters = inspect.signature(function).parameters
    found = [
        Finding(binding.name, ALL, f"the docstring describes {entry.arg_name!r}, which is not a parameter", error=True)
        for entry in entries
        if entry.arg_name not in parameters
    ]
    model = _input_model(function, parameters)
    found.extend(
        Finding(
            binding.name,
            ALL,
            f"the docstring describes {entry.arg_name!r}, the input model itself, which the model never sees: "
            "describe the model's fields instead",
            error=False,
        )
        for entry in entries
        if entry.arg_name == model
    )
    return found


def _input_model(function: Any, parameters: typing.Mapping[str, inspect.Parameter]) -> str | None:
    """The name of the one parameter that is the input object itself (a pydantic model), if any."""
    if len(parameters) != 1:
        return None
    (parameter,) = parameters.values()
    try:
        annotation = typing.get_type_hints(function).get(parameter.name)
    except Exception:  # noqa: BLE001 - the tool was built, so this only fails for exotic annotations
        return None
    is_model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
    return parameter.name if is_model and parameter.default is inspect.Parameter.empty else None


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
