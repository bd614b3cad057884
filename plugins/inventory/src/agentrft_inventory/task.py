"""`InventoryTask` ("inventory"): fill a customer order's stock request through the
company's inventory system, an MCP server.

The user names an order, an item (by name, not SKU), a quantity and a deadline. The agent
finds the item's SKU (`find_item`), checks its stock (`check_stock`), and then either
reserves the units (`reserve_stock`, when enough are available) or orders the shortfall
(`create_purchase_order`) from the cheapest supplier that delivers in time (`list_suppliers`).
Which of the two is right, and which supplier, depends only on what the earlier replies
showed. The reward reads the server's own record of what was done (`audit`).

Every tool the policy sees comes from the MCP server (agentrft_inventory.server); the
environment adds none of its own. Each episode gets a fresh server process (the default,
safe isolation); `InventoryTask(isolation="pool")` reuses reset servers instead.
"""

from __future__ import annotations

import json
import re
import sys
import zlib
from collections.abc import Iterable
from typing import Any, ClassVar, Literal

from agentrft import (
    EpisodeLimits,
    Message,
    Policy,
    RewardResult,
    RewardSample,
    ScriptedPolicy,
    Task,
    TaskInputError,
    Tier,
    TieredReward,
    ToolCall,
    ToolResult,
    Trajectory,
    call,
)
from agentrft.mcp import MCPEnvironment, StdioServer
from agentrft_inventory.scenario import Scenario, make_scenarios

SYSTEM_PROMPT = (
    "You are the stock agent of a furniture-hardware wholesaler, working through the "
    "inventory system's tools. For a customer order: find the item's SKU, check its stock, "
    "then either reserve the units for the order when enough are available, or, when they "
    "are not, order the shortfall (units asked minus units available) from the cheapest "
    "supplier whose lead time meets the deadline. Do one of the two, once. Reply only with "
    "tool calls."
)

USER_PROMPTS = (
    "Order {o} needs {u} x {i} within {d} days. Please sort out the stock.",
    "Customer order {o}: {u} units of {i}, needed in {d} days. Can you handle it?",
    "We have to ship {u} of the {i} for order {o} within {d} days. Reserve or reorder as needed.",
    "Please take care of stock for {o}: {u} x {i}, deadline {d} days.",
)

TIERS = TieredReward(
    [
        Tier(name="right_action", base=1.0, solved=True),
        Tier(name="wrong_action", base=0.0),
        Tier(name="nothing_done", base=-1.0),
    ]
)


def inventory_server(isolation: Literal["process", "pool"] = "process") -> StdioServer:
    """The inventory MCP server, started with this interpreter."""
    return StdioServer(
        name="inventory",
        command=sys.executable,
        args=("-m", "agentrft_inventory.server"),
        hidden_tools=("load_scenario", "audit"),
        reset_tool="reset",
        isolation=isolation,
        call_timeout_s=20,
    )


class InventoryEnv(MCPEnvironment):
    """One order's episode: the server holds the warehouse; this holds the scenario."""

    def __init__(self, scenario: Scenario, server: StdioServer) -> None:
        super().__init__(servers=[server])
        self.scenario = scenario
        self.actions = 0

    async def setup(self) -> None:
        await self.call_server("inventory", "load_scenario", {"scenario": self.scenario.as_row()})

    def on_tool_result(self, call: ToolCall, result: ToolResult) -> None:
        # A reservation or an order that went through is the episode's decision.
        if call.name in ("reserve_stock", "create_purchase_order") and not result.failure:
            self.actions += 1
            self.done = True


class InventoryTask(Task[Scenario, InventoryEnv]):
    """Reserve an order's units from stock, or order the shortfall from the right supplier."""

    name: ClassVar[str] = "inventory"
    description: ClassVar[str] = (
        "Fill a stock request through an MCP inventory server: reserve, or reorder the "
        "shortfall from the cheapest supplier in time (outcome-scored)."
    )
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=8, max_tool_calls=8, timeout_s=120)
    tiers: ClassVar[TieredReward] = TIERS

    def __init__(self, isolation: Literal["process", "pool"] = "process") -> None:
        self.server = inventory_server(isolation)

    def parse(self, prompt: str) -> Scenario:
        try:
            return Scenario.from_row(json.loads(prompt))
        except (ValueError, TypeError, KeyError) as exc:
            raise TaskInputError(
                f"inventory rows are JSON scenarios; got {prompt[:80]!r} "
                f"({type(exc).__name__}: {exc}). Make rows with "
                "`agentrft dataset make --task inventory`."
            ) from None

    def environment(self, instance: Scenario) -> InventoryEnv:
        return InventoryEnv(instance, self.server)

    def system_prompt(self, instance: Scenario) -> str:
        return SYSTEM_PROMPT

    def user_prompt(self, instance: Scenario) -> str:
        pick = zlib.crc32(instance.id.encode()) % len(USER_PROMPTS)
        return USER_PROMPTS[pick].format(
            o=instance.order_id, u=instance.units, i=instance.item, d=instance.days
        )

    def instance_id(self, instance: Scenario) -> str:
        return instance.id

    def batch_key(self, instance: Scenario) -> str:
        return instance.expected()["action"]

    def hidden_values(self, instance: Scenario) -> list[str]:
        # What decides the reward, as the row states it; the stock and the suppliers are
        # the tools' to show.
        exp = instance.expected()
        return [json.dumps(exp), f"'action': '{exp['action']}'", f'"action": "{exp["action"]}"']

    async def reward(self, env: InventoryEnv, trajectory: Trajectory) -> RewardResult:
        record = await env.call_server("inventory", "audit")
        done = [*record["reservations"], *record["purchase_orders"]]
        if not done:
            return self.tiers.score("nothing_done")
        exp = env.scenario.expected()
        if exp["action"] == "reserve":
            right = [
                r
                for r in record["reservations"]
                if r["sku"] == exp["sku"]
                and r["units"] == exp["units"]
                and r["order_id"] == env.scenario.order_id
            ]
        else:
            right = [
                p
                for p in record["purchase_orders"]
                if (p["sku"], p["supplier"], p["units"])
                == (exp["sku"], exp["supplier"], exp["units"])
            ]
        tier = "right_action" if right and len(done) == 1 else "wrong_action"
        return self.tiers.score(tier, components={"actions": float(len(done))})

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        """`n` scenarios (train 256, validation 32, test 32 by default), half with enough
        stock; the splits draw from different seeds."""
        sizes = {"train": 256, "validation": 32, "test": 32}
        if split not in sizes:
            raise TaskInputError(f"unknown split {split!r}; use train, validation or test")
        offset = {"train": 0, "validation": 7919, "test": 15401}[split]
        scenarios = make_scenarios(sizes[split] if n is None else n, seed * 100_003 + offset)
        return [{"prompt": json.dumps(s.as_row())} for s in scenarios]

    def expert(self) -> Policy:
        return stock_expert()

    def reward_samples(self) -> Iterable[RewardSample]:
        yield from self.tiers.samples()


# -- the scripted expert ------------------------------------------------------------------------

_ORDER = re.compile(r"\bSO-\d+\b")


def _request(messages: list[Message]) -> tuple[str, int, int, str]:
    """(order id, units, days, item words) from the user's message."""
    text = next(m.content for m in messages if m.role == "user" and m.content)
    order = _ORDER.search(text)
    item = next(name for _, name in _items() if name in text)
    rest = _ORDER.sub("", text).replace(item, "")
    units = int(re.findall(r"\b(\d+)\b", rest)[0])
    days = int(re.findall(r"\b(\d+) days\b", rest)[0])
    return (order.group(0) if order else "SO-0"), units, days, item


def _items() -> tuple[tuple[str, str], ...]:
    from agentrft_inventory.scenario import ITEMS

    return ITEMS


def _replies(messages: list[Message]) -> list[Any]:
    out = []
    for m in messages:
        if m.role == "tool" and m.content:
            try:
                out.append(json.loads(m.content))
            except ValueError:
                out.append(m.content)
    return out


def stock_expert() -> Policy:
    """find_item -> check_stock -> reserve, or list_suppliers -> order the shortfall from
    the cheapest supplier in time (the task's scripted expert: always right)."""

    def play(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        order, units, days, item = _request(messages)
        replies = _replies(messages)
        if not replies:
            return call("find_item", {"query": item})
        sku = replies[0]["items"][0]["sku"]
        if len(replies) == 1:
            return call("check_stock", {"sku": sku})
        available = replies[1]["available"]
        if available >= units:
            return call("reserve_stock", {"sku": sku, "units": units, "order_id": order})
        if len(replies) == 2:
            return call("list_suppliers", {"sku": sku})
        suppliers = replies[2]["suppliers"]
        best = min(
            (s for s in suppliers if s["lead_days"] <= days),
            key=lambda s: (s["unit_price"], s["name"]),
        )
        return call(
            "create_purchase_order",
            {"sku": sku, "supplier": best["name"], "units": units - available},
        )

    return ScriptedPolicy(play, name="inventory_expert")
