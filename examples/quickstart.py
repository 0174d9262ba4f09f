"""Quickstart: define tools, export their definitions, and admit a model's calls before running them.

Run it with ``python examples/quickstart.py``, or see what a model is shown with
``scopetool definitions examples/quickstart.py:registry`` (``--provider openai_chat``, ``anthropic``...).
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Literal

from pydantic import Field

from scopetool import Effect, InvalidInvocationError, Registry, Request, classify_input_rejection, tool


@tool(effect=Effect.SAFE)
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool
async def search(
    query: str,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    sort: Literal["relevance", "date"] = "relevance",
) -> list[str]:
    """Search the catalogue.

    Args:
        query: Words to look for.
        limit: How many results to return.
        sort: The order of the results.
    """
    return [f"{query} #{i}" for i in range(1, min(limit, 3) + 1)]


registry = Registry(add, search)  # what `scopetool definitions examples/quickstart.py:registry` shows


async def main() -> None:
    """Export the definitions, then admit and run one good call and one bad call."""
    print("definitions the model is shown:")
    for definition in registry.definitions():
        print(json.dumps(definition.to_dict(), indent=2))

    # What a model proposed: a name and a JSON string. Nothing runs until the contract admits it.
    for request in (
        Request(name="add", arguments='{"a": 2, "b": 3}'),
        Request(name="search", arguments='{"query": "lamps", "limit": "5", "colour": "red"}'),
    ):
        binding = registry.resolve(request.name)
        assert binding is not None
        try:
            invocation = binding.contract.prepare(request)
        except InvalidInvocationError as error:
            rejection = classify_input_rejection(error)
            print(f"\n{request.name}: rejected; the model is told:\n{rejection.message if rejection else error}")
            continue
        result = await binding.call(invocation)
        print(f"\n{request.name}: {result.output.text()}")


if __name__ == "__main__":
    asyncio.run(main())
