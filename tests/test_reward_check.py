"""`reward check` as a library: it passes a well-ordered reward and catches inverted tiers,
shaping that lifts a worse tier over a better one, and tasks with nothing to check."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from agentrft import NamedReward, RewardResult, RewardSample, Tier, TieredReward
from agentrft.reward_check import (
    RewardCheckError,
    assert_reward_order,
    check_task_reward,
    reward_samples,
)
from agentrft.testing import CounterTask, FindNumberTask


class InvertedTask(FindNumberTask):
    name: ClassVar[str] = "inverted"
    tiers: ClassVar[TieredReward] = TieredReward(
        [
            Tier(name="solved", base=0.0, solved=True),
            Tier(name="unsolved", base=0.5),
        ]
    )


class OverlappingShapingTask(FindNumberTask):
    """Tiers in the right order, but the loss's shaping band reaches over the win's."""

    name: ClassVar[str] = "overlapping"
    tiers: ClassVar[TieredReward] = TieredReward(
        [
            Tier(name="solved", base=1.0, shaping_weight=0.3, solved=True),
            Tier(name="unsolved", base=0.5, shaping_weight=0.3),
        ]
    )


class NoTiersTask(FindNumberTask):
    name: ClassVar[str] = "no_tiers"
    tiers: ClassVar[TieredReward | None] = None  # type: ignore[assignment]


class ProbingTask(FindNumberTask):
    """Yields rewards from hand-written logic (no declared tiers), one of them out of order."""

    name: ClassVar[str] = "probing"
    tiers: ClassVar[TieredReward | None] = None  # type: ignore[assignment]

    def reward_samples(self) -> list[RewardSample]:
        return [
            RewardSample(0, "win", "2 guesses", RewardResult(total=1.0, solved=True)),
            RewardSample(0, "win", "11 guesses", RewardResult(total=0.1, solved=True)),
            RewardSample(1, "loss", "close miss", RewardResult(total=0.2)),
        ]


def test_good_tiers_pass() -> None:
    report = assert_reward_order(FindNumberTask())
    assert report.ok
    assert [t[1] for t in report.tier_ranges()] == ["solved", "unsolved", "no_guess"]
    assert_reward_order(CounterTask())


def test_inverted_tiers_fail_with_a_counterexample() -> None:
    with pytest.raises(AssertionError) as exc:
        assert_reward_order(InvertedTask())
    msg = str(exc.value)
    assert "task 'inverted'" in msg
    assert "counterexample: tier 'unsolved'" in msg and "tier 'solved'" in msg
    assert "0.5000" in msg  # the worse tier's score is shown


def test_shaping_that_crosses_tiers_fails() -> None:
    report = check_task_reward(OverlappingShapingTask())
    assert not report.ok
    (violation,) = report.violations
    assert violation.worse.tier == "unsolved" and violation.worse.result.total == pytest.approx(0.8)
    assert violation.better.tier == "solved" and violation.better.result.total == pytest.approx(0.7)


def test_hand_written_samples_are_checked() -> None:
    with pytest.raises(AssertionError, match=r"tier 'loss' \(close miss\) scored 0\.2000"):
        assert_reward_order(ProbingTask())


def test_nothing_to_check_fails() -> None:
    with pytest.raises(AssertionError, match="no reward samples"):
        assert_reward_order(NoTiersTask())


def test_plugin_reward_with_tiers_is_checked_instead_of_the_task() -> None:
    def good(env: Any, traj: Any) -> RewardResult:
        return RewardResult(total=0)

    tiers = TieredReward([Tier(name="a", base=1), Tier(name="b", base=0)])
    report = assert_reward_order(InvertedTask(), NamedReward(good, tiers=tiers))
    # the task's own tiers are not used
    assert [t[1] for t in report.tier_ranges()] == ["a", "b"]


def test_plugin_reward_without_tiers_cannot_be_checked() -> None:
    def bare(env: Any, traj: Any) -> RewardResult:
        return RewardResult(total=0)

    with pytest.raises(RewardCheckError, match="'bare' declares no tiers"):
        reward_samples(FindNumberTask(), bare)


def test_a_crashing_sample_source_is_reported() -> None:
    class Crashing(FindNumberTask):
        def reward_samples(self) -> list[RewardSample]:
            raise RuntimeError("boom")

    with pytest.raises(RewardCheckError, match="producing reward samples failed: RuntimeError"):
        check_task_reward(Crashing())
