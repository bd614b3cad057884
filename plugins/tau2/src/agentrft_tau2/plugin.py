"""Entry point of the `agentrft-tau2` distribution (group `agentrft`)."""

from agentrft import hookimpl
from agentrft_tau2.bundle import agentrft_bundle_options  # noqa: F401 (the hook, registered here)
from agentrft_tau2.task import TASKS


@hookimpl
def agentrft_tasks() -> list[type]:
    return list(TASKS)
