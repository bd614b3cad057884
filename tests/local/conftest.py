"""Toy tasks and shared fixtures for the local backend tests (CPU, tiny models)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from agentrft import (
    Environment,
    EpisodeLimits,
    RewardResult,
    ScriptedPolicy,
    Task,
    TaskInputError,
    call,
    tool,
)
from agentrft.config import Config
from agentrft.config_model import load_config

pytest.importorskip("torch")
pytest.importorskip("peft")

#: torch threads for every test here: scripts/numeric_matrix.sh runs the suite with 1 and 2
#: (and on several CPU kernel sets) to show no result depends on summation order.
TORCH_THREADS = int(os.environ.get("AGENTRFT_TEST_TORCH_THREADS", "1"))

FRUITS = ["apple", "berry", "cherry", "grape", "lemon", "mango", "peach", "kiwi"]


class _TextEnv(Environment):
    def on_text_reply(self, text: str) -> str | None:
        self.done = True  # a plain-text answer is the whole episode
        return None


class CountA(Task[str]):
    """Reward = number of 'a' characters in the single reply (the classic GRPO toy)."""

    name = "count_a"
    limits = EpisodeLimits(max_turns=1)

    def parse(self, prompt: str) -> str:
        return prompt

    def environment(self, instance: str) -> Environment:
        return _TextEnv()

    def reward(self, env: Environment, trajectory: Any) -> RewardResult:
        text = (trajectory.turns[-1].assistant.content or "") if trajectory.turns else ""
        n = text.count("a")
        return RewardResult(total=float(n), solved=n >= 16)

    def user_prompt(self, instance: str) -> str:
        return instance

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        return [{"prompt": f"Write text {k}"} for k in range(n or 8)]


class FruitEnv(Environment):
    def __init__(self, answer: str) -> None:
        super().__init__()
        self.answer = answer
        self.guesses: list[str] = []
        self.solved = False

    @tool
    def guess(self, word: str) -> str:
        """Guess the hidden fruit.

        Args:
            word: one of the candidate fruits
        """
        self.guesses.append(word)
        if word == self.answer:
            self.solved = self.done = True
            return "Correct!"
        if len(self.guesses) >= 3:
            self.done = True
            return f"Wrong. Out of guesses; it was {self.answer}."
        return f"Wrong. The fruit starts with '{self.answer[0]}'."


class FruitGuess(Task[str]):
    """A Wordle-shaped toy: a hidden fruit, a `guess` tool, hints, at most 3 guesses."""

    name = "fruit_guess"
    limits = EpisodeLimits(max_turns=4, max_tool_calls=6)

    def parse(self, prompt: str) -> str:
        if prompt not in FRUITS:
            raise TaskInputError(f"unknown fruit row {prompt!r}")
        return prompt

    def environment(self, instance: str) -> Environment:
        return FruitEnv(instance)

    def reward(self, env: Environment, trajectory: Any) -> RewardResult:
        assert isinstance(env, FruitEnv)
        if env.solved:
            return RewardResult(total=2.0 - 0.25 * len(env.guesses), solved=True, outcome="won")
        if env.guesses:
            return RewardResult(total=0.0, outcome="lost")
        return RewardResult(total=-1.0, outcome="no_guess")

    def system_prompt(self, instance: str) -> str:
        return "Find the fruit."

    def user_prompt(self, instance: str) -> str:
        return "Candidates: " + ", ".join(FRUITS)

    def hidden_values(self, instance: str) -> list[str]:
        return [instance]

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        words = FRUITS if split == "train" else FRUITS[:4]
        return [{"prompt": w} for w in words[: n or len(words)]]

    def expert(self) -> ScriptedPolicy:
        def play(messages: list[Any], tools: list[dict[str, Any]]) -> Any:
            last = messages[-1].content or ""
            if "starts with '" in last:
                letter = last.split("starts with '")[1][0]
                return call("guess", {"word": next(f for f in FRUITS if f[0] == letter)})
            return call("guess", {"word": "apple"})

        return ScriptedPolicy(play, name="fruit-expert")


def tiny_config(tmp_path: Any, **values: Any) -> Config:
    """A fast CPU config: tiny model, no MLflow, no before/after eval unless asked."""
    base: dict[str, Any] = {
        "local.run_dir": str(tmp_path / "runs"),
        "local.tracking": "none",
        "local.eval_before": False,
        "local.eval_after": False,
        "local.tiny_model": "1m",
        "local.save_prompt_token_ids": True,  # the tests rebuild sequences from the JSONL
        "local.micro_batch_size": 16,
        "max_epochs": 1000,
        "lora_rank": 16,
        "lora_alpha": 32,
        "sampling_max_tokens": 32,
        "local.cpu_threads": TORCH_THREADS,
    }
    base.update(values)
    return load_config(values=base)


@pytest.fixture(scope="session")
def tiny_1m() -> str:
    from agentrft.backends.local.models.tiny_model import ensure_tiny_model

    return str(ensure_tiny_model("1m"))


@pytest.fixture(scope="session")
def tiny_156k() -> str:
    from agentrft.backends.local.models.tiny_model import ensure_tiny_model

    return str(ensure_tiny_model("156k"))
