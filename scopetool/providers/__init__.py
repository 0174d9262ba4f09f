"""Provider adapters: export definitions to an LLM API, import its tool calls, send back results.

One module per provider, each with the same small set of functions:

* ``export_tools(tools, *, strict=...) -> Export``: JSON-ready tool definitions in the provider's
  wire format, with a `PortabilityReport` of every change the provider's dialect forced.
* ``parse_tool_calls(payload, export=None) -> list[ToolCall]``: the provider's tool calls as
  `Request`s for `Contract.prepare`, each beside the provider's call id. `payload` is the response
  object the provider's SDK returns, its message, its list of calls, or their JSON.
* `run_call(registry, call)`: resolve, admit and run one call; the outcome for ``result_message``
  (the same function in every module, and here).
* ``result_message(call, outcome, ...)``: the provider's tool-result message for a `Result`, a
  `Failure`, an input rejection, or any other error (which the model sees only as a generic text).

Modules: `openai_chat`, `openai_responses`, `anthropic`, `gemini`, `mcp`, `bedrock`, `mistral`,
`ollama`. None imports a provider SDK: exports are plain dicts, and an SDK object is read through its
own serializer (``model_dump`` or ``to_dict``).
"""

from __future__ import annotations

from ._common import (
    Export,
    PortabilityReport,
    ProviderError,
    ToolCall,
    ToolReport,
    UnknownToolError,
    outcome_output,
    run_call,
)
from ._transform import Change

__all__ = [
    "Change",
    "Export",
    "PortabilityReport",
    "ProviderError",
    "ToolCall",
    "ToolReport",
    "UnknownToolError",
    "outcome_output",
    "run_call",
]
