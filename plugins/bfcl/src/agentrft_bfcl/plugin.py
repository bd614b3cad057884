"""Entry point of the `agentrft-bfcl` distribution (group `agentrft`)."""

from agentrft import hookimpl
from agentrft_bfcl.task import BfclLongContextTask, BfclMissParamTask, BfclMultiTurnTask


@hookimpl
def agentrft_tasks() -> list[type]:
    return [BfclMultiTurnTask, BfclLongContextTask, BfclMissParamTask]
