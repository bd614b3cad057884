"""Scripted games with known outcomes: the reward check's played samples and the tests'.

Each probe knows its game's secret (it is ours, not the policy's) so it can lose on
purpose, close to the answer or far from it, end the game with invalid moves after some
progress or none, or never finish it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentrft import RewardSample, Trajectory, call, replay_policy, run_episode, run_sync

if TYPE_CHECKING:
    from agentrft_textarena.task import TextArenaTask

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


def probe_games(task: TextArenaTask, seed: int) -> Iterator[tuple[str, list[Any] | None]]:
    """(label, replies or None for the expert) for a game of `seed`."""
    from agentrft_textarena.task import ArenaInstance

    secret = task.secret(task.new_game(ArenaInstance(seed=seed)))
    yield "expert", None
    yield from (
        _guess_the_number_probes(secret)
        if task.game == "guess_the_number"
        else _mastermind_probes(secret)
    )
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
            out.append((label, seed, await run_episode(task, row, policy)))
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
