"""The experts reach each game's ceiling (every game won) on the validation split."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agentrft_textarena.task import MastermindTask

from agentrft import evaluate, run_sync


def test_expert_wins_every_validation_game(task):
    rows = [r["prompt"] for r in task.make_dataset("validation", 128, seed=0)]
    (report,), trajs = run_sync(evaluate(task, rows, task.expert()))
    assert report.episodes == 128
    assert report.solve_rate == 1.0, [t.reward for t in trajs if not t.solved]
    assert {t.reward.outcome for t in trajs} == {"win"}
    # The ceiling by the suite's own count: TextArena's reward is 1 in every game.
    assert {t.reward.components["textarena_reward"] for t in trajs} == {1.0}
    # Binary search on 1..20 needs at most 5 guesses, the consistent-code player at most 7,
    # the fewest-presses Lights Out solution at most the 15 presses of the scramble.
    most = {"guess_the_number": 5, "mastermind": 7, "lights_out": 15}[task.game]
    assert max(t.tool_calls for t in trajs) <= most


def test_eval_cli_prints_the_ceiling():
    exe = Path(sys.executable).with_name("agentrft")
    out = subprocess.run(
        [str(exe), "eval", "--task", MastermindTask.name, "--policy", "expert",
         "--split", "validation", "--n", "32"],
        capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "200"},
    ).stdout  # fmt: skip
    assert "solve rate     │ 100.0% (32/32)" in out
    assert "win: 32" in out
