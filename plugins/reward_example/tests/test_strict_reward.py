"""The example reward plugin: discovered, selectable by name, ordered, and it changes scores
exactly as docs/custom-rewards.md says."""

import asyncio
import itertools
import json

import pytest
from agentrft_expense_report import ExpenseReportTask
from agentrft_expense_report import expert as scripted
from agentrft_reward_example import STRICT_REWARD, STRICT_TIERS, strict_reward
from typer.testing import CliRunner

from agentrft import check_reward_order, run_episode
from agentrft.cli.app import app
from agentrft.plugins import PluginError, load_plugins
from agentrft.reward_check import check_task_reward

TASK = ExpenseReportTask()
PROMPTS = [
    json.dumps({"seed": s, "difficulty": d}) for d in ("easy", "medium", "hard") for s in (1, 2)
]


def test_registered_under_its_name_for_expense_report_only():
    plugins = load_plugins()
    assert plugins.rewards()["expense_report_strict"] is STRICT_REWARD
    assert plugins.reward("expense_report_strict", "expense_report").fn is strict_reward
    with pytest.raises(PluginError, match="applies to tasks \\['expense_report'\\], not 'wordle'"):
        plugins.reward("expense_report_strict", "wordle")


def test_reward_check_passes_on_real_episodes():
    assert STRICT_REWARD.samples is not None
    samples = list(STRICT_REWARD.samples(TASK))
    assert any(s.label == "expert on strict_hard (landed in clean)" for s in samples)
    for s in samples:
        if "(landed in" in s.label:
            assert s.label.endswith(f"(landed in {s.tier})"), s.label
    report = check_reward_order(samples)
    assert report.ok, report.explain()
    assert check_task_reward(TASK, STRICT_REWARD).ok


def scores(make_policy):
    own, strict = [], []
    for prompt in PROMPTS:
        own.append((asyncio.run(run_episode(TASK, prompt, make_policy()))).reward)
        strict.append(
            (asyncio.run(run_episode(TASK, prompt, make_policy(), reward_fn=strict_reward))).reward
        )
    return own, strict


def test_it_changes_scores_as_documented():
    # The expert: 1.30 with the task's reward, 1.00 with the strict one.
    own, strict = scores(scripted.expert_policy)
    assert {r.total for r in own} == {1.3} and {r.total for r in strict} == {1.0}
    assert all(r.outcome == "clean" and r.solved for r in strict)

    # Correct with 4 tool errors and 2 wasted calls: 1.20 (task) vs 0.50 (strict).
    own, strict = scores(scripted.clumsy_expert)
    assert all(r.outcome == "correct" and r.total == pytest.approx(1.2) for r in own)
    assert all(r.outcome == "correct_sloppy" and r.total == pytest.approx(0.5) for r in strict)

    # A wrong report: the task's reward credits partial work, the strict one barely does.
    own, strict = scores(lambda: scripted.flawed_expert("drop_item"))
    assert all(r.outcome == "partly_correct" and r.total > 0.7 for r in own)
    assert all(r.outcome == "wrong" and -0.55 <= r.total <= -0.45 for r in strict)

    own, strict = scores(scripted.submit_at_once)
    assert all(r.total == pytest.approx(-0.55) for r in strict)

    own, strict = scores(scripted.silent_policy)
    assert {r.total for r in own} == {-1.2} and {r.total for r in strict} == {-1.0}


def test_tiers_never_overlap():
    bands = [(t.low, t.high) for t in STRICT_TIERS.tiers]
    assert all(lo_better > hi_worse for (lo_better, _), (_, hi_worse) in itertools.pairwise(bands))


def test_cli_selects_it_with_reward_option():
    runner = CliRunner()
    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    args = ["eval", "--task", "expense_report", "--policy", "expert", "--n", "6"]
    result = runner.invoke(app, [*args, "--reward", "expense_report_strict"], env=env)
    assert result.exit_code == 0, result.output
    assert "1.0000 ± 0.0000" in result.output and "clean: 6" in result.output
    check = runner.invoke(
        app, ["reward", "check", "--task", "expense_report", "--reward", "expense_report_strict"]
    )
    assert check.exit_code == 0, check.output
    assert "ok: reward order holds" in check.output
