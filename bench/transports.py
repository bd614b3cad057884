"""HTTP clients under `OpenAIPolicy`, for measuring the product's transports against others.

`OpenAIPolicy` ships two transports (`transport=`): `aiohttp`, the default, and `sdk`, the
openai SDK on httpx. The other clients here swap only the HTTP client (`_make_client`,
`_attempt`), so the request body, the retries, the deadline, auth and error kinds stay
`OpenAIPolicy`'s and a figure compares clients, not semantics:

- `default`: `OpenAIPolicy()` as shipped (aiohttp);
- `sdk`: `OpenAIPolicy(transport="sdk")` (httpcore's pool scans every pooled connection on
  each request, which dominates at 64+ connections);
- `sdk-aiohttp`: the same SDK on its aiohttp HTTP client (`openai[aiohttp]`);
- `raw`: `HTTP11Pool` (bench/http11.py), HTTP/1.1 on asyncio streams.

bench/rollouts.py prints turns per second for each (`policy_for(transport, ...)`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from http11 import HTTP11Pool

from agentrft.policies.openai_client import OpenAIPolicy
from agentrft.policies.retry import AttemptError, status_error
from agentrft.policy import Completion, PolicyError

TRANSPORTS = ("default", "sdk", "sdk-aiohttp", "raw")


class SdkAiohttpPolicy(OpenAIPolicy):
    """The openai SDK on its aiohttp HTTP client (`openai[aiohttp]`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, transport="sdk", **kwargs)

    def _sdk_http_client(self) -> Any:
        import openai

        try:
            return openai.DefaultAioHttpClient()
        except (AttributeError, RuntimeError) as exc:
            raise PolicyError(
                f"the openai SDK here has no aiohttp client (pip install 'openai[aiohttp]'): {exc}"
            ) from None

    def _sdk_timeout(self, exc: BaseException) -> AttemptError:
        # The SDK's aiohttp backend reports every aiohttp connection error (a server that
        # hung up, a refused connection) as a connect timeout; the cause chain keeps the truth.
        aiohttp = sys.modules.get("aiohttp")
        seen: BaseException | None = exc
        for _ in range(8):
            seen = (seen.__cause__ or seen.__context__) if seen is not None else None
            if seen is None or aiohttp is None:
                break
            if isinstance(seen, aiohttp.ClientConnectionError) and not isinstance(
                seen, asyncio.TimeoutError
            ):
                return self._connection_error(seen)
        return self._timeout_error()


class RawPolicy(OpenAIPolicy):
    """HTTP/1.1 on asyncio streams (`HTTP11Pool`): no proxies, no redirects."""

    def __init__(self, *args: Any, max_connections: int = 512, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_connections = max_connections

    def _make_client(self) -> HTTP11Pool:
        return HTTP11Pool(self.base_url, self.max_connections, self._client_headers)

    async def _attempt(self, body: dict[str, Any]) -> Completion:
        pool = await self._client_for_loop()
        bearer = await self._bearer()
        auth = f"Authorization: Bearer {bearer}\r\n".encode() if bearer else b""
        try:  # the deadline is `complete`'s
            status, headers, raw = await pool.post(
                "/chat/completions", json.dumps(body).encode(), auth
            )
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            raise self._connection_error(exc) from None
        if status >= 400:
            raise status_error(status, headers, raw, self._where)
        return self._parse(raw)


def policy_for(transport: str, *args: Any, max_connections: int = 512, **kwargs: Any) -> Any:
    """`OpenAIPolicy(*args, **kwargs)` on `transport` (one of `TRANSPORTS`)."""
    if transport == "default":
        return OpenAIPolicy(*args, **kwargs)
    if transport == "sdk":
        return OpenAIPolicy(*args, transport="sdk", **kwargs)
    if transport == "sdk-aiohttp":
        return SdkAiohttpPolicy(*args, **kwargs)
    if transport == "raw":
        return RawPolicy(*args, max_connections=max_connections, **kwargs)
    raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}; got {transport!r}")
