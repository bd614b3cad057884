"""tau2_telecom: the customer acts on their own phone through tau2's user tools.

The user's tool calls run in tau2's environment (the phone's state changes, tau2's
evaluator replays them) and stay on the user's side: the policy never sees them or their
results, nor the scenario, the ground truth or a task id that spells out the faults. The
scripted user does the ground truth's phone steps when the agent names them; the simulated
user (tau2's UserSimulator, here on a loopback server) gets the phone's tools, as in tau2.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentrft_tau2 import expert as experts
from agentrft_tau2.environment import MAX_USER_TOOL_MESSAGES
from agentrft_tau2.suite import (
    AssistantMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    domain_splits,
    domain_tasks,
)
from agentrft_tau2.task import TelecomTask
from agentrft_tau2.users import API_BASE_ENV, ARGS_ENV, MODEL_ENV, STOP, ScriptedUser

from agentrft import Message, ScriptedPolicy, Trajectory, call, run_episode, run_episodes
from agentrft.testing import FakeOpenAIServer

TASK = TelecomTask()


def first_task(pred: Any) -> str:
    """The first telecom validation task whose ground-truth actions satisfy `pred`."""
    tasks = domain_tasks("telecom")
    return next(i for i in TASK.task_ids("validation") if pred(experts.gold_actions(tasks[i])))


def row(task_id: str) -> str:
    return json.dumps({"domain": "telecom", "task_id": task_id})


async def play(prompt: str, policy: Any) -> tuple[Trajectory, Any]:
    """The episode and its environment (kept by a reward that delegates to the task's)."""
    envs = []

    async def reward(env: Any, traj: Trajectory) -> Any:
        envs.append(env)
        return await TASK.reward(env, traj)

    traj = await run_episode(TASK, prompt, policy, reward_fn=reward)
    return traj, envs[0]


def policy_view(traj: Trajectory) -> list[str]:
    """Everything the policy reads: every message but its own, and the tool schemas."""
    return [
        *(m.content or "" for m in traj.messages if m.role != "assistant"),
        json.dumps(traj.tools),
    ]


def user_side(env: Any) -> tuple[list[Any], list[ToolMessage]]:
    """The user's tool calls and the results the phone gave them."""
    hidden = [m for turn in env.turns for m in turn.hidden]
    calls = [c for m in hidden if not isinstance(m, ToolMessage) for c in m.tool_calls or []]
    return calls, [m for m in hidden if isinstance(m, ToolMessage)]


def test_the_policy_gets_the_agents_tools_and_the_telecom_policy() -> None:
    inst = TASK.parse(row(TASK.task_ids("validation")[0]))
    env = TASK.environment(inst)
    names = {t["function"]["name"] for t in env.tool_schemas()}
    user_tools = {t.name for t in env.env.get_user_tools()}
    assert {"get_customer_by_phone", "refuel_data", "enable_roaming"} <= names
    assert user_tools and not names & user_tools  # the phone's tools are the user's only
    # The tech support manual tells the agent what the user can do, by tool name.
    assert "toggle_airplane_mode" in TASK.system_prompt(inst)


def test_splits_are_taus_train_and_test() -> None:
    splits = domain_splits("telecom")
    assert TASK.task_ids("train") == splits["train"] and len(splits["train"]) == 74
    assert TASK.task_ids("validation") == TASK.task_ids("test") == splits["test"]
    assert len(splits["test"]) == 40


async def test_the_expert_reaches_the_ceiling_on_train_and_test() -> None:
    rows = [r["prompt"] for split in ("train", "test") for r in TASK.make_dataset(split, None, 0)]
    trajs = await run_episodes(TASK, rows, TASK.expert(), concurrency=8)
    assert len(trajs) == 114
    assert all(t.reward is not None and t.reward.outcome == "solved" for t in trajs)
    assert all(t.reward.components["tau2_reward"] == 1.0 for t in trajs)


async def test_the_users_phone_calls_change_the_phone_and_stay_hidden() -> None:
    task_id = first_task(lambda acts: sum(a.requestor == "user" for a in acts) >= 2)
    for policy in (experts.expert_policy(), experts.flawed_expert("skip_user_step")):
        traj, env = await play(row(task_id), policy)
        calls, results = user_side(env)
        assert calls and len(results) == len(calls)
        assert all(c.requestor == "user" for c in calls)
        view = policy_view(traj)
        for r in results:  # e.g. "Airplane Mode is now OFF.\nStatus Bar: ..."
            assert not any(r.content in text for text in view), r.content
        assert not any("Status Bar:" in text for text in view)
        # The policy's tool replies answer its own calls only.
        own = {c.id for m in traj.messages if m.role == "assistant" for c in m.tool_calls or []}
        assert {m.tool_call_id for m in traj.messages if m.role == "tool"} <= own
        assert not {c.id for c in calls} & {m.tool_call_id for m in traj.messages}


@pytest.mark.parametrize("mistake", [None, "skip_user_step", "wrong_argument", "never_answers"])
async def test_the_policy_sees_no_hidden_field(mistake: str | None) -> None:
    for task_id in [*TASK.task_ids("validation")[:3], first_task(lambda acts: len(acts) >= 4)]:
        policy = experts.flawed_expert(mistake) if mistake else experts.expert_policy()
        traj, env = await play(row(task_id), policy)
        hidden = TASK.hidden_values(TASK.parse(traj.prompt))
        assert task_id in hidden  # the id names the faults
        _calls, results = user_side(env)
        hidden += [r.content for r in results if len(r.content or "") >= 12]
        view = policy_view(traj)
        assert traj.turns and not [h[:60] for h in hidden if any(h in t for t in view)]


async def test_an_agent_cannot_use_the_phones_tools() -> None:
    task_id = first_task(lambda acts: acts[0].name == "toggle_airplane_mode")
    replies = iter([call("toggle_airplane_mode", "{}"), "Anything else?"])
    traj, env = await play(row(task_id), ScriptedPolicy(lambda m, t: next(replies)))
    assert traj.failure_kinds == ["unknown_tool"]
    assert traj.turns[0].tool_messages[0].content.startswith("Error:")
    assert env.env.user_tools.db.device.airplane_mode  # still on: the user did nothing
    assert traj.reward is not None and traj.reward.outcome == "wrong_state"


def test_the_scripted_user_does_the_named_steps_in_the_ground_truths_order() -> None:
    task_id = first_task(
        lambda acts: (
            [a.name for a in acts if a.requestor == "user"].count("grant_app_permission") == 2
        )
    )
    task = domain_tasks("telecom")[task_id]
    gold = [a for a in experts.gold_actions(task) if a.requestor == "user"]
    user = ScriptedUser("telecom", task)
    state = user.get_init_state()

    def say(text: str) -> Any:
        nonlocal state
        reply, state = user.generate_next_message(
            AssistantMessage(role="assistant", content=text), state
        )
        return reply

    assert "[case telecom/h" in say("Hi! How can I help you today?").content
    grants = [a.arguments for a in gold if a.name == "grant_app_permission"]
    # One mention, one step: the first pending grant, with the ground truth's arguments; a
    # tool the ground truth does not use (check_status_bar) is not run.
    for args in grants:
        reply = say("Please run grant_app_permission, then check_status_bar.")
        assert [(c.name, c.arguments, c.requestor) for c in reply.tool_calls] == [
            ("grant_app_permission", args, "user")
        ]
    assert user.pending == [a for a in gold if a.name != "grant_app_permission"]
    assert STOP in say("How is the weather?").content  # asks for nothing: the user is done


def _user_model(messages: list[Message], tools: Any) -> Any:
    # The user model sees the conversation with roles flipped: its own turns are "assistant",
    # the agent's "user", its phone's replies "tool".
    if messages[-1].role == "tool":
        return f"I switched airplane mode, thanks. {STOP}"
    if any(m.role == "assistant" for m in messages):
        return call("toggle_airplane_mode", "{}")
    return "Hi, my phone has no service."


async def test_the_simulated_user_gets_the_phone_and_the_policy_does_not_see_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    task_id = first_task(lambda acts: acts[0].name == "toggle_airplane_mode")
    scenario = domain_tasks("telecom")[task_id].user_scenario.instructions
    with FakeOpenAIServer(_user_model) as server:
        monkeypatch.setenv(MODEL_ENV, "openai/fake-user")
        monkeypatch.setenv(API_BASE_ENV, server.base_url)
        monkeypatch.setenv(ARGS_ENV, json.dumps({"api_key": "sk-test-not-a-secret"}))
        policy = ScriptedPolicy(lambda m, t: "Please toggle_airplane_mode on your phone.")
        traj, env = await play(row(task_id), policy)
        requests = server.chat_requests
    assert traj.stop_reason == "done"  # the user stopped after acting on the phone
    assert len(requests) == 3  # the opening, the tool call, the answer to its result
    assert "toggle_airplane_mode" in {t["function"]["name"] for t in requests[0].body["tools"]}
    assert (
        scenario.reason_for_call.strip().splitlines()[0]
        in requests[0].body["messages"][0]["content"]
    )
    calls, results = user_side(env)
    assert [c.name for c in calls] == ["toggle_airplane_mode"]
    assert not env.env.user_tools.db.device.airplane_mode  # the phone changed
    # The user read the phone's reply; the policy read neither the call nor the reply.
    assert requests[2].body["messages"][-1] | {"content": None} == {
        "role": "tool",
        "content": None,
        "tool_call_id": calls[0].id,
    }
    assert requests[2].body["messages"][-1]["content"] == results[0].content
    view = policy_view(traj)
    assert not any(results[0].content in t or "Status Bar:" in t for t in view)
    assert [m.role for m in traj.messages].count("tool") == 0
    assert "toggle_airplane_mode" in [a.name for a in experts.gold_actions(env.task)]
    assert traj.reward is not None and traj.reward.components["actions_matched"] > 0


class _PhoneAddict(ScriptedUser):
    """Toggles airplane mode forever and never writes to the agent."""

    def _next(self, message: Any) -> Any:
        if not self.opened:
            return super()._next(message)
        call_ = ToolCall(id="loop", name="toggle_airplane_mode", arguments={}, requestor="user")
        return UserMessage(role="user", content=None, tool_calls=[call_])


async def test_a_user_that_never_writes_back_ends_the_episode_with_a_reward() -> None:
    task_id = TASK.task_ids("validation")[0]

    class Task(TelecomTask):
        def environment(self, instance: Any) -> Any:
            env = super().environment(instance)
            env.user = _PhoneAddict("telecom", instance.task)
            return env

    traj = await run_episode(Task(), row(task_id), ScriptedPolicy(lambda m, t: "Hello?"))
    assert traj.stop_reason == "user_turn_error"
    assert f"more than {MAX_USER_TOOL_MESSAGES} tool-call messages" in traj.failures[-1].detail
    assert traj.reward is not None and traj.reward.outcome == "not_finished"
