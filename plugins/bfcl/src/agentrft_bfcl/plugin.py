"""Entry point of the `agentrft-bfcl` distribution (group `agentrft`)."""

from agentrft import hookimpl
from agentrft_bfcl.bundle import agentrft_bundle_options  # noqa: F401 (the hook, registered here)
from agentrft_bfcl.task import (
    BfclLongContextTask,
    BfclMissFuncTask,
    BfclMissParamTask,
    BfclMultiTurnTask,
)


@hookimpl
def agentrft_tasks() -> list[type]:
    return [BfclMultiTurnTask, BfclLongContextTask, BfclMissParamTask, BfclMissFuncTask]
