"""An unknown tool name gets one message on every provider's answer, suggesting only tools the model may call."""

from __future__ import annotations

import asyncio
import json

import pytest
from model_turns import PATHS

from scopetool import Catalog, Registry, tool
from scopetool.providers import run_call


@tool
def create_order(item: str) -> str:
    """Make an order."""
    return item


@tool(defer_loading=True)
def create_orders(items: list[str]) -> str:
    """Make many orders."""
    return ",".join(items)


@pytest.mark.parametrize("provider", sorted(PATHS))
def test_each_provider_tells_the_model_the_nearest_callable_name(provider: str) -> None:
    """The answer holds the one message, naming the shown tool, not the deferred one, nor the value sent."""
    module, payload = PATHS[provider]
    catalog = Catalog(Registry(create_order, create_orders))
    export = module.export_tools(catalog)
    (call,) = module.parse_tool_calls(payload("c1", "create_ordr", {"item": "s3cr3t"}), export)
    outcome = asyncio.run(run_call(catalog, call))
    message = json.dumps(module.result_message(call, outcome))
    assert str(outcome) == 'error: tool "create_ordr" is not available; did you mean "create_order"?'
    assert json.dumps(str(outcome))[1:-1] in message
    assert "create_orders" not in message and "s3cr3t" not in message


def test_registry_run_suggests_no_deferred_tool() -> None:
    """`Registry.run`'s outcome is the same text; a deferred tool is never suggested."""
    registry = Registry(create_order, create_orders)
    assert str(registry.run_sync("create_orderz", "{}")) == (
        'error: tool "create_orderz" is not available; did you mean "create_order"?'
    )
    assert str(registry.run_sync("zzz", "{}")) == 'error: tool "zzz" is not available'
