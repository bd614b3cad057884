"""The tau2 tasks (one per domain): rows from tau2's split_tasks.json, the domain policy as
the system prompt, tau2's environment and user, and tau2's own evaluator as the outcome."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from agentrft import (
    EpisodeLimits,
    Message,
    Policy,
    RewardResult,
    RewardSample,
    Task,
    TaskInputError,
    Tier,
    TieredReward,
    Trajectory,
    run_episode,
    run_sync,
    seeded_sample,
)
from agentrft import ToolCall as AgentToolCall
from agentrft.messages import system
from agentrft_tau2 import expert as experts
from agentrft_tau2.environment import Tau2Env, UserTurn, parse_arguments
from agentrft_tau2.suite import (
    AGENT_INSTRUCTION,
    AGENT_SYSTEM_PROMPT,
    AssistantMessage,
    RewardInfo,
    Tau2Task,
    TerminationReason,
    ToolCall,
    ToolMessage,
    UserMessage,
    conversation_prefix,
    domain_splits,
    domain_tasks,
    new_environment,
    tau2_reward,
)
from agentrft_tau2.users import UserConfig, case_token, user_config_from_env

#: Outcomes first. tau2's reward is binary (1 only when every check of the task's
#: reward_basis passes); the tiers below it say how far a failed conversation got, with
#: bounded shaping from tau2's own per-check results.
TIERS = TieredReward(
    [
        # tau2 reward 1.0: DB state (and env assertions / actions) and every communicate_info.
        Tier(name="solved", base=1.0, solved=True),
        # The database ended right but some required information was never told the user;
        # shaping: the fraction of communicate_info told.
        Tier(name="info_missing", base=0.3, shaping_weight=0.1),
        # The end state is wrong (DB / env assertion / action check failed); shaping: the
        # fraction of the ground-truth actions matched (tau2's action checks).
        Tier(name="wrong_state", base=-0.3, shaping_weight=0.2),
        # The conversation did not end with the user stopping (max turns, a fault): tau2
        # scores it 0 without looking; shaping as in wrong_state.
        Tier(name="not_finished", base=-0.8, shaping_weight=0.1),
    ]
)


@dataclass(frozen=True)
class Instance:
    """One tau2 task of one domain (the task holds the scenario and the ground truth)."""

    domain: str
    task: Tau2Task
    user: UserConfig

    @property
    def id(self) -> str:
        return f"{self.domain}/{self.task.id}"


def playable(task: Tau2Task) -> bool:
    """Tasks this plugin plays: no NL assertion in the reward basis (tau2 would need an LLM
    judge; no offered task has one), and a pre-written conversation
    (initial_state.message_history, two mock tasks) only when it ends with the agent writing
    to the user, whom the user then answers, and holds no user tool calls (the policy would
    have to read them)."""
    init = task.initial_state
    if init is not None and init.message_history:
        history = init.message_history
        last = history[-1]
        if not isinstance(last, AssistantMessage) or last.is_tool_call():
            return False
        if any(
            (isinstance(m, UserMessage) and m.is_tool_call())
            or (isinstance(m, ToolMessage) and m.requestor != "assistant")
            for m in history
        ):
            return False
    crit = task.evaluation_criteria
    return crit is None or "NL_ASSERTION" not in {str(b.value) for b in crit.reward_basis}


#: agentrft split -> tau2 split. tau2 ships train and test only: validation is its test
#: split too (so a validation number is a test number; say so when reporting). `all` is
#: tau2's `base`, the whole domain: the task set τ²-bench's leaderboard scores.
SPLITS = {"train": "train", "validation": "test", "test": "test", "all": "base"}


class Tau2TaskBase(Task[Instance, Tau2Env]):
    """A tau2-bench domain. Rows: {"prompt": "{\"domain\": \"airline\", \"task_id\": \"12\"}"}."""

    domain: ClassVar[str] = ""
    tiers: ClassVar[TieredReward] = TIERS
    # tau2's orchestrator allows 200 steps (messages); 30 policy calls hold every expert
    # conversation and a real model's, with 50 tool calls.
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=30, max_tool_calls=50, timeout_s=900)

    def parse(self, prompt: str) -> Instance:
        try:
            row = json.loads(prompt)
            domain, task_id = row["domain"], str(row["task_id"])
        except (ValueError, TypeError, KeyError):
            raise TaskInputError(
                f'{self.name} rows are JSON like {{"domain": "{self.domain}", "task_id": "0"}} '
                f"(agentrft dataset make --task {self.name}); got {prompt[:80]!r}"
            ) from None
        if domain != self.domain:
            raise TaskInputError(
                f"{self.name} plays domain {self.domain!r}, the row names {domain!r}"
            )
        tasks = domain_tasks(domain)
        if task_id not in tasks:
            raise TaskInputError(
                f"tau2 domain {domain!r} has no task {task_id!r} ({len(tasks)} tasks)"
            )
        task = tasks[task_id]
        if not playable(task):
            raise TaskInputError(
                f"tau2 task {domain}/{task_id} is not playable here (see playable())"
            )
        return Instance(domain, task, user_config_from_env())

    def environment(self, instance: Instance) -> Tau2Env:
        return Tau2Env(instance.domain, instance.task, instance.user)

    def system_prompt(self, instance: Instance) -> str:
        return agent_system_prompt(instance.domain)

    def initial_messages(self, instance: Instance) -> list[Message]:
        # tau2's orchestrator: the agent greets (or the task's pre-written conversation),
        # the user answers (Tau2Env.opening).
        prefix = conversation_prefix(instance.task)
        return [system(self.system_prompt(instance)), *from_tau2_messages(prefix)]

    def instance_id(self, instance: Instance) -> str:
        return instance.id

    def hidden_values(self, instance: Instance) -> list[str]:
        """The scenario the user plays (each sentence-long field), the ground-truth actions,
        the NL assertions, the ticket and the task's description, and a task id that spells
        out the faults (telecom's): never in what the policy reads."""
        out: list[str] = []
        if case_token(instance.task.id) != instance.task.id:
            out.append(instance.task.id)
        desc = instance.task.description
        if desc is not None:
            out += [v for v in (desc.purpose, desc.relevant_policies, desc.notes) if v]
        sc = instance.task.user_scenario
        ins = sc.instructions
        if isinstance(ins, str):
            out.append(ins)
        else:
            out += [
                v
                for v in (
                    ins.reason_for_call,
                    ins.known_info,
                    ins.unknown_info,
                    ins.task_instructions,
                )
                if v
            ]
        if sc.persona:
            out.append(sc.persona)
        crit = instance.task.evaluation_criteria
        if crit is not None:
            if crit.actions:
                out.append(json.dumps([a.model_dump(mode="json") for a in crit.actions]))
            out += list(crit.nl_assertions or [])
        if instance.task.ticket:
            out.append(instance.task.ticket)
        return [v for v in out if len(v) >= 12]

    # -- reward -----------------------------------------------------------------------

    async def reward(self, env: Tau2Env, trajectory: Trajectory) -> RewardResult:
        try:
            # tau2's evaluator builds two environments (a database load each): off the
            # loop, so the other episodes keep playing.
            info = await asyncio.to_thread(self.tau2_score, env, trajectory)
        except Exception as exc:
            # tau2's env assertions raise on a missing object (mock's assert_task_status on a
            # task never created): the end state is wrong, so tau2's reward is 0.
            tier = "wrong_state" if env.user_stopped else "not_finished"
            r = TIERS.score(tier, -1.0)
            r.components.update({"tau2_reward": 0.0, "tau2_evaluator_raised": 1.0})
            trajectory.fail("tau2_evaluator_error", f"{type(exc).__name__}: {exc}"[:200])
            return r
        return score_reward(info, trajectory_finished=env.user_stopped)

    def tau2_score(self, env: Tau2Env, trajectory: Trajectory) -> RewardInfo:
        """tau2's evaluator on this episode's conversation."""
        termination = (
            TerminationReason.USER_STOP if env.user_stopped else TerminationReason.MAX_STEPS
        )
        messages = to_tau2_messages(trajectory.messages, env.prefix, env.turns)
        return tau2_reward(env.domain, env.task, messages, termination)

    # -- data -------------------------------------------------------------------------

    def task_ids(self, split: str) -> list[str]:
        if split not in SPLITS:
            raise TaskInputError(f"split {split!r} is not one of {', '.join(SPLITS)}")
        splits = domain_splits(self.domain)
        ids = splits.get(SPLITS[split]) or splits["base"]  # mock ships only 'base'
        tasks = domain_tasks(self.domain)
        return [i for i in ids if i in tasks and playable(tasks[i])]

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        ids = self.task_ids(split)
        if n is not None and n > len(ids):
            if split != "train":  # only train rows repeat; an eval set is each task once
                raise TaskInputError(
                    f"tau2 {self.domain} split {split!r} has {len(ids)} tasks; ask for --n {len(ids)} or fewer"
                )
            ids = (ids * (n // len(ids) + 1))[
                :n
            ]  # train rows repeat: each replay is a new conversation
        elif n is not None:
            ids = seeded_sample(ids, n, seed)
        return [{"prompt": json.dumps({"domain": self.domain, "task_id": i})} for i in ids]

    def expert(self) -> Policy:
        return experts.expert_policy()

    def reward_samples(self) -> Iterable[RewardSample]:
        yield from TIERS.samples()
        yield from run_sync(self._episode_samples())

    async def _episode_samples(self) -> list[RewardSample]:
        # Each behaviour on the first three validation tasks its mistake changes.
        ids = self.task_ids("validation")
        tasks = domain_tasks(self.domain)
        out = []
        for tier, label, make, mistake in experts.BEHAVIOURS:
            for task_id in [i for i in ids if experts.applies(mistake, self.domain, tasks[i])][:3]:
                prompt = json.dumps({"domain": self.domain, "task_id": task_id})
                traj = await run_episode(self, prompt, make())
                assert traj.reward is not None
                text = f"{label} on {self.domain}/{task_id} (landed in {traj.reward.outcome})"
                out.append(RewardSample(TIERS.names.index(tier), tier, text, traj.reward))
        return out


@functools.cache
def agent_system_prompt(domain: str) -> str:
    """tau2's LLMAgent system prompt for `domain` (one database load per domain, not per
    episode)."""
    policy = new_environment(domain).get_policy()
    return AGENT_SYSTEM_PROMPT.format(domain_policy=policy, agent_instruction=AGENT_INSTRUCTION)


def score_reward(info: RewardInfo, *, trajectory_finished: bool) -> RewardResult:
    """Our tiered reward from tau2's RewardInfo; `tau2_reward` in the components is tau2's."""
    checks = info.action_checks or []
    action_frac = sum(c.action_match for c in checks) / len(checks) if checks else 1.0
    comm = info.communicate_checks or []
    comm_frac = sum(c.met for c in comm) / len(comm) if comm else 1.0
    parts = {
        "tau2_reward": float(info.reward),
        "actions_matched": action_frac,
        "info_told": comm_frac,
    }
    if not trajectory_finished:
        r = TIERS.score("not_finished", 2 * action_frac - 1)
    elif info.reward >= 1.0:
        r = TIERS.score("solved")
    else:
        breakdown = {
            str(k.value if hasattr(k, "value") else k): v
            for k, v in (info.reward_breakdown or {}).items()
        }
        failing = {k for k, v in breakdown.items() if v < 1.0}
        if failing == {"COMMUNICATE"}:
            r = TIERS.score("info_missing", 2 * comm_frac - 1)
        else:
            r = TIERS.score("wrong_state", 2 * action_frac - 1)
    r.components.update(parts)
    return r


def from_tau2_messages(prefix: list[Any]) -> list[Message]:
    """The conversation's opening (tau2's greeting, or a task's pre-written history) as the
    policy reads it: one message for each tau2 message (`to_tau2_messages` relies on it)."""
    out: list[Message] = []
    for m in prefix:
        if isinstance(m, ToolMessage):
            out.append(Message(role="tool", content=m.content or "", tool_call_id=m.id))
        elif isinstance(m, AssistantMessage):
            calls = [
                AgentToolCall(id=c.id, name=c.name, arguments=json.dumps(c.arguments))
                for c in m.tool_calls or []
            ]
            out.append(Message(role="assistant", content=m.content, tool_calls=calls or None))
        else:
            out.append(Message(role="user", content=m.content or ""))
    return out


def to_tau2_messages(
    messages: list[Message], prefix: list[Any], turns: list[UserTurn]
) -> list[Any]:
    """The conversation in tau2's types, as its orchestrator records it: no system prompt;
    the opening (`prefix`) as tau2 has it; each user message preceded by the user's own tool
    calls and their results (`turns`, which the policy never saw); calls whose arguments are
    not a JSON object dropped with their replies (tau2's agent could not have sent them);
    a user message the policy never read (the closing STOP) last."""
    out: list[Any] = [m.model_copy(deep=True) for m in prefix]
    dropped: set[str] = set()
    pending = list(turns)
    start = 1 if messages and messages[0].role == "system" else 0
    body = messages[start + len(prefix) :]
    for m in body:
        if m.role == "assistant":
            calls = []
            for c in m.tool_calls or []:
                args = parse_arguments(c.arguments)
                if args is None:
                    dropped.add(c.id)
                    continue
                calls.append(ToolCall(id=c.id, name=c.name, arguments=args))
            if calls or (m.content or "").strip():
                out.append(
                    AssistantMessage(
                        role="assistant", content=m.content or None, tool_calls=calls or None
                    )
                )
        elif m.role == "tool":
            if m.tool_call_id not in dropped:
                out.append(ToolMessage(id=m.tool_call_id or "", role="tool", content=m.content))
        elif m.role == "user":
            turn = pending.pop(0) if pending else None
            if turn is None or (turn.message.content or "") != (m.content or ""):
                raise ValueError(f"user message {m.content!r:.80} is not the user's next turn")
            out += [*turn.hidden, turn.message]
    for turn in pending:
        out += [*turn.hidden, turn.message]
    return out


class AirlineTask(Tau2TaskBase):
    name: ClassVar[str] = "tau2_airline"
    description: ClassVar[str] = (
        "tau2-bench airline: customer service under the airline policy, tau2's user and evaluator."
    )
    domain: ClassVar[str] = "airline"


class RetailTask(Tau2TaskBase):
    name: ClassVar[str] = "tau2_retail"
    description: ClassVar[str] = (
        "tau2-bench retail: customer service under the retail policy, tau2's user and evaluator."
    )
    domain: ClassVar[str] = "retail"


class TelecomTask(Tau2TaskBase):
    name: ClassVar[str] = "tau2_telecom"
    description: ClassVar[str] = (
        "tau2-bench telecom: technical support where the customer acts on their own phone "
        "(tau2's user tools), tau2's user and evaluator."
    )
    domain: ClassVar[str] = "telecom"
    # Troubleshooting takes more exchanges than a booking: the agent asks for one step on
    # the phone at a time (tau2's 200 steps count the user's tool calls too).
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=50, max_tool_calls=50, timeout_s=900)


class MockTask(Tau2TaskBase):
    name: ClassVar[str] = "tau2_mock"
    description: ClassVar[str] = "tau2-bench mock domain (a small task list; tests and smoke runs)."
    domain: ClassVar[str] = "mock"


TASKS = [AirlineTask, RetailTask, TelecomTask, MockTask]
