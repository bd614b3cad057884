"""Entry point of the `agentrft-inventory` distribution (group `agentrft`)."""

from agentrft import BundleOptions, hookimpl
from agentrft_inventory.task import InventoryTask, inventory_server


@hookimpl
def agentrft_tasks() -> list[type]:
    return [InventoryTask]


@hookimpl
def agentrft_bundle_options(tasks: list[str]) -> BundleOptions:
    # The inventory server ships in this package; the runtime starts it per episode.
    return BundleOptions(mcp_servers=(inventory_server(),))
