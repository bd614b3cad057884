"""The outside oracle for the tau2 tests: an episode played again in tau2 alone.

tau2's own Orchestrator runs the conversation with tau2's environment, routing and sync: the
agent is the policy's replies from the agentrft trajectory, played back in order; the user
is a fresh scripted user (a tau2 BaseUser, so it answers tau2's messages exactly as it
answered ours, including its own tool calls on telecom's phone). tau2's evaluate_simulation
then scores tau2's own transcript. None of the plugin's environment or conversion is used.
"""

from __future__ import annotations

import json
from typing import Any

from agentrft_tau2.suite import domain_tasks, new_environment
from agentrft_tau2.users import ScriptedUser
from tau2.agent.base import LocalAgent
from tau2.data_model.message import AssistantMessage, ToolCall
from tau2.data_model.simulation import RewardInfo, SimulationRun, TerminationReason
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.orchestrator.orchestrator import Orchestrator, Role
from tau2.utils.utils import get_now

from agentrft import Trajectory


class PlaybackAgent(LocalAgent):
    """tau2 agent that sends the policy's replies of an agentrft episode, in order."""

    def __init__(self, traj: Trajectory) -> None:
        self.replies: list[AssistantMessage] = []
        for turn in traj.turns:
            a = turn.assistant
            calls = [
                ToolCall(id=c.id, name=c.name, arguments=json.loads(c.arguments))
                for c in a.tool_calls or []
            ]
            self.replies.append(
                AssistantMessage(
                    role="assistant", content=a.content or None, tool_calls=calls or None
                )
            )
        self.sent = 0

    def get_init_state(self, message_history: Any = None) -> None:
        return None

    def stop(self, message: Any = None, state: Any = None) -> None:
        return None

    def generate_next_message(self, message: Any, state: Any) -> tuple[AssistantMessage, None]:
        reply = self.replies[self.sent].model_copy(deep=True)
        reply.timestamp = get_now()  # tau2 orders its transcript by these
        self.sent += 1
        return reply, state


def native_run(domain: str, task_id: str, traj: Trajectory) -> tuple[RewardInfo, SimulationRun]:
    """tau2's run of the same episode and tau2's score of it. The run stops where the
    policy's replies run out (the agentrft episode was cut off there: tau2's MAX_STEPS);
    tau2's error cap (10 tool errors) is lifted, as agentrft has none."""
    task = domain_tasks(domain)[task_id]
    agent = PlaybackAgent(traj)
    orch = Orchestrator(
        domain, agent, ScriptedUser(domain, task), new_environment(domain), task,
        max_steps=400, max_errors=10_000,
    )  # fmt: skip
    orch.initialize()
    while not orch.done:
        if orch.to_role == Role.AGENT and agent.sent == len(agent.replies):
            break  # the episode ended here in agentrft without the user stopping
        orch.step()
    termination = orch.termination_reason or TerminationReason.MAX_STEPS
    run = SimulationRun(
        id="native", task_id=task_id, start_time="", end_time="", duration=0.0,
        termination_reason=termination, messages=orch.get_trajectory(),
    )  # fmt: skip
    info = evaluate_simulation(run, task, EvaluationType.ALL, solo_mode=False, domain=domain)
    assert agent.sent == len(agent.replies), "tau2's run ended before the policy's replies did"
    return info, run
