"""The shipped word lists (generated from SCOWL by scripts/build_wordlists.py)."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

from agentrft_wordle.feedback import AnswerPool


def _read(name: str) -> tuple[str, ...]:
    text = files("agentrft_wordle").joinpath("data").joinpath(name).read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


@lru_cache(maxsize=1)
def answer_words() -> tuple[str, ...]:
    """Possible answers, sorted (common words, no inflections, no offensive words)."""
    return _read("answers.txt")


@lru_cache(maxsize=1)
def allowed_words() -> tuple[str, ...]:
    """Accepted guesses, sorted; every answer is one of them."""
    return _read("allowed.txt")


@lru_cache(maxsize=1)
def allowed_set() -> frozenset[str]:
    return frozenset(allowed_words())


@lru_cache(maxsize=1)
def answer_pool() -> AnswerPool:
    """The answer list as an `AnswerPool` (shared by every game in the process)."""
    return AnswerPool(answer_words())


def license_text() -> str:
    """SCOWL's copyright notice, shipped with the lists it covers."""
    return (
        files("agentrft_wordle").joinpath("data").joinpath("SCOWL-COPYRIGHT.txt").read_text("utf-8")
    )
