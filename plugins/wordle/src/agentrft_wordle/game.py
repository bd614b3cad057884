"""The Wordle game: guesses, feedback, the knowledge summary, and the per-guess game score.

`WordleGame` knows nothing about agents: it takes guesses and returns the reply text. The
per-guess score terms and the replies are the public sample's, rule for rule (design note
wordle.md, "The sample's rules, exactly"); the score's sum, divided by 150 and clipped to
[-1, 1], is the reward's shaping term.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

import numpy as np

from agentrft_wordle.entropy import guess_entropy
from agentrft_wordle.feedback import ALL_GREEN, GRAY, GREEN, YELLOW, AnswerPool, score_guess
from agentrft_wordle.words import allowed_set, answer_pool

MAX_GUESSES = 6
#: Tool calls a game accepts; later calls get a game-over reply (faults count too).
MAX_CALLS = 12
VALID_GUESS = re.compile(r"[a-z]{5}")

# Game-score terms (the reference sample's constants; task.py documents the reward bounds).
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

#: The reply to a call after the game has ended.
GAME_OVER_REPLY = "Game over: this game has ended, so no more guesses are accepted."
#: The reply to a call past the game's tool-call limit.
CALL_LIMIT_REPLY = (
    f"Game over: the limit of {MAX_CALLS} tool calls is reached, so no more guesses are accepted."
)

_NAMES = {GREEN: "green", YELLOW: "yellow", GRAY: "gray"}


class MalformedGuess(ValueError):
    """The guess is not five letters a-z; it did not use a guess."""


@dataclass
class GuessRecord:
    """One guess that used a turn of the game, with its score terms.

    `seeded` guesses were played for the player before its first turn (a curriculum's head
    start): they count toward the guess number but not toward the player's score.
    """

    number: int  # 1..6
    word: str  # lower case
    feedback: str  # G/Y/X marks
    kind: str  # "valid", "solve", "repeat" or "out_of_list"
    score: dict[str, float]
    recovered: bool = False
    seeded: bool = False
    violations: list[str] = field(default_factory=list)


@dataclass
class Knowledge:
    """What the feedback so far shows, as the sample keeps it.

    - `greens`: the letter known at each position;
    - `absent` (gray): letters marked gray in a guess that marked no copy of them green or
      yellow (a surplus copy of a present letter is not "not in word");
    - `min_count` (the yellow minimum): per letter, the most green+yellow marks it got in any
      one guess;
    - `wrong_positions` (yellow spots): per letter, the positions where it was yellow.

    A letter with a known green is left out of the yellow rules (the Yellow line, the
    yellow-minimum violation, stagnation, and the candidate filter's minimum), but not out
    of the candidate filter's yellow spots: the sample's code keeps those for every letter.
    """

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
        """Letters known to be in the word that have no known green -> their yellow minimum."""
        placed = set(self.greens)
        return {c: n for c, n in sorted(self.min_count.items()) if c not in placed}

    def yellow_spots(self) -> list[tuple[str, int]]:
        """(letter, position) pairs where a letter was marked yellow, for every letter:
        also one with a known green (a second copy of it was yellow there)."""
        return [
            (c, p) for c in sorted(self.wrong_positions) for p in sorted(self.wrong_positions[c])
        ]

    def admits(self, pool: AnswerPool) -> np.ndarray:
        """Which answers of `pool` pass the knowledge filter: greens in place, no gray
        letter, every yellow letter (no known green) at least its yellow minimum times, and
        no letter on a spot where it was marked yellow, whether or not it also has a known
        green. (Looser than "consistent with every feedback": that is the sample's rule for
        the reduction bonus, read from its code: its yellow minimums drop a letter once it
        is green, its yellow spots never do.)"""
        yellows = self.yellow_letters()
        return pool.admitting(
            at=[(p, c) for p, c in enumerate(self.greens) if c is not None],
            not_at=[(p, c) for c, p in self.yellow_spots()],
            at_least=list(yellows.items()),
            lacking=self.absent,
        )

    def summary(self, guessed: list[str], remaining: int) -> str:
        """The "Current Knowledge" block of the tool reply (`guessed`: every guess in order,
        repeats included)."""
        greens = " ".join((g or "_").upper() for g in self.greens)
        yellows = ", ".join(
            f"'{c.upper()}' (at least {n})" for c, n in self.yellow_letters().items()
        )
        grays = ", ".join(sorted(c.upper() for c in self.absent))
        words = ", ".join(w.upper() for w in guessed)
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
    semantics); malformed input raises `MalformedGuess` without using a guess. The
    candidate pool (for the reduction bonus) is the answer list only, whatever the answer.
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
        self.pool = pool or answer_pool()
        #: Answers the knowledge filter admits now (all of them before the first guess).
        self.candidates = len(self.pool)
        self.knowledge = Knowledge()
        self.records: list[GuessRecord] = []
        self.malformed: list[dict[str, float]] = []
        self.solved = False

    # -- state -------------------------------------------------------------------------
    @property
    def guesses_used(self) -> int:
        """Guesses used so far, seeded ones included (the guess number of the last one)."""
        return len(self.records)

    @property
    def player_guesses(self) -> int:
        """Guesses the player made itself (not seeded)."""
        return sum(1 for r in self.records if not r.seeded)

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
        """The player's game score: the sum of its guesses' terms (malformed input
        included; seeded guesses excluded)."""
        return sum(sum(s.values()) for s in self.score_terms())

    def score_terms(self) -> list[dict[str, float]]:
        return [r.score for r in self.records if not r.seeded] + self.malformed

    def score_breakdown(self) -> dict[str, float]:
        """The player's game score summed per term name (for reward components)."""
        out: dict[str, float] = {}
        for terms in self.score_terms():
            for k, v in terms.items():
                out[k] = out.get(k, 0.0) + v
        return out

    # -- play --------------------------------------------------------------------------
    def seed(self, words: Iterable[str]) -> list[str]:
        """Play `words` for the player before its first turn; returns their replies.

        Seeded guesses must leave the game open (no solve, a guess left): a head start,
        never a finished game.
        """
        if self.records or self.malformed:
            raise RuntimeError("guesses can only be seeded before the game starts")
        replies = []
        for word in words:
            if word.strip().lower() == self.answer or self.remaining <= 1:
                raise ValueError(
                    f"seeding {word!r} would end the game; seed fewer guesses (at most "
                    f"{MAX_GUESSES - 1}, never the answer)"
                )
            replies.append(self.guess(word, seeded=True))
        return replies

    def guess(self, raw: str, *, recovered: bool = False, seeded: bool = False) -> str:
        """Play `raw` and return the reply text. Raises `MalformedGuess` (no guess used)."""
        if self.over:
            raise RuntimeError("the game is over")
        word = raw.strip().lower()
        if not VALID_GUESS.fullmatch(word):
            if seeded:
                raise ValueError(f"a seeded guess must be five letters a-z, got {raw!r}")
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
        record = GuessRecord(number, word, feedback, "valid", {}, recovered, seeded)
        if word == self.answer:
            record.kind = "solve"
            record.score = {"time": TIME}
        elif word in self.guessed:
            record.kind = "repeat"
            record.score = {"repeat": REPEAT, "time": TIME}
        else:
            record.kind = "valid" if word in self.allowed else "out_of_list"
            record.score, record.violations = self._score_new(word, number)
        if recovered:
            record.score["text_recovery"] = TEXT_RECOVERY
        self.records.append(record)
        if record.kind == "solve":
            self.solved = True
        elif record.kind != "repeat":  # a repeat teaches nothing new
            self.knowledge.update(word, feedback)
            before, self.candidates = self.candidates, int(self.knowledge.admits(self.pool).sum())
            if number > 1 and before > 0:
                reduction = REDUCTION_WEIGHT * (before - self.candidates) / before
                record.score["reduction"] = reduction
        return self._reply(record)

    def _score_new(self, word: str, number: int) -> tuple[dict[str, float], list[str]]:
        """Score terms of a new, non-solving guess, judged on the knowledge before it (the
        reduction bonus is added once the feedback is known)."""
        k = self.knowledge
        yellows = k.yellow_letters()
        terms: dict[str, float] = {"base": BASE, "time": TIME}
        violations: list[str] = []
        for i, letter in enumerate(k.greens):
            if letter is not None and word[i] != letter:
                violations.append(f"green {letter.upper()} at {i + 1} not kept")
        for letter, need in yellows.items():
            have = word.count(letter)
            if have < need:
                violations.append(
                    f"yellow {letter.upper()} missing"
                    if have == 0
                    else f"yellow {letter.upper()} used {have} of at least {need} times"
                )
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
        yellows_reused = len(set(word) & yellows.keys())  # distinct letters, anywhere
        if greens_reused or yellows_reused:
            terms["stagnation"] = GREEN_REUSED * greens_reused + YELLOW_REUSED * yellows_reused
        # Strategy: information gained.
        if number == 1:
            if word in self.allowed:  # a nonsense opener earns no entropy bonus
                terms["entropy"] = ENTROPY_WEIGHT * guess_entropy(word)
        else:
            seen = set("".join(self.guessed))
            terms["new_letters"] = NEW_LETTER * len(set(word) - seen)
        if word not in self.allowed:
            terms["out_of_list"] = OUT_OF_LIST
        return terms, violations

    def _reply(self, record: GuessRecord) -> str:
        word = record.word.upper()
        head = f"Guess {record.number}/{MAX_GUESSES}: {word}"
        if record.feedback == ALL_GREEN:
            return f"{head} — all green. Correct, you solved it!"
        if record.kind == "repeat":
            lines = [
                f"You already guessed {word}: the repeat used up guess {record.number}/"
                f"{MAX_GUESSES} and was penalised."
            ]
        else:
            marks = ", ".join(
                f"{c.upper()}={_NAMES[m]}"
                for c, m in zip(record.word, record.feedback, strict=True)
            )
            lines = [f"{head} -> {marks}"]
        lines.append(self.knowledge.summary(self.guessed, self.remaining))
        if self.remaining <= 0:
            lines.append(f"Game over: no guesses left. The word was '{self.answer.upper()}'.")
        return "\n".join(lines)
