"""GRPO alone learns to use what only an earlier tool reply reveals (CPU, tiny model).

The task (`code_relay`, text answers): call `read_code`, whose reply shows a code letter
(`code B B B B B B B B`), then reply with the code. Every row has the same prompt, so only
the tool reply tells: a policy that ignores it is right half the time (two codes, balanced).

The warm-up cannot teach the answer: its games are played on the task's `withheld()` copy,
whose reply shows `code ? ? ...` and whose expert guesses. It teaches the format (call the
tool, then answer with one letter) and leaves the policy at chance. GRPO then runs on the real
task from that adapter. What it adds above chance is learned through the multi-turn path:
the answer's tokens are trained with the advantage of an episode whose deciding input sits
in the tool reply, two turns and a masked span away. A bug in sequences, masks, advantages
or logprob alignment across turns leaves it at chance.

Negative control: the same run with a reward scored against a code drawn afresh for every
episode, without looking at the reply (the real task's rewards, shuffled): it must stay at
chance.

Why the task looks the way it does (measured here, 1M-parameter random-init model):
- the code is written 8 times, so it is most of the reply: written once, the tiny model
  needs a precise attention head to find it, which 40 GRPO steps do not build (a one-letter
  reply moved the conditional margin P(A|code A) - P(A|code B) from 0.004 to 0.03 only);
- the answer is text: the second tool call's JSON (`submit`, `arguments`) is what the tiny
  model breaks most, and a broken call hides whether it read the reply;
- every training step sees each code equally often (the train split is one batch): with
  unbalanced batches GRPO drifts to always giving one letter, which no later group can
  correct (each group's rewards are then all equal).

Measured with exactly these settings (64 held-out rows, 2 CPU cores, ~80 s a run):
held-out success before -> after GRPO, seed 0: 0.52 -> 0.92 (0.48 -> 0.88 with the AVX2
kernels), seed 1: 0.48 -> 0.86, seed 2: 0.36 -> 0.78. At learning rate 2e-3 the gains were
alike (0.95 / 0.88 / 0.80) but about one run in ten collapsed late (every answer broken: 0.0
after, once in CI under the AVX2 kernels), so 1.5e-3. The control at 2e-3, seed 0: 0.50 ->
0.45, seed 2: 0.39 -> 0.44. The runs are not bit-reproducible (the order in which the
batched sampler serves episodes varies), so each run is a draw: the bar below is set from
the spread, not from one run.

Collapse: a run can break its format for good (every reward -1, every group zero-variance:
an absorbing state no advantage leaves; `no_signal` fires). At lr 2e-3 about one run in ten
did, late; at 1.5e-3 two CI runs did, one near step 50 and one (seed 0) between steps 10 and
20, where every held-out answer after step 20 was broken (0.0). The broken replies seen in a
near-collapse (seed 1, step 5 here: mean reward -0.70, recovered a step later) are
`<tool_call>{"name": "read_code", "arguments": {}}` followed by junk instead of the closing
tag: an unterminated block is text, which the environment takes as the (unparseable)
answer. Seven runs of seeds 0-6 on 2026-12-03 (this machine) all stayed healthy and reached
0.80-0.94 at their best. KL to the
warm-up (kl_beta 0.05) did not prevent drift (seed 2, AVX2: 0.34 -> 0.53).

So the positive test judges each run by the best of its held-out evaluations (every 10
steps and the final one: 7 looks), and draws a second run (seed + 1) only when the first
stays below the bar. A collapse is not the bug this test guards (a bug in the multi-turn
path leaves the policy at chance, not at 0), and one run collapses rarely enough that two in
a row stay improbable.

One bar for both, BAR = 45 of 64 rows: any policy that does not read the reply is right
with probability 0.5 exactly (each code is half of the held-out rows and every prompt is
the same), so one look reaches 45 by luck with p = 0.00078, and the positive test's 14 looks
at most (two runs x 7) with p < 0.011 (union bound). The trained runs' worst best-of-run,
0.78 (50 rows), is 5 rows above it; the control is judged on its final evaluation only.
"""

from __future__ import annotations

import json
import os
import random
import re
from typing import Any

import pytest

from agentrft import RewardResult
from agentrft.backends.local.backend import train_async
from agentrft.backends.local.run.sft import warmup_adapter
from agentrft.testing.relay import CodeRelayTask
from agentrft.trajectory import read_trajectories

from .conftest import tiny_config

#: One training batch: every (code, decoy) pair twice.
TRAIN_ROWS = 4
HELD_OUT = 64
#: 45 of the 64 held-out rows (see the module docstring for the chance it is reached by luck).
BAR = 45 / HELD_OUT
#: Mid-run validations on the held-out rows (6 in a run, plus the final evaluation).
VAL_EVERY = 10
#: The seed of both runs (docs/local-backend.md lists the others measured).
SEED = int(os.environ.get("AGENTRFT_RELAY_SEED", "0"))


class TextRelay(CodeRelayTask):
    name = "code_relay_text"
    codes = ("A", "B")
    answer = "text"
    repeat = 8
    show_decoy = False

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        return super().make_dataset(split, TRAIN_ROWS if split == "train" else n, seed)


def _settings(tmp_path: Any, **values: Any) -> Any:
    return tiny_config(
        tmp_path,
        global_batch_size=TRAIN_ROWS,
        group_size=16,
        sampling_max_tokens=32,
        **{"local.micro_batch_size": 32, "eval.n": HELD_OUT, **values},
    )


def _true_success(run_dir: Any, label: str) -> float:
    """Held-out episodes whose answer is the row's code (whatever reward the run used)."""
    right = total = 0
    for t in read_trajectories(run_dir / "eval" / f"{label}_trajectories.jsonl"):
        total += 1
        answer = next(
            (m.content for m in reversed(t.messages) if m.role == "assistant" and m.content), ""
        )
        hit = re.match(r"\s*([A-Z])\b", answer or "")
        right += bool(hit) and hit.group(1) == json.loads(t.prompt)["code"]
    return right / total


async def _run(
    tmp_path: Any, seed: int, reward_fn: Any = None, off_policy: int = 0
) -> tuple[float, float, list[float]]:
    """Held-out success before and after GRPO, and the solve rates of the mid-run
    validations on the same rows (every VAL_EVERY steps); `off_policy` is the run's
    max_steps_off_policy (rollouts that many steps ahead of the trainer)."""
    task = TextRelay()
    warm_config = _settings(
        tmp_path / "warm",
        seed=seed,
        **{"local.sft_warmup_steps": 30, "local.sft_learning_rate": 5e-3},
    )
    warm = await warmup_adapter(task.withheld(), warm_config, tmp_path / "warm" / "adapter")
    config = _settings(
        tmp_path,
        seed=seed,
        max_steps=60,
        max_steps_off_policy=off_policy,
        learning_rate=1.5e-3,
        val_every=VAL_EVERY,
        **{
            "local.adapter": str(warm),
            "local.sft_warmup_steps": 0,
            "local.lr_warmup_steps": 5,
            "local.eval_before": True,
            "local.eval_after": True,
        },
    )
    result = await train_async(task, config, reward_fn=reward_fn)
    validations = [h["val_solve_rate"] for h in result.history if "val_solve_rate" in h]
    before, after = _true_success(result.run_dir, "before"), _true_success(result.run_dir, "after")
    return before, after, validations


@pytest.mark.slow
@pytest.mark.parametrize("off_policy", [0, 1], ids=["sync", "one-step-ahead"])
async def test_grpo_alone_learns_what_an_earlier_tool_reply_shows(tmp_path, off_policy):
    runs = []
    for seed in (SEED, SEED + 1):  # the second run only when the first stays below the bar
        before, after, validations = await _run(
            tmp_path / f"seed{seed}", seed=seed, off_policy=off_policy
        )
        assert before < BAR, (seed, before)  # the warm-up left it at chance: it never saw a code
        # The best held-out rate of the run (the real task's solve rate is the true success):
        # a run can reach it and then collapse (see the docstring), which is not a bug in the
        # multi-turn path this test guards.
        runs.append((seed, before, validations, after))
        if max([after, *validations]) >= BAR:
            return
    pytest.fail(
        f"no run reached {BAR:.3f} held-out success: (seed, before, validations, after) {runs}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("off_policy", [0, 1], ids=["sync", "one-step-ahead"])
async def test_control_rewards_that_ignore_the_reply_teach_nothing(tmp_path, off_policy):
    task = TextRelay()
    draws = random.Random(SEED)

    def blind_reward(env: Any, trajectory: Any) -> RewardResult:
        # The same tiers, scored against a code drawn afresh for every episode: a reward
        # that says nothing about what the reply showed (the rewards of the real task,
        # shuffled). The format tier stays, so the control is not just "no signal".
        code = draws.choice(task.codes)
        if env.submitted is None:
            return task.tiers.score("no_submit")
        return task.tiers.score("correct" if env.submitted == code else "wrong")

    _, after, _ = await _run(tmp_path, seed=SEED, reward_fn=blind_reward, off_policy=off_policy)
    assert after < BAR, after
