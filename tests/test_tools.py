"""`@tool`: JSON schema from type hints and docstrings, argument validation, and faults
turned into replies for the model (never exceptions out of the loop)."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import pytest
from pydantic import BaseModel

from agentrft import Environment, SchemaTool, ToolCall, ToolError, tool
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


# -- SchemaTool: a tool declared by a JSON schema (an outside API's function docs) -------

MOVE_SCHEMA = {
    "type": "object",
    "properties": {
        "source": {"type": "string", "description": "file to move"},
        "destination": {"type": "string"},
        "times": {"type": "integer"},
        "ratio": {"type": ["number", "null"]},
        "opts": {"type": "object"},
    },
    "required": ["source", "destination"],
}


def _moves() -> tuple[SchemaTool, list[dict]]:
    seen: list[dict] = []

    def move(**kwargs: object) -> dict:
        seen.append(kwargs)
        return {"moved": kwargs["source"]}

    return SchemaTool(move, name="mv", parameters=MOVE_SCHEMA, description="Move a file."), seen


async def test_schema_tool_serves_its_schema_and_calls_with_keywords() -> None:
    mv, seen = _moves()
    schema = mv.schema()
    assert schema["function"]["name"] == "mv"
    assert schema["function"]["description"] == "Move a file."
    assert schema["function"]["parameters"] == MOVE_SCHEMA
    args = {"source": "a", "destination": "b", "times": 2, "ratio": None, "opts": {"k": 1}}
    result = await mv.invoke(json.dumps(args))
    assert (result.content, result.failure) == ('{"moved": "a"}', None)
    assert seen == [args]
    assert (await mv.invoke({"source": "a", "destination": "b", "ratio": 1})).failure is None


@pytest.mark.parametrize(
    ("arguments", "kind", "fragments"),
    [
        ("{not json", "malformed_tool_json", ["not valid JSON"]),
        ("[1, 2]", "malformed_tool_json", ["must be a JSON object"]),
        ('{"source": "a"}', "invalid_arguments", ["destination: Field required"]),
        (
            '{"source": "a", "destination": "b", "force": true}',
            "invalid_arguments",
            ["force: Extra"],
        ),
        (
            '{"source": 3, "destination": "b"}',
            "invalid_arguments",
            ["source: expected string, got int"],
        ),
        (
            '{"source": "a", "destination": "b", "times": true}',
            "invalid_arguments",
            ["times: expected integer"],
        ),
        (
            '{"source": "a", "destination": "b", "times": 1.5}',
            "invalid_arguments",
            ["times: expected integer"],
        ),
    ],
)
async def test_schema_tool_refuses_bad_arguments_before_running(
    arguments: str, kind: str, fragments: list[str]
) -> None:
    mv, seen = _moves()
    result = await mv.invoke(arguments)
    assert result.failure == kind
    assert all(f in result.content for f in fragments), result.content
    assert '"source": "<string>"' in result.content  # the example names the schema's fields
    assert seen == []


async def test_schema_tool_without_type_checks_passes_values_through() -> None:
    seen: list[dict] = []
    loose = SchemaTool(
        lambda **kw: seen.append(kw) or "ok", name="mv", parameters=MOVE_SCHEMA, check_types=False
    )
    assert (await loose.invoke('{"source": 3, "destination": "b"}')).content == "ok"
    assert seen == [{"source": 3, "destination": "b"}]
    open_schema = {**MOVE_SCHEMA, "additionalProperties": True}
    extra = SchemaTool(lambda **kw: sorted(kw), name="mv", parameters=open_schema)
    assert (await extra.invoke('{"source": "a", "destination": "b", "z": 1}')).content == (
        '["destination", "source", "z"]'
    )


async def test_schema_tool_as_environment_method_binds_self() -> None:
    class FilesEnv(Environment):
        def __init__(self) -> None:
            super().__init__()
            self.log: list[str] = []

        def _mv(self, source: str, destination: str) -> str:
            self.log.append(f"{source}->{destination}")
            return "moved"

        mv = SchemaTool(_mv, name="mv", parameters=MOVE_SCHEMA)

    env = FilesEnv()
    assert list(env.tools) == ["mv"]
    result = await env.call_tool(
        ToolCall(id="1", name="mv", arguments='{"source": "a", "destination": "b"}')
    )
    assert result.content == "moved" and env.log == ["a->b"]


def test_schema_tool_refuses_a_schema_that_is_not_an_object() -> None:
    with pytest.raises(ValueError, match="type 'object'"):
        SchemaTool(print, name="p", parameters={"type": "array"})
    with pytest.raises(ValueError, match=r"required names \['x'\]"):
        SchemaTool(
            print, name="p", parameters={"type": "object", "properties": {}, "required": ["x"]}
        )
