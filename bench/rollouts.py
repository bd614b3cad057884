"""Rollout throughput against a loopback OpenAI-compatible server.

Plays `CounterTask` episodes (exactly `--turns` turns each, one tool call per turn) through
`OpenAIPolicy` and `run_episodes`, with the fake server in a child process so that it does
not share the client's core (bench/precise_server.py), and prints, per transport
(bench/transports.py):

  (a) turns per second with a zero-latency server (`--episodes` episodes, `--concurrency`
      in flight);
  (b) wall time against the ideal with `--latency-ms` of server latency and `--concurrency`
      episodes all in flight at once, against two ideals: the nominal one (turns per
      episode x latency) and the delivered one (per episode, the sum of the latencies the
      server actually delivered, measured by the server from request read to reply written;
      the largest over episodes). The server runs with precise latency (a reply leaves
      within a few microseconds of its due time; `--plain-latency` for asyncio.sleep alone).
      Then where the last episode to finish spent the wall time: start (first request out,
      i.e. the start-up stagger of the episodes), server (its delivered latencies), client
      (reply written -> next request read, summed over its turns: the client's per-turn
      cost plus loopback), tail (last reply -> run over).

Transports: `default` (`OpenAIPolicy()` as shipped: aiohttp), `sdk` (its other transport,
the openai SDK on httpx), `sdk-aiohttp` (the SDK on its aiohttp client) and `raw` (HTTP/1.1 on
asyncio streams), all with `OpenAIPolicy`'s semantics. Two references: the agent loop
alone with a `ScriptedPolicy` and no HTTP (the ceiling of (a)), and raw keep-alive sockets
with no client library and no agent loop (the floor of (b) on this machine and server). Each figure is the best and the median of
`--repeat` runs (the machine may be shared). Prints figures only; asserts nothing.

Every figure line says how much CPU other processes used meanwhile ("others' CPU", in
cores): on a shared 2-core machine only figures with that near 0 mean anything.

    .venv/bin/python bench/rollouts.py --b-turns 10,40 --repeat 5
    .venv/bin/python bench/rollouts.py --transport raw --b-turns 10,40 --repeat 5 --gc-freeze
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from precise_server import BenchServer
from transports import TRANSPORTS, policy_for

from agentrft import ScriptedPolicy, run_episodes
from agentrft.policies.openai_client import OpenAIPolicy
from agentrft.testing import CounterTask, counter_script
from agentrft.testing.fake_server import DeliveredLatency
from agentrft.testing.tasks import CounterInstance

GC_FREEZE = False  # --gc-freeze
T = TypeVar("T")


class EpisodeCounterTask(CounterTask):
    """`CounterTask` whose prompt names the episode (rows `{"target": 10, "episode": 3}`),
    so the server can tell the episodes' requests apart (it groups them by first user
    message). Otherwise the same task: one short tool call per turn."""

    def parse(self, prompt: str) -> CounterInstance:
        instance = super().parse(prompt)
        return CounterInstance(
            f"{instance.id}-{json.loads(prompt).get('episode', 0)}", instance.target
        )

    def user_prompt(self, instance: CounterInstance) -> str:
        return f"{super().user_prompt(instance)} (episode {instance.id})"


async def _play(policy: Any, n: int, turns: int, concurrency: int) -> tuple[float, float, int]:
    """Start and end (time.monotonic, the server's clock too) and total turns of `n`
    episodes of `turns` turns each."""
    rows = [json.dumps({"target": turns, "episode": i}) for i in range(n)]
    task = EpisodeCounterTask()
    gc.collect()
    if GC_FREEZE:
        gc.freeze()  # what is alive now (imports, the policy, its pool) is never scanned again
    t0 = time.monotonic()
    trajs = await run_episodes(task, rows, policy, concurrency=concurrency)
    t1 = time.monotonic()
    bad = [t for t in trajs if t.stop_reason != "done" or len(t.turns) != turns]
    if bad:
        raise SystemExit(f"{len(bad)} episode(s) did not run as planned: {bad[0].failures}")
    return t0, t1, sum(len(t.turns) for t in trajs)


class CpuMeter:
    """CPU that other processes (other users of a shared machine) used while a figure was
    measured, in cores: the whole machine's busy time (/proc/stat, steal included) less
    this process's and the servers'. Near 0 means the figure is clean. Linux only (None
    elsewhere); 10 ms tick granularity, so short runs read +-0.05 or so."""

    pids: ClassVar[list[int]] = []  # the servers, set once they run

    def __init__(self) -> None:
        self._start = self._sample()

    @classmethod
    def _sample(cls) -> tuple[float, int, int] | None:
        try:
            with open("/proc/stat") as f:
                ticks = [int(x) for x in f.readline().split()[1:]]
            own = 0
            for pid in [os.getpid(), *cls.pids]:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                own += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, ValueError, IndexError):
            return None
        return time.monotonic(), sum(ticks) - ticks[3] - ticks[4], own  # less idle, iowait

    def others(self) -> float:
        end = self._sample()
        if self._start is None or end is None or end[0] <= self._start[0]:
            return float("nan")
        busy, own = end[1] - self._start[1], end[2] - self._start[2]
        return max(0.0, busy - own) / os.sysconf("SC_CLK_TCK") / (end[0] - self._start[0])


@dataclass
class BRun:
    """One (b) run: wall time against the ideals, and the last episode's breakdown (s)."""

    wall: float
    nominal: float  # turns x latency
    delivered: float  # max over episodes of the sum of its delivered latencies
    overshoot_mean: float  # delivered latency - nominal latency, per request
    overshoot_max: float
    stagger: float  # first request of the last episode to start, after t0
    start: float  # the last-finishing episode: t0 -> its first request read
    server: float  # ... sum of its delivered latencies
    client: float  # ... sum of reply written -> next request read
    tail: float  # ... last reply written -> run over
    others: float = float("nan")  # cores other processes used meanwhile (CpuMeter)

    @property
    def vs_nominal(self) -> float:
        return self.wall / self.nominal

    @property
    def vs_delivered(self) -> float:
        return self.wall / self.delivered


def _analyse(
    t0: float, t1: float, timings: list[DeliveredLatency], episodes: int, turns: int, latency: float
) -> BRun:
    by_episode: dict[str, list[DeliveredLatency]] = defaultdict(list)
    for t in timings:
        by_episode[t.conversation].append(t)
    counts = sorted({len(v) for v in by_episode.values()})
    if len(by_episode) != episodes or counts != [turns]:
        raise SystemExit(
            f"the server saw {len(by_episode)} episodes with {counts} requests each; "
            f"expected {episodes} x {turns} (are other clients using it?)"
        )
    for reqs in by_episode.values():
        reqs.sort(key=lambda t: t.arrived)
    last = max(by_episode.values(), key=lambda reqs: reqs[-1].sent)
    overshoots = [t.latency_s - latency for t in timings]
    return BRun(
        wall=t1 - t0,
        nominal=turns * latency,
        delivered=max(sum(t.latency_s for t in reqs) for reqs in by_episode.values()),
        overshoot_mean=statistics.fmean(overshoots),
        overshoot_max=max(overshoots),
        stagger=max(reqs[0].arrived for reqs in by_episode.values()) - t0,
        start=last[0].arrived - t0,
        server=sum(t.latency_s for t in last),
        client=sum(b.arrived - a.sent for a, b in itertools.pairwise(last)),
        tail=t1 - last[-1].sent,
    )


def _b_report(label: str, runs: list[BRun]) -> str:
    """Best and median of both ratios, then the median run's breakdown (ms)."""
    nominal = [r.vs_nominal for r in runs]
    delivered = [r.vs_delivered for r in runs]
    mid = sorted(runs, key=lambda r: r.vs_nominal)[(len(runs) - 1) // 2]
    ms = 1000.0
    return (
        f"{label}: wall/nominal {_summary(nominal, '{:.4f}x', min)}; "
        f"wall/delivered {_summary(delivered, '{:.4f}x', min)}\n"
        f"      median run: wall {mid.wall * ms:.1f} ms, nominal {mid.nominal * ms:.0f}, "
        f"delivered {mid.delivered * ms:.2f}; server overshoot per reply mean "
        f"{mid.overshoot_mean * 1e6:.0f} us, max {mid.overshoot_max * 1e6:.0f} us; "
        f"all started by {mid.stagger * ms:.2f} ms; others' CPU {mid.others:.2f} cores\n"
        f"      last episode: start {mid.start * ms:.2f} + server {mid.server * ms:.2f} "
        f"+ client {mid.client * ms:.2f} + tail {mid.tail * ms:.2f} ms"
    )


def _summary(values: list[float], fmt: str, best: Any = max) -> str:
    return f"best {fmt.format(best(values))}, median {fmt.format(statistics.median(values))}"


async def _clean_runs(
    args: argparse.Namespace, one: Callable[[], Awaitable[tuple[T, float]]]
) -> tuple[list[T], str]:
    """`--repeat` runs of `one() -> (figure, others' CPU)`, dropping (and replacing, up to
    `--extra-runs` times) those during which other processes used more than
    `--max-others` cores; all runs if none was clean. Returns the figures and a note."""
    kept: list[T] = []
    dropped: list[T] = []
    while len(kept) < args.repeat and len(kept) + len(dropped) < args.repeat + args.extra_runs:
        value, others = await one()
        (dropped if others > args.max_others else kept).append(value)
    note = f" [{len(kept)} clean runs; {len(dropped)} busy one(s) dropped]" if dropped else ""
    if not kept:
        note = f" [NO CLEAN RUN: others' CPU > {args.max_others:g} cores in all]"
    return kept or dropped, note


async def _turns_per_s(policy: Any, args: argparse.Namespace) -> tuple[list[float], str]:
    await _play(policy, args.concurrency, 2, args.concurrency)  # open the connections

    async def one() -> tuple[float, float]:
        meter = CpuMeter()
        t0, t1, turns = await _play(policy, args.episodes, args.turns, args.concurrency)
        return turns / (t1 - t0), meter.others()

    return await _clean_runs(args, one)


async def _vs_ideal(
    policy: Any, server: BenchServer, turns: int, args: argparse.Namespace
) -> tuple[list[BRun], str]:
    await _play(policy, args.concurrency, 1, args.concurrency)

    async def one() -> tuple[BRun, float]:
        server.clear()
        meter = CpuMeter()
        t0, t1, _ = await _play(policy, args.concurrency, turns, args.concurrency)
        others = meter.others()
        latency = args.latency_ms / 1000.0
        run = _analyse(t0, t1, server.latencies(), args.concurrency, turns, latency)
        run.others = others
        return run, others

    return await _clean_runs(args, one)


def _policy(url: str, transport: str, args: argparse.Namespace) -> OpenAIPolicy:
    return policy_for(  # type: ignore[no-any-return]
        transport,
        "counter",
        url,
        max_connections=args.concurrency * 2,
        max_retries=0,  # a failed request should show, not hide in a retry
    )


async def _bench_transport(
    fast: str, slow: BenchServer, transport: str, args: argparse.Namespace
) -> None:
    async with _policy(fast, transport, args) as policy:
        rates, note = await _turns_per_s(policy, args)
    figures: dict[str, Any] = {"zero_latency_turns_per_s": max(rates), "vs_ideal": {}}
    RESULTS["transports"][transport] = figures
    print(
        f"  (a) zero latency: {_summary(rates, '{:.0f}')} turns/s "
        f"({args.episodes} episodes x {args.turns} turns, {args.concurrency} in flight)"
        f"{note}"
    )
    for turns in args.b_turns:
        async with _policy(slow.base_url, transport, args) as policy:
            runs, note = await _vs_ideal(policy, slow, turns, args)
        label = f"{args.latency_ms:g} ms x {args.concurrency} episodes x {turns} turns"
        print(f"  (b) {_b_report(label, runs)}{note}")
        figures["vs_ideal"][str(turns)] = min(r.vs_nominal for r in runs)


async def _raw_floor(
    server: BenchServer, turns: int, episodes: int, args: argparse.Namespace
) -> tuple[list[BRun], str]:
    """(b) with no client library and no agent loop: `episodes` raw keep-alive sockets
    each sending `turns` requests in sequence. What the machine and server allow."""
    host, port = "127.0.0.1", server.port

    def request(i: int) -> bytes:
        messages = [{"role": "user", "content": f"go {i}"}]  # the server groups by this
        body = json.dumps({"model": "counter", "messages": messages})
        return (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        ).encode()

    conns = [await asyncio.open_connection(host, port) for _ in range(episodes)]

    async def episode(i: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = request(i)
        for _ in range(turns):
            writer.write(data)
            head = (await reader.readuntil(b"\r\n\r\n")).lower()
            start = head.index(b"content-length:") + 15
            json.loads(await reader.readexactly(int(head[start : head.index(b"\r\n", start)])))

    latency = args.latency_ms / 1000.0

    async def one() -> tuple[BRun, float]:
        server.clear()
        meter = CpuMeter()
        t0 = time.monotonic()
        await asyncio.gather(*(episode(i, r, w) for i, (r, w) in enumerate(conns)))
        t1 = time.monotonic()
        others = meter.others()
        run = _analyse(t0, t1, server.latencies(), episodes, turns, latency)
        run.others = others
        return run, others

    runs = await _clean_runs(args, one)
    for _, w in conns:
        w.close()
    return runs


async def _bench_floor(slow: BenchServer, args: argparse.Namespace) -> None:
    for turns in args.b_turns:
        for episodes in (1, args.concurrency):
            runs, note = await _raw_floor(slow, turns, episodes, args)
            label = f"floor, raw sockets, {episodes} episode(s) x {turns} turns"
            print(f"  (b) {_b_report(label, runs)}{note}")


#: The figures of this run, for `--json FILE`: the loop alone, and per transport its best
#: zero-latency turns/s and its best wall/nominal ratio per (b) turn count.
RESULTS: dict[str, Any] = {"transports": {}}


async def _bench_loop_only(args: argparse.Namespace) -> None:
    rates, note = await _turns_per_s(ScriptedPolicy(counter_script), args)
    RESULTS["loop_turns_per_s"] = max(rates)
    print(f"agent loop alone (ScriptedPolicy, no HTTP): {_summary(rates, '{:.0f}')} turns/s{note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--transport",
        type=_transports,
        default=list(TRANSPORTS),
        help=f"all (default) or a comma-separated list of {', '.join(TRANSPORTS)}",
    )
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
    parser.add_argument("--repeat", type=int, default=3, help="clean runs per figure")
    parser.add_argument(
        "--max-others",
        type=float,
        default=0.15,
        help="a run during which other processes used more CPU than this (cores) is "
        "dropped and run again (a shared machine); inf keeps every run",
    )
    parser.add_argument(
        "--extra-runs", type=int, default=10, help="at most this many runs dropped per figure"
    )
    parser.add_argument(
        "--plain-latency",
        action="store_true",
        help="the server waits with asyncio.sleep alone (up to ~1-2 ms late), not precisely",
    )
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() in the client before each run (what a rollout worker could do "
        "after its setup): shows what the cyclic collector's pauses cost; off by default",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    global GC_FREEZE
    GC_FREEZE = args.gc_freeze
    transports = args.transport

    fast = BenchServer(counter_script)
    slow = BenchServer(
        counter_script, latency_s=args.latency_ms / 1000.0, precise=not args.plain_latency
    )
    with fast, slow:
        CpuMeter.pids = [p for p in (fast.pid, slow.pid) if p is not None and p != os.getpid()]
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        gc_note = ", client gc.freeze()" if args.gc_freeze else ""
        latency_note = "plain" if args.plain_latency else "precise"
        print(
            f"bench/rollouts.py on {os.cpu_count()} CPUs (load average {load}); "
            f"server latency {latency_note}{gc_note}"
        )
        asyncio.run(_bench_loop_only(args))
        asyncio.run(_bench_floor(slow, args))
        for transport in transports:
            print(f"transport={transport}")
            asyncio.run(_bench_transport(fast.base_url, slow, transport, args))
    if args.json:
        RESULTS.update(episodes=args.episodes, turns=args.turns, concurrency=args.concurrency,
                       latency_ms=args.latency_ms)  # fmt: skip
        Path(args.json).write_text(json.dumps(RESULTS, indent=2) + "\n")
        print(f"figures written to {args.json}")


def _transports(text: str) -> list[str]:
    names = list(TRANSPORTS) if text == "all" else [t.strip() for t in text.split(",")]
    unknown = [t for t in names if t not in TRANSPORTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown transport(s) {', '.join(unknown)}; choose from {', '.join(TRANSPORTS)} or all"
        )
    return names


if __name__ == "__main__":
    main()
