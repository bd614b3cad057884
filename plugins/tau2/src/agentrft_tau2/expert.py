"""The expert: tau2's ground-truth actions (evaluation_criteria.actions) in order, then one
message telling the user every communicate_info. The agent's actions it calls itself; each
run of the user's actions (telecom: steps on the phone) it asks the user to do, naming the
user tools, and the scripted user does them. It finds its task through the scripted
user's `[case domain/token]` opening, so it plays with the scripted user only (a simulated
user does not name the case). Flawed variants make one deliberate mistake each, for the
reward check and the tests that compare our reward with tau2's evaluator."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from agentrft import Message, ScriptedPolicy, ToolCall
from agentrft_tau2.suite import Tau2Task, ToolType, domain_tasks, new_environment
from agentrft_tau2.suite import ToolCall as Tau2ToolCall
from agentrft_tau2.users import case_of

#: Mistakes a flawed expert can make.
MISTAKES = ("drop_last_write", "wrong_argument", "no_info", "skip_user_step", "never_answers")


@functools.cache
def write_tools(domain: str) -> frozenset[str]:
    """The domain's tools that change its database (tau2's ToolType.WRITE)."""
    kit = new_environment(domain).tools
    assert kit is not None
    return frozenset(n for n in kit.get_tools() if kit.tool_type(n) == ToolType.WRITE)


@functools.cache
def refused_gold_actions(domain: str, task_id: str) -> frozenset[int]:
    """The ground-truth actions tau2 answers with `Error: ...` when the ground truth is
    played from the task's initial state (a few retail tasks hold one; they change
    nothing, so leaving one out or changing its arguments is no mistake)."""
    task = domain_tasks(domain)[task_id]
    env = new_environment(domain)
    init = task.initial_state
    if init is not None:
        env.set_state(
            initialization_data=init.initialization_data,
            initialization_actions=init.initialization_actions,
            message_history=[m.model_copy(deep=True) for m in init.message_history or []],
        )
    refused = set()
    for i, a in enumerate(gold_actions(task)):
        call = Tau2ToolCall(
            id=f"gold_{i}", name=a.name, arguments=a.arguments, requestor=a.requestor
        )
        if env.get_response(call).error:
            refused.add(i)
    return frozenset(refused)


def last_write(domain: str, task: Tau2Task) -> int | None:
    """The index of the last ground-truth agent action that writes (and that tau2 carries
    out), if any."""
    refused = refused_gold_actions(domain, task.id)
    writes = [
        i
        for i, a in enumerate(gold_actions(task))
        if a.requestor == "assistant" and a.name in write_tools(domain) and i not in refused
    ]
    return writes[-1] if writes else None


def last_user_step(actions: list[Any]) -> int | None:
    """The index of the last ground-truth action the user performs, if any."""
    steps = [i for i, a in enumerate(actions) if a.requestor == "user"]
    return steps[-1] if steps else None


def segments(actions: list[Any]) -> list[list[tuple[int, Any]]]:
    """The ground truth as the expert plays it, (index, action) pairs: an agent action alone
    (one call), or a run of user actions (one request to the user)."""
    out: list[list[tuple[int, Any]]] = []
    for i, a in enumerate(actions):
        if a.requestor == "user" and out and out[-1][0][1].requestor == "user":
            out[-1].append((i, a))
        else:
            out.append([(i, a)])
    return out


def gold_actions(task: Tau2Task) -> list[Any]:
    crit = task.evaluation_criteria
    return [a for a in (crit.actions or [])] if crit is not None else []


def replayable(task: Tau2Task) -> bool:
    """Whether playing the ground truth solves the task. Not when its env assertions need an
    action the ground truth does not list: mock's update_task_with_history_and_env_assertions
    asserts that task_2 ends completed and lists no action (the only such task in tau2)."""
    crit = task.evaluation_criteria
    return crit is None or bool(crit.actions) or not crit.env_assertions


def applies(mistake: str | None, domain: str, task: Tau2Task) -> bool:
    """Whether `mistake` changes the outcome of `task` (no info to omit, no write to drop);
    only on tasks the expert solves."""
    crit = task.evaluation_criteria
    if not replayable(task):
        return False
    if mistake in ("drop_last_write", "wrong_argument"):
        i = last_write(domain, task)
        return i is not None and (
            mistake == "drop_last_write" or bool(gold_actions(task)[i].arguments)
        )
    if mistake == "no_info":
        return bool(crit and crit.communicate_info)
    if mistake == "skip_user_step":
        return last_user_step(gold_actions(task)) is not None
    return True


def _final_text(task: Tau2Task, mistake: str | None) -> str:
    crit = task.evaluation_criteria
    info = list(crit.communicate_info or []) if crit is not None and mistake != "no_info" else []
    if info:
        return "Your request is complete. For your information: " + "; ".join(info) + "."
    return "Your request is complete. Is there anything else I can help you with?"


def _perturb(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments with the first one changed to a value no task expects."""
    out = dict(arguments)
    key = next(iter(out))
    value = out[key]
    if isinstance(value, bool):
        out[key] = not value
    elif isinstance(value, (int, float)):
        out[key] = value + 1
    elif isinstance(value, list):
        out[key] = value[:-1] if value else ["wrong"]
    else:
        out[key] = f"{value}_wrong"
    return out


def _ask_user(steps: list[Any]) -> str:
    """A request for the user's next steps, naming each user tool once per step (the
    scripted user does one step per mention)."""
    named = []
    for a in steps:
        args = ", ".join(f"{k}={json.dumps(v)}" for k, v in a.arguments.items())
        named.append(f"{a.name} ({args})" if args else a.name)
    return "Please do this on your phone, in this order: " + "; then ".join(named) + "."


def expert_step(
    messages: list[Message], tools: list[dict[str, Any]], mistake: str | None = None
) -> ToolCall | str:
    """The next reply, from the conversation since the scripted user named the case: the
    calls already made and the requests to the user already sent say where it is."""
    opening = next(
        (i for i, m in enumerate(messages) if m.role == "user" and case_of(m.content or "")),
        None,
    )
    if opening is None:
        return "I am sorry, I can only play with the scripted user (it names the case)."
    case = case_of(messages[opening].content or "")
    assert case is not None
    task = domain_tasks(case[0])[case[1]]
    actions = gold_actions(task)
    write = last_write(case[0], task)
    skip = {
        "drop_last_write": write,
        "skip_user_step": last_user_step(actions),
    }.get(mistake or "")
    since = [m for m in messages[opening + 1 :] if m.role == "assistant"]
    made = sum(len(m.tool_calls or []) for m in since)
    asked = sum(1 for m in since if not m.tool_calls and (m.content or "").strip())
    if mistake == "never_answers":
        return ToolCall(id=f"call_{made}", name="transfer_to_human_agents_please", arguments="{}")
    kept = [i for i in range(len(actions)) if i != skip]  # plan index -> gold index
    plan = segments([actions[i] for i in kept])
    calls_done, asks_done = made, asked
    for seg in plan:
        if seg[0][1].requestor == "user":
            if asks_done:
                asks_done -= 1
                continue
            return _ask_user([a for _, a in seg])
        if calls_done:
            calls_done -= 1
            continue
        i, action = seg[0]
        args = dict(action.arguments)
        if mistake == "wrong_argument" and kept[i] == write and args:
            args = _perturb(args)
        return ToolCall(id=f"call_{made}", name=action.name, arguments=json.dumps(args))
    return _final_text(task, mistake)


def expert_policy() -> ScriptedPolicy:
    return ScriptedPolicy(expert_step, name="expert")


def flawed_expert(mistake: str) -> ScriptedPolicy:
    return ScriptedPolicy(lambda m, t: expert_step(m, t, mistake=mistake), name=f"expert_{mistake}")


def _flawed(mistake: str) -> Callable[[], ScriptedPolicy]:
    return lambda: flawed_expert(mistake)


#: (intended tier, label, policy factory, mistake) for the reward check.
BEHAVIOURS: list[tuple[str, str, Callable[[], ScriptedPolicy], str | None]] = [
    ("solved", "expert", expert_policy, None),
    (
        "info_missing",
        "expert that never tells the user the information",
        _flawed("no_info"),
        "no_info",
    ),
    (
        "wrong_state",
        "expert that skips its last write",
        _flawed("drop_last_write"),
        "drop_last_write",
    ),
    (
        "wrong_state",
        "expert with a wrong argument in its last write",
        _flawed("wrong_argument"),
        "wrong_argument",
    ),
    (
        "wrong_state",
        "expert that never asks the user for their last step",
        _flawed("skip_user_step"),
        "skip_user_step",
    ),
    (
        "not_finished",
        "calls an unknown tool until the turns run out",
        _flawed("never_answers"),
        "never_answers",
    ),
]
