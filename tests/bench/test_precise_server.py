"""`BenchServer` (bench/precise_server.py): the benchmarks' loopback server in a child
process, delivering its latency to within microseconds."""

from __future__ import annotations

import http.client
import json
import threading

import pytest
from precise_server import BenchServer

from agentrft import run_episodes
from agentrft.policies.openai_client import OpenAIPolicy
from agentrft.testing import FindNumberTask, counter_script, find_number_expert


def _chat(server: BenchServer, prompt: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    body = json.dumps({"messages": [{"role": "user", "content": prompt}]})
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    assert conn.getresponse().status == 200
    conn.close()


@pytest.mark.parametrize("precise", [False, True])
def test_delivered_latency_is_recorded_and_precise_when_asked(precise: bool) -> None:
    latency = 0.02
    with BenchServer(counter_script, latency_s=latency, precise=precise) as server:
        for i in range(8):
            _chat(server, f"episode {i % 2}")
        # concurrent requests share the server's one spinner: all leave on time
        threads = [threading.Thread(target=_chat, args=(server, "burst")) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        timings = server.latencies()
        assert server.requests == []  # record=False (the default here) keeps timings only
        server.clear()
        assert server.latencies() == []
    assert len(timings) == 16
    assert len({t.conversation for t in timings}) == 3  # grouped by first user message
    over = sorted(t.latency_s - latency for t in timings)
    assert over[0] >= 0  # never early
    if precise:
        # A plain asyncio.sleep is typically 0.2-1.5 ms late; spinning gets to microseconds
        # (the median is robust to the odd preemption on a shared machine).
        assert over[len(over) // 2] < 0.0005


async def test_the_child_process_serves_and_records() -> None:
    task = FindNumberTask()
    rows = [r["prompt"] for r in task.make_dataset("test", 3, seed=0)]
    with BenchServer(find_number_expert, record=True, parse_messages=True) as server:
        assert server.pid is not None
        async with OpenAIPolicy("m", server.base_url) as p:
            trajs = await run_episodes(task, rows, p, concurrency=3)
        assert all(t.solved for t in trajs)
        assert len(server.chat_requests) == sum(len(t.turns) for t in trajs)
        assert len(server.latencies()) == len(server.chat_requests)  # over the pipe
        assert server.stats()["connections"] == 3
        server.clear()
        assert server.requests == []
        with pytest.raises(RuntimeError, match="cannot change"):
            server.script = counter_script
    assert server.port is None and server.pid is None


def test_the_script_must_be_picklable() -> None:
    with pytest.raises(TypeError, match="picklable"):
        BenchServer(lambda m, t: "x").start()
