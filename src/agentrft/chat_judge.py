"""What the chat-model judges share (`RubricJudge`, `GroupJudge` in `agentrft.judges`):
the verdict they return, the answer parsing, and `ChatJudge`: the policies' own chat client
(so auth, retries, timeouts and secret scrubbing are theirs), prices, the fallback and the
content-hash cache.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from agentrft.messages import Message
from agentrft.policy import Policy, PolicyError, Sampling
from agentrft.redact import scrub_text

logger = logging.getLogger("agentrft.judges")  # one logger for every judge

#: What the judge sees of an episode: `view(env, trajectory) -> text`.
JudgeView = Callable[[Any, Any], str]


@dataclass(frozen=True)
class JudgeVerdict:
    """What a judge made of one episode.

    Attributes:
        score: in [0, 1]; on a failure with a numeric fallback, that fallback.
        rationale: the judge's short reason (empty on a failure).
        failed: the judge could not score (timeout, HTTP error, malformed answer).
        fallback_tier: on a failure with a tier fallback, the tier the reward should use.
        error: why it failed, secrets scrubbed (empty when it did not).
        cached: served from the cache; no request was made.
        prompt_tokens, completion_tokens: the call's usage (0 on a cache hit).
        cost_usd: the call's cost at the judge's prices (0 without prices or on a hit).
    """

    score: float
    rationale: str = ""
    failed: bool = False
    fallback_tier: str | None = None
    error: str = ""
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def shaping(self) -> float:
        """The score mapped from [0, 1] to the [-1, 1] a tier's shaping takes."""
        return 2.0 * self.score - 1.0

    def tier(self, default: str) -> str:
        """`default`, or the declared fallback tier when the judge failed."""
        return self.fallback_tier if self.failed and self.fallback_tier else default

    def components(self, prefix: str = "judge") -> dict[str, float]:
        """Reward components: the score, tokens, cost and whether it failed or was cached."""
        return {
            f"{prefix}_score": self.score,
            f"{prefix}_prompt_tokens": float(self.prompt_tokens),
            f"{prefix}_completion_tokens": float(self.completion_tokens),
            f"{prefix}_tokens": float(self.prompt_tokens + self.completion_tokens),
            f"{prefix}_cost_usd": self.cost_usd,
            f"{prefix}_failed": float(self.failed),
            f"{prefix}_cached": float(self.cached),
        }


class JudgeAnswerError(ValueError):
    """The judge's answer is not a JSON object with a numeric `score` in [0, 1]."""


def first_json_object(text: str, field: str) -> dict[str, Any]:
    """The first JSON object with `field` in `text`: the whole text, a ```json fence, or a
    `{...}` inside prose."""
    candidates = [text.strip()]
    candidates += re.findall(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.DOTALL)
    candidates += re.findall(r"\{[^{}]*\}", text)
    start = text.find("{")
    if start >= 0:  # a nested object (the group answer) inside prose
        candidates.append(text[start : text.rfind("}") + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and field in data:
            return data
    snippet = " ".join(text.split())[:120]
    raise JudgeAnswerError(f'the judge did not answer {{"{field}": ...}} JSON: {snippet!r}')


def checked_score(score: Any) -> float:
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise JudgeAnswerError(f"the judge's score is {score!r}, not a number")
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise JudgeAnswerError(f"the judge's score {score!r} is outside [0, 1]")
    return float(score)


class JudgeOptions(TypedDict, total=False):
    """The keywords every chat judge takes besides its own (see `RubricJudge` for each)."""

    model: str | None
    base_url: str | None
    api_key: str | None
    client: Policy | None
    fallback: float | str
    timeout_s: float
    max_retries: int
    backoff_base_s: float
    input_usd_per_1m: float | None
    output_usd_per_1m: float | None
    cache_dir: str | Path | None


class ChatJudge:
    """What the chat judges share: the chat client (the policies' own, so auth, retries,
    timeouts and secret scrubbing are theirs), prices, the fallback and the cache."""

    kind = "judge"

    def __init__(
        self,
        criteria: str,
        view: JudgeView,
        *,
        prompt: str,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Policy | None = None,
        fallback: float | str = 0.0,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_base_s: float = 0.5,
        input_usd_per_1m: float | None = None,
        output_usd_per_1m: float | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        name = type(self).__name__
        if not criteria.strip():
            raise ValueError(f"{name} needs criteria: the rubric the judge scores against")
        if not callable(view):
            raise TypeError(
                f"{name} view must be a function (env, trajectory) -> str, got {view!r}"
            )
        if isinstance(fallback, bool) or not isinstance(fallback, int | float | str):
            raise TypeError(f"{name} fallback must be a score or a tier name, got {fallback!r}")
        if not isinstance(fallback, str) and not 0.0 <= fallback <= 1.0:
            raise ValueError(f"{name} fallback score must be in [0, 1], got {fallback}")
        for label, price in (
            ("input_usd_per_1m", input_usd_per_1m),
            ("output_usd_per_1m", output_usd_per_1m),
        ):
            if price is not None and price < 0:
                raise ValueError(f"{name} {label} must be >= 0, got {price}")
        if (client is None) == (model is None):
            raise ValueError(f"give {name} either model= (with base_url=) or client=")
        self.criteria = criteria
        self.view = view
        self.fallback = fallback
        self.prompt = prompt
        self.input_usd_per_1m = input_usd_per_1m
        self.output_usd_per_1m = output_usd_per_1m
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._cache: dict[str, dict[str, Any]] = {}
        self._client = (
            client
            if client is not None
            else judge_client(
                model or "",
                base_url,
                api_key,
                timeout_s=timeout_s,
                max_retries=max_retries,
                backoff_base_s=backoff_base_s,
            )
        )
        self._owns_client = client is None
        self.model = model or getattr(client, "name", type(client).__name__)

    def __repr__(self) -> str:  # no secrets: the client's repr is its own safe one
        return f"{type(self).__name__}(model={self.model!r}, client={self._client!r})"

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for one call at the judge's prices (0 where a price is not given)."""
        return (
            prompt_tokens * (self.input_usd_per_1m or 0.0)
            + completion_tokens * (self.output_usd_per_1m or 0.0)
        ) / 1e6

    async def aclose(self) -> None:
        """Close the judge's own HTTP client (not a `client=` passed in)."""
        if self._owns_client:
            await self._client.aclose()

    # -- internals -------------------------------------------------------------------

    async def _complete(self, messages: list[Message], max_tokens: int) -> tuple[str, Any]:
        """(answer text, usage dict) of one judge request; raises `JudgeFailed` with the
        reason (and any usage) on a failure."""
        try:
            completion = await self._client.complete(
                messages, [], Sampling(temperature=0.0, max_tokens=max_tokens)
            )
        except PolicyError as exc:
            raise JudgeFailed(str(exc)) from exc
        except Exception as exc:  # a client bug must not end the rollout without a reward
            raise JudgeFailed(f"{type(exc).__name__}: {exc}") from exc
        usage = {
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "cost_usd": self.cost(completion.prompt_tokens, completion.completion_tokens),
        }
        return completion.message.content or "", usage

    def _failure(self, error: str, **usage: Any) -> JudgeVerdict:
        error = scrub_text(error)
        logger.warning("%s %s failed: %s", self.kind, self.model, error)
        return self._fallback_verdict(error, **usage)

    def _fallback_verdict(self, error: str, **usage: Any) -> JudgeVerdict:
        if isinstance(self.fallback, str):
            return JudgeVerdict(
                score=0.0, failed=True, fallback_tier=self.fallback, error=error, **usage
            )
        return JudgeVerdict(score=float(self.fallback), failed=True, error=error, **usage)

    def _lookup(self, key: str) -> dict[str, Any] | None:
        if key in self._cache:
            return self._cache[key]
        if self.cache_dir is None:
            return None
        path = self.cache_dir / f"{key}.json"
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise TypeError("not an object")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError):  # a torn or foreign file: ask again
            logger.warning("judge cache file %s is unreadable; asking the judge again", path)
            return None
        self._cache[key] = data
        return data

    def _store(self, key: str, data: dict[str, Any]) -> None:
        self._cache[key] = data
        if self.cache_dir is None:
            return
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            path = self.cache_dir / f"{key}.json"
            tmp = path.with_suffix(f".{os.getpid()}.{uuid.uuid4().hex}.tmp")
            # Write then rename, so a reader never sees half a verdict.
            tmp.write_text(json.dumps(data))
            tmp.replace(path)
        except OSError as exc:  # a full disk costs the cache, not the reward
            logger.warning("judge cache %s not written: %s", self.cache_dir, exc)


class JudgeFailed(Exception):
    """A judge request failed; `usage` holds what the call had cost, if anything."""

    def __init__(self, error: str, **usage: Any) -> None:
        super().__init__(error)
        self.usage = usage


def judge_client(model: str, base_url: str | None, api_key: str | None, **retry: Any) -> Policy:
    """The judge's chat client: the project's own, so auth, URL credentials, retries,
    timeouts and secret scrubbing are the policies' (policies/openai_client.py)."""
    if model.startswith("litellm:"):
        from agentrft.policies.litellm_client import LiteLLMPolicy

        return LiteLLMPolicy(
            model.removeprefix("litellm:"), api_base=base_url, api_key=api_key, **retry
        )
    from agentrft.policies.openai_client import OpenAIPolicy

    url: dict[str, Any] = {"base_url": base_url} if base_url else {}
    return OpenAIPolicy(model, api_key=api_key, **url, **retry)
