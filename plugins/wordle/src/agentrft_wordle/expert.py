"""A scripted Wordle expert: candidate filtering plus feedback entropy.

It plays through the agent loop like any model: it reads the feedback from the tool replies
in the conversation and answers with a `guess_word` call, so expert games are ordinary
trajectories (the upper-bound baseline and the SFT warm-up source).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import numpy as np

from agentrft import Message, ScriptedPolicy, call
from agentrft_wordle.entropy import PatternTable, pattern_table, row_entropies
from agentrft_wordle.feedback import GRAY, GREEN, YELLOW, encode, letters_array, score_guess
from agentrft_wordle.game import MAX_GUESSES, Knowledge

_FEEDBACK_LINE = re.compile(r"Guess \d+/\d+: ([A-Z]{5}) -> (.+)")
_SOLVED_LINE = re.compile(r"Guess \d+/\d+: ([A-Z]{5}) — all green")
_MARK_OF = {"green": GREEN, "yellow": YELLOW, "gray": GRAY}


def parse_feedback(messages: list[Message]) -> list[tuple[str, str]]:
    """(word, G/Y/X marks) for every guess reported in the tool replies so far."""
    history: list[tuple[str, str]] = []
    for m in messages:
        if m.role not in ("tool", "user") or not m.content:
            continue
        for line in m.content.splitlines():
            solved = _SOLVED_LINE.match(line)
            if solved:
                history.append((solved.group(1).lower(), GREEN * 5))
                continue
            fb = _FEEDBACK_LINE.match(line)
            if fb:
                marks = [part.split("=", 1) for part in fb.group(2).split(", ")]
                if len(marks) == 5 and all(len(p) == 2 and p[1] in _MARK_OF for p in marks):
                    history.append((fb.group(1).lower(), "".join(_MARK_OF[p[1]] for p in marks)))
    return history


class WordleSolver:
    """Chooses guesses: the answers consistent with the feedback so far are the candidates;
    the next guess is the allowed word whose feedback over them has the most entropy, with a
    bonus for words that may themselves be the answer (they can win on the spot), minus
    `knowledge_weight` bits per piece of known information the word ignores (a green not
    kept counts 1.5, a yellow missing or a gray reused 1). The small default halves such
    contradictions at no cost in solve rate, which makes expert games better SFT material.
    """

    def __init__(self, table: PatternTable | None = None, knowledge_weight: float = 0.1) -> None:
        self.table = table or pattern_table()
        self.knowledge_weight = knowledge_weight
        self._letters = letters_array(list(self.table.guesses))
        self._has = np.zeros((len(self._letters), 26), dtype=bool)
        for p in range(5):
            self._has[np.arange(len(self._letters)), self._letters[:, p]] = True
        self._is_answer = np.zeros(len(self.table.guesses), dtype=bool)
        answer_rows = [self.table.index(w) for w in self.table.answers]
        self._is_answer[[i for i in answer_rows if i is not None]] = True
        self._memo: dict[tuple[tuple[str, str], ...], str] = {}

    def candidates(self, history: list[tuple[str, str]]) -> np.ndarray:
        """Indices into `table.answers` still consistent with `history`."""
        t = self.table
        possible = np.ones(len(t.answers), dtype=bool)
        for word, feedback in history:
            row = t.index(word)
            if row is None:  # not an allowed word: score it directly
                codes = np.array([encode(score_guess(word, a)) for a in t.answers], np.uint8)
            else:
                codes = t.matrix[row]
            possible &= codes == encode(feedback)
        return np.flatnonzero(possible)

    def next_guess(self, history: list[tuple[str, str]]) -> str:
        key = tuple(history)
        if key not in self._memo:
            self._memo[key] = self._choose(history)
        return self._memo[key]

    def _choose(self, history: list[tuple[str, str]]) -> str:
        t = self.table
        if not history:
            return t.guesses[int(np.argmax(t.entropy + 1e-3 * self._is_answer))]
        cands = self.candidates(history)
        if len(cands) == 0:
            return self._fallback(history)
        if len(cands) <= 2:
            return t.answers[int(cands[0])]
        entropy = row_entropies(t.matrix[:, cands])
        # A candidate guess wins outright with probability 1/len(cands); worth about that
        # many bits of a full solve, which breaks near-ties towards possible answers.
        cand_rows = np.zeros(len(t.guesses), dtype=bool)
        rows = [t.index(t.answers[i]) for i in cands]
        cand_rows[[r for r in rows if r is not None]] = True
        score = entropy + cand_rows * (np.log2(len(cands)) / len(cands) + 1e-6)
        if self.knowledge_weight:
            score -= self.knowledge_weight * self._ignored_knowledge(history)
        guessed = {w for w, _ in history}
        for w in guessed:
            r = t.index(w)
            if r is not None:
                score[r] = -np.inf
        return t.guesses[int(np.argmax(score))]

    def _ignored_knowledge(self, history: list[tuple[str, str]]) -> np.ndarray:
        """Per allowed word: weighted count of known greens, yellows and grays it ignores."""
        known = Knowledge()
        for word, feedback in history:
            known.update(word, feedback)
        ignored = np.zeros(len(self._letters))
        for i, letter in enumerate(known.greens):
            if letter is not None:
                ignored += 1.5 * (self._letters[:, i] != ord(letter) - ord("a"))
        for letter in known.yellow_letters():
            ignored += ~self._has[:, ord(letter) - ord("a")]
        for letter in known.absent:
            ignored += self._has[:, ord(letter) - ord("a")]
        return ignored

    def _fallback(self, history: list[tuple[str, str]]) -> str:
        """The answer is outside the answer list: search the allowed words directly."""
        guessed = {w for w, _ in history}
        for word in self.table.guesses:
            if word not in guessed and all(score_guess(g, word) == fb for g, fb in history):
                return word
        return next(w for w in self.table.guesses if w not in guessed)


@lru_cache(maxsize=1)
def default_solver() -> WordleSolver:
    return WordleSolver()


def expert_opening(answer: str, k: int, solver: WordleSolver | None = None) -> tuple[str, ...]:
    """The expert's first min(k, n - 1) guesses against `answer`, n being the guess on
    which it solves (6 when it does not): a head start that never solves the game."""
    s = solver or default_solver()
    history: list[tuple[str, str]] = []
    while len(history) < min(k, MAX_GUESSES - 1):
        word = s.next_guess(history)
        if word == answer:
            break
        history.append((word, score_guess(word, answer)))
    return tuple(word for word, _ in history)


def expert_policy(solver: WordleSolver | None = None) -> ScriptedPolicy:
    """The expert as a policy for `run_episode` (`--policy expert`)."""

    def play(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        s = solver or default_solver()
        return call("guess_word", {"guess": s.next_guess(parse_feedback(messages))})

    return ScriptedPolicy(play, name="wordle-expert")
