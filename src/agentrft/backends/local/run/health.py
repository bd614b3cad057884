"""Training-signal health: the ways a GRPO run silently learns nothing, or learns the wrong
thing, seen at every step.

`rollout_health` turns a step's trajectories into shares (truncated replies, replies with
tool calls written as text, invalid tool calls, zero-variance groups, ...); `HealthMonitor`
compares them, plus the trainer's gradient and the weight-sync probe, with thresholds.
`ExploitWatch` looks for a policy paid for something other than the task: a reward that
rises while the solve rate does not, rollouts collapsed into one shape the reward pays for
(`agentrft.episode_shape`). `ConditionLog` turns the step-by-step findings into conditions,
so the run says once when each starts and once when it clears, and sums them up at the
end; `HealthWatch` holds the three. With `local.health_stop_after=N` the run stops once the
same warning has fired N steps in a row (opt-in). See docs/health.md.

Metric names follow the managed service's where it has one (`rollout/reward/valid_mean`,
`analysis/zero_adv_groups`, `rollout/tokens/response_max`), so local and SageMaker runs read
alike in MLflow.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentrft.episode_shape import (
    ONE_TURN,
    PLAIN_TEXT_CALL,
    TRUNCATED,
    EpisodeShape,
    collapsed,
    describe,
    example,
)
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


# -- exploit watch ----------------------------------------------------------------------------

#: Steps averaged at each end of the run when the reward's trend is compared with the solve
#: rate's (the first `TREND_WINDOW` steps against the latest `TREND_WINDOW`).
TREND_WINDOW = 3
#: A rise of the mean reward that counts, in units of the first steps' reward spread (their
#: mean `reward_std`): half a standard deviation is more than a few steps of noise.
REWARD_RISE = 0.5
#: The solve rate "rose with it" when it gained at least this much (2 points).
SOLVE_RISE = 0.02


def declares_success(task: object) -> bool:
    """Whether `task` can be solved: a tier marked `solved` (a mixture: any of its tasks)."""
    subtasks = getattr(task, "tasks", None)
    if isinstance(subtasks, dict):
        return any(declares_success(t) for t in subtasks.values())
    tiers = getattr(task, "tiers", None)
    return tiers is not None and any(t.solved for t in tiers.tiers)


def lowest_total(task: Any) -> float | None:
    """The reward floor `ExploitWatch` reads above: the task's lowest tier's total, for a
    task with tiers; None for a mixture (its tasks' floors differ) or a task without."""
    if isinstance(getattr(task, "tasks", None), dict) or getattr(task, "tiers", None) is None:
        return None
    try:
        return float(task.lowest_reward().total)
    except Exception:  # a plugin's tiers that cannot say: read every rollout
        return None


@dataclass
class ExploitWatch:
    """Signs that the policy is paid for something other than the task, step by step:

    - `reward_without_success`: the mean reward of the latest steps rose well above the
      first steps' while the solve rate did not (only for a task that can be solved: a
      tier marked solved, or a rollout seen solved). With a `floor` (the task's lowest
      reward: no answer, a broken format) both are read over the rollouts above it, so
      learning to give an answer at all is not taken for an exploit: a ticket routed to
      the wrong team instead of none raises the reward without a solve, as it should;
    - `collapsed_shape`: nearly every rollout of the step collapsed into one shape the
      reward paid for (`agentrft.episode_shape`), the run's first step being the
      reference.
    """

    can_solve: bool = False
    #: The task's lowest reward (`Task.lowest_reward`); None reads every rollout.
    floor: float | None = None
    window: int = TREND_WINDOW
    steps: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    solve_rates: list[float] = field(default_factory=list)
    reward_stds: list[float] = field(default_factory=list)
    baseline: EpisodeShape | None = None

    def findings(
        self, step: int, metrics: dict[str, float], rollouts: Sequence[Trajectory]
    ) -> list[Finding]:
        if self.floor is not None and rollouts:
            floor = self.floor
            above = [t for t in rollouts if t.reward is not None and t.reward.total > floor + 1e-9]
            totals = [t.reward.total for t in above]  # type: ignore[union-attr]
            self.steps.append(step)
            self.rewards.append(statistics.fmean(totals) if totals else floor)
            self.solve_rates.append(sum(t.solved for t in above) / len(above) if above else 0.0)
            self.reward_stds.append(statistics.pstdev(totals) if len(totals) > 1 else 0.0)
        elif "reward_mean" in metrics and "solve_rate" in metrics:
            self.steps.append(step)
            self.rewards.append(metrics["reward_mean"])
            self.solve_rates.append(metrics["solve_rate"])
            self.reward_stds.append(metrics.get("reward_std", 0.0))
        self.can_solve = self.can_solve or any(t.solved for t in rollouts)
        return [f for f in (self._trend(rollouts), self._shape(rollouts)) if f is not None]

    def _trend(self, rollouts: Sequence[Trajectory]) -> Finding | None:
        w = self.window
        if not self.can_solve or len(self.rewards) < 2 * w:
            return None
        first_r, last_r = statistics.fmean(self.rewards[:w]), statistics.fmean(self.rewards[-w:])
        first_s = statistics.fmean(self.solve_rates[:w])
        last_s = statistics.fmean(self.solve_rates[-w:])
        spread = max(statistics.fmean(self.reward_stds[:w]), 1e-2)
        if last_r - first_r < REWARD_RISE * spread or last_s - first_s >= SOLVE_RISE:
            return None
        unsolved = [i for i, t in enumerate(rollouts) if not t.solved and t.reward is not None]
        best = max(unsolved, key=lambda i: rollouts[i].reward.total, default=None)  # type: ignore[union-attr]
        early = f"steps {self.steps[0]}-{self.steps[w - 1]}"
        late = f"steps {self.steps[-w]}-{self.steps[-1]}"
        return Finding(
            "reward_without_success",
            f"reward_mean {first_r:+.3f} ({early}) → {last_r:+.3f} ({late}) while solve_rate "
            f"{first_s:.0%} → {last_s:.0%} — the reward pays for something other than solving "
            "the task; the step's best unsolved rollout shows what",
            best,
        )

    def _shape(self, rollouts: Sequence[Trajectory]) -> Finding | None:
        if not rollouts:
            return None
        shape = EpisodeShape.of_trajectories(rollouts)
        if self.baseline is None:
            self.baseline = shape
        features = collapsed(shape, [self.baseline])
        if not features:
            return None
        return Finding(
            "collapsed_shape",
            f"{describe(shape, features, noun='rollouts')} (reward {shape.mean_reward:+.3f}, "
            f"first step {self.baseline.mean_reward:+.3f}) — "
            + "; ".join(SHAPE_ADVICE[f] for f in features),
            example(rollouts, features),
        )


#: What a collapse into each feature usually means, and what to look at.
SHAPE_ADVICE = {
    PLAIN_TEXT_CALL: "the task's text recovery plays calls written as text, so the reward "
    "pays for calls the policy never made: train without recovery where the task allows it "
    "(Wordle: --task wordle_strict)",
    TRUNCATED: "cut-off replies earn more than the first step's rollouts did: check what a "
    "reply cut off at sampling_max_tokens is paid",
    ONE_TURN: "one-turn episodes earn more than the first step's rollouts did: check what "
    "stopping early is paid",
}


# -- conditions: a line when a warning starts, one when it clears, a summary -----------------

#: A condition clears after this many steps in a row without its warning: one quiet step
#: between two that fire is noise around the threshold, not a recovery.
CLEAR_AFTER = 2


@dataclass
class Condition:
    """A stretch of steps during which one warning held (quiet gaps shorter than
    `CLEAR_AFTER` steps included)."""

    name: str
    start: int
    last: int
    fired: int = 1
    #: The warning as it read on its first step.
    first: str = ""
    cleared: int | None = None

    @property
    def span(self) -> str:
        return (
            f"step {self.start}" if self.start == self.last else f"steps {self.start}-{self.last}"
        )

    @property
    def gaps(self) -> str:
        """`, fired on 5 of 6` when it skipped steps within its span, else ""."""
        steps = self.last - self.start + 1
        return f", fired on {self.fired} of {steps}" if self.fired < steps else ""


@dataclass(frozen=True)
class HealthEvent:
    """A warning that started (`finding` says what it read) or cleared at `step`."""

    step: int
    name: str
    started: bool
    finding: Finding | None = None
    condition: Condition | None = None

    @property
    def line(self) -> str:
        if self.started and self.finding is not None:
            return f"step {self.step}: {self.finding.line}"
        c = self.condition
        held = f" (held {c.span}{c.gaps})" if c else ""
        return f"step {self.step}: {self.name} cleared{held}"


@dataclass
class ConditionLog:
    """Turns each step's findings into conditions: an event when one starts, one when it
    has been quiet for `clear_after` steps, and every condition for the summary."""

    clear_after: int = CLEAR_AFTER
    active: dict[str, Condition] = field(default_factory=dict)
    done: list[Condition] = field(default_factory=list)
    #: The first step seen (a resumed run starts past 1).
    first_step: int | None = None

    def update(
        self, step: int, findings: Sequence[Finding], implied: Iterable[str] = ()
    ) -> list[HealthEvent]:
        """The events of `step`; `implied` names warnings that hold without being warned
        about (a weaker rule under a stronger one): they keep an active condition going
        but start none."""
        if self.first_step is None:
            self.first_step = step
        events = []
        fired = {f.name: f for f in findings}
        holding = set(implied)
        for name, condition in list(self.active.items()):
            if name in fired or name in holding:
                condition.last, condition.fired = step, condition.fired + 1
            elif step - condition.last >= self.clear_after:
                condition.cleared = step
                self.done.append(self.active.pop(name))
                events.append(HealthEvent(step, name, started=False, condition=condition))
        for name, finding in fired.items():
            if name not in self.active:
                self.active[name] = Condition(name, step, step, first=finding.text)
                events.append(HealthEvent(step, name, started=True, finding=finding))
        return events

    def conditions(self) -> list[Condition]:
        """Every condition of the run, in the order they started."""
        return sorted([*self.done, *self.active.values()], key=lambda c: (c.start, c.name))

    def summary(self, last_step: int) -> list[str]:
        """A few lines: each condition, its steps, and whether it still held at the end."""
        conditions = self.conditions()
        first = self.first_step if self.first_step is not None else last_step
        run = f"step {last_step}" if first == last_step else f"steps {first}-{last_step}"
        if not conditions:
            return [f"health: no warning over {run}"]
        width = max(len(c.name) for c in conditions)
        lines = [f"health over {run}: {len(conditions)} conditions"]
        for c in conditions:
            end = "held at the end" if c.cleared is None else f"cleared at step {c.cleared}"
            n = c.last - c.start + 1
            count = f"{n} step{'s' if n > 1 else ''}{c.gaps}"
            lines.append(f"  {c.name:<{width}}  {c.span} ({count}; {end})")
        return lines


@dataclass(frozen=True)
class StepHealth:
    """What `HealthWatch.step` found: the threshold warnings of the step (as
    `HealthMonitor.check` gives them), every finding, and the start/clear events."""

    warnings: list[str]
    findings: list[Finding]
    events: list[HealthEvent]


@dataclass
class HealthWatch:
    """The health view of a run: the threshold rules, the exploit watch and the
    conditions they start and clear. `local.health_stop_after` counts the steps in a row
    any of them fired."""

    monitor: HealthMonitor = field(default_factory=HealthMonitor)
    exploits: ExploitWatch = field(default_factory=ExploitWatch)
    log: ConditionLog = field(default_factory=ConditionLog)

    def step(
        self, step: int, metrics: dict[str, float], rollouts: Sequence[Trajectory] = ()
    ) -> StepHealth:
        rules = self.monitor.findings(metrics)
        found = [*rules, *self.exploits.findings(step, metrics, rollouts)]
        self.monitor.count(f.name for f in found)
        implied = self.monitor.implied(metrics, (f.name for f in rules))
        events = self.log.update(step, found, implied)
        return StepHealth([f.line for f in rules], found, events)

    def stop_reason(self) -> str | None:
        return self.monitor.stop_reason()

    def summary(self, last_step: int) -> list[str]:
        return self.log.summary(last_step)
