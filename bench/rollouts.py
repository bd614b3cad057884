"""Rollout throughput against a loopback OpenAI-compatible server.

Plays `CounterTask` episodes (exactly `--turns` turns each, one tool call per turn) through
`OpenAIPolicy` and `run_episodes`, with the fake server in a child process so that it does
not share the client's core, and prints:

  (a) turns per second with a zero-latency server (`--episodes` episodes, `--concurrency`
      in flight);
  (b) wall time against the ideal with `--latency-ms` of server latency and `--concurrency`
      episodes all in flight at once: ideal = turns x latency.

for each transport (`openai` = the openai SDK, `aiohttp` = the lean transport), plus the
agent loop alone with a `ScriptedPolicy` (no HTTP) as the ceiling. Prints figures only.

    .venv/bin/python bench/rollouts.py                 # both transports
    .venv/bin/python bench/rollouts.py --transport aiohttp --episodes 800
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time

from agentrft import ScriptedPolicy, run_episodes
from agentrft.policies.openai_client import OpenAIPolicy
from agentrft.testing import CounterTask, FakeOpenAIServer, counter_script


def _rows(n: int, turns: int) -> list[str]:
    return [json.dumps({"target": turns})] * n


async def _play(policy, n: int, turns: int, concurrency: int) -> tuple[float, int]:
    task = CounterTask()
    gc.collect()
    t0 = time.perf_counter()
    trajs = await run_episodes(task, _rows(n, turns), policy, concurrency=concurrency)
    wall = time.perf_counter() - t0
    bad = [t for t in trajs if t.stop_reason != "done" or len(t.turns) != turns]
    if bad:
        raise SystemExit(f"{len(bad)} episode(s) did not run as planned: {bad[0].failures}")
    return wall, sum(len(t.turns) for t in trajs)


async def _bench_transport(
    url: str, slow_url: str, transport: str, args: argparse.Namespace
) -> None:
    async with OpenAIPolicy(
        "counter", url, transport=transport, max_connections=args.concurrency * 2
    ) as policy:
        await _play(policy, args.concurrency, 2, args.concurrency)  # warm the pool
        wall, turns = await _play(policy, args.episodes, args.turns, args.concurrency)
    print(
        f"  (a) zero latency:  {turns / wall:8.0f} turns/s   ({turns} turns, {args.episodes} "
        f"episodes, {args.concurrency} in flight, {wall:.2f} s)"
    )
    async with OpenAIPolicy(
        "counter", slow_url, transport=transport, max_connections=args.concurrency * 2
    ) as policy:
        await _play(policy, args.concurrency, 1, args.concurrency)  # open the connections
        wall, turns = await _play(policy, args.concurrency, args.turns, args.concurrency)
    ideal = args.turns * args.latency_ms / 1000.0
    print(
        f"  (b) {args.latency_ms:g} ms x {args.concurrency}: {wall:.3f} s vs ideal {ideal:.3f} s "
        f"= {wall / ideal:.3f}x ideal   ({args.turns} turns per episode)"
    )


async def _bench_loop_only(args: argparse.Namespace) -> None:
    policy = ScriptedPolicy(counter_script)
    await _play(policy, 16, 2, args.concurrency)
    wall, turns = await _play(policy, args.episodes, args.turns, args.concurrency)
    print(f"  agent loop alone: {turns / wall:8.0f} turns/s   (ScriptedPolicy, no HTTP)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--transport", choices=["openai", "openai-aiohttp", "aiohttp", "all"], default="all"
    )
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--turns", type=int, default=10, help="turns per episode")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    transports = (
        ["openai", "openai-aiohttp", "aiohttp"] if args.transport == "all" else [args.transport]
    )

    fast = FakeOpenAIServer(counter_script, process=True, record=False, parse_messages=False)
    slow = FakeOpenAIServer(
        counter_script,
        process=True,
        record=False,
        parse_messages=False,
        latency_s=args.latency_ms / 1000.0,
    )
    with fast, slow:
        print(f"bench/rollouts.py: CounterTask, {args.turns} turns per episode")
        asyncio.run(_bench_loop_only(args))
        for transport in transports:
            print(f"transport={transport}")
            asyncio.run(_bench_transport(fast.base_url, slow.base_url, transport, args))


if __name__ == "__main__":
    main()
