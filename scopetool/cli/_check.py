"""``scopetool check``: lint the definitions a registry shows models, for every provider or the ones named.

Errors (exit 1): a tool or a parameter without a description, a docstring entry for no parameter, a
name a provider refuses, a description over a provider's limit. Warnings (exit 0, or 1 with
``--strict``): a tool that cannot use a provider's strict mode (and why), a docstring entry the model
never sees, and the other notes of a provider's portability report.
"""

from __future__ import annotations

import argparse
import inspect
import re
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import docstring_parser
from pydantic import BaseModel

from .._binding import Binding
from .._func import Func
from .._json import JsonObject, is_object
from .._registry import Registry
from ..providers import ProviderError
from ._common import PROVIDERS, STRICT_PROVIDERS, ExitCode, export_tools, stdout
from ._target import load_registry

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
