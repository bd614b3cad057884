"""`OpenAIPolicy` against the loopback `FakeOpenAIServer`: every injected fault ends an
episode with a reward and a recorded failure kind; retries, backoff and Retry-After;
bearer-token refresh; secrets never in errors; response mapping. (The benchmarks' other HTTP
clients get the same checks in tests/bench/test_transports.py.)"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentrft import Completion, Message, PolicyError, Sampling, call, run_episode
from agentrft.policies.openai_client import (
    CachedToken,
    OpenAIPolicy,
    completion_from_openai,
    env_proxy,
)
from agentrft.policies.retry import RetryPolicy, parse_retry_after
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
LOWEST = TASK.lowest_reward().total
FAST = {"backoff_base_s": 0.001, "backoff_max_s": 0.01}


@pytest.fixture(autouse=True, params=["aiohttp", "sdk"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on both of OpenAIPolicy's transports: each policy a test makes
    (through `policy()` or directly) gets this one as its default."""
    defaults = {**(OpenAIPolicy.__init__.__kwdefaults__ or {}), "transport": request.param}
    monkeypatch.setattr(OpenAIPolicy.__init__, "__kwdefaults__", defaults)
    return str(request.param)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(find_number_expert) as srv:
        yield srv


@pytest.fixture
def fake(server: FakeOpenAIServer) -> FakeOpenAIServer:
    server.script = find_number_expert
    server.clear()
    return server


def policy(fake: FakeOpenAIServer, **kw: Any) -> OpenAIPolicy:
    options = {"max_retries": 2, "timeout_s": 5.0, **FAST, **kw}
    return OpenAIPolicy("fake-model", fake.base_url, **options)


async def play(p: OpenAIPolicy, **kw: Any) -> Any:
    try:
        return await run_episode(TASK, ROW, p, **kw)
    finally:
        await p.aclose()


# --- whole episodes ----------------------------------------------------------------------


async def test_expert_episode_over_http(fake: FakeOpenAIServer) -> None:
    traj = await play(policy(fake, headers={"X-Amzn-SageMaker-Test": "yes"}))
    assert traj.solved and traj.stop_reason == "done" and traj.failures == []
    requests = fake.chat_requests
    assert len(requests) == len(traj.turns)
    first = requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers["x-amzn-sagemaker-test"] == "yes"
    body = first.body
    assert body["model"] == "fake-model"
    assert [t["function"]["name"] for t in body["tools"]] == ["guess", "give_up"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    # The second request carries the first call and its answer, in OpenAI's shape.
    second = requests[1].body["messages"]
    assert second[2]["tool_calls"][0]["function"]["name"] == "guess"
    assert (
        second[3]["role"] == "tool"
        and second[3]["tool_call_id"] == (second[2]["tool_calls"][0]["id"])
    )
    assert traj.turns[0].prompt_tokens > 0 and traj.turns[0].completion_tokens > 0


async def test_sampling_parameters_and_extras_are_sent(fake: FakeOpenAIServer) -> None:
    sampling = Sampling(
        temperature=0.7,
        top_p=0.9,
        max_tokens=64,
        seed=11,
        stop=["</s>"],
        extra={"logprobs": True, "return_token_ids": True},
    )
    p = policy(fake, extra_body={"top_k": 20, "logprobs": False})
    await play(p, sampling=sampling)
    body = fake.chat_requests[0].body
    assert body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["max_tokens"] == 64
    assert body["seed"] == 11 and body["stop"] == ["</s>"]
    assert body["top_k"] == 20
    assert body["logprobs"] is True  # Sampling.extra wins over extra_body
    assert body["return_token_ids"] is True


async def test_max_completion_tokens_replaces_max_tokens(fake: FakeOpenAIServer) -> None:
    await play(policy(fake), sampling=Sampling(extra={"max_completion_tokens": 99}))
    body = fake.chat_requests[0].body
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body


async def test_token_ids_logprobs_and_reasoning_come_back(fake: FakeOpenAIServer) -> None:
    msg = Message(role="assistant", tool_calls=[call("guess", {"number": 37})], reasoning="mid")
    fake.script = lambda messages, tools: Completion(
        message=msg, prompt_token_ids=[1, 2, 3], completion_token_ids=[9, 8], logprobs=[-0.5, -0.25]
    )
    traj = await play(policy(fake))
    turn = traj.turns[0]
    assert turn.assistant.reasoning == "mid"
    assert turn.prompt_token_ids == [1, 2, 3]
    assert turn.completion_token_ids == [9, 8]
    assert turn.logprobs == [-0.5, -0.25]
    assert traj.solved


# --- each injected fault, through the whole loop -----------------------------------------


@pytest.mark.parametrize(
    ("reply", "kind", "status", "requests"),
    [
        (http_error(500), "http_error", 500, 3),
        (http_error(503), "http_error", 503, 3),
        (rate_limited(0.001), "rate_limited", 429, 3),
        (http_error(400, "context too long"), "http_error", 400, 1),
        (malformed_body(), "policy_error", None, 1),
        (disconnect(), "policy_error", None, 3),
    ],
)
async def test_server_faults_end_the_episode_with_a_reward(
    fake: FakeOpenAIServer,
    reply: Any,
    kind: str,
    status: int | None,
    requests: int,
) -> None:
    fake.script = lambda messages, tools: reply
    traj = await play(policy(fake))
    assert traj.stop_reason == kind
    assert traj.failure_kinds == [kind]
    assert traj.reward is not None and traj.reward.total == LOWEST
    assert len(fake.chat_requests) == requests  # max_retries=2: 3 attempts when retryable
    if status:
        assert f"HTTP {status}" in traj.failures[0].detail


async def test_timeout_is_retried_then_reported(fake: FakeOpenAIServer) -> None:
    fake.script = lambda messages, tools: slow(2.0, call("guess", {"number": 37}))
    t0 = time.perf_counter()
    traj = await play(policy(fake, timeout_s=0.15, max_retries=1))
    assert traj.stop_reason == "policy_timeout"
    assert traj.failure_kinds == ["policy_timeout"]
    assert "within 0.15s" in traj.failures[0].detail
    assert traj.reward is not None and traj.reward.total == LOWEST
    assert len(fake.chat_requests) == 2
    assert time.perf_counter() - t0 < 1.5


@pytest.mark.parametrize(
    ("first", "kind"),
    [
        (call("guess", '{"number": 3'), "malformed_tool_json"),
        (call("guess_word", {"word": "crane"}), "unknown_tool"),
        ("guess(37)", "plain_text_call"),
    ],
)
async def test_model_faults_over_http(fake: FakeOpenAIServer, first: Any, kind: str) -> None:
    fake.script = sequence(first, then=find_number_expert)
    traj = await play(policy(fake))
    assert traj.failure_kinds == [kind]
    assert traj.solved and traj.reward is not None


@pytest.mark.parametrize("reply", ["", None])
async def test_empty_reply_over_http(fake: FakeOpenAIServer, reply: Any) -> None:
    fake.script = lambda messages, tools: reply
    traj = await play(policy(fake))
    assert traj.failure_kinds == ["empty_reply"] and traj.stop_reason == "empty_reply"
    assert traj.reward is not None


async def test_plain_text_without_a_call_over_http(fake: FakeOpenAIServer) -> None:
    fake.script = lambda messages, tools: "I think it is somewhere in the middle."
    traj = await play(policy(fake))
    assert traj.failure_kinds == ["no_tool_call"]


async def test_connection_refused_is_a_policy_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = OpenAIPolicy("m", f"http://127.0.0.1:{port}/v1", max_retries=1, **FAST)
    traj = await play(p)
    assert traj.stop_reason == "policy_error"
    assert "connection to POST" in traj.failures[0].detail
    assert "(after 2 attempts)" in traj.failures[0].detail


# --- retries -----------------------------------------------------------------------------


async def test_429_then_success(fake: FakeOpenAIServer) -> None:
    fake.script = sequence(rate_limited(0.001), http_error(502), then=find_number_expert)
    traj = await play(policy(fake))
    assert traj.solved and traj.failures == []
    assert len(fake.chat_requests) == len(traj.turns) + 2


async def test_retry_after_is_honoured(fake: FakeOpenAIServer) -> None:
    fake.script = sequence(rate_limited(0.25), then=find_number_expert)
    p = policy(fake, backoff_base_s=0.001, backoff_max_s=5.0)
    t0 = time.perf_counter()
    completion = await p.complete(TASK.initial_messages(TASK.parse(ROW)), [], Sampling())
    elapsed = time.perf_counter() - t0
    await p.aclose()
    assert completion.message.tool_calls
    assert 0.25 <= elapsed < 2.0


async def test_retry_after_is_capped_by_backoff_max(fake: FakeOpenAIServer) -> None:
    fake.script = sequence(rate_limited(30), then=find_number_expert)
    p = policy(fake, backoff_max_s=0.05)
    t0 = time.perf_counter()
    await p.complete(TASK.initial_messages(TASK.parse(ROW)), [], Sampling())
    await p.aclose()
    assert time.perf_counter() - t0 < 2.0


async def test_retries_are_bounded(fake: FakeOpenAIServer) -> None:
    fake.script = lambda messages, tools: http_error(500)
    p = policy(fake, max_retries=4)
    with pytest.raises(PolicyError) as info:
        await p.complete([Message(role="user", content="hi")], [], Sampling())
    await p.aclose()
    assert info.value.kind == "http_error" and info.value.status == 500
    assert "(after 5 attempts)" in str(info.value)
    assert len(fake.chat_requests) == 5


async def test_no_retries_when_max_retries_is_zero(fake: FakeOpenAIServer) -> None:
    fake.script = lambda messages, tools: rate_limited()
    p = policy(fake, max_retries=0)
    with pytest.raises(PolicyError) as info:
        await p.complete([Message(role="user", content="hi")], [], Sampling())
    await p.aclose()
    assert info.value.kind == "rate_limited" and info.value.status == 429
    assert len(fake.chat_requests) == 1


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    retry = RetryPolicy(max_retries=10, base_s=0.1, max_s=1.0)
    for n, nominal in enumerate([0.1, 0.2, 0.4, 0.8, 1.0, 1.0]):
        delays = [retry.delay(n) for _ in range(50)]
        assert all(nominal * 0.5 <= d <= nominal for d in delays)
        assert len(set(delays)) > 1  # jittered
    assert retry.delay(0, retry_after=0.3) == 0.3
    assert retry.delay(0, retry_after=60) == 1.0
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


# --- auth and secrets --------------------------------------------------------------------


async def test_token_provider_refreshes_once_on_401(fake: FakeOpenAIServer) -> None:
    fetched: list[str] = []

    async def fetch() -> str:
        fetched.append(f"tok-{len(fetched) + 1}-abcdef")
        return fetched[-1]

    tokens = CachedToken(fetch, ttl_s=3600)
    fake.script = sequence(http_error(401, "expired token"), then=find_number_expert)
    p = OpenAIPolicy("m", fake.base_url, token_provider=tokens, **FAST)
    traj = await play(p)
    assert traj.solved and traj.failures == []
    auth = [r.headers["authorization"] for r in fake.chat_requests]
    assert auth[0] == "Bearer tok-1-abcdef"
    assert set(auth[1:]) == {"Bearer tok-2-abcdef"}  # refreshed once, then cached
    assert len(fetched) == 2


async def test_persistent_403_fails_after_one_refresh_without_leaking_the_token(
    fake: FakeOpenAIServer,
) -> None:
    calls = 0

    def provider() -> str:
        nonlocal calls
        calls += 1
        return "bearer-secret-value-0042"

    # A server that (badly) echoes the credential back in its error message.
    fake.script = lambda messages, tools: http_error(403, "token bearer-secret-value-0042 denied")
    p = OpenAIPolicy("m", fake.base_url, token_provider=provider, **FAST)
    traj = await play(p)
    assert traj.stop_reason == "http_error"
    detail = traj.failures[0].detail
    assert "HTTP 403" in detail and "check the API key or token" in detail
    assert "bearer-secret-value-0042" not in detail and "***" in detail
    assert len(fake.chat_requests) == 2 and calls == 2


async def test_api_key_is_sent_but_never_shown(fake: FakeOpenAIServer) -> None:
    key = "sk-test-very-secret-key-123"
    fake.script = lambda messages, tools: http_error(401, f"Incorrect API key provided: {key}")
    p = OpenAIPolicy("m", fake.base_url, api_key=key, **FAST)
    with pytest.raises(PolicyError) as info:
        await p.complete([Message(role="user", content="hi")], [], Sampling())
    await p.aclose()
    assert fake.chat_requests[0].headers["authorization"] == f"Bearer {key}"
    assert info.value.status == 401 and key not in str(info.value)
    assert key not in repr(p)
    assert len(fake.chat_requests) == 1  # no token provider: a 401 is final


async def test_credential_headers_are_scrubbed(fake: FakeOpenAIServer) -> None:
    secret = "hdr-secret-987654"
    fake.script = lambda messages, tools: http_error(400, f"bad header {secret}")
    p = OpenAIPolicy("m", fake.base_url, headers={"X-Api-Key": secret}, max_retries=0)
    with pytest.raises(PolicyError) as info:
        await p.complete([Message(role="user", content="hi")], [], Sampling())
    await p.aclose()
    assert fake.chat_requests[0].headers["x-api-key"] == secret
    assert secret not in str(info.value)


async def test_url_credentials_are_not_shown(fake: FakeOpenAIServer) -> None:
    fake.script = lambda messages, tools: http_error(500)
    url = fake.base_url.replace("http://", "http://user:hunter22@")
    p = OpenAIPolicy("m", url, max_retries=0)
    with pytest.raises(PolicyError) as info:
        await p.complete([Message(role="user", content="hi")], [], Sampling())
    await p.aclose()
    assert "hunter22" not in str(info.value) and "hunter22" not in repr(p)


def test_constructor_checks() -> None:
    with pytest.raises(ValueError, match="either api_key or token_provider"):
        OpenAIPolicy("m", "http://x/v1", api_key="k", token_provider=lambda: "t")
    with pytest.raises(ValueError, match="timeout_s"):
        OpenAIPolicy("m", "http://x/v1", timeout_s=0)
    with pytest.raises(ValueError, match="transport must be 'aiohttp' or 'sdk'"):
        OpenAIPolicy("m", "http://x/v1", transport="httpx")  # type: ignore[arg-type]


async def test_the_transport_is_the_one_chosen(fake: FakeOpenAIServer, transport: str) -> None:
    """The parametrized default reaches the client: an aiohttp session, or the SDK's."""
    p = policy(fake)
    await p.complete(TASK.initial_messages(TASK.parse(ROW)), [], Sampling())
    client = p._client
    await p.aclose()
    assert p.transport == transport
    (request,) = fake.chat_requests
    agent = request.headers["user-agent"]
    assert agent.startswith("agentrft/" if transport == "aiohttp" else "AsyncOpenAI/Python")
    assert type(client).__module__.split(".")[0] == (
        "aiohttp" if transport == "aiohttp" else "openai"
    )


async def test_cached_token_caches_and_invalidates() -> None:
    n = 0

    def fetch() -> str:
        nonlocal n
        n += 1
        return f"t{n}"

    tokens = CachedToken(fetch, ttl_s=3600)
    assert await asyncio.gather(tokens(), tokens(), tokens()) == ["t1", "t1", "t1"]
    tokens.invalidate()
    assert await tokens() == "t2"
    expiring = CachedToken(fetch, ttl_s=0)
    assert await expiring() != await expiring()


# --- lifecycle ---------------------------------------------------------------------------


# The first loop's pooled sockets die with that loop; GC reports them (harmless here).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_one_policy_across_event_loops(fake: FakeOpenAIServer) -> None:
    p = policy(fake)
    first = asyncio.run(run_episode(TASK, ROW, p))
    second = asyncio.run(run_episode(TASK, ROW, p))  # the pool is rebuilt for the new loop
    asyncio.run(p.aclose())
    assert first.solved and second.solved


async def test_aclose_twice_and_reuse(fake: FakeOpenAIServer) -> None:
    p = policy(fake)
    await p.complete(TASK.initial_messages(TASK.parse(ROW)), [], Sampling())
    await p.aclose()
    await p.aclose()
    completion = await p.complete(TASK.initial_messages(TASK.parse(ROW)), [], Sampling())
    await p.aclose()
    assert completion.message.tool_calls


async def test_one_connection_pool_reused_across_episodes() -> None:
    with FakeOpenAIServer(find_number_expert) as server:
        p = OpenAIPolicy("m", server.base_url)
        for _ in range(5):  # sequential episodes: one keep-alive connection serves them all
            assert (await run_episode(TASK, ROW, p)).solved
        await p.aclose()
        stats = server.stats()
    assert stats["connections"] == 1
    assert stats["requests"] >= 5


def test_importing_the_client_does_not_import_http_libraries() -> None:
    code = (
        "import sys, agentrft.policies.openai_client, agentrft.policies.litellm_client; "
        "print(sorted(m for m in ('openai', 'aiohttp', 'litellm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- response mapping --------------------------------------------------------------------


def test_completion_from_openai_maps_every_field() -> None:
    data = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "thinking "},
                        {"type": "text", "text": "done"},
                    ],
                    "reasoning_content": "because",
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "f", "arguments": {"x": 1}},
                        },
                        {"type": "function", "function": {"name": "g", "arguments": None}},
                    ],
                },
                "finish_reason": "tool_calls",
                "logprobs": {
                    "content": [
                        {"token": "token_id:5", "logprob": -1.0},
                        {"token": "token_id:6", "logprob": -2.0},
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 2},
        "prompt_token_ids": [1, 2],
    }
    c = completion_from_openai(data)
    assert c.message.content == "thinking done"
    assert c.message.reasoning == "because"
    calls = c.message.tool_calls or []
    assert (calls[0].id, calls[0].name, json.loads(calls[0].arguments)) == ("a", "f", {"x": 1})
    assert calls[1].name == "g" and calls[1].arguments == "{}" and calls[1].id.startswith("call_")
    assert c.finish_reason == "tool_calls"
    assert (c.prompt_tokens, c.completion_tokens) == (12, 2)
    assert c.prompt_token_ids == [1, 2]
    assert c.completion_token_ids == [5, 6]  # from "token_id:N" tokens
    assert c.logprobs == [-1.0, -2.0]


def test_completion_from_openai_prefers_explicit_token_ids_and_reasoning_field() -> None:
    data = {
        "choices": [
            {
                "message": {"role": "assistant", "content": "hi", "reasoning": "r"},
                "finish_reason": "stop",
                "token_ids": [4, 4],
                "logprobs": {
                    "content": [{"token": "h", "logprob": -0.1}, {"token": "i", "logprob": -0.2}]
                },
            }
        ]
    }
    c = completion_from_openai(data)
    assert c.completion_token_ids == [4, 4] and c.logprobs == [-0.1, -0.2]
    assert c.message.reasoning == "r" and c.message.tool_calls is None


@pytest.mark.parametrize("data", [{"choices": []}, {"error": {"message": "overloaded"}}, [1]])
def test_completion_without_choices_is_an_error(data: Any) -> None:
    with pytest.raises(Exception, match=r"no choices|not a JSON object"):
        completion_from_openai(data)


@pytest.mark.parametrize(
    ("env", "url", "proxy"),
    [
        ({}, "https://api.example.com/v1", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://api.example.com/v1", "http://proxy:3128"),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "http://10.0.0.5:8000/v1", None),
        ({"HTTP_PROXY": "http://p:1"}, "http://10.0.0.5:8000/v1", "http://p:1"),
        ({"ALL_PROXY": "http://p:2"}, "http://10.0.0.5:8000/v1", "http://p:2"),
        (
            {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "example.com"},
            "https://api.example.com/v1",
            None,
        ),
    ],
)
def test_the_aiohttp_transport_reads_the_environments_proxy_once(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], url: str, proxy: str | None
) -> None:
    """As httpx (the SDK) reads them: HTTPS_PROXY / HTTP_PROXY by scheme, ALL_PROXY, NO_PROXY."""
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"):
        for spelling in (name, name.lower()):
            monkeypatch.delenv(spelling, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert env_proxy(url) == proxy


async def test_requests_go_through_the_environments_proxy(
    fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forward proxy on loopback named by HTTP_PROXY carries every request, on both
    transports (the SDK's httpx reads the environment itself; ours reads it once)."""
    import aiohttp
    from aiohttp import web

    through: list[str] = []

    async def forward(request: web.Request) -> web.Response:
        # A proxied plain-HTTP request names its whole target (absolute-form).
        through.append(str(request.url))
        hop = {"host", "proxy-connection", "proxy-authorization", "content-length"}
        headers = {k: v for k, v in request.headers.items() if k.lower() not in hop}
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                request.method, str(request.url), data=await request.read(), headers=headers
            ) as reply,
        ):
            body = await reply.read()
            return web.Response(status=reply.status, body=body, content_type=reply.content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"):
            for spelling in (name, name.lower()):
                monkeypatch.delenv(spelling, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        traj = await play(policy(fake))
    finally:
        await runner.cleanup()
    assert traj.solved, traj.failures
    assert len(through) == len(fake.chat_requests) == len(traj.turns)
    assert all(url == f"{fake.base_url}/chat/completions" for url in through), through
