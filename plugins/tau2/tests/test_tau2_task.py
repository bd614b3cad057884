"""The tau2 tasks: listing, rows from tau2's splits, the expert at the ceiling, the reward
order, bad rows and settings, tool calls executed by tau2's own environment, and the mock
tasks that start from a pre-written conversation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agentrft_tau2 import expert as experts
from agentrft_tau2.suite import domain_splits, domain_tasks
from agentrft_tau2.task import AirlineTask, MockTask, RetailTask, TelecomTask, playable
from agentrft_tau2.users import ARGS_ENV, MODEL_ENV, user_config_from_env
from tau2_testing import native_run

from agentrft import (
    ScriptedPolicy,
    TaskInputError,
    assert_reward_order,
    call,
    run_episode,
    run_episodes,
)

AGENTRFT = str(Path(sys.executable).with_name("agentrft"))


def test_agentrft_tasks_lists_the_four_domains() -> None:
    out = subprocess.run([AGENTRFT, "tasks"], capture_output=True, text=True, check=True).stdout
    for name in ("tau2_airline", "tau2_retail", "tau2_telecom", "tau2_mock"):
        assert name in out


@pytest.mark.parametrize("task", [AirlineTask(), RetailTask(), TelecomTask()])
def test_rows_come_from_taus_own_splits(task) -> None:
    splits = domain_splits(task.domain)
    train = [json.loads(r["prompt"])["task_id"] for r in task.make_dataset("train", None, 0)]
    val = [json.loads(r["prompt"])["task_id"] for r in task.make_dataset("validation", None, 0)]
    assert train == splits["train"] and val == splits["test"]
    assert not set(train) & set(val)
    every = [json.loads(r["prompt"])["task_id"] for r in task.make_dataset("all", None, 0)]
    assert every == splits["base"] and sorted(every) == sorted(train + val)
    assert task.make_dataset("validation", 5, 3) == task.make_dataset("validation", 5, 3)
    assert len(task.make_dataset("train", 100, 0)) == 100  # train rows repeat
    with pytest.raises(TaskInputError, match="--n 20 or fewer"):
        AirlineTask().make_dataset("validation", 21, 0)
    with pytest.raises(TaskInputError, match="not one of"):
        task.make_dataset("dev", None, 0)


def test_mock_plays_every_task_and_a_history_opens_the_conversation() -> None:
    ids = MockTask().task_ids("validation")
    assert ids == domain_splits("mock")["base"] and len(ids) == 9
    assert all(playable(t) for t in domain_tasks("mock").values())
    task = MockTask()
    inst = task.parse(json.dumps({"domain": "mock", "task_id": "update_task_with_message_history"}))
    roles = [m.role for m in task.initial_messages(inst)]
    # tau2's orchestrator starts from the history (no greeting): user, call, reply, text.
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert task.initial_messages(inst)[2].tool_calls[0].name == "create_task"


async def test_a_history_task_scores_as_tau2_scores_it() -> None:
    """The pre-written conversation's calls are in tau2's transcript (its env replays them:
    task_2 exists) and the policy's reply continues it."""
    for task_id, solve in (
        ("update_task_with_message_history", experts.expert_policy()),
        # Its ground truth lists no action (only an env assertion): a policy of our own.
        (
            "update_task_with_history_and_env_assertions",
            ScriptedPolicy(
                lambda m, t: (
                    "Done, task_2 is completed."
                    if m[-1].role == "tool"
                    else call("update_task_status", '{"task_id": "task_2", "status": "completed"}')
                )
            ),
        ),
    ):
        row = json.dumps({"domain": "mock", "task_id": task_id})
        traj = await run_episode(MockTask(), row, solve)
        info, _ = native_run("mock", task_id, traj)
        assert traj.reward is not None and traj.reward.outcome == "solved", traj.reward
        assert traj.reward.components["tau2_reward"] == info.reward == 1.0
        # Without the policy's write, the history alone does not solve it.
        traj = await run_episode(MockTask(), row, ScriptedPolicy(lambda m, t: "Anything else?"))
        info, _ = native_run("mock", task_id, traj)
        assert traj.reward is not None and traj.reward.outcome != "solved"
        assert traj.reward.components["tau2_reward"] == info.reward == 0.0


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
    [(MockTask(), None), (AirlineTask(), 6), (RetailTask(), 6), (TelecomTask(), None)],
    ids=["mock", "airline", "retail", "telecom"],
)
async def test_the_expert_reaches_the_ceiling_on_validation(task, n) -> None:
    tasks = domain_tasks(task.domain)
    rows = [
        r["prompt"]
        for r in task.make_dataset("validation", n, 0)
        if experts.replayable(tasks[json.loads(r["prompt"])["task_id"]])
    ]
    # Only mock's update_task_with_history_and_env_assertions is not replayable.
    assert len(rows) == {"mock": 8}.get(task.domain, n or len(task.task_ids("validation")))
    trajs = await run_episodes(task, rows, task.expert(), concurrency=4)
    assert [t.reward.outcome for t in trajs] == ["solved"] * len(rows)
    assert all(t.reward.components["tau2_reward"] == 1.0 for t in trajs)
    assert all(t.stop_reason == "done" for t in trajs)


@pytest.mark.parametrize(
    "task", [MockTask(), TelecomTask(), RetailTask()], ids=["mock", "telecom", "retail"]
)
def test_reward_order_holds_on_real_episodes(task) -> None:
    # retail: some ground-truth writes are refused by tau2 (the flawed experts leave those be)
    assert_reward_order(task)
    samples = list(task.reward_samples())
    tiers = {s.tier for s in samples if "landed" in s.label}
    # telecom tasks have no communicate_info, so nothing can land in info_missing.
    played = {"solved", "wrong_state", "not_finished"}
    assert tiers == (played if task.domain == "telecom" else played | {"info_missing"})
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
