"""Shared fixtures for the core tests: a plugin set with tiny tasks, a named reward and fake
backends, installed with `use_plugins` so no installed plugin leaks into a test."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from pydantic import Field

from agentrft import Backend, NamedReward, RewardResult, Tier, TieredReward, hookimpl
from agentrft.backend import CliOption, Command, EvalResult, TrainOptions, TrainResult
from agentrft.config import Section
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


class RecordingSection(Section):
    """The recording backend's config section."""

    model: str | None = Field(None, description="The model to record.")
    note: str = Field("", description="A setting only this backend reads.")


@dataclass(frozen=True, kw_only=True)
class RecordingTrainOptions(TrainOptions):
    resume: str | None = None


@dataclass
class RecordedRun(TrainResult):
    run: str = "runs/recorded"


class RecordingBackend(Backend):
    """A backend that records what the CLI hands it: its own section, flags and options."""

    name: ClassVar[str] = "local"
    extra: ClassVar[str] = "local"
    config_section: ClassVar[type[Section]] = RecordingSection
    train_options: ClassVar[type[TrainOptions]] = RecordingTrainOptions
    model_key: ClassVar[str] = "local.model"
    keeps_trajectories: ClassVar[bool] = True
    calls: ClassVar[list[tuple[str, Any, Any, Any]]] = []

    @classmethod
    def cli_options(cls, command: Command) -> list[CliOption]:
        note = CliOption("note", ("--note",), "A note (local.note).", key="local.note")
        resume = CliOption("resume", ("--resume",), "Run to resume.", option="resume")
        return [note, resume] if command == "train" else [note]

    def train(self, task: Any, config: Any, options: Any = None) -> TrainResult:
        self.calls.append(("train", task, config, options))
        return RecordedRun()

    def evaluate(self, task: Any, config: Any, options: Any = None) -> EvalResult:
        self.calls.append(("evaluate", task, config, options))
        return EvalResult()


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


@pytest.fixture
def more_backends() -> Any:
    """`backend_plugins` plus the plugin objects given: `with more_backends(MyPlugin()):`."""
    RecordingBackend.calls.clear()

    def install(*extra: Any) -> Any:
        plugins = load_plugins(extra=[TinyPlugin(), BackendPlugin(), *extra], entry_points=False)
        return use_plugins(plugins)

    return install


@pytest.fixture
def builtin_plugins() -> Any:
    """`tiny_plugins` plus the built-in local and sagemaker backends (their config sections
    and flags), as an install of agentrft has them."""
    from agentrft.backends.local import plugin as local_plugin
    from agentrft.backends.sagemaker import plugin as sagemaker_plugin

    extra = [TinyPlugin(), local_plugin, sagemaker_plugin]
    with use_plugins(load_plugins(extra=extra, entry_points=False)) as plugins:
        yield plugins
