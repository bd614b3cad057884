"""Group scoring: a reward that scores the rollouts of one prompt together.

Most rewards score an episode alone, `reward(env, trajectory)`. A group-relative judge
(`agentrft.GroupJudge`, RULER-style) needs the `group_size` rollouts of a prompt at once, so
a task (or a `--reward` object) may also offer::

    async def score_group(self, group: Sequence[GroupEpisode]) -> list[RewardResult] | None

Where the episodes of a prompt are played together — the local engine's training step
(`group_size` rollouts per prompt) and `evaluate` with `samples_per_row > 1` — the one agent
loop (`run_episodes(..., group_size=N)`) holds each finished episode's environment, and once
every rollout of the prompt has finished it calls `score_group` once with those that played
to the end. It gives one `RewardResult` per member, in order. Where an episode is played
alone (the SageMaker AgentCore runtime scores each rollout as it ends, `agentrft play`,
`evaluate` with one sample per row), the ordinary `reward(env, trajectory)` scores it.

`score_group` returning None (this group is not for it), raising, or giving the wrong number
of results falls back to the ordinary reward for each member (with a warning for the last
two): an episode always ends with a reward.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from agentrft.policy import Policy
from agentrft.redact import scrub_text
from agentrft.reward import RewardResult
from agentrft.rollout import (
    INLINE_REWARD,
    EpisodeCallback,
    RewardFn,
    run_episode,
    run_episodes,
    score_episode,
)
from agentrft.task import Task
from agentrft.tool_threads import ToolThreads
from agentrft.trajectory import Trajectory

log = logging.getLogger("agentrft.group_scoring")


@dataclass(frozen=True)
class GroupEpisode:
    """One finished rollout of a group: its environment after the last turn and its
    trajectory (reward not yet set)."""

    env: Any
    trajectory: Trajectory


@runtime_checkable
class GroupScorer(Protocol):
    """Anything with `score_group`: a task, or an object passed as the reward."""

    async def score_group(self, group: Sequence[GroupEpisode]) -> Sequence[RewardResult] | None:
        """One `RewardResult` per member, in order; None to score each member alone."""
        ...


def group_scorer(task: Any, reward_fn: Any = None) -> GroupScorer | None:
    """Who scores groups in a run: the reward passed in when it has `score_group`, else
    the task when no other reward replaces its own; None when neither does."""
    if reward_fn is not None:
        return reward_fn if isinstance(reward_fn, GroupScorer) else None
    return task if isinstance(task, GroupScorer) else None


async def run_grouped_episodes(
    task: Task[Any, Any],
    prompts: Iterable[str],
    policy: Policy,
    *,
    group_size: int,
    reward_fn: RewardFn | None = None,
    concurrency: int = 32,
    on_episode: EpisodeCallback | None = None,
    metadata: Callable[[int], dict[str, Any]] | None = None,
    tool_threads: ToolThreads | None = None,
    **episode_options: Any,
) -> list[Trajectory]:
    """`run_episodes`, with each run of `group_size` consecutive prompts (the rollouts of
    one prompt) scored together by the run's group scorer (`group_scorer(task, reward_fn)`)
    once all of them have finished. Without a group scorer, or with `group_size` 1, it is
    `run_episodes`. `on_episode` sees each trajectory once its group is scored.
    `episode_options` go to `run_episode` (sampling, limits, curriculum_level)."""
    prompts = list(prompts)
    scorer = group_scorer(task, reward_fn)
    if scorer is None or group_size <= 1:
        return await run_episodes(
            task,
            prompts,
            policy,
            reward_fn=reward_fn,
            concurrency=concurrency,
            on_episode=on_episode,
            metadata=metadata,
            tool_threads=tool_threads,
            **episode_options,
        )
    if len(prompts) % group_size:
        raise ValueError(
            f"{len(prompts)} prompts do not split into groups of {group_size}: pass each "
            "prompt group_size times in a row"
        )
    sem = asyncio.Semaphore(max(1, concurrency))
    own_threads = tool_threads is None
    threads = ToolThreads(max(1, concurrency)) if tool_threads is None else tool_threads
    results: list[Trajectory | None] = [None] * len(prompts)
    held: dict[int, Any] = {}  # index -> the environment of an episode awaiting its group
    left = [group_size] * (len(prompts) // group_size)

    async def one(i: int, prompt: str) -> None:
        def hold(env: Any, trajectory: Trajectory) -> RewardResult:
            held[i] = env  # scored with its group below; this placeholder never survives
            return RewardResult(total=0.0)

        setattr(hold, INLINE_REWARD, True)

        async with sem:
            results[i] = await run_episode(
                task,
                prompt,
                policy,
                reward_fn=hold,
                metadata=metadata(i) if metadata else None,
                tool_threads=threads,
                **episode_options,
            )
        g = i // group_size
        left[g] -= 1
        if left[g]:
            return
        members = range(g * group_size, (g + 1) * group_size)
        group = [(j, results[j]) for j in members]
        await _score(task, reward_fn, scorer, [(j, t) for j, t in group if j in held], held)
        if on_episode is not None:
            for _, traj in group:
                out = on_episode(traj)  # type: ignore[arg-type]
                if isinstance(out, Awaitable):
                    await out

    try:
        await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
    finally:
        if own_threads:
            threads.shutdown()
    return [r for r in results if r is not None]


async def _score(
    task: Task[Any, Any],
    reward_fn: RewardFn | None,
    scorer: GroupScorer,
    played: list[tuple[int, Trajectory | None]],
    held: dict[int, Any],
) -> None:
    """Set the rewards of a group's played-out members (those cut off already have the
    task's lowest reward): the group scorer's, else each member's own."""
    members = [(i, t) for i, t in played if t is not None]
    group = [GroupEpisode(held.pop(i), t) for i, t in members]
    results: Sequence[RewardResult] | None = None
    if group:
        try:
            results = await scorer.score_group(group)
        except Exception as exc:  # a group scorer's bug: score each alone, never crash
            log.warning(
                "score_group raised %s: %s; scoring each episode alone",
                type(exc).__name__,
                scrub_text(str(exc)),
            )
            results = None
        if results is not None and (
            len(results) != len(group) or not all(isinstance(r, RewardResult) for r in results)
        ):
            log.warning(
                "score_group gave %s for %d episodes, not one RewardResult each; scoring each "
                "episode alone",
                f"{len(results)} results" if isinstance(results, Sequence) else repr(results),
                len(group),
            )
            results = None
    for k, member in enumerate(group):
        if results is not None:
            member.trajectory.reward = results[k]
        else:
            await _score_alone(task, reward_fn, member)


async def _score_alone(task: Task[Any, Any], reward_fn: RewardFn | None, m: GroupEpisode) -> None:
    """The ordinary reward, as `run_episode` applies it (a reward bug: the lowest tier)."""
    await score_episode(task, reward_fn, m.env, m.trajectory)
