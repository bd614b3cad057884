"""Shared fixtures for the core tests: a plugin set with tiny tasks, a named reward and fake
backends, installed with `use_plugins` so no installed plugin leaks into a test."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from agentrft import Backend, NamedReward, RewardResult, Tier, TieredReward, hookimpl
from agentrft.plugins import load_plugins, use_plugins
from agentrft.testing import CounterTask, FindNumberEnv, FindNumberTask


class InvertedNumberTask(FindNumberTask):
    """find_number whose declared tiers rank losing above winning: `reward check` must fail."""

    name: ClassVar[str] = "inverted_number"
    description: ClassVar[str] = "find_number with an inverted reward (test task)."
    tiers: ClassVar[TieredReward] = TieredReward(
        [
            Tier(name="solved", base=0.0, shaping_weight=0.1, solved=True),
            Tier(name="unsolved", base=0.5, shaping_weight=0.1),
            Tier(name="no_guess", base=-1.0),
        ]
    )


_FEWEST_GUESSES = TieredReward(
    [
        Tier(name="solved", base=2.0, shaping_weight=0.5, solved=True),
        Tier(name="unsolved", base=0.0),
    ]
)


def fewest_guesses(env: FindNumberEnv, trajectory: Any) -> RewardResult:
    """A plugin reward for find_number: 2 for a win, shaped by the number of guesses."""
    if env.solved:
        return _FEWEST_GUESSES.score("solved", 1.0 - 0.2 * len(env.guesses))
    return _FEWEST_GUESSES.score("unsolved")


FEWEST_GUESSES = NamedReward(fewest_guesses, tasks={"find_number"}, tiers=_FEWEST_GUESSES)


def untiered(env: Any, trajectory: Any) -> RewardResult:
    return RewardResult(total=1.0)


class TinyPlugin:
    @hookimpl
    def agentrft_tasks(self) -> list[type]:
        return [FindNumberTask, InvertedNumberTask, CounterTask]

    @hookimpl
    def agentrft_rewards(self) -> dict[str, Any]:
        return {"fewest_guesses": FEWEST_GUESSES, "untiered": untiered}


class RecordingBackend(Backend):
    """A backend that records what the CLI hands it."""

    name: ClassVar[str] = "local"
    extra: ClassVar[str] = "local"
    calls: ClassVar[list[tuple[str, Any, Any, dict[str, Any]]]] = []

    def train(self, task: Any, config: Any, **options: Any) -> Any:
        self.calls.append(("train", task, config, options))
        return "runs/recorded"

    def evaluate(self, task: Any, config: Any, **options: Any) -> Any:
        self.calls.append(("evaluate", task, config, options))
        return None


class MissingDepsBackend(RecordingBackend):
    name: ClassVar[str] = "sagemaker"
    extra: ClassVar[str] = "sagemaker"
    requires: ClassVar[tuple[str, ...]] = ("agentrft_test_module_that_is_not_installed",)


class BackendPlugin:
    @hookimpl
    def agentrft_backends(self) -> list[type]:
        return [RecordingBackend, MissingDepsBackend]


@pytest.fixture
def tiny_plugins() -> Any:
    """Tasks find_number, inverted_number and counter; rewards; no backends."""
    with use_plugins(load_plugins(extra=[TinyPlugin()], entry_points=False)) as plugins:
        yield plugins


@pytest.fixture
def backend_plugins() -> Any:
    """`tiny_plugins` plus a recording `local` backend and a `sagemaker` one missing deps."""
    RecordingBackend.calls.clear()
    plugins = load_plugins(extra=[TinyPlugin(), BackendPlugin()], entry_points=False)
    with use_plugins(plugins):
        yield RecordingBackend.calls
