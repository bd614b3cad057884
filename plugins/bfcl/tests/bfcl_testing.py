"""Helpers the bfcl tests share (imported by name: conftest puts this folder on sys.path)."""

from __future__ import annotations

import json
from typing import Any

from agentrft import Message, ScriptedPolicy


def row(entry_id: str) -> str:
    return json.dumps({"task": "bfcl_multi_turn", "id": entry_id})


class Recorder(ScriptedPolicy):
    """Wraps a scripted policy and records what it saw and sent at every call: the
    messages, the tool schemas, and (per user turn) the tool calls of each step."""

    def __init__(self, inner: ScriptedPolicy) -> None:
        super().__init__(inner.fn, name=inner.name)
        self.seen: list[tuple[list[Message], list[dict[str, Any]]]] = []
        #: Per user turn (as the policy counts them), per step: (name, raw JSON arguments).
        self.steps: dict[int, list[list[tuple[str, str]]]] = {}

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Any
    ) -> Any:
        self.seen.append(
            ([m.model_copy(deep=True) for m in messages], json.loads(json.dumps(tools)))
        )
        completion = await super().complete(messages, tools, sampling)
        calls = completion.message.tool_calls or []
        if calls:
            turn = sum(1 for m in messages if m.role == "user") - 1
            self.steps.setdefault(turn, []).append([(c.name, c.arguments) for c in calls])
        return completion
