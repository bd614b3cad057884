"""Entry point of the `agentrft` plugin group: registers the TextArena tasks."""

from __future__ import annotations

import agentrft


@agentrft.hookimpl
def agentrft_tasks() -> list[type]:
    from agentrft_textarena.task import TASKS

    return list(TASKS)
