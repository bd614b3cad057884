"""The policy never sees the scenario the user plays, the ground-truth actions or the NL
assertions: not in the system prompt, a user message, a tool reply or a tool schema. The
simulated user (tau2's UserSimulator through litellm, here on a loopback OpenAI-compatible
server) does see the scenario: that is checked too, so the scan can tell the two apart."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentrft_tau2 import expert as experts
from agentrft_tau2.suite import domain_tasks
from agentrft_tau2.task import AirlineTask, RetailTask
from agentrft_tau2.users import API_BASE_ENV, ARGS_ENV, MODEL_ENV

from agentrft import Message, ScriptedPolicy, Trajectory, run_episode
from agentrft.testing import FakeOpenAIServer


def policy_view(traj: Trajectory) -> list[str]:
    """Everything the policy reads: every message but its own, and the tool schemas."""
    seen = [m.content or "" for m in traj.messages if m.role != "assistant"]
    return [*seen, json.dumps(traj.tools)]


def leaks(task: Any, traj: Trajectory) -> list[str]:
    hidden = task.hidden_values(task.parse(traj.prompt))
    assert hidden, "nothing to look for"
    return [h[:60] for h in hidden if any(h in text for text in policy_view(traj))]


@pytest.mark.parametrize("task", [AirlineTask(), RetailTask()], ids=["airline", "retail"])
async def test_scripted_episodes_show_the_policy_no_hidden_field(task: Any) -> None:
    for task_id in task.task_ids("validation")[:2]:
        row = json.dumps({"domain": task.domain, "task_id": task_id})
        for policy in (experts.expert_policy(), experts.flawed_expert("wrong_argument")):
            traj = await run_episode(task, row, policy)
            assert traj.turns and not leaks(task, traj), leaks(task, traj)


def test_the_hidden_values_are_the_scenario_and_the_answer() -> None:
    task = AirlineTask()
    task_id = next(i for i, t in domain_tasks("airline").items() if t.evaluation_criteria.actions)
    inst = task.parse(json.dumps({"domain": "airline", "task_id": task_id}))
    hidden = task.hidden_values(inst)
    ins = inst.task.user_scenario.instructions
    assert ins.reason_for_call in hidden and ins.task_instructions in hidden
    assert any('"name": ' in h for h in hidden)  # the ground-truth actions, serialized


def _user_model(messages: list[Message], tools: Any) -> str:
    # The user model sees the conversation with roles flipped: its own turns are "assistant".
    if any(m.role == "assistant" for m in messages):
        return "That is all, thank you. ###STOP###"
    return "Hi, I would like some help with my reservation."


async def test_the_simulated_user_sees_the_scenario_and_the_policy_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    task = AirlineTask()
    task_id = task.task_ids("validation")[0]
    scenario = domain_tasks("airline")[task_id].user_scenario.instructions
    with FakeOpenAIServer(_user_model) as server:
        monkeypatch.setenv(MODEL_ENV, "openai/fake-user")
        monkeypatch.setenv(API_BASE_ENV, server.base_url)
        monkeypatch.setenv(ARGS_ENV, json.dumps({"api_key": "sk-test-not-a-secret"}))
        replies = iter(
            [experts_call("get_user_details", user_id="mia_li_3668"), "How can I help further?"]
        )
        traj = await run_episode(
            task,
            json.dumps({"domain": "airline", "task_id": task_id}),
            ScriptedPolicy(lambda m, t: next(replies)),
        )
        requests = server.chat_requests
    assert traj.stop_reason == "done"  # the simulated user said STOP
    opening = next(m for m in traj.messages if m.role == "user")
    assert opening.content == "Hi, I would like some help with my reservation."
    # Two user-model calls: the opening (answering the greeting) and the answer to the
    # policy's text; the tool call in between never reached the user.
    assert len(requests) == 2
    user_system = requests[0].body["messages"][0]["content"]
    # tau2 lays the scenario out line by line; its first line of each field is there verbatim.
    for text in (scenario.reason_for_call, scenario.task_instructions):
        assert text.strip().splitlines()[0] in user_system
    assert "get_user_details" not in json.dumps(requests[1].body["messages"])
    assert not leaks(task, traj)


def experts_call(name: str, **arguments: Any) -> Any:
    from agentrft import call

    return call(name, json.dumps(arguments))


async def test_a_failing_user_model_ends_the_episode_with_a_reward_and_no_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentrft.testing import http_error

    task = AirlineTask()
    with FakeOpenAIServer(
        lambda m, t: http_error(400, "bad request from the user model")
    ) as server:
        monkeypatch.setenv(MODEL_ENV, "openai/fake-user")
        monkeypatch.setenv(API_BASE_ENV, server.base_url)
        monkeypatch.setenv(ARGS_ENV, json.dumps({"api_key": "sk-secret-123", "num_retries": 0}))
        row = json.dumps({"domain": "airline", "task_id": task.task_ids("validation")[0]})
        traj = await run_episode(task, row, task.expert())
    assert traj.stop_reason == "user_turn_error"
    assert traj.turns == []  # the opening failed: the policy was never called
    assert traj.reward is not None and traj.reward.outcome == "not_finished"
    assert "sk-secret-123" not in traj.model_dump_json()
