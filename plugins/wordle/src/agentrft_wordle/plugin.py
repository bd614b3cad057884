"""Entry point of the `agentrft` plugin group: registers the Wordle task."""

from __future__ import annotations

import agentrft
from agentrft_wordle.task import WordleTask


@agentrft.hookimpl
def agentrft_tasks() -> list[type]:
    return [WordleTask]
