"""The shape of a set of episodes, and when it has collapsed into one: an exploit watch.

A policy that finds a way to be paid without doing the task tends to do it the same way in
every episode: a call written as text that the task's recovery plays anyway, a reply cut
off at max_tokens that ends the game, an episode of one turn. `EpisodeShape` counts those
features over a set of episodes (a training step's rollouts, an eval report) and
`collapsed` names the ones nearly every episode shares *and* the reward paid for:

- `plain_text_call` always: the reward was given for a call the policy never made;
- `truncated` and `one_turn` only when a reference without the feature (an earlier step,
  another row of the table) scored lower: a random model's replies are cut off too, but
  nothing is exploited when that is the floor, and a single-turn task is one turn anyway.

This is a reason to read the episodes (`agentrft replay FILE --index N`), not proof.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agentrft.trajectory import FailureKind, Trajectory

#: Nearly every episode: the share of a set's episodes that must have a feature before
#: the set counts as collapsed into it ("most rollouts", not a few stragglers).
SUSPECT_SHARE = 0.8

PLAIN_TEXT_CALL = FailureKind.PLAIN_TEXT_CALL
TRUNCATED = FailureKind.TRUNCATED
ONE_TURN = "one_turn"
#: The features counted, in the order they are named.
FEATURES = (PLAIN_TEXT_CALL, TRUNCATED, ONE_TURN)
#: Features that are suspect on their own, whatever the reward did.
ALWAYS_SUSPECT = frozenset({PLAIN_TEXT_CALL})


@dataclass(frozen=True)
class EpisodeShape:
    """How many of `episodes` have each feature, and their mean reward."""

    episodes: int
    counts: dict[str, int] = field(default_factory=dict)
    mean_reward: float = 0.0

    @classmethod
    def of_trajectories(cls, trajectories: Sequence[Trajectory]) -> EpisodeShape:
        rewards = [t.reward.total if t.reward else 0.0 for t in trajectories]
        return cls(
            episodes=len(trajectories),
            counts={f: sum(has_feature(t, f) for t in trajectories) for f in FEATURES},
            mean_reward=statistics.fmean(rewards) if rewards else 0.0,
        )

    @classmethod
    def of_counts(
        cls,
        episodes: int,
        failure_kinds: Mapping[str, int],
        turn_histogram: Mapping[int, int],
        mean_reward: float,
    ) -> EpisodeShape:
        """From an eval report's counts (failure kinds are counted once per episode)."""
        return cls(
            episodes=episodes,
            counts={
                PLAIN_TEXT_CALL: failure_kinds.get(PLAIN_TEXT_CALL, 0),
                TRUNCATED: failure_kinds.get(TRUNCATED, 0),
                ONE_TURN: turn_histogram.get(1, 0),
            },
            mean_reward=mean_reward,
        )

    def holds(self, feature: str, share: float = SUSPECT_SHARE) -> bool:
        """Whether at least `share` of the episodes (and at least one) have `feature`."""
        n = self.counts.get(feature, 0)
        return n > 0 and n >= share * self.episodes


def has_feature(trajectory: Trajectory, feature: str) -> bool:
    if feature == ONE_TURN:
        return len(trajectory.turns) == 1
    return feature in trajectory.failure_kinds


def collapsed(
    shape: EpisodeShape,
    references: Sequence[EpisodeShape] = (),
    share: float = SUSPECT_SHARE,
) -> list[str]:
    """The features `shape` collapsed into that point to an exploit (see the module doc):
    `plain_text_call` whenever it holds, the others when some reference without them
    scored a lower mean reward."""
    out = []
    for feature in FEATURES:
        if not shape.holds(feature, share):
            continue
        paid = any(
            ref.mean_reward < shape.mean_reward and not ref.holds(feature, share)
            for ref in references
        )
        if feature in ALWAYS_SUSPECT or paid:
            out.append(feature)
    return out


def describe(shape: EpisodeShape, features: Sequence[str], noun: str = "episodes") -> str:
    """`32/32 episodes plain_text_call + truncated` (one count when all are equal), else
    `32/32 episodes plain_text_call, 30/32 truncated`."""
    n = shape.episodes
    counts = [shape.counts.get(f, 0) for f in features]
    if len(set(counts)) == 1:
        return f"{counts[0]}/{n} {noun} {' + '.join(features)}"
    first, *rest = zip(counts, features, strict=True)
    return ", ".join([f"{first[0]}/{n} {noun} {first[1]}", *(f"{c}/{n} {f}" for c, f in rest)])


def example(trajectories: Sequence[Trajectory], features: Sequence[str]) -> int | None:
    """The position of the first episode with every one of `features` (else with the first
    of them), or None."""
    for wanted in (features, features[:1]):
        for i, t in enumerate(trajectories):
            if all(has_feature(t, f) for f in wanted):
                return i
    return None
