"""The TextArena tasks: one agentrft task per game, all on one base class.

A row names a seed; the game is the task's (a task per game keeps each game's tiers,
expert, splits and eval figures apart: `agentrft eval --task textarena_mastermind`).
"""

from __future__ import annotations

import json
import random
from abc import abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar

from agentrft import (
    Environment,
    EpisodeLimits,
    Policy,
    RewardResult,
    RewardSample,
    Task,
    TaskInputError,
    TieredReward,
    ToolError,
    Trajectory,
    tool,
)
from agentrft_textarena.arena import ArenaGame, ArenaInstance
from agentrft_textarena.experts import expert_policy
from agentrft_textarena.probes import played_reward_samples
from agentrft_textarena.reward import TIERS, score_outcome

#: Seeds of each split end in different digits, so splits never share a game.
SPLIT_DIGITS = {"train": (0, 1, 2, 3, 4, 5, 6, 7), "validation": (8,), "test": (9,)}

SYSTEM_PROMPT = """\
You are playing a single-player text game from TextArena. The game's own rules and its \
first message follow.

Make every move with the move tool: pass the move exactly in the game's notation, for \
example {"action": "[5]"}. One move per call; read the game's reply before the next move. \
An invalid move is answered with a warning; a second invalid move in a row ends the game. \
The game ends when you win, run out of turns or make two invalid moves in a row."""


class TextArenaEnvironment(Environment):
    """One episode: a TextArena game and the `move` tool that steps it."""

    def __init__(self, game: ArenaGame) -> None:
        super().__init__()
        self.game = game

    @tool
    def move(self, action: str) -> str:
        """Play one move in the game's own notation; returns the game's reply.

        Args:
            action: The move, as the game's rules write it, e.g. "[5]" or "[2 3]".
        """
        if self.game.done:  # a second call in the turn that ended the game
            raise ToolError("The game is over: no more moves.", kind="move_after_game_over")
        done = self.game.step(action)
        reply = self.game.observe()
        if done:
            self.done = True
            reply = (reply + "\n" if reply else "") + "[GAME] The game is over."
        return reply


class TextArenaTask(Task[ArenaInstance, TextArenaEnvironment]):
    """A TextArena single-player game; subclasses name the env id and the expert."""

    #: TextArena's registered env id (its default variant's rules and limits).
    env_id: ClassVar[str] = ""
    #: The expert's key in `experts.expert_policy`.
    game: ClassVar[str] = ""
    tiers: ClassVar[TieredReward | None] = TIERS
    #: Whether the game has hidden state (the number, the code) the policy must not see.
    has_secret: ClassVar[bool] = True

    # -- rows ------------------------------------------------------------------------------
    def parse(self, prompt: str) -> ArenaInstance:
        """The inner JSON of a row: `{"id": "textarena_mastermind_train_0000", "seed": 7}`."""
        try:
            data = json.loads(prompt)
        except (TypeError, json.JSONDecodeError) as exc:
            raise TaskInputError(
                f"{self.name} row prompt is not JSON ({exc}); expected "
                '{"id": "...", "seed": 12345} (make rows with `agentrft dataset make '
                f"--task {self.name}`)"
            ) from None
        if not isinstance(data, dict) or "seed" not in data:
            raise TaskInputError(
                f'{self.name} row prompt must be a JSON object with a "seed" field, got '
                f"{prompt[:80]!r}"
            )
        seed = data["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise TaskInputError(
                f'{self.name} row "seed" must be a non-negative integer, got {seed!r}'
            )
        row_id = data.get("id")
        instance = ArenaInstance(seed=seed, id=None if row_id is None else str(row_id))
        self.new_game(instance)  # a seed TextArena cannot reset fails here, not mid-episode
        return instance

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        """`n` rows (default 128) of seeded games; the splits' seeds end in different
        digits (train 0-7, validation 8, test 9), so no two splits share a game seed."""
        if split not in SPLIT_DIGITS:
            raise TaskInputError(
                f"{self.name}: unknown split {split!r}; use one of {', '.join(SPLIT_DIGITS)}"
            )
        n = 128 if n is None else n
        if n < 1:
            raise TaskInputError(f"{self.name}: n must be at least 1, got {n}")
        rng = random.Random(f"{self.name}:{split}:{seed}")
        digits = SPLIT_DIGITS[split]
        rows: list[dict[str, Any]] = []
        seen: set[int] = set()
        # One draw at a time, so the first rows of a split are the same whatever n is.
        for _ in range(100 * n):
            game_seed = rng.randrange(10**7) * 10 + digits[len(rows) % len(digits)]
            if game_seed in seen or not self.usable_seed(game_seed):
                continue
            seen.add(game_seed)
            rows.append(self.row(game_seed, f"{self.name}_{split}_{len(rows):04d}"))
            if len(rows) == n:
                return rows
        raise TaskInputError(f"{self.name}: could not find {n} usable seeds")  # pragma: no cover

    @staticmethod
    def row(seed: int, row_id: str | None = None) -> dict[str, str]:
        """A dataset row for the game of `seed`."""
        inner: dict[str, Any] = {"seed": seed} if row_id is None else {"id": row_id, "seed": seed}
        return {"prompt": json.dumps(inner)}

    def usable_seed(self, seed: int) -> bool:
        """Whether `seed` makes a game fit for a row (default: TextArena can reset it)."""
        try:
            self.new_game(ArenaInstance(seed=seed))
        except TaskInputError:
            return False
        return True

    def instance_id(self, instance: ArenaInstance) -> str | None:
        return instance.id

    def new_game(self, instance: ArenaInstance) -> ArenaGame:
        """A fresh TextArena game of the instance's seed."""
        try:
            return ArenaGame(self.env_id, instance.seed)
        except Exception as exc:  # TextArena's own reset failing on this seed
            raise TaskInputError(
                f"{self.name}: TextArena's {self.env_id} could not reset with seed "
                f"{instance.seed} ({type(exc).__name__}: {exc}); use another seed"
            ) from None

    @abstractmethod
    def secret(self, game: ArenaGame) -> Any:
        """What the player must find or undo: the hidden state (the number, the code), or
        the starting board where nothing is hidden (for `hidden_values` and tests)."""

    # -- episode ---------------------------------------------------------------------------
    def system_prompt(self, instance: ArenaInstance) -> str:
        return SYSTEM_PROMPT

    def user_prompt(self, instance: ArenaInstance) -> str:
        """TextArena's first observation: the game's own rules prompt (and board)."""
        return self.new_game(instance).observe()

    def environment(self, instance: ArenaInstance) -> TextArenaEnvironment:
        game = self.new_game(instance)
        game.observe()  # the first observation is the user prompt
        return TextArenaEnvironment(game)

    def reward(self, env: TextArenaEnvironment, trajectory: Trajectory) -> RewardResult:
        """TextArena's outcome (`env.close()`) as tiers (`reward.score_outcome`)."""
        return score_outcome(env.game.outcome())

    def expert(self) -> Policy:
        return expert_policy(self.game)

    def reward_samples(self) -> Iterable[RewardSample]:
        """The declared tiers at extreme shaping, and rewards of real scripted games."""
        yield from super().reward_samples()
        yield from played_reward_samples(self)


class GuessTheNumberTask(TextArenaTask):
    """TextArena's GuessTheNumber-v0: find 1..20 in 10 turns from higher/lower hints."""

    name: ClassVar[str] = "textarena_guess_the_number"
    description: ClassVar[str] = "TextArena GuessTheNumber-v0: find a number in 1..20 from hints"
    env_id: ClassVar[str] = "GuessTheNumber-v0"
    game: ClassVar[str] = "guess_the_number"
    # Ten valid guesses (TextArena lets an 11th through before its turn limit), each may be
    # preceded by one warned invalid move.
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=24, max_tool_calls=24)

    def secret(self, game: ArenaGame) -> int:
        return int(game.game_state["game_number"])

    def hidden_values(self, instance: ArenaInstance) -> list[str]:
        """How a reply would state the number (replies carry no numbers otherwise: the
        leak test checks that too)."""
        n = self.secret(self.new_game(instance))
        return [f"Target: {n}", f"number is {n}", f"number was {n}", f"target number {n}"]


#: The code TextArena's Mastermind prompt shows as its format example.
MASTERMIND_EXAMPLE = [2, 1, 4, 5]


class MastermindTask(TextArenaTask):
    """TextArena's Mastermind-v0: a 4-digit code of 1..6, no repeats, 20 turns."""

    name: ClassVar[str] = "textarena_mastermind"
    description: ClassVar[str] = "TextArena Mastermind-v0: crack a 4-digit code from peg feedback"
    env_id: ClassVar[str] = "Mastermind-v0"
    game: ClassVar[str] = "mastermind"
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=44, max_tool_calls=44)

    def secret(self, game: ArenaGame) -> list[int]:
        return list(game.game_state["secret_code"])

    @staticmethod
    def row(seed: int, row_id: str | None = None) -> dict[str, str]:
        """A dataset row for the game of `seed`."""
        inner: dict[str, Any] = {"seed": seed} if row_id is None else {"id": row_id, "seed": seed}
        return {"prompt": json.dumps(inner)}

    def usable_seed(self, seed: int) -> bool:
        # The rules prompt shows [2 1 4 5] as its format example: a game with that code
        # would print its answer before the first move.
        return (
            super().usable_seed(seed)
            and self.secret(ArenaGame(self.env_id, seed)) != MASTERMIND_EXAMPLE
        )

    def hidden_values(self, instance: ArenaInstance) -> list[str]:
        code = self.secret(self.new_game(instance))
        spaced = " ".join(map(str, code))
        return [f"[{spaced}]", spaced, "".join(map(str, code)), str(code)]


class LightsOutTask(TextArenaTask):
    """TextArena's LightsOut-v0: switch a scrambled 5x5 grid off in 20 presses.

    The board is the whole state and is shown: there is no secret to hide.
    """

    name: ClassVar[str] = "textarena_lights_out"
    description: ClassVar[str] = "TextArena LightsOut-v0: turn a scrambled 5x5 grid off"
    env_id: ClassVar[str] = "LightsOut-v0"
    game: ClassVar[str] = "lights_out"
    has_secret: ClassVar[bool] = False
    # 20 presses, each may be preceded by one warned invalid move.
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(max_turns=42, max_tool_calls=42)

    def secret(self, game: ArenaGame) -> list[list[bool]]:
        return [list(row) for row in game.game_state["grid"]]


TASKS: tuple[type[TextArenaTask], ...] = (GuessTheNumberTask, MastermindTask, LightsOutTask)
