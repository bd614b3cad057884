"""The expert: BFCL's possible answer, played turn by turn.

It reads the conversation only to know where it is: the user messages so far name the entry
(with the offered tool names) and the turn; it then sends that turn's ground-truth calls in
one step and, once they have run, ends the turn with a short text reply. The calls come
from the suite's possible_answer files (an oracle, not a model of the task): it shows the
ceiling BFCL's checker allows and feeds the local backend's warm-up.

Ground-truth strings are Python calls (`sort('final_report.pdf')`, `cd(folder='..')`); a
positional argument is named from the method's signature, as BFCL's eval would bind it.
"""

from __future__ import annotations

import ast
import inspect
import json
from functools import cache
from typing import Any

from agentrft import Message, ScriptedPolicy, ToolCall, call
from agentrft_bfcl import suite

#: The text that ends a turn (any text without a tool call does).
DONE = "Done."


def expert_policy(category: str = "multi_turn_base") -> ScriptedPolicy:
    """Plays the ground truth of every entry of `category` (one of `suite.CATEGORIES`)."""
    return ScriptedPolicy(lambda m, t: expert_step(m, t, category), name="expert")


def expert_step(
    messages: list[Message], tools: list[dict[str, Any]], category: str = "multi_turn_base"
) -> str | list[ToolCall]:
    asked = [m.content or "" for m in messages if m.role == "user"]
    names = frozenset((t.get("function") or t)["name"] for t in tools)
    entry = _find(category, tuple(asked), names)
    if entry is None:
        return "I cannot tell which BFCL entry this is."
    turn = len(asked) - 1
    answered = messages[-1].role == "tool"
    if answered or not entry.ground_truth[turn]:
        return DONE
    return [ground_truth_call(entry, s) for s in entry.ground_truth[turn]]


def _find(category: str, asked: tuple[str, ...], names: frozenset[str]) -> suite.Entry | None:
    """The first entry of `category` whose turns start with the user messages seen and whose
    tools are the ones offered (two base entries share a first turn and its ground truth;
    the next user message tells them apart). The category must come from the task: 185
    long_context entries ask what a base entry asks, and 18 of them have another ground
    truth (long_context_29 touches '3354.pdf' where base_29 touches '79.pdf')."""
    for e in _by_first_turn(category).get(asked[0], []) if asked else []:
        turns = ["\n\n".join(t) for t in e.turns]
        offered = suite.tool_names(e.id, len(asked) - 1)  # miss_func: grows at its turn
        if turns[: len(asked)] == list(asked) and offered == names:
            return e
    return None


@cache
def _by_first_turn(category: str) -> dict[str, list[suite.Entry]]:
    index: dict[str, list[suite.Entry]] = {}
    for e in suite.entries(category).values():
        index.setdefault("\n\n".join(e.turns[0]), []).append(e)
    return index


def ground_truth_call(entry: suite.Entry, source: str) -> ToolCall:
    """One ground-truth call string as a tool call with named JSON arguments."""
    node = ast.parse(source, mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"bfcl: ground truth {source!r} of {entry.id} is not a plain call")
    name = node.func.id
    params = _parameters(entry.id, name)
    arguments: dict[str, Any] = {}
    for position, value in enumerate(node.args):
        arguments[params[position]] = ast.literal_eval(value)
    for keyword in node.keywords:
        assert keyword.arg is not None, source
        arguments[keyword.arg] = ast.literal_eval(keyword.value)
    return call(name, json.dumps(arguments))


@cache
def _parameters(entry_id: str, method_name: str) -> list[str]:
    e = suite.entry(entry_id)
    method = suite.public_methods(suite.load_instances(e))[method_name]
    return list(inspect.signature(method).parameters)
