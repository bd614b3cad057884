"""`OpenAIPolicy`: any OpenAI-compatible chat-completions server (vLLM, the SageMaker job
runtime, OpenAI itself) as a `Policy`.

Two HTTP transports, the same semantics: `aiohttp` (the default: one aiohttp session per
policy, certifi's CA bundle as httpx uses, proxies from the environment as httpx reads them)
and `sdk`, the official `openai` SDK (`AsyncOpenAI` on httpx) through its documented raw path
(`client.post`). The default is aiohttp because httpcore's pool scans every pooled connection
on each request (a readability check per idle socket): with 64 episodes in flight the SDK's
client cost 3.9x the ideal wall time at 50 ms a turn, aiohttp 1.7x (bench/rollouts.py;
docs/concepts.md has the figures). Either way agentrft's `RetryPolicy` (policies/retry.py)
applies (the SDK's own retries are off): 429, 5xx, 408,
timeouts and connection errors are retried up to `max_retries` times with exponential
backoff and jitter; a `Retry-After` (or `retry-after-ms`) header replaces the backoff
delay. A 401/403 with a `token_provider` refreshes the token once. Final failures raise
`PolicyError` with kind `rate_limited`, `http_error`, `policy_timeout` or `policy_error`.
Error messages never contain the API key or token.

Auth: `Authorization: Bearer <api_key or token_provider's token>`. A base URL carrying
`user:password@` (a reverse proxy with Basic auth in front of vLLM, say) is used without them
and they are sent as `Authorization: Basic` (HTTP libraries disagree on such URLs: aiohttp
refuses the pair, httpx drops the bearer header). An explicit `api_key` or `token_provider`
wins over the URL's credentials (one Authorization header holds one credential; the key is
the OpenAI API's own scheme and the deliberate choice, a URL's userinfo often rides along
with a copied address), and a warning says so. With URL credentials `$OPENAI_API_KEY` is not
read: an ambient OpenAI key must not go to a proxy that names its own credentials.

The request body, the response mapping and the retry loop are separate functions, so other
HTTP clients can be measured against these with identical semantics (bench/transports.py
does, for the SDK on aiohttp and a hand-written HTTP/1.1 client). The HTTP libraries are
imported on first use, so importing this module is cheap.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import json
import logging
import os
import re
import uuid
from collections.abc import Mapping
from typing import Any, Literal

from agentrft.messages import Message, ToolCall
from agentrft.policies.aiohttp_session import aiohttp_session, env_proxy
from agentrft.policies.retry import AttemptError, RetryPolicy, server_message, status_error
from agentrft.policies.tokens import CachedToken, TokenProvider
from agentrft.policies.urls import safe_url, split_userinfo, url_passwords
from agentrft.policy import Completion, Policy, Sampling
from agentrft.redact import register_secret
from agentrft.rollout import within
from agentrft.trajectory import FailureKind

logger = logging.getLogger("agentrft.policies")

#: Header names whose values are credentials: scrubbed from error messages like the key.
_SENSITIVE = re.compile(r"auth|key|token|secret|signature|credential|cookie", re.IGNORECASE)

__all__ = [
    "CachedToken",
    "OpenAIPolicy",
    "TokenProvider",
    "completion_from_openai",
    "env_proxy",
    "request_body",
]

# --- request and response ----------------------------------------------------------------


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
        detail = f": {server_message(json.dumps(data))}" if err else ""
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
        extra_body: fields added to every request body (`Sampling.extra` overrides them).
        name: shown in reports; defaults to the model name.
        transport: `aiohttp` (default) or `sdk` (the openai SDK on httpx): the same requests,
            retries, deadline and errors; aiohttp costs less CPU per request (module docstring).
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
        extra_body: Mapping[str, Any] | None = None,
        name: str | None = None,
        transport: Literal["aiohttp", "sdk"] = "aiohttp",
    ) -> None:
        if transport not in ("aiohttp", "sdk"):
            raise ValueError(f"transport must be 'aiohttp' or 'sdk', got {transport!r}")
        for k, v in (headers or {}).items():
            if any(c in f"{k}{v}" for c in "\r\n") or ":" in k:
                raise ValueError(f"header {k!r}: names and values may not contain CR, LF or ':'")
        if api_key is not None and token_provider is not None:
            raise ValueError("give OpenAIPolicy either api_key or token_provider, not both")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.model = model
        self.transport = transport
        self.base_url, basic_auth = split_userinfo(base_url.rstrip("/"))
        self.name = name or model
        self.timeout_s = timeout_s
        self.headers = dict(headers or {})
        self.extra_body = dict(extra_body or {})
        self.retry = RetryPolicy(max_retries, backoff_base_s, backoff_max_s)
        explicit = api_key is not None or token_provider is not None
        self._api_key = api_key if explicit or basic_auth else os.environ.get("OPENAI_API_KEY")
        self._token_provider = token_provider
        self._secrets: list[str] = [self._api_key] if self._api_key else []
        self._secrets += [v for k, v in self.headers.items() if _SENSITIVE.search(k) and v]
        #: Headers the client sends: the user's, after the URL's Basic auth.
        self._client_headers = dict(self.headers)
        if basic_auth is not None:
            self._secrets += [basic_auth.removeprefix("Basic "), *url_passwords(base_url)]
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
        self._client: Any = None  # the aiohttp session or AsyncOpenAI client, made on first use
        self._proxy: str | None = None  # the environment's proxy for base_url (aiohttp)
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:  # no secrets
        return f"{type(self).__name__}(model={self.model!r}, base_url={safe_url(self.base_url)!r})"

    async def __aenter__(self) -> OpenAIPolicy:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        body = request_body(self.model, messages, tools, sampling, self.extra_body)
        refresh = self._refresh_token if self._token_provider is not None else None

        async def bounded() -> Completion:
            # Building the client (the first call imports the SDK) is not the request's time.
            await self._client_for_loop()
            # `timeout_s` bounds the whole request. httpx's own timeout is per read, so a
            # server trickling a byte every few seconds would hold the request until the
            # episode's budget ran out.
            try:
                return await within(self._attempt(body), self.timeout_s)
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

    # the HTTP client ---------------------------------------------------------------------
    # `_make_client` and `_attempt` are the two places another HTTP client plugs in (the
    # benchmarks' transports do); the body, the retries and the deadline stay `complete`'s.

    async def _client_for_loop(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._client
        if client is None or self._client_loop is not loop:
            # A pool belongs to the loop it was made on (asyncio.run twice, a new thread).
            # Swap before awaiting, so concurrent first calls share one new pool.
            old, client = client, self._make_client()
            self._client, self._client_loop = client, loop
            if old is not None:
                await _close_quietly(old)
        return client

    def _make_client(self) -> Any:
        if self.transport == "aiohttp":
            self._proxy = env_proxy(self.base_url)
            return aiohttp_session(self._client_headers)
        import openai

        # Retries are ours (the same for every client), so the SDK's are off.
        return openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self._api_key or "EMPTY",
            max_retries=0,
            timeout=self.timeout_s,
            default_headers=self._client_headers or None,
            http_client=self._sdk_http_client(),
        )

    def _sdk_http_client(self) -> Any:
        """The SDK's HTTP client (None: its default, httpx)."""
        return None

    async def _attempt(self, body: dict[str, Any]) -> Completion:
        """One request with `body`; failures raise `AttemptError` (the retry loop's input)."""
        if self.transport == "sdk":
            return await self._attempt_sdk(body)
        import aiohttp

        session = await self._client_for_loop()
        bearer = await self._bearer()
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else None
        try:  # the deadline is `complete`'s
            async with session.post(
                self.base_url + "/chat/completions",
                data=json.dumps(body).encode(),  # bytes: aiohttp sends them as they are
                headers=headers,
                proxy=self._proxy,
            ) as resp:
                raw = await resp.read()
                if resp.status >= 400:
                    raise status_error(resp.status, resp.headers, raw, self._where)
        except (asyncio.TimeoutError, TimeoutError):
            raise self._timeout_error() from None
        except aiohttp.ClientError as exc:
            raise self._connection_error(exc) from None
        return self._parse(raw)

    async def _attempt_sdk(self, body: dict[str, Any]) -> Completion:
        import openai

        client = await self._client_for_loop()
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
            raise self._sdk_timeout(exc) from None
        except openai.APIConnectionError as exc:
            raise self._connection_error(exc.__cause__ or exc) from None
        return self._parse(response.content)

    def _sdk_timeout(self, exc: BaseException) -> AttemptError:
        """What an SDK timeout was (an HTTP client may report other failures as one)."""
        return self._timeout_error()

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
