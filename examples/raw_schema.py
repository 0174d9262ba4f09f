"""A tool with a hand-written JSON Schema: a proxy of a remote tool whose schema is all we have.

The contract compiles the schema once (jsonschema-rs, formats asserted, no remote ``$ref``) and
enforces it exactly as JSON Schema reads it: the proxy only ever sees admitted arguments. JSON Schema
is laxer than a typed tool in two ways: an object without ``"additionalProperties": false`` admits
members it does not name (this schema closes its object, so ``unit`` below is refused), and ``1.0`` is
an integer.

Run it with ``python examples/raw_schema.py``.
"""

from __future__ import annotations

import asyncio
import json

from scopetool import (
    Definition,
    InvalidInvocationError,
    Invocation,
    Output,
    Registry,
    Request,
    Result,
    classify_input_rejection,
)

# As a remote server advertised it (an MCP server, an OpenAPI operation...).
REMOTE_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "date": {"type": "string", "format": "date"},
        "units": {"enum": ["metric", "imperial"]},
    },
    "required": ["city", "date"],
    "additionalProperties": False,
}


class WeatherProxy:
    """Forwards admitted calls to a remote weather service (here a local stand-in)."""

    def definition(self) -> Definition:
        return Definition(name="weather", description="The forecast for a city on a date.", input_schema=REMOTE_SCHEMA)

    async def call(self, invocation: Invocation) -> Result:
        arguments = json.loads(invocation.arguments)  # admitted: exactly the schema's shape
        forecast = {
            "city": arguments["city"],
            "date": arguments["date"],
            "high": 21,
            "units": arguments.get("units", "metric"),
        }
        return Result(output=Output.from_json(json.dumps(forecast)))


async def main() -> None:
    """Admit one good call and two bad ones through the hand-written schema."""
    registry = Registry(WeatherProxy())
    binding = registry.resolve("weather")
    assert binding is not None
    for arguments in (
        '{"city": "Oslo", "date": "2026-12-01"}',
        '{"city": "Oslo", "date": "tomorrow", "unit": "metric"}',
        '{"city": "", "date": "2026-12-01", "units": "kelvin"}',
    ):
        try:
            invocation = binding.contract.prepare(Request(name="weather", arguments=arguments))
        except InvalidInvocationError as error:
            rejection = classify_input_rejection(error)
            print("rejected:", rejection.message if rejection else error)
            continue
        print("forecast:", (await binding.call(invocation)).output.text())


if __name__ == "__main__":
    asyncio.run(main())
