"""Credentials and bearer tokens for the SageMaker job runtime.

The job runtime's OpenAI-compatible endpoint takes `Authorization: Bearer <token>`, where the
token is `sagemaker-api-key-` + base64 of a SigV4 query-presigned
`sagemaker.amazonaws.com/?Action=CallWithBearerToken...&Version=1` (service `sagemaker`).
The role that signs it needs `sagemaker:CallWithBearerToken` (in the managed policy
`AmazonSageMakerJobRuntimeAccess`).

Lessons from the public sample, built in here:
- a fresh botocore session per rollout starved the credential provider at 32 concurrent
  rollouts, so the process keeps ONE self-refreshing session (`shared_session`);
- a token cached for an hour got 403 after the credentials rotated, so tokens live in a
  short cache (`TOKEN_CACHE_S`) under a lock, and a 403 forces one re-sign (`invalidate`).
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from typing import Any

# The token's shape, as the SageMaker SDK (sagemaker-core 2.27 token_generator) builds it.
TOKEN_PREFIX = "sagemaker-api-key-"
SIGNING_HOST = "sagemaker.amazonaws.com"
SIGNING_SERVICE = "sagemaker"
TOKEN_ACTION = "CallWithBearerToken"
TOKEN_VERSION_SUFFIX = "&Version=1"
#: How long one minted token is handed out before it is re-signed (the sample's fix: ~5 min).
TOKEN_CACHE_S = 300.0
#: X-Amz-Expires of the presigned request. It outlives the cache window so a token handed
#: out at the end of the window still covers a long rollout's next requests. [?] The SDK
#: signs for 12 h; temporary credentials cap the real lifetime anyway.
TOKEN_EXPIRES_S = 3600

_session_lock = threading.Lock()
_session: Any = None
#: How many botocore sessions this process created (tests assert it stays at one).
sessions_created = 0


def shared_session() -> Any:
    """The process's one botocore session (created on first use, then reused).

    Its credentials are botocore's refreshable credentials when the environment provides
    temporary ones (the AgentCore runtime role), so one session serves the process's life.
    """
    global _session, sessions_created
    if _session is None:
        with _session_lock:
            if _session is None:
                import botocore.session

                _session = botocore.session.get_session()
                sessions_created += 1
    return _session


def reset_shared_session(session: Any = None) -> None:
    """Replace (or drop, with None) the process session. For tests and credential changes."""
    global _session, sessions_created
    with _session_lock:
        _session = session
        sessions_created = 0 if session is None else 1


def mint_bearer_token(credentials: Any, region: str, expires_s: int = TOKEN_EXPIRES_S) -> str:
    """Sign a `CallWithBearerToken` request with `credentials` and wrap it as a bearer token.

    `credentials` is any botocore credentials object (static or refreshable). It is frozen
    first: reading key, secret and session token separately could straddle a refresh and
    mix two credential versions into a signature that never verifies.
    """
    from botocore.auth import SigV4QueryAuth
    from botocore.awsrequest import AWSRequest

    if credentials is None:
        raise PermissionError(
            "no AWS credentials found to sign a job-runtime bearer token; inside AgentCore "
            "the runtime role provides them, locally set AWS_PROFILE or AWS_ACCESS_KEY_ID"
        )
    if not region:
        raise ValueError("a region is needed to sign a job-runtime bearer token (set AWS_REGION)")
    frozen = credentials.get_frozen_credentials()
    request = AWSRequest(
        method="POST",
        url=f"https://{SIGNING_HOST}/",
        headers={"host": SIGNING_HOST},
        params={"Action": TOKEN_ACTION},
    )
    SigV4QueryAuth(frozen, SIGNING_SERVICE, region, expires=expires_s).add_auth(request)
    presigned = request.url.removeprefix("https://") + TOKEN_VERSION_SUFFIX
    return TOKEN_PREFIX + base64.b64encode(presigned.encode("utf-8")).decode("ascii")


class BearerTokenProvider:
    """Hands out a cached bearer token for one region; thread-safe.

    Call it (`provider()`) for the current token. After a 401/403, call
    `provider.invalidate(generation)` with the generation `current()` gave: the first
    caller drops the token, later callers holding the same generation change nothing, so
    a burst of concurrent 403s costs one re-sign.
    """

    def __init__(
        self,
        region: str,
        *,
        session_factory: Callable[[], Any] = shared_session,
        cache_s: float = TOKEN_CACHE_S,
        expires_s: int = TOKEN_EXPIRES_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.region = region
        self._session_factory = session_factory
        self.cache_s = cache_s
        self.expires_s = expires_s
        self._clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._minted_at = 0.0
        self._generation = 0
        #: Tokens signed so far (tests assert at most one per cache window).
        self.mints = 0

    def __call__(self) -> str:
        return self.token()

    def token(self) -> str:
        """The cached token, re-signed when older than `cache_s`."""
        return self.current()[0]

    def current(self) -> tuple[str, int]:
        """(token, generation): the generation names this mint for `invalidate`."""
        with self._lock:
            if self._token is None or self._clock() - self._minted_at >= self.cache_s:
                self._mint_locked()
            assert self._token is not None
            return self._token, self._generation

    def cached(self) -> tuple[str, int] | None:
        """(token, generation) if a fresh token is cached, else None (never signs)."""
        with self._lock:
            if self._token is not None and self._clock() - self._minted_at < self.cache_s:
                return self._token, self._generation
            return None

    def invalidate(self, generation: int | None = None) -> None:
        """Drop the cached token after a 401/403, unless it was re-signed since `generation`.

        Rollouts that got a 403 with the same token all call this; only the first drops it,
        so the burst costs one re-sign, not one per rollout. (Generations, not token
        strings: two signatures made in the same second are identical.)
        """
        with self._lock:
            if generation is None or generation == self._generation:
                self._token = None

    def _mint_locked(self) -> None:
        credentials = self._session_factory().get_credentials()
        self._token = mint_bearer_token(credentials, self.region, self.expires_s)
        self._minted_at = self._clock()
        self._generation += 1
        self.mints += 1


class RolloutToken:
    """One rollout's view of a shared `BearerTokenProvider`, in `OpenAIPolicy`'s protocol.

    Calling it returns the shared token (signing off the event loop when the cache is
    stale); `invalidate()` after a 401/403 drops the shared token only if it is still the
    one this rollout used.
    """

    def __init__(self, provider: BearerTokenProvider) -> None:
        self.provider = provider
        self.generation: int | None = None

    async def __call__(self) -> str:
        import asyncio

        found = self.provider.cached()
        if found is None:
            # Signing may resolve credentials (container endpoint, STS): not on the loop.
            found = await asyncio.to_thread(self.provider.current)
        token, self.generation = found
        return token

    def invalidate(self) -> None:
        if self.generation is not None:
            self.provider.invalidate(self.generation)


class TokenProviders:
    """One `BearerTokenProvider` per region, shared by every rollout of the process."""

    def __init__(self, session_factory: Callable[[], Any] = shared_session, **kwargs: Any) -> None:
        self._session_factory = session_factory
        self._kwargs = kwargs
        self._lock = threading.Lock()
        self._by_region: dict[str, BearerTokenProvider] = {}

    def for_region(self, region: str) -> BearerTokenProvider:
        with self._lock:
            provider = self._by_region.get(region)
            if provider is None:
                provider = BearerTokenProvider(
                    region, session_factory=self._session_factory, **self._kwargs
                )
                self._by_region[region] = provider
            return provider

    @property
    def mints(self) -> int:
        with self._lock:
            return sum(p.mints for p in self._by_region.values())
