"""Shared fixtures: the task, a helper that plays scripted replies through the loop, and
the words the task's own texts use."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agentrft_wordle import WordleTask
from agentrft_wordle.task import SYSTEM_PROMPT, replay_own_turns

from agentrft import Trajectory, call, run_episode

Play = Callable[..., Awaitable[Trajectory]]


@pytest.fixture(scope="session")
def task() -> WordleTask:
    return WordleTask()


@pytest.fixture
def play(task: WordleTask) -> Play:
    """`await play("sight", ["fight", "sight"])`: strings are guesses sent as tool calls,
    other items (text, ToolCall lists) are replies as they are."""

    async def run(
        answer: str, replies: list[Any], task_: WordleTask | None = None, level: int = 0
    ) -> Trajectory:
        t = task_ or task
        scripted = [call("guess_word", {"guess": r}) if isinstance(r, str) else r for r in replies]
        return await run_episode(
            t, t.row(answer, "test_0")["prompt"], replay_own_turns(scripted), curriculum_level=level
        )

    return run


@pytest.fixture(scope="session")
def template_vocabulary(task: WordleTask) -> set[str]:
    """Words the task's own texts use (a leak check must not confuse them with the answer)."""
    text = SYSTEM_PROMPT + task.user_prompt(task.parse(task.row("zzzzz")["prompt"]))
    text += " Current Knowledge Correct Position Green In Word Wrong Yellow Not Gray Words Already"
    text += " Guessed Guesses Remaining You already guessed the repeat used up guess and was"
    text += " penalised Error not a valid guess must be exactly letters This did not use up"
    text += " remaining Game over no left The word was Correct you solved it all green this game"
    text += " has ended so more guesses are accepted limit of tool calls is reached at least"
    text += " unknown tool Available tools invalid arguments for Expected are JSON object field"
    return {w.lower() for w in re.findall(r"[A-Za-z]+", text)}
