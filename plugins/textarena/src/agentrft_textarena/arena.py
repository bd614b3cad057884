"""One TextArena game, played through TextArena's own env: reset, step, observations, close.

The env is TextArena's (`textarena.make(<id>-raw)` with its default action wrapper,
`ActionFormattingWrapper`), so the rules, the invalid-move handling and the rewards are the
suite's. What this module adds is what a multi-turn chat needs around it: the new
observations of each step as text, and an isolated random stream per game.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import textarena as ta
from textarena.wrappers import ActionFormattingWrapper

# TextArena draws from the process-global `random` module (`State.__init__` calls
# `random.seed(seed)`; some games draw again inside `step`). Episodes run concurrently on
# worker threads, so each game swaps its own stream in under this lock and out again:
# a game is a function of its seed alone, and the process's own stream is left as it was.
_RANDOM_LOCK = threading.Lock()


@dataclass(frozen=True)
class ArenaInstance:
    """A parsed row: the seed TextArena resets the game with, and the row's id."""

    seed: int
    id: str | None = None


@dataclass(frozen=True)
class Outcome:
    """TextArena's verdict on a game, from `env.close()` (None/False while it runs).

    `reward` is player 0's reward (1 for a win; the game's percentage completion for a
    loss or an invalid-move end), `invalid_move` TextArena's flag for a game ended by
    invalid moves, `reason` its text (which may name the secret: never shown to the
    policy), `turn_count` the valid moves it counted.
    """

    done: bool
    reward: float | None
    invalid_move: bool
    reason: str | None
    turn_count: int


class ArenaGame:
    """A TextArena single-player game of `env_id`, reset with `seed`."""

    def __init__(self, env_id: str, seed: int) -> None:
        self.env_id = env_id
        self.seed = seed
        self.done = False
        self.actions: list[str] = []
        self._random_state: Any = None
        self.env = ActionFormattingWrapper(ta.make(f"{env_id}-raw"))
        with self._own_random():
            self.env.reset(num_players=1, seed=seed)

    @contextmanager
    def _own_random(self) -> Iterator[None]:
        with _RANDOM_LOCK:
            outer = random.getstate()
            if self._random_state is not None:
                random.setstate(self._random_state)
            try:
                yield
            finally:
                self._random_state = random.getstate()
                random.setstate(outer)

    @property
    def game_state(self) -> dict[str, Any]:
        """TextArena's game state (holds the secret: for rewards and tests, never prompts)."""
        state: dict[str, Any] = self.env.state.game_state
        return state

    def observe(self) -> str:
        """The observations TextArena queued for the player since the last call, as text.

        Formatted as TextArena's `LLMObservationWrapper` writes them (`[GAME] ...`), less
        the echo of the player's own move: the conversation already holds it as the call.
        """
        _, observations = self.env.get_observation()
        lines = []
        for sender, message, kind in observations:
            if kind == ta.ObservationType.PLAYER_ACTION:
                continue
            name = "GAME" if sender == ta.GAME_ID else f"Player {sender}"
            lines.append(f"[{name}] {message}")
        return "\n".join(lines)

    def step(self, action: str) -> bool:
        """Send one move into `env.step`; returns TextArena's `done`."""
        if self.done:
            raise RuntimeError(f"{self.env_id}: the game is over; no more moves")
        self.actions.append(action)
        with self._own_random():
            done, _ = self.env.step(action=action)
        self.done = bool(done)
        return self.done

    def outcome(self) -> Outcome:
        """TextArena's outcome (`env.close()`); a game still running has none yet."""
        if not self.done:
            return Outcome(False, None, False, None, self.env.state.turn)
        rewards, game_info = self.env.close()
        info = game_info[0]
        return Outcome(
            done=True,
            reward=float(rewards[0]),
            invalid_move=bool(info.get("invalid_move", False)),
            reason=info.get("reason"),
            turn_count=int(info.get("turn_count", 0)),
        )
