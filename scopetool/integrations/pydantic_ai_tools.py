"""pydantic-ai function tools as scopetool tools: the contract enforces their schema before they run.

`from_pydantic_ai(tool)` wraps a pydantic-ai ``Tool`` (a plain function tool, one that takes no
``RunContext``) as a scopetool `Tool`, for a `Registry`, a provider adapter or ``scopetool serve``. Its
input schema is the one pydantic-ai shows a model (``tool.tool_def.parameters_json_schema``, closed to
unknown members where the root does not say); `Contract.prepare` enforces it strictly, so ``"4"`` for
an integer, an unknown field or a repeated member name is rejected before the function runs, where
pydantic-ai's own lax validation would have accepted the first and dropped the second. The admitted
arguments then go through pydantic-ai's own validator (which builds the function's argument types) and
call. ``ModelRetry`` and ``ToolFailed``, whose messages pydantic-ai writes for the model, become a
`Failure` with that message; any other error is the tool's error (the model sees a generic text).

A tool that takes a ``RunContext`` needs a pydantic-ai run (dependencies, usage, retries) that a
scopetool call does not have; it is refused rather than called with a fake one.

This module imports ``pydantic-ai`` (``pip install pydantic-ai-slim``).

Example:
    ```python
    import asyncio
    from pydantic_ai import Tool
    from scopetool import InvalidInvocationError, Registry, Request, classify_input_rejection
    from scopetool.integrations.pydantic_ai_tools import from_pydantic_ai

    def book(restaurant: str, party_size: int) -> str:
        \"\"\"Book a table.\"\"\"
        return f"booked {party_size} at {restaurant}"

    binding = Registry(from_pydantic_ai(Tool(book))).resolve("book")
    invocation = binding.contract.prepare(Request("book", '{"restaurant": "tasca", "party_size": 4}'))
    print(asyncio.run(binding.call(invocation)).output.text())
    #> booked 4 at tasca
    try:
        binding.contract.prepare(Request("book", '{"restaurant": "tasca", "party_size": "4"}'))
    except InvalidInvocationError as error:
        print(classify_input_rejection(error).message.splitlines()[-1])
    #> - $.party_size: expected integer (got a string)
    ```
"""

from __future__ import annotations

import copy
import json
from typing import Any, cast, final

from .._extras import missing_dependency

try:
    from pydantic_ai import RunContext, Tool
    from pydantic_ai.exceptions import ModelRetry, ToolFailed
except ImportError as _missing:
    raise missing_dependency(__name__, _missing) from _missing

from pydantic_core import to_json

from .._contract import Invocation
from .._definition import Definition, Effect
from .._outcome import Failure, FailureKind
from .._output import Output, Result

__all__ = ["PydanticAITool", "from_pydantic_ai"]


@final
class PydanticAITool:
    """A pydantic-ai function tool as a scopetool `Tool` (made by `from_pydantic_ai`)."""

    __slots__ = ("_definition", "_tool")

    def __init__(self, tool: Tool[Any], effect: Effect | None = None) -> None:
        shown = tool.tool_def
        schema: dict[str, Any] = copy.deepcopy(dict(shown.parameters_json_schema))
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        schema.setdefault("additionalProperties", False)
        self._tool = tool
        self._definition = Definition(
            name=shown.name, description=shown.description or "", input_schema=schema, effect=effect
        )

    def definition(self) -> Definition:
        """The tool's definition, built once from the pydantic-ai tool."""
        return self._definition

    async def call(self, invocation: Invocation) -> Result:
        """Validate the admitted arguments with pydantic-ai's own validator and call the function."""
        schema = self._tool.function_schema
        arguments = schema.validator.validate_python(json.loads(invocation.arguments or "{}"))
        try:
            value = await schema.call(arguments, cast("RunContext[Any]", None))  # it takes no RunContext
        except (ModelRetry, ToolFailed) as error:
            raise Failure(kind=FailureKind.FAILED, output=error.message, cause=error) from None
        if isinstance(value, str):
            return Result(output=Output.from_text(value))
        return Result(output=Output.from_json(to_json(value)))


def from_pydantic_ai(tool: Tool[Any], *, effect: Effect | None = None) -> PydanticAITool:
    """A pydantic-ai function tool as a scopetool `Tool`.

    Args:
        tool: A pydantic-ai ``Tool`` whose function takes no ``RunContext``.
        effect: The replay promise the tool keeps, if any (pydantic-ai has no such notion).

    Raises:
        TypeError: `tool` is not a pydantic-ai ``Tool``, or its function takes a ``RunContext``.
    """
    if not isinstance(tool, Tool):
        raise TypeError(f"from_pydantic_ai needs a pydantic-ai Tool, not {type(tool).__name__}")
    if tool.function_schema.takes_ctx:
        raise TypeError(
            f"pydantic-ai tool {tool.name!r} takes a RunContext, which only a pydantic-ai run provides; "
            "give the tool its dependencies another way (a closure, a class) to call it through scopetool"
        )
    return PydanticAITool(tool, effect)
