"""Advantage estimators: rewards of a step (grouped by prompt) -> one advantage per rollout.

A registry keyed by the managed service's `advantage_method` names, so adding a variant is
one decorated function. Rollouts of a group are consecutive: `rewards[g*G:(g+1)*G]`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Added to the group std before dividing (TRL 1.16 uses 1e-4).
STD_EPS = 1e-4


@dataclass(frozen=True)
class Advantages:
    values: list[float]
    #: Fraction of groups whose rewards were all equal (they carry no learning signal).
    zero_variance_fraction: float


AdvantageFn = Callable[[Sequence[float], int, bool], Advantages]
ADVANTAGES: dict[str, AdvantageFn] = {}


def register_advantage(name: str) -> Callable[[AdvantageFn], AdvantageFn]:
    def wrap(fn: AdvantageFn) -> AdvantageFn:
        ADVANTAGES[name] = fn
        return fn

    return wrap


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
