"""Amounts that are no money (NaN, infinities, more digits than cents can hold) get a
tool error the model can act on, never a `decimal` exception."""

import asyncio
import json
from decimal import Decimal

import pytest
from agentrft_expense_report import ExpenseReportTask
from agentrft_expense_report.money import to_cents

from agentrft import ToolCall, call, replay_policy, run_episode

TASK = ExpenseReportTask()
PROMPT = json.dumps({"id": "bad_amounts", "seed": 3, "difficulty": "easy"})

# JSON as a model writes it: json.loads reads NaN and Infinity as floats, 1e400 as inf.
NOT_FINITE = ["NaN", "Infinity", "-Infinity", "1e400", '"nan"', '"-inf"']
TOO_LARGE = ["1e26", "1e30", "1e308", '"123456789012345678901234567890"']


@pytest.mark.parametrize(
    ("amount", "why"),
    [
        (float("nan"), "not a finite amount"),
        (float("inf"), "not a finite amount"),
        (float("-inf"), "not a finite amount"),
        ("NaN", "not a finite amount"),
        (Decimal("sNaN"), "not a finite amount"),
        (1e26, "too large"),
        (1e308, "too large"),
        ("9" * 40, "too large"),
        ("abc", "not an amount"),
    ],
)
def test_to_cents_raises_value_error_for_what_is_no_amount(amount, why):
    with pytest.raises(ValueError, match=why):
        to_cents(amount)


def test_to_cents_still_takes_large_real_amounts():
    assert to_cents(1e20) == 10**22
    assert to_cents("12345678901234567890.125") == 1234567890123456789013


def _reply(env, name, arguments):
    return asyncio.run(env.call_tool(ToolCall(id="1", name=name, arguments=arguments)))


@pytest.mark.parametrize("amount", NOT_FINITE + TOO_LARGE)
def test_add_line_item_answers_a_tool_error(amount):
    env = TASK.environment(TASK.parse(PROMPT))
    rid = env.trip.receipts[0].id
    args = f'{{"receipt_id": "{rid}", "category": "meals", "amount_usd": {amount}}}'
    result = _reply(env, "add_line_item", args)
    assert result.failure == "tool_error", result.content
    assert result.content.startswith("Error: amount_usd: ")
    assert ("not a finite amount" in result.content) or ("too large" in result.content)
    assert "such as 84.50" in result.content
    assert env.line_items == {}  # nothing recorded


@pytest.mark.parametrize("amount", NOT_FINITE + TOO_LARGE)
def test_convert_currency_answers_a_tool_error(amount):
    env = TASK.environment(TASK.parse(PROMPT))
    args = f'{{"amount": {amount}, "currency": "EUR", "date": "{env.trip.start}"}}'
    result = _reply(env, "convert_currency", args)
    assert result.failure == "tool_error", result.content
    assert result.content.startswith("Error: amount: ")


def test_an_episode_full_of_bad_amounts_ends_with_a_reward():
    env = TASK.environment(TASK.parse(PROMPT))
    rid = env.trip.receipts[0].id
    bad = [
        call("add_line_item", {"receipt_id": rid, "category": "meals", "amount_usd": v})
        for v in (float("nan"), float("inf"), 1e30)
    ]
    traj = asyncio.run(run_episode(TASK, PROMPT, replay_policy([bad, call("submit_report")])))
    assert traj.stop_reason == "done"
    assert traj.failure_kinds == ["tool_error"] * 3  # no tool_exception
    assert traj.reward is not None and traj.reward.components["tool_errors"] == 3
