"""`Task`: what a plugin provides. Parse a row, build prompts and an environment, score it."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from pydantic import BaseModel
from typing_extensions import TypeVar

from agentrft.environment import Environment
from agentrft.messages import Message, system, user
from agentrft.reward import RewardResult, RewardSample, TieredReward

if TYPE_CHECKING:
    from agentrft.policy import Policy
    from agentrft.trajectory import Trajectory

#: What `parse` makes of a row (the task's instance type).
InstanceT = TypeVar("InstanceT", default=Any)
#: The task's `Environment` subclass, so `reward(env, ...)` is typed without an override.
EnvT = TypeVar("EnvT", bound=Environment, default=Environment)


class TaskInputError(ValueError):
    """A dataset row's prompt is not what the task expects. The message names the fix."""


class EpisodeLimits(BaseModel):
    """Stops for one episode. Tasks set defaults; configs may override them."""

    max_turns: int = 20
    max_tool_calls: int = 50
    timeout_s: float = 600.0

    def overridden_by(self, overrides: BaseModel) -> EpisodeLimits:
        """These limits with every field `overrides` (a config's `limits` section) sets
        (not None) on top: the one merge of task and config limits."""
        update = {k: v for k, v in overrides.model_dump().items() if v is not None}
        return self.model_copy(update=update)


class Task(ABC, Generic[InstanceT, EnvT]):
    """A multi-turn, tool-using task. Subclass it in a plugin and register it.

    Parametrize it with the instance and environment types, `class WordleTask(Task[Game,
    WordleEnv])`, and `environment`/`reward` are typed for them (both default to `Any` and
    `Environment`, so a bare `Task` subclass works too).

    Contract, checked by the loop and `agentrft reward check`:
    - `parse` raises `TaskInputError` for a bad row (the loop then gives the lowest reward);
    - `environment` returns a fresh `Environment` per episode;
    - `reward` never needs anything but the environment and the trajectory;
    - `hidden_values` lists strings the policy must never see before the episode ends.
    """

    #: Unique name used by `--task`.
    name: ClassVar[str] = ""
    #: One line for `agentrft tasks`.
    description: ClassVar[str] = ""
    #: Default stops for an episode.
    limits: ClassVar[EpisodeLimits] = EpisodeLimits()
    #: Declared outcome tiers, best first (optional; enables `reward check` and `lowest_reward`).
    tiers: ClassVar[TieredReward | None] = None
    #: Curriculum levels above the task itself (level 0). A task that offers some makes an
    #: instance easier at level 1..curriculum_levels in `curriculum` (higher is easier); the
    #: local engine anneals the level during a run (`local.curriculum_start/_end`).
    curriculum_levels: ClassVar[int] = 0

    @abstractmethod
    def parse(self, prompt: str) -> InstanceT:
        """Turn a dataset row's prompt string into an instance (hidden fields included)."""

    @abstractmethod
    def environment(self, instance: InstanceT) -> EnvT:
        """A fresh environment for one episode of `instance`."""

    @abstractmethod
    def reward(self, env: EnvT, trajectory: Trajectory) -> RewardResult | Awaitable[RewardResult]:
        """Score a finished episode. May be `async def` (a judge reward awaits its model)."""

    def system_prompt(self, instance: InstanceT) -> str | None:
        return None

    def user_prompt(self, instance: InstanceT) -> str | None:
        """The first user message (must not contain hidden fields). Every task with a fixed
        first message sets it; None (the default) only where a user in the loop speaks
        first through `Environment.opening()`."""
        return None

    def initial_messages(self, instance: InstanceT) -> list[Message]:
        msgs = []
        sp = self.system_prompt(instance)
        if sp:
            msgs.append(system(sp))
        first = self.user_prompt(instance)
        if first is not None:
            msgs.append(user(first))
        return msgs

    def curriculum(self, instance: InstanceT, level: int) -> InstanceT:
        """`instance` made easier at `level` (1..curriculum_levels); level 0 is the task
        itself and must return `instance` unchanged.

        The easier instance is still a real episode of the task (same tools, same reward
        tiers): for Wordle, level k starts the game with k guesses already played by the
        expert. Hidden fields stay hidden. The default offers no curriculum.
        """
        if level:
            raise ValueError(
                f"task {self.name!r} has no curriculum (curriculum_levels = 0); "
                "set the curriculum level to 0"
            )
        return instance

    def at_level(self, instance: InstanceT, level: int) -> InstanceT:
        """`curriculum(instance, level)` with the level checked against `curriculum_levels`."""
        if not 0 <= level <= self.curriculum_levels:
            raise ValueError(
                f"curriculum level {level} is outside 0..{self.curriculum_levels} for task "
                f"{self.name!r}"
            )
        return self.curriculum(instance, level) if level else instance

    def instance_id(self, instance: InstanceT) -> str | None:
        return getattr(instance, "id", None)

    def task_of(self, instance: InstanceT) -> str:
        """The task an instance belongs to (recorded in `Trajectory.task`): this task's
        name, or for a mixture of tasks the row's own task."""
        return self.name

    def limits_for(self, instance: InstanceT, limits: EpisodeLimits) -> EpisodeLimits:
        """The limits `instance`'s episode runs under, given the run's `limits` (a mixture
        of tasks gives each row its own task's limits)."""
        return limits

    def batch_key(self, instance: InstanceT) -> str | None:
        """The class of `instance` that training batches should hold in equal shares, if
        any: for a decision task, the right decision (`ticket_triage`: the team).

        GRPO's groups each compare rollouts of one row; a step whose rows mostly need one
        answer rewards *saying that answer* on every group, and the next step's rows pull
        the policy elsewhere: the policy drifts between answers instead of learning to read
        the row. The local backend (`local.balanced_batches`) orders each epoch so that
        consecutive rows cycle through the keys, so every step of `global_batch_size` rows
        (a multiple of the number of keys) holds each key equally often; what is left to
        learn is which row needs which answer. The key only orders training rows on the
        trainer's side: the policy never sees it. None (the default): plain shuffles.
        """
        return None

    def hidden_values(self, instance: InstanceT) -> list[str]:
        """Strings the policy must not see before the episode ends (for leak tests)."""
        return []

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        """Rows `{"prompt": str}` for `split` ("train" / "validation" / "test")."""
        raise TaskInputError(f"task {self.name!r} does not generate datasets")

    def expert(self) -> Policy | None:
        """A scripted policy that plays well, if the task has one (`--policy expert`)."""
        return None

    def withheld(self) -> Task[Any] | None:
        """A warm-up that teaches the workflow's format and not its answers, if the task has
        one: a copy of this task whose tool replies hide what the decision depends on (the
        ticket's text, the code a tool shows), whose `expert()` plays every call of the
        workflow and then guesses the decision.

        An SFT warm-up on its games (`local.sft_source`: `withheld`, the default when a task
        offers one) leaves the policy at chance on the decision, so everything above chance
        after RL is RL's: the realistic case where the calls can be scripted but no correct
        trajectory exists to imitate. The copy must keep the task's tools and reward, and
        `expert()` must return a scripted policy for it. None (the default): the task offers
        no such warm-up (`expert()` games are then the warm-up, answers included).
        """
        return None

    def lowest_reward(self) -> RewardResult:
        """What an episode gets when it could not be played (bad row, reward crashed)."""
        if self.tiers is not None:
            return self.tiers.lowest()
        return RewardResult(total=0.0, outcome="failed")

    def reward_samples(self) -> Iterable[RewardSample]:
        """Rewards across the outcome tiers at extreme shaping, for `reward check`.

        The default simulates the declared `tiers`; tasks with hand-written reward logic
        should also yield rewards from real (scripted) episodes.
        """
        return self.tiers.samples() if self.tiers is not None else []


def seeded_sample(items: list[Any], n: int, seed: int) -> list[Any]:
    """A deterministic sample without replacement (helper for `make_dataset`)."""
    rng = random.Random(seed)
    if n > len(items):
        raise TaskInputError(f"asked for {n} items but only {len(items)} exist")
    return rng.sample(items, n)
