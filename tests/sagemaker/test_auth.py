"""Bearer tokens for the job runtime: the token's shape, the short cache, one session."""

from __future__ import annotations

import asyncio
import base64
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from botocore.credentials import Credentials

from agentrft.backends.sagemaker.runtime import auth
from agentrft.backends.sagemaker.runtime.auth import (
    BearerTokenProvider,
    RolloutToken,
    TokenProviders,
    mint_bearer_token,
)


class FakeSession:
    """A botocore-session stand-in: counts credential lookups."""

    def __init__(self, token: str | None = None) -> None:
        self.credentials = Credentials("AKIDEXAMPLE", "secret-key", token)
        self.lookups = 0

    def get_credentials(self) -> Credentials:
        self.lookups += 1
        return self.credentials


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def decode(token: str) -> tuple[str, dict[str, list[str]]]:
    assert token.startswith("sagemaker-api-key-")
    presigned = base64.b64decode(token.removeprefix("sagemaker-api-key-")).decode()
    parts = urlsplit("https://" + presigned)
    return parts.netloc + parts.path, parse_qs(parts.query)


def test_token_is_a_presigned_call_with_bearer_token_request() -> None:
    token = mint_bearer_token(Credentials("AKIDEXAMPLE", "secret", "session-tok"), "eu-west-1", 900)
    where, query = decode(token)
    assert where == "sagemaker.amazonaws.com/"
    assert query["Action"] == ["CallWithBearerToken"]
    assert query["Version"] == ["1"]
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert query["X-Amz-Expires"] == ["900"]
    assert query["X-Amz-Credential"][0].endswith("/eu-west-1/sagemaker/aws4_request")
    assert query["X-Amz-Security-Token"] == ["session-tok"]
    assert len(query["X-Amz-Signature"][0]) == 64
    assert base64.b64decode(token[len("sagemaker-api-key-") :]).decode().endswith("&Version=1")


def test_no_credentials_or_region_is_a_clear_error() -> None:
    with pytest.raises(PermissionError, match="no AWS credentials"):
        mint_bearer_token(None, "us-east-1")
    with pytest.raises(ValueError, match="AWS_REGION"):
        mint_bearer_token(Credentials("a", "b"), "")


def test_cache_hands_out_one_token_per_window_then_re_signs() -> None:
    session, clock = FakeSession(), Clock()
    provider = BearerTokenProvider("us-east-1", session_factory=lambda: session, clock=clock)
    first = provider()
    clock.now += 299
    assert provider() == first and provider.mints == 1
    clock.now += 2  # past the 5-minute window
    provider()
    assert provider.mints == 2
    assert provider.cached() is not None


def test_invalidate_only_drops_the_stale_token() -> None:
    session, clock = FakeSession(), Clock()
    provider = BearerTokenProvider("us-east-1", session_factory=lambda: session, clock=clock)
    _, old = provider.current()
    provider.invalidate(old)  # a 403 with the current token: drop it
    _, new = provider.current()
    assert provider.mints == 2 and new != old
    provider.invalidate(old)  # a late 403 from a rollout that used the old one: ignored
    assert provider.current()[1] == new and provider.mints == 2


def test_concurrent_403s_cost_one_re_sign() -> None:
    provider = BearerTokenProvider("us-east-1", session_factory=FakeSession)
    views = [RolloutToken(provider) for _ in range(64)]

    async def all_fetch() -> None:
        await asyncio.gather(*(v() for v in views))

    asyncio.run(all_fetch())
    assert provider.mints == 1
    for v in views:  # every rollout got a 403 with the same token
        v.invalidate()
    asyncio.run(all_fetch())
    assert provider.mints == 2


def test_64_threads_mint_once() -> None:
    session = FakeSession()
    provider = BearerTokenProvider("us-east-1", session_factory=lambda: session)
    barrier = threading.Barrier(64)

    def get(_: int) -> str:
        barrier.wait()
        return provider()

    with ThreadPoolExecutor(64) as pool:
        tokens = set(pool.map(get, range(64)))
    assert len(tokens) == 1 and provider.mints == 1 and session.lookups == 1


def test_providers_share_one_per_region() -> None:
    providers = TokenProviders(session_factory=FakeSession)
    assert providers.for_region("us-east-1") is providers.for_region("us-east-1")
    assert providers.for_region("us-west-2") is not providers.for_region("us-east-1")


def test_shared_session_is_created_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    auth.reset_shared_session()
    try:
        with ThreadPoolExecutor(32) as pool:
            sessions: list[Any] = list(pool.map(lambda _: auth.shared_session(), range(32)))
        assert auth.sessions_created == 1
        assert all(s is sessions[0] for s in sessions)
    finally:
        auth.reset_shared_session()
