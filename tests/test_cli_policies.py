"""`--policy` specs: expert, openai:MODEL, a bare OpenAI-compatible URL, litellm:PROVIDER/MODEL,
and the key / header options, with clear errors for everything else."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrft.cli.app import app
from agentrft.policies.litellm_client import LiteLLMPolicy
from agentrft.policies.openai_client import OpenAIPolicy
from agentrft.policies.resolve import PolicySpecError, resolve_policy
from agentrft.testing import CounterTask, FakeOpenAIServer, FindNumberTask


def test_expert_and_missing_expert() -> None:
    assert resolve_policy("expert", FindNumberTask()).name == "find_number_expert"
    with pytest.raises(PolicySpecError, match="task 'counter' has no expert policy; use openai:"):
        resolve_policy("expert", CounterTask())


def test_openai_model_uses_base_url_key_and_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env-host:9/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    p = resolve_policy("openai:gpt-x", FindNumberTask(), headers={"X-Team": "rl"})
    assert isinstance(p, OpenAIPolicy)
    assert (p.model, p.base_url, p.headers) == ("gpt-x", "http://env-host:9/v1", {"X-Team": "rl"})
    assert p._api_key == "EMPTY"  # vLLM-style servers take any key
    p = resolve_policy("openai:gpt-x", FindNumberTask(), base_url="http://flag:1/v1", api_key="k")
    assert (p.base_url, p._api_key) == ("http://flag:1/v1", "k")
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert resolve_policy("openai:gpt-x", FindNumberTask()).base_url == "https://api.openai.com/v1"
    with pytest.raises(PolicySpecError, match="needs a model name"):
        resolve_policy("openai:", FindNumberTask())


def test_url_takes_the_first_served_model() -> None:
    with FakeOpenAIServer(lambda m, t: "hi", model_name="served") as server:
        p = resolve_policy(server.base_url + "/", FindNumberTask(), api_key="secret")
        assert isinstance(p, OpenAIPolicy)
        assert (p.model, p.base_url) == ("served", server.base_url)
        (req,) = server.requests
        assert req.path.endswith("/v1/models")
        assert req.headers["authorization"] == "Bearer secret"
    p = resolve_policy("http://127.0.0.1:1/v1", FindNumberTask(), model="named")
    assert p.model == "named"  # --model: no request made


def test_url_that_does_not_answer() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(
        PolicySpecError,
        match=rf"could not list models at http://127.0.0.1:{port}/v1/models.*--model",
    ):
        resolve_policy(f"http://127.0.0.1:{port}/v1", FindNumberTask())
    with pytest.raises(PolicySpecError) as info:
        resolve_policy(f"http://user:pw-4242@127.0.0.1:{port}/v1", FindNumberTask())
    assert f"could not list models at http://127.0.0.1:{port}/v1/models" in str(info.value)
    assert "pw-4242" not in str(info.value)


def test_litellm_specs() -> None:
    p = resolve_policy("litellm:anthropic/claude-x", FindNumberTask(), headers={"a": "b"})
    assert isinstance(p, LiteLLMPolicy)
    assert (p.model, p.headers) == ("anthropic/claude-x", {"a": "b"})
    with pytest.raises(PolicySpecError, match="PROVIDER/MODEL"):
        resolve_policy("litellm:gpt-x", FindNumberTask())


def test_unknown_spec_lists_the_forms() -> None:
    with pytest.raises(PolicySpecError) as exc:
        resolve_policy("gpt-x", FindNumberTask())
    for form in ("expert", "openai:MODEL", "http://localhost:8000/v1", "litellm:PROVIDER/MODEL"):
        assert form in str(exc.value)


def _run(*args: str, env: dict[str, Any] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", **(env or {})})


def test_cli_api_key_env_and_headers(tiny_plugins) -> None:
    with FakeOpenAIServer(lambda m, t: "I will not call a tool", model_name="m") as server:
        result = _run(
            "play", "--task", "find_number", "--policy", server.base_url,
            "--api-key-env", "MY_KEY", "--header", "X-Run=42",
            env={"MY_KEY": "sk-test"},
        )  # fmt: skip
        chat = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert result.exit_code == 0, result.output
    assert "no_tool_call" in result.output  # the episode ended, with a reward
    assert chat and chat[0].headers["authorization"] == "Bearer sk-test"
    assert chat[0].headers["x-run"] == "42"
    assert "sk-test" not in result.output


def test_cli_policy_option_errors(tiny_plugins) -> None:
    result = _run(
        "play", "--task", "find_number", "--policy", "openai:m", "--api-key-env", "UNSET_VAR_X"
    )
    assert result.exit_code == 1
    assert "the environment variable UNSET_VAR_X is not set" in result.output
    result = _run("play", "--task", "find_number", "--policy", "openai:m", "--header", "novalue")
    assert result.exit_code == 1 and "NAME=VALUE" in result.output
