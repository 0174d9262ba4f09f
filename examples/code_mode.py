"""Code mode: one `run_code` tool whose snippet calls the registry's tools, each call admitted.

A model that would need four turns (look up two cities, then compare) writes one snippet instead. The
snippet runs in the Monty sandbox; its two lookups are gathered and run at once (the tool is SAFE), a
call with a wrong argument is rejected exactly as a direct call would be and the snippet reads why,
and the report the model gets back lists every nested call with its outcome.

Run it with ``python examples/code_mode.py`` (needs ``pip install 'scopetool[code]'``).
"""

from __future__ import annotations

import json

from scopetool import Effect, Registry, tool
from scopetool.code import code_tool
from scopetool.providers import openai_chat

POPULATION = {"Oslo": 709_000, "Lyon": 522_000}

# What a model writes as the `code` argument of run_code.
SNIPPET = """
import asyncio
oslo, lyon = await asyncio.gather(population(city="Oslo"), population(city="Lyon"))
try:
    await population(city=["Paris"])
except ValueError as error:
    print("rejected:", str(error).splitlines()[-1])
f"Oslo has {oslo - lyon} more people than Lyon"
"""


@tool(effect=Effect.SAFE)
def population(city: str) -> int:
    """The number of people who live in a city."""
    return POPULATION[city]


def main() -> None:
    """Show the model the code tool, run its snippet as the model's call, and print the report."""
    registry = Registry(code_tool(Registry(population)))
    exported = openai_chat.export_tools(registry).tools[0]["function"]
    print("the model sees:", exported["name"], "-", exported["description"].split(". ")[0])
    report = json.loads(registry.run_sync("run_code", json.dumps({"code": SNIPPET})).output.text())
    print("result:", report["result"])
    print("printed:", report["printed"].strip())
    print("calls:", [call["outcome"] for call in report["calls"]])


if __name__ == "__main__":
    main()
