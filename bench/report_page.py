"""How long `agentrft report` takes to write a run's page, and how large the page is.

The run folder is made here from real Wordle games: the task's scripted expert plays every
episode (real tool replies, 3-6 turns each: longer than a small model's broken episodes, so
the size is an upper bound for a run of that many episodes), spread over the steps as
training episodes, plus a before and an after evaluation; each step's metrics are computed
from its own episodes. Then the page is written, timed and measured.

    python bench/report_page.py                         # 20 steps; 250, 500, 1000, 2000 episodes
    python bench/report_page.py --steps 20 --episodes 1000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from agentrft.evaluation import EvalReport, evaluate, write_report
from agentrft.plugins import get_plugins
from agentrft.report import write_report as write_page
from agentrft.trajectory import Trajectory, write_trajectories


def play(split: str, n: int) -> tuple[list[EvalReport], list[Trajectory]]:
    """The Wordle expert's games on `n` rows of `split`, with their evaluation reports."""
    task = get_plugins().task("wordle")
    made = [r["prompt"] for r in task.make_dataset(split, None, seed=0)]
    rows = (made * (n // len(made) + 1))[:n]  # a split has 640 words at most: rows repeat
    expert = task.expert()
    assert expert is not None
    return asyncio.run(evaluate(task, rows, expert, concurrency=32, policy_name="expert"))


def make_run(
    folder: Path,
    train: list[Trajectory],
    steps: int,
    held_out: tuple[list[EvalReport], list[Trajectory]],
) -> None:
    """A run directory as `train --backend local` leaves one, from these episodes."""
    per_step = max(1, len(train) // steps)
    lines = []
    for s in range(steps):
        batch = train[s * per_step : (s + 1) * per_step] or train[-per_step:]
        for t in batch:
            t.metadata["step"] = s + 1
        rewards = [t.reward.total for t in batch if t.reward]
        lines.append({
            "step": s + 1,
            "reward_mean": statistics.fmean(rewards),
            "reward_std": statistics.pstdev(rewards),
            "solve_rate": sum(t.solved for t in batch) / len(batch),
            "turns_mean": statistics.fmean(len(t.turns) for t in batch),
            "completion_tokens": sum(len(m.content or "") // 4 for t in batch for m in t.messages
                                     if m.role == "assistant"),
            **{f"failure_{k}": sum(k in {f.kind for f in t.failures} for t in batch) / len(batch)
               for k in {f.kind for t in batch for f in t.failures}},
        })  # fmt: skip
    write_trajectories(train, folder / "trajectories.jsonl")
    (folder / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in lines))
    (folder / "run.json").write_text(json.dumps({"task": "wordle", "status": "finished"}))
    (folder / "eval").mkdir()
    reports, episodes = held_out
    for label in ("before", "after"):
        write_report(folder / "eval" / f"{label}.json", reports)
        write_trajectories(episodes, folder / "eval" / f"{label}_trajectories.jsonl")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--episodes", type=int, nargs="+", default=[250, 500, 1000, 2000],
                    help="training episodes (the page also holds both evaluations')")  # fmt: skip
    ap.add_argument("--evals", type=int, default=32, help="episodes per evaluation")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    _, pool = play("train", max(args.episodes))
    held_out = play("validation", args.evals)
    print(f"report of a {args.steps}-step Wordle run (expert games, {args.evals} per evaluation)")
    for n in args.episodes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            make_run(folder, [t.model_copy(deep=True) for t in pool[:n]], args.steps, held_out)
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                page = write_page(folder)
                times.append(time.perf_counter() - t0)
            size = page.stat().st_size
            total = n + 2 * args.evals
            print(f"  {total:>5} episodes: written in {min(times):.2f} s (best of {args.repeat}), "
                  f"{size / 1e6:.2f} MB ({size / total / 1e3:.1f} kB per episode)")  # fmt: skip


if __name__ == "__main__":
    main()
