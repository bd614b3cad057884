"""The reward: BFCL's own multi-turn checker, turn by turn.

BFCL checks an entry turn by turn (state of every API instance against the ground truth's
execution, then the ground truth's results among the model's) and fails the entry at the
first turn that does not pass. `turn_verdicts` asks the checker about each prefix of the
turns, so turn k passes when BFCL's checker accepts turns 0..k; the entry passes when all
do, which is exactly BFCL's verdict. The tiers:

- all_turns_pass: BFCL's checker accepts the entry (solved);
- some_turns_pass: a prefix of the turns passes, shaping 2 * passed / turns - 1 in a band;
- no_turn_passes: the first turn already fails, but the model made a decodable call;
- no_valid_call: not a single decodable call to one of the entry's tools (or a bad row),
  even where turns with an empty ground truth (miss_param) pass the checker vacuously.

A turn whose ground truth is empty (miss_param's turn without the parameter) is not
checked by BFCL's `multi_turn_checker` (its calls still run, so they shape the state the
next turn is checked on); bfcl-eval 2026.3.23 imports `multi_turn_irrelevance_checker`
in its eval runner but never calls it, so neither does this reward.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentrft import RewardResult, Tier, TieredReward, Trajectory
from agentrft_bfcl import suite

TIERS = TieredReward(
    [
        Tier(
            name="all_turns_pass",
            base=1.0,
            solved=True,
            description="BFCL's checker accepts the entry",
        ),
        Tier(
            name="some_turns_pass",
            base=0.0,
            shaping_weight=0.4,
            description="the first k of n turns pass; shaping 2k/n - 1",
        ),
        Tier(name="no_turn_passes", base=-0.6, description="turn 0 fails BFCL's checker"),
        Tier(name="no_valid_call", base=-1.0, description="no decodable tool call at all"),
    ]
)


@dataclass(frozen=True)
class Decoded:
    """A trajectory as BFCL's evaluation sees it: per turn, per step, the call strings."""

    turns: list[list[list[str]]]
    #: Turns in which the model took more steps than BFCL's inference allows (forced quit).
    forced_quit_turn: int | None
    calls: int


def decode_trajectory(trajectory: Trajectory, n_turns: int, allowed: frozenset[str]) -> Decoded:
    """The model's steps per user turn. A turn ends where the loop sent the next user
    message; a step that does not decode is skipped, as BFCL's evaluation skips it; calls
    outside `allowed` (the entry's methods) are refused (`suite.decode_step`)."""
    turns: list[list[list[str]]] = [[] for _ in range(n_turns)]
    steps = [0] * n_turns
    current = 0
    forced: int | None = None
    calls = 0
    for turn in trajectory.turns:
        tool_calls = list(turn.assistant.tool_calls or [])
        if tool_calls and current < n_turns:
            steps[current] += 1
            if steps[current] > suite.STEP_LIMIT and forced is None:
                forced = current
            step = suite.decode_step([(c.name, c.arguments) for c in tool_calls], allowed)
            if step:
                turns[current].append(step)
                calls += sum(1 for c in step if c != suite.REFUSED_CALL)
        if any(m.role == "user" for m in turn.tool_messages):
            current += 1
    return Decoded(turns, forced, calls)


def turn_verdicts(entry: suite.Entry, decoded: Decoded) -> list[bool]:
    """Per turn, whether BFCL's checker accepts the turns up to and including it. Turns
    from a forced quit on fail (BFCL fails the whole entry then)."""
    n = len(entry.ground_truth)
    verdicts: list[bool] = []
    for k in range(n):
        if decoded.forced_quit_turn is not None and k >= decoded.forced_quit_turn:
            ok = False
        elif verdicts and not verdicts[-1]:
            ok = False  # the checker stops at the first failing turn
        else:
            ok = bool(suite.check_turns(entry, decoded.turns, k + 1)["valid"])
        verdicts.append(ok)
    return verdicts


def score(entry: suite.Entry, decoded: Decoded, verdicts: list[bool]) -> RewardResult:
    n = len(verdicts)
    passed = verdicts.index(False) if False in verdicts else n
    components = {"turns_passed": float(passed), "turns": float(n), "calls": float(decoded.calls)}
    if passed == n:
        return TIERS.score("all_turns_pass", components=components)
    # Before the prefix count: a turn whose ground truth is empty (miss_param) passes
    # BFCL's checker whatever the model does, so silence alone must not earn partial credit.
    if not decoded.calls:
        return TIERS.score("no_valid_call", components=components)
    if passed > 0:
        return TIERS.score("some_turns_pass", 2 * passed / n - 1, components=components)
    return TIERS.score("no_turn_passes", components=components)


def bfcl_reward(entry: suite.Entry, trajectory: Trajectory) -> RewardResult:
    """Score one finished episode of `entry` with BFCL's checker."""
    n = len(entry.ground_truth)
    decoded = decode_trajectory(trajectory, n, suite.callable_names(entry.id))
    return score(entry, decoded, turn_verdicts(entry, decoded))
