"""Shared fixtures: the task and a helper that plays scripted replies through the loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agentrft_wordle import WordleTask

from agentrft import Trajectory, call, replay_policy, run_episode

Play = Callable[..., Awaitable[Trajectory]]


@pytest.fixture(scope="session")
def task() -> WordleTask:
    return WordleTask()


@pytest.fixture
def play(task: WordleTask) -> Play:
    """`await play("sight", ["fight", "sight"])`: strings are guesses sent as tool calls,
    other items (text, ToolCall lists) are replies as they are."""

    async def run(answer: str, replies: list[Any], task_: WordleTask | None = None) -> Trajectory:
        t = task_ or task
        scripted = [call("guess_word", {"guess": r}) if isinstance(r, str) else r for r in replies]
        return await run_episode(t, t.row(answer, "test_0")["prompt"], replay_policy(scripted))

    return run
