"""`LiteLLMPolicy`, offline: litellm's `openai/<model>` provider pointed at the loopback
fake server. Same error kinds and retry semantics as `OpenAIPolicy`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentrft import Message, PolicyError, Sampling, run_episode
from agentrft.policies.litellm_client import LiteLLMPolicy
from agentrft.testing import (
    FakeOpenAIServer,
    FindNumberTask,
    find_number_expert,
    http_error,
    rate_limited,
    sequence,
    slow,
)

TASK = FindNumberTask()
ROW = json.dumps({"secret": 37, "low": 1, "high": 100})
KEY = "sk-litellm-secret-4242"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(find_number_expert) as srv:
        yield srv


@pytest.fixture
def fake(server: FakeOpenAIServer) -> FakeOpenAIServer:
    server.script = find_number_expert
    server.clear()
    return server


def policy(fake: FakeOpenAIServer, **kw: Any) -> LiteLLMPolicy:
    options = {
        "api_base": fake.base_url,
        "api_key": KEY,
        "max_retries": 2,
        "backoff_base_s": 0.001,
        "backoff_max_s": 0.01,
        **kw,
    }
    return LiteLLMPolicy("openai/fake-model", **options)


async def test_episode_through_litellm(fake: FakeOpenAIServer) -> None:
    p = policy(fake, headers={"X-Trace": "t1"})
    traj = await run_episode(TASK, ROW, p, sampling=Sampling(temperature=0.3, seed=5))
    assert traj.solved and traj.failures == []
    first = fake.chat_requests[0]
    assert first.body["model"] == "fake-model"  # the provider prefix is litellm's, not the server's
    assert first.body["temperature"] == 0.3 and first.body["seed"] == 5
    assert [t["function"]["name"] for t in first.body["tools"]] == ["guess", "give_up"]
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert first.headers["x-trace"] == "t1"
    assert traj.turns[0].assistant.tool_calls
    assert traj.turns[0].prompt_tokens > 0


async def test_rate_limit_then_success(fake: FakeOpenAIServer) -> None:
    fake.script = sequence(rate_limited(0.001), http_error(503), then=find_number_expert)
    traj = await run_episode(TASK, ROW, policy(fake))
    assert traj.solved and traj.failures == []
    assert len(fake.chat_requests) == len(traj.turns) + 2  # litellm's own retries are off


@pytest.mark.parametrize(
    ("reply", "kind", "status", "attempts"),
    [
        (http_error(500), "http_error", 500, 3),
        (rate_limited(0.001), "rate_limited", 429, 3),
        (http_error(400, "bad request"), "http_error", 400, 1),
    ],
)
async def test_faults_end_the_episode_with_a_reward(
    fake: FakeOpenAIServer, reply: Any, kind: str, status: int, attempts: int
) -> None:
    fake.script = lambda messages, tools: reply
    traj = await run_episode(TASK, ROW, policy(fake))
    assert traj.stop_reason == kind and traj.failure_kinds == [kind]
    assert f"HTTP {status}" in traj.failures[0].detail
    assert traj.reward is not None and traj.reward.total == TASK.lowest_reward().total
    assert len(fake.chat_requests) == attempts


async def test_timeout(fake: FakeOpenAIServer) -> None:
    fake.script = lambda messages, tools: slow(2.0)
    t0 = time.perf_counter()
    traj = await run_episode(TASK, ROW, policy(fake, timeout_s=0.2, max_retries=0))
    assert traj.stop_reason == "policy_timeout"
    assert time.perf_counter() - t0 < 1.8


async def test_key_never_in_errors(fake: FakeOpenAIServer) -> None:
    fake.script = lambda messages, tools: http_error(401, f"Incorrect API key provided: {KEY}")
    p = policy(fake)
    with pytest.raises(PolicyError) as info:
        await p.complete([Message(role="user", content="hi")], [], Sampling())
    assert info.value.status == 401 and info.value.kind == "http_error"
    assert KEY not in str(info.value) and KEY not in repr(p)


def test_model_needs_a_provider() -> None:
    with pytest.raises(ValueError, match="provider prefix"):
        LiteLLMPolicy("gpt-4o-mini")


def test_cli_help_does_not_import_litellm() -> None:
    code = (
        "import sys; from agentrft.cli import app; "
        "print('litellm' in sys.modules, 'openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "False"
