"""A server that trickles its answer cannot stretch a request past `timeout_s`.

httpx's timeout (what the openai SDK uses) is per read: a server sending one byte every
50 ms never trips it, so before the fix a request on the SDK transports lasted as long as
the server kept trickling, bounded only by the episode's budget. `OpenAIPolicy` now holds
each request to `timeout_s` from start to last byte (the benchmarks' other HTTP clients too:
tests/bench/test_transports.py).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import pytest

from agentrft.messages import Message
from agentrft.policies.openai_client import OpenAIPolicy
from agentrft.policy import PolicyError, Sampling
from agentrft.rollout import run_episode
from agentrft.task import EpisodeLimits
from agentrft.testing import FindNumberTask

TIMEOUT_S = 0.5
INTERVAL_S = 0.05
#: Far longer than any request may take: a client that waits for the trickle to end hits it.
GUARD_S = 15.0

HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"


class TrickleServer:
    """Loopback HTTP/1.1 server that reads a request, then answers one byte every
    `interval_s` for as long as the client listens: the status line and headers too
    (`phase="headers"`), or complete headers and then the body (`phase="body"`)."""

    def __init__(self, phase: str, interval_s: float = INTERVAL_S) -> None:
        self.phase = phase
        self.interval_s = interval_s
        self.sent = 0  # bytes trickled so far, all connections
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)  # accept() wakes up to see `_stop`
        self._threads: list[threading.Thread] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def __enter__(self) -> TrickleServer:
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(10)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (int(line.split(b":")[1]) for line in head.split(b"\r\n")
                 if line.lower().startswith(b"content-length:")),
                0,
            )  # fmt: skip
            while len(body) < length:
                body += conn.recv(65536)
            if self.phase == "body":
                conn.sendall(HEADERS)
            stream = (HEADERS[:-2] + b"X-Pad: " if self.phase == "headers" else b"") + b" "
            i = 0
            while not self._stop.wait(self.interval_s):
                byte = stream[i : i + 1] or (b"a" if self.phase == "headers" else b" ")
                try:
                    conn.sendall(byte)
                except OSError:  # the client gave up: what the test waits for
                    return
                self.sent += 1
                i += 1


def _messages() -> list[Message]:
    return [Message(role="user", content="hi")]


@pytest.mark.parametrize("phase", ["headers", "body"])
async def test_a_trickling_answer_times_out_at_timeout_s(phase: str) -> None:
    with TrickleServer(phase) as server:
        policy = OpenAIPolicy("m", server.base_url, api_key="k", timeout_s=TIMEOUT_S, max_retries=0)
        t0 = time.perf_counter()
        try:
            with pytest.raises(PolicyError) as info:
                await asyncio.wait_for(policy.complete(_messages(), [], Sampling()), GUARD_S)
        finally:
            await policy.aclose()
        elapsed = time.perf_counter() - t0
    assert info.value.kind == "policy_timeout", info.value
    assert f"within {TIMEOUT_S:g}s" in str(info.value)
    assert TIMEOUT_S * 0.9 <= elapsed < TIMEOUT_S + 1.5, elapsed
    # The trickle was live: a read-idle timeout would have been reset every 50 ms.
    assert server.sent >= 3


async def test_retries_each_get_their_own_deadline() -> None:
    with TrickleServer("body") as server:
        policy = OpenAIPolicy(
            "m", server.base_url, api_key="k", timeout_s=TIMEOUT_S, max_retries=1,
            backoff_base_s=0.01, backoff_max_s=0.01,
        )  # fmt: skip
        t0 = time.perf_counter()
        try:
            with pytest.raises(PolicyError, match="after 2 attempts"):
                await asyncio.wait_for(policy.complete(_messages(), [], Sampling()), GUARD_S)
        finally:
            await policy.aclose()
        assert time.perf_counter() - t0 < 2 * TIMEOUT_S + 1.5


async def test_an_episode_ends_at_timeout_s_not_at_its_budget(tiny_plugins: Any) -> None:
    task = FindNumberTask()
    with TrickleServer("body") as server:
        policy = OpenAIPolicy("m", server.base_url, api_key="k", timeout_s=TIMEOUT_S, max_retries=0)
        limits = EpisodeLimits(max_turns=3, max_tool_calls=3, timeout_s=60.0)
        row = '{"secret": 3, "low": 1, "high": 9}'
        try:
            traj = await asyncio.wait_for(run_episode(task, row, policy, limits=limits), GUARD_S)
        finally:
            await policy.aclose()
    assert traj.stop_reason == "policy_timeout"
    assert traj.wall_s < TIMEOUT_S + 1.5  # not the 60 s budget
    assert traj.reward is not None and traj.reward.total == task.lowest_reward().total
