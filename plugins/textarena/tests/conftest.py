"""Shared helpers for the TextArena plugin's tests (run in the plugin's own venv)."""

from __future__ import annotations

import json

import pytest
from agentrft_textarena.task import TASKS, GuessTheNumberTask, MastermindTask, TextArenaTask

from agentrft import Trajectory


@pytest.fixture(params=[t.name for t in TASKS])
def task(request: pytest.FixtureRequest) -> TextArenaTask:
    return {t.name: t for t in TASKS}[request.param]()


def moves_played(traj: Trajectory) -> list[str]:
    """The `action` of every `move` call the episode executed, in order."""
    out = []
    for turn in traj.turns:
        for c in turn.assistant.tool_calls or []:
            if c.name == "move":
                out.append(json.loads(c.arguments)["action"])
    return out


__all__ = ["GuessTheNumberTask", "MastermindTask", "moves_played"]
