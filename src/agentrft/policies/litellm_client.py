"""`LiteLLMPolicy`: any litellm provider string as a `Policy`
("anthropic/claude-sonnet-4-5", "openai/gpt-4o-mini", "hosted_vllm/Qwen/Qwen3-1.7B", ...),
typically a frontier model as a baseline for `agentrft eval`.

Same request fields, retries, error kinds and response mapping as `OpenAIPolicy`.
litellm is imported on first use: importing it takes seconds, and `agentrft --help` must
not pay for it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from agentrft.messages import Message
from agentrft.policies.openai_client import completion_from_openai, request_body
from agentrft.policies.retry import AttemptError, RetryPolicy, parse_retry_after, status_error
from agentrft.policies.urls import safe_url, split_userinfo
from agentrft.policy import Completion, Policy, Sampling
from agentrft.redact import is_credential_name, register_secret, scrub_text
from agentrft.trajectory import FailureKind

logger = logging.getLogger("agentrft.policies")

_litellm: Any = None


def _import_litellm() -> Any:
    global _litellm
    if _litellm is None:
        # Without this, importing litellm fetches a model price list from the internet.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.telemetry = False
        litellm.suppress_debug_info = True
        _litellm = litellm
    return _litellm


class LiteLLMPolicy(Policy):
    """A chat model reached through litellm.

    Args:
        model: a litellm model string, provider first ("anthropic/claude-...").
        api_base: override the provider's endpoint (e.g. a local OpenAI-compatible server
            with "openai/<model>"). A `user:password@` in it is taken out of the URL and,
            unless `api_key` is given, sent as `Authorization: Basic ...` instead of any
            provider key (the rule of `OpenAIPolicy`). litellm's `openai/` provider keeps
            that header; providers that set their own (`hosted_vllm/`) replace it, so a
            Basic-auth proxy needs `openai/<model>`.
        api_key: the provider key; by default litellm reads the provider's usual
            environment variable (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...). It wins over
            the `api_base`'s user:password (one Authorization header holds one credential).
        headers: extra headers on every request.
        timeout_s: per-request timeout.
        max_retries, backoff_base_s, backoff_max_s: as for `OpenAIPolicy` (litellm's own
            retries are off).
        drop_params: let litellm drop sampling fields a provider does not accept
            (e.g. `seed` for Anthropic) instead of failing.
        extra_body: fields added to every request (`Sampling.extra` overrides them).
        name: shown in reports; defaults to the model string.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        drop_params: bool = True,
        extra_body: Mapping[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        if "/" not in model:
            raise ValueError(
                f"litellm model {model!r} needs a provider prefix, e.g. 'openai/{model}' or "
                f"'anthropic/{model}'"
            )
        self.model = model
        self.name = name or model
        self.headers = dict(headers or {})
        basic_auth = None
        if api_base is not None:
            api_base, basic_auth = split_userinfo(api_base)
        self.api_base = api_base
        #: The headers sent: the user's, after the api_base's Basic auth (if it is used).
        self._request_headers = dict(self.headers)
        self.timeout_s = timeout_s
        self.drop_params = drop_params
        self.extra_body = dict(extra_body or {})
        self.retry = RetryPolicy(max_retries, backoff_base_s, backoff_max_s)
        self._api_key = api_key
        self._sent_key = api_key
        self._where = f"litellm {model}"
        # Every writer scrubs these; the provider's key from the environment
        # (ANTHROPIC_API_KEY, ...) is scrubbed by its variable's name.
        register_secret(api_key, *(v for k, v in self.headers.items() if is_credential_name(k)))
        if basic_auth is not None:
            register_secret(basic_auth.removeprefix("Basic "))
            if api_key is not None:
                logger.warning(
                    "%s: the URL's user:password is not sent; the API key is (one "
                    "Authorization header holds one credential)",
                    safe_url(api_base or ""),
                )
            else:
                self._request_headers = {"Authorization": basic_auth, **self.headers}
                # A placeholder key: litellm's openai/ provider will not send a request
                # without one, and no ambient provider key goes to an endpoint that names
                # its own credentials.
                self._sent_key = "EMPTY"

    def __repr__(self) -> str:  # no secrets
        return f"LiteLLMPolicy(model={self.model!r}, api_base={self.api_base!r})"

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        body = request_body(self.model, messages, tools, sampling, self.extra_body)
        return await self.retry.run(lambda: self._attempt(body), scrub=self._scrub)

    async def _attempt(self, body: dict[str, Any]) -> Completion:
        litellm = _import_litellm()
        kwargs: dict[str, Any] = dict(body)
        kwargs.update(
            timeout=self.timeout_s,
            num_retries=0,
            max_retries=0,
            drop_params=self.drop_params,
        )
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._sent_key:
            kwargs["api_key"] = self._sent_key
        if self._request_headers:
            kwargs["extra_headers"] = dict(self._request_headers)
        try:
            response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            raise self._classify(exc) from None
        data = response.model_dump() if hasattr(response, "model_dump") else dict(response)
        return completion_from_openai(data)

    def _classify(self, exc: Exception) -> AttemptError:
        import openai

        if isinstance(exc, openai.APITimeoutError):
            return AttemptError(
                f"no answer from {self._where} within {self.timeout_s:g}s",
                kind=FailureKind.POLICY_TIMEOUT,
                retryable=True,
            )
        status = getattr(exc, "status_code", None)
        if isinstance(exc, openai.APIConnectionError) or status is None:
            # litellm wraps transport failures without a status; they are worth a retry.
            return AttemptError(
                f"{self._where} failed: {type(exc).__name__}: {_first_line(exc)}",
                kind=FailureKind.POLICY_ERROR,
                retryable=isinstance(exc, openai.APIConnectionError),
            )
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None) or {}
        err = status_error(int(status), headers, _first_line(exc), self._where)
        if err.retry_after is None:
            err.retry_after = parse_retry_after(getattr(exc, "headers", None))
        return err

    def _scrub(self, text: str) -> str:
        """litellm's messages may quote the key, the api_base's password or a server's
        echo of either; the key may come from the provider's environment variable."""
        if self._api_key and len(self._api_key) >= 4:
            text = text.replace(self._api_key, "***")
        return scrub_text(text)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
