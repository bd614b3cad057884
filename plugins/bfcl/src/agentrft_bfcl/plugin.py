"""Entry point of the `agentrft-bfcl` distribution (group `agentrft`)."""

from agentrft import hookimpl
from agentrft_bfcl.task import BfclMultiTurnTask


@hookimpl
def agentrft_tasks() -> list[type]:
    return [BfclMultiTurnTask]
