"""``scopetool definitions``: what the model is shown, neutral or for one provider, and the portability report."""

from __future__ import annotations

import argparse
from typing import Any

from .._definition import Definition
from .._json import loads_exact
from .._target import load_registry
from ._common import STRICT_PROVIDERS, ExitCode, UsageError, dump_json, export_tools, say, stdout

__all__ = ["export_options", "neutral", "run"]


def run(args: argparse.Namespace) -> int:
    """Print the definitions TARGET names as JSON, or with ``--report`` the provider's portability report."""
    provider: str | None = args.provider
    options = export_options(provider, args.strict, args.mode)
    if args.report and provider is None:
        raise UsageError("--report needs --provider: the neutral form is what the contract enforces, unchanged")
    registry = load_registry(args.target)
    if provider is None:
        stdout().write(dump_json([neutral(d) for d in registry.definitions()]) + "\n")
        return ExitCode.OK
    from ..providers import ProviderError  # noqa: PLC0415 - the neutral form needs no adapter (a faster start)

    try:
        export = export_tools(provider, registry, **options)
    except ProviderError as error:
        say(str(error))
        return ExitCode.FAILED
    stdout().write((str(export.report) if args.report else dump_json(export.tools)) + "\n")
    return ExitCode.OK


def export_options(provider: str | None, strict: bool | None, mode: str | None) -> dict[str, Any]:
    """The keyword arguments of the provider's ``export_tools`` for ``--strict``/``--no-strict`` and ``--mode``.

    Raises:
        UsageError: an option the provider's export does not take.
    """
    options: dict[str, Any] = {}
    if strict is not None:
        if provider not in STRICT_PROVIDERS:
            flag = "--strict" if strict else "--no-strict"
            where = f"{provider} has no strict mode" if provider else "it needs --provider"
            raise UsageError(f"{flag}: {where}; strict mode exists for {', '.join(sorted(STRICT_PROVIDERS))}")
        options["strict"] = strict
    if mode is not None:
        if provider != "gemini":
            raise UsageError("--mode is gemini's schema dialect: use it with --provider gemini")
        options["mode"] = mode
    return options


def neutral(definition: Definition) -> dict[str, Any]:
    """A definition's JSON-ready neutral form, schema numbers exactly as written."""
    data = definition.to_dict()
    data["input_schema"] = loads_exact(definition.input_schema_json)
    output = definition.output_schema_json
    if output is not None:
        data["output_schema"] = loads_exact(output)
    return data
