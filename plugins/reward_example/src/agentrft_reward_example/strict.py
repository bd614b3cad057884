"""`expense_report_strict`: an auditor's reward for the expense_report task.

The task's own reward gives a wrong report a wide band (-0.20 to 0.90) that grows with line
item F1, so training can climb from a bad report to a good one. An auditor wants something
else: a wrong report is simply wrong, and a right report filed with tool errors is worth
less than a clean one. Tiers, best first:

    clean            1.00                a correct report, no tool errors
    correct_sloppy   0.60 ± 0.20  [0.40, 0.80]  correct, with tool errors (fewer is better)
    wrong           -0.50 ± 0.05  [-0.55, -0.45]  submitted, not exactly right
    not_filed       -1.00                never submitted

Use it with `--reward expense_report_strict` on `play`, `eval`, `train` and `reward check`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Only for the type hint: the plugin loads (and lists its reward) even where the
    # expense_report task is not installed; `--reward` then names the task it needs.
    from agentrft_expense_report import ExpenseReportEnv

from agentrft import (
    FailureKind,
    NamedReward,
    RewardResult,
    RewardSample,
    Tier,
    TieredReward,
    Trajectory,
    run_episode,
    run_sync,
)

STRICT_TIERS = TieredReward(
    [
        Tier(name="clean", base=1.0, solved=True, description="correct, no tool errors"),
        Tier(
            name="correct_sloppy",
            base=0.6,
            shaping_weight=0.2,
            solved=True,
            description="correct, with tool errors",
        ),
        Tier(name="wrong", base=-0.5, shaping_weight=0.05, description="submitted, not right"),
        Tier(name="not_filed", base=-1.0, description="never submitted"),
    ]
)

#: Failure kinds an auditor holds against the agent.
TOOL_FAULTS = {
    FailureKind.MALFORMED_TOOL_JSON,
    FailureKind.UNKNOWN_TOOL,
    FailureKind.INVALID_ARGUMENTS,
    FailureKind.TOOL_ERROR,
    FailureKind.TOOL_EXCEPTION,
}


def strict_reward(env: ExpenseReportEnv, trajectory: Trajectory) -> RewardResult:
    """Score an expense_report episode as an auditor would (see the module docstring)."""
    grade = env.grade()  # the task's own comparison with the ground truth
    errors = sum(1 for f in trajectory.failures if f.kind in TOOL_FAULTS)
    components = {"item_f1": grade.item_f1, "tool_errors": float(errors)}
    if grade.submitted and grade.correct and errors == 0:
        return STRICT_TIERS.score("clean", components=components)
    if grade.submitted and grade.correct:
        # 1 error -> +0.6 shaping, 5 or more -> -1: fewer errors always rank higher.
        shaping = 1.0 - 2.0 * min(1.0, (errors - 1) / 4)
        return STRICT_TIERS.score("correct_sloppy", shaping, components=components)
    if grade.submitted:
        return STRICT_TIERS.score("wrong", 2.0 * grade.item_f1 - 1.0, components=components)
    return STRICT_TIERS.score("not_filed", components=components)


def reward_samples(task: Any) -> list[RewardSample]:
    """Simulated tiers plus this reward on real scripted expense_report episodes."""
    return STRICT_TIERS.samples() + run_sync(_episode_samples(task))


async def _episode_samples(task: Any) -> list[RewardSample]:
    from agentrft_expense_report import expert as scripted

    behaviours = [
        ("clean", "expert", scripted.expert_policy),
        ("correct_sloppy", "expert with tool errors", scripted.clumsy_expert),
        ("wrong", "submits at once", scripted.submit_at_once),
        ("wrong", "expert that drops a line item", lambda: scripted.flawed_expert("drop_item")),
        ("not_filed", "reads, never submits", scripted.reader_policy),
        ("not_filed", "never calls a tool", scripted.silent_policy),
    ]
    out = []
    for i, difficulty in enumerate(("easy", "medium", "hard")):
        prompt = json.dumps(
            {"id": f"strict_{difficulty}", "seed": 500 + i, "difficulty": difficulty}
        )
        for tier, label, make in behaviours:
            traj = await run_episode(task, prompt, make(), reward_fn=strict_reward)
            assert traj.reward is not None
            rank = STRICT_TIERS.names.index(tier)
            text = f"{label} on strict_{difficulty} (landed in {traj.reward.outcome})"
            out.append(RewardSample(rank, tier, text, traj.reward))
    return out


#: What the plugin registers: the reward, where it applies (`--reward` with another task is
#: refused with a clear error), its tiers and its samples (`agentrft reward check`).
STRICT_REWARD = NamedReward(
    strict_reward,
    tasks={"expense_report"},
    tiers=STRICT_TIERS,
    samples=reward_samples,
    description="an auditor's reward: a wrong report is wrong, tool errors cost",
)
