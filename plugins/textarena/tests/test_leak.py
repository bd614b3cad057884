"""The secret (the number, the code) never reaches anything the policy reads."""

from __future__ import annotations

import random
import re

import pytest
from agentrft_textarena.probes import play_probes

from agentrft import ScriptedPolicy, call, run_episode, run_sync


def _random_mover(seed: int) -> ScriptedPolicy:
    rng = random.Random(seed)

    def step(messages, tools):
        kind = rng.random()
        if kind < 0.15:
            return call("move", {"action": rng.choice(["hello", "[]", "[0]", "[1 2]"])})
        if kind < 0.6:
            return call("move", {"action": f"[{rng.randint(1, 20)}]"})
        digits = rng.sample(range(1, 7), 4)
        return call("move", {"action": "[" + " ".join(map(str, digits)) + "]"})

    return ScriptedPolicy(step, name="random_mover")


def _visible(traj) -> list[str]:
    """What the policy read: system and user prompts, every tool reply, the tool schemas."""
    texts = [m.content or "" for m in traj.messages if m.role != "assistant"]
    texts += [m.content or "" for t in traj.turns for m in t.tool_messages]
    texts.append(str(traj.tools))
    return texts


def _episodes(task):
    rows = [r["prompt"] for r in task.make_dataset("validation", 40, seed=3)]

    async def play():
        out = [await run_episode(task, row, task.expert()) for row in rows]
        out += [await run_episode(task, row, _random_mover(i)) for i, row in enumerate(rows)]
        out += [t for _, _, t in await play_probes(task)]
        return out

    return run_sync(play())


def test_no_hidden_value_in_anything_the_policy_reads(task):
    if not task.has_secret:
        assert task.hidden_values(task.parse(task.row(5)["prompt"])) == []
        pytest.skip(f"{task.env_id} shows its whole state (nothing is hidden)")
    trajs = _episodes(task)
    assert {t.reward.outcome for t in trajs} >= {"win", "invalid"}
    for traj in trajs:
        hidden = task.hidden_values(task.parse(traj.prompt))
        assert hidden
        for text in _visible(traj):
            for value in hidden:
                assert value not in text, (traj.prompt, value, text)


def test_first_messages_are_the_same_for_every_secret(task):
    """The prompt is a function of the game's rules alone: it cannot carry the secret."""
    if not task.has_secret:
        pytest.skip(f"{task.env_id} shows its whole state (nothing is hidden)")
    rows = [r["prompt"] for r in task.make_dataset("validation", 60, seed=4)]
    instances = [task.parse(r) for r in rows]
    assert len({str(task.secret(task.new_game(i))) for i in instances}) > 5
    assert len({tuple(m.content for m in task.initial_messages(i)) for i in instances}) == 1


def test_guess_the_number_replies_state_no_number(task):
    """GuessTheNumber's replies say only higher/lower (and name player 0): no number in them
    can be the target, whatever the substring list above misses."""
    if task.game != "guess_the_number":
        return
    for traj in _episodes(task):
        for turn in traj.turns:
            for m in turn.tool_messages:
                assert set(re.findall(r"\d+", m.content or "")) <= {"0"}, m.content


def test_no_mastermind_code_is_written_in_the_fixed_texts():
    """The system prompt, the rules and the tool schema hold no code but the rules' own
    format example (which rows never use): checked for every one of the 360 codes."""
    from agentrft_textarena.task import MASTERMIND_EXAMPLE, ArenaInstance, MastermindTask

    task = MastermindTask()
    by_code: dict[str, ArenaInstance] = {}
    for seed in range(20000):
        instance = ArenaInstance(seed=seed)
        by_code.setdefault(str(task.secret(task.new_game(instance))), instance)
        if len(by_code) == 360:
            break
    assert len(by_code) == 360
    fixed = [m.content or "" for m in task.initial_messages(ArenaInstance(seed=0))]
    fixed.append(str(task.environment(ArenaInstance(seed=0)).tool_schemas()))
    for code, instance in by_code.items():
        if code == str(MASTERMIND_EXAMPLE):
            continue
        for value in task.hidden_values(instance):
            assert all(value not in text for text in fixed), (code, value)
