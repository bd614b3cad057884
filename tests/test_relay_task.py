"""code_relay: the answer comes only from an earlier tool reply; the format expert never wins."""

from __future__ import annotations

import json

import pytest

from agentrft import TaskInputError, run_episodes
from agentrft.testing.relay import CodeRelayTask


class TwoCodes(CodeRelayTask):
    codes = ("A", "B")


@pytest.mark.parametrize("task", [CodeRelayTask(), TwoCodes()])
async def test_expert_always_wins_and_the_format_expert_never(task):
    rows = [r["prompt"] for r in task.make_dataset("validation", 24, seed=3)]
    pairs = {(json.loads(r)["code"], json.loads(r)["decoy"]) for r in rows}
    assert len(pairs) == len(task.codes) * (len(task.codes) - 1)  # every pair appears
    best = await run_episodes(task, rows, task.expert())
    fmt = await run_episodes(task, rows, task.format_expert())
    assert all(t.reward.outcome == "correct" and t.reward.total == 1.0 for t in best)
    assert all(t.reward.outcome == "wrong" and t.reward.total == 0.0 for t in fmt)
    assert all(len(t.turns) == 2 and t.tool_calls == 2 for t in best + fmt)


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
