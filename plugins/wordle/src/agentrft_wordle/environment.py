"""The Wordle environment: one game behind the `guess_word` tool."""

from __future__ import annotations

import json
import re
from collections.abc import Container
from typing import Any

from agentrft import Environment, FailureKind, ToolCall, ToolError, ToolResult, tool
from agentrft_wordle.game import CALL_LIMIT_REPLY, GAME_OVER_REPLY, MAX_CALLS, WordleGame

# Guesses written as text instead of a tool call, as seen in the wild (wordle.md). The
# explicit forms capture any run of letters so that `guess_word("cranes")` is read whole and
# then ignored for its length (never cut down to "crane"); the loose `guess: WORD` /
# `guess=WORD` forms need exactly five letters, so prose does not trigger them.
RECOVERY_PATTERNS = (
    re.compile(r"guess_word\s*\(\s*(?:guess\s*=\s*)?[\"']?([A-Za-z]+)[\"']?\s*\)", re.I),
    re.compile(r"\"guess\"\s*:\s*\"\s*([A-Za-z]+)\s*\"", re.I),
    re.compile(r"__parameter=guess>\s*([A-Za-z]+)\s*<", re.I),
    re.compile(r"\bguess\s*[:=]\s*[\"'*]*([A-Za-z]{5})\b(?![A-Za-z])", re.I),
)


def recover_guess(text: str, guessed: Container[str] = ()) -> str | None:
    """The guess a plain-text reply makes, if any (lower case).

    The last one written wins (reasoning that mentions candidates comes before the final
    answer). A word that is not five letters is ignored, and so is a word already in
    `guessed` (a recovered repeat is skipped, not played and penalised): an earlier guess
    in the text is taken instead, if there is one.
    """
    found: list[tuple[int, str]] = []
    for pattern in RECOVERY_PATTERNS:
        for m in pattern.finditer(text):
            word = m.group(1).lower()
            if len(word) == 5 and word not in guessed:
                found.append((m.start(), word))
    return max(found)[1] if found else None


class WordleEnvironment(Environment):
    """A Wordle game for one episode; the answer stays in `self.game`.

    The environment keeps the game's own limit of `MAX_CALLS` tool calls (faults included;
    guesses seeded before the episode are not calls): a call after the game has ended or
    past the limit gets a short game-over reply and ends the episode.

    With `text_recovery=False` a guess written as text is not played: the reply is prose,
    and prose ends the episode (`no_tool_call`), as it does when no guess is found in it.
    """

    def __init__(self, game: WordleGame, *, text_recovery: bool = True) -> None:
        super().__init__()
        self.game = game
        self.text_recovery = text_recovery
        #: Tool calls that reached this game (the player's, every kind).
        self.calls = 0

    async def call_tool(self, call: ToolCall, **kwargs: Any) -> ToolResult:
        self.calls += 1
        if self.calls > MAX_CALLS:
            self.done = True
            return ToolResult(CALL_LIMIT_REPLY, failure=FailureKind.MAX_TOOL_CALLS)
        if self.game.over:
            self.done = True
            return ToolResult(GAME_OVER_REPLY, failure="game_over")
        return await super().call_tool(call, **kwargs)

    @tool
    def guess_word(self, guess: str) -> str:
        """Guess the hidden 5-letter word. Returns feedback for every letter (green, yellow,
        gray) and a summary of what is known so far.

        Args:
            guess: one English word of exactly 5 letters, e.g. "crane".
        """
        if self.game.over:  # only reachable when the tool is called directly
            raise ToolError(GAME_OVER_REPLY, kind="game_over")
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
        if not self.text_recovery:
            return []
        word = recover_guess(text, set(self.game.guessed))
        if word is None or self.game.over:
            return []
        return [
            ToolCall(
                id="", name="guess_word", arguments=json.dumps({"guess": word}), recovered=True
            )
        ]
