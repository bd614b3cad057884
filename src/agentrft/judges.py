"""Judge rewards: a model scores a finished episode against a rubric the task author writes.

`RubricJudge` asks a chat model (any OpenAI-compatible URL, or a litellm model string) for
an absolute score in [0, 1] and a short rationale. It is meant to be *shaping inside an
outcome tier*, never the tier itself, so `agentrft reward check` still proves the order::

    judge = RubricJudge(
        criteria="The message names every rejected receipt and the policy rule behind it.",
        view=lambda env, traj: env.explanation,     # what the judge sees, and nothing else
        model="gpt-4o-mini",
        base_url="https://api.openai.com/v1",
        fallback=0.5,                               # a judge failure scores as a neutral 0.5
    )

    async def reward(env, traj):
        verdict = await judge(env, traj)
        return TIERS.score("filed", shaping=verdict.shaping, components=verdict.components())

- The judge sees only `view(env, trajectory)`: the author decides whether that is the final
  state, the transcript, or hidden fields. The judge's prompt goes to the judge alone; it is
  never added to the trajectory the policy sees.
- Verdicts are cached by a content hash (model, judge prompt, criteria, view text) in memory
  and, with `cache_dir`, on disk: a hit sends no request. Identical views judged at the
  same time (a group's rollouts) share one request.
- Retries and timeouts are the policy clients' (`RetryPolicy`). A failure (timeout, HTTP
  error, an answer that is not `{"score": ...}` JSON) never raises: the verdict carries the
  author's `fallback` (a score, or a tier name) and `failed=True`.
- Tokens and cost: each verdict carries the call's prompt/completion tokens (from the
  response's `usage`) and, with prices per 1M tokens, its cost; `components()` puts them in
  the reward's components (`judge_tokens`, `judge_cost_usd`, `judge_failed`, ...), which the
  evaluation report totals.

`ScriptedJudge` is the same interface without a network: a fixed or programmed score, for
tests and for the reward check.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import inspect
import json
import logging
import math
import os
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrft.messages import Message, system, user
from agentrft.policy import Policy, PolicyError, Sampling
from agentrft.redact import scrub_text

logger = logging.getLogger("agentrft.judges")

#: What the judge sees of an episode: `view(env, trajectory) -> text`.
JudgeView = Callable[[Any, Any], str]

#: The system prompt of a rubric judge. It is sent to the judge only.
RUBRIC_PROMPT = (
    "You are a strict, fair grader. You score one piece of work against the criteria you are "
    "given, from 0.0 (fails them entirely) to 1.0 (meets every one). Answer with one JSON "
    'object and nothing else: {"score": <number from 0 to 1>, "rationale": "<one or two '
    'sentences>"}.'
)


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


def parse_verdict(text: str) -> tuple[float, str]:
    """(score, rationale) from a judge's answer: a JSON object with a `score` in [0, 1],
    alone or inside a ```json fence or surrounding prose. Anything else raises
    `JudgeAnswerError`."""
    candidates = [text.strip()]
    candidates += re.findall(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.DOTALL)
    candidates += re.findall(r"\{[^{}]*\}", text)
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if not isinstance(data, dict) or "score" not in data:
            continue
        score = data["score"]
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise JudgeAnswerError(f"the judge's score is {score!r}, not a number")
        if not math.isfinite(score) or not 0.0 <= score <= 1.0:
            raise JudgeAnswerError(f"the judge's score {score!r} is outside [0, 1]")
        rationale = data.get("rationale", "")
        return float(score), rationale if isinstance(rationale, str) else str(rationale)
    snippet = " ".join(text.split())[:120]
    raise JudgeAnswerError(f'the judge did not answer {{"score": ...}} JSON: {snippet!r}')


class RubricJudge:
    """A chat model that scores an episode against `criteria`, in [0, 1].

    Call it (`await judge(env, trajectory)`) from an async reward; it returns a
    `JudgeVerdict` and never raises.

    Args:
        criteria: the rubric, in the author's words.
        view: `view(env, trajectory) -> str`, all the judge sees of the episode.
        model: the judge model. With `base_url`, the name sent to that OpenAI-compatible
            server; `litellm:PROVIDER/MODEL` goes through litellm (`base_url`, if given, is
            its `api_base`).
        base_url: an OpenAI-compatible API root (default OpenAI's). A `user:password@` in
            it is sent as Basic auth, as for `OpenAIPolicy`.
        api_key: the judge's key (default: the client's usual environment variable).
        client: instead of `model`/`base_url`, any `Policy` to ask (the judge does not
            close it).
        fallback: what a failure gives: a score in [0, 1], or the name of a tier (then the
            verdict's `fallback_tier`, and `score` 0.0).
        timeout_s, max_retries, backoff_base_s: the per-request deadline, retries after
            the first attempt and the first backoff delay, through the client's `RetryPolicy`.
        max_tokens: the judge's answer budget.
        input_usd_per_1m, output_usd_per_1m: prices per million prompt / completion tokens,
            for `cost_usd` (None: cost not counted).
        cache_dir: also keep verdicts on disk, one JSON file per content hash (verdicts
            survive restarts and are shared by processes that share the directory).
        prompt: the judge's system prompt (default `RUBRIC_PROMPT`).
    """

    def __init__(
        self,
        criteria: str,
        view: JudgeView,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Policy | None = None,
        fallback: float | str = 0.0,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_base_s: float = 0.5,
        max_tokens: int = 256,
        input_usd_per_1m: float | None = None,
        output_usd_per_1m: float | None = None,
        cache_dir: str | Path | None = None,
        prompt: str = RUBRIC_PROMPT,
    ) -> None:
        if not criteria.strip():
            raise ValueError("RubricJudge needs criteria: the rubric the judge scores against")
        if not callable(view):
            raise TypeError(
                f"RubricJudge view must be a function (env, trajectory) -> str, got {view!r}"
            )
        if isinstance(fallback, bool) or not isinstance(fallback, int | float | str):
            raise TypeError(
                f"RubricJudge fallback must be a score or a tier name, got {fallback!r}"
            )
        if not isinstance(fallback, str) and not 0.0 <= fallback <= 1.0:
            raise ValueError(f"RubricJudge fallback score must be in [0, 1], got {fallback}")
        for name, price in (
            ("input_usd_per_1m", input_usd_per_1m),
            ("output_usd_per_1m", output_usd_per_1m),
        ):
            if price is not None and price < 0:
                raise ValueError(f"RubricJudge {name} must be >= 0, got {price}")
        if (client is None) == (model is None):
            raise ValueError("give RubricJudge either model= (with base_url=) or client=")
        self.criteria = criteria
        self.view = view
        self.fallback = fallback
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.input_usd_per_1m = input_usd_per_1m
        self.output_usd_per_1m = output_usd_per_1m
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._cache: dict[str, tuple[float, str]] = {}
        self._pending: dict[str, asyncio.Task[JudgeVerdict]] = {}
        self._client = (
            client
            if client is not None
            else _client(
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
        return f"RubricJudge(model={self.model!r}, client={self._client!r})"

    def messages(self, view_text: str) -> list[Message]:
        """The judge's conversation for one episode (sent to the judge only)."""
        return [
            system(self.prompt),
            user(f"Criteria:\n{self.criteria}\n\nWork to grade:\n{view_text}"),
        ]

    def cache_key(self, view_text: str) -> str:
        """The content hash a verdict is cached under."""
        payload = json.dumps([self.model, self.prompt, self.criteria, view_text])
        return hashlib.sha256(payload.encode()).hexdigest()

    async def __call__(self, env: Any, trajectory: Any) -> JudgeVerdict:
        try:
            text = str(self.view(env, trajectory))
        except Exception as exc:  # the author's view has a bug: a failure, not a crash
            return self._failure(f"the judge's view raised {type(exc).__name__}: {exc}")
        key = self.cache_key(text)
        hit = self._lookup(key)
        if hit is not None:
            return JudgeVerdict(score=hit[0], rationale=hit[1], cached=True)
        # A GRPO group often ends in identical views at once: ask once, share the answer.
        loop = asyncio.get_running_loop()
        pending = self._pending.get(key)
        if pending is not None and pending.get_loop() is loop:
            first = await asyncio.shield(pending)
            # The asker counted the tokens and cost; a sharer's verdict is a cache hit.
            return dataclasses.replace(
                first, cached=not first.failed, prompt_tokens=0, completion_tokens=0, cost_usd=0.0
            )
        ask = loop.create_task(self._ask(key, text))
        self._pending[key] = ask
        ask.add_done_callback(lambda done: self._forget(key, done))
        # Shielded: an episode cancelled mid-call leaves the answer to the others waiting.
        return await asyncio.shield(ask)

    def _forget(self, key: str, done: asyncio.Task[JudgeVerdict]) -> None:
        if self._pending.get(key) is done:
            del self._pending[key]

    async def _ask(self, key: str, text: str) -> JudgeVerdict:
        """One request to the judge for `text`; stores a good verdict in the cache."""
        try:
            completion = await self._client.complete(
                self.messages(text), [], Sampling(temperature=0.0, max_tokens=self.max_tokens)
            )
        except PolicyError as exc:
            return self._failure(str(exc))
        except Exception as exc:  # a client bug must not end the rollout without a reward
            return self._failure(f"{type(exc).__name__}: {exc}")
        usage = {
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "cost_usd": self.cost(completion.prompt_tokens, completion.completion_tokens),
        }
        try:
            score, rationale = parse_verdict(completion.message.content or "")
        except JudgeAnswerError as exc:
            return self._failure(str(exc), **usage)
        self._store(key, score, rationale)
        return JudgeVerdict(score=score, rationale=rationale, **usage)  # type: ignore[arg-type]

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

    def _failure(self, error: str, **usage: Any) -> JudgeVerdict:
        error = scrub_text(error)
        logger.warning("judge %s failed: %s", self.model, error)
        if isinstance(self.fallback, str):
            return JudgeVerdict(
                score=0.0, failed=True, fallback_tier=self.fallback, error=error, **usage
            )
        return JudgeVerdict(score=float(self.fallback), failed=True, error=error, **usage)

    def _lookup(self, key: str) -> tuple[float, str] | None:
        if key in self._cache:
            return self._cache[key]
        if self.cache_dir is None:
            return None
        path = self.cache_dir / f"{key}.json"
        try:
            data = json.loads(path.read_text())
            hit = (float(data["score"]), str(data.get("rationale", "")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):  # a torn or foreign file: ask again
            logger.warning("judge cache file %s is unreadable; asking the judge again", path)
            return None
        self._cache[key] = hit
        return hit

    def _store(self, key: str, score: float, rationale: str) -> None:
        self._cache[key] = (score, rationale)
        if self.cache_dir is None:
            return
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            path = self.cache_dir / f"{key}.json"
            tmp = path.with_suffix(f".{os.getpid()}.{uuid.uuid4().hex}.tmp")
            # Write then rename, so a reader never sees half a verdict.
            tmp.write_text(json.dumps({"score": score, "rationale": rationale}))
            tmp.replace(path)
        except OSError as exc:  # a full disk costs the cache, not the reward
            logger.warning("judge cache %s not written: %s", self.cache_dir, exc)


class ScriptedJudge:
    """A judge without a network: `score` is a number, or `score(env, trajectory)` (sync or
    async) returning one in [0, 1]. It returns the same `JudgeVerdict` as `RubricJudge`
    (no tokens, no cost), so a reward written for one runs with the other in tests and in
    `agentrft reward check`."""

    def __init__(
        self,
        score: float | Callable[[Any, Any], float | Awaitable[float]],
        rationale: str = "scripted",
    ) -> None:
        self._score = score
        self.rationale = rationale
        self.calls = 0

    async def __call__(self, env: Any, trajectory: Any) -> JudgeVerdict:
        self.calls += 1
        value: Any = self._score(env, trajectory) if callable(self._score) else self._score
        if inspect.isawaitable(value):
            value = await value
        return JudgeVerdict(score=min(1.0, max(0.0, float(value))), rationale=self.rationale)


def _client(model: str, base_url: str | None, api_key: str | None, **retry: Any) -> Policy:
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
