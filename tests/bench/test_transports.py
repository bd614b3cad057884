"""The benchmarks' other HTTP clients (bench/transports.py) keep `OpenAIPolicy`'s semantics,
so bench/rollouts.py compares clients and not behaviours: the same request, the same
answer, the same failure kinds and retries, the same auth and scrubbing, one pool."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from transports import TRANSPORTS, policy_for

from agentrft import Completion, Message, PolicyError, Sampling, call, run_episode
from agentrft.policies.openai_client import CachedToken
from agentrft.testing import (
    FakeOpenAIServer,
    FindNumberTask,
    disconnect,
    find_number_expert,
    http_error,
    malformed_body,
    rate_limited,
    sequence,
    slow,
)

TASK = FindNumberTask()
ROW = json.dumps({"secret": 37, "low": 1, "high": 100})
FAST = {"backoff_base_s": 0.001, "backoff_max_s": 0.01}
#: The benchmark's alternatives (the product's own transports are tests/test_policies_openai.py's).
OTHERS = [t for t in TRANSPORTS if t not in ("default", "sdk")]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(find_number_expert) as srv:
        yield srv


@pytest.fixture
def fake(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    server.script = find_number_expert
    server.clear()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return server


@pytest.fixture(params=OTHERS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def policy(transport: str, url: str, **kw: Any) -> Any:
    return policy_for(
        transport, "fake-model", url, **{"max_retries": 2, "timeout_s": 5.0, **FAST, **kw}
    )


async def play(p: Any) -> Any:
    try:
        return await run_episode(TASK, ROW, p)
    finally:
        await p.aclose()


async def test_the_same_request_and_answer(fake: FakeOpenAIServer, transport: str) -> None:
    msg = Message(role="assistant", tool_calls=[call("guess", {"number": 37})], reasoning="mid")
    fake.script = lambda messages, tools: Completion(
        message=msg, prompt_token_ids=[1, 2], completion_token_ids=[9], logprobs=[-0.5]
    )
    traj = await play(policy(transport, fake.base_url, headers={"X-Test": "yes"}))
    assert traj.solved and traj.failures == []
    (request,) = fake.chat_requests
    assert request.headers["x-test"] == "yes"
    assert (
        request.body["model"] == "fake-model"
        and request.body["max_tokens"] == Sampling().max_tokens
    )
    assert [t["function"]["name"] for t in request.body["tools"]] == ["guess", "give_up"]
    turn = traj.turns[0]
    assert (turn.assistant.reasoning, turn.prompt_token_ids, turn.logprobs) == (
        "mid",
        [1, 2],
        [-0.5],
    )


@pytest.mark.parametrize(
    ("reply", "kind", "requests"),
    [
        (http_error(500), "http_error", 3),
        (rate_limited(0.001), "rate_limited", 3),
        (http_error(400, "context too long"), "http_error", 1),
        (malformed_body(), "policy_error", 1),
        (disconnect(), "policy_error", 3),
    ],
)
async def test_the_same_failure_kinds_and_retries(
    fake: FakeOpenAIServer, transport: str, reply: Any, kind: str, requests: int
) -> None:
    fake.script = lambda messages, tools: reply
    traj = await play(policy(transport, fake.base_url))
    assert traj.failure_kinds == [kind]
    assert traj.reward is not None and traj.reward.total == TASK.lowest_reward().total
    assert len(fake.chat_requests) == requests


async def test_a_timeout_and_a_refused_connection(fake: FakeOpenAIServer, transport: str) -> None:
    fake.script = lambda messages, tools: slow(2.0, "late")
    traj = await play(policy(transport, fake.base_url, timeout_s=0.15, max_retries=1))
    assert traj.stop_reason == "policy_timeout" and len(fake.chat_requests) == 2
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    traj = await play(policy(transport, f"http://127.0.0.1:{port}/v1", max_retries=1))
    assert traj.stop_reason == "policy_error"
    assert "connection to POST" in traj.failures[0].detail
    assert "(after 2 attempts)" in traj.failures[0].detail


async def test_the_same_auth_and_scrubbing(fake: FakeOpenAIServer, transport: str) -> None:
    tokens = iter(["tok-1-abcdef", "tok-2-abcdef"])
    provider = CachedToken(lambda: next(tokens), ttl_s=3600)
    fake.script = sequence(http_error(401, "expired"), then=find_number_expert)
    assert (await play(policy(transport, fake.base_url, token_provider=provider))).solved
    auth = [r.headers["authorization"] for r in fake.chat_requests]
    assert auth[0] == "Bearer tok-1-abcdef" and set(auth[1:]) == {"Bearer tok-2-abcdef"}

    fake.clear()
    key = "sk-test-very-secret-key-123"
    fake.script = lambda messages, tools: http_error(401, f"bad key {key}")
    p = policy(transport, fake.base_url, api_key=key)
    with pytest.raises(PolicyError) as info:
        await p.complete([Message(role="user", content="hi")], [], Sampling())
    await p.aclose()
    assert (
        key not in str(info.value)
        and fake.chat_requests[0].headers["authorization"] == f"Bearer {key}"
    )

    fake.clear()
    fake.script = lambda messages, tools: "hello"
    p = policy(transport, fake.base_url.replace("http://", "http://agent:pw-9x8y7z@"))
    await p.complete([Message(role="user", content="hi")], [], Sampling())
    await p.aclose()
    basic = "Basic " + base64.b64encode(b"agent:pw-9x8y7z").decode()
    assert fake.chat_requests[0].headers["authorization"] == basic
    assert "pw-9x8y7z" not in repr(p)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_one_pool_per_loop(transport: str) -> None:
    with FakeOpenAIServer(find_number_expert) as server:
        p = policy(transport, server.base_url)

        async def episodes() -> None:
            for _ in range(3):  # sequential episodes share one keep-alive connection
                assert (await run_episode(TASK, ROW, p)).solved

        asyncio.run(episodes())
        assert server.stats()["connections"] == 1
        asyncio.run(episodes())  # a new loop gets a new pool
        asyncio.run(p.aclose())
        assert server.stats()["connections"] == 2


def test_an_unknown_transport_is_refused() -> None:
    with pytest.raises(ValueError, match="transport must be one of"):
        policy_for("grpc", "m", "http://127.0.0.1:1/v1")
