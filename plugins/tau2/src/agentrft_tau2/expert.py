"""The expert: tau2's ground-truth actions (evaluation_criteria.actions) in order, then one
message telling the user every communicate_info. It finds its task through the scripted
user's `[case domain/id]` opening, so it plays with the scripted user only (a simulated
user does not name the case). Flawed variants make one deliberate mistake each, for the
reward check and the tests that compare our reward with tau2's evaluator."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from agentrft import Message, ScriptedPolicy, ToolCall
from agentrft_tau2.suite import Tau2Task, ToolType, domain_tasks, new_environment
from agentrft_tau2.users import case_of

#: Mistakes a flawed expert can make.
MISTAKES = ("drop_last_write", "wrong_argument", "no_info", "never_answers")


@functools.cache
def write_tools(domain: str) -> frozenset[str]:
    """The domain's tools that change its database (tau2's ToolType.WRITE)."""
    kit = new_environment(domain).tools
    assert kit is not None
    return frozenset(n for n in kit.get_tools() if kit.tool_type(n) == ToolType.WRITE)


def last_write(domain: str, actions: list[Any]) -> int | None:
    """The index of the last ground-truth action that writes, if any."""
    writes = [i for i, a in enumerate(actions) if a.name in write_tools(domain)]
    return writes[-1] if writes else None


def gold_actions(task: Tau2Task) -> list[Any]:
    crit = task.evaluation_criteria
    return [a for a in (crit.actions or [])] if crit is not None else []


def applies(mistake: str | None, domain: str, task: Tau2Task) -> bool:
    """Whether `mistake` changes the outcome of `task` (no info to omit, no write to drop)."""
    crit = task.evaluation_criteria
    if mistake in ("drop_last_write", "wrong_argument"):
        i = last_write(domain, gold_actions(task))
        return i is not None and (
            mistake == "drop_last_write" or bool(gold_actions(task)[i].arguments)
        )
    if mistake == "no_info":
        return bool(crit and crit.communicate_info)
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


def expert_step(
    messages: list[Message], tools: list[dict[str, Any]], mistake: str | None = None
) -> ToolCall | str:
    """The next reply, from the conversation: the case the scripted user named, the number
    of calls already made."""
    case = next(
        (
            case_of(m.content or "")
            for m in messages
            if m.role == "user" and case_of(m.content or "")
        ),
        None,
    )
    if case is None:
        return "I am sorry, I can only play with the scripted user (it names the case)."
    task = domain_tasks(case[0])[case[1]]
    actions = gold_actions(task)
    write = last_write(case[0], actions)
    if mistake == "drop_last_write" and write is not None:
        actions = actions[:write] + actions[write + 1 :]
    made = sum(len(m.tool_calls or []) for m in messages if m.role == "assistant")
    if mistake == "never_answers":
        return ToolCall(id=f"call_{made}", name="transfer_to_human_agents_please", arguments="{}")
    if made < len(actions):
        args = dict(actions[made].arguments)
        if mistake == "wrong_argument" and made == write and args:
            args = _perturb(args)
        return ToolCall(id=f"call_{made}", name=actions[made].name, arguments=json.dumps(args))
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
        "not_finished",
        "calls an unknown tool until the turns run out",
        _flawed("never_answers"),
        "never_answers",
    ),
]
