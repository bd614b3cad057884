"""The Wordle environment: one game behind the `guess_word` tool."""

from __future__ import annotations

import json
import re

from agentrft import Environment, ToolCall, ToolError, tool
from agentrft_wordle.game import WordleGame

# Guesses written as text instead of a tool call, as seen in the wild (wordle.md). Explicit
# call syntax takes any letters (a wrong length is then a malformed guess); the loose
# `guess: WORD` / `guess=WORD` forms need exactly five letters, so prose does not trigger them.
RECOVERY_PATTERNS = (
    re.compile(r"guess_word\s*\(\s*(?:guess\s*=\s*)?[\"']?([A-Za-z]+)[\"']?\s*\)", re.I),
    re.compile(r"\"guess\"\s*:\s*\"\s*([A-Za-z]+)\s*\"", re.I),
    re.compile(r"__parameter=guess>\s*([A-Za-z]+)\s*<", re.I),
    re.compile(r"\bguess\s*[:=]\s*[\"'*]*([A-Za-z]{5})\b(?![A-Za-z])", re.I),
)


def recover_guess(text: str) -> str | None:
    """The guess a plain-text reply makes, if any: the last one written wins (reasoning
    that mentions candidates comes before the final answer)."""
    best: tuple[int, str] | None = None
    for pattern in RECOVERY_PATTERNS:
        for m in pattern.finditer(text):
            if best is None or m.start() > best[0]:
                best = (m.start(), m.group(1))
    return best[1] if best else None


class WordleEnvironment(Environment):
    """A Wordle game for one episode; the answer stays in `self.game`."""

    def __init__(self, game: WordleGame) -> None:
        super().__init__()
        self.game = game

    @tool
    def guess_word(self, guess: str) -> str:
        """Guess the hidden 5-letter word. Returns feedback for every letter (green, yellow,
        gray) and a summary of what is known so far.

        Args:
            guess: one English word of exactly 5 letters, e.g. "crane".
        """
        if self.game.over:
            raise ToolError("Error: the game is over; no more guesses.", kind="game_over")
        recovered = bool(self.current_call and self.current_call.recovered)
        try:
            reply = self.game.guess(guess, recovered=recovered)
        except ValueError as exc:  # MalformedGuess: no guess used
            raise ToolError(str(exc), kind="malformed") from None
        record = self.game.records[-1]
        if record.kind in ("repeat", "out_of_list"):
            self.note(record.kind, record.word)
        if record.violations:
            self.note("contradiction", f"{record.word}: " + "; ".join(record.violations))
        if self.game.over:
            self.done = True
        return reply

    def recover(self, text: str) -> list[ToolCall]:
        word = recover_guess(text)
        if word is None or self.game.over:
            return []
        return [
            ToolCall(
                id="", name="guess_word", arguments=json.dumps({"guess": word}), recovered=True
            )
        ]
