"""Training-signal health: the ways a GRPO run silently learns nothing, or learns the wrong
thing, seen at every step.

`rollout_health` turns a step's trajectories into shares (truncated replies, replies with
tool calls written as text, invalid tool calls, zero-variance groups, ...); `HealthMonitor`
compares them, plus the trainer's gradient and the weight-sync probe, with thresholds.
`exploit_watch.ExploitWatch` looks for a policy paid for something other than the task, and
`health_watch.HealthWatch` turns the findings of both into conditions that start and clear
(see docs/health.md).

Metric names follow the managed service's where it has one (`rollout/reward/valid_mean`,
`analysis/zero_adv_groups`, `rollout/tokens/response_max`), so local and SageMaker runs read
alike in MLflow.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from agentrft.trajectory import FailureKind, Trajectory

#: Failure kinds of a tool call the model made badly (not a tool refusing a good call).
INVALID_CALL_KINDS = frozenset(
    {FailureKind.UNKNOWN_TOOL, FailureKind.MALFORMED_TOOL_JSON, FailureKind.INVALID_ARGUMENTS}
)
#: Rollouts that ended without being played out: their reward is the task's fallback.
UNPLAYED_KINDS = frozenset(
    {
        FailureKind.BAD_INPUT,
        FailureKind.POLICY_ERROR,
        FailureKind.HTTP_ERROR,
        FailureKind.RATE_LIMITED,
        FailureKind.POLICY_TIMEOUT,
        FailureKind.REWARD_ERROR,
    }
)


def rollout_health(trajs: Sequence[Trajectory], zero_variance_fraction: float) -> dict[str, float]:
    """Health metrics of one step's rollouts (shares in [0, 1], token counts as floats)."""
    turns = [turn for t in trajs for turn in t.turns]
    n_turns = max(1, len(turns))
    calls = sum(t.tool_calls for t in trajs)
    invalid = sum(1 for t in trajs for f in t.failures if f.kind in INVALID_CALL_KINDS)
    # A reply with text and no structured call where a call was expected: a call written as
    # text (recovered by the task: its result came back), prose the task answered with a
    # nudge, or prose that ended the episode (no_tool_call). A text task's answer is none.
    text_turns = sum(
        1
        for t in trajs
        for turn in t.turns
        if not turn.assistant.tool_calls
        and turn.assistant.content
        and (turn.tool_messages or turn.index in _no_call_turns(t))
    )
    truncated_turns = sum(1 for turn in turns if turn.finish_reason == "length")
    truncated_rollouts = sum(
        1 for t in trajs if any(turn.finish_reason == "length" for turn in t.turns)
    )
    valid = [
        t.reward.total
        for t in trajs
        if t.reward is not None and not (set(t.failure_kinds) & UNPLAYED_KINDS)
    ]
    response = [turn.completion_tokens for turn in turns]
    return {
        "rollout/reward/valid_mean": statistics.fmean(valid) if valid else float("nan"),
        "rollout/valid_frac": len(valid) / max(1, len(trajs)),
        "analysis/zero_adv_groups": zero_variance_fraction,
        "rollout/tokens/response_max": float(max(response, default=0)),
        "rollout/tokens/response_mean": statistics.fmean(response) if response else 0.0,
        "rollout/turns/truncated_frac": truncated_turns / n_turns,
        "rollout/truncated_frac": truncated_rollouts / max(1, len(trajs)),
        "rollout/turns/text_reply_frac": text_turns / n_turns,
        "rollout/tool_calls/invalid_frac": invalid / calls if calls else 0.0,
        "rollout/reward_error_frac": sum(
            1 for t in trajs if FailureKind.REWARD_ERROR in t.failure_kinds
        )
        / max(1, len(trajs)),
    }


def _no_call_turns(t: Trajectory) -> set[int | None]:
    return {f.turn for f in t.failures if f.kind == FailureKind.NO_TOOL_CALL}


#: Turn-level failure kinds of a reply whose tool call could not be used as written.
FORMAT_FAULT_KINDS = frozenset(
    {
        *INVALID_CALL_KINDS,
        FailureKind.TRUNCATED,
        FailureKind.NO_TOOL_CALL,
        FailureKind.EMPTY_REPLY,
        FailureKind.PLAIN_TEXT_CALL,
        FailureKind.UNTERMINATED_TOOL_CALL,
    }
)


def format_faults(t: Trajectory) -> list[bool]:
    """Per turn of `t`: did the reply fail the tool-call format? (A malformed or unknown
    call, bad arguments, a reply cut off by max_tokens, an empty reply, or text where a call
    was expected, recovered or not, or a call opened and never closed.) A text task's text
    answer is not a fault."""
    faulty = {f.turn for f in t.failures if f.kind in FORMAT_FAULT_KINDS}
    return [
        turn.index in faulty
        or (
            not turn.assistant.tool_calls
            and bool(turn.assistant.content)
            and bool(turn.tool_messages)
        )
        for turn in t.turns
    ]


@dataclass(frozen=True)
class HealthRule:
    """Warn when `metric` is at or above `threshold` (or below, with `below=True`)."""

    name: str
    metric: str
    threshold: float
    advice: str
    below: bool = False
    #: Show the value as a share (most metrics are fractions of turns, calls or groups).
    percent: bool = True

    def fires(self, metrics: dict[str, float]) -> bool:
        value = metrics.get(self.metric)
        if value is None or value != value:  # absent or NaN
            return False
        return value < self.threshold if self.below else value >= self.threshold


#: The rules, in the order warnings are shown. Thresholds are where a run measured here
#: stopped improving; they are advice, not proof.
RULES: tuple[HealthRule, ...] = (
    HealthRule(
        "reward_errors",
        "rollout/reward_error_frac",
        0.5,
        "the reward raised or returned a non-finite or mistyped value on most rollouts (each "
        "scored the lowest tier, so the step trains on the reward's bug): see the failure "
        "detail in trajectories.jsonl, fix the reward, run `agentrft reward check`; "
        "local.health_stop_after=N stops such a run",
    ),
    HealthRule(
        "no_signal",
        "analysis/zero_adv_groups",
        1.0,
        "every group's rewards are equal, so every advantage is 0 and nothing is learned: "
        "make the reward graded (tiers with shaping), raise group_size or temperature, or "
        "start from a policy that sometimes succeeds (a warm-up, a curriculum)",
    ),
    HealthRule(
        "weak_signal",
        "analysis/zero_adv_groups",
        0.75,
        "most groups have equal rewards (no advantage); consider local.drop_zero_variance_"
        "groups=true, a larger group_size, or a graded reward",
    ),
    HealthRule(
        "truncation",
        "rollout/turns/truncated_frac",
        0.25,
        "replies hit sampling_max_tokens; cut-off tool calls are lost: raise sampling_max_tokens",
    ),
    HealthRule(
        "text_tool_calls",
        "rollout/turns/text_reply_frac",
        0.5,
        "most replies carry no structured tool call (calls written as text, or prose): the "
        "tool-call format is drifting; lower learning_rate, add local.kl_beta, or warm up",
    ),
    HealthRule(
        "invalid_tool_calls",
        "rollout/tool_calls/invalid_frac",
        0.5,
        "most tool calls name an unknown tool or carry bad JSON/arguments",
    ),
    HealthRule(
        "zero_gradient",
        "grad_norm",
        1e-12,
        "the gradient is zero: no trained token had a non-zero advantage",
        below=True,
        percent=False,
    ),
    HealthRule(
        "stale_sync",
        "analysis/sync_stale",
        1.0,
        "the sampler's logprobs did not change after the adapter sync although the trainer's "
        "did: rollouts are not coming from the trained weights",
        percent=False,
    ),
)


@dataclass(frozen=True)
class Finding:
    """One warning at one step: its name and what it says (the value, then the advice).
    `example` is the position, in the step's rollouts, of one that shows it (or None)."""

    name: str
    text: str
    example: int | None = None

    @property
    def line(self) -> str:
        return f"{self.name}: {self.text}"


@dataclass
class HealthMonitor:
    """Checks each step's metrics; counts how many steps in a row each warning fired."""

    stop_after: int | None = None
    rules: tuple[HealthRule, ...] = RULES
    streaks: dict[str, int] = field(default_factory=dict)

    def findings(self, metrics: dict[str, float]) -> list[Finding]:
        """The rules that fire on `metrics` (the weaker of two rules on one metric is
        dropped when the stronger fires); counts nothing."""
        fired: list[Finding] = []
        seen_metrics: set[str] = set()
        for rule in self.rules:
            if rule.metric in seen_metrics:
                continue
            if rule.fires(metrics):
                fired.append(
                    Finding(rule.name, f"{_value(rule, metrics[rule.metric])} — {rule.advice}")
                )
                seen_metrics.add(rule.metric)
        return fired

    def implied(self, metrics: dict[str, float], fired: Iterable[str]) -> set[str]:
        """Weaker rules that hold under a stronger one that fired on the same metric
        (`weak_signal` under `no_signal`): not warned about again, but still holding."""
        names = set(fired)
        metrics_fired = {r.metric for r in self.rules if r.name in names}
        return {
            r.name
            for r in self.rules
            if r.name not in names and r.metric in metrics_fired and r.fires(metrics)
        }

    def count(self, names: Iterable[str]) -> None:
        """One more step for the streak of each warning in `names`; every other streak
        ends."""
        fired = set(names)
        for name in {*self.streaks, *fired, *(r.name for r in self.rules)}:
            self.streaks[name] = self.streaks.get(name, 0) + 1 if name in fired else 0

    def check(self, metrics: dict[str, float]) -> list[str]:
        """One warning line per rule that fires, counted toward the streaks."""
        fired = self.findings(metrics)
        self.count(f.name for f in fired)
        return [f.line for f in fired]

    def stop_reason(self) -> str | None:
        """Why the run should stop now (opt-in), or None."""
        if not self.stop_after:
            return None
        for name, streak in self.streaks.items():
            if streak >= self.stop_after:
                return f"health warning {name!r} fired {streak} steps in a row"
        return None


def _value(rule: HealthRule, v: float) -> str:
    return f"{rule.metric} {v:.0%}" if rule.percent else f"{rule.metric} {v:.3g}"
