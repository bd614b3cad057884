"""`OpenAIPolicy`: any OpenAI-compatible chat-completions server (vLLM, the SageMaker job
runtime, OpenAI itself) as a `Policy`.

Three transports with identical semantics (request body, retries, error kinds, response
mapping, auth headers):

- ``transport="openai"`` (default): the official `openai` SDK (`AsyncOpenAI`) on its
  default httpx client, with the SDK's own retries off so that ours apply.
- ``transport="openai-aiohttp"``: the same SDK on its aiohttp HTTP client. httpcore's pool
  scans every pooled connection on each request, which dominates the SDK path at 64+
  concurrent episodes; this avoids it (1.5-3x the turns per second in bench/rollouts.py).
- ``transport="aiohttp"``: a lean aiohttp session, no SDK. The SDK spends most of a
  request's CPU in its own layers; against a fast local server (vLLM on the same node)
  rollouts are several times faster this way. See bench/rollouts.py for figures.
- ``transport="raw"``: `HTTP11Pool` (policies/http11.py), a minimal HTTP/1.1 keep-alive
  client on asyncio streams (http and https, no proxies, no redirects, no compression).
  About 1.5x the turns per second of aiohttp, which matters when many episodes share one
  core.

Retries: 429, 5xx, 408, timeouts and connection errors are retried up to `max_retries`
times with exponential backoff and jitter; a `Retry-After` (or `retry-after-ms`) header
replaces the backoff delay. A 401/403 with a `token_provider` refreshes the token once.
Final failures raise `PolicyError` with kind `rate_limited`, `http_error`,
`policy_timeout` or `policy_error`. Error messages never contain the API key or token.

Auth: `Authorization: Bearer <api_key or token_provider's token>`. A base URL carrying
`user:password@` (a reverse proxy with Basic auth in front of vLLM, say) is used without them
and they are sent as `Authorization: Basic`, on every transport alike (the HTTP libraries
disagree: aiohttp refuses the pair, httpx drops the bearer header). An explicit `api_key` or
`token_provider` wins over the URL's credentials (one Authorization header holds one
credential; the key is the OpenAI API's own scheme and the deliberate choice, a URL's
userinfo often rides along with a copied address), and a warning says so. With URL
credentials `$OPENAI_API_KEY` is not read: an ambient OpenAI key must not go to a proxy
that names its own credentials.

Heavy imports (openai, aiohttp) happen on first use, so importing this module is cheap.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import importlib
import inspect
import json
import logging
import os
import random
import re
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from agentrft.messages import Message, ToolCall
from agentrft.policies.http11 import HTTP11Pool, safe_url, split_userinfo
from agentrft.policy import Completion, Policy, PolicyError, Sampling
from agentrft.redact import register_secret
from agentrft.rollout import within
from agentrft.trajectory import FailureKind

logger = logging.getLogger("agentrft.policies")

#: A bearer-token source: called before every request (cache inside it; see `CachedToken`).
#: If it also has an `invalidate()` method, a 401/403 calls that before fetching once more.
TokenProvider = Callable[[], "str | Awaitable[str]"]

Transport = Literal["openai", "openai-aiohttp", "aiohttp", "raw"]
TRANSPORTS: tuple[str, ...] = ("openai", "openai-aiohttp", "aiohttp", "raw")

_RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: Header names whose values are credentials: scrubbed from error messages like the key.
_SENSITIVE = re.compile(r"auth|key|token|secret|signature|credential|cookie", re.IGNORECASE)


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


# --- one failed attempt, classified ------------------------------------------------------


@dataclass
class AttemptError(Exception):
    """One failed HTTP attempt. `retryable` decides whether the retry loop tries again."""

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
    detail = _server_message(body)
    kind = FailureKind.RATE_LIMITED if status == 429 else FailureKind.HTTP_ERROR
    msg = f"HTTP {status} from {where}" + (f": {detail}" if detail else "")
    if status in (401, 403):
        msg += " (check the API key or token)"
    return AttemptError(
        msg,
        kind=kind,
        status=status,
        retryable=status in _RETRY_STATUSES or status >= 500,
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


def _server_message(body: bytes | str) -> str:
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


# --- retries -----------------------------------------------------------------------------


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
        attempt: Callable[[], Awaitable[Completion]],
        *,
        refresh_auth: Callable[[], Awaitable[bool]] | None = None,
        scrub: Callable[[str], str] = str,
    ) -> Completion:
        """Call `attempt` until it succeeds or fails for good (then `PolicyError`)."""
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
                    suffix = f" (after {tries} attempts)" if tries > 1 else ""
                    raise PolicyError(
                        scrub(err.message) + suffix, kind=err.kind, status=err.status
                    ) from None
                wait = self.delay(retries, err.retry_after)
                retries += 1
                logger.debug(
                    "policy call failed (%s); retry %d in %.3fs", scrub(err.message), retries, wait
                )
                await asyncio.sleep(wait)


# --- response mapping --------------------------------------------------------------------


def completion_from_openai(data: Any) -> Completion:
    """Map an OpenAI chat.completion JSON object to a `Completion`.

    Reads reasoning (`reasoning_content` or `reasoning`), tool calls, finish reason, usage,
    and vLLM's token ids (`prompt_token_ids`, `choices[0].token_ids`) and logprobs.
    """
    if not isinstance(data, dict):
        raise AttemptError(f"the response is {type(data).__name__}, not a JSON object")
    choices = data.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        err = data.get("error")
        detail = f": {_server_message(json.dumps(data))}" if err else ""
        raise AttemptError(f"the response has no choices{detail}")
    choice = choices[0]
    msg = choice.get("message") or {}
    content = msg.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict)) or None
    calls = None
    raw_calls = msg.get("tool_calls")
    if raw_calls:
        calls = []
        for c in raw_calls:
            fn = c.get("function") or {}
            args = fn.get("arguments")
            if args is None:
                args = "{}"
            elif not isinstance(args, str):  # some servers send an object
                args = json.dumps(args)
            calls.append(
                ToolCall(
                    id=c.get("id") or f"call_{uuid.uuid4().hex[:12]}",
                    name=fn.get("name") or "",
                    arguments=args,
                )
            )
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    message = Message(
        role="assistant",
        content=content,
        tool_calls=calls or None,
        reasoning=reasoning if isinstance(reasoning, str) else None,
    )
    usage = data.get("usage") or {}
    logprobs, token_ids = _logprobs(choice.get("logprobs"))
    completion_ids = choice.get("token_ids") or token_ids
    prompt_ids = data.get("prompt_token_ids") or choice.get("prompt_token_ids")
    return Completion(
        message=message,
        finish_reason=choice.get("finish_reason"),
        prompt_token_ids=list(prompt_ids) if prompt_ids else None,
        completion_token_ids=list(completion_ids) if completion_ids else None,
        logprobs=logprobs,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def _logprobs(block: Any) -> tuple[list[float] | None, list[int] | None]:
    """Per-token logprobs; token ids too when tokens are written as "token_id:N" (vLLM's
    `return_tokens_as_token_ids`)."""
    if not isinstance(block, dict) or not isinstance(block.get("content"), list):
        return None, None
    entries = block["content"]
    logprobs = [float(e.get("logprob", 0.0)) for e in entries]
    ids: list[int] = []
    for e in entries:
        tok = e.get("token")
        if not (isinstance(tok, str) and tok.startswith("token_id:")):
            return logprobs, None
        ids.append(int(tok[9:]))
    return logprobs, ids or None


def request_body(
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]],
    sampling: Sampling,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The chat-completions request body. `sampling.extra` wins over `extra_body`."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [m.to_openai() for m in messages],
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
    }
    if tools:
        body["tools"] = tools
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if sampling.stop:
        body["stop"] = list(sampling.stop)
    if extra_body:
        body.update(extra_body)
    body.update(sampling.extra)
    if "max_completion_tokens" in body:  # newer OpenAI models reject max_tokens alongside it
        body.pop("max_tokens", None)
    return body


@functools.lru_cache(maxsize=1)
def _sdk_response_class() -> type:
    """The HTTP response class the installed openai SDK is built on (httpx, or httpx2 in
    openai 3.x): `client.post(..., cast_to=<it>)` returns the raw response."""
    import openai

    for klass in openai.DefaultAsyncHttpxClient.__mro__:
        package = klass.__module__.split(".")[0]
        if klass.__name__ == "AsyncClient" and package in ("httpx", "httpx2"):
            return importlib.import_module(package).Response
    import httpx

    return httpx.Response


async def _close_quietly(client: Any) -> None:
    try:
        await client.close()
    except Exception:  # a pool made on a finished loop: nothing left to release
        logger.debug("closing the HTTP client failed", exc_info=True)


def _password(url: str) -> list[str]:
    """The URL's password, as written and decoded (for scrubbing error messages)."""
    password = urlsplit(url).password
    return [password, unquote(password)] if password else []


def _dropped_connection(exc: BaseException) -> BaseException | None:
    """The aiohttp connection error behind an SDK timeout, if that is what it really was.

    The SDK's aiohttp backend reports every aiohttp connection error (a server that hung
    up, a refused connection) as a connect timeout; the cause chain keeps the truth.
    """
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is None:
        return None
    seen: BaseException | None = exc
    for _ in range(8):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None:
            return None
        if isinstance(seen, aiohttp.ClientConnectionError) and not isinstance(
            seen, asyncio.TimeoutError
        ):
            return seen
    return None


# --- the policy --------------------------------------------------------------------------


class OpenAIPolicy(Policy):
    """A chat model behind an OpenAI-compatible `/chat/completions` endpoint.

    One HTTP connection pool per policy, shared by every episode; call `aclose()` (or use
    `async with`) when done.

    Args:
        model: the model name sent in each request.
        base_url: the API root, e.g. `http://127.0.0.1:8000/v1`. A `user:password@` in it
            is sent as `Authorization: Basic ...` unless `api_key` or `token_provider` is
            given (see the module docstring); the URL the client uses carries neither.
        api_key: a static key (sent as `Authorization: Bearer ...`). Defaults to
            `$OPENAI_API_KEY` (unless `base_url` carries credentials), else none (local
            servers need none).
        token_provider: instead of `api_key`, a callable returning a bearer token (sync or
            async), called before each request; give it an `invalidate()` method (see
            `CachedToken`) and a 401/403 refreshes the token and retries once.
        headers: extra headers on every request (e.g. `X-Amzn-SageMaker-*`).
        timeout_s: deadline for one request, from sending it to the last byte of the
            answer (a server that trickles bytes cannot stretch it).
        max_retries: retries after the first attempt on 429 / 5xx / 408 / timeouts /
            connection errors.
        backoff_base_s: first backoff delay; doubles per retry, with jitter.
        backoff_max_s: cap on one backoff delay (and on an honoured Retry-After).
        transport: "openai" (the SDK on its default httpx client), "openai-aiohttp" (the
            SDK on its aiohttp client, `openai[aiohttp]`), "aiohttp" (lean, no SDK) or "raw"
            (leanest: HTTP/1.1 on asyncio streams, no proxies). Same semantics; see the
            module docstring.
        max_connections: connection-pool size of the aiohttp and raw transports.
        extra_body: fields added to every request body (`Sampling.extra` overrides them).
        name: shown in reports; defaults to the model name.
    """

    def __init__(
        self,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        *,
        api_key: str | None = None,
        token_provider: TokenProvider | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        transport: Transport = "openai",
        max_connections: int = 512,
        extra_body: Mapping[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}; got {transport!r}")
        for k, v in (headers or {}).items():
            if any(c in f"{k}{v}" for c in "\r\n") or ":" in k:
                raise ValueError(f"header {k!r}: names and values may not contain CR, LF or ':'")
        if api_key is not None and token_provider is not None:
            raise ValueError("give OpenAIPolicy either api_key or token_provider, not both")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.model = model
        self.base_url, basic_auth = split_userinfo(base_url.rstrip("/"))
        self.name = name or model
        self.transport = transport
        self.timeout_s = timeout_s
        self.headers = dict(headers or {})
        self.extra_body = dict(extra_body or {})
        self.max_connections = max_connections
        self.retry = RetryPolicy(max_retries, backoff_base_s, backoff_max_s)
        explicit = api_key is not None or token_provider is not None
        self._api_key = api_key if explicit or basic_auth else os.environ.get("OPENAI_API_KEY")
        self._token_provider = token_provider
        self._secrets: list[str] = [self._api_key] if self._api_key else []
        self._secrets += [v for k, v in self.headers.items() if _SENSITIVE.search(k) and v]
        #: Headers every transport's client sends: the user's, after the URL's Basic auth.
        self._client_headers = dict(self.headers)
        if basic_auth is not None:
            self._secrets += [basic_auth.removeprefix("Basic "), *_password(base_url)]
            if explicit:
                logger.warning(
                    "%s: the URL's user:password is not sent; the %s is (one Authorization "
                    "header holds one credential)",
                    safe_url(self.base_url),
                    "API key" if api_key is not None else "token provider's token",
                )
            else:
                self._client_headers = {"Authorization": basic_auth, **self.headers}
        register_secret(*self._secrets)  # so trajectory and report writers scrub them too
        self._where = f"POST {safe_url(self.base_url)}/chat/completions"
        self._client: Any = None  # AsyncOpenAI or aiohttp.ClientSession
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:  # no secrets
        return f"OpenAIPolicy(model={self.model!r}, base_url={safe_url(self.base_url)!r}, transport={self.transport!r})"

    async def __aenter__(self) -> OpenAIPolicy:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        body = request_body(self.model, messages, tools, sampling, self.extra_body)
        attempt, make_client = {
            "aiohttp": (self._attempt_aiohttp, self._make_aiohttp_session),
            "raw": (self._attempt_raw, self._make_raw_pool),
        }.get(self.transport, (self._attempt_sdk, self._make_sdk_client))
        refresh = self._refresh_token if self._token_provider is not None else None

        async def bounded() -> Completion:
            # Building the client (the first call imports the SDK) is not the request's time.
            await self._client_for_loop(make_client)
            # `timeout_s` bounds the whole request. httpx's own timeout is per read, so a
            # server trickling a byte every few seconds would hold the request until the
            # episode's budget ran out.
            try:
                return await within(attempt(body), self.timeout_s)
            except (asyncio.TimeoutError, TimeoutError):
                raise self._timeout_error() from None

        return await self.retry.run(bounded, refresh_auth=refresh, scrub=self._scrub)

    async def aclose(self) -> None:
        client, self._client, self._client_loop = self._client, None, None
        if client is not None:
            await _close_quietly(client)

    # auth --------------------------------------------------------------------------------

    async def _bearer(self) -> str | None:
        if self._token_provider is None:
            return self._api_key
        token = self._token_provider()
        if inspect.isawaitable(token):
            token = await token
        token = str(token)
        if token not in self._secrets:
            self._secrets.append(token)
            register_secret(token)
            del self._secrets[:-8]  # remember the last few tokens for scrubbing
        return token

    async def _refresh_token(self) -> bool:
        invalidate = getattr(self._token_provider, "invalidate", None)
        if callable(invalidate):
            out = invalidate()
            if inspect.isawaitable(out):
                await out
        return True

    def _scrub(self, text: str) -> str:
        for s in self._secrets:
            if s and len(s) >= 4:
                text = text.replace(s, "***")
        return text

    # transports --------------------------------------------------------------------------

    async def _client_for_loop(self, factory: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        client = self._client
        if client is None or self._client_loop is not loop:
            # A pool belongs to the loop it was made on (asyncio.run twice, a new thread).
            # Swap before awaiting, so concurrent first calls share one new pool.
            old, client = client, factory()
            self._client, self._client_loop = client, loop
            if old is not None:
                await _close_quietly(old)
        return client

    def _make_sdk_client(self) -> Any:
        import openai

        http_client = None
        if self.transport == "openai-aiohttp":
            # The SDK's aiohttp backend skips httpcore's pool, which scans every pooled
            # connection on each request (the SDK path's main cost at 64+ connections).
            try:
                http_client = openai.DefaultAioHttpClient()
            except (AttributeError, RuntimeError) as exc:
                raise PolicyError(
                    "transport 'openai-aiohttp' needs an openai SDK with aiohttp support "
                    f"(pip install 'openai[aiohttp]'), or use transport 'aiohttp': {exc}"
                ) from None
        # Retries are ours (same semantics for every transport), so the SDK's are off.
        return openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key or "EMPTY",
            max_retries=0,
            timeout=self.timeout_s,
            default_headers=self._client_headers or None,
            http_client=http_client,
        )

    async def _attempt_sdk(self, body: dict[str, Any]) -> Completion:
        import openai

        client = await self._client_for_loop(self._make_sdk_client)
        options: dict[str, Any] = {"timeout": self.timeout_s}
        if self._token_provider is not None:
            options["headers"] = {"Authorization": f"Bearer {await self._bearer()}"}
        try:
            # The SDK's documented raw-request path: `chat.completions.create` would first
            # walk every message through its TypedDict transform (~2 ms per call for a
            # 20-message conversation) and build pydantic models we do not need.
            response = await client.post(
                "/chat/completions", body=body, cast_to=_sdk_response_class(), options=options
            )
        except openai.APIStatusError as exc:
            resp = exc.response
            raise status_error(exc.status_code, resp.headers, resp.content, self._where) from None
        except openai.APITimeoutError as exc:
            dropped = _dropped_connection(exc)
            if dropped is not None:
                raise self._connection_error(dropped) from None
            raise self._timeout_error() from None
        except openai.APIConnectionError as exc:
            raise self._connection_error(exc.__cause__ or exc) from None
        return self._parse(response.content)

    def _make_aiohttp_session(self) -> Any:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=self.max_connections, keepalive_timeout=60)
        return aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            headers={"Content-Type": "application/json", **self._client_headers},
        )

    async def _attempt_aiohttp(self, body: dict[str, Any]) -> Completion:
        import aiohttp

        session = await self._client_for_loop(self._make_aiohttp_session)
        bearer = await self._bearer()
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else None
        try:
            async with session.post(
                self.base_url + "/chat/completions", data=json.dumps(body), headers=headers
            ) as resp:
                raw = await resp.read()
                if resp.status >= 400:
                    raise status_error(resp.status, resp.headers, raw, self._where)
        except (asyncio.TimeoutError, TimeoutError):
            raise self._timeout_error() from None
        except aiohttp.ClientError as exc:
            raise self._connection_error(exc) from None
        return self._parse(raw)

    def _make_raw_pool(self) -> HTTP11Pool:
        return HTTP11Pool(self.base_url, self.max_connections, self._client_headers)

    async def _attempt_raw(self, body: dict[str, Any]) -> Completion:
        pool = await self._client_for_loop(self._make_raw_pool)
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

    def _parse(self, raw: bytes) -> Completion:
        try:
            data = json.loads(raw)
        except ValueError:
            snippet = raw[:120].decode("utf-8", "replace")
            raise AttemptError(
                f"the response from {self._where} is not JSON: {snippet!r}"
            ) from None
        return completion_from_openai(data)

    def _timeout_error(self) -> AttemptError:
        return AttemptError(
            f"no answer from {self._where} within {self.timeout_s:g}s",
            kind=FailureKind.POLICY_TIMEOUT,
            retryable=True,
        )

    def _connection_error(self, exc: BaseException) -> AttemptError:
        return AttemptError(
            f"connection to {self._where} failed: {type(exc).__name__}: {exc}",
            kind=FailureKind.POLICY_ERROR,
            retryable=True,
        )
