"""Per-turn credit (`advantage_method=group_based_per_turn`) in the local engine.

Unit tests: the advantage arithmetic against a hand computation (Python floats, float64),
where each turn's advantage lands, and the fallback to the episode advantage.

The learning test: a two-turn text task whose episode outcome says nothing about the replies
(total = 1: the conversation finished), while `per_turn` says how wrong turn 2 was:
`[0, -e2]`, e2 the number of 'e's in turn 2's reply per token it may have (32). The episode
advantage (`group_based`) sees equal totals and gives every token 0; only per-turn credit
sees that turn 2 was wrong. (`local.format_credit` is off: its truncation penalty shortens
replies, and with them the 'e' count, under either method.)

An outcome that varies at random instead (1 + a seeded uniform draw in [-0.5, 0.5]) made a
poor control: GRPO scales any noise to unit advantages, and Adam steps on them collapsed the
tiny model's replies on some runs (turn 2's 'e' ratio 0.65-1.42 over seeds 0-4 with 1 torch
thread, 0.09 for seed 0 with 2), so the control would not hold on every machine.

Why only turn 2 is scored (measured here): the 1M-parameter model writes both replies with
the same weights from nearly the same context, and what it learns on one turn it does on the
other. With turn 1 rewarded for 'a' and turn 2 penalised for 'a', neither moved in 60 steps
(the turns' gradients cancel); with turn 1 rewarded for 'a' and turn 2 unscored, turn 1's
collapse to a repeated word ("hav hav ...") emptied turn 2 of 'e' as well, so a falling
turn-2 rate would not show that the credit reached turn 2. With turn 1's per-turn rewards
all 0 its advantage is exactly 0, and a fall can only come from turn 2's own credit.

Measured with exactly these settings (40 steps of 2 prompts x 8, 1 torch thread, 2 busy CPU
cores, 10-20 s a run), turn 2's 'e's per token over the first 3 steps -> the last 3 steps
(ratio):

    seed   group_based_per_turn         group_based (episode credit)
    0      0.158 -> 0.000  (0.000)      0.156 -> 0.161  (1.03)
    1      0.183 -> 0.001  (0.004)      0.198 -> 0.166  (0.84)
    2      0.164 -> 0.000  (0.000)      0.165 -> 0.176  (1.06)
    3      0.186 -> 0.000  (0.000)      0.183 -> 0.175  (0.96)
    4      0.165 -> 0.000  (0.000)      0.169 -> 0.175  (1.03)

Per-turn credit removes the fault (turn 2 learns short replies without 'e': most of those runs
end in half the time); under episode credit the rate only moves by sampling noise (48 turn-2
replies in each window). One bar for both, BAR = 0.35 of the starting rate: the per-turn
runs' worst (0.004) is 90 times under it, the control's lowest (0.84) 2.4 times over it.
"""

from __future__ import annotations

import logging
import math
import os
import statistics
from typing import Any

import pytest

from agentrft import Environment, EpisodeLimits, Message, RewardResult, Task
from agentrft.backends.local.algo.advantages import STD_EPS, group_per_turn, usable_per_turn
from agentrft.backends.local.algo.sequences import rollout_sequences
from agentrft.backends.local.backend import train_async
from agentrft.trajectory import Trajectory, Turn, read_trajectories

from .conftest import tiny_config

# -- the advantage arithmetic ---------------------------------------------------------------


def test_each_turn_is_compared_with_the_same_turn_of_its_group():
    # Group 1: C has one turn only; turn 1 is reached by A and B alone, and they tie.
    # Group 2: D has no per-turn rewards and falls back to its episode advantage.
    per_turn = [[1.0, 0.0], [0.0, 0.0], [2.0], None, [3.0, 1.0], [1.0, 3.0]]
    totals = [1.0, 0.0, 2.0, 5.0, 4.0, 4.0]
    out = group_per_turn(per_turn, totals, group_size=3)
    # Turn 0 of group 1: {1, 0, 2}, mean 1, Bessel std sqrt((0 + 1 + 1) / 2) = 1.
    s1 = 1.0 + STD_EPS
    # Turn 0 of group 2 (E, F): {3, 1}, mean 2, std sqrt(2); turn 1: {1, 3}, the same.
    s2 = math.sqrt(2.0) + STD_EPS
    assert out.turns[:3] == [[0.0 / s1, 0.0], [-1.0 / s1, 0.0], [1.0 / s1]]
    assert out.turns[3] is None
    assert out.turns[4:] == [[1.0 / s2, -1.0 / s2], [-1.0 / s2, 1.0 / s2]]
    # D's episode advantage: totals {5, 4, 4}, mean 13/3, std sqrt(((2/3)^2 + 2 (1/3)^2) / 2).
    d = (5.0 - 13.0 / 3.0) / (math.sqrt((4.0 / 9.0 + 2.0 / 9.0) / 2.0) + STD_EPS)
    assert out.episode[3] == pytest.approx(d, rel=1e-12)
    assert out.fallback_fraction == pytest.approx(1 / 6)
    assert out.zero_variance_fraction == 0.0


def test_unscaled_turns_a_lone_turn_and_a_flat_group():
    # scale=False (Dr.GRPO): r - mean_t. Turn 2 is reached by one rollout: nothing to
    # compare it with, so 0. Group 2's turns all tie and its totals too: a flat group.
    per_turn = [[1.0, 2.0, 5.0], [0.0, 4.0], [0.5], [0.5]]
    out = group_per_turn(per_turn, [9.0, 1.0, 3.0, 3.0], group_size=2, scale=False)
    assert out.turns == [[0.5, -1.0, 0.0], [-0.5, 1.0], [0.0], [0.0]]
    assert out.zero_variance_fraction == 0.5
    assert out.fallback_fraction == 0.0


def test_turn_advantages_land_on_their_own_turns_tokens():
    turns = [
        Turn(
            index=0,
            assistant=Message(role="assistant", content="x"),
            prompt_token_ids=[1, 2],
            completion_token_ids=[3, 4],
        ),
        Turn(
            index=1,
            assistant=Message(role="assistant", content="y"),
            prompt_token_ids=[1, 2, 3, 4, 5],
            completion_token_ids=[6],
        ),
    ]
    traj = Trajectory(
        id="t", task="x", prompt="p", turns=turns, reward=RewardResult(total=0.0, per_turn=[1, 2])
    )
    (seq,) = rollout_sequences(traj, 9.0, [0.25, -0.5], [0.0, -0.125])
    assert seq.token_ids == [1, 2, 3, 4, 5, 6]
    assert seq.token_advantages == [0.0, 0.0, 0.25, 0.25, 0.0, -0.625]  # the episode's 9 unused
    (episode,) = rollout_sequences(traj, 9.0, None, None)
    assert episode.advantage == 9.0 and episode.token_advantages is None
    assert usable_per_turn(traj) == ([1.0, 2.0], None)
    short = traj.model_copy(update={"reward": RewardResult(total=0.0, per_turn=[1.0])})
    assert usable_per_turn(short) == (None, "1 per-turn rewards for 2 policy calls")
    nan = traj.model_copy(update={"reward": RewardResult(total=0.0, per_turn=[1.0, math.nan])})
    assert usable_per_turn(nan) == (None, "a per-turn reward is not finite")
    assert usable_per_turn(traj.model_copy(update={"reward": None}))[0] is None


# -- the learning test ----------------------------------------------------------------------

#: The seed of both runs (the docstring lists the others measured).
SEED = int(os.environ.get("AGENTRFT_PER_TURN_SEED", "0"))
BAR = 0.35

MAX_TOKENS = 32
STEPS = 40
WINDOW = 3
FAULT = "e"


def per_token(text: str, letter: str) -> float:
    """`letter`'s count in `text` per token the reply may have (`MAX_TOKENS`)."""
    return text.count(letter) / MAX_TOKENS


class _TwoReplies(Environment):
    def __init__(self) -> None:
        super().__init__()
        self.replies = 0

    def on_text_reply(self, text: str) -> str | None:
        self.replies += 1
        if self.replies >= 2:
            self.done = True
            return None
        return "Write again."


class TwoTurnLetters(Task[str]):
    """Two text replies; turn 2 is wrong by the 'e's it writes; the outcome is blind."""

    name = "two_turn_letters"
    limits = EpisodeLimits(max_turns=2)

    def __init__(self, per_turn_length: int | None = None) -> None:
        #: Set to give a per_turn list of the wrong length (the fallback test).
        self.per_turn_length = per_turn_length

    def parse(self, prompt: str) -> str:
        return prompt

    def environment(self, instance: str) -> Environment:
        return _TwoReplies()

    def reward(self, env: Environment, trajectory: Any) -> RewardResult:
        replies = [t.assistant.content or "" for t in trajectory.turns]
        per_turn = [0.0] + [-per_token(r, FAULT) for r in replies[1:]]
        if self.per_turn_length is not None:
            per_turn = [0.0] * self.per_turn_length
        # The outcome: the conversation finished, whatever the replies said.
        return RewardResult(total=1.0, per_turn=per_turn)

    def user_prompt(self, instance: str) -> str:
        return instance

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        return [{"prompt": f"Write text {k}"} for k in range(n or 4)]


def fault_rates(run_dir: Any) -> dict[int, float]:
    """step -> the mean 'e's per token of that step's turn-2 replies."""
    by_step: dict[int, list[float]] = {}
    for t in read_trajectories(run_dir / "trajectories.jsonl"):
        text = (t.turns[1].assistant.content or "") if len(t.turns) > 1 else ""
        by_step.setdefault(int(t.metadata["step"]), []).append(per_token(text, FAULT))
    return {step: statistics.fmean(v) for step, v in sorted(by_step.items())}


def settings(tmp_path: Any, seed: int, method: str, **values: Any) -> Any:
    chosen: dict[str, Any] = {
        "seed": seed,
        "global_batch_size": 2,
        "group_size": 8,
        "max_steps": STEPS,
        "sampling_max_tokens": MAX_TOKENS,
        "learning_rate": 5e-3,
        "advantage_method": method,
        # Off: its truncation penalty shortens replies under either method, which would
        # lower the 'e' count of the control too.
        "local.format_credit": 0.0,
        **values,
    }
    return tiny_config(tmp_path, **chosen)


async def fault_before_after(tmp_path: Any, seed: int, method: str) -> tuple[float, float]:
    """Turn 2's 'e's per token over the first and the last WINDOW steps of a run."""
    result = await train_async(TwoTurnLetters(), settings(tmp_path, seed, method))
    shares = list(fault_rates(result.run_dir).values())
    assert len(shares) == STEPS
    return statistics.fmean(shares[:WINDOW]), statistics.fmean(shares[-WINDOW:])


async def test_a_per_turn_list_of_the_wrong_length_falls_back_to_the_episode(tmp_path, caplog):
    task = TwoTurnLetters(per_turn_length=3)  # 3 values for 2 policy calls
    config = settings(tmp_path, 0, "group_based_per_turn", max_steps=1)
    with caplog.at_level(logging.WARNING, logger="agentrft.backends.local.run.step_batch"):
        result = await train_async(task, config)
    (metrics,) = result.history
    assert metrics["analysis/per_turn_fallback"] == 1.0
    assert "16 of 16 rollouts train with their episode advantage" in caplog.text
    assert "3 per-turn rewards for 2 policy calls" in caplog.text


@pytest.mark.slow
async def test_only_per_turn_credit_learns_that_turn_two_was_wrong(tmp_path):
    per_turn = await fault_before_after(tmp_path / "per_turn", SEED, "group_based_per_turn")
    episode = await fault_before_after(tmp_path / "episode", SEED, "group_based")
    assert per_turn[0] > 0.05 and episode[0] > 0.05, (per_turn, episode)  # a fault to remove
    assert per_turn[1] <= BAR * per_turn[0], per_turn
    assert episode[1] > BAR * episode[0], episode
