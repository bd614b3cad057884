"""Advantage estimators: rewards of a step (grouped by prompt) -> one advantage per rollout.

A registry keyed by the managed service's `advantage_method` names, so adding a variant is
one decorated function. Rollouts of a group are consecutive: `rewards[g*G:(g+1)*G]`.
`group_based_per_turn` (in `PER_TURN_METHODS`) also has a per-turn half, `group_per_turn`:
one advantage per turn from `RewardResult.per_turn`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentrft.backends.local.algo.registry import Registry
from agentrft.trajectory import Trajectory

#: Added to the group std before dividing (TRL 1.16 uses 1e-4).
STD_EPS = 1e-4


@dataclass(frozen=True)
class Advantages:
    values: list[float]
    #: Fraction of groups whose rewards were all equal (they carry no learning signal).
    zero_variance_fraction: float


AdvantageFn = Callable[[Sequence[float], int, bool], Advantages]
ADVANTAGES: Registry[AdvantageFn] = Registry(
    "advantage_method", "agentrft_advantages", "@register_advantage"
)


def register_advantage(name: str) -> Callable[[AdvantageFn], AdvantageFn]:
    """Decorator: an advantage estimator `advantage_method: NAME` selects."""
    return ADVANTAGES.register(name)


@register_advantage("group_based")
def group_based(rewards: Sequence[float], group_size: int, scale: bool = True) -> Advantages:
    """GRPO: `A_i = (r_i - mean_g) / (std_g + 1e-4)`, std Bessel-corrected.

    `scale=False` is Dr.GRPO (`A_i = r_i - mean_g`). A group whose rewards are all equal
    gives exactly 0 to each of its rollouts.
    """
    if group_size < 2:
        raise ValueError(f"group_size must be >= 2 for group advantages, got {group_size}")
    if len(rewards) % group_size:
        raise ValueError(
            f"{len(rewards)} rewards do not split into groups of {group_size}; "
            "every prompt needs exactly group_size rollouts"
        )
    values: list[float] = []
    flat = 0
    for start in range(0, len(rewards), group_size):
        group = [float(r) for r in rewards[start : start + group_size]]
        if all(r == group[0] for r in group):
            values.extend([0.0] * group_size)
            flat += 1
            continue
        mean = sum(group) / group_size
        std = math.sqrt(sum((r - mean) ** 2 for r in group) / (group_size - 1))
        denom = std + STD_EPS if scale else 1.0
        values.extend((r - mean) / denom for r in group)
    groups = len(rewards) // group_size
    return Advantages(values, flat / groups if groups else 0.0)


def compute_advantages(
    rewards: Sequence[float], group_size: int, *, method: str = "group_based", scale: bool = True
) -> Advantages:
    """Look up `method` in the registry and apply it."""
    try:
        fn = ADVANTAGES[method]
    except KeyError:
        raise ValueError(
            f"advantage_method {method!r} is unknown; available: {', '.join(sorted(ADVANTAGES))}"
        ) from None
    return fn(rewards, group_size, scale)


def turn_penalty_credit(
    faults: Sequence[Sequence[bool]], group_size: int, weight: float
) -> list[list[float]]:
    """Per-turn credit for a per-turn penalty (format shaping): for each rollout, one value
    per turn, `weight * (c - mean_g c)` with c = -1 on a faulty turn and 0 otherwise, the
    mean taken over every turn of the rollout's group.

    Added to the rollout's advantage on that turn's tokens only, so the blame for a broken
    tool call lands on the reply that broke it, not on the whole episode; centred, so a
    group whose turns are all alike gets nothing.
    """
    if len(faults) % group_size:
        raise ValueError(f"{len(faults)} rollouts do not split into groups of {group_size}")
    out: list[list[float]] = []
    for start in range(0, len(faults), group_size):
        group = faults[start : start + group_size]
        turns = [f for rollout in group for f in rollout]
        mean = -sum(turns) / len(turns) if turns else 0.0
        out.extend([weight * ((-1.0 if f else 0.0) - mean) for f in rollout] for rollout in group)
    return out


# -- per-turn credit ----------------------------------------------------------------------


@dataclass(frozen=True)
class TurnAdvantages:
    """Per-turn advantages of a step, one entry per rollout (rollouts in group order)."""

    #: One advantage per turn of the rollout, or None where the rollout fell back to its
    #: episode advantage (it had no usable per-turn rewards).
    turns: list[list[float] | None]
    #: The episode advantage of every rollout (group_based over the totals): what a
    #: fallen-back rollout trains with.
    episode: list[float]
    #: Fraction of groups in which every advantage (per-turn and fallback) is 0.
    zero_variance_fraction: float
    #: Fraction of rollouts that fell back to the episode advantage.
    fallback_fraction: float


#: advantage_method names that credit each turn with its own reward (`RewardResult.per_turn`).
PER_TURN_METHODS: frozenset[str] = frozenset({"group_based_per_turn"})


@register_advantage("group_based_per_turn")
def _group_based_per_turn_episodes(
    rewards: Sequence[float], group_size: int, scale: bool = True
) -> Advantages:
    # The episode-level half of group_based_per_turn: what a rollout without usable per-turn
    # rewards trains with (GRPO over the totals). The per-turn half is group_per_turn.
    return group_based(rewards, group_size, scale)


def group_per_turn(
    per_turn: Sequence[Sequence[float] | None],
    totals: Sequence[float],
    group_size: int,
    scale: bool = True,
) -> TurnAdvantages:
    """`advantage_method=group_based_per_turn`: turn t of a rollout is compared with turn t of
    the other rollouts of its group.

    `A_i,t = (r_i,t - mean_t) / (std_t + 1e-4)`, the mean and the Bessel-corrected std taken
    over the rollouts of the group that have a turn t with a per-turn reward (`scale=False`:
    `r_i,t - mean_t`, Dr.GRPO). A turn position that fewer than two rollouts of the group
    reach, or whose rewards are all equal, gives 0 (nothing to compare it with), like a
    zero-variance group in `group_based`.

    `per_turn[i]` is rollout i's one reward per policy call, or None when it has none usable
    (the caller checks the length against the rollout's turns): such a rollout gets its
    episode advantage (`group_based` over `totals`, the whole group) on every turn and does
    not enter the per-turn statistics.
    """
    if len(per_turn) != len(totals):
        raise ValueError(f"{len(per_turn)} per-turn entries for {len(totals)} rollouts")
    episode = group_based(totals, group_size, scale)
    turns: list[list[float] | None] = []
    flat = 0
    for start in range(0, len(totals), group_size):
        group = per_turn[start : start + group_size]
        depth = max((len(r) for r in group if r is not None), default=0)
        by_position: list[list[float]] = []
        for t in range(depth):
            column = [float(r[t]) for r in group if r is not None and len(r) > t]
            if len(column) < 2 or all(v == column[0] for v in column):
                by_position.append([])  # marks "every rollout gets 0 at this turn"
                continue
            mean = sum(column) / len(column)
            std = math.sqrt(sum((v - mean) ** 2 for v in column) / (len(column) - 1))
            by_position.append([mean, std + STD_EPS if scale else 1.0])
        group_turns: list[list[float] | None] = []
        for r in group:
            if r is None:
                group_turns.append(None)
                continue
            values = []
            for t, v in enumerate(r):
                stats = by_position[t]
                values.append((float(v) - stats[0]) / stats[1] if stats else 0.0)
            group_turns.append(values)
        turns.extend(group_turns)
        signal = any(
            any(a != 0.0 for a in adv) if adv is not None else episode.values[start + k] != 0.0
            for k, adv in enumerate(group_turns)
        )
        flat += not signal
    groups = len(totals) // group_size
    fallback = sum(t is None for t in turns)
    return TurnAdvantages(
        turns,
        episode.values,
        flat / groups if groups else 0.0,
        fallback / len(turns) if turns else 0.0,
    )


def usable_per_turn(traj: Trajectory) -> tuple[list[float] | None, str | None]:
    """The rollout's per-turn rewards for per-turn credit, or (None, why not).

    Usable means what the SageMaker runtime also requires before it reports a list: one
    finite value per policy call (`len(traj.turns)`); any other list would credit the wrong
    turns, so the rollout trains with its episode advantage instead.
    """
    per_turn = traj.reward.per_turn if traj.reward is not None else None
    if not per_turn:
        return None, "no per_turn rewards"
    if len(per_turn) != len(traj.turns):
        return None, f"{len(per_turn)} per-turn rewards for {len(traj.turns)} policy calls"
    values = [float(v) for v in per_turn]
    if not all(math.isfinite(v) for v in values):
        return None, "a per-turn reward is not finite"
    return values, None
