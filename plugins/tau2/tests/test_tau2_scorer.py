"""Our reward against tau2's own evaluator on the same conversations.

Each episode is played through agentrft (our environment, our conversion, our reward); then
the calls the policy made are replayed natively through a fresh tau2 environment (tau2's
own tool replies, tau2's message types, built here without the plugin's conversion) and
scored by tau2's evaluate_simulation. The two rewards must be equal, and our tier must be
`solved` exactly when tau2 gives 1.
"""

from __future__ import annotations

import json

import pytest
from agentrft_tau2 import expert as experts
from agentrft_tau2.suite import GREETING, domain_tasks, new_environment
from agentrft_tau2.task import AirlineTask, MockTask, RetailTask
from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

from agentrft import EpisodeLimits, Trajectory, run_episode

TASKS = {"airline": AirlineTask(), "retail": RetailTask(), "mock": MockTask()}


def native_tau2_reward(
    domain: str, task_id: str, traj: Trajectory, termination: TerminationReason
) -> float:
    """tau2's score of the policy's replies, replayed in tau2 alone."""
    task = domain_tasks(domain)[task_id]
    env = new_environment(domain)
    if task.initial_state is not None:  # as tau2's orchestrator starts the episode
        env.set_state(
            initialization_data=task.initial_state.initialization_data,
            initialization_actions=task.initial_state.initialization_actions,
            message_history=[],
        )
    opening = next(m.content for m in traj.messages if m.role == "user")
    msgs: list = [
        AssistantMessage(role="assistant", content=GREETING),
        UserMessage(role="user", content=opening),
    ]
    for turn in traj.turns:
        a = turn.assistant
        if a.tool_calls:
            calls = [
                ToolCall(id=c.id, name=c.name, arguments=json.loads(c.arguments))
                for c in a.tool_calls
            ]
            msgs.append(
                AssistantMessage(role="assistant", content=a.content or None, tool_calls=calls)
            )
            msgs += [env.get_response(c) for c in calls]
        else:
            msgs.append(AssistantMessage(role="assistant", content=a.content))
    if termination == TerminationReason.USER_STOP:
        msgs.append(UserMessage(role="user", content="Thank you, that is all. ###STOP###"))
    run = SimulationRun(
        id="native", task_id=task_id, start_time="", end_time="", duration=0.0,
        termination_reason=termination, messages=msgs,
    )  # fmt: skip
    info = evaluate_simulation(run, task, EvaluationType.ALL, solo_mode=False, domain=domain)
    return float(info.reward)


CASES = [
    (domain, mistake)
    for domain in ("airline", "retail", "mock")
    for mistake in (None, "drop_last_write", "wrong_argument", "no_info")
]


@pytest.mark.parametrize("domain, mistake", CASES, ids=[f"{d}-{m or 'expert'}" for d, m in CASES])
async def test_our_reward_equals_taus_evaluator(domain: str, mistake: str | None) -> None:
    task = TASKS[domain]
    tasks = domain_tasks(domain)
    ids = [i for i in task.task_ids("validation") if experts.applies(mistake, domain, tasks[i])][:2]
    assert ids, f"no {domain} validation task for {mistake}"
    outcomes = []
    for task_id in ids:
        if domain == "mock" and mistake in ("drop_last_write", "wrong_argument"):
            # mock's env assertions raise on a task never created; tau2 cannot score those
            crit = tasks[task_id].evaluation_criteria
            if crit is not None and crit.env_assertions:
                continue
        policy = experts.flawed_expert(mistake) if mistake else experts.expert_policy()
        traj = await run_episode(task, json.dumps({"domain": domain, "task_id": task_id}), policy)
        assert traj.reward is not None and traj.stop_reason == "done"
        theirs = native_tau2_reward(domain, task_id, traj, TerminationReason.USER_STOP)
        assert traj.reward.components["tau2_reward"] == theirs, (task_id, traj.reward)
        assert (traj.reward.outcome == "solved") == (theirs == 1.0)
        outcomes.append(traj.reward.outcome)
    # The mistake costs something in at least one task (tau2 may forgive it in another: a
    # wrong argument tau2's action check does not compare, say; the rewards still agree).
    expected = {None: "solved", "no_info": "info_missing"}.get(mistake, "wrong_state")
    assert expected in outcomes, outcomes
    if mistake is None:
        assert set(outcomes) == {"solved"}


async def test_an_unfinished_conversation_is_zero_for_both() -> None:
    task = AirlineTask()
    task_id = task.task_ids("validation")[0]
    traj = await run_episode(
        task,
        json.dumps({"domain": "airline", "task_id": task_id}),
        experts.expert_policy(),
        limits=EpisodeLimits(max_turns=1),
    )
    assert traj.stop_reason == "max_turns"
    theirs = native_tau2_reward("airline", task_id, traj, TerminationReason.MAX_STEPS)
    assert traj.reward is not None and traj.reward.components["tau2_reward"] == theirs == 0.0
    assert traj.reward.outcome == "not_finished"
