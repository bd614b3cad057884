"""`agentrft reward check` as a library: prove a task's reward ranks outcomes correctly.

Use it in a plugin's tests::

    from agentrft.reward_check import assert_reward_order

    def test_reward_order():
        assert_reward_order(MyTask())
"""

from __future__ import annotations

from typing import Any

from agentrft.reward import RewardCheckReport, RewardSample, check_reward_order


class RewardCheckError(ValueError):
    """The samples for a reward check could not be produced (not an ordering violation)."""


def reward_samples(task: Any, reward: Any = None) -> list[RewardSample]:
    """The samples to check: the task's own, or those of a swapped-in plugin reward.

    A plugin reward is checkable when it carries `tiers` (a `TieredReward`) or a
    `reward_samples(task)` function; a bare function cannot be simulated.
    """
    if reward is None:
        source = f"task {getattr(task, 'name', '?')!r}"
        produce = task.reward_samples
    elif callable(getattr(reward, "reward_samples", None)):
        source = f"reward {getattr(reward, '__name__', reward)!r}"

        def produce() -> Any:
            return reward.reward_samples(task)
    elif getattr(reward, "tiers", None) is not None and hasattr(reward.tiers, "samples"):
        source = f"reward {getattr(reward, '__name__', reward)!r}"
        produce = reward.tiers.samples
    else:
        raise RewardCheckError(
            f"reward {getattr(reward, '__name__', reward)!r} declares no tiers: give it a "
            f"`tiers` attribute (a TieredReward) or a `reward_samples(task)` function so the "
            f"check can simulate its outcomes"
        )
    try:
        return list(produce() or [])
    except Exception as exc:
        raise RewardCheckError(
            f"{source}: producing reward samples failed: {type(exc).__name__}: {exc}"
        ) from exc


def check_task_reward(task: Any, reward: Any = None) -> RewardCheckReport:
    """Run `check_reward_order` on the task's (or the plugin reward's) samples."""
    return check_reward_order(reward_samples(task, reward))


def assert_reward_order(task: Any, reward: Any = None) -> RewardCheckReport:
    """Raise `AssertionError` with a readable counterexample if a worse outcome can outscore a
    better one (or the task declares nothing to check); return the report otherwise."""
    report = check_task_reward(task, reward)
    if not report.ok:
        raise AssertionError(
            f"reward order violated for task {getattr(task, 'name', '?')!r}:\n{report.explain()}"
        )
    return report
