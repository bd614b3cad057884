"""Whole episodes through `agentrft.run_episode`: the expert, flawed policies, tiers, leaks."""

import asyncio
import json
import random

import pytest
from agentrft_expense_report import TIERS, ExpenseReportTask
from agentrft_expense_report import expert as scripted

from agentrft import (
    ScriptedPolicy,
    call,
    check_reward_order,
    replay_policy,
    run_episode,
    run_episodes,
)

TASK = ExpenseReportTask()
CORRECT_MIN = TIERS.tier("correct").low


def prompts(n_per_difficulty, offset=0):
    return [
        json.dumps({"id": f"t_{d}_{s}", "seed": s, "difficulty": d})
        for d in ("easy", "medium", "hard")
        for s in range(offset, offset + n_per_difficulty)
    ]


def test_expert_solves_every_instance_across_difficulties():
    rows = prompts(70) + [r["prompt"] for r in TASK.make_dataset("validation", 30, 0)]
    trajs = asyncio.run(run_episodes(TASK, rows, TASK.expert(), concurrency=16))
    unsolved = [(t.prompt, t.reward.outcome, t.failure_kinds) for t in trajs if not t.solved]
    assert not unsolved
    assert all(t.reward.outcome == "correct" for t in trajs)
    # A clean expert episode: no tool errors, no wasted calls, full shaping.
    assert all(t.reward.total == pytest.approx(1.3) for t in trajs)
    assert all(not t.failures for t in trajs)


def test_expert_episode_reads_replies_and_converts_foreign_amounts():
    traj = asyncio.run(run_episode(TASK, prompts(1, offset=3)[2], TASK.expert()))
    names = [c.name for turn in traj.turns for c in turn.assistant.tool_calls or []]
    assert names[:2] == ["get_policy", "list_receipts"]
    assert "convert_currency" in names and names[-1] == "submit_report"
    assert traj.stop_reason == "done"
    assert traj.reward.components["item_f1"] == 1.0


@pytest.mark.parametrize(
    ("make", "tier"),
    [
        (scripted.submit_at_once, "partly_correct"),
        (scripted.naive_policy, "partly_correct"),
        (lambda: scripted.flawed_expert("drop_item"), "partly_correct"),
        (lambda: scripted.flawed_expert("no_flags"), "partly_correct"),
        (scripted.reader_policy, "not_submitted"),
        (scripted.silent_policy, "no_valid_call"),
        (scripted.invalid_caller, "no_valid_call"),
        (scripted.clumsy_expert, "correct"),
    ],
)
def test_each_behaviour_lands_in_its_tier(make, tier):
    for prompt in prompts(4):
        traj = asyncio.run(run_episode(TASK, prompt, make()))
        assert traj.reward.outcome == tier, (prompt, traj.reward)
        if tier != "correct":
            assert traj.reward.total < CORRECT_MIN
            assert not traj.solved


def test_submit_at_once_is_below_any_correct_report_and_silence_is_lowest():
    rows = prompts(5)
    at_once = asyncio.run(run_episodes(TASK, rows, scripted.submit_at_once()))
    silent = asyncio.run(run_episodes(TASK, rows, scripted.silent_policy()))
    clumsy = asyncio.run(run_episodes(TASK, rows, scripted.clumsy_expert()))
    assert max(t.reward.total for t in at_once) < min(t.reward.total for t in clumsy)
    lowest = TASK.lowest_reward().total
    assert all(t.reward.total == lowest == -1.2 for t in silent)
    others = at_once + clumsy + asyncio.run(run_episodes(TASK, rows, scripted.reader_policy()))
    assert min(t.reward.total for t in others) > lowest


def test_shaping_ranks_inside_a_tier():
    prompt = prompts(1, offset=9)[2]
    clean = asyncio.run(run_episode(TASK, prompt, TASK.expert()))
    clumsy = asyncio.run(run_episode(TASK, prompt, scripted.clumsy_expert()))
    assert clumsy.reward.components["tool_errors"] == 4
    assert clumsy.reward.components["wasted_calls"] == 2
    assert CORRECT_MIN <= clumsy.reward.total < clean.reward.total
    drop = asyncio.run(run_episode(TASK, prompt, scripted.flawed_expert("drop_item")))
    at_once = asyncio.run(run_episode(TASK, prompt, scripted.submit_at_once()))
    assert at_once.reward.total < drop.reward.total < CORRECT_MIN


def test_tool_errors_are_replies_not_crashes():
    prompt = prompts(1)[0]
    policy = replay_policy(
        [
            [
                call("get_receipt", {"receipt_id": "R77"}),
                call("convert_currency", {"amount": "abc", "currency": "EUR", "date": "x"}),
                call("add_line_item", {"receipt_id": "R01", "category": "meals", "amount_usd": -3}),
                call("flag_receipt", {"receipt_id": "R01", "reason": "because"}),
                call("remove_line_item", {"receipt_id": "R01"}),
                call("add_line_item", {"receipt_id": "R01", "category": "meals", "amount_usd": 5}),
                call("add_line_item", {"receipt_id": "R01", "category": "meals", "amount_usd": 5}),
                call("flag_receipt", {"receipt_id": "R01", "reason": "duplicate"}),
            ],
            call("submit_report"),
        ]
    )
    traj = asyncio.run(run_episode(TASK, prompt, policy))
    replies = [m.content for m in traj.messages if m.role == "tool"]
    assert replies[0].startswith("Error: no receipt 'R77'. Receipt ids: R01")
    assert "invalid arguments for convert_currency" in replies[1]
    assert replies[2] == "Error: amount_usd must be positive."
    assert "reason" in replies[3] and "invalid arguments" in replies[3]
    assert replies[4] == "Error: R01 has no line item or flag to remove."
    assert replies[5] == "Added a meals line item for R01."
    assert "already has a line item" in replies[6]
    assert "call remove_line_item first" in replies[7]
    assert traj.reward.outcome == "partly_correct"
    assert traj.reward.components["tool_errors"] == 7


def random_policy(seed):
    """Random calls with plausible and implausible arguments; sometimes submits."""
    rng = random.Random(seed)
    categories = ["airfare", "lodging", "meals", "ground_transport", "conference", "misc"]
    reasons = ["outside_trip", "duplicate", "non_reimbursable", "missing_receipt", "other"]

    def step(messages, tools):
        if rng.random() < 0.05:
            return "thinking..."
        rid = f"R{rng.randint(1, 16):02d}"
        choice = rng.choice([t["function"]["name"] for t in tools])
        args = {
            "list_receipts": {},
            "get_policy": {},
            "submit_report": {},
            "get_receipt": {"receipt_id": rid},
            "remove_line_item": {"receipt_id": rid},
            "flag_receipt": {"receipt_id": rid, "reason": rng.choice(reasons)},
            "add_line_item": {
                "receipt_id": rid,
                "category": rng.choice(categories),
                "amount_usd": round(rng.uniform(1, 400), 2),
            },
            "convert_currency": {
                "amount": round(rng.uniform(1, 400), 2),
                "currency": rng.choice(["EUR", "GBP", "CAD", "CHF", "MXN", "USD"]),
                "date": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            },
        }[choice]
        if choice == "submit_report" and rng.random() < 0.7:
            choice, args = "list_receipts", {}
        return call(choice, args)

    return ScriptedPolicy(step, name=f"random_{seed}")


def test_hidden_values_never_reach_the_policy():
    rows = prompts(12) + [r["prompt"] for r in TASK.make_dataset("train", 12, 3)]
    policies = [
        TASK.expert,
        scripted.naive_policy,
        scripted.clumsy_expert,
        scripted.submit_at_once,
        lambda: scripted.flawed_expert("drop_item"),
    ]
    checked = 0
    for i, prompt in enumerate(rows):
        secrets = TASK.hidden_values(TASK.parse(prompt))
        assert secrets, prompt  # the total is always a secret on these trips
        for make in [*policies, lambda i=i: random_policy(i)]:
            traj = asyncio.run(run_episode(TASK, prompt, make()))
            seen = [m.content or "" for m in traj.messages if m.role != "assistant"]
            seen.append(json.dumps(traj.tools))
            for secret in secrets:
                for text in seen:
                    assert secret not in text, (prompt, secret, text[:300])
            checked += 1
    assert checked == len(rows) * 6


def test_hidden_values_cover_the_expected_total():
    inst = TASK.parse(prompts(1, offset=11)[2])
    env = TASK.environment(inst)
    total = sum(d.amount_cents for d in env.expected.values())
    assert f"{total // 100}.{total % 100:02d}" in TASK.hidden_values(inst)


def test_reward_check_passes_with_real_episodes():
    samples = list(TASK.reward_samples())
    report = check_reward_order(samples)
    assert report.ok, report.explain()
    labels = [s.label for s in samples]
    assert any(label.startswith("expert on") for label in labels)
    # Every scripted episode landed where it claims to.
    for s in samples:
        if " (landed in " in s.label:
            assert s.label.endswith(f"(landed in {s.tier})"), s.label


def test_reward_check_would_catch_overlapping_tiers():
    from agentrft import RewardResult, RewardSample

    samples = list(TASK.reward_samples())
    bad = RewardResult(total=1.15, outcome="partly_correct")
    report = check_reward_order([*samples, RewardSample(1, "partly_correct", "forged", bad)])
    assert not report.ok and "forged" in report.explain()


def test_calls_written_as_text_are_recovered_and_cost_shaping():
    from agentrft_expense_report.environment import recover_calls

    names = {"get_policy", "get_receipt", "submit_report"}
    tagged = '<tool_call>{"name": "get_receipt", "arguments": {"receipt_id": "R02"}}</tool_call>'
    (c,) = recover_calls("Let me look. " + tagged, names)
    assert (c.name, json.loads(c.arguments)) == ("get_receipt", {"receipt_id": "R02"})
    (c,) = recover_calls('get_receipt(receipt_id="R03")', names)
    assert json.loads(c.arguments) == {"receipt_id": "R03"}
    assert recover_calls('{"name": "get_policy", "arguments": {}}', names)[0].name == "get_policy"
    assert recover_calls("I think rm_rf(path='/') is a bad idea", names) == []
    assert recover_calls("Nothing to call here.", names) == []

    # Through the loop: the call runs, its reply comes back as a user turn, and it costs
    # shaping like a tool error.
    tagged = '<tool_call>{"name": "get_policy", "arguments": {}}</tool_call>'
    prompt = prompts(1)[0]
    traj = asyncio.run(run_episode(TASK, prompt, replay_policy([tagged, call("submit_report")])))
    assert traj.messages[3].role == "user" and '"daily_meal_cap_usd"' in traj.messages[3].content
    assert traj.failure_kinds == ["plain_text_call"]
    plain = asyncio.run(run_episode(TASK, prompt, scripted.submit_at_once()))
    assert traj.reward.outcome == plain.reward.outcome == "partly_correct"
    assert traj.reward.components["tool_errors"] == 1
    assert traj.reward.total < plain.reward.total
