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
