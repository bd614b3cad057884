"""Wordle environment speed: a full 6-guess game with shaping, and the entropy table.

    .venv/bin/python bench/wordle_env.py [--games 300] [--tables 3]

Goals (issue 3): a game <= 1 ms (median), the entropy table <= 5 s.
A "game" is six guesses through `WordleGame` with every shaping term (feedback, knowledge,
violations, entropy of the first guess, possibility reduction) and the reward computed
through the task's tiers. Guesses are random allowed words, so the per-guess feedback
cache rarely helps; answers are random validation words.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from agentrft_wordle import WordleTask, allowed_words, answer_words
from agentrft_wordle.entropy import build_pattern_table, guess_entropy
from agentrft_wordle.environment import WordleEnvironment
from agentrft_wordle.game import WordleGame

from agentrft import Trajectory


def time_games(n: int, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    task = WordleTask()
    answers, words = answer_words(), allowed_words()
    empty = Trajectory(id="bench", task="wordle", prompt="")
    times = []
    for _ in range(n):
        answer = rng.choice(answers)
        guesses = rng.sample([w for w in rng.sample(words, 12) if w != answer], 6)
        t0 = time.perf_counter()
        env = WordleEnvironment(WordleGame(answer))
        for g in guesses:
            env.game.guess(g)
        task.reward(env, empty)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--tables", type=int, default=3)
    args = parser.parse_args()
    guess_entropy("slate")  # load the word lists and the answer pool once
    time_games(20, seed=1)  # warm-up
    games = time_games(args.games)
    tables = []
    for _ in range(args.tables):
        t0 = time.perf_counter()
        table = build_pattern_table()
        tables.append(time.perf_counter() - t0)
    print(
        f"full 6-guess game with shaping: median {statistics.median(games) * 1e3:.3f} ms "
        f"(p90 {sorted(games)[int(0.9 * len(games))] * 1e3:.3f} ms, {len(games)} games; goal <= 1 ms)"
    )
    print(
        f"entropy table ({table.matrix.shape[0]} guesses x {table.matrix.shape[1]} answers): "
        f"median {statistics.median(tables):.2f} s ({len(tables)} builds; goal <= 5 s)"
    )


if __name__ == "__main__":
    main()
