"""A policy URL with `user:password@` (a Basic-auth proxy in front of vLLM, say).

The rule, in `OpenAIPolicy`, in `LiteLLMPolicy` and in `--policy URL`:
the client's URL carries no credentials; they go as `Authorization: Basic ...`, unless an
API key or token provider is given, which then wins (sent as `Bearer`), with a warning.
`$OPENAI_API_KEY` is not sent to a URL that names its own credentials. The password
appears in no error, log line, report or trajectory.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrft import Message, PolicyError, Sampling
from agentrft.cli.app import app
from agentrft.policies.openai_client import CachedToken, OpenAIPolicy
from agentrft.policies.resolve import first_served_model, resolve_policy
from agentrft.policies.urls import split_userinfo
from agentrft.testing import FakeOpenAIServer, FindNumberTask, http_error

PASSWORD = "urlpw-Q7m2x9v4"
KEY = "key-5d8e2b7c41aa"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(lambda m, t: "hello", model_name="m") as srv:
        yield srv


@pytest.fixture
def fake(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAIServer:
    server.script = lambda m, t: "hello"
    server.clear()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return server


def url_with(server: FakeOpenAIServer, userinfo: str) -> str:
    return server.base_url.replace("http://", f"http://{userinfo}@")


async def one_call(policy: OpenAIPolicy) -> None:
    async with policy:
        await policy.complete([Message(role="user", content="hi")], [], Sampling())


def test_split_userinfo() -> None:
    assert split_userinfo("http://h:1/v1") == ("http://h:1/v1", None)
    assert split_userinfo("http://u:p%40ss@h:1/v1?x=1") == ("http://h:1/v1?x=1", basic("u", "p@ss"))
    assert split_userinfo("https://user@h/v1") == ("https://h/v1", basic("user", ""))
    assert split_userinfo("http://@h/v1") == ("http://h/v1", None)


async def test_url_credentials_go_as_basic_auth(
    fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An ambient OpenAI key is not what a proxy with its own credentials gets.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient-key-0123456789abcdef")
    url = url_with(fake, f"agent:{PASSWORD.replace('-', '%2D')}")
    policy = OpenAIPolicy("m", url, max_retries=0)
    assert PASSWORD not in repr(policy) and policy.base_url == fake.base_url
    await one_call(policy)
    (request,) = fake.chat_requests
    assert request.headers["authorization"] == basic("agent", PASSWORD)
    assert request.path == "/v1/chat/completions"


@pytest.mark.parametrize("auth", ["api_key", "token_provider"])
async def test_an_explicit_key_wins_over_url_credentials(
    fake: FakeOpenAIServer, auth: str, caplog: pytest.LogCaptureFixture
) -> None:
    given: dict[str, Any] = (
        {"api_key": KEY} if auth == "api_key" else {"token_provider": CachedToken(lambda: KEY)}
    )
    with caplog.at_level(logging.WARNING, logger="agentrft.policies"):
        policy = OpenAIPolicy("m", url_with(fake, f"agent:{PASSWORD}"), **given)
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "the URL's user:password is not sent" in warning and PASSWORD not in warning
    await one_call(policy)
    (request,) = fake.chat_requests
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_an_error_names_the_url_without_its_password(fake: FakeOpenAIServer) -> None:
    echoed = f"denied {basic('agent', PASSWORD)} for agent:{PASSWORD}"
    fake.script = lambda m, t: http_error(401, echoed)
    policy = OpenAIPolicy("m", url_with(fake, f"agent:{PASSWORD}"))
    with pytest.raises(PolicyError) as info:
        await one_call(policy)
    message = str(info.value)
    assert f"HTTP 401 from POST {fake.base_url}/chat/completions" in message
    assert PASSWORD not in message and basic("agent", PASSWORD)[6:] not in message


def test_the_model_list_and_the_resolver_follow_the_rule(
    fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = url_with(fake, f"agent:{PASSWORD}")
    assert first_served_model(url, None) == "m"
    assert first_served_model(url, KEY) == "m"
    sent = [r.headers["authorization"] for r in fake.requests]
    assert sent == [basic("agent", PASSWORD), f"Bearer {KEY}"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ambient-key-0123456789abcdef")
    task = FindNumberTask()
    for spec, kwargs in [(url, {}), ("openai:m", {"base_url": url})]:
        policy = resolve_policy(spec, task, model="m", **kwargs)
        assert isinstance(policy, OpenAIPolicy) and policy._api_key is None
        assert policy._client_headers["Authorization"] == basic("agent", PASSWORD)
        keyed = resolve_policy(spec, task, model="m", api_key=KEY, **kwargs)
        assert isinstance(keyed, OpenAIPolicy) and keyed._api_key == KEY
        assert "Authorization" not in keyed._client_headers


# -- litellm ------------------------------------------------------------------------------


@pytest.mark.parametrize(("api_key", "expected"), [(None, "basic"), (KEY, "bearer")])
async def test_litellm_sends_the_same_header(
    fake: FakeOpenAIServer, api_key: str | None, expected: str
) -> None:
    pytest.importorskip("litellm")
    from agentrft.policies.litellm_client import LiteLLMPolicy

    url = url_with(fake, f"agent:{PASSWORD}")
    policy = LiteLLMPolicy("openai/m", api_base=url, api_key=api_key, max_retries=0)
    assert policy.api_base == fake.base_url and PASSWORD not in repr(policy)
    await policy.complete([Message(role="user", content="hi")], [], Sampling())
    (request,) = fake.chat_requests
    want = basic("agent", PASSWORD) if expected == "basic" else f"Bearer {KEY}"
    assert request.headers["authorization"] == want


def test_litellm_eval_with_url_credentials_writes_no_password(
    fake: FakeOpenAIServer, tiny_plugins: Any, tmp_path: Path
) -> None:
    pytest.importorskip("litellm")
    fake.script = lambda m, t: f"the proxy at http://agent:{PASSWORD}@proxy said hello"
    url = url_with(fake, f"agent:{PASSWORD}")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["eval", "--task", "find_number", "--policy", "litellm:openai/m", "--base-url", url,
         "--set", "eval.n=2", "--report", str(out / "r.json"),
         "--trajectories", str(out / "t.jsonl")],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert {r.headers["authorization"] for r in fake.chat_requests} == {basic("agent", PASSWORD)}
    assert PASSWORD not in result.output
    for path in out.iterdir():
        assert PASSWORD.encode() not in path.read_bytes(), path
    trajectories = [json.loads(x) for x in (out / "t.jsonl").read_text().splitlines()]
    assert len(trajectories) == 2
    kinds = {f["kind"] for t in trajectories for f in t["failures"]}
    assert not kinds & {"http_error", "policy_error"}, kinds  # every request got through
    assert "the proxy at http://agent:***@proxy said hello" in json.dumps(trajectories)
