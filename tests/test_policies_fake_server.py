"""The loopback `FakeOpenAIServer` other tests rely on: routes, recording, latency, faults,
and request bodies sent in chunks. (The benchmarks' precise, child-process server:
tests/bench/test_precise_server.py.)"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time
from typing import Any

import pytest

from agentrft import Message, Sampling, ToolCall, run_episodes
from agentrft.policies.openai_client import OpenAIPolicy
from agentrft.testing import (
    CounterTask,
    FakeOpenAIServer,
    counter_script,
    sequence,
)


def post(server: FakeOpenAIServer, path: str, body: Any, chunked: bool = False) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    data = json.dumps(body).encode()
    if chunked:
        conn.putrequest("POST", path)
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        for i in range(0, len(data), 7):
            piece = data[i : i + 7]
            conn.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        conn.send(b"0\r\n\r\n")
    else:
        conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    out = resp.status, json.loads(resp.read() or b"null")
    conn.close()
    return out


CHAT = {"model": "m", "messages": [{"role": "user", "content": "between 1 and 9"}]}


def test_chat_reply_shape_and_recording() -> None:
    seen: list[list[Message]] = []

    def script(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        seen.append(messages)
        return [ToolCall(id="", name="guess", arguments='{"number": 5}')]

    with FakeOpenAIServer(script) as server:
        status, data = post(server, "/v1/chat/completions", {**CHAT, "tools": [{"x": 1}]})
        assert status == 200
        choice = data["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        call = choice["message"]["tool_calls"][0]
        assert call["function"] == {"name": "guess", "arguments": '{"number": 5}'}
        assert call["id"]  # filled in
        assert data["usage"]["prompt_tokens"] > 0
        assert isinstance(seen[0][0], Message) and seen[0][0].content == "between 1 and 9"
        [req] = server.requests
        assert req.method == "POST" and req.path == "/v1/chat/completions"
        assert req.body["tools"] == [{"x": 1}]
        assert req.headers["content-type"] == "application/json"
        server.clear()
        assert server.requests == []


def test_routes_and_errors() -> None:
    def broken(messages: Any, tools: Any) -> Any:
        raise KeyError("oops")

    with FakeOpenAIServer(broken, model_name="served") as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/v1/models")
        models = json.loads(conn.getresponse().read())
        assert models["data"][0]["id"] == "served"
        status, data = post(server, "/v1/chat/completions", CHAT)
        assert status == 500 and "script raised KeyError" in data["error"]["message"]
        assert post(server, "/v1/embeddings", CHAT)[0] == 404
        assert post(server, "/v1/chat/completions", {"model": "m"})[0] == 400
        assert post(server, "/v1/chat/completions", {**CHAT, "stream": True})[0] == 400


def test_chunked_request_body() -> None:
    with FakeOpenAIServer(lambda m, t: "hello") as server:
        status, data = post(server, "/v1/chat/completions", CHAT, chunked=True)
        assert status == 200
        assert data["choices"][0]["message"]["content"] == "hello"
        assert server.requests[0].body == CHAT


def test_expect_100_continue() -> None:
    with (
        FakeOpenAIServer(lambda m, t: "hi") as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock,
    ):
        body = json.dumps(CHAT).encode()
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode())
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(body)
        reply = b""
        while b'"hi"' not in reply:
            reply += sock.recv(4096)
        assert reply.startswith(b"HTTP/1.1 200 OK")


def test_sequence_counts_requests_then_delegates() -> None:
    script = sequence("a", "b", then=lambda m, t: "c")
    assert [script([], []) for _ in range(4)] == ["a", "b", "c", "c"]
    repeat = sequence("x")
    assert [repeat([], []) for _ in range(2)] == ["x", "x"]
    with pytest.raises(ValueError):
        sequence()


async def test_latency_is_concurrent_not_serial() -> None:
    with FakeOpenAIServer(counter_script, latency_s=0.2) as server:
        p = OpenAIPolicy("m", server.base_url)
        msgs = [Message(role="user", content="go")]
        t0 = time.perf_counter()
        await asyncio.gather(*(p.complete(msgs, [], Sampling()) for _ in range(8)))
        elapsed = time.perf_counter() - t0
        await p.aclose()
    assert 0.2 <= elapsed < 1.0  # 8 x 0.2 s would be 1.6 s if served one by one


def _chat(server: FakeOpenAIServer, prompt: str) -> None:
    status, _ = post(server, "/v1/chat/completions", {"messages": [user(prompt)]})
    assert status == 200


def user(content: str) -> dict[str, str]:
    return {"role": "user", "content": content}


def test_delivered_latency_is_recorded() -> None:
    latency = 0.02
    with FakeOpenAIServer(counter_script, latency_s=latency, record=False) as server:
        for i in range(8):
            _chat(server, f"episode {i % 2}")
        threads = [threading.Thread(target=_chat, args=(server, "burst")) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        timings = server.latencies()
        assert server.requests == []  # record=False keeps timings only
        assert server.stats()["requests"] == 0
        server.clear()
        assert server.latencies() == []
    assert len(timings) == 16
    assert len({t.conversation for t in timings}) == 3  # grouped by first user message
    assert min(t.latency_s for t in timings) >= latency  # never early


async def test_counter_task_takes_exactly_target_turns() -> None:
    with FakeOpenAIServer(counter_script, parse_messages=False) as server:
        async with OpenAIPolicy("m", server.base_url) as p:
            [traj] = await run_episodes(CounterTask(), [json.dumps({"target": 4})], p)
    assert len(traj.turns) == 4 and traj.stop_reason == "done"
    assert traj.reward is not None and traj.reward.outcome == "exact"


def test_url_needs_a_running_server() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = FakeOpenAIServer(counter_script).base_url
