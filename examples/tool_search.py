"""A large catalog behind a search: 200 tools deferred, one always shown, and a scripted model's run.

The model first calls a tool it has not found (refused: search first), searches, sees the tool it
found appended to its tools, sends a bad argument (rejected by that tool's own contract) and then a
good one. The run's reveals are kept by the driver's backend. Run it with ``python examples/tool_search.py``.
"""

from __future__ import annotations

import asyncio
import json

from scopetool import Definition, Invocation, Output, Registry, Request, Result, tool
from scopetool.driver import Driver
from scopetool.providers import ToolCall, openai_chat


@tool(defer_loading=False)
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


class Filler:
    """One of many tools the model should not have to read: a report of some department."""

    def __init__(self, number: int) -> None:
        self._definition = Definition(
            name=f"department_report_{number}",
            description=f"Monthly spending report of department {number}.",
            input_schema={"type": "object", "properties": {"month": {"type": "string"}}, "required": ["month"]},
        )

    def definition(self) -> Definition:
        """The report tool's definition."""
        return self._definition

    async def call(self, invocation: Invocation) -> Result:
        """A report that is always empty."""
        return Result(output=Output.from_text(f"{invocation.name}: nothing spent"))


REGISTRY = Registry(ping, get_weather, *(Filler(n) for n in range(198)), defer_loading=20)


def call(call_id: str, name: str, arguments: dict[str, object]) -> ToolCall:
    """What the scripted model asks for."""
    return ToolCall(id=call_id, request=Request(name=name, arguments=json.dumps(arguments)))


async def main() -> None:
    """Drive the scripted run and print what the model is shown at each step."""
    driver = Driver(REGISTRY)
    tools = openai_chat.export_tools(await driver.catalog("run-1")).tools
    print("tools shown:", [t["function"]["name"] for t in tools], f"(of {len(REGISTRY)})")
    script = [
        call("c1", "get_weather", {"city": "Lyon"}),
        call("c2", "search_tools", {"query": "weather in a city"}),
        call("c3", "get_weather", {"city": 7}),
        call("c4", "get_weather", {"city": "Lyon"}),
    ]
    for step in script:
        (answer,) = (await driver.run("run-1", [step])).messages(openai_chat)
        print(f"{step.name}: {answer['content']}")
    tools = openai_chat.export_tools(await driver.catalog("run-1")).tools
    print("tools shown:", [t["function"]["name"] for t in tools])


if __name__ == "__main__":
    asyncio.run(main())
