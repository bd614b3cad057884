"""Bearer tokens for the HTTP policies: a `TokenProvider` is called before each request;
`CachedToken` caches one for a while and drops it when the server refuses it (401/403)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

__all__ = ["CachedToken", "TokenProvider"]

#: A bearer-token source: called before every request (cache inside it; see `CachedToken`).
#: If it also has an `invalidate()` method, a 401/403 calls that before fetching once more.
TokenProvider = Callable[[], "str | Awaitable[str]"]


class CachedToken:
    """A `TokenProvider` that caches `fetch()`'s token for `ttl_s` seconds.

    `invalidate()` drops it, so the next call fetches a fresh one (what `OpenAIPolicy` does
    on a 401/403). `fetch` may be sync or async; concurrent callers share one fetch.
    """

    def __init__(self, fetch: Callable[[], str | Awaitable[str]], ttl_s: float = 300.0) -> None:
        self.fetch = fetch
        self.ttl_s = ttl_s
        self._token: str | None = None
        self._expires = 0.0
        self._lock: asyncio.Lock | None = None

    async def __call__(self) -> str:
        if self._token is not None and time.monotonic() < self._expires:
            return self._token
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._token is None or time.monotonic() >= self._expires:
                token = self.fetch()
                if inspect.isawaitable(token):
                    token = await token
                self._token = str(token)
                self._expires = time.monotonic() + self.ttl_s
            return self._token

    def invalidate(self) -> None:
        self._token = None
