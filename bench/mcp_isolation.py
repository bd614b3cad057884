"""What each MCP isolation costs an episode: a fresh server process per episode, a pooled
server reset between episodes, a session per episode on a running streamable-HTTP server.

    python bench/mcp_isolation.py [--episodes 10]

Plays `--episodes` expert episodes of the inventory task (plugins/inventory: 4 calls each)
one after another under each isolation, and prints per episode: the time to connect (start
the server, initialize, list the tools), the time to close, the whole episode, and the
server's resident memory (a stdio server's once it has listed its tools: one such process
per concurrently playing episode under "process", one per concurrent episode at most in the
pool; the HTTP server's after the run).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentrft_inventory import InventoryTask
from agentrft_inventory.task import InventoryEnv

from agentrft import run_episode
from agentrft.mcp import HTTPServer, MCPEnvironment
from agentrft.mcp.connection import MCPConnection
from agentrft.mcp.pool import close_pools
from agentrft.testing import free_port, wait_for_port


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Timed:
    """Wraps MCPConnection.open/close to time them and read the server's memory."""

    def __init__(self) -> None:
        self.open_s: list[float] = []
        self.close_s: list[float] = []
        self.rss: list[float] = []
        self._open = MCPConnection.open
        self._close = MCPConnection.close

    def install(self) -> None:
        timed = self

        async def open_(spec: Any) -> MCPConnection:
            t0 = time.perf_counter()
            conn = await timed._open(spec)
            timed.open_s.append(time.perf_counter() - t0)
            timed.rss.append(children_rss())  # the stdio servers alive now (0 over HTTP)
            return conn

        async def close_(self: MCPConnection, timeout_s: float = 8.0) -> None:
            t0 = time.perf_counter()
            await timed._close(self, timeout_s)
            timed.close_s.append(time.perf_counter() - t0)

        MCPConnection.open = staticmethod(open_)  # type: ignore[assignment,method-assign]
        MCPConnection.close = close_  # type: ignore[method-assign]

    def uninstall(self) -> None:
        MCPConnection.open = self._open  # type: ignore[method-assign]
        MCPConnection.close = self._close  # type: ignore[method-assign]


def children_rss() -> float:
    """Resident memory of this process's live children (the stdio servers), MB."""
    me = str(Path("/proc/self").resolve().name)
    total = 0.0
    for pid in Path("/proc").iterdir():
        if not pid.name.isdigit():
            continue
        try:
            stat = (pid / "stat").read_text()
        except OSError:
            continue
        if stat.split(") ")[1].split()[1] == me:
            total += rss_mb(int(pid.name))
    return total


async def play(task: InventoryTask, rows: list[str], timed: Timed) -> list[float]:
    """Episode wall times; samples the servers' memory mid-episode."""
    walls = []
    for prompt in rows:
        t0 = time.perf_counter()
        traj = await run_episode(task, prompt, task.expert())
        assert traj.reward.outcome == "right_action", traj.failures
        walls.append(time.perf_counter() - t0)
    return walls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--episodes", type=int, default=10)
    args = ap.parse_args()
    rows = [r["prompt"] for r in InventoryTask().make_dataset("validation", args.episodes, 1)]
    print(f"{args.episodes} expert episodes of inventory (4 tool calls each), one at a time")

    for isolation in ("process", "pool"):
        task = InventoryTask(isolation=isolation)  # type: ignore[arg-type]
        timed = Timed()
        timed.install()

        async def run(
            task: InventoryTask = task, timed: Timed = timed
        ) -> tuple[list[float], float]:
            walls = await play(task, rows, timed)
            mem = children_rss()  # the pool's idle server; none left for "process"
            await close_pools()
            return walls, mem

        try:
            walls, mem = asyncio.run(run())
        finally:
            timed.uninstall()
        report(isolation, walls, timed, mem)

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentrft_inventory.server", "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, timeout_s=10, process=proc)
        spec = HTTPServer(
            name="inventory",
            url=f"http://127.0.0.1:{port}/mcp",
            hidden_tools=("load_scenario", "audit"),
            reset_tool="reset",
        )

        class HttpTask(InventoryTask):
            def environment(self, instance: Any) -> InventoryEnv:
                env = InventoryEnv(instance, self.server)
                MCPEnvironment.__init__(env, servers=[spec])
                env.scenario, env.actions = instance, 0
                return env

        timed = Timed()
        timed.install()
        try:
            walls = asyncio.run(play(HttpTask(), rows, timed))
        finally:
            timed.uninstall()
        report("session (HTTP)", walls, timed, rss_mb(proc.pid))
    finally:
        proc.terminate()
        proc.wait(10)


def report(label: str, walls: list[float], timed: Timed, mem: float) -> None:
    def ms(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1000:7.1f} ms" if xs else "      - ms"

    if any(timed.rss):  # a stdio server's resident memory once it has listed its tools
        mem = statistics.median(timed.rss)
    print(
        f"{label:15s} connect {ms(timed.open_s)} ({len(timed.open_s)} starts) · close "
        f"{ms(timed.close_s)} · episode {ms(walls)} (medians) · server memory {mem:.0f} MB"
    )


if __name__ == "__main__":
    main()
