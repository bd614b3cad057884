"""The inventory system: a small stateful MCP server (the official SDK's `MCPServer`).

Run it as `python -m agentrft_inventory.server` (stdio) or with `--http PORT` (streamable
HTTP on 127.0.0.1). The policy sees the warehouse tools; `load_scenario`, `audit` and
`reset` are the task's own (its environment hides them from the policy).
"""

from __future__ import annotations

import argparse
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from agentrft_inventory.scenario import ITEMS

server = MCPServer("inventory")

#: The warehouse's state: one scenario's catalog, stock, suppliers and what was done.
STATE: dict[str, Any] = {}


def _fresh() -> None:
    STATE.clear()
    STATE.update(stock={}, suppliers={}, reservations=[], purchase_orders=[])


_fresh()


@server.tool()
def reset() -> str:
    """Clear the warehouse (a new episode)."""
    _fresh()
    return "reset"


@server.tool()
def load_scenario(scenario: dict[str, Any]) -> str:
    """Load one request's world: the requested item's stock and suppliers."""
    _fresh()
    STATE["stock"][scenario["sku"]] = {
        "on_hand": scenario["on_hand"],
        "reserved": scenario["reserved"],
    }
    STATE["suppliers"][scenario["sku"]] = scenario["suppliers"]
    return "loaded"


@server.tool()
def audit() -> dict[str, Any]:
    """What the episode did: its reservations and purchase orders."""
    return {"reservations": STATE["reservations"], "purchase_orders": STATE["purchase_orders"]}


@server.tool(annotations={"readOnlyHint": True})
def find_item(query: str) -> dict[str, list[dict[str, str]]]:
    """Search the catalog by name; returns matching items with their SKUs.

    Args:
        query: words of the item's name, e.g. "hinge large".
    """
    words = query.lower().replace(",", " ").split()
    hits = [
        {"sku": sku, "name": name}
        for sku, name in ITEMS
        if words and all(w in name.lower() or w in sku.lower() for w in words)
    ]
    if not hits:
        raise ToolError(f"no item matches {query!r}; try fewer words")
    return {"items": hits}


def _stock(sku: str) -> dict[str, int]:
    stock = STATE["stock"].get(sku.upper())
    if stock is None:
        if sku.upper() in {s for s, _ in ITEMS}:
            return {"on_hand": 0, "reserved": 0}
        raise ToolError(f"unknown SKU {sku!r}; find it with find_item")
    return stock


@server.tool(annotations={"readOnlyHint": True})
def check_stock(sku: str) -> dict[str, Any]:
    """Units of an item on hand, already reserved for other orders, and available.

    Args:
        sku: the item's SKU, e.g. HNG-L.
    """
    s = _stock(sku)
    return {
        "sku": sku.upper(),
        "on_hand": s["on_hand"],
        "reserved": s["reserved"],
        "available": s["on_hand"] - s["reserved"],
    }


@server.tool(annotations={"readOnlyHint": True})
def list_suppliers(sku: str) -> dict[str, Any]:
    """The suppliers of an item: unit price and lead time in days.

    Args:
        sku: the item's SKU.
    """
    _stock(sku)
    return {"sku": sku.upper(), "suppliers": list(STATE["suppliers"].get(sku.upper(), []))}


@server.tool(annotations={"destructiveHint": False})
def reserve_stock(sku: str, units: int, order_id: str) -> str:
    """Reserve available units of an item for a customer order.

    Args:
        sku: the item's SKU.
        units: how many units to reserve.
        order_id: the customer order, e.g. SO-12345.
    """
    s = _stock(sku)
    if units <= 0:
        raise ToolError("units must be positive")
    available = s["on_hand"] - s["reserved"]
    if units > available:
        raise ToolError(f"only {available} units of {sku.upper()} are available")
    s["reserved"] += units
    STATE["reservations"].append({"sku": sku.upper(), "units": units, "order_id": order_id})
    return f"Reserved {units} units of {sku.upper()} for {order_id}."


@server.tool(annotations={"destructiveHint": False})
def create_purchase_order(sku: str, supplier: str, units: int) -> str:
    """Order units of an item from a supplier.

    Args:
        sku: the item's SKU.
        supplier: the supplier's name, as list_suppliers shows it.
        units: how many units to order.
    """
    _stock(sku)
    names = [s["name"] for s in STATE["suppliers"].get(sku.upper(), [])]
    if supplier not in names:
        raise ToolError(
            f"{supplier!r} does not supply {sku.upper()}; suppliers: {', '.join(names)}"
        )
    if units <= 0:
        raise ToolError("units must be positive")
    po = f"PO-{len(STATE['purchase_orders']) + 1:04d}"
    STATE["purchase_orders"].append(
        {"po": po, "sku": sku.upper(), "supplier": supplier, "units": units}
    )
    return f"{po}: {units} units of {sku.upper()} ordered from {supplier}."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT"
    )
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
