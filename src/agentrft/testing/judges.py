"""Judge answers for the loopback fake server: script a `FakeOpenAIServer` as a rubric or a
group-relative judge, with exact token usage, so judge rewards are tested end to end
without a real model::

    with FakeOpenAIServer(group_judge(lambda text: text.count("a") / 10)) as server:
        judge = GroupJudge("More a's is better.", view, model="judge", base_url=server.base_url)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agentrft.messages import Message

#: How `GroupJudge.messages` labels each attempt it shows.
_ATTEMPT = re.compile(r"^=== Attempt (\d+) ===\n(.*?)(?=\n\n=== Attempt \d+ ===\n|\Z)", re.M | re.S)


def judge_body(content: str, prompt_tokens: int = 100, completion_tokens: int = 20) -> dict:
    """A chat.completion body with `content` and exact usage."""
    return {
        "id": "chatcmpl-judge",
        "object": "chat.completion",
        "model": "judge-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def shown_attempts(messages: list[Message]) -> list[str]:
    """The attempts' views in the order a `GroupJudge` request shows them (label 1 first)."""
    text = messages[-1].content or ""
    found = {int(label): body for label, body in _ATTEMPT.findall(text)}
    return [found[label] for label in sorted(found)]


def graded_view(messages: list[Message]) -> str:
    """The view a `RubricJudge` request shows (what follows its "Work to grade:" line)."""
    return (messages[-1].content or "").split("Work to grade:\n", 1)[-1]


def group_judge(
    score: Callable[[str], float], prompt_tokens: int = 100, completion_tokens: int = 20
) -> Callable[[list[Message], list[dict[str, Any]]], dict]:
    """A fake-server script answering a `GroupJudge` request: `score(view)` for each shown
    attempt, clipped to [0, 1]."""

    def script(messages: list[Message], tools: list[dict[str, Any]]) -> dict:
        scores = [
            {"id": label, "score": min(1.0, max(0.0, score(view))), "rationale": "fake"}
            for label, view in enumerate(shown_attempts(messages), start=1)
        ]
        return judge_body(json.dumps({"scores": scores}), prompt_tokens, completion_tokens)

    return script


def rubric_judge(
    score: Callable[[str], float], prompt_tokens: int = 100, completion_tokens: int = 20
) -> Callable[[list[Message], list[dict[str, Any]]], dict]:
    """A fake-server script answering a `RubricJudge` request: `score(view)` of the work
    it shows, clipped to [0, 1]."""

    def script(messages: list[Message], tools: list[dict[str, Any]]) -> dict:
        value = min(1.0, max(0.0, score(graded_view(messages))))
        content = json.dumps({"score": value, "rationale": "fake"})
        return judge_body(content, prompt_tokens, completion_tokens)

    return script
