"""`GroupJudge`: one request shows a chat model the rollouts of one prompt together and
takes back one relative score per rollout (RULER-style, as in OpenPipe ART).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Iterable, Sequence
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
from agentrft.messages import Message, system, user

if TYPE_CHECKING:
    from typing_extensions import Unpack

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
    data = first_json_object(text, "scores")
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
        found[label] = (checked_score(entry["score"]), str(entry.get("rationale", "")))
    missing = sorted(set(range(1, n + 1)) - set(found))
    if missing:
        raise JudgeAnswerError(f"the judge gave no score for attempt(s) {missing}")
    return [found[label] for label in range(1, n + 1)]


class GroupJudge(ChatJudge):
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
        max_tokens: int | None = None,
        prompt: str = GROUP_PROMPT,
        seed: int = 0,
        **options: Unpack[JudgeOptions],
    ) -> None:
        super().__init__(criteria, view, prompt=prompt, **options)
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
            except JudgeFailed as exc:
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
