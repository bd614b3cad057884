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

`GroupJudge` is the group-relative judge (RULER-style, as in OpenPipe ART): one request
shows the judge the `group_size` rollouts of one prompt together, in a seeded shuffled order,
and takes back one relative score in [0, 1] per rollout. It shares the rubric judge's client,
retries, scrubbing, content-hash cache, fallback and token/cost accounting. It needs the
whole group, so a task reaches it through `score_group` (`agentrft.group_scoring`).

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
import random
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
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
    data = _first_json_object(text, "score")
    rationale = data.get("rationale", "")
    return _checked_score(data["score"]), rationale if isinstance(rationale, str) else str(
        rationale
    )


def _first_json_object(text: str, field: str) -> dict[str, Any]:
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


def _checked_score(score: Any) -> float:
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise JudgeAnswerError(f"the judge's score is {score!r}, not a number")
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise JudgeAnswerError(f"the judge's score {score!r} is outside [0, 1]")
    return float(score)


class _ChatJudge:
    """What both judges share: the chat client (the policies' own, so auth, retries,
    timeouts and secret scrubbing are theirs), prices, the fallback and the cache."""

    kind = "judge"

    def __init__(
        self,
        criteria: str,
        view: JudgeView,
        *,
        model: str | None,
        base_url: str | None,
        api_key: str | None,
        client: Policy | None,
        fallback: float | str,
        timeout_s: float,
        max_retries: int,
        backoff_base_s: float,
        input_usd_per_1m: float | None,
        output_usd_per_1m: float | None,
        cache_dir: str | Path | None,
        prompt: str,
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
        """(answer text, usage dict) of one judge request; raises `_Failed` with the
        reason (and any usage) on a failure."""
        try:
            completion = await self._client.complete(
                messages, [], Sampling(temperature=0.0, max_tokens=max_tokens)
            )
        except PolicyError as exc:
            raise _Failed(str(exc)) from exc
        except Exception as exc:  # a client bug must not end the rollout without a reward
            raise _Failed(f"{type(exc).__name__}: {exc}") from exc
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


class _Failed(Exception):
    """A judge request failed; `usage` holds what the call had cost, if anything."""

    def __init__(self, error: str, **usage: Any) -> None:
        super().__init__(error)
        self.usage = usage


class RubricJudge(_ChatJudge):
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

    kind = "rubric judge"

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
        super().__init__(
            criteria,
            view,
            model=model,
            base_url=base_url,
            api_key=api_key,
            client=client,
            fallback=fallback,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_base_s=backoff_base_s,
            input_usd_per_1m=input_usd_per_1m,
            output_usd_per_1m=output_usd_per_1m,
            cache_dir=cache_dir,
            prompt=prompt,
        )
        self.max_tokens = max_tokens
        self._pending: dict[str, asyncio.Task[JudgeVerdict]] = {}

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
        hit = self._cached_verdict(key)
        if hit is not None:
            return hit
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

    def _cached_verdict(self, key: str) -> JudgeVerdict | None:
        data = self._lookup(key)
        if data is None:
            return None
        try:
            score = float(data["score"])
        except (KeyError, TypeError, ValueError):  # a foreign file under our key: ask again
            return None
        return JudgeVerdict(score=score, rationale=str(data.get("rationale", "")), cached=True)

    def _forget(self, key: str, done: asyncio.Task[JudgeVerdict]) -> None:
        if self._pending.get(key) is done:
            del self._pending[key]

    async def _ask(self, key: str, text: str) -> JudgeVerdict:
        """One request to the judge for `text`; stores a good verdict in the cache."""
        try:
            answer, usage = await self._complete(self.messages(text), self.max_tokens)
        except _Failed as exc:
            return self._failure(str(exc), **exc.usage)
        try:
            score, rationale = parse_verdict(answer)
        except JudgeAnswerError as exc:
            return self._failure(str(exc), **usage)
        self._store(key, {"score": score, "rationale": rationale})
        return JudgeVerdict(score=score, rationale=rationale, **usage)


#: The system prompt of a group-relative judge (after OpenPipe ART's RULER). Judge only.
GROUP_PROMPT = (
    "You are a strict, fair grader. You are shown several attempts at the same task, labelled "
    "by number, and the criteria they are judged by. Compare them with each other and give "
    "each a score from 0.0 to 1.0: the best attempt scores highest, a clearly worse attempt "
    "clearly lower, equally good attempts alike. An attempt that meets the criteria must "
    "always score well above one that does not. Answer with one JSON object and nothing "
    'else: {"scores": [{"id": <label>, "score": <number from 0 to 1>, "rationale": "<one '
    'sentence>"}, ...]} with exactly one entry per attempt.'
)


def parse_group_verdict(text: str, n: int) -> list[tuple[float, str]]:
    """(score, rationale) for labels 1..n from a group judge's answer: a JSON object
    `{"scores": [{"id": label, "score": s, "rationale": r}, ...]}`, alone or in a ```json
    fence or prose, with exactly one entry per label and every score in [0, 1]. Anything
    else raises `JudgeAnswerError`."""
    data = _first_json_object(text, "scores")
    entries = data["scores"]
    if not isinstance(entries, list):
        raise JudgeAnswerError(f"the judge's scores are {type(entries).__name__}, not a list")
    found: dict[int, tuple[float, str]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or "id" not in entry or "score" not in entry:
            raise JudgeAnswerError(f"a judge's entry is not {{id, score}}: {entry!r:.80}")
        try:
            label = int(str(entry["id"]).strip().removeprefix("#"))
        except ValueError:
            raise JudgeAnswerError(f"the judge's id {entry['id']!r} is not a label") from None
        if not 1 <= label <= n or label in found:
            raise JudgeAnswerError(f"the judge's id {label} is unknown or given twice (1..{n})")
        found[label] = (_checked_score(entry["score"]), str(entry.get("rationale", "")))
    missing = sorted(set(range(1, n + 1)) - set(found))
    if missing:
        raise JudgeAnswerError(f"the judge gave no score for attempt(s) {missing}")
    return [found[label] for label in range(1, n + 1)]


class GroupJudge(_ChatJudge):
    """A chat model that scores the rollouts of one prompt *relative to each other*, in
    [0, 1], in one request (RULER-style, after OpenPipe ART's RULER).

    Call it with the group, `await judge([(env, trajectory), ...])`, from a task's or
    reward's `score_group` (see `agentrft.group_scoring`); it returns one `JudgeVerdict`
    per member, in the order given, and never raises.

    - The judge sees `view(env, trajectory)` of every member, labelled 1..n, in an order
      that depends only on the views and `seed` (never on the rollout index), so position
      bias cannot follow a sample's place in its group; the same group given in another
      order is the same request and the same cache entry.
    - Cache: keyed by a SHA-256 of (model, prompt, criteria, the group's sorted views), in
      memory and, with `cache_dir`, on disk. A hit sends no request; every member's verdict
      says `cached`.
    - Tokens and cost: the one request's usage is on the first member's verdict (the
      others carry 0), so sums over a step or a report are exact.
    - A failure (timeout, HTTP error, an answer that does not score every attempt once in
      [0, 1], a broken view) gives every member the `fallback`, `failed=True`.

    Args: as `RubricJudge`; `max_tokens` defaults to 60 + 80 per member, and `seed` picks
    the shuffle.
    """

    kind = "group judge"

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
        max_tokens: int | None = None,
        input_usd_per_1m: float | None = None,
        output_usd_per_1m: float | None = None,
        cache_dir: str | Path | None = None,
        prompt: str = GROUP_PROMPT,
        seed: int = 0,
    ) -> None:
        super().__init__(
            criteria,
            view,
            model=model,
            base_url=base_url,
            api_key=api_key,
            client=client,
            fallback=fallback,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_base_s=backoff_base_s,
            input_usd_per_1m=input_usd_per_1m,
            output_usd_per_1m=output_usd_per_1m,
            cache_dir=cache_dir,
            prompt=prompt,
        )
        self.max_tokens = max_tokens
        self.seed = seed

    def cache_key(self, views: Sequence[str]) -> str:
        """The content hash a group's verdicts are cached under (order-free)."""
        payload = json.dumps(["group", self.model, self.prompt, self.criteria, sorted(views)])
        return hashlib.sha256(payload.encode()).hexdigest()

    def order(self, views: Sequence[str]) -> list[int]:
        """The members' indices in the order the judge is shown them: sorted by view text
        (so the rollout index plays no part), then shuffled by `seed` and the group's hash."""
        by_text = sorted(range(len(views)), key=lambda i: views[i])
        random.Random(f"{self.seed}:{self.cache_key(views)}").shuffle(by_text)
        return by_text

    def messages(self, shown: Sequence[str]) -> list[Message]:
        """The judge's conversation for views in the order shown (sent to the judge only)."""
        attempts = "\n\n".join(
            f"=== Attempt {label} ===\n{text}" for label, text in enumerate(shown, start=1)
        )
        return [
            system(self.prompt),
            user(f"Criteria:\n{self.criteria}\n\n{len(shown)} attempts to compare:\n\n{attempts}"),
        ]

    async def __call__(self, group: Iterable[tuple[Any, Any]]) -> list[JudgeVerdict]:
        members = list(group)
        if not members:
            return []
        try:
            views = [str(self.view(env, trajectory)) for env, trajectory in members]
        except Exception as exc:  # the author's view has a bug: a failure, not a crash
            return self._failures(
                len(members), f"the judge's view raised {type(exc).__name__}: {exc}"
            )
        return await self.score_views(views)

    async def score_views(self, views: Sequence[str]) -> list[JudgeVerdict]:
        """The verdicts for already-made views (what `__call__` does after `view`)."""
        n = len(views)
        if n == 0:
            return []
        key = self.cache_key(views)
        order = self.order(views)
        hit = self._cached_scores(key, n)
        if hit is None:
            budget = self.max_tokens if self.max_tokens is not None else 60 + 80 * n
            try:
                answer, usage = await self._complete(
                    self.messages([views[i] for i in order]), budget
                )
            except _Failed as exc:
                return self._failures(n, str(exc), **exc.usage)
            try:
                shown = parse_group_verdict(answer, n)
            except JudgeAnswerError as exc:
                return self._failures(n, str(exc), **usage)
            by_member: list[tuple[float, str]] = [(0.0, "")] * n
            for position, member in enumerate(order):
                by_member[member] = shown[position]
            self._store(key, self._as_sorted(views, by_member))
            verdicts = [JudgeVerdict(score=s, rationale=r) for s, r in by_member]
            return [dataclasses.replace(verdicts[0], **usage), *verdicts[1:]]
        return [
            JudgeVerdict(score=s, rationale=r, cached=True)
            for s, r in self._from_sorted(views, hit)
        ]

    # -- internals -------------------------------------------------------------------

    def _failures(self, n: int, error: str, **usage: Any) -> list[JudgeVerdict]:
        first = self._failure(error, **usage)  # logged once for the group
        rest = self._fallback_verdict(first.error)
        return [first, *([rest] * (n - 1))]

    @staticmethod
    def _as_sorted(views: Sequence[str], verdicts: Sequence[tuple[float, str]]) -> dict[str, Any]:
        """The cache entry: scores in sorted-view order, so any order of the group finds it."""
        by_text = sorted(range(len(views)), key=lambda i: views[i])
        return {
            "scores": [verdicts[i][0] for i in by_text],
            "rationales": [verdicts[i][1] for i in by_text],
        }

    @staticmethod
    def _from_sorted(views: Sequence[str], entry: dict[str, Any]) -> list[tuple[float, str]]:
        by_text = sorted(range(len(views)), key=lambda i: views[i])
        out: list[tuple[float, str]] = [(0.0, "")] * len(views)
        for position, member in enumerate(by_text):
            out[member] = (entry["scores"][position], entry["rationales"][position])
        return out

    def _cached_scores(self, key: str, n: int) -> dict[str, Any] | None:
        data = self._lookup(key)
        if data is None:
            return None
        scores, rationales = data.get("scores"), data.get("rationales")
        if (
            not isinstance(scores, list)
            or not isinstance(rationales, list)
            or len(scores) != n
            or len(rationales) != n
        ):
            return None  # a foreign file under our key: ask again
        try:
            data = {
                "scores": [float(s) for s in scores],
                "rationales": [str(r) for r in rationales],
            }
        except (TypeError, ValueError):
            return None
        return data


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


#: Training-step metric names for judge use (the local engine logs them with the others).
JUDGE_METRICS = (
    "judge/episodes",
    "judge/tokens",
    "judge/prompt_tokens",
    "judge/completion_tokens",
    "judge/cost_usd",
    "judge/cache_hits",
    "judge/failures",
)


def judge_metrics(trajectories: Iterable[Any], prefix: str = "judge") -> dict[str, float]:
    """Judge use summed over episodes, from their rewards' `{prefix}_*` components
    (`JudgeVerdict.components`): `judge/episodes` (episodes judged), `judge/tokens`,
    `judge/prompt_tokens`, `judge/completion_tokens`, `judge/cost_usd`, `judge/cache_hits`
    and `judge/failures` (episodes scored with the fallback). Empty when no episode was
    judged, so a run without a judge logs nothing extra."""
    totals = dict.fromkeys(JUDGE_METRICS, 0.0)
    for t in trajectories:
        comps = t.reward.components if getattr(t, "reward", None) is not None else {}
        if f"{prefix}_score" not in comps:
            continue
        totals["judge/episodes"] += 1
        totals["judge/prompt_tokens"] += comps.get(f"{prefix}_prompt_tokens", 0.0)
        totals["judge/completion_tokens"] += comps.get(f"{prefix}_completion_tokens", 0.0)
        totals["judge/cost_usd"] += comps.get(f"{prefix}_cost_usd", 0.0)
        totals["judge/cache_hits"] += float(comps.get(f"{prefix}_cached", 0.0) > 0)
        totals["judge/failures"] += float(comps.get(f"{prefix}_failed", 0.0) > 0)
    if not totals["judge/episodes"]:
        return {}
    totals["judge/tokens"] = totals["judge/prompt_tokens"] + totals["judge/completion_tokens"]
    return totals


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
