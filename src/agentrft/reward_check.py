"""`agentrft reward check` as a library: prove a task's reward ranks outcomes correctly.

Use it in a plugin's tests::

    from agentrft.reward_check import assert_reward_order

    def test_reward_order():
        assert_reward_order(MyTask())
"""

from __future__ import annotations

from typing import Any

from agentrft.reward import NamedReward, RewardCheckReport, RewardSample, check_reward_order


class RewardCheckError(ValueError):
    """The samples for a reward check could not be produced (not an ordering violation)."""


def reward_samples(task: Any, reward: NamedReward | None = None) -> list[RewardSample]:
    """The samples to check: the task's own, or those of a swapped-in plugin reward.

    A `NamedReward` is checkable when it declares `tiers` or a `samples(task)` function; a
    reward without either cannot be simulated.
    """
    if reward is None:
        source = f"task {getattr(task, 'name', '?')!r}"
        produce: Any = task.reward_samples
    else:
        if not isinstance(reward, NamedReward):
            reward = NamedReward(reward)
        source = f"reward {reward.__name__!r}"
        samples, tiers = reward.samples, reward.tiers
        if samples is not None:

            def produce() -> Any:
                assert samples is not None
                return samples(task)
        elif tiers is not None:
            produce = tiers.samples
        else:
            raise RewardCheckError(
                f"reward {reward.__name__!r} declares no tiers: give its NamedReward "
                "`tiers=` (a TieredReward) or `samples=` (a function of the task) so the "
                "check can simulate its outcomes"
            )
    try:
        return list(produce() or [])
    except Exception as exc:
        raise RewardCheckError(
            f"{source}: producing reward samples failed: {type(exc).__name__}: {exc}"
        ) from exc


def check_task_reward(task: Any, reward: NamedReward | None = None) -> RewardCheckReport:
    """Run `check_reward_order` on the task's (or the plugin reward's) samples."""
    return check_reward_order(reward_samples(task, reward))


def assert_reward_order(task: Any, reward: NamedReward | None = None) -> RewardCheckReport:
    """Raise `AssertionError` with a readable counterexample if a worse outcome can outscore a
    better one (or the task declares nothing to check); return the report otherwise."""
    report = check_task_reward(task, reward)
    if not report.ok:
        raise AssertionError(
            f"reward order violated for task {getattr(task, 'name', '?')!r}:\n{report.explain()}"
        )
    return report
