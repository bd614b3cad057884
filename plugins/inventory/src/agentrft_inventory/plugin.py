"""Entry point of the `agentrft-inventory` distribution (group `agentrft`)."""

from agentrft import hookimpl
from agentrft_inventory.task import InventoryTask


@hookimpl
def agentrft_tasks() -> list[type]:
    return [InventoryTask]
