"""Adversarial replies (176 KB+) are parsed in linear time, inside the episode's budget.

Each case plays a real episode whose model writes a reply built to make a backtracking
pattern rescan the text (`<tool_call>(.*?)</tool_call>` from every unclosed tag, `\\s*`
runs before a lazy group). The regexes these parsers replaced took 16-24 s on such a
reply; the episode's budget here is `BUDGET_S`, so a quadratic parser turns the episode
into `wall_clock` (the turn after the reply starts past the deadline) instead of a
finished one. Then the linear parsers are checked against the old patterns, as oracles, on
many small random replies: they must give the same answers.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from typing import Any

import pytest

from agentrft import EpisodeLimits, Message, ScriptedPolicy, call, replay_policy, run_episode
from agentrft.backends.local.inference.chat_tokens import parse_tool_calls
from agentrft.testing import FindNumberTask

#: The episode budget of every case: generous for a linear parser on a shared CPU, far too
#: short for a quadratic one on these replies.
BUDGET_S = 2.0
SIZE = 176_000
LIMITS = EpisodeLimits(max_turns=6, max_tool_calls=12, timeout_s=BUDGET_S)

OPEN, CLOSE = "<tool_call>", "</tool_call>"
UNCLOSED_TAGS = OPEN * (SIZE // len(OPEN))
TAG_THEN_SPACES = OPEN + " " * SIZE


def finished_in_budget(traj: Any) -> None:
    assert traj.reward is not None
    assert traj.stop_reason != "wall_clock", traj.failures
    assert traj.wall_s < BUDGET_S


# --- the local backend's Hermes parser, inside a policy call --------------------------------

GUESS_37 = '<tool_call>{"name": "guess", "arguments": {"number": 37}}</tool_call>'
MALFORMED_THEN_SPACES = (
    '<tool_call>{"name": "guess", "arguments": {"number": 37}' + " " * SIZE + "x" + CLOSE
)


def local_decoder(replies: list[str]) -> ScriptedPolicy:
    """Replies decoded as the local backend decodes sampled text: `parse_tool_calls`."""

    def step(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        text = replies[min(sum(m.role == "assistant" for m in messages), len(replies) - 1)]
        content, calls = parse_tool_calls(text)
        return Message(role="assistant", content=content or None, tool_calls=calls or None)

    return ScriptedPolicy(step, name="local-decoder")


@pytest.mark.parametrize(
    "replies",
    [
        [GUESS_37 + UNCLOSED_TAGS],  # a call, then 176 KB of opening tags
        [GUESS_37 + TAG_THEN_SPACES],
        # Malformed JSON with a long run of spaces before the end: the raw-arguments search.
        [MALFORMED_THEN_SPACES, GUESS_37],
    ],
    ids=["unclosed-tags", "tag-then-spaces", "malformed-arguments-then-spaces"],
)
def test_local_tool_call_parser_is_linear(replies: list[str]) -> None:
    row = json.dumps({"secret": 37, "low": 1, "high": 100})
    traj = asyncio.run(run_episode(FindNumberTask(), row, local_decoder(replies), limits=LIMITS))
    finished_in_budget(traj)
    assert traj.stop_reason == "done" and traj.solved


# --- expense_report's plain-text recovery --------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        UNCLOSED_TAGS,
        TAG_THEN_SPACES,
        (OPEN + " " * 100) * (SIZE // 111),
        "get_receipt(" + " " * SIZE,
        "get_receipt(receipt_id=" + "-" * SIZE + "1)",  # the parser's own depth limit
        OPEN + "[" * SIZE + CLOSE,  # json.loads' recursion limit
    ],
    ids=["unclosed-tags", "tag-then-spaces", "tags-and-spaces", "open-paren", "unary", "deep"],
)
def test_expense_report_recovery_is_linear(reply: str) -> None:
    pytest.importorskip("agentrft_expense_report")
    from agentrft_expense_report import ExpenseReportTask

    task = ExpenseReportTask()
    row = json.dumps({"id": "adversarial", "seed": 1, "difficulty": "easy"})
    policy = replay_policy([reply, call("submit_report")])
    traj = asyncio.run(run_episode(task, row, policy, limits=LIMITS))
    finished_in_budget(traj)
    # Nothing recovered (the text is one reminder), then the report goes in.
    assert traj.stop_reason == "done"
    assert "policy_error" not in traj.failure_kinds  # recover() did not raise


# --- wordle's plain-text recovery (its patterns are anchored on a literal: linear) ----------


@pytest.mark.parametrize(
    "reply",
    [
        "guess_word(" * (SIZE // 11),
        "guess_word(" + " " * SIZE,
        '"guess": "' + "a" * SIZE,
        "__parameter=guess>" + " " * SIZE,
        "guess:" + '"' * SIZE,
        ("guess= " + " " * 30) * (SIZE // 37),
    ],
    ids=["calls", "call-then-spaces", "json-letters", "xml-spaces", "quotes", "guess-spaces"],
)
def test_wordle_recovery_is_linear(reply: str) -> None:
    pytest.importorskip("agentrft_wordle")
    from agentrft.plugins import get_plugins

    task = get_plugins().task("wordle")
    row = task.row("crane")["prompt"]
    policy = replay_policy([reply, call("guess_word", {"guess": "crane"})])
    traj = asyncio.run(run_episode(task, row, policy, limits=LIMITS))
    finished_in_budget(traj)


def test_deeply_nested_tool_arguments_are_malformed_json_not_a_crash() -> None:
    row = json.dumps({"secret": 37, "low": 1, "high": 100})
    nested = call("guess", '{"number": ' + "[" * SIZE)
    policy = replay_policy([nested, call("guess", {"number": 37})])
    traj = asyncio.run(run_episode(FindNumberTask(), row, policy, limits=LIMITS))
    finished_in_budget(traj)
    assert traj.failure_kinds == ["malformed_tool_json"]
    assert "nested too deeply" in (traj.turns[0].tool_messages[0].content or "")
    assert traj.solved


# --- same answers as the patterns they replace ---------------------------------------------

_OLD_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_OLD_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')
_OLD_ARGS = re.compile(r'"arguments"\s*:\s*(.*?)\}?\s*$', re.DOTALL)


def old_parse_tool_calls(text: str) -> tuple[str, list[tuple[str, str, str]]]:
    """The regex version `parse_tool_calls` had, as an oracle for short texts."""
    calls = []
    for i, match in enumerate(_OLD_TOOL_CALL.finditer(text)):
        body = match.group(1).strip()
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            args = data.get("arguments", data.get("parameters", {}))
            arguments = args if isinstance(args, str) else json.dumps(args)
            calls.append((f"call_{i}", data["name"], arguments))
            continue
        name = _OLD_NAME.search(body)
        args_match = _OLD_ARGS.search(body)
        raw = args_match.group(1).strip() if args_match else body
        calls.append((f"call_{i}", name.group(1) if name else "", raw))
    return _OLD_TOOL_CALL.sub("", text).strip(), calls


FRAGMENTS = [
    OPEN,
    CLOSE,
    "<tool_",
    "call>",
    '"name"',
    '"arguments"',
    '"parameters"',
    ":",
    " ",
    "\n",
    "\t",
    "\u00a0",  # Unicode whitespace: \s and str.strip() must agree on it
    "}",
    "{",
    '"',
    "x",
    '{"name": "g", "arguments": {"a": 1}}',
    '"g"',
]


def random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(FRAGMENTS, k=rng.randint(0, 14))) for _ in range(n)]


def test_local_parser_matches_the_old_pattern() -> None:
    for text in random_texts(0, 20_000):
        content, calls = parse_tool_calls(text)
        got = (content, [(c.id, c.name, c.arguments) for c in calls])
        assert got == old_parse_tool_calls(text), repr(text)


def test_expense_report_blocks_match_the_old_pattern() -> None:
    pytest.importorskip("agentrft_expense_report")
    from agentrft_expense_report.environment import tagged_blocks

    old = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
    for text in random_texts(1, 20_000):
        assert tagged_blocks(text) == old.findall(text), repr(text)


@pytest.mark.parametrize(
    "text",
    [
        "?" * SIZE,
        "?api" * (SIZE // 4),
        "&token" * (SIZE // 6),
        # a prose credential word before values that never look like secrets
        ("token: " + "a" * 23 + " ") * (SIZE // 31),
        "token:1 " * (SIZE // 8),
    ],
)
def test_secret_scrubbing_of_a_long_reply_is_linear(tmp_path, text):
    """Every written trajectory line goes through the scrubber: a query-parameter pattern
    whose name could run past the next separator took 15 s on 20 KB of `?` (minutes at
    176 KB). Written here under the same budget as an episode."""
    import time

    from agentrft.trajectory import Trajectory, write_trajectories

    traj = Trajectory(
        id="t", task="t", prompt="p", messages=[Message(role="assistant", content=text)]
    )
    started = time.perf_counter()
    write_trajectories([traj], tmp_path / "t.jsonl")
    assert time.perf_counter() - started < BUDGET_S
    assert len((tmp_path / "t.jsonl").read_text()) > SIZE // 2
