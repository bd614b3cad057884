"""Entry point of the `agentrft` plugin group: registers the Wordle task and its strict
variant (no text recovery)."""

from __future__ import annotations

import agentrft
from agentrft_wordle.task import WordleStrictTask, WordleTask


@agentrft.hookimpl
def agentrft_tasks() -> list[type]:
    return [WordleTask, WordleStrictTask]
