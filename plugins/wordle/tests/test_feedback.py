import random

import numpy as np
import pytest
from agentrft_wordle import allowed_words, answer_words, decode, encode, score_guess
from agentrft_wordle.entropy import entropy_of_codes, guess_entropy, pattern_table
from agentrft_wordle.feedback import AnswerPool, letters_array, pattern_matrix


@pytest.mark.parametrize(
    ("guess", "answer", "marks"),
    [
        ("speed", "abide", "XXYXY"),  # wordle.md: one E yellow, the second gray
        ("crane", "crane", "GGGGG"),
        ("eerie", "there", "YXYXG"),  # E green at 5 uses one copy, one E left for the first
        ("geese", "eerie", "XGYXG"),
        ("llama", "hello", "YYXXX"),  # two Ls in both, none in place
        ("sassy", "asset", "YYGXX"),  # third S green, one S left: first S yellow, last gray
        ("lolly", "alloy", "YYGXG"),
        ("abbey", "babel", "YYGGX"),
        ("xxxxx", "crane", "XXXXX"),
    ],
)
def test_repeated_letter_rule(guess: str, answer: str, marks: str) -> None:
    assert score_guess(guess, answer) == marks
    assert score_guess(guess.upper(), answer) == marks


def test_score_guess_rejects_wrong_lengths() -> None:
    with pytest.raises(ValueError, match="5-letter"):
        score_guess("cat", "crane")


def test_codes_round_trip() -> None:
    for code in range(243):
        assert encode(decode(code)) == code
    assert encode("XXXXX") == 0 and encode("GGGGG") == 242


def test_vectorised_feedback_matches_the_scalar_rule() -> None:
    rng = random.Random(7)
    guesses = [*rng.sample(allowed_words(), 300), "speed", "eerie", "sassy", "geese", "mamma"]
    answers = [*rng.sample(answer_words(), 200), "abide", "there", "asset", "eerie", "madam"]
    matrix = pattern_matrix(letters_array(guesses), letters_array(answers), chunk=64)
    pool = AnswerPool(answers)
    for i, g in enumerate(guesses):
        expected = [encode(score_guess(g, a)) for a in answers]
        assert matrix[i].tolist() == expected, g
        assert pool.codes(g).tolist() == expected, g


def test_entropy_table_matches_direct_computation() -> None:
    table = pattern_table()
    assert table.matrix.shape == (len(allowed_words()), len(answer_words()))
    for word in ("crane", "slate", "fuzzy", "eerie"):
        i = table.index(word)
        assert i is not None
        assert table.entropy[i] == pytest.approx(guess_entropy(word))
        assert table.entropy[i] == pytest.approx(entropy_of_codes(table.matrix[i]))
    # A good opener splits the answers far better than a word of rare letters.
    assert guess_entropy("slate") > 5.5 > 3.5 > guess_entropy("fuzzy")
    assert float(np.max(table.entropy)) < np.log2(243)
