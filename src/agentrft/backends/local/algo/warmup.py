"""Which games an SFT warm-up plays (`local.sft_source`): cheap to import (no torch), so
the config checks and the CPU preset can ask before any model loads."""

from __future__ import annotations

from typing import Any

from agentrft.task import Task


def warmup_task(task: Task[Any], source: str = "auto") -> Task[Any] | None:
    """The task whose expert games a warm-up of `source` trains on, or None when the task
    cannot provide them: `expert` is `task` itself (when it has an expert), `withheld` its
    `Task.withheld()` copy, `auto` the withheld copy when offered, else `task`."""
    if source not in ("auto", "expert", "withheld"):
        raise ValueError(f"local.sft_source {source!r}: use auto, expert or withheld")
    if source in ("auto", "withheld"):
        held = task.withheld()
        if held is not None and held.expert() is not None:
            return held
        if source == "withheld":
            return None
    return task if task.expert() is not None else None


def describe_source(task: Task[Any], source: str) -> str:
    """What a warm-up of `source` on `task` plays, for the run's log ("withheld games ...")."""
    chosen = warmup_task(task, source)
    if chosen is None:
        return "no warm-up games"
    if chosen is task:
        return "expert games"
    return "withheld games (the calls without the answer)"
