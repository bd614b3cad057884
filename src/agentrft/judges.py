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

What the chat judges share (the verdict, the client, the cache) is in `agentrft.chat_judge`
and `GroupJudge` in `agentrft.group_judge`; every name is importable from here too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from agentrft.chat_judge import (
    ChatJudge,
    JudgeAnswerError,
    JudgeFailed,
    JudgeOptions,
    JudgeVerdict,
    JudgeView,
    checked_score,
    first_json_object,
)
from agentrft.group_judge import GROUP_PROMPT, GroupJudge, parse_group_verdict
from agentrft.messages import Message, system, user

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "GROUP_PROMPT",
    "JUDGE_METRICS",
    "RUBRIC_PROMPT",
    "GroupJudge",
    "JudgeAnswerError",
    "JudgeOptions",
    "JudgeVerdict",
    "JudgeView",
    "RubricJudge",
    "ScriptedJudge",
    "judge_metrics",
    "parse_group_verdict",
    "parse_verdict",
]

RUBRIC_PROMPT = (
    "You are a strict, fair grader. You score one piece of work against the criteria you are "
    "given, from 0.0 (fails them entirely) to 1.0 (meets every one). Answer with one JSON "
    'object and nothing else: {"score": <number from 0 to 1>, "rationale": "<one or two '
    'sentences>"}.'
)


def parse_verdict(text: str) -> tuple[float, str]:
    """(score, rationale) from a judge's answer: a JSON object with a `score` in [0, 1],
    alone or inside a ```json fence or surrounding prose. Anything else raises
    `JudgeAnswerError`."""
    data = first_json_object(text, "score")
    rationale = data.get("rationale", "")
    return checked_score(data["score"]), rationale if isinstance(rationale, str) else str(rationale)


class RubricJudge(ChatJudge):
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
        max_tokens: int = 256,
        prompt: str = RUBRIC_PROMPT,
        **options: Unpack[JudgeOptions],
    ) -> None:
        super().__init__(criteria, view, prompt=prompt, **options)
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
        except JudgeFailed as exc:
            return self._failure(str(exc), **exc.usage)
        try:
            score, rationale = parse_verdict(answer)
        except JudgeAnswerError as exc:
            return self._failure(str(exc), **usage)
        self._store(key, {"score": score, "rationale": rationale})
        return JudgeVerdict(score=score, rationale=rationale, **usage)


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
