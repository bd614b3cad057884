"""Scripted games with known outcomes: the reward check's played samples and the tests'.

Each probe knows its game's secret (it is ours, not the policy's) so it can lose on
purpose, close to the answer or far from it, end the game with invalid moves after some
progress or none, or never finish it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any, Protocol, cast

from agentrft import (
    Policy,
    RewardSample,
    Task,
    TieredReward,
    Trajectory,
    call,
    replay_policy,
    run_episode,
    run_sync,
)
from agentrft_textarena.arena import ArenaGame, ArenaInstance
from agentrft_textarena.experts import lights_out_presses


class TextArenaTask(Protocol):
    """What the probes use of a TextArena task (the task module imports this one, so the
    probes name its parts instead of its class)."""

    game: str

    @property
    def tiers(self) -> TieredReward | None: ...

    def secret(self, game: ArenaGame) -> Any: ...

    def new_game(self, instance: ArenaInstance) -> ArenaGame: ...

    @staticmethod
    def row(seed: int, row_id: str | None = None) -> dict[str, str]: ...

    def expert(self) -> Policy: ...


#: Game seeds the probes play (fixed: the reward check is deterministic).
PROBE_SEEDS = (11, 23, 38)


def _move(action: str) -> Any:
    return call("move", {"action": action})


def _guess_the_number_probes(target: int) -> Iterator[tuple[str, list[Any]]]:
    others = [g for g in range(1, 21) if g != target]
    near = min(others, key=lambda g: abs(g - target))
    far = max(others, key=lambda g: abs(g - target))
    # TextArena ends GuessTheNumber-v0 at its turn limit on the 11th valid guess and scores
    # the loss by that guess's distance: ten other guesses, then the near or the far one.
    filler = [g for g in others if g not in (near, far)][:10]
    yield "loss, last guess next to the target", [_move(f"[{g}]") for g in [*filler, near]]
    yield "loss, last guess far from the target", [_move(f"[{g}]") for g in [*filler, far]]
    yield "invalid, two unbracketed words", [_move("five"), _move("six")]
    yield "invalid after a near guess", [_move(f"[{near}]"), _move("[0]"), _move("[99]")]
    yield (
        "invalid, a repeated guess twice",
        [_move(f"[{far}]"), _move(f"[{far}]"), _move(f"[{far}]")],
    )
    yield "warned once, then the target", [_move("[99]"), _move(f"[{target}]")]
    yield "unfinished, one move then text", [_move(f"[{far}]"), "I give up."]


def _code(code: tuple[int, ...]) -> str:
    return "[" + " ".join(map(str, code)) + "]"


def _mastermind_probes(secret: list[int]) -> Iterator[tuple[str, list[Any]]]:
    code = tuple(secret)
    swapped = (code[1], code[0], *code[2:])  # 2 black, 2 white: completion 0.75
    unused = [d for d in range(1, 7) if d not in code]
    poor = (unused[0], unused[1], code[1], code[0])  # 0 black, 2 white: completion 0.25
    others = [g for g in itertools.permutations(range(1, 7), 4) if g not in (code, swapped, poor)]
    # Mastermind-v0 ends at its turn limit on the 21st valid guess, scored by that guess.
    yield "loss, last guess two pegs away", [_move(_code(g)) for g in [*others[:20], swapped]]
    yield "loss, last guess with two white pegs", [_move(_code(g)) for g in [*others[:20], poor]]
    yield "invalid, two malformed guesses", [_move("[1 2]"), _move("hello")]
    yield (
        "invalid after a close guess",
        [_move(_code(swapped)), _move("[1 1 2 2]"), _move("[7 8 9 0]")],
    )
    yield "warned once, then the code", [_move("[1 2]"), _move(_code(code))]
    yield "unfinished, one move then text", [_move(_code(poor)), "I give up."]


def _lights_out_probes(board: list[list[bool]]) -> Iterator[tuple[str, list[Any]]]:
    solution = lights_out_presses(board)
    # LightsOut-v0 ends at 20 presses, scored by the share of the lights on at the start
    # that are off now. A cell pressed 20 times leaves the board as it was: completion 0.
    idle = (0, 0) if (0, 0) not in solution else (4, 4)
    yield "loss, one cell pressed twenty times", [_move(f"[{idle[0]} {idle[1]}]")] * 20
    partial = solution[: len(solution) // 2]
    pad = 20 - len(partial)
    presses = [*partial, *[idle] * (pad - pad % 2)]
    if pad % 2:  # an odd pad would toggle `idle` once: press a solution cell twice instead
        presses = [*presses, partial[0]] if partial else [*presses, idle]
    yield "loss, half the solution then idle presses", [_move(f"[{r} {c}]") for r, c in presses]
    yield "invalid, two off-board presses", [_move("[9 9]"), _move("[5 0]")]
    yield (
        "invalid after half the solution",
        [*(_move(f"[{r} {c}]") for r, c in partial), _move("x"), _move("[1]")],
    )
    first = solution[0]
    yield (
        "warned once, then the solution",
        [_move("[7 7]"), *(_move(f"[{r} {c}]") for r, c in solution)],
    )
    yield "unfinished, one move then text", [_move(f"[{first[0]} {first[1]}]"), "I give up."]


def probe_games(task: TextArenaTask, seed: int) -> Iterator[tuple[str, list[Any] | None]]:
    """(label, replies or None for the expert) for a game of `seed`."""
    secret = task.secret(task.new_game(ArenaInstance(seed=seed)))
    yield "expert", None
    families: dict[str, Callable[[Any], Iterator[tuple[str, list[Any]]]]] = {
        "guess_the_number": _guess_the_number_probes,
        "mastermind": _mastermind_probes,
        "lights_out": _lights_out_probes,
    }
    yield from families[task.game](secret)
    yield "unfinished, text instead of a move", ["I would rather not play."]


async def play_probes(
    task: TextArenaTask, seeds: tuple[int, ...] = PROBE_SEEDS
) -> list[tuple[str, int, Trajectory]]:
    """Every probe game of every seed, played through `run_episode`."""
    out = []
    for seed in seeds:
        for label, replies in probe_games(task, seed):
            row = task.row(seed, f"probe_{seed}")["prompt"]
            policy = task.expert() if replies is None else replay_policy(replies)
            out.append((label, seed, await run_episode(cast(Task[Any, Any], task), row, policy)))
    return out


def played_reward_samples(task: TextArenaTask) -> list[RewardSample]:
    """Rewards of the probe games, ranked by the tier TextArena's outcome put them in."""
    assert task.tiers is not None
    rank = {name: i for i, name in enumerate(task.tiers.names)}
    samples = []
    for label, seed, traj in run_sync(play_probes(task)):
        assert traj.reward is not None
        outcome = traj.reward.outcome
        samples.append(RewardSample(rank[outcome], outcome, f"{label} (seed {seed})", traj.reward))
    return samples
