"""A row's custom prompt text must not show its answer, however it is written."""

import json

import pytest
from agentrft_wordle import WordleTask
from agentrft_wordle.task import shows_word

from agentrft import TaskInputError


def row(text: str, answer: str = "beach") -> str:
    return json.dumps({"prompt": text, "answer": answer})


LEAKS = [
    "Guess BEACH",
    "Guess the word: beach.",
    "Guess beach_01",
    "Guess BEACH2024",
    "Row 7:beach:sand",
    "#beach!",
    "Guess ＢＥＡＣＨ",  # full-width letters
    "Guess Ｂｅａｃｈ",
    "Guess béach",  # an accent the reader skips over
    "Guess bea_ch",
    "Guess b-e-a-c-h",
    "Guess B.E.A.C.H.",
    "Guess B E A C H",
    "Guess b e a c h today",
]

CLEAN = [
    "Guess the 5-letter word",
    "Guess the 5-letter word about the seaside",
    "Beaches are nice",  # another word that contains it
    "A breach of the rules",
    "Guess the word; a shore with sand",
    "Guess the word (row beac_7)",
    "b e a c",  # spelled out, but not all of it
]


@pytest.mark.parametrize("text", LEAKS)
def test_a_prompt_that_shows_the_answer_is_refused(task: WordleTask, text: str) -> None:
    assert shows_word(text, "beach")
    with pytest.raises(TaskInputError, match="contains its own answer"):
        task.parse(row(text))


@pytest.mark.parametrize("text", CLEAN)
def test_a_prompt_that_does_not_show_it_is_kept(task: WordleTask, text: str) -> None:
    assert not shows_word(text, "beach")
    assert task.parse(row(text)).prompt == text


def test_a_ligature_is_read_as_its_letters(task: WordleTask) -> None:
    with pytest.raises(TaskInputError, match="contains its own answer"):
        task.parse(row("Make an o\ufb00er", answer="offer"))  # U+FB00 is "ff"


def test_the_default_prompt_is_fine_even_when_the_answer_is_one_of_its_words(
    task: WordleTask,
) -> None:
    assert task.parse(row("Guess the 5-letter word", answer="guess")).answer == "guess"
