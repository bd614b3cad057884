"""The judged variant: the explanation message scored by a rubric judge as shaping inside
the programmatic tier; the default task is untouched."""

import json

import pytest
from agentrft_expense_report import ExpenseReportTask
from agentrft_expense_report.expert import expert_step
from agentrft_expense_report.judged import (
    EXPLANATION_CRITERIA,
    JudgedExpenseReportTask,
    judged_task,
)

from agentrft import ScriptedJudge, ScriptedPolicy, assert_reward_order, call, run_episode, run_sync
from agentrft.reward_check import RewardCheckError, check_task_reward
from agentrft.testing import FakeOpenAIServer

PROMPT = json.dumps({"id": "judged", "seed": 1001, "difficulty": "easy"})


def explaining_expert(message: str) -> ScriptedPolicy:
    """The expert's calls, with write_explanation just before submit_report."""

    def script(messages, tools):
        move = expert_step(messages, tools)
        wrote = any(tc.name == "write_explanation" for m in messages for tc in (m.tool_calls or []))
        if getattr(move, "name", "") == "submit_report" and not wrote:
            return call("write_explanation", {"message": message})
        return move

    return ScriptedPolicy(script)


def test_default_task_has_no_explanation_tool():
    env = ExpenseReportTask().environment(ExpenseReportTask().parse(PROMPT))
    assert "write_explanation" not in env.tools
    assert "write_explanation" not in ExpenseReportTask().user_prompt(
        ExpenseReportTask().parse(PROMPT)
    )


def test_reward_check_passes_with_a_scripted_judge():
    report = assert_reward_order(JudgedExpenseReportTask(ScriptedJudge(0.5)))
    assert any("message judged 1" in s.label for s in report.samples)


def test_reward_check_catches_an_inverted_judge_weight():
    with pytest.raises(RewardCheckError, match="inverts the judge"):
        check_task_reward(JudgedExpenseReportTask(ScriptedJudge(0.5), judge_weight=-0.5))


def test_judged_episode_against_the_fake_judge_server():
    seen = []

    def judge_server(messages, tools):
        seen.append(messages[-1].content)
        return {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": '{"score": 1.0, "rationale": "clear"}',
                    }
                }
            ],
            "usage": {"prompt_tokens": 300, "completion_tokens": 12},
        }

    with FakeOpenAIServer(judge_server) as server:
        task = judged_task(model="judge", base_url=server.base_url, input_usd_per_1m=1.0)
        good = run_sync(run_episode(task, PROMPT, explaining_expert("R01 was rejected: ...")))
        plain = run_sync(
            run_episode(
                JudgedExpenseReportTask(ScriptedJudge(0.0)),
                PROMPT,
                explaining_expert("R01 was rejected: ..."),
            )
        )
    assert good.reward is not None and plain.reward is not None
    assert good.reward.outcome == plain.reward.outcome == "correct"
    assert good.reward.total > plain.reward.total
    assert good.reward.components["judge_tokens"] == 312.0
    assert good.reward.components["judge_cost_usd"] == pytest.approx(300 / 1e6)
    # The judge saw the message and the hidden decisions; the policy saw neither the
    # rubric nor the decisions list.
    assert "R01 was rejected" in seen[0] and "Correct decisions" in seen[0]
    policy_text = json.dumps([m.to_openai() for m in good.messages])
    assert EXPLANATION_CRITERIA.splitlines()[0] not in policy_text
    assert "Correct decisions" not in policy_text


# -- the group-relative judge and `--task expense_report_judged` ------------------------


def test_group_judge_ranks_a_trips_messages_together_inside_their_tiers():
    """Three correct reports with messages of growing quality and one never-filed report,
    played as one group: one request ranks the three messages; the unfiled one is not shown
    to the judge, and nothing is judged alone."""
    from agentrft import run_grouped_episodes
    from agentrft.testing import group_judge

    messages = ["Hi.", "R01 was rejected.", "R01 was rejected: no receipt. R02 reimbursed."]
    quality = {m: k / 2 for k, m in enumerate(messages)}

    def score(view: str) -> float:
        return next(q for m, q in quality.items() if view.endswith(f"The message:\n{m}"))

    players = [explaining_expert(m) for m in messages]
    episode = {"k": -1}

    def script(history, tools):
        if not any(m.role == "assistant" for m in history):  # a new episode begins
            episode["k"] += 1
        k = episode["k"]
        return "I give up." if k == 3 else players[k].fn(history, tools)

    with FakeOpenAIServer(group_judge(score, 400, 30)) as server:
        task = judged_task(group=True, model="judge", base_url=server.base_url)
        played = run_sync(
            run_grouped_episodes(
                task, [PROMPT] * 4, ScriptedPolicy(script), group_size=4, concurrency=1
            )
        )
        assert len(server.chat_requests) == 1
        shown = server.chat_requests[0].body["messages"][-1]["content"]
    results = [t.reward for t in played]
    assert "3 attempts to compare" in shown and all(m in shown for m in messages)
    assert [r.outcome for r in results[:3]] == ["correct"] * 3
    assert results[0].total < results[1].total < results[2].total
    assert results[3].outcome not in ("correct", "partly_correct")
    assert "judge_score" not in results[3].components
    assert results[0].components["judge_tokens"] == 430.0  # the one request, counted once
    assert sum(r.components.get("judge_tokens", 0.0) for r in results) == 430.0


def test_without_a_group_judge_each_episode_is_judged_alone():
    task = JudgedExpenseReportTask(ScriptedJudge(0.5))
    assert run_sync(task.score_group([])) is None


def test_expense_report_judged_is_registered_and_needs_a_judge_model(monkeypatch):
    from agentrft_expense_report.judged import ExpenseReportJudgedTask, judge_options_from_env

    from agentrft import TaskInputError
    from agentrft.plugins import load_plugins

    assert load_plugins().task_classes()["expense_report_judged"] is ExpenseReportJudgedTask
    monkeypatch.delenv("AGENTRFT_JUDGE_MODEL", raising=False)
    with pytest.raises(TaskInputError, match="set AGENTRFT_JUDGE_MODEL"):
        ExpenseReportJudgedTask()
    with pytest.raises(TaskInputError, match="AGENTRFT_JUDGE_INPUT_USD_PER_1M must be a number"):
        judge_options_from_env(
            {"AGENTRFT_JUDGE_MODEL": "m", "AGENTRFT_JUDGE_INPUT_USD_PER_1M": "cheap"}
        )
    with pytest.raises(TaskInputError, match="AGENTRFT_JUDGE_MODE"):
        judge_options_from_env({"AGENTRFT_JUDGE_MODEL": "m", "AGENTRFT_JUDGE_MODE": "ruler"})
    options = judge_options_from_env(
        {
            "AGENTRFT_JUDGE_MODEL": "litellm:openai/j",
            "AGENTRFT_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
            "AGENTRFT_JUDGE_OUTPUT_USD_PER_1M": "0.6",
        }
    )
    assert options == {
        "model": "litellm:openai/j",
        "base_url": "http://127.0.0.1:9/v1",
        "group": True,
        "output_usd_per_1m": 0.6,
    }


def _cli(*args: str, env: dict[str, str]):
    import os
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).with_name("agentrft")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTRFT_JUDGE_")}
    return subprocess.run(
        [str(exe), *args], env={**clean, **env}, capture_output=True, text=True, timeout=120
    )


def test_cli_without_a_judge_model_is_one_clear_error():
    out = _cli("play", "--task", "expense_report_judged", "--policy", "expert", env={})
    assert out.returncode == 1
    assert "set AGENTRFT_JUDGE_MODEL" in out.stderr and "Traceback" not in out.stderr


def test_cli_eval_of_the_judged_task_reports_judge_tokens_and_cost(tmp_path):
    from agentrft.testing import group_judge

    report = tmp_path / "report.json"
    with FakeOpenAIServer(group_judge(lambda view: 0.75, 500, 40)) as server:
        out = _cli(
            "eval", "--task", "expense_report_judged", "--policy", "expert", "--n", "2",
            "--samples", "2", "--report", str(report),
            env={
                "AGENTRFT_JUDGE_MODEL": "judge",
                "AGENTRFT_JUDGE_BASE_URL": server.base_url,
                "AGENTRFT_JUDGE_API_KEY": "sk-not-printed-123456789",
                "AGENTRFT_JUDGE_INPUT_USD_PER_1M": "1",
            },
        )  # fmt: skip
        requests = len(server.chat_requests)
    assert out.returncode == 0, out.stderr
    judge = json.loads(report.read_text())["reports"][0]["judge"]
    assert requests == 2  # one per row: its two samples judged together
    assert judge["episodes"] == 4 and judge["prompt_tokens"] == 2 * 500
    assert judge["cost_usd"] == pytest.approx(2 * 500 / 1e6)
    assert "judge" in out.stdout and "sk-not-printed" not in out.stdout + out.stderr
