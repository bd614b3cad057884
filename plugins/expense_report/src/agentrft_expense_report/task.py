"""`ExpenseReportTask`: file a travel expense report that follows the company policy.

A dataset row carries only the trip's seed, difficulty and id:

    {"prompt": "{\\"task\\": \\"expense_report\\", \\"id\\": \\"expense_report_train_0000\\",
                 \\"seed\\": 40000017, \\"difficulty\\": \\"medium\\"}"}

The receipts, the policy and the right report are regenerated from the seed on the server
side; the right report (claims, amounts, totals) never appears in a prompt or tool reply.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from agentrft import (
    EpisodeLimits,
    Policy,
    RewardResult,
    RewardSample,
    Task,
    TaskInputError,
    TieredReward,
    Trajectory,
    run_episode,
    run_sync,
)
from agentrft_expense_report import expert as scripted
from agentrft_expense_report.environment import ExpenseReportEnv
from agentrft_expense_report.generator import DIFFICULTIES, generate_trip
from agentrft_expense_report.money import fmt
from agentrft_expense_report.reward import TIERS, expense_reward
from agentrft_expense_report.rules import adjudicate, non_reimbursable_portion
from agentrft_expense_report.trip import Trip

#: Instance seeds are split by their last digit so splits can never share a trip.
SPLIT_DIGITS = {"train": range(0, 8), "validation": range(8, 9), "test": range(9, 10)}
DEFAULT_SIZES = {"train": 640, "validation": 128, "test": 128}

SYSTEM_PROMPT = (
    "You are an expense-report assistant at a company. You file travel expense reports that "
    "follow the company travel policy exactly, using only the tools you are given."
)


@dataclass(frozen=True)
class ExpenseInstance:
    """A parsed row. `trip` (and with it the right report) is derived from the seed."""

    id: str
    seed: int
    difficulty: str
    trip: Trip


class ExpenseReportTask(Task[ExpenseInstance, ExpenseReportEnv]):
    """File a trip's expense report under the company policy (an internal workflow)."""

    name: ClassVar[str] = "expense_report"
    description: ClassVar[str] = (
        "File a travel expense report: policy caps, currencies, traps; graded on the outcome."
    )
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=40, max_tool_calls=120)
    tiers: ClassVar[TieredReward] = TIERS

    # -- rows ------------------------------------------------------------------------
    def parse(self, prompt: str) -> ExpenseInstance:
        try:
            data = json.loads(prompt)
        except (json.JSONDecodeError, TypeError) as exc:
            raise TaskInputError(
                f"expense_report: the row's prompt is not JSON ({exc}). Expected "
                '{"seed": <int>, "difficulty": "easy|medium|hard", "id": "<str>"}; '
                "make rows with ExpenseReportTask().make_dataset(split, n, seed)."
            ) from None
        if not isinstance(data, dict):
            raise TaskInputError("expense_report: the row's prompt must be a JSON object")
        seed = data.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise TaskInputError(
                f"expense_report: 'seed' must be a non-negative integer, got {seed!r}"
            )
        difficulty = data.get("difficulty", "medium")
        if difficulty not in DIFFICULTIES:
            raise TaskInputError(
                f"expense_report: 'difficulty' must be one of {list(DIFFICULTIES)}, "
                f"got {difficulty!r}"
            )
        row_id = str(data.get("id") or f"expense_report_{difficulty}_{seed}")
        return ExpenseInstance(row_id, seed, difficulty, generate_trip(seed, difficulty, row_id))

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        """`n` rows of `split`, difficulties cycling easy/medium/hard; splits never overlap."""
        if split not in SPLIT_DIGITS:
            raise TaskInputError(
                f"expense_report: unknown split {split!r}; use one of {list(SPLIT_DIGITS)}"
            )
        n = DEFAULT_SIZES[split] if n is None else n
        if n < 0:
            raise TaskInputError(f"expense_report: n must be >= 0, got {n}")
        rng = random.Random(f"expense_report:{split}:{seed}")
        digits = list(SPLIT_DIGITS[split])
        rows = []
        for i, k in enumerate(rng.sample(range(10**7), n)):
            trip_seed = k * 10 + digits[i % len(digits)]
            difficulty = DIFFICULTIES[i % len(DIFFICULTIES)]
            row = {
                "task": self.name,
                "id": f"expense_report_{split}_{i:04d}",
                "seed": trip_seed,
                "difficulty": difficulty,
            }
            rows.append({"prompt": json.dumps(row)})
        return rows

    # -- episode ---------------------------------------------------------------------
    def environment(self, instance: ExpenseInstance) -> ExpenseReportEnv:
        return ExpenseReportEnv(instance.trip)

    def system_prompt(self, instance: ExpenseInstance) -> str:
        return SYSTEM_PROMPT

    def user_prompt(self, instance: ExpenseInstance) -> str:
        trip = instance.trip
        where = " and ".join(trip.destinations)
        return (
            f"File the expense report for {trip.traveler}'s trip to {where} "
            f"({trip.start} to {trip.end}), {len(trip.receipts)} receipts.\n"
            "1. Read the company policy with get_policy and follow its rules in order.\n"
            "2. Review every receipt (list_receipts, then get_receipt for notes and whether an "
            "itemized receipt is attached).\n"
            "3. Convert foreign amounts to USD with convert_currency.\n"
            "4. Add one line item in USD for each reimbursable receipt (add_line_item) and flag "
            "each receipt that must be rejected, with its reason (flag_receipt).\n"
            "5. Call submit_report when the report is complete."
        )

    def reward(self, env: ExpenseReportEnv, trajectory: Trajectory) -> RewardResult:
        return expense_reward(env, trajectory)

    def hidden_values(self, instance: ExpenseInstance) -> list[str]:
        """The right report's total (and any meal amount cut by the daily cap), 2 decimals.

        Per-item amounts mostly equal a conversion the model may ask for, so they are not
        secrets; the total and the daily-cap remainders are sums nothing ever shows. A value
        that happens to equal a public number on this trip is left out (not a leak).
        """
        trip = instance.trip
        decisions = adjudicate(trip.receipts, trip.policy, trip.start, trip.end)
        public = _public_numbers(trip)
        secrets = [fmt(sum(d.amount_cents for d in decisions))]
        # A meal trimmed by the daily cap claims an amount no conversion shows.
        uncapped = {
            r.id: trip.policy.to_usd(
                r.amount_cents - non_reimbursable_portion(r.notes), r.currency, r.date
            )
            for r in trip.receipts
        }
        for d in decisions:
            if d.category == "meals" and d.amount_cents < uncapped[d.receipt_id]:
                secrets.append(fmt(d.amount_cents))
        return [s for s in dict.fromkeys(secrets) if s not in public]

    # -- policies --------------------------------------------------------------------
    def expert(self) -> Policy:
        return scripted.expert_policy()

    def reward_samples(self) -> Iterable[RewardSample]:
        """The declared tiers at extreme shaping, plus rewards of real scripted episodes."""
        yield from TIERS.samples()
        yield from run_sync(self._episode_samples())

    async def _episode_samples(self) -> list[RewardSample]:
        behaviours = [
            ("correct", "expert", scripted.expert_policy),
            ("correct", "expert with tool errors and wasted calls", scripted.clumsy_expert),
            ("partly_correct", "expert that drops a line item", _flawed("drop_item")),
            ("partly_correct", "expert that never flags", _flawed("no_flags")),
            ("partly_correct", "naive: claims every receipt in full", scripted.naive_policy),
            ("partly_correct", "submits at once", scripted.submit_at_once),
            ("not_submitted", "reads, never submits", scripted.reader_policy),
            ("no_valid_call", "never calls a tool", scripted.silent_policy),
            ("no_valid_call", "only invalid calls", scripted.invalid_caller),
        ]
        prompts = [
            json.dumps({"id": f"reward_check_{d}", "seed": 1000 + i, "difficulty": d})
            for i, d in enumerate(DIFFICULTIES)
        ]
        out = []
        for tier, label, make in behaviours:
            rank = TIERS.names.index(tier)
            for prompt in prompts:
                traj = await run_episode(self, prompt, make())
                got = traj.reward.outcome if traj.reward else "none"
                text = f"{label} on {json.loads(prompt)['id']} (landed in {got})"
                assert traj.reward is not None
                out.append(RewardSample(rank, tier, text, traj.reward))
        return out


def _flawed(mistake: str):
    return lambda: scripted.flawed_expert(mistake)


def _public_numbers(trip: Trip) -> set[str]:
    """Every amount a tool reply can show without the model's own input."""
    shown = {fmt(r.amount_cents) for r in trip.receipts}
    shown |= {fmt(trip.policy.to_usd(r.amount_cents, r.currency, r.date)) for r in trip.receipts}
    policy = trip.policy.public()
    shown |= set(policy["per_receipt_caps_usd"].values())
    shown |= {policy["daily_meal_cap_usd"], policy["receipt_required_over_usd"]}
    return shown
