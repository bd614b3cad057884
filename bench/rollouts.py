"""Rollout throughput against a loopback OpenAI-compatible server.

Plays `CounterTask` episodes (exactly `--turns` turns each, one tool call per turn) through
`OpenAIPolicy` and `run_episodes`, with the fake server in a child process so that it does
not share the client's core, and prints, per transport:

  (a) turns per second with a zero-latency server (`--episodes` episodes, `--concurrency`
      in flight);
  (b) wall time against the ideal with `--latency-ms` of server latency and `--concurrency`
      episodes all in flight at once: ideal = turns per episode x latency.

Transports: `openai` (the openai SDK on httpx), `openai-aiohttp` (the SDK on its aiohttp
client) and `aiohttp` (OpenAIPolicy's lean transport). Two references: the agent loop
alone with a `ScriptedPolicy` and no HTTP (the ceiling of (a)), and raw keep-alive sockets
with no client library and no agent loop (the floor of (b) on this machine and server). Each figure is the best and the median of
`--repeat` runs (the machine may be shared). Prints figures only; asserts nothing.

    .venv/bin/python bench/rollouts.py
    .venv/bin/python bench/rollouts.py --transport aiohttp --b-turns 10,40 --repeat 5
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import time
from typing import Any

from agentrft import ScriptedPolicy, run_episodes
from agentrft.policies.openai_client import OpenAIPolicy
from agentrft.testing import CounterTask, FakeOpenAIServer, counter_script

TRANSPORTS = ["openai", "openai-aiohttp", "aiohttp", "raw"]


async def _play(policy: Any, n: int, turns: int, concurrency: int) -> tuple[float, int]:
    """Wall time and total turns of `n` episodes of `turns` turns each."""
    rows = [json.dumps({"target": turns})] * n
    gc.collect()
    t0 = time.perf_counter()
    trajs = await run_episodes(CounterTask(), rows, policy, concurrency=concurrency)
    wall = time.perf_counter() - t0
    bad = [t for t in trajs if t.stop_reason != "done" or len(t.turns) != turns]
    if bad:
        raise SystemExit(f"{len(bad)} episode(s) did not run as planned: {bad[0].failures}")
    return wall, sum(len(t.turns) for t in trajs)


def _summary(values: list[float], fmt: str, best: Any = max) -> str:
    return f"best {fmt.format(best(values))}, median {fmt.format(statistics.median(values))}"


async def _turns_per_s(policy: Any, args: argparse.Namespace) -> list[float]:
    await _play(policy, args.concurrency, 2, args.concurrency)  # open the connections
    rates = []
    for _ in range(args.repeat):
        wall, turns = await _play(policy, args.episodes, args.turns, args.concurrency)
        rates.append(turns / wall)
    return rates


async def _vs_ideal(policy: Any, turns: int, args: argparse.Namespace) -> list[float]:
    await _play(policy, args.concurrency, 1, args.concurrency)
    ideal = turns * args.latency_ms / 1000.0
    ratios = []
    for _ in range(args.repeat):
        wall, _ = await _play(policy, args.concurrency, turns, args.concurrency)
        ratios.append(wall / ideal)
    return ratios


def _policy(url: str, transport: str, args: argparse.Namespace) -> OpenAIPolicy:
    return OpenAIPolicy(
        "counter",
        url,
        transport=transport,  # type: ignore[arg-type]
        max_connections=args.concurrency * 2,
        max_retries=0,  # a failed request should show, not hide in a retry
    )


async def _bench_transport(fast: str, slow: str, transport: str, args: argparse.Namespace) -> None:
    async with _policy(fast, transport, args) as policy:
        rates = await _turns_per_s(policy, args)
    print(
        f"  (a) zero latency: {_summary(rates, '{:.0f}')} turns/s "
        f"({args.episodes} episodes x {args.turns} turns, {args.concurrency} in flight)"
    )
    for turns in args.b_turns:
        async with _policy(slow, transport, args) as policy:
            ratios = await _vs_ideal(policy, turns, args)
        ideal = turns * args.latency_ms / 1000.0
        print(
            f"  (b) {args.latency_ms:g} ms x {args.concurrency} episodes x {turns} turns: "
            f"{_summary(ratios, '{:.3f}x', best=min)} ideal ({ideal:.2f} s)"
        )


async def _raw_floor(url: str, turns: int, episodes: int, args: argparse.Namespace) -> list[float]:
    """(b) with no client library and no agent loop: `episodes` raw keep-alive sockets
    each sending `turns` requests in sequence. What the machine and server allow."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
    body = json.dumps({"model": "counter", "messages": [{"role": "user", "content": "go"}]})
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
    ).encode()
    conns = [await asyncio.open_connection(host, int(port)) for _ in range(episodes)]

    async def episode(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(turns):
            writer.write(request)
            head = (await reader.readuntil(b"\r\n\r\n")).lower()
            start = head.index(b"content-length:") + 15
            json.loads(await reader.readexactly(int(head[start : head.index(b"\r\n", start)])))

    ratios = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        await asyncio.gather(*(episode(r, w) for r, w in conns))
        ratios.append((time.perf_counter() - t0) / (turns * args.latency_ms / 1000.0))
    for _, w in conns:
        w.close()
    return ratios


async def _bench_floor(slow: str, args: argparse.Namespace) -> None:
    for turns in args.b_turns:
        one = await _raw_floor(slow, turns, 1, args)
        many = await _raw_floor(slow, turns, args.concurrency, args)
        print(
            f"  (b) floor, raw sockets, {turns} turns: 1 episode {_summary(one, '{:.3f}x', min)}; "
            f"{args.concurrency} episodes {_summary(many, '{:.3f}x', min)} ideal"
        )


async def _bench_loop_only(args: argparse.Namespace) -> None:
    rates = await _turns_per_s(ScriptedPolicy(counter_script), args)
    print(f"agent loop alone (ScriptedPolicy, no HTTP): {_summary(rates, '{:.0f}')} turns/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--transport", choices=[*TRANSPORTS, "all"], default="all")
    parser.add_argument("--episodes", type=int, default=400, help="episodes for (a)")
    parser.add_argument("--turns", type=int, default=10, help="turns per episode for (a)")
    parser.add_argument(
        "--b-turns",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[10],
        help="turns per episode for (b), comma-separated (e.g. 10,40)",
    )
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    transports = TRANSPORTS if args.transport == "all" else [args.transport]

    common: dict[str, Any] = {"process": True, "record": False, "parse_messages": False}
    fast = FakeOpenAIServer(counter_script, **common)
    slow = FakeOpenAIServer(counter_script, latency_s=args.latency_ms / 1000.0, **common)
    with fast, slow:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"bench/rollouts.py on {os.cpu_count()} CPUs (load average {load})")
        asyncio.run(_bench_loop_only(args))
        asyncio.run(_bench_floor(slow.base_url, args))
        for transport in transports:
            print(f"transport={transport}")
            asyncio.run(_bench_transport(fast.base_url, slow.base_url, transport, args))


if __name__ == "__main__":
    main()
