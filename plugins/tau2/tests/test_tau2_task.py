"""The tau2 tasks: listing, rows from tau2's splits, the expert at the ceiling, the reward
order, bad rows and settings, and tool calls executed by tau2's own environment."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agentrft_tau2.suite import domain_splits, domain_tasks
from agentrft_tau2.task import AirlineTask, MockTask, RetailTask, playable
from agentrft_tau2.users import ARGS_ENV, MODEL_ENV, user_config_from_env

from agentrft import (
    ScriptedPolicy,
    TaskInputError,
    assert_reward_order,
    call,
    run_episode,
    run_episodes,
)

AGENTRFT = str(Path(sys.executable).with_name("agentrft"))


def test_agentrft_tasks_lists_the_three_domains() -> None:
    out = subprocess.run([AGENTRFT, "tasks"], capture_output=True, text=True, check=True).stdout
    for name in ("tau2_airline", "tau2_retail", "tau2_mock"):
        assert name in out


@pytest.mark.parametrize("task", [AirlineTask(), RetailTask()])
def test_rows_come_from_taus_own_splits(task) -> None:
    splits = domain_splits(task.domain)
    train = [json.loads(r["prompt"])["task_id"] for r in task.make_dataset("train", None, 0)]
    val = [json.loads(r["prompt"])["task_id"] for r in task.make_dataset("validation", None, 0)]
    assert train == splits["train"] and val == splits["test"]
    assert not set(train) & set(val)
    assert task.make_dataset("validation", 5, 3) == task.make_dataset("validation", 5, 3)
    assert len(task.make_dataset("train", 100, 0)) == 100  # train rows repeat
    with pytest.raises(TaskInputError, match="--n 20 or fewer"):
        AirlineTask().make_dataset("validation", 21, 0)
    with pytest.raises(TaskInputError, match="not one of"):
        task.make_dataset("dev", None, 0)


def test_mock_keeps_only_tasks_it_can_play() -> None:
    ids = MockTask().task_ids("validation")
    assert len(ids) == 7 and "update_task_with_message_history" not in ids
    assert not playable(domain_tasks("mock")["update_task_with_message_history"])


@pytest.mark.parametrize(
    "prompt, message",
    [
        ("not json", "rows are JSON like"),
        ('{"domain": "retail", "task_id": "0"}', "plays domain 'airline'"),
        ('{"domain": "airline", "task_id": "nope"}', "has no task 'nope'"),
    ],
)
def test_bad_rows_name_the_fix(prompt: str, message: str) -> None:
    with pytest.raises(TaskInputError, match=message):
        AirlineTask().parse(prompt)


def test_bad_user_args_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_ENV, "openai/user")
    monkeypatch.setenv(ARGS_ENV, "[1]")
    with pytest.raises(TaskInputError, match=ARGS_ENV):
        user_config_from_env()


async def test_a_bad_row_is_scored_not_raised() -> None:
    traj = await run_episode(AirlineTask(), "{}", AirlineTask().expert())
    assert traj.stop_reason == "bad_input" and traj.reward is not None
    assert traj.reward.outcome == "not_finished"


@pytest.mark.parametrize(
    "task, n",
    [(MockTask(), None), (AirlineTask(), 6), (RetailTask(), 6)],
    ids=["mock", "airline", "retail"],
)
async def test_the_expert_reaches_the_ceiling_on_validation(task, n) -> None:
    rows = [r["prompt"] for r in task.make_dataset("validation", n, 0)]
    trajs = await run_episodes(task, rows, task.expert(), concurrency=4)
    assert [t.reward.outcome for t in trajs] == ["solved"] * len(rows)
    assert all(t.reward.components["tau2_reward"] == 1.0 for t in trajs)
    assert all(t.stop_reason == "done" for t in trajs)


def test_reward_order_holds_on_real_episodes() -> None:
    task = MockTask()
    assert_reward_order(task)
    samples = list(task.reward_samples())
    tiers = {s.tier for s in samples if "landed" in s.label}
    assert tiers == {"solved", "info_missing", "wrong_state", "not_finished"}
    # Every played sample landed in the tier it was written to reach.
    for s in samples:
        if "landed" in s.label:
            assert f"landed in {s.tier}" in s.label, s.label


async def test_tools_are_taus_schemas_run_by_taus_environment() -> None:
    row = json.dumps({"domain": "airline", "task_id": "0"})
    replies = [
        call("get_user_details", json.dumps({"user_id": "mia_li_3668"})),
        call("get_user_details", json.dumps({"user_id": "nobody"})),
        call("book_a_spaceship", "{}"),
        call("get_user_details", "{not json"),
        "Thanks, bye.",
    ]
    left = iter(replies)
    traj = await run_episode(AirlineTask(), row, ScriptedPolicy(lambda m, t: next(left)))
    names = {t["function"]["name"] for t in traj.tools}
    assert {"get_user_details", "book_reservation", "cancel_reservation"} <= names
    tool_replies = [
        m.content or "" for t in traj.turns for m in t.tool_messages if m.role == "tool"
    ]
    assert json.loads(tool_replies[0])["user_id"] == "mia_li_3668"
    assert tool_replies[1].startswith("Error:") and "nobody" in tool_replies[1]
    assert tool_replies[2].startswith("Error:")
    assert "must be a JSON object" in tool_replies[3]
    assert traj.failure_kinds == ["tool_error", "unknown_tool", "malformed_tool_json"]
    assert traj.stop_reason == "done"  # the scripted user stopped after the text reply
