"""Feedback entropy: how much a guess is expected to reveal about the answer.

The entropy of a guess over a set of equally likely answers is that of the distribution of
feedback patterns it produces. The game uses it to score first guesses; the expert uses the
whole table to choose its guesses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from agentrft_wordle.feedback import N_PATTERNS, letters_array, pattern_matrix
from agentrft_wordle.words import allowed_words, answer_pool, answer_words


def entropy_of_codes(codes: np.ndarray) -> float:
    """Entropy in bits of the feedback codes of one guess over equally likely answers."""
    counts = np.bincount(codes, minlength=N_PATTERNS)
    counts = counts[counts > 0]
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def row_entropies(matrix: np.ndarray, chunk: int = 256) -> np.ndarray:
    """Entropy in bits of every row of a (guesses, answers) pattern matrix.

    With n answers and c of them giving one pattern, H = log2(n) - sum(c log2 c) / n; the
    pattern counts come from one bincount per chunk of rows (int32 offsets keep it small).
    """
    n_rows, n_cols = matrix.shape
    out = np.zeros(n_rows)
    if n_cols == 0:
        return out
    c = np.arange(n_cols + 1, dtype=np.float64)
    c_log_c = c * np.log2(np.maximum(c, 1.0))  # 0 log 0 = 0
    offsets = (np.arange(chunk, dtype=np.int32) * N_PATTERNS)[:, None]
    for start in range(0, n_rows, chunk):
        block = matrix[start : start + chunk]
        flat = (block + offsets[: len(block)]).ravel()
        counts = np.bincount(flat, minlength=len(block) * N_PATTERNS)
        out[start : start + chunk] = c_log_c[counts].reshape(len(block), N_PATTERNS).sum(axis=1)
    return np.log2(n_cols) - out / n_cols


@lru_cache(maxsize=4096)
def guess_entropy(word: str) -> float:
    """Entropy in bits of `word`'s feedback over the full answer list (any 5 letters a-z)."""
    return entropy_of_codes(answer_pool().codes(word.lower()))


@dataclass(frozen=True)
class PatternTable:
    """Every allowed guess against every answer, and each guess's entropy."""

    guesses: tuple[str, ...]
    answers: tuple[str, ...]
    matrix: np.ndarray  # (len(guesses), len(answers)) uint8 feedback codes
    entropy: np.ndarray  # (len(guesses),) bits over all answers

    def index(self, word: str) -> int | None:
        return _guess_index(self.guesses).get(word)


@lru_cache(maxsize=1)
def pattern_table() -> PatternTable:
    """Built once per process (well under a second), then shared."""
    return build_pattern_table()


def build_pattern_table() -> PatternTable:
    guesses, answers = allowed_words(), answer_words()
    matrix = pattern_matrix(letters_array(list(guesses)), letters_array(list(answers)))
    matrix.setflags(write=False)
    return PatternTable(guesses, answers, matrix, row_entropies(matrix))


def entropy_table() -> dict[str, float]:
    """Each allowed guess's feedback entropy (bits) over the answer list."""
    table = pattern_table()
    return dict(zip(table.guesses, table.entropy.tolist(), strict=True))


@lru_cache(maxsize=4)
def _guess_index(guesses: tuple[str, ...]) -> dict[str, int]:
    return {w: i for i, w in enumerate(guesses)}
