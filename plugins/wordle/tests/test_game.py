"""The game, rule for rule (wordle.md, "The sample's rules, exactly"): each score term and
each reply kind, with cases worked out by hand from the rules."""

import math
from collections import Counter

import pytest
from agentrft_wordle import Knowledge, MalformedGuess, WordleGame, answer_words
from agentrft_wordle import game as g
from agentrft_wordle.feedback import AnswerPool, score_guess


def block(green: str, yellow: str, gray: str, words: str, remaining: int) -> str:
    return (
        "Current Knowledge:\n"
        f"- Correct Position (Green): {green}\n"
        f"- In Word, Wrong Position (Yellow): {yellow}\n"
        f"- Not in Word (Gray): {gray}\n"
        f"- Words Already Guessed: {words}\n"
        f"- Guesses Remaining: {remaining}"
    )


def entropy_by_hand(word: str) -> float:
    """Feedback entropy in bits over the answer list, straight from the definition."""
    counts = Counter(score_guess(word, a) for a in answer_words())
    n = sum(counts.values())
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def admitted_by_hand(history: list[tuple[str, str]], words: list[str]) -> list[str]:
    """The knowledge filter written out from the sample's rules, independently of
    `Knowledge`: yellow minimums leave out letters with a known green, yellow spots do not."""
    greens: dict[int, str] = {}
    minimum: dict[str, int] = {}
    spots: dict[str, set[int]] = {}
    gray: set[str] = set()
    for word, marks in history:
        per_guess = Counter(c for c, m in zip(word, marks, strict=True) if m in "GY")
        for i, (c, m) in enumerate(zip(word, marks, strict=True)):
            if m == "G":
                greens[i] = c
            elif m == "Y":
                spots.setdefault(c, set()).add(i)
        for c, n in per_guess.items():
            minimum[c] = max(minimum.get(c, 0), n)
        gray |= {c for c, m in zip(word, marks, strict=True) if m == "X" and c not in minimum}
    yellow = {c: n for c, n in minimum.items() if c not in greens.values()}
    return [
        w
        for w in words
        if all(w[i] == c for i, c in greens.items())
        and not set(w) & gray
        and all(w.count(c) >= n for c, n in yellow.items())
        and all(w[i] != c for c in spots for i in spots[c])
    ]


# -- replies --------------------------------------------------------------------------------
def test_reply_is_the_marks_line_and_the_knowledge_block() -> None:
    game = WordleGame("abide")
    assert game.guess("crane") == (
        "Guess 1/6: CRANE -> C=gray, R=gray, A=yellow, N=gray, E=green\n"
        + block("_ _ _ _ E", "'A' (at least 1)", "C, N, R", "CRANE", 5)
    )
    # SPEED: E yellow then E gray (one E left for it), D yellow. E has a green, so it is on
    # neither the Yellow line nor the Gray line; the surplus copy does not make it gray.
    assert game.guess("speed") == (
        "Guess 2/6: SPEED -> S=gray, P=gray, E=yellow, E=gray, D=yellow\n"
        + block(
            "_ _ _ _ E", "'A' (at least 1), 'D' (at least 1)", "C, N, P, R, S", "CRANE, SPEED", 4
        )
    )


def test_yellow_line_leaves_out_a_letter_with_a_green() -> None:
    # TERSE against ENSUE: E yellow at 2 and green at 5, S yellow. Only S is on the line.
    assert WordleGame("ensue").guess("terse") == (
        "Guess 1/6: TERSE -> T=gray, E=yellow, R=gray, S=yellow, E=green\n"
        + block("_ _ _ _ E", "'S' (at least 1)", "R, T", "TERSE", 5)
    )


def test_yellow_line_shows_the_yellow_minimum() -> None:
    # STEEL against EERIE: both Es yellow, no E placed: at least 2.
    reply = WordleGame("eerie").guess("steel")
    assert reply.splitlines()[0] == "Guess 1/6: STEEL -> S=gray, T=gray, E=yellow, E=yellow, L=gray"
    assert "- In Word, Wrong Position (Yellow): 'E' (at least 2)\n" in reply


def test_solve_reply_and_the_game_end() -> None:
    game = WordleGame("paste")
    for word in ("crane", "bloke", "fight"):
        game.guess(word)
    assert game.guess("PASTE") == "Guess 4/6: PASTE — all green. Correct, you solved it!"
    assert game.solved and game.over and game.guesses_used == 4
    assert game.records[-1].score == {"time": g.TIME}
    with pytest.raises(RuntimeError):
        game.guess("crane")


def test_sixth_miss_keeps_the_block_then_reveals_the_word() -> None:
    game = WordleGame("sight")
    replies = [game.guess(w) for w in ("fight", "light", "might", "night", "right", "tight")]
    assert all("SIGHT" not in r for r in replies[:5])
    # TIGHT's first T is gray (the answer's only T is matched by the green), but T is known.
    assert replies[-1] == (
        "Guess 6/6: TIGHT -> T=gray, I=green, G=green, H=green, T=green\n"
        + block("_ I G H T", "None", "F, L, M, N, R", "FIGHT, LIGHT, MIGHT, NIGHT, RIGHT, TIGHT", 0)
        + "\nGame over: no guesses left. The word was 'SIGHT'."
    )
    assert game.over and not game.solved


def test_repeat_reply_names_the_word_and_lists_it_again() -> None:
    game = WordleGame("abide")
    game.guess("crane")
    assert game.guess("crane") == (
        "You already guessed CRANE: the repeat used up guess 2/6 and was penalised.\n"
        + block("_ _ _ _ E", "'A' (at least 1)", "C, N, R", "CRANE, CRANE", 4)
    )
    assert game.remaining == 4 and game.records[-1].kind == "repeat"


def test_a_repeat_as_the_sixth_guess_also_reveals_the_word() -> None:
    game = WordleGame("sight")
    for w in ("fight", "light", "might", "night", "right"):
        game.guess(w)
    reply = game.guess("right")
    assert reply.startswith("You already guessed RIGHT: the repeat used up guess 6/6")
    assert reply.endswith(
        "- Guesses Remaining: 0\nGame over: no guesses left. The word was 'SIGHT'."
    )


def test_out_of_list_word_gets_an_ordinary_reply() -> None:
    game = WordleGame("sight")
    assert game.guess("qxzvw") == (
        "Guess 1/6: QXZVW -> Q=gray, X=gray, Z=gray, V=gray, W=gray\n"
        + block("_ _ _ _ _", "None", "Q, V, W, X, Z", "QXZVW", 5)
    )
    assert game.records[-1].kind == "out_of_list" and game.remaining == 5


def test_malformed_input_is_an_error_that_uses_no_guess() -> None:
    game = WordleGame("sight")
    for bad in ("cat", "crane!", "c r a n e", "", "crânes", "crâne", "12345"):
        with pytest.raises(MalformedGuess, match=r"did not use up a guess \(6 remaining\)"):
            game.guess(bad)
    assert game.guesses_used == 0 and game.remaining == 6
    assert game.score == pytest.approx(7 * g.MALFORMED)
    assert game.guess("  Fight ").startswith("Guess 1/6: FIGHT")  # case and spaces are fine


# -- knowledge ------------------------------------------------------------------------------
def test_knowledge_keeps_the_yellow_minimum_and_yellow_spots() -> None:
    k = Knowledge()
    k.update("steel", "XXYYX")  # against EERIE
    assert k.min_count == {"e": 2} and k.wrong_positions == {"e": {2, 3}}
    assert k.absent == {"s", "t", "l"}
    assert k.yellow_letters() == {"e": 2} and k.yellow_spots() == [("e", 2), ("e", 3)]
    k.update("eerie", "GGGGG")
    # E placed: out of the yellow minimum, but its yellow spots stay (the sample's filter)
    assert k.yellow_letters() == {} and k.yellow_spots() == [("e", 2), ("e", 3)]


def test_knowledge_filter_exempts_a_green_letter_from_its_minimum_not_its_spots() -> None:
    k = Knowledge()
    k.update("terse", "XYXYG")  # against ENSUE: E green at 5 (and yellow at 2), S yellow at 4
    words = ["ensue", "seine", "since", "geese", "terse", "house"]
    admitted = [w for w, ok in zip(words, k.admits(AnswerPool(words)), strict=True) if ok]
    # SINCE has only one E (E's minimum is 2) and passes: E has a green, so its minimum
    # goes. SEINE has E on E's yellow spot and fails: yellow spots stay for a green letter.
    # GEESE and HOUSE put S on its yellow spot; TERSE has gray T and R.
    assert admitted == ["ensue", "since"]
    assert admitted == admitted_by_hand([("terse", "XYXYG")], words)


# -- score terms ----------------------------------------------------------------------------
def test_first_guess_scores_base_time_and_entropy() -> None:
    game = WordleGame("abide")
    game.guess("crane")
    assert game.records[0].score == {
        "base": 15.0,
        "time": -1.0,
        "entropy": pytest.approx(7.5 * entropy_by_hand("crane")),
    }


def test_first_guess_outside_the_list_earns_no_entropy() -> None:
    game = WordleGame("abide")
    game.guess("crnae")  # a nonsense opener of good letters
    assert game.records[0].score == {"base": 15.0, "time": -1.0, "out_of_list": -35.0}
    assert game.score == -21.0


def test_new_letters_and_stagnation_per_distinct_yellow_letter_anywhere() -> None:
    game = WordleGame("abide")
    game.guess("crane")  # A yellow at 3, E green at 5; C, R, N gray
    game.guess("aside")  # A moved to 1, E kept
    terms = game.records[1].score
    assert "violations" not in terms
    assert terms["stagnation"] == -3.0 - 1.5  # green E in place, yellow A (even elsewhere)
    assert terms["new_letters"] == 3 * 2.0  # S, I, D
    # A yellow letter used twice counts once; a green not kept is not stagnation.
    game2 = WordleGame("abide")
    game2.guess("crane")
    game2.guess("pasta")
    assert game2.records[1].score["stagnation"] == -1.5
    assert game2.records[1].score["violations"] == -30.0  # green E not kept


def test_violations_per_green_yellow_and_gray() -> None:
    game = WordleGame("abide")
    game.guess("crane")
    game.guess("mound")  # drops green E, misses yellow A, reuses gray N
    record = game.records[-1]
    assert record.score["violations"] == -30.0 - 20.0 - 20.0
    assert record.violations == ["green E at 5 not kept", "yellow A missing", "gray N reused"]
    # Distinct gray letters: CARNE reuses C, R, N (3); NANAE reuses N twice (1).
    for word, expected in (("carne", -60.0), ("nanae", -20.0)):
        other = WordleGame("abide")
        other.guess("crane")
        other.guess(word)
        assert other.records[-1].score["violations"] == expected, word


def test_yellow_violation_counts_copies_below_the_yellow_minimum() -> None:
    game = WordleGame("eerie")
    game.guess("steel")  # E yellow twice: at least two Es
    game.guess("urine")  # one E: short of the minimum
    record = game.records[-1]
    assert record.violations == ["yellow E used 1 of at least 2 times"]
    assert record.score["violations"] == -20.0
    assert record.score["stagnation"] == -1.5  # E is a known yellow letter
    assert record.score["new_letters"] == 4 * 2.0  # U, R, I, N
    enough = WordleGame("eerie")
    enough.guess("steel")
    enough.guess("where")  # two Es
    assert "violations" not in enough.records[-1].score


def test_a_letter_with_a_green_is_exempt_from_the_yellow_rules() -> None:
    game = WordleGame("ensue")
    game.guess("terse")  # E: yellow and green in one guess (minimum 2), but E has a green
    game.guess("house")  # one E (at its green), S kept: no violation
    terms = game.records[-1].score
    assert "violations" not in terms
    assert terms["stagnation"] == -3.0 - 1.5  # green E in place; S is the only yellow letter
    assert terms["new_letters"] == 3 * 2.0  # H, O, U


def test_reduction_counts_answers_the_knowledge_filter_admits() -> None:
    pool = AnswerPool(["abide", "deice", "aided", "bride", "elide", "oxide"])
    game = WordleGame("abide", pool=pool)
    game.guess("speed")  # XXYXY: E at least once, not 3rd; D at least once, not 5th; no S, P
    assert "reduction" not in game.records[0].score  # from guess 2 only
    # AIDED has D on its yellow spot; DEICE passes although its two Es contradict SPEED's
    # exact feedback (the filter only asks for "at least one E").
    assert game.candidates == 5
    game.guess("bride")  # YXGGG: _ _ I D E, B not 1st, no R: only ABIDE is left
    assert game.candidates == 1
    assert game.records[1].score["reduction"] == 15.0 * (5 - 1) / 5


def test_a_yellow_spot_still_counts_once_the_letter_has_a_green() -> None:
    """ENSUE after TERSE: E is yellow on spot 2 and green on spot 5. The sample's filter
    keeps E's yellow spot (its minimum goes with the green): SEIZE, with an E on spot 2, is
    no longer a candidate."""
    game = WordleGame("ensue")
    game.guess("terse")
    admitted = admitted_by_hand([("terse", score_guess("terse", "ensue"))], list(answer_words()))
    assert "seize" in answer_words() and "seize" not in admitted
    assert game.candidates == len(admitted) == 43


def test_reduction_agrees_with_the_samples_rules_on_repeated_letter_games() -> None:
    """300 seeded games, half of them with an answer that repeats a letter and half of the
    guesses words that repeat one (where the two readings of the rules part): every
    reduction term equals the one the sample's filter gives (it differed on 59 guesses
    before the yellow spots of green letters were kept)."""
    import random

    words = list(answer_words())
    repeats = [w for w in words if len(set(w)) < 5]
    rng = random.Random(1)
    checked = 0
    for n in range(300):
        answer = rng.choice(repeats if n % 2 else words)
        game = WordleGame(answer)
        history: list[tuple[str, str]] = []
        before = 0
        for _ in range(6):
            word = rng.choice(repeats if rng.random() < 0.5 else words)
            if word == answer or word in game.guessed:
                continue
            game.guess(word)
            history.append((word, score_guess(word, answer)))
            after = len(admitted_by_hand(history, words))
            if len(history) > 1 and before:
                expected = 15 * (before - after) / before
                assert game.records[-1].score["reduction"] == pytest.approx(expected), (
                    answer,
                    history,
                )
                checked += 1
            before = after
    assert checked > 1000


def test_reduction_over_the_full_answer_list_matches_the_rules() -> None:
    history: list[tuple[str, str]] = []
    game = WordleGame("ensue")
    before = len(answer_words())
    for word in ("terse", "house", "sense"):
        game.guess(word)
        history.append((word, score_guess(word, "ensue")))
        after = len(admitted_by_hand(history, list(answer_words())))
        assert game.candidates == after, word
        if len(history) > 1:
            assert game.records[-1].score["reduction"] == pytest.approx(
                15 * (before - after) / before
            )
        before = after


def test_an_answer_outside_the_list_is_not_a_candidate() -> None:
    game = WordleGame("zzzzz")
    assert game.pool.words == answer_words() and "zzzzz" not in game.pool.words
    game.guess("crane")  # all gray: candidates are the answers without C, R, A, N, E
    expected = [w for w in answer_words() if not set(w) & set("crane")]
    assert game.candidates == len(expected)
    assert game.guess("zzzzz").endswith("you solved it!")
    with pytest.raises(ValueError, match="five letters"):
        WordleGame("zzzz")


def test_repeat_solve_and_text_recovery_terms() -> None:
    game = WordleGame("abide")
    game.guess("crane", recovered=True)
    assert game.records[-1].score["text_recovery"] == -5.0
    game.guess("crane")
    assert game.records[-1].score == {"repeat": -40.0, "time": -1.0}
    with pytest.raises(MalformedGuess):
        game.guess("no", recovered=True)
    assert game.malformed[-1] == {"malformed": -50.0, "text_recovery": -5.0}
    game.guess("abide")
    assert game.records[-1].score == {"time": -1.0}


# -- seeded guesses -------------------------------------------------------------------------
def test_seeded_guesses_count_toward_the_guess_number_not_the_score() -> None:
    game = WordleGame("abide")
    replies = game.seed(["crane", "speed"])
    assert replies[1].startswith("Guess 2/6: SPEED")
    assert game.guesses_used == 2 and game.player_guesses == 0 and game.score == 0
    game.guess("abide")
    assert game.guesses_used == 3 and game.player_guesses == 1
    assert game.score == -1.0  # the solve's time penalty: nothing from the seeded guesses


def test_seeding_never_ends_the_game() -> None:
    with pytest.raises(ValueError, match="would end the game"):
        WordleGame("abide").seed(["crane", "abide"])
    with pytest.raises(ValueError, match="would end the game"):
        WordleGame("sight").seed(["fight", "light", "might", "night", "right", "tight"])
    game = WordleGame("sight")
    game.guess("fight")
    with pytest.raises(RuntimeError, match="before the game starts"):
        game.seed(["light"])
