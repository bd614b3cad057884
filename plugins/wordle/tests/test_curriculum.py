"""The Wordle curriculum: level k starts the game with the expert's first min(k, n - 1)
guesses played (n: the guess on which the expert solves), in the policy's own format."""

import json
import re

import pytest
from agentrft_wordle import WordleGame, WordleTask
from agentrft_wordle.task import replay_own_turns, split_words

from agentrft import Message, Trajectory, call, check_reward_order, run_episode

VALIDATION = split_words()["validation"][:24]


async def expert_game(task: WordleTask, answer: str, level: int = 0) -> Trajectory:
    return await run_episode(
        task, task.row(answer)["prompt"], task.expert(), curriculum_level=level
    )


def guesses_of(traj: Trajectory) -> list[str]:
    """Every guess of the game, seeded ones included, in order."""
    return [
        json.loads(c.arguments)["guess"]
        for m in traj.messages
        if m.role == "assistant"
        for c in m.tool_calls or []
    ]


def test_the_task_offers_five_levels(task: WordleTask) -> None:
    assert task.curriculum_levels == 5
    with pytest.raises(ValueError, match=r"outside 0\.\.5"):
        task.at_level(task.parse(task.row("riser")["prompt"]), 6)


async def test_level_zero_is_the_task_itself(task: WordleTask) -> None:
    instance = task.parse(task.row("riser", "r0")["prompt"])
    assert task.curriculum(instance, 0) is instance and task.at_level(instance, 0) is instance
    plain = await expert_game(task, "riser")
    level0 = await run_episode(task, task.row("riser")["prompt"], task.expert(), curriculum_level=0)
    assert level0.messages == plain.messages and level0.reward == plain.reward
    assert task.environment(instance).game.guesses_used == 0


async def test_level_k_seeds_the_experts_first_min_k_n_minus_1_guesses(task: WordleTask) -> None:
    for answer in VALIDATION:
        plain = await expert_game(task, answer)
        n = int(plain.reward.components["guesses_used"])
        expert_guesses = guesses_of(plain)
        assert expert_guesses[-1] == answer and len(expert_guesses) == n
        instance = task.parse(task.row(answer)["prompt"])
        for level in range(1, 6):
            seeded = task.at_level(instance, level).seeded
            assert list(seeded) == expert_guesses[: min(level, n - 1)], (answer, level)
            assert answer not in seeded  # the game never starts solved
            assert task.at_level(instance, level) == task.at_level(instance, level)  # determinism


def test_seeded_guesses_are_turns_in_the_policys_own_format(task: WordleTask) -> None:
    instance = task.at_level(task.parse(task.row("riser")["prompt"]), 2)
    assert len(instance.seeded) == 2
    messages = task.initial_messages(instance)
    assert [m.role for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    fresh = WordleGame("riser")
    for i, word in enumerate(instance.seeded, start=1):
        asked, answered = messages[2 * i], messages[2 * i + 1]
        (tool_call,) = asked.tool_calls
        assert asked.content is None and tool_call.id == f"seed_{i}"
        assert tool_call.name == "guess_word" and json.loads(tool_call.arguments) == {"guess": word}
        assert answered.tool_call_id == tool_call.id and answered.name == "guess_word"
        assert answered.content == fresh.guess(word)  # the game's exact reply
    # The environment starts where the messages leave off.
    game = task.environment(instance).game
    assert game.guessed == list(instance.seeded) and game.player_guesses == 0


async def test_tool_call_ids_stay_unique_through_an_episode(task: WordleTask) -> None:
    traj = await expert_game(task, "riser", 3)
    ids = [c.id for m in traj.messages if m.role == "assistant" for c in m.tool_calls or []]
    assert len(ids) == len(set(ids)) == len(guesses_of(traj))
    replied = [m.tool_call_id for m in traj.messages if m.role == "tool"]
    assert replied == ids


async def test_tier_counts_seeded_guesses_and_shaping_only_the_policys(task: WordleTask) -> None:
    for answer in VALIDATION[:8]:
        plain = await expert_game(task, answer)
        n = int(plain.reward.components["guesses_used"])
        for level in range(1, 6):
            traj = await expert_game(task, answer, level)
            k = min(level, n - 1)
            assert traj.reward.outcome == f"solved_{n}", (answer, level)
            assert traj.reward.components["seeded_guesses"] == k
            # The policy's guesses score as they did in the unseeded game (same state),
            # and only they count: game score = the level-0 score minus the seeded terms.
            seeded_terms = WordleGame(answer)
            seeded_terms.seed(guesses_of(plain)[:k])
            own = sum(sum(r.score.values()) for r in seeded_terms.records)
            assert traj.reward.components["game_score"] == pytest.approx(
                plain.reward.components["game_score"] - own, abs=1e-3
            )
            assert traj.tool_calls == n - k


async def test_a_seeded_game_does_not_earn_the_experts_shaping(play, task: WordleTask) -> None:
    instance = task.at_level(task.parse(task.row("riser")["prompt"]), 2)
    assert len(instance.seeded) == 2
    traj = await run_episode(
        task, task.row("riser")["prompt"], replay_own_turns([call("guess_word", {"guess": "riser"})]),
        curriculum_level=2,
    )  # fmt: skip
    assert traj.reward.outcome == "solved_3"
    assert traj.reward.components["game_score"] == -1.0  # the solve's time penalty alone
    assert traj.reward.total == pytest.approx(1.05 + 0.5 * 3 / 5 + 0.04 * (-1.0 / 150))


@pytest.mark.parametrize(
    "replies",
    [["I give up."], [call("guess_word", {"guess": "no"})] * 13, [call("oops", {})] * 13],
    ids=["silence", "malformed", "unknown-tool"],
)
async def test_no_play_when_the_policy_never_plays_a_guess(task: WordleTask, replies) -> None:
    traj = await run_episode(
        task, task.row("riser")["prompt"], replay_own_turns(replies), curriculum_level=3
    )
    assert traj.reward.outcome == "no_play" and traj.reward.total == -1.5


async def test_the_call_cap_counts_only_the_policys_calls(task: WordleTask) -> None:
    # Three seeded guesses, then 11 malformed calls and the solve: 12 policy calls, all
    # within the cap (seeded guesses are not calls).
    replies = [call("guess_word", {"guess": "no"})] * 11 + [call("guess_word", {"guess": "riser"})]
    traj = await run_episode(
        task, task.row("riser")["prompt"], replay_own_turns(replies), curriculum_level=3
    )
    k = len(task.at_level(task.parse(task.row("riser")["prompt"]), 3).seeded)
    assert traj.tool_calls == 12 and traj.reward.outcome == f"solved_{k + 1}"
    # One more malformed call, and the solve is the 13th call: refused.
    late = await run_episode(
        task,
        task.row("riser")["prompt"],
        replay_own_turns([replies[0], *replies]),
        curriculum_level=3,
    )
    assert late.reward.outcome == "no_play" and late.tool_calls == 13


async def test_no_seeded_message_shows_the_answer(
    task: WordleTask, template_vocabulary: set[str]
) -> None:
    checked = 0
    answers = [w for w in split_words()["validation"] if w not in template_vocabulary][:24]
    assert len(answers) == 24
    for answer in answers:
        pattern = re.compile(rf"\b{answer}\b", re.I)
        for level in range(1, 6):
            instance = task.at_level(task.parse(task.row(answer)["prompt"]), level)
            for m in task.initial_messages(instance):
                text = (m.content or "") + "".join(c.arguments for c in m.tool_calls or [])
                assert not pattern.search(text), (answer, level, text)
                checked += 1
            # And the whole game before its last reply, as the policy sees it.
            traj = await expert_game(task, answer, level)
            visible = [m for m in traj.messages if m.role != "assistant"][:-1]
            assert not any(pattern.search(m.content or "") for m in visible), (answer, level)
    assert checked > 400


# -- the row field --------------------------------------------------------------------------
def test_a_row_can_ask_for_seeded_guesses(task: WordleTask) -> None:
    row = task.row("riser", "r1", seed_guesses=2)
    assert json.loads(row["prompt"]) == {
        "prompt": "Guess the 5-letter word",
        "answer": "riser",
        "id": "r1",
        "seed_guesses": 2,
    }
    from_row = task.parse(row["prompt"])
    from_level = task.at_level(task.parse(task.row("riser", "r1")["prompt"]), 2)
    assert from_row == from_level and len(from_row.seeded) == 2
    assert task.initial_messages(from_row) == task.initial_messages(from_level)


async def test_a_seeded_row_plays_seeded_without_a_curriculum(task: WordleTask) -> None:
    rows = task.make_dataset("validation", 4, seed_guesses=1)
    for row in rows:
        traj = await run_episode(task, row["prompt"], task.expert())
        assert traj.reward.components["seeded_guesses"] == 1 and traj.solved
        assert traj.messages[2].tool_calls[0].id == "seed_1"


def test_the_curriculum_keeps_a_rows_larger_head_start(task: WordleTask) -> None:
    instance = task.parse(task.row("riser", seed_guesses=2)["prompt"])
    assert task.curriculum(instance, 1) is instance
    assert task.curriculum(instance, 2) is instance
    assert len(task.curriculum(instance, 5).seeded) >= len(instance.seeded)
    assert task.curriculum(instance, 5).seed_guesses == 5


def test_an_answer_the_expert_does_not_solve_seeds_at_most_five() -> None:
    # ZONKS is in no list: the expert runs out of listed candidates and may not solve it.
    task = WordleTask()
    instance = task.at_level(task.parse(task.row("zonks")["prompt"]), 5)
    assert 1 <= len(instance.seeded) <= 5 and "zonks" not in instance.seeded
    assert not task.environment(instance).game.over


def test_reward_check_passes_with_seeded_games(task: WordleTask) -> None:
    played = task.played_reward_samples()
    labels = {s.label: s for s in played}
    assert labels["no play at curriculum level 2, silence"].tier == "no_play"
    assert labels["lost at curriculum level 2, worst play"].tier == "lost"
    assert all(labels[f"expert at curriculum level {k}"].result.solved for k in range(1, 6))
    report = check_reward_order(task.reward_samples())
    assert report.ok, report.explain()


def test_seeded_messages_are_plain_chat_messages(task: WordleTask) -> None:
    instance = task.at_level(task.parse(task.row("riser")["prompt"]), 1)
    for m in task.initial_messages(instance):
        assert isinstance(m, Message)
        assert "recovered" not in json.dumps(m.to_openai())  # what a server or template sees
