"""The shipped word lists: the managed service's public sample's exact lists.

`data/answers.txt` (1,923 possible answers) and `data/allowed_guesses.txt` (11,072 accepted
guesses, every answer included) are the lists the sample ships, derived from SCOWL
2020.12.07 (license in `data/SCOWL-COPYRIGHT.txt`). Shipping them, rather than a rebuild,
gives the sample's answer distribution, first-guess entropies and dataset splits;
`scripts/build_wordlists.py` rebuilds a list from SCOWL and prints how it differs.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

from agentrft_wordle.feedback import AnswerPool

ANSWERS_FILE = "answers.txt"
ALLOWED_FILE = "allowed_guesses.txt"


def _read(name: str) -> tuple[str, ...]:
    text = files("agentrft_wordle").joinpath("data").joinpath(name).read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


@lru_cache(maxsize=1)
def answer_words() -> tuple[str, ...]:
    """Possible answers, sorted (common words, no inflections, no offensive words)."""
    return _read(ANSWERS_FILE)


@lru_cache(maxsize=1)
def allowed_words() -> tuple[str, ...]:
    """Accepted guesses, sorted; every answer is one of them."""
    return _read(ALLOWED_FILE)


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
