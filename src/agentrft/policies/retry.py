"""One retry policy for every model client: the OpenAI-compatible client, the litellm
client and the local backend's vLLM sampler.

A client turns each failed attempt into an `AttemptError` (its `retryable` flag says
whether trying again can help); `RetryPolicy.run` retries those with exponential backoff
and jitter, honours a server's `Retry-After`, refreshes a bearer token once on a 401/403,
and raises the client's error type (`PolicyError` by default) when the call fails for good.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from agentrft.policy import PolicyError
from agentrft.trajectory import FailureKind

logger = logging.getLogger("agentrft.policies")

T = TypeVar("T")

#: Statuses worth another attempt (plus every 5xx): the server may answer next time.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass
class AttemptError(Exception):
    """One failed attempt. `retryable` decides whether the retry loop tries again."""

    message: str
    kind: str = FailureKind.POLICY_ERROR
    status: int | None = None
    retryable: bool = False
    retry_after: float | None = None
    auth: bool = False

    def __str__(self) -> str:
        return self.message


def status_error(
    status: int, headers: Mapping[str, str], body: bytes | str, where: str
) -> AttemptError:
    """Classify an HTTP error status (with the server's message, shortened)."""
    detail = server_message(body)
    kind = FailureKind.RATE_LIMITED if status == 429 else FailureKind.HTTP_ERROR
    msg = f"HTTP {status} from {where}" + (f": {detail}" if detail else "")
    if status in (401, 403):
        msg += " (check the API key or token)"
    return AttemptError(
        msg,
        kind=kind,
        status=status,
        retryable=status in RETRY_STATUSES or status >= 500,
        retry_after=parse_retry_after(headers),
        auth=status in (401, 403),
    )


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after-ms`, `Retry-After` (seconds or an HTTP date)."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    if (ms := lower.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def server_message(body: bytes | str) -> str:
    """The error message in a server's answer (OpenAI's `{"error": {"message"}}` and the
    usual variants), on one line and at most 300 characters."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    try:
        data = json.loads(text)
        if isinstance(data, dict):
            err = data.get("error", data)
            if isinstance(err, dict) and err.get("message"):
                text = str(err["message"])
            elif isinstance(err, str):
                text = err
            elif isinstance(data.get("message"), str):
                text = data["message"]
    except ValueError:
        pass
    text = " ".join(text.split())
    return text[:300] + ("..." if len(text) > 300 else "")


#: Builds the error a failed call raises: (message, kind, status) -> exception.
ErrorFactory = Callable[[str, str, "int | None"], Exception]


def _policy_error(message: str, kind: str, status: int | None) -> Exception:
    return PolicyError(message, kind=kind, status=status)


class RetryPolicy:
    """Exponential backoff with jitter: attempt n waits `base * 2**n`, capped at `max_s`,
    times a random factor in [0.5, 1]. A server's Retry-After replaces it (capped the same)."""

    def __init__(self, max_retries: int = 4, base_s: float = 0.5, max_s: float = 30.0) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.max_retries = max_retries
        self.base_s = base_s
        self.max_s = max_s
        self._rng = random.Random()

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_s)
        return min(self.max_s, self.base_s * (2**retry)) * self._rng.uniform(0.5, 1.0)

    async def run(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        refresh_auth: Callable[[], Awaitable[bool]] | None = None,
        scrub: Callable[[str], str] = str,
        error: ErrorFactory = _policy_error,
        count_attempts: bool = True,
    ) -> T:
        """Call `attempt` until it succeeds or fails for good, then raise `error(...)`.

        `count_attempts` adds "(after N attempts)" to the final message when it took more
        than one.
        """
        retries = 0
        refreshed = False
        while True:
            try:
                return await attempt()
            except AttemptError as err:
                if err.auth and refresh_auth is not None and not refreshed:
                    refreshed = True
                    if await refresh_auth():
                        continue
                if not err.retryable or retries >= self.max_retries:
                    tries = retries + 1 + (1 if refreshed else 0)
                    suffix = f" (after {tries} attempts)" if tries > 1 and count_attempts else ""
                    raise error(scrub(err.message) + suffix, err.kind, err.status) from None
                wait = self.delay(retries, err.retry_after)
                retries += 1
                logger.debug(
                    "model call failed (%s); retry %d in %.3fs", scrub(err.message), retries, wait
                )
                await asyncio.sleep(wait)
