"""code_relay: the answer comes only from an earlier tool reply; the format expert never wins."""

from __future__ import annotations

import json

import pytest

from agentrft import TaskInputError, run_episodes
from agentrft.testing.relay import CodeRelayTask


class TwoCodes(CodeRelayTask):
    codes = ("A", "B")


class TextAnswers(CodeRelayTask):
    codes = ("A", "B")
    answer = "text"
    repeat = 8
    show_decoy = False


@pytest.mark.parametrize("task", [CodeRelayTask(), TwoCodes(), TextAnswers()])
async def test_expert_always_wins_and_the_format_expert_never(task):
    rows = [r["prompt"] for r in task.make_dataset("validation", 24, seed=3)]
    pairs = {(json.loads(r)["code"], json.loads(r)["decoy"]) for r in rows}
    assert len(pairs) == len(task.codes) * (len(task.codes) - 1)  # every pair appears
    best = await run_episodes(task, rows, task.expert())
    assert all(t.reward.outcome == "correct" and t.reward.total == 1.0 for t in best)
    # The format expert gives the decoy (with no decoy shown, nothing a code can be).
    fmt = await run_episodes(task, rows, task.format_expert())
    outcome = "wrong" if task.show_decoy else "no_submit"
    assert all(t.reward.outcome == outcome and t.reward.total < 1.0 for t in fmt)
    calls = 2 if task.answer == "call" else 1
    assert all(len(t.turns) == 2 and t.tool_calls == calls for t in best + fmt)


@pytest.mark.parametrize("task", [CodeRelayTask(), TextAnswers()])
async def test_the_withheld_copy_shows_nothing_and_its_expert_only_guesses(task):
    hidden = task.withheld()
    assert hidden.withholds and not task.withholds and hidden.answer == task.answer
    rows = [r["prompt"] for r in task.make_dataset("train", 64, seed=1)]
    trajs = await run_episodes(hidden, rows, hidden.expert())
    replies = {t.turns[0].tool_messages[0].content for t in trajs}
    assert len(replies) == 1 and "?" in replies.pop()  # the same for every row
    right = sum(t.reward.outcome == "correct" for t in trajs)
    assert 0 < right < len(trajs)  # chance, both ways (p of a 0 or 64: ~1e-19)
    assert all(t.reward.outcome in ("correct", "wrong") for t in trajs)


async def test_nothing_before_the_tool_reply_names_the_code():
    task = CodeRelayTask()
    rows = [r["prompt"] for r in task.make_dataset("train", 12, seed=0)]
    # Every row's prompt messages are the same text: only the tool reply differs.
    starts = {tuple(m.content for m in task.initial_messages(task.parse(r))) for r in rows}
    assert len(starts) == 1
    for t in await run_episodes(task, rows, task.expert()):
        (reply,) = t.turns[0].tool_messages
        hidden = task.hidden_values(task.parse(t.prompt))
        assert reply.content in hidden  # the first place the values appear
        assert not any(h in (m.content or "") for m in t.messages[:2] for h in hidden)


def test_rows_are_checked():
    task = CodeRelayTask()
    with pytest.raises(TaskInputError, match="must be two different letters"):
        task.parse('{"code": "A", "decoy": "A"}')
    with pytest.raises(TaskInputError, match="rows are JSON like"):
        task.parse("A")
    with pytest.raises(TaskInputError, match="must be two different letters"):
        TwoCodes().parse('{"code": "C", "decoy": "A"}')
