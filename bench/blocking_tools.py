"""Sync tools that block: wall time against the ideal, and a tool that hangs.

Plays `--episodes` episodes of `--calls` tool calls each through `run_episodes`, with a
scripted policy (no model latency) and a sync tool that blocks `--block-ms` in
`time.sleep`, as a `requests` or database call would. All episodes are in flight at once,
so the ideal wall time is calls x block (0.10 s at the defaults). Prints:

  (a) the wall time of sync tools on the worker threads, and its ratio to the ideal
      (goal: <= 1.5x);
  (b) the same tool written to block the event loop itself (an `async def` that calls
      `time.sleep`), which is what every sync tool did before they ran on threads;
  (c) one episode whose tool hangs for good among the others, with `--timeout-s` of
      budget: how the hung episode ends, how long the others took, the threads given up,
      and a second round on the same pool (its capacity is intact).

Each figure is the best and the median of `--repeat` runs (the machine may be shared).
Prints figures only; asserts nothing.

    .venv/bin/python bench/blocking_tools.py [--episodes 64] [--calls 2] [--block-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import threading
import time
from typing import Any, ClassVar

from agentrft import (
    Environment,
    EpisodeLimits,
    RewardResult,
    ScriptedPolicy,
    Task,
    Tier,
    TieredReward,
    Trajectory,
    call,
    run_episodes,
    tool,
)
from agentrft.tool_threads import ToolThreads

#: Set at the end so the hung tool's thread can finish (it is a daemon thread anyway).
RELEASE = threading.Event()


class FetchEnv(Environment):
    """`calls` fetches end the episode; each blocks `block_s` (or forever when `hang`)."""

    def __init__(self, calls: int, block_s: float, hang: bool) -> None:
        super().__init__()
        self.calls, self.block_s, self.hang = calls, block_s, hang
        self.fetched = 0

    @tool
    def fetch(self, key: str) -> str:
        """Fetch one record from a slow service.

        Args:
            key: the record's key.
        """
        if self.hang:
            RELEASE.wait()
        time.sleep(self.block_s)
        self.fetched += 1
        self.done = self.fetched >= self.calls
        return f"record {key}"


class LoopBlockingEnv(FetchEnv):
    """The same tool blocking the event loop: how sync tools ran before worker threads."""

    @tool
    async def fetch(self, key: str) -> str:
        """Fetch one record from a slow service.

        Args:
            key: the record's key.
        """
        time.sleep(self.block_s)  # deliberately blocks the loop
        self.fetched += 1
        self.done = self.fetched >= self.calls
        return f"record {key}"


class FetchTask(Task[dict]):
    """Rows `{"calls": 2, "block_s": 0.05, "hang": false}`."""

    name: ClassVar[str] = "fetch_bench"
    tiers: ClassVar[TieredReward] = TieredReward(
        [Tier(name="fetched", base=1.0, solved=True), Tier(name="cut_short", base=-1.0)]
    )

    def __init__(self, timeout_s: float, on_loop: bool = False) -> None:
        self.limits = EpisodeLimits(max_turns=64, max_tool_calls=64, timeout_s=timeout_s)
        self.on_loop = on_loop

    def parse(self, prompt: str) -> dict:
        return dict(json.loads(prompt))

    def environment(self, instance: dict) -> FetchEnv:
        env_class = LoopBlockingEnv if self.on_loop else FetchEnv
        return env_class(instance["calls"], instance["block_s"], instance.get("hang", False))

    def user_prompt(self, instance: dict) -> str:
        return "Fetch the records."

    def reward(self, env: Environment, trajectory: Trajectory) -> RewardResult:
        return self.tiers.score("fetched" if env.done else "cut_short")


def fetch_script(messages: list[Any], tools: list[Any]) -> Any:
    turn = sum(1 for m in messages if m.role == "assistant")
    return call("fetch", {"key": f"k{turn}"})


def rows(n: int, calls: int, block_s: float, hang: int = -1) -> list[str]:
    return [json.dumps({"calls": calls, "block_s": block_s, "hang": i == hang}) for i in range(n)]


async def play(task: FetchTask, prompts: list[str], **kw: Any) -> tuple[float, list[Trajectory]]:
    t0 = time.perf_counter()
    trajs = await run_episodes(task, prompts, ScriptedPolicy(fetch_script), **kw)
    return time.perf_counter() - t0, trajs


def best_median(values: list[float]) -> str:
    return f"best {min(values):.3f}s, median {statistics.median(values):.3f}s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--calls", type=int, default=2, help="tool calls per episode")
    parser.add_argument("--block-ms", type=float, default=50.0)
    parser.add_argument("--timeout-s", type=float, default=1.0, help="budget for case (c)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-loop", action="store_true", help="skip (b), which is slow")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="    log: %(message)s")
    n, calls, block_s = args.episodes, args.calls, args.block_ms / 1000
    ideal = calls * block_s
    print(f"{n} episodes x {calls} calls x {args.block_ms:g} ms, all in flight; ideal {ideal:.3f}s")

    task = FetchTask(timeout_s=60)
    walls = []
    for _ in range(args.repeat):
        wall, trajs = asyncio.run(play(task, rows(n, calls, block_s), concurrency=n))
        assert all(t.stop_reason == "done" for t in trajs), trajs[0].failures
        walls.append(wall)
    ratios = f"{min(walls) / ideal:.2f}x / {statistics.median(walls) / ideal:.2f}x"
    print(f"(a) sync tools on threads: {best_median(walls)} = {ratios} the ideal")

    if not args.skip_loop:
        wall, _ = asyncio.run(
            play(FetchTask(timeout_s=600, on_loop=True), rows(n, calls, block_s), concurrency=n)
        )
        print(f"(b) blocking the event loop: {wall:.3f}s = {wall / ideal:.1f}x the ideal")

    task = FetchTask(timeout_s=args.timeout_s)
    pool = ToolThreads(n)
    wall, trajs = asyncio.run(
        play(task, rows(n, calls, block_s, hang=0), concurrency=n, tool_threads=pool)
    )
    hung, others = trajs[0], trajs[1:]
    assert hung.reward is not None
    print(
        f"(c) one hung tool, {args.timeout_s:g}s budget: run over in {wall:.3f}s; the hung "
        f"episode: stop={hung.stop_reason}, reward={hung.reward.total:g}, "
        f"wall={hung.wall_s:.3f}s; the other {len(others)}: "
        f"{sum(t.stop_reason == 'done' for t in others)} done, slowest {max(t.wall_s for t in others):.3f}s; "
        f"threads given up: {pool.lost}"
    )
    wall, trajs = asyncio.run(play(task, rows(n, calls, block_s), concurrency=n, tool_threads=pool))
    done = sum(t.stop_reason == "done" for t in trajs)
    print(
        f"    the same pool again: {done}/{n} done in {wall:.3f}s = {wall / ideal:.2f}x the ideal"
    )
    RELEASE.set()
    pool.shutdown()


if __name__ == "__main__":
    main()
