"""The judged variant of expense_report: the agent also writes the traveler a short message
explaining the report, and a rubric judge scores that message as shaping inside the
outcome tier the programmatic grade already chose.

Opt-in: `JudgedExpenseReportTask(judge=RubricJudge(...), group_judge=GroupJudge(...))` in
Python, or `--task expense_report_judged` (`ExpenseReportJudgedTask`, its judges set from
`AGENTRFT_JUDGE_*` environment variables). The plain `ExpenseReportTask` (what `--task
expense_report` runs) has no explanation tool, no judge and no network.

With a `group_judge`, the rollouts of one trip played together (a training step's group,
an evaluation's samples of a row) are judged in one request, relative to each other
(`score_group`); an episode played alone (the SageMaker runtime, `agentrft play`) is scored
by the rubric judge.

The judge only moves a reward inside its tier (a correct report with a poor message still
beats every wrong report), so `agentrft reward check` proves the order as before; the
check plays the scripted episodes with a `ScriptedJudge` (no network) at scores 0 and 1 and
also refuses a `judge_weight` that makes a worse message outscore a better one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from agentrft import (
    GroupEpisode,
    GroupJudge,
    JudgeVerdict,
    RewardResult,
    RewardSample,
    RubricJudge,
    ScriptedJudge,
    TaskInputError,
    Trajectory,
    run_episode,
    run_sync,
    tool,
)
from agentrft_expense_report import expert as scripted
from agentrft_expense_report.environment import ExpenseReportEnv
from agentrft_expense_report.money import fmt
from agentrft_expense_report.reward import TIERS, score, tool_errors
from agentrft_expense_report.task import ExpenseInstance, ExpenseReportTask

#: The rubric the judge scores the explanation against.
EXPLANATION_CRITERIA = """\
The message is to the traveler whose expense report was just filed.
1. It names every receipt that was rejected and gives the policy reason for each one.
2. It says which receipts were reimbursed (or reduced, e.g. by a daily cap) and the total.
3. Everything it states agrees with the correct decisions listed below; no invented rules.
4. It is polite, plain and short (a few sentences)."""

#: Tiers whose episodes submitted a report: only they have something to explain.
JUDGED_TIERS = ("correct", "partly_correct")


class ExplainingExpenseReportEnv(ExpenseReportEnv):
    """The expense-report environment plus one tool: the message to the traveler."""

    explanation: str = ""

    @tool
    def write_explanation(self, message: str) -> str:
        """Write the short message to the traveler explaining the report (which receipts are
        reimbursed, which are rejected and why). Call it once, before submit_report."""
        self.explanation = message.strip()
        self._ok("write_explanation")
        return "Explanation saved."


def explanation_view(env: ExplainingExpenseReportEnv, trajectory: Trajectory) -> str:
    """What the judge sees: the message, and the correct decisions to check it against.

    The decisions are hidden from the policy; they reach the judge because this view puts
    them here, and nowhere else.
    """
    decisions = []
    for d in env.expected.values():
        if d.claimed:
            decisions.append(f"- {d.receipt_id}: reimbursed, {d.category}, ${fmt(d.amount_cents)}")
        else:
            decisions.append(f"- {d.receipt_id}: rejected ({d.reason})")
    total = fmt(sum(d.amount_cents for d in env.expected.values()))
    return (
        f"Traveler: {env.trip.traveler}\n"
        f"Correct decisions (total ${total}):\n" + "\n".join(decisions) + "\n\n"
        f"The message:\n{env.explanation or '(no message was written)'}"
    )


class JudgedExpenseReportTask(ExpenseReportTask):
    """expense_report with a judged explanation to the traveler.

    Args:
        judge: a `RubricJudge` (or `ScriptedJudge`) scoring `explanation_view`, one episode
            at a time.
        judge_weight: the judge's share of a tier's shaping, in [0, 1]; the rest stays the
            programmatic quality score. The reward check refuses a weight that inverts the
            judge.
        group_judge: a `GroupJudge` on `explanation_view` for the rollouts of one trip
            played together (`score_group`); None: every episode is judged alone.
    """

    def __init__(
        self,
        judge: RubricJudge | ScriptedJudge,
        judge_weight: float = 0.5,
        group_judge: GroupJudge | None = None,
    ) -> None:
        self.judge = judge
        self.judge_weight = judge_weight
        self.group_judge = group_judge

    def environment(self, instance: ExpenseInstance) -> ExplainingExpenseReportEnv:
        return ExplainingExpenseReportEnv(instance.trip)

    def user_prompt(self, instance: ExpenseInstance) -> str:
        steps = super().user_prompt(instance).rsplit("\n", 1)[0]
        return (
            f"{steps}\n5. Write {instance.trip.traveler} a short message explaining the report "
            "(write_explanation): what is reimbursed, what is rejected and why.\n"
            "6. Call submit_report when the report is complete."
        )

    async def reward(  # type: ignore[override]
        self, env: ExplainingExpenseReportEnv, trajectory: Trajectory
    ) -> RewardResult:
        graded = score(env.grade(), tool_errors(trajectory))
        if graded.outcome not in JUDGED_TIERS:
            return graded
        return self._judged(graded, await self.judge(env, trajectory))

    async def score_group(self, group: Sequence[GroupEpisode]) -> list[RewardResult] | None:
        """The group's messages judged together by `group_judge`, each as shaping inside
        its own programmatic tier (episodes in other tiers are not judged). None without a
        group judge, so each episode gets `reward`; a lone judged episode gets the rubric
        judge (one attempt has nothing to be compared with)."""
        if self.group_judge is None:
            return None
        graded = [score(m.env.grade(), tool_errors(m.trajectory)) for m in group]
        judged = [k for k, g in enumerate(graded) if g.outcome in JUDGED_TIERS]
        results = list(graded)
        if len(judged) == 1:
            (k,) = judged
            results[k] = self._judged(
                graded[k], await self.judge(group[k].env, group[k].trajectory)
            )
        elif judged:
            verdicts = await self.group_judge([(group[k].env, group[k].trajectory) for k in judged])
            for k, verdict in zip(judged, verdicts, strict=True):
                results[k] = self._judged(graded[k], verdict)
        return results

    def _judged(self, graded: RewardResult, verdict: JudgeVerdict) -> RewardResult:
        """The programmatic grade with the judge's score as `judge_weight` of its shaping."""
        assert graded.outcome is not None
        tier = verdict.tier(graded.outcome)
        programmatic = max(-1.0, min(1.0, graded.shaping))
        w = self.judge_weight
        shaping = (1.0 - w) * programmatic + w * verdict.shaping
        components = {**graded.components, **verdict.components()}
        return TIERS.score(tier, shaping, components=components)

    def reward_samples(self) -> Iterable[RewardSample]:
        """The tiers, the scripted episodes under a scripted judge at 0 and at 1, and a
        proof that a better message scores higher."""
        yield from TIERS.samples()
        low = JudgedExpenseReportTask(ScriptedJudge(0.0), self.judge_weight)
        high = JudgedExpenseReportTask(ScriptedJudge(1.0), self.judge_weight)
        for judged, task in ((0.0, low), (1.0, high)):
            for sample in run_sync(task._episode_samples()):
                sample.label += f", message judged {judged:g}"
                yield sample
        run_sync(_check_judge_sign(low, high))


async def _check_judge_sign(low: JudgedExpenseReportTask, high: JudgedExpenseReportTask) -> None:
    """The expert's episode judged 1 must outscore the same episode judged 0."""
    prompt = '{"id": "reward_check_judge", "seed": 1001, "difficulty": "medium"}'
    worse = await run_episode(low, prompt, scripted.expert_policy())
    better = await run_episode(high, prompt, scripted.expert_policy())
    assert worse.reward is not None and better.reward is not None
    if better.reward.total <= worse.reward.total:
        raise ValueError(
            f"judge_weight {low.judge_weight:g} inverts the judge: the expert's report with a "
            f"message judged 1.0 scored {better.reward.total:.4f}, not above "
            f"{worse.reward.total:.4f} for one judged 0.0; use a judge_weight in (0, 1]"
        )


def judged_task(group: bool = False, **judge_options: Any) -> JudgedExpenseReportTask:
    """`JudgedExpenseReportTask` with a `RubricJudge` on `EXPLANATION_CRITERIA` (and, with
    `group=True`, a `GroupJudge` on the same endpoint for groups); `judge_options` go to
    both judges (model, base_url, api_key, prices, cache_dir, ...)."""
    weight = judge_options.pop("judge_weight", 0.5)
    judge_options.setdefault("fallback", 0.5)  # a failed judge is neutral, not a penalty
    group_judge = (
        GroupJudge(EXPLANATION_CRITERIA, explanation_view, **judge_options) if group else None
    )
    return JudgedExpenseReportTask(
        RubricJudge(EXPLANATION_CRITERIA, explanation_view, **judge_options), weight, group_judge
    )


#: The environment variables `--task expense_report_judged` reads its judge from.
JUDGE_ENV = {
    "AGENTRFT_JUDGE_MODEL": "the judge model: a name the server knows, or litellm:PROVIDER/MODEL",
    "AGENTRFT_JUDGE_BASE_URL": "an OpenAI-compatible API root (default OpenAI's)",
    "AGENTRFT_JUDGE_API_KEY": "the judge's key (default the client's usual variable)",
    "AGENTRFT_JUDGE_MODE": "group (default: a group judge for groups, rubric alone) or rubric",
    "AGENTRFT_JUDGE_INPUT_USD_PER_1M": "price per million prompt tokens, for judge/cost_usd",
    "AGENTRFT_JUDGE_OUTPUT_USD_PER_1M": "price per million completion tokens",
    "AGENTRFT_JUDGE_CACHE_DIR": "keep verdicts on disk there too",
}


def judge_options_from_env(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """`judged_task` options from the `AGENTRFT_JUDGE_*` variables (`JUDGE_ENV`); a missing
    model or a bad value is a `TaskInputError` naming the variable and the fix."""
    env = os.environ if environ is None else environ
    model = env.get("AGENTRFT_JUDGE_MODEL", "").strip()
    if not model:
        raise TaskInputError(
            "task 'expense_report_judged' needs a judge endpoint: set AGENTRFT_JUDGE_MODEL "
            "(e.g. gpt-4o-mini, or litellm:anthropic/claude-sonnet-4-5) and, for a server "
            "other than OpenAI's, AGENTRFT_JUDGE_BASE_URL (e.g. http://127.0.0.1:8000/v1); "
            "or use --task expense_report, which has no judge"
        )
    options: dict[str, Any] = {"model": model}
    if env.get("AGENTRFT_JUDGE_BASE_URL", "").strip():
        options["base_url"] = env["AGENTRFT_JUDGE_BASE_URL"].strip()
    if env.get("AGENTRFT_JUDGE_API_KEY", ""):
        options["api_key"] = env["AGENTRFT_JUDGE_API_KEY"]
    mode = env.get("AGENTRFT_JUDGE_MODE", "group").strip() or "group"
    if mode not in ("group", "rubric"):
        raise TaskInputError(f"AGENTRFT_JUDGE_MODE must be 'group' or 'rubric', got {mode!r}")
    options["group"] = mode == "group"
    for name, key in (
        ("AGENTRFT_JUDGE_INPUT_USD_PER_1M", "input_usd_per_1m"),
        ("AGENTRFT_JUDGE_OUTPUT_USD_PER_1M", "output_usd_per_1m"),
    ):
        raw = env.get(name, "").strip()
        if not raw:
            continue
        try:
            options[key] = float(raw)
        except ValueError:
            raise TaskInputError(f"{name} must be a number of USD, got {raw!r}") from None
        if options[key] < 0:
            raise TaskInputError(f"{name} must be >= 0, got {raw}")
    if env.get("AGENTRFT_JUDGE_CACHE_DIR", "").strip():
        options["cache_dir"] = env["AGENTRFT_JUDGE_CACHE_DIR"].strip()
    return options


class ExpenseReportJudgedTask(JudgedExpenseReportTask):
    """`--task expense_report_judged`: the judged variant, its judges from `AGENTRFT_JUDGE_*`
    environment variables (`JUDGE_ENV`; AGENTRFT_JUDGE_MODEL is required)."""

    name = "expense_report_judged"
    description = "expense_report plus a judged message to the traveler (AGENTRFT_JUDGE_MODEL)"

    def __init__(self) -> None:
        made = judged_task(**judge_options_from_env())
        super().__init__(made.judge, made.judge_weight, made.group_judge)
