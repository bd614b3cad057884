"""Rewards: `RewardResult`, tiered rewards (outcome tier + bounded shaping), and the
ordering check behind `agentrft reward check`.

A tiered reward ranks outcomes first (solved beats lost beats never played) and lets a
bounded shaping term break ties *inside* a tier only. The classic bug is a shaping term
large enough to lift a worse outcome over a better one; `check_reward_order` finds it.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field


class RewardResult(BaseModel):
    """The score of one episode.

    `total` is what training optimises. `outcome` names the tier the episode landed in;
    `components` breaks the total down for humans (shown by `agentrft play`).
    """

    total: float
    outcome: str = ""
    shaping: float = 0.0
    per_turn: list[float] | None = Field(
        default=None, description="Per-turn rewards, for services that accept one per turn."
    )
    solved: bool = False
    components: dict[str, float] = Field(default_factory=dict)


class RewardValueError(ValueError):
    """A reward returned what training cannot use: not a `RewardResult`, or a NaN/inf."""


def reward_name(fn: Any) -> str:
    """How a message names the reward `fn` (a `NamedReward`, a task's method, a function)."""
    inner = getattr(fn, "fn", fn)
    owner = getattr(inner, "__self__", None)
    name = getattr(inner, "__qualname__", None) or type(inner).__name__
    if owner is not None and "." not in name:
        name = f"{type(owner).__name__}.{name}"
    return name


def checked_reward(result: Any, fn: Any, row: str) -> RewardResult:
    """`result` when it is a `RewardResult` whose numbers are all finite; else
    `RewardValueError` naming the reward `fn`, the `row` and the value.

    A NaN reward would poison every advantage of its group (and a mean over the step); a
    wrong type would fail far from its cause, in a report or the trainer.
    """
    who = f"reward {reward_name(fn)} on row {row}"
    if not isinstance(result, RewardResult):
        shown = repr(result)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise RewardValueError(
            f"{who} returned {type(result).__name__} {shown}, not a RewardResult: return "
            "agentrft.RewardResult(total=..., outcome=...) (or a TieredReward's result)"
        )
    numbers = [("total", result.total), ("shaping", result.shaping)]
    numbers += [(f"components[{k!r}]", v) for k, v in result.components.items()]
    # per_turn is left to its consumer: the runtime falls back to the total when per-turn
    # rewards do not fit (wrong count, not finite), and says so.
    for field_name, value in numbers:
        if not math.isfinite(value):
            raise RewardValueError(
                f"{who} returned {field_name} = {value}: rewards must be finite numbers "
                "(check for a division by zero or a log of 0)"
            )
    return result


def clip(value: float, low: float = -1.0, high: float = 1.0) -> float:
    if math.isnan(value):
        return 0.0
    return max(low, min(high, value))


class Tier(BaseModel):
    """One outcome tier: `base + shaping_weight * clip(shaping, -1, 1)`."""

    name: str
    base: float
    shaping_weight: float = 0.0
    solved: bool = False
    description: str = ""

    @property
    def low(self) -> float:
        return self.base - abs(self.shaping_weight)

    @property
    def high(self) -> float:
        return self.base + abs(self.shaping_weight)


class TieredReward:
    """Tiers from best to worst, and a `score` that clips the shaping into its band.

    >>> tiers = TieredReward([Tier(name="win", base=1.0, shaping_weight=0.1),
    ...                       Tier(name="loss", base=-0.5, shaping_weight=0.1)])
    >>> tiers.score("loss", shaping=7.0).total
    -0.4
    """

    def __init__(self, tiers: Iterable[Tier]) -> None:
        self.tiers = list(tiers)
        if not self.tiers:
            raise ValueError("TieredReward needs at least one tier")
        names = [t.name for t in self.tiers]
        if len(set(names)) != len(names):
            raise ValueError(f"tier names must be unique, got {names}")
        self._by_name = {t.name: t for t in self.tiers}

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tiers]

    def tier(self, name: str) -> Tier:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"unknown tier {name!r}; tiers are {self.names}") from None

    def score(
        self,
        name: str,
        shaping: float = 0.0,
        *,
        components: dict[str, float] | None = None,
        per_turn: list[float] | None = None,
    ) -> RewardResult:
        t = self.tier(name)
        clipped = clip(shaping)
        total = t.base + t.shaping_weight * clipped
        comps = {"outcome": t.base, "shaping": t.shaping_weight * clipped}
        comps.update(components or {})
        return RewardResult(
            total=round(total, 10),
            outcome=t.name,
            shaping=shaping,
            per_turn=per_turn,
            solved=t.solved,
            components=comps,
        )

    def lowest(self) -> RewardResult:
        """The worst possible result: what a rollout that never got going receives."""
        worst = self.tiers[-1]
        return self.score(worst.name, -1.0 if worst.shaping_weight >= 0 else 1.0)

    def samples(self) -> list[RewardSample]:
        """Each tier at extreme and neutral shaping, for `check_reward_order`."""
        out = []
        for rank, t in enumerate(self.tiers):
            for s in (-1e9, -1.0, 0.0, 1.0, 1e9):
                out.append(RewardSample(rank, t.name, f"shaping={s:g}", self.score(t.name, s)))
        return out


@dataclass
class RewardSample:
    """A reward observed (or simulated) for a known tier; rank 0 is the best tier."""

    rank: int
    tier: str
    label: str
    result: RewardResult


@dataclass
class RewardViolation:
    better: RewardSample
    worse: RewardSample

    def explain(self) -> str:
        return (
            f"tier {self.worse.tier!r} ({self.worse.label}) scored "
            f"{self.worse.result.total:.4f}, which is >= tier {self.better.tier!r} "
            f"({self.better.label}) at {self.better.result.total:.4f}; a worse outcome "
            f"must always score below a better one. Components: worse "
            f"{_fmt(self.worse.result.components)}; better {_fmt(self.better.result.components)}"
        )


@dataclass
class RewardCheckReport:
    samples: list[RewardSample]
    violations: list[RewardViolation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations and not self.problems

    def tier_ranges(self) -> list[tuple[int, str, float, float, int]]:
        """(rank, tier, min, max, n) per tier, best first."""
        by: dict[tuple[int, str], list[float]] = {}
        for s in self.samples:
            by.setdefault((s.rank, s.tier), []).append(s.result.total)
        return [(r, t, min(v), max(v), len(v)) for (r, t), v in sorted(by.items())]

    def explain(self) -> str:
        if self.ok:
            return f"reward order holds over {len(self.samples)} samples"
        lines = list(self.problems)
        if self.violations:
            worst = max(self.violations, key=lambda v: v.worse.result.total - v.better.result.total)
            lines.append("counterexample: " + worst.explain())
            lines.append(f"{len(self.violations)} violating pair(s) in all")
        return "\n".join(lines)


def check_reward_order(samples: Iterable[RewardSample]) -> RewardCheckReport:
    """Every sample of a better tier must outscore every sample of a worse tier."""
    samples = list(samples)
    report = RewardCheckReport(samples=samples)
    if not samples:
        report.problems.append("no reward samples: the task declares no tiers and no probes")
        return report
    for s in samples:
        if not math.isfinite(s.result.total):
            report.problems.append(f"tier {s.tier!r} ({s.label}) scored {s.result.total}")
    # Compare each tier's minimum with the maximum of every worse tier: O(tiers^2).
    by_rank: dict[int, list[RewardSample]] = {}
    for s in samples:
        by_rank.setdefault(s.rank, []).append(s)
    ranks = sorted(by_rank)
    for i, better_rank in enumerate(ranks):
        for worse_rank in ranks[i + 1 :]:
            lo = min(by_rank[better_rank], key=lambda s: s.result.total)
            hi = max(by_rank[worse_rank], key=lambda s: s.result.total)
            if hi.result.total >= lo.result.total:
                report.violations.append(RewardViolation(better=lo, worse=hi))
    return report


def _fmt(components: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:+.4g}" for k, v in components.items()) or "-"


@dataclass(frozen=True)
class NamedReward:
    """A reward a plugin offers by name (`--reward NAME`) in place of a task's own.

    Return it from the `agentrft_rewards` hook, keyed by its name::

        STRICT = NamedReward(strict_reward, tasks={"expense_report"}, tiers=STRICT_TIERS)

        @agentrft.hookimpl
        def agentrft_rewards():
            return {"expense_report_strict": STRICT}

    Attributes:
        fn: the reward, `fn(env, trajectory) -> RewardResult`; keep it a pure function of
            both, so local rollouts, evaluations and the AgentCore runtime score alike. It
            may be `async def` (a judge reward, `agentrft.judges`); the loop awaits it.
        tasks: the task names it understands (None: any task). `--reward` with another task
            is refused with an error naming them.
        tiers: its outcome tiers, best first, so `agentrft reward check` can simulate them.
        samples: `samples(task) -> list[RewardSample]`, preferred by the check when given:
            the simulated tiers plus this reward on real (scripted) episodes.
        description: one line for `agentrft tasks`.

    A `NamedReward` is callable like `fn`.
    """

    fn: Callable[[Any, Any], RewardResult | Awaitable[RewardResult]]
    tasks: Collection[str] | None = None
    tiers: TieredReward | None = None
    samples: Callable[[Any], Iterable[RewardSample]] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(f"NamedReward needs a callable fn(env, trajectory), got {self.fn!r}")
        if self.tasks is not None:
            if isinstance(self.tasks, str):  # {"wordle"} written as "wordle"
                raise TypeError(f"NamedReward tasks must be a set of names, got {self.tasks!r}")
            object.__setattr__(self, "tasks", frozenset(self.tasks))

    @property
    def __name__(self) -> str:
        return getattr(self.fn, "__name__", type(self.fn).__name__)

    def __call__(self, env: Any, trajectory: Any) -> RewardResult | Awaitable[RewardResult]:
        return self.fn(env, trajectory)

    def applies_to(self, task_name: str) -> bool:
        return self.tasks is None or task_name in self.tasks
