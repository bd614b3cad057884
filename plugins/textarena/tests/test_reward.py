"""The reward: its order holds, scripted games land in their tiers, and it agrees with
TextArena's own outcome from an independent env replaying the same moves."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import textarena as ta
from agentrft_textarena.arena import Outcome
from agentrft_textarena.probes import play_probes
from agentrft_textarena.reward import TIERS, outcome_tier, score_outcome

from agentrft import assert_reward_order, run_sync

from .conftest import moves_played

EXPECTED_TIER = {"expert": "win", "warned once": "win", "loss": "loss", "invalid": "invalid"}


def test_reward_check_passes(task):
    report = assert_reward_order(task)
    played = [s for s in task.reward_samples() if "seed" in s.label]
    assert {s.tier for s in played} == {"win", "loss", "invalid", "unfinished"}
    assert report.ok


@pytest.fixture(scope="module")
def probe_games(request):
    cache: dict[str, list] = {}

    def get(task):
        if task.name not in cache:
            cache[task.name] = run_sync(play_probes(task, seeds=(11, 23, 38, 104, 57)))
        return cache[task.name]

    return get


def test_probes_land_in_the_tier_their_play_earns(task, probe_games):
    for label, seed, traj in probe_games(task):
        want = next((t for k, t in EXPECTED_TIER.items() if label.startswith(k)), "unfinished")
        assert traj.reward.outcome == want, (label, seed, traj.reward)
    # Shaping follows TextArena's percentage completion: a loss close to the answer beats
    # one far from it, in every game.
    by_label = {(label, seed): t.reward.total for label, seed, t in probe_games(task)}
    near_far = {
        "guess_the_number": ("loss, last guess next to the target", "loss, last guess far from the target"),
        "mastermind": ("loss, last guess two pegs away", "loss, last guess with two white pegs"),
        "lights_out": ("loss, half the solution then idle presses", "loss, one cell pressed twenty times"),
    }[task.game]  # fmt: skip
    gaps = [by_label[(near_far[0], s)] - by_label[(near_far[1], s)] for s in (11, 23, 38, 104, 57)]
    if task.game == "lights_out":
        # Twenty presses of one cell leave the board as it was (completion 0, the tier's
        # floor); half the solution usually switches lights off but can leave more on.
        assert min(gaps) >= 0 and sum(g > 0 for g in gaps) >= 3, gaps
    else:
        assert min(gaps) > 0, gaps


def replay_in_textarena(env_id: str, seed: int, moves: list[str]) -> tuple[bool, dict, dict, str]:
    """TextArena's default env (its own wrappers), reset with `seed`, playing `moves`."""
    state = random.getstate()
    try:
        env = ta.make(env_id)
        env.reset(num_players=1, seed=seed)
        done = False
        for move in moves:
            assert not done, "a move was played after TextArena said done"
            done, _ = env.step(action=move)
        _, observation = env.get_observation()
        rewards, info = env.close()
    finally:
        random.setstate(state)
    return bool(done), rewards, info, observation


def test_reward_agrees_with_textarenas_outcome_on_replayed_moves(task, probe_games):
    tiers_seen = set()
    for label, seed, traj in probe_games(task):
        done, rewards, info, observation = replay_in_textarena(
            task.env_id, seed, moves_played(traj)
        )
        ours = traj.reward
        tiers_seen.add(ours.outcome)
        if not done:
            assert ours.outcome == "unfinished", label
            assert "textarena_reward" not in ours.components
            assert ours.total == TIERS.lowest().total
            continue
        theirs = float(rewards[0])
        assert ours.components["textarena_reward"] == theirs, label
        assert ours.components["turn_count"] == info[0]["turn_count"], label
        # TextArena's verdict, read from its own fields: a win is reward 1 with no
        # invalid-move end; an invalid-move end is flagged; anything else is a loss.
        if info[0]["invalid_move"]:
            assert ours.outcome == "invalid", label
            assert ours.total == pytest.approx(-0.6 + 0.2 * (2 * theirs - 1)), label
        elif theirs == 1:
            assert ours.outcome == "win" and ours.solved and ours.total == 1.0, label
        else:
            assert ours.outcome == "loss", label
            assert ours.total == pytest.approx(0.3 * (2 * theirs - 1)), label
        # What the policy was shown is TextArena's own text: every reply line of ours is in
        # the replayed env's LLM observation (our final "game over" line aside).
        for turn in traj.turns:
            for m in turn.tool_messages:
                for line in (m.content or "").splitlines():
                    if line != "[GAME] The game is over.":
                        assert line in observation, (label, line)
    assert tiers_seen == {"win", "loss", "invalid", "unfinished"}


@pytest.mark.parametrize(
    ("outcome", "tier", "total"),
    [
        (Outcome(True, 1.0, False, "won", 3), "win", 1.0),
        (Outcome(True, 0.5, False, "limit", 11), "loss", 0.0),
        (Outcome(True, 0.0, False, "limit", 11), "loss", -0.3),
        (Outcome(True, 0.0, True, "invalid", 1), "invalid", -0.8),
        (Outcome(True, 0.75, True, "invalid", 4), "invalid", -0.5),
        (Outcome(False, None, False, None, 2), "unfinished", -1.0),
    ],
)
def test_score_outcome_by_hand(outcome, tier, total):
    assert outcome_tier(outcome) == tier
    assert score_outcome(outcome).total == pytest.approx(total)


def test_reward_check_cli_passes(task):
    exe = Path(sys.executable).with_name("agentrft")
    proc = subprocess.run(
        [str(exe), "reward", "check", "--task", task.name], capture_output=True, text=True,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok: reward order holds" in proc.stdout
