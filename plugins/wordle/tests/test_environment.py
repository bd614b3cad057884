import json

import pytest
from agentrft_wordle import WordleEnvironment, WordleGame, recover_guess
from agentrft_wordle import game as g

from agentrft import FailureKind, Message, call


def say(text: str) -> Message:
    return Message(role="assistant", content=text)


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ('guess_word("CRANE")', "CRANE"),
        ("guess_word('slate')", "slate"),
        ('guess_word(guess="crane")', "crane"),
        ("I will go with guess: CRANE", "CRANE"),
        ("Guess: **crane**", "crane"),
        ('{"name": "guess_word", "arguments": {"guess": "CRANE"}}', "CRANE"),
        ("guess=CRANE", "CRANE"),
        ("<function=guess_word>__parameter=guess>CRANE</parameter></function>", "CRANE"),
        ("__parameter=guess>crane<", "crane"),
        # The last guess written wins: reasoning mentions candidates before the answer.
        ('Maybe guess: SLATE, but guess_word("CRANE") is better.', "CRANE"),
        ('guess_word("CRAN")', "CRAN"),  # explicit syntax: a malformed guess, still played
    ],
)
def test_recovery_patterns(text: str, word: str) -> None:
    assert recover_guess(text) == word


@pytest.mark.parametrize(
    "text",
    ["I think the answer has an E in it.", "My guess: it is a noun", "guess: cranes", ""],
)
def test_prose_is_not_a_guess(text: str) -> None:
    assert recover_guess(text) is None


def test_recover_returns_one_flagged_call() -> None:
    env = WordleEnvironment(WordleGame("sight"))
    (c,) = env.recover("guess: crane")
    assert c.name == "guess_word" and c.recovered
    assert json.loads(c.arguments) == {"guess": "crane"}
    assert env.recover("nothing here") == []


async def test_text_guesses_are_played_with_the_extra_penalty(play) -> None:
    traj = await play("sight", [say('guess_word("FIGHT")'), say("I'll go with guess: sight")])
    assert traj.solved and traj.reward.outcome == "solved_2"
    assert traj.failure_kinds.count(FailureKind.PLAIN_TEXT_CALL) == 2
    assert traj.reward.components["score.text_recovery"] == 2 * g.TEXT_RECOVERY
    # The result of a recovered call goes back as a user message (there is no call id).
    assert traj.messages[-1].role == "user"
    assert traj.messages[-1].content.endswith("you solved it!")


async def test_malformed_call_is_an_error_reply_that_uses_no_guess(play) -> None:
    traj = await play("sight", ["cat", "fight", "sight"])
    first_reply = traj.messages[3]
    assert first_reply.role == "tool" and first_reply.content.startswith("Error:")
    assert "did not use up a guess (6 remaining)" in first_reply.content
    assert traj.reward.outcome == "solved_2"
    assert "malformed" in traj.failure_kinds
    assert traj.reward.components["score.malformed"] == g.MALFORMED


async def test_bad_tool_json_counts_as_malformed(play) -> None:
    traj = await play(
        "sight", [call("guess_word", "{oops"), call("guess_wrd", {"guess": "x"}), "sight"]
    )
    assert traj.reward.outcome == "solved_1"
    assert traj.reward.components["score.malformed"] == 2 * g.MALFORMED
    assert FailureKind.MALFORMED_TOOL_JSON in traj.failure_kinds
    assert FailureKind.UNKNOWN_TOOL in traj.failure_kinds


async def test_repeat_out_of_list_and_contradiction_are_noted(play) -> None:
    traj = await play("abide", ["crane", "crane", "qxzvw", "mound", "abide"])
    kinds = traj.failure_kinds
    assert kinds.count("repeat") == 1
    assert kinds.count("out_of_list") == 1
    assert kinds.count("contradiction") == 2  # QXZVW and MOUND ignore the green E, yellow A
    assert traj.reward.outcome == "solved_5"


async def test_more_than_twelve_tool_calls_ends_the_game(play) -> None:
    traj = await play("sight", ["no"] * 20)
    assert traj.tool_calls == 12
    assert traj.stop_reason == FailureKind.MAX_TOOL_CALLS
    assert traj.reward.outcome == "no_play" and traj.reward.total == -1.5


async def test_several_calls_in_one_reply_stop_at_the_solve(play) -> None:
    traj = await play(
        "sight", [[call("guess_word", {"guess": w}) for w in ("fight", "sight", "light")]]
    )
    assert traj.reward.outcome == "solved_2" and traj.tool_calls == 2
    assert traj.stop_reason == "done"


async def test_text_reply_without_a_guess_ends_the_episode(play) -> None:
    traj = await play("sight", ["fight", say("I am not sure what to do.")])
    assert traj.stop_reason == FailureKind.NO_TOOL_CALL
    assert traj.reward.outcome == "lost"
