"""Scripted experts that read only the conversation (the rules and the game's replies).

- GuessTheNumber: binary search over the range the prompt states, narrowed by each
  "higher"/"lower" reply; at most ceil(log2(20 + 1)) = 5 guesses for 1..20.
- Mastermind: keep every code consistent with all feedback so far and play the first one
  (each guess is consistent, so it is never a repeat); 4 of 6 without repeats is 360 codes
  and ends in well under the game's 20 turns.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from agentrft import Message, Policy, ScriptedPolicy, ToolCall, call

_RANGE = re.compile(r"guess the number between (\d+) and (\d+)")
_HINT = re.compile(r"The target number is (higher|lower)\.")
_NUMBER = re.compile(r"\[(\d+)\]")
_CODE_RULES = re.compile(
    r"code that is (\d+) digits long, each digit from 1 to (\d+), "
    r"(with possible repeats|with no duplicates)"
)
_FEEDBACK = re.compile(r"Submitted \[([\d ]+)\]\. Feedback: (\d+) black peg\(s\), (\d+) white peg")


def _move(action: str) -> ToolCall:
    return call("move", {"action": action})


def _moves_and_replies(messages: list[Message]) -> list[tuple[str, str]]:
    """(action sent, the game's reply) for every `move` call answered so far."""
    replies = {m.tool_call_id: m.content or "" for m in messages if m.role == "tool"}
    out = []
    for m in messages:
        for c in m.tool_calls or []:
            if c.name != "move" or c.id not in replies:
                continue
            try:
                action = str(json.loads(c.arguments)["action"])
            except (ValueError, KeyError, TypeError):
                continue
            out.append((action, replies[c.id]))
    return out


def _rules(messages: list[Message], pattern: re.Pattern[str]) -> re.Match[str]:
    for m in messages:
        if m.role == "user" and m.content and (found := pattern.search(m.content)):
            return found
    raise ValueError(f"the game's rules are not in the conversation ({pattern.pattern!r})")


def guess_the_number_step(messages: list[Message], tools: list[dict[str, Any]]) -> ToolCall:
    """The next binary-search guess."""
    rules = _rules(messages, _RANGE)
    low, high = int(rules.group(1)), int(rules.group(2))
    for action, reply in _moves_and_replies(messages):
        guess, hint = _NUMBER.search(action), _HINT.search(reply)
        if guess is None or hint is None:
            continue  # an invalid move: no information
        if hint.group(1) == "higher":
            low = max(low, int(guess.group(1)) + 1)
        else:
            high = min(high, int(guess.group(1)) - 1)
    return _move(f"[{(low + high) // 2}]")


def mastermind_pegs(guess: tuple[int, ...], code: tuple[int, ...]) -> tuple[int, int]:
    """(black, white) pegs of `guess` against `code`, the usual Mastermind count."""
    black = sum(g == c for g, c in zip(guess, code, strict=True))
    common = sum(min(guess.count(d), code.count(d)) for d in set(guess))
    return black, common - black


def mastermind_step(messages: list[Message], tools: list[dict[str, Any]]) -> ToolCall:
    """The first code consistent with every feedback so far."""
    rules = _rules(messages, _CODE_RULES)
    length, top, repeats = int(rules.group(1)), int(rules.group(2)), "repeats" in rules.group(3)
    digits = range(1, top + 1)
    codes = (
        itertools.product(digits, repeat=length)
        if repeats
        else itertools.permutations(digits, length)
    )
    feedback = []
    for _, reply in _moves_and_replies(messages):
        if found := _FEEDBACK.search(reply):
            guess = tuple(int(d) for d in found.group(1).split())
            feedback.append((guess, (int(found.group(2)), int(found.group(3)))))
    for code in codes:
        if all(mastermind_pegs(g, code) == pegs for g, pegs in feedback):
            return _move("[" + " ".join(map(str, code)) + "]")
    raise ValueError("no code is consistent with the feedback so far")


def expert_policy(game: str) -> Policy:
    """The scripted expert of `game` ("guess_the_number" or "mastermind")."""
    steps = {"guess_the_number": guess_the_number_step, "mastermind": mastermind_step}
    return ScriptedPolicy(steps[game], name=f"textarena_{game}_expert")
