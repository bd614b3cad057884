"""The expense-report reward: an outcome tier, then a quality score clipped into its band.

Tiers, best first (bands are `base ± shaping_weight`, so no shaping can cross a tier):

    correct          1.20 ± 0.10  [ 1.10,  1.30]  the submitted report is exactly right
    partly_correct   0.35 ± 0.55  [-0.20,  0.90]  submitted, with something wrong
    not_submitted   -0.60 ± 0.20  [-0.80, -0.40]  valid calls, but never submitted
    no_valid_call   -1.20         [-1.20]         not one tool call succeeded

Inside `partly_correct` the score is mostly quality (line-item F1, amount accuracy, flag F1)
so training can climb from a bad report to a good one; every tier also loses a little for
tool errors and wasted (repeated read-only) calls. A correct report with many errors still
beats the best wrong one: that is what `agentrft reward check` proves.
"""

from __future__ import annotations

from agentrft import FailureKind, RewardResult, Tier, TieredReward, Trajectory, clip
from agentrft_expense_report.environment import ExpenseReportEnv, Grade

TIERS = TieredReward(
    [
        Tier(
            name="correct",
            base=1.2,
            shaping_weight=0.1,
            solved=True,
            description="the submitted report has every line item and flag exactly right",
        ),
        Tier(
            name="partly_correct",
            base=0.35,
            shaping_weight=0.55,
            description="submitted, with wrong, missing or extra line items or flags",
        ),
        Tier(
            name="not_submitted",
            base=-0.6,
            shaping_weight=0.2,
            description="made valid tool calls but never submitted the report",
        ),
        Tier(
            name="no_valid_call",
            base=-1.2,
            shaping_weight=0.0,
            description="not a single tool call succeeded",
        ),
    ]
)

#: Failure kinds that count as the model's tool errors.
TOOL_FAULTS = frozenset(
    {
        FailureKind.MALFORMED_TOOL_JSON,
        FailureKind.UNKNOWN_TOOL,
        FailureKind.INVALID_ARGUMENTS,
        FailureKind.TOOL_ERROR,
        FailureKind.TOOL_EXCEPTION,
        FailureKind.PLAIN_TEXT_CALL,
    }
)

ERROR_PENALTY = 0.1  # per tool error, of the [0, 1] behaviour penalty
WASTE_PENALTY = 0.05  # per repeated read-only call


def behaviour_penalty(errors: int, wasted: int) -> float:
    """0 for a clean episode, rising to 1 (ten errors, or twenty wasted calls)."""
    return min(1.0, ERROR_PENALTY * errors + WASTE_PENALTY * wasted)


def quality(grade: Grade) -> float:
    """How close a submitted report is to the right one, in [0, 1]."""
    return 0.5 * grade.item_f1 + 0.25 * grade.amount_accuracy + 0.25 * grade.flag_f1


def score(grade: Grade, tool_errors: int) -> RewardResult:
    """The reward for a graded report (pure function: easy to test and to reuse)."""
    penalty = behaviour_penalty(tool_errors, grade.wasted_calls)
    components = {
        "precision": grade.precision,
        "recall": grade.recall,
        "item_f1": grade.item_f1,
        "amount_accuracy": grade.amount_accuracy,
        "flag_f1": grade.flag_f1,
        "tool_errors": float(tool_errors),
        "wasted_calls": float(grade.wasted_calls),
    }
    if grade.submitted and grade.correct:
        return TIERS.score("correct", 1.0 - 2.0 * penalty, components=components)
    if grade.submitted:
        q = 0.85 * quality(grade) + 0.15 * (1.0 - penalty)
        return TIERS.score("partly_correct", clip(2.0 * q - 1.0), components=components)
    if grade.valid_calls > 0:
        progress = 0.7 * grade.item_f1 + 0.3 * (1.0 - penalty)
        return TIERS.score("not_submitted", clip(2.0 * progress - 1.0), components=components)
    return TIERS.score("no_valid_call", 0.0, components=components)


def tool_errors(trajectory: Trajectory) -> int:
    return sum(1 for f in trajectory.failures if f.kind in TOOL_FAULTS)


def expense_reward(env: ExpenseReportEnv, trajectory: Trajectory) -> RewardResult:
    """The task's own reward: `score(env.grade(), tool errors in the trajectory)`."""
    return score(env.grade(), tool_errors(trajectory))
