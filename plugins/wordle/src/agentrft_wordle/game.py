"""The Wordle game: guesses, feedback, the knowledge summary, and the per-guess game score.

`WordleGame` knows nothing about agents: it takes guesses and returns the reply text. The
per-guess score terms are the public sample's (design note wordle.md); their sum, divided
by 150 and clipped to [-1, 1], is the reward's shaping term.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np

from agentrft_wordle.entropy import guess_entropy
from agentrft_wordle.feedback import ALL_GREEN, GRAY, GREEN, YELLOW, AnswerPool, encode, score_guess
from agentrft_wordle.words import allowed_set, answer_pool

MAX_GUESSES = 6
VALID_GUESS = re.compile(r"[a-z]{5}")

# Game-score terms (the reference sample's constants; reward.py documents the bounds).
MALFORMED = -50.0  # the sample's -200/4; no guess used
REPEAT = -40.0
TIME = -1.0  # every guess that uses one
BASE = 15.0
GREEN_NOT_KEPT = -30.0
YELLOW_MISSING = -20.0
GRAY_REUSED = -20.0
GREEN_REUSED = -3.0
YELLOW_REUSED = -1.5
ENTROPY_WEIGHT = 7.5  # first guess: bits of feedback entropy over the answer list
NEW_LETTER = 2.0
REDUCTION_WEIGHT = 15.0
OUT_OF_LIST = -35.0
TEXT_RECOVERY = -5.0
#: Game score that maps to shaping 1.0.
SCORE_SCALE = 150.0

_NAMES = {GREEN: "green", YELLOW: "yellow", GRAY: "gray"}


class MalformedGuess(ValueError):
    """The guess is not five letters a-z; it did not use a guess."""


@dataclass
class GuessRecord:
    """One guess that used a turn of the game, with its score terms."""

    number: int  # 1..6
    word: str  # lower case
    feedback: str  # G/Y/X marks
    kind: str  # "valid", "solve", "repeat" or "out_of_list"
    score: dict[str, float]
    recovered: bool = False
    violations: list[str] = field(default_factory=list)


@dataclass
class Knowledge:
    """What the feedback so far proves about the answer."""

    greens: list[str | None] = field(default_factory=lambda: [None] * 5)
    min_count: dict[str, int] = field(default_factory=dict)
    absent: set[str] = field(default_factory=set)
    wrong_positions: dict[str, set[int]] = field(default_factory=dict)

    def update(self, word: str, feedback: str) -> None:
        marked: dict[str, int] = {}
        grayed: set[str] = set()
        for i, (letter, mark) in enumerate(zip(word, feedback, strict=True)):
            if mark == GREEN:
                self.greens[i] = letter
                marked[letter] = marked.get(letter, 0) + 1
            elif mark == YELLOW:
                self.wrong_positions.setdefault(letter, set()).add(i)
                marked[letter] = marked.get(letter, 0) + 1
            else:
                grayed.add(letter)
        for letter, n in marked.items():
            self.min_count[letter] = max(self.min_count.get(letter, 0), n)
        for letter in grayed:
            if letter not in marked and letter not in self.min_count:
                self.absent.add(letter)

    def yellow_letters(self) -> dict[str, int]:
        """Letters known in the word beyond their known green places -> how many more."""
        out = {}
        for letter, n in sorted(self.min_count.items()):
            extra = n - sum(1 for g in self.greens if g == letter)
            if extra > 0:
                out[letter] = extra
        return out

    def summary(self, guessed: list[str], remaining: int) -> str:
        """The "Current Knowledge" block of the tool reply."""
        greens = " ".join((g or "_").upper() for g in self.greens)
        yellows = ", ".join(
            f"'{c.upper()}' (at least {n})" for c, n in self.yellow_letters().items()
        )
        grays = ", ".join(sorted(c.upper() for c in self.absent))
        words = ", ".join(w.upper() for w in dict.fromkeys(guessed))  # distinct, in order
        return (
            "Current Knowledge:\n"
            f"- Correct Position (Green): {greens}\n"
            f"- In Word, Wrong Position (Yellow): {yellows or 'None'}\n"
            f"- Not in Word (Gray): {grays or 'None'}\n"
            f"- Words Already Guessed: {words or 'None'}\n"
            f"- Guesses Remaining: {remaining}"
        )


class WordleGame:
    """One game against a hidden answer. `guess(word)` returns the reply text.

    Guesses outside `allowed` still get feedback but cost a penalty (the sample's
    semantics); malformed input raises `MalformedGuess` without using a guess.
    """

    def __init__(
        self,
        answer: str,
        *,
        allowed: Collection[str] | None = None,
        pool: AnswerPool | None = None,
    ) -> None:
        answer = answer.lower()
        if not VALID_GUESS.fullmatch(answer):
            raise ValueError(f"a Wordle answer is five letters a-z, got {answer!r}")
        self.answer = answer
        self.allowed = allowed if allowed is not None else allowed_set()
        pool = pool or answer_pool()
        if answer not in pool.words:  # a custom answer: it must count as possible
            pool = AnswerPool([*pool.words, answer])
        self.pool = pool
        self.possible = np.ones(len(pool), dtype=bool)
        self.knowledge = Knowledge()
        self.records: list[GuessRecord] = []
        self.malformed: list[dict[str, float]] = []
        self.solved = False

    # -- state -------------------------------------------------------------------------
    @property
    def guesses_used(self) -> int:
        return len(self.records)

    @property
    def remaining(self) -> int:
        return MAX_GUESSES - self.guesses_used

    @property
    def over(self) -> bool:
        return self.solved or self.remaining <= 0

    @property
    def guessed(self) -> list[str]:
        return [r.word for r in self.records]

    @property
    def score(self) -> float:
        """The game score: the sum of every guess's terms (malformed input included)."""
        return sum(sum(s.values()) for s in self.score_terms())

    def score_terms(self) -> list[dict[str, float]]:
        return [r.score for r in self.records] + self.malformed

    def score_breakdown(self) -> dict[str, float]:
        """The game score summed per term name (for reward components)."""
        out: dict[str, float] = {}
        for terms in self.score_terms():
            for k, v in terms.items():
                out[k] = out.get(k, 0.0) + v
        return out

    # -- play --------------------------------------------------------------------------
    def guess(self, raw: str, *, recovered: bool = False) -> str:
        """Play `raw` and return the reply text. Raises `MalformedGuess` (no guess used)."""
        if self.over:
            raise RuntimeError("the game is over")
        word = raw.strip().lower()
        if not VALID_GUESS.fullmatch(word):
            terms = {"malformed": MALFORMED}
            if recovered:
                terms["text_recovery"] = TEXT_RECOVERY
            self.malformed.append(terms)
            raise MalformedGuess(
                f"Error: {raw.strip()[:40]!r} is not a valid guess: a guess must be exactly 5 "
                f"letters a-z. This did not use up a guess ({self.remaining} remaining)."
            )
        number = self.guesses_used + 1
        feedback = score_guess(word, self.answer)
        record = GuessRecord(number, word, feedback, "valid", {}, recovered)
        if word == self.answer:
            record.kind = "solve"
            record.score = {"time": TIME}
        elif word in self.guessed:
            record.kind = "repeat"
            record.score = {"repeat": REPEAT, "time": TIME}
        else:
            record.kind = "valid" if word in self.allowed else "out_of_list"
            record.score, record.violations = self._score_new(word, feedback, number)
        if recovered:
            record.score["text_recovery"] = TEXT_RECOVERY
        self.records.append(record)
        self.knowledge.update(word, feedback)
        if record.kind == "solve":
            self.solved = True
        return self._reply(record)

    def _score_new(
        self, word: str, feedback: str, number: int
    ) -> tuple[dict[str, float], list[str]]:
        """Score terms of a new, non-solving guess, judged on the knowledge before it."""
        k = self.knowledge
        terms: dict[str, float] = {"base": BASE, "time": TIME}
        violations: list[str] = []
        for i, letter in enumerate(k.greens):
            if letter is not None and word[i] != letter:
                violations.append(f"green {letter.upper()} at {i + 1} not kept")
        for letter in k.yellow_letters():
            if letter not in word:
                violations.append(f"yellow {letter.upper()} missing")
        for letter in sorted(set(word) & k.absent):
            violations.append(f"gray {letter.upper()} reused")
        n_green = sum(1 for v in violations if v.startswith("green"))
        n_yellow = sum(1 for v in violations if v.startswith("yellow"))
        n_gray = len(violations) - n_green - n_yellow
        if violations:
            terms["violations"] = (
                GREEN_NOT_KEPT * n_green + YELLOW_MISSING * n_yellow + GRAY_REUSED * n_gray
            )
        # Stagnation: information already known, spent again.
        greens_reused = sum(1 for i, letter in enumerate(k.greens) if letter == word[i])
        yellows_reused = sum(1 for i, c in enumerate(word) if i in k.wrong_positions.get(c, ()))
        if greens_reused or yellows_reused:
            terms["stagnation"] = GREEN_REUSED * greens_reused + YELLOW_REUSED * yellows_reused
        # Strategy: information gained.
        before = int(self.possible.sum())
        self.possible &= self.pool.codes(word) == encode(feedback)
        if number == 1:
            terms["entropy"] = ENTROPY_WEIGHT * guess_entropy(word)
        else:
            seen = set("".join(self.guessed))
            terms["new_letters"] = NEW_LETTER * len(set(word) - seen)
            if before > 0:
                after = int(self.possible.sum())
                terms["reduction"] = REDUCTION_WEIGHT * (before - after) / before
        if word not in self.allowed:
            terms["out_of_list"] = OUT_OF_LIST
        return terms, violations

    def _reply(self, record: GuessRecord) -> str:
        head = f"Guess {record.number}/{MAX_GUESSES}: {record.word.upper()}"
        if record.feedback == ALL_GREEN:
            return f"{head} — all green. Correct, you solved it!"
        marks = ", ".join(
            f"{c.upper()}={_NAMES[m]}" for c, m in zip(record.word, record.feedback, strict=True)
        )
        lines = [f"{head} -> {marks}"]
        if record.kind == "repeat":
            lines.append(
                f"Note: {record.word.upper()} was already guessed; repeating it used a guess."
            )
        elif record.kind == "out_of_list":
            lines.append(
                f"Note: {record.word.upper()} is not in the word list; it used a guess and "
                "was penalised."
            )
        if self.remaining <= 0:
            lines.append(f"Game over: no guesses left. The word was {self.answer.upper()}.")
        else:
            lines.append(self.knowledge.summary(self.guessed, self.remaining))
        return "\n".join(lines)
