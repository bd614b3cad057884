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
        ('guess_word("CRANE")', "crane"),
        ("guess_word('slate')", "slate"),
        ('guess_word(guess="crane")', "crane"),
        ("I will go with guess: CRANE", "crane"),
        ("Guess: **crane**", "crane"),
        ('{"name": "guess_word", "arguments": {"guess": "CRANE"}}', "crane"),
        ("guess=CRANE", "crane"),
        ("<function=guess_word>__parameter=guess>CRANE</parameter></function>", "crane"),
        ("__parameter=guess>crane<", "crane"),
        # The last guess written wins: reasoning mentions candidates before the answer.
        ('Maybe guess: SLATE, but guess_word("CRANE") is better.', "crane"),
        # A word of the wrong length is ignored (never cut to five letters): the one before.
        ('guess: SLATE. Or rather guess_word("cranes")', "slate"),
    ],
)
def test_recovery_patterns(text: str, word: str) -> None:
    assert recover_guess(text) == word


@pytest.mark.parametrize(
    "text",
    [
        "I think the answer has an E in it.",
        "My guess: it is a noun",
        "guess: cranes",
        'guess_word("cranes")',
        'guess_word("CRAN")',
        '{"guess": "cranes"}',
        "__parameter=guess>cran<",
        'guess_word("crâne")',
        "",
    ],
)
def test_text_without_a_five_letter_guess_is_not_a_guess(text: str) -> None:
    assert recover_guess(text) is None


def test_a_recovered_repeat_is_skipped() -> None:
    assert recover_guess('guess_word("crane")', {"crane"}) is None
    assert recover_guess('guess: SLATE, no: guess_word("crane")', {"crane"}) == "slate"
    env = WordleEnvironment(WordleGame("sight"))
    env.game.guess("crane")
    assert env.recover('guess_word("CRANE")') == []


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


async def test_a_recovered_repeat_is_not_played_or_penalised(play) -> None:
    traj = await play("sight", ["fight", say('guess_word("FIGHT")')])
    assert traj.reward.outcome == "lost" and traj.reward.components["guesses_used"] == 1
    assert "score.repeat" not in traj.reward.components
    assert FailureKind.PLAIN_TEXT_CALL not in traj.failure_kinds
    assert traj.stop_reason == FailureKind.NO_TOOL_CALL


async def test_a_wrong_length_text_guess_is_not_a_malformed_guess(play) -> None:
    traj = await play("sight", [say('guess_word("sights")')])
    assert traj.reward.outcome == "no_play"
    assert "score.malformed" not in traj.reward.components
    assert traj.stop_reason == FailureKind.NO_TOOL_CALL


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


async def test_a_call_past_twelve_gets_a_game_over_reply(play) -> None:
    traj = await play("sight", ["no"] * 20)
    assert traj.tool_calls == 13  # the 13th reached the game only to be told it is over
    last = traj.messages[-1]
    assert last.role == "tool" and last.content == g.CALL_LIMIT_REPLY
    assert "12 tool calls" in last.content
    assert traj.failure_kinds.count(FailureKind.MAX_TOOL_CALLS) == 1
    assert traj.stop_reason == "done"
    assert traj.reward.outcome == "no_play" and traj.reward.total == -1.5
    assert traj.reward.components["score.malformed"] == 12 * g.MALFORMED


async def test_tool_call_faults_count_toward_the_cap(play) -> None:
    traj = await play("sight", [call("guess_word", "{oops")] * 12 + ["sight"])
    assert traj.messages[-1].content == g.CALL_LIMIT_REPLY  # the 13th call, SIGHT, is refused
    assert traj.reward.outcome == "no_play"
    assert traj.reward.components["score.malformed"] == 12 * g.MALFORMED


async def test_a_call_after_the_game_ended_gets_a_game_over_reply() -> None:
    env = WordleEnvironment(WordleGame("sight"))
    solved = await env.call_tool(call("guess_word", {"guess": "sight"}, id="c1"))
    assert solved.content.endswith("you solved it!") and env.done
    after = await env.call_tool(call("guess_word", {"guess": "fight"}, id="c2"))
    assert after.content == g.GAME_OVER_REPLY and after.failure == "game_over"
    assert env.game.guesses_used == 1


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
