"""`wordle_strict`: Wordle without text recovery, for local training. A guess written as
text is not played (the broken call the CPU main job learns to write earns nothing), a real
tool call plays exactly as in `wordle`, and `wordle` keeps the sample's recovery rule."""

from __future__ import annotations

from agentrft_wordle import WordleEnvironment, WordleGame, WordleStrictTask, WordleTask

from agentrft import FailureKind, Message, check_reward_order
from agentrft.plugins import load_plugins

#: The first reply of every after-row episode of the Wordle main job (seed 0): a broken
#: call whose own key, `"guess": "guess"`, the sample's `guess: WORD` rule plays as GUESS.
EXPLOIT = (
    '<tool_call>{"name": "guess_word", "guess": {"guess": "guess": "guess_word", "guess": '
    '"guess": "guess": "guess_word",'
)


def say(text: str) -> Message:
    return Message(role="assistant", content=text)


def test_the_strict_variant_is_found_through_the_plugin_next_to_wordle() -> None:
    classes = load_plugins().task_classes()
    assert classes["wordle_strict"] is WordleStrictTask
    assert classes["wordle"] is WordleTask
    assert WordleTask.text_recovery and not WordleStrictTask.text_recovery


def test_a_strict_environment_recovers_nothing_from_text() -> None:
    env = WordleEnvironment(WordleGame("sight"), text_recovery=False)
    assert env.recover("guess: crane") == []
    assert env.recover(EXPLOIT) == []
    assert WordleEnvironment(WordleGame("sight")).recover("guess: crane")  # the default


async def test_the_main_jobs_exploit_is_paid_by_wordle_and_not_by_wordle_strict(play) -> None:
    sample = await play("sight", [say(EXPLOIT)])
    assert FailureKind.PLAIN_TEXT_CALL in sample.failure_kinds
    assert sample.reward.outcome == "lost" and sample.reward.total > -0.5  # GUESS's bonus

    strict = await play("sight", [say(EXPLOIT)], task_=WordleStrictTask())
    assert FailureKind.PLAIN_TEXT_CALL not in strict.failure_kinds
    assert strict.stop_reason == FailureKind.NO_TOOL_CALL
    assert strict.reward.outcome == "no_play" and strict.reward.total == -1.5


async def test_a_text_guess_after_real_calls_ends_a_strict_game_as_lost(play) -> None:
    traj = await play("sight", ["fight", say("guess: sight")], task_=WordleStrictTask())
    assert traj.reward.outcome == "lost" and traj.reward.components["guesses_used"] == 1
    assert traj.stop_reason == FailureKind.NO_TOOL_CALL
    assert "score.text_recovery" not in traj.reward.components


async def test_tool_calls_play_and_score_exactly_as_in_wordle(play) -> None:
    replies = ["crane", "fight", "sight"]
    sample = await play("sight", replies)
    strict = await play("sight", replies, task_=WordleStrictTask())
    assert strict.reward == sample.reward and strict.reward.outcome == "solved_3"
    assert [m.content for m in strict.messages] == [m.content for m in sample.messages]


def test_rows_and_the_reward_order_are_wordles() -> None:
    strict, sample = WordleStrictTask(), WordleTask()
    assert strict.make_dataset("validation", 4) == sample.make_dataset("validation", 4)
    assert strict.tiers is sample.tiers
    assert check_reward_order(strict.reward_samples()).ok
