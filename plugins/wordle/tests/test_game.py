import pytest
from agentrft_wordle import Knowledge, MalformedGuess, WordleGame
from agentrft_wordle import game as g
from agentrft_wordle.entropy import guess_entropy


def test_reply_format_and_knowledge_block() -> None:
    game = WordleGame("abide")
    assert game.guess("crane") == (
        "Guess 1/6: CRANE -> C=gray, R=gray, A=yellow, N=gray, E=green\n"
        "Current Knowledge:\n"
        "- Correct Position (Green): _ _ _ _ E\n"
        "- In Word, Wrong Position (Yellow): 'A' (at least 1)\n"
        "- Not in Word (Gray): C, N, R\n"
        "- Words Already Guessed: CRANE\n"
        "- Guesses Remaining: 5"
    )
    reply = game.guess("speed")
    assert reply.splitlines()[0] == (
        "Guess 2/6: SPEED -> S=gray, P=gray, E=yellow, E=gray, D=yellow"
    )
    assert "- In Word, Wrong Position (Yellow): 'A' (at least 1), 'D' (at least 1)" in reply
    # E is green somewhere, so its gray second copy does not make it "not in word".
    assert "- Not in Word (Gray): C, N, P, R, S" in reply
    assert reply.endswith("- Words Already Guessed: CRANE, SPEED\n- Guesses Remaining: 4")


def test_knowledge_counts_repeated_letters() -> None:
    k = Knowledge()
    k.update("geese", "XGYXG")  # answer eerie: two Es placed, a third somewhere else
    assert k.greens == [None, "e", None, None, "e"]
    assert k.yellow_letters() == {"e": 1}
    assert k.absent == {"g", "s"}
    summary = k.summary(["geese", "geese"], 4)
    assert "- Correct Position (Green): _ E _ _ E" in summary
    assert "'E' (at least 1)" in summary
    assert "- Words Already Guessed: GEESE\n" in summary  # repeats listed once
    # A yellow later placed as green leaves the yellow list.
    k2 = Knowledge()
    k2.update("crane", "XXYXG")
    k2.update("abide", "GGGGG")
    assert k2.yellow_letters() == {}
    assert "In Word, Wrong Position (Yellow): None" in k2.summary(["crane", "abide"], 4)


def test_solve_text_and_game_end() -> None:
    game = WordleGame("paste")
    for word in ("crane", "bloke", "fight"):
        game.guess(word)
    assert game.guess("PASTE") == "Guess 4/6: PASTE — all green. Correct, you solved it!"
    assert game.solved and game.over and game.guesses_used == 4
    assert game.records[-1].score == {"time": g.TIME}
    with pytest.raises(RuntimeError):
        game.guess("crane")


def test_sixth_miss_reveals_the_word() -> None:
    game = WordleGame("sight")
    replies = [game.guess(w) for w in ("fight", "light", "might", "night", "right", "tight")]
    assert all("SIGHT" not in r for r in replies[:5])
    assert replies[-1] == (
        "Guess 6/6: TIGHT -> T=gray, I=green, G=green, H=green, T=green\n"
        "Game over: no guesses left. The word was SIGHT."
    )
    assert game.over and not game.solved


def test_malformed_input_uses_no_guess_and_is_penalised() -> None:
    game = WordleGame("sight")
    for bad in ("cat", "crane!", "c r a n e", "", "crânes", "12345"):
        with pytest.raises(MalformedGuess, match="did not use up a guess"):
            game.guess(bad)
    assert game.guesses_used == 0 and game.remaining == 6
    assert game.score == pytest.approx(6 * g.MALFORMED)
    assert game.guess("  Fight ").startswith("Guess 1/6: FIGHT")  # case and spaces are fine


def test_repeat_uses_a_guess_and_is_penalised() -> None:
    game = WordleGame("sight")
    game.guess("crane")
    reply = game.guess("crane")
    assert reply.startswith("Guess 2/6: CRANE")
    assert "already guessed" in reply and game.remaining == 4
    assert game.records[-1].kind == "repeat"
    assert game.records[-1].score == {"repeat": g.REPEAT, "time": g.TIME}


def test_out_of_list_word_uses_a_guess_and_is_penalised() -> None:
    game = WordleGame("sight")
    reply = game.guess("qxzvw")
    assert "not in the word list" in reply and game.remaining == 5
    record = game.records[-1]
    assert record.kind == "out_of_list"
    assert record.score["out_of_list"] == g.OUT_OF_LIST
    assert record.score["entropy"] == pytest.approx(g.ENTROPY_WEIGHT * guess_entropy("qxzvw"))


def test_contradictions_are_penalised_per_kind() -> None:
    game = WordleGame("abide")
    game.guess("crane")  # A yellow, E green; C, R, N gray
    # MOUND: drops green E (-30), misses yellow A (-20), reuses gray N (-20).
    game.guess("mound")
    record = game.records[-1]
    assert record.score["violations"] == g.GREEN_NOT_KEPT + g.YELLOW_MISSING + g.GRAY_REUSED
    assert record.violations == ["green E at 5 not kept", "yellow A missing", "gray N reused"]
    # Two distinct gray letters reused count twice; a gray letter used twice counts once.
    game2 = WordleGame("abide")
    game2.guess("crane")
    game2.guess("carne")  # reuses C, R, N; keeps E; includes A
    assert game2.records[-1].score["violations"] == 3 * g.GRAY_REUSED
    game3 = WordleGame("abide")
    game3.guess("crane")
    game3.guess("nanae")  # gray N twice: one violation
    assert game3.records[-1].score["violations"] == g.GRAY_REUSED


def test_clean_play_scores_strategy_terms() -> None:
    game = WordleGame("abide")
    game.guess("crane")
    first = game.records[0].score
    assert first == {
        "base": g.BASE,
        "time": g.TIME,
        "entropy": pytest.approx(7.5 * guess_entropy("crane")),
    }
    game.guess("aside")  # keeps E, includes A (at a new place), no gray letters
    second = game.records[1].score
    assert "violations" not in second
    assert second["stagnation"] == g.GREEN_REUSED  # E re-used in place
    assert second["new_letters"] == 3 * g.NEW_LETTER  # S, I, D are new; A, E are not
    assert 0 < second["reduction"] <= g.REDUCTION_WEIGHT


def test_yellow_reused_at_a_known_wrong_place_is_stagnation() -> None:
    game = WordleGame("abide")
    game.guess("crane")  # A yellow at position 3
    game.guess("slate")  # A again at position 3
    assert game.records[-1].score["stagnation"] == g.GREEN_REUSED + g.YELLOW_REUSED


def test_recovered_guess_costs_extra() -> None:
    game = WordleGame("abide")
    game.guess("crane", recovered=True)
    assert game.records[-1].score["text_recovery"] == g.TEXT_RECOVERY
    with pytest.raises(MalformedGuess):
        game.guess("no", recovered=True)
    assert game.malformed[-1] == {"malformed": g.MALFORMED, "text_recovery": g.TEXT_RECOVERY}


def test_custom_answer_outside_the_list_is_playable() -> None:
    game = WordleGame("zzzzz")
    game.guess("crane")
    assert game.pool.words[-1] == "zzzzz" and game.possible[-1]  # it counts as possible
    assert game.guess("zzzzz").endswith("you solved it!")
    with pytest.raises(ValueError, match="five letters"):
        WordleGame("zzzz")
