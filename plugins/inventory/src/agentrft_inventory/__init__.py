"""agentrft task plugin: a stock request served by an inventory system that is an MCP server."""

from agentrft_inventory.scenario import Scenario, make_scenarios
from agentrft_inventory.task import InventoryEnv, InventoryTask, inventory_server, stock_expert

__all__ = [
    "InventoryEnv",
    "InventoryTask",
    "Scenario",
    "inventory_server",
    "make_scenarios",
    "stock_expert",
]
