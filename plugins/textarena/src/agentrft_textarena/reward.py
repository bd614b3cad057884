"""The reward: TextArena's own outcome as tiers, with its partial progress as shaping."""

from __future__ import annotations

from agentrft import RewardResult, Tier, TieredReward
from agentrft_textarena.arena import Outcome

TIERS = TieredReward(
    [
        Tier(name="win", base=1.0, solved=True, description="TextArena's reward 1: the game won"),
        # TextArena scores a loss at the turn limit by the game's percentage completion
        # (GuessTheNumber: how close the last guess was; Mastermind: its pegs): that, in
        # [0, 1), is the only shaping, mapped to [-1, 1) and clipped into the tier.
        Tier(
            name="loss",
            base=0.0,
            shaping_weight=0.3,
            description="turn limit reached; shaped by the game's percentage completion",
        ),
        Tier(
            name="invalid",
            base=-0.6,
            shaping_weight=0.2,
            description="TextArena ended the game for invalid moves (its invalid_move flag)",
        ),
        Tier(
            name="unfinished",
            base=-1.0,
            description="the game never ended: no move, text instead of a call, out of turns",
        ),
    ]
)


def outcome_tier(outcome: Outcome) -> str:
    """The tier TextArena's outcome falls in."""
    if not outcome.done:
        return "unfinished"
    if outcome.invalid_move:
        return "invalid"
    # Every single-player TextArena game ends a win with `set_outcome(reward=1)`; a loss
    # gets its percentage completion, below 1 in the games this plugin registers.
    return "win" if outcome.reward == 1 else "loss"


def score_outcome(outcome: Outcome) -> RewardResult:
    """Our reward for a TextArena outcome: a pure function of it (the tests replay the
    moves in an independent TextArena env and compare)."""
    tier = outcome_tier(outcome)
    components = {"turn_count": float(outcome.turn_count)}
    if outcome.reward is not None:
        components["textarena_reward"] = outcome.reward
    shaping = 0.0 if outcome.reward is None else 2.0 * outcome.reward - 1.0
    return TIERS.score(tier, shaping if tier in ("loss", "invalid") else 0.0, components=components)
