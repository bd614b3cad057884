"""`@tool`: JSON schema from type hints and docstrings, argument validation, and faults
turned into replies for the model (never exceptions out of the loop)."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import pytest
from pydantic import BaseModel

from agentrft import Environment, ToolCall, ToolError, tool
from agentrft.tools import parse_docstring


class Item(BaseModel):
    sku: str
    qty: int = 1


@tool
def search(query: str, limit: int = 5, exact: bool = False) -> list[str]:
    """Search the catalogue.

    Longer explanation that the model also sees.

    Args:
        query: words to look for.
        limit: how many results to return,
            at most 20.
        exact: match the whole phrase only.

    Returns:
        matching product names.
    """
    return [f"{query}-{i}" for i in range(limit)]


@tool(name="add_items", description="Add items to the cart.")
async def add(items: list[Item], mode: Literal["append", "replace"] = "append") -> dict:
    await asyncio.sleep(0)
    return {"n": sum(i.qty for i in items), "mode": mode}


@tool
def crash(x: int) -> str:
    """Always fails."""
    raise RuntimeError(f"boom {x}")


@tool
def refuse(receipt_id: str) -> str:
    """Refuses politely."""
    raise ToolError(f"Error: no receipt {receipt_id}", kind="unknown_receipt")


def test_schema_from_hints_and_docstring() -> None:
    schema = search.schema()
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "search"
    assert (
        fn["description"] == "Search the catalogue.\n\nLonger explanation that the model also sees."
    )
    params = fn["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["query"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["query"] == {"type": "string", "description": "words to look for."}
    assert props["limit"] == {
        "type": "integer",
        "default": 5,
        "description": "how many results to return, at most 20.",
    }
    assert props["exact"]["type"] == "boolean" and props["exact"]["default"] is False
    assert "title" not in params and all("title" not in p for p in props.values())


def test_schema_nested_models_literals_and_overrides() -> None:
    fn = add.schema()["function"]
    assert fn["name"] == "add_items"
    assert fn["description"] == "Add items to the cart."
    props = fn["parameters"]["properties"]
    assert props["mode"]["enum"] == ["append", "replace"]
    assert props["items"]["type"] == "array"
    assert "$defs" in fn["parameters"]  # the nested model is described for the model
    json.dumps(add.schema())  # serialisable as sent to a server


def test_schema_is_a_fresh_copy_each_time() -> None:
    first = search.schema()
    first["function"]["parameters"]["properties"].clear()
    assert "query" in search.schema()["function"]["parameters"]["properties"]


def test_parse_docstring_sections() -> None:
    desc, args = parse_docstring(search.fn.__doc__)
    assert desc.startswith("Search the catalogue.")
    assert "Returns" not in desc and "matching product" not in desc
    assert args == {
        "query": "words to look for.",
        "limit": "how many results to return, at most 20.",
        "exact": "match the whole phrase only.",
    }
    assert parse_docstring(None) == ("", {})


async def test_valid_call_with_defaults() -> None:
    result = await search.invoke('{"query": "tea"}')
    assert result.failure is None
    assert json.loads(result.content) == [f"tea-{i}" for i in range(5)]
    result = await search.invoke({"query": "tea", "limit": 2})
    assert json.loads(result.content) == ["tea-0", "tea-1"]


async def test_async_tool_and_nested_model_arguments() -> None:
    result = await add.invoke(json.dumps({"items": [{"sku": "a", "qty": 2}, {"sku": "b"}]}))
    assert result.failure is None
    assert json.loads(result.content) == {"n": 3, "mode": "append"}


@pytest.mark.parametrize(
    ("arguments", "kind", "fragment"),
    [
        ('{"query": ', "malformed_tool_json", "not valid JSON"),
        ("[1, 2]", "malformed_tool_json", "must be a JSON object"),
        ("{}", "invalid_arguments", "query: Field required"),
        ('{"query": "x", "limit": "many"}', "invalid_arguments", "limit"),
        ('{"query": "x", "colour": "red"}', "invalid_arguments", "colour"),
    ],
)
async def test_bad_arguments_become_error_replies(arguments: str, kind: str, fragment: str) -> None:
    result = await search.invoke(arguments)
    assert result.failure == kind
    assert fragment in result.content
    assert result.content.startswith("Error:")
    assert '"query"' in result.content  # the reply shows the expected shape


async def test_wrong_literal_value_is_invalid() -> None:
    result = await add.invoke({"items": [], "mode": "merge"})
    assert result.failure == "invalid_arguments"
    assert "mode" in result.content


async def test_tool_exception_is_reported_not_raised() -> None:
    result = await crash.invoke({"x": 3})
    assert result.failure == "tool_exception"
    assert "RuntimeError: boom 3" in result.content


async def test_tool_error_keeps_its_kind() -> None:
    result = await refuse.invoke({"receipt_id": "R9"})
    assert result == type(result)("Error: no receipt R9", failure="unknown_receipt")


async def test_empty_argument_string_means_no_arguments() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    assert (await ping.invoke("")).content == "pong"
    assert ping.schema()["function"]["parameters"]["properties"] == {}


class ShopEnv(Environment):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, bool]] = []

    @tool
    def buy(self, sku: str, qty: int = 1) -> str:
        """Buy something.

        Args:
            sku: the product code.
            qty: how many.
        """
        assert self.current_call is not None
        self.calls.append((sku, self.current_call.recovered))
        return f"bought {qty} x {sku}"

    @tool
    def checkout(self) -> str:
        """Finish."""
        self.done = True
        return "done"


class BiggerShopEnv(ShopEnv):
    @tool
    def refund(self, sku: str) -> str:
        """Refund a product."""
        return f"refunded {sku}"


async def test_environment_methods_bind_and_list_in_order() -> None:
    env = ShopEnv()
    assert list(env.tools) == ["buy", "checkout"]
    assert [s["function"]["name"] for s in env.tool_schemas()] == ["buy", "checkout"]
    assert "self" not in env.tool_schemas()[0]["function"]["parameters"]["properties"]
    assert list(BiggerShopEnv().tools) == ["buy", "checkout", "refund"]
    result = await env.call_tool(ToolCall(id="1", name="buy", arguments='{"sku": "tea"}'))
    assert result.content == "bought 1 x tea"
    assert env.calls == [("tea", False)]
    assert env.current_call is None  # cleared after the call


async def test_environments_do_not_share_state() -> None:
    a, b = ShopEnv(), ShopEnv()
    await a.call_tool(ToolCall(id="1", name="buy", arguments='{"sku": "x"}'))
    assert a.calls and not b.calls


async def test_unknown_tool_lists_the_available_ones() -> None:
    result = await ShopEnv().call_tool(ToolCall(id="1", name="sell", arguments="{}"))
    assert result.failure == "unknown_tool"
    assert "'sell'" in result.content and "buy, checkout" in result.content


async def test_recovered_flag_visible_to_the_tool() -> None:
    env = ShopEnv()
    await env.call_tool(ToolCall(id="r", name="buy", arguments='{"sku": "y"}', recovered=True))
    assert env.calls == [("y", True)]
