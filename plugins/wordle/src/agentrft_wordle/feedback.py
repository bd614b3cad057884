"""Wordle feedback: the per-letter marks for a guess, scalar and vectorised.

A feedback pattern is five marks, `G` (green: right place), `Y` (yellow: in the word
elsewhere) and `X` (gray). The vectorised form encodes a pattern as one integer in
0..242, mark i contributing `state * 3**i` with gray=0, yellow=1, green=2.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import cached_property

import numpy as np

GREEN, YELLOW, GRAY = "G", "Y", "X"
ALL_GREEN = GREEN * 5
#: Number of distinct patterns (3**5).
N_PATTERNS = 243
_STATE = {GRAY: 0, YELLOW: 1, GREEN: 2}
_MARK = {v: k for k, v in _STATE.items()}
_POW3 = np.array([1, 3, 9, 27, 81], dtype=np.uint8)
# Row offsets of `AnswerPool._table`'s blocks.
_NOT_AT, _AT_LEAST, _LACKING = 130, 260, 416


def _index(letter: str) -> int:
    return ord(letter) - ord("a")


def score_guess(guess: str, answer: str) -> str:
    """The feedback for `guess` against `answer`: five characters from G, Y, X.

    Repeated letters follow the standard rule: greens are marked first, then yellows left
    to right only while the answer still has unmatched copies of that letter.

    >>> score_guess("speed", "abide")
    'XXYXY'
    """
    guess, answer = guess.lower(), answer.lower()
    if len(guess) != 5 or len(answer) != 5:
        raise ValueError(f"score_guess needs two 5-letter words, got {guess!r} and {answer!r}")
    marks = [GRAY] * 5
    unmatched: Counter[str] = Counter()
    for i, (g, a) in enumerate(zip(guess, answer, strict=True)):
        if g == a:
            marks[i] = GREEN
        else:
            unmatched[a] += 1
    for i, g in enumerate(guess):
        if marks[i] != GREEN and unmatched[g] > 0:
            marks[i] = YELLOW
            unmatched[g] -= 1
    return "".join(marks)


def encode(feedback: str) -> int:
    """The integer code (0..242) of a feedback string such as "XXYXY"."""
    return sum(_STATE[m] * 3**i for i, m in enumerate(feedback))


def decode(code: int) -> str:
    """The feedback string of an integer code."""
    marks = []
    for _ in range(5):
        code, state = divmod(code, 3)
        marks.append(_MARK[state])
    return "".join(marks)


def letters_array(words: list[str]) -> np.ndarray:
    """Words as a (n, 5) uint8 array of letter indices 0..25."""
    if not words:
        return np.zeros((0, 5), dtype=np.uint8)
    raw = np.frombuffer("".join(words).encode("ascii"), dtype=np.uint8).reshape(len(words), 5)
    return raw - ord("a")


def letter_counts(words: np.ndarray) -> np.ndarray:
    """(n, 26) uint8: how many times each letter occurs in each word."""
    counts = np.zeros((len(words), 26), dtype=np.uint8)
    np.add.at(counts, (np.repeat(np.arange(len(words)), 5), words.ravel()), 1)
    return counts


def pattern_matrix(guesses: np.ndarray, answers: np.ndarray, chunk: int = 256) -> np.ndarray:
    """Feedback codes of every guess against every answer: a (n_guesses, n_answers) uint8.

    Same rule as `score_guess`, vectorised: position i of the guess is yellow when it is
    not green and the answer's copies of that letter not matched by a green outnumber the
    non-green copies earlier in the guess (those take the yellows first, left to right).
    Guesses with five distinct letters (about two thirds) take a shortcut: a non-green
    letter is yellow exactly when the answer contains it. Chunks keep the (chunk,
    n_answers) intermediates in cache.
    """
    counts_t = np.ascontiguousarray(letter_counts(answers).T)  # (26, n_answers)
    present_t = counts_t > 0
    out = np.empty((len(guesses), len(answers)), dtype=np.uint8)
    ordered = np.sort(guesses, axis=1)
    distinct = (ordered[:, 1:] != ordered[:, :-1]).all(axis=1)
    for repeated, group in ((False, np.flatnonzero(distinct)), (True, np.flatnonzero(~distinct))):
        for start in range(0, len(group), chunk):
            rows = group[start : start + chunk]
            out[rows] = _pattern_block(guesses[rows], answers, counts_t, present_t, repeated)
    return out


def _pattern_block(
    g: np.ndarray, answers: np.ndarray, counts_t: np.ndarray, present_t: np.ndarray, repeated: bool
) -> np.ndarray:
    green = [g[:, i, None] == answers[None, :, i] for i in range(5)]  # 5 x (chunk, n_answers)
    codes = np.zeros((len(g), len(answers)), dtype=np.uint8)
    for i in range(5):
        codes += green[i] * np.uint8(2 * _POW3[i])
    if not repeated:
        for i in range(5):
            codes += (~green[i] & present_t[g[:, i]]) * _POW3[i]
        return codes
    for i in range(5):
        same = [(g[:, k] == g[:, i])[:, None] for k in range(5)]
        available = counts_t[g[:, i]]  # copies of this letter in each answer...
        for k in range(5):
            available = available - (green[k] & same[k])  # ...not matched by a green
        claimed = np.zeros_like(available)
        for k in range(i):
            claimed += ~green[k] & same[k]  # earlier non-green copies take yellows first
        codes += (~green[i] & (available > claimed)) * _POW3[i]
    return codes


class AnswerPool:
    """A fixed list of possible answers with fast feedback codes for one guess at a time.

    `codes(guess)` is what the game calls after every guess (to count the answers still
    possible); it uses per-answer letter counts, so a guess costs a handful of vector ops
    over the pool, and the most recent rows are memoised.
    """

    def __init__(self, words: list[str] | tuple[str, ...], cache_size: int = 4096) -> None:
        self.words = tuple(words)
        self.letters = letters_array(list(self.words))
        self.counts = letter_counts(self.letters)
        self._cache: dict[str, np.ndarray] = {}
        self._cache_size = cache_size

    def __len__(self) -> int:
        return len(self.words)

    def admitting(
        self,
        at: Iterable[tuple[int, str]] = (),
        not_at: Iterable[tuple[int, str]] = (),
        at_least: Iterable[tuple[str, int]] = (),
        lacking: Iterable[str] = (),
    ) -> np.ndarray:
        """Which words have letter c at position p for every (p, c) in `at`, not at p for
        every pair in `not_at`, at least n copies of c for every (c, n) in `at_least`, and
        no c of `lacking`: one gather and one reduction over a precomputed table."""
        rows = [p * 26 + _index(c) for p, c in at]
        rows += [_NOT_AT + p * 26 + _index(c) for p, c in not_at]
        rows += [_AT_LEAST + _index(c) * 6 + min(n, 5) for c, n in at_least]
        rows += [_LACKING + _index(c) for c in lacking]
        if not rows:
            return np.ones(len(self.words), dtype=bool)
        return np.logical_and.reduce(self._table[rows], axis=0)

    @cached_property
    def _table(self) -> np.ndarray:
        """(442, n) bool: letter c at p (130 rows), not at p (130), at least k copies of c
        for k = 0..5 (156), no c (26)."""
        n = len(self.words)
        by_position = np.zeros((5, 26, n), dtype=bool)
        for p in range(5):
            by_position[p, self.letters[:, p], np.arange(n)] = True
        is_at = by_position.reshape(130, n)
        at_least = self.counts.T[:, None, :] >= np.arange(6, dtype=np.uint8)[None, :, None]
        return np.ascontiguousarray(
            np.vstack([is_at, ~is_at, at_least.reshape(156, n), self.counts.T == 0])
        )

    def codes(self, guess: str) -> np.ndarray:
        """Feedback codes (0..242) of `guess` against every word of the pool (read-only)."""
        guess = guess.lower()
        row = self._cache.get(guess)
        if row is None:
            row = self._compute(guess)
            row.setflags(write=False)
            if len(self._cache) >= self._cache_size:
                self._cache.pop(next(iter(self._cache)))  # oldest first: dicts keep order
            self._cache[guess] = row
        return row

    def _compute(self, guess: str) -> np.ndarray:
        g = letters_array([guess])[0]
        green = self.letters == g  # (n, 5)
        codes = (green * (_POW3 * np.uint8(2))).sum(axis=1, dtype=np.uint8)
        positions: dict[int, list[int]] = {}
        for p, letter in enumerate(g.tolist()):
            positions.setdefault(letter, []).append(p)
        for letter, ps in positions.items():
            if len(ps) == 1:
                p = ps[0]
                codes += (~green[:, p] & (self.counts[:, letter] > 0)) * _POW3[p]
                continue
            # Repeated letter: unmatched copies go to the non-green positions left to right.
            available = self.counts[:, letter] - green[:, ps].sum(axis=1, dtype=np.uint8)
            claimed = np.zeros(len(self.words), dtype=np.uint8)
            for p in ps:
                not_green = ~green[:, p]
                codes += (not_green & (available > claimed)) * _POW3[p]
                claimed += not_green
        return codes
