"""Scripted experts that read only the conversation (the rules and the game's replies).

- GuessTheNumber: binary search over the range the prompt states, narrowed by each
  "higher"/"lower" reply; at most ceil(log2(20 + 1)) = 5 guesses for 1..20.
- LightsOut: solve "press set x with A x = board" over GF(2) (A toggles a cell and its four
  neighbours), take the solution with the fewest presses among those the null space allows,
  and press its first cell; re-solved from the newest board each turn. A 5x5 scramble of
  5-15 presses has a solution of at most 15 presses, inside the game's 20 moves.
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


_GRID_SIZE = re.compile(r"You have a (\d+)x(\d+) grid of lights")
_GRID_ROW = re.compile(r"^(\d+): ([O.](?: [O.])*)$", re.MULTILINE)


def lights_out_presses(board: list[list[bool]]) -> list[tuple[int, int]]:
    """The fewest presses (row, col) that turn every light of `board` off; [] if none."""
    rows, cols = len(board), len(board[0])
    n = rows * cols

    def bit(r: int, c: int) -> int:
        return 1 << (r * cols + c)

    # One equation per cell: the presses on it and its neighbours must flip it `board` times.
    equations = []
    for r in range(rows):
        for c in range(cols):
            mask = 0
            for dr, dc in ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)):
                if 0 <= r + dr < rows and 0 <= c + dc < cols:
                    mask |= bit(r + dr, c + dc)
            equations.append([mask, int(board[r][c])])
    pivots: list[int] = []
    row = 0
    for var in range(n):
        hit = next((i for i in range(row, n) if equations[i][0] >> var & 1), None)
        if hit is None:
            continue
        equations[row], equations[hit] = equations[hit], equations[row]
        for i in range(n):
            if i != row and equations[i][0] >> var & 1:
                equations[i][0] ^= equations[row][0]
                equations[i][1] ^= equations[row][1]
        pivots.append(var)
        row += 1
    if any(mask == 0 and rhs for mask, rhs in equations[row:]):
        return []  # unsolvable (never for a board scrambled by presses)
    free = [v for v in range(n) if v not in pivots]
    best: int | None = None
    for choice in range(1 << len(free)):
        x = sum(1 << v for i, v in enumerate(free) if choice >> i & 1)
        for eq, var in zip(equations, pivots, strict=False):
            others = eq[0] & ~(1 << var)
            if eq[1] ^ (bin(others & x).count("1") & 1):
                x |= 1 << var
        if best is None or bin(x).count("1") < bin(best).count("1"):
            best = x
    assert best is not None
    return [(v // cols, v % cols) for v in range(n) if best >> v & 1]


def lights_out_step(messages: list[Message], tools: list[dict[str, Any]]) -> ToolCall:
    """Press the first cell of the fewest-presses solution of the newest board."""
    size = _rules(messages, _GRID_SIZE)
    rows = int(size.group(1))
    board: list[list[bool]] | None = None
    for m in messages:
        if m.role in ("user", "tool") and m.content:
            found = _GRID_ROW.findall(m.content)
            if len(found) >= rows:
                board = [[cell == "O" for cell in line.split()] for _, line in found[-rows:]]
    if board is None:
        raise ValueError("no Lights Out board in the conversation")
    presses = lights_out_presses(board)
    r, c = presses[0] if presses else (0, 0)
    return _move(f"[{r} {c}]")


def expert_policy(game: str) -> Policy:
    """The scripted expert of `game` ("guess_the_number", "mastermind" or "lights_out")."""
    steps = {
        "guess_the_number": guess_the_number_step,
        "mastermind": mastermind_step,
        "lights_out": lights_out_step,
    }
    return ScriptedPolicy(steps[game], name=f"textarena_{game}_expert")
