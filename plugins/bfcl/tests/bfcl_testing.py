"""Helpers the bfcl tests share (imported by name: conftest puts this folder on sys.path)."""

from __future__ import annotations

import json
from typing import Any

from agentrft_bfcl import (
    BfclLongContextTask,
    BfclMissFuncTask,
    BfclMissParamTask,
    BfclMultiTurnTask,
)
from agentrft_bfcl.task import TASK_OF_CATEGORY

from agentrft import Message, ScriptedPolicy


def row(entry_id: str) -> str:
    task = TASK_OF_CATEGORY[entry_id.rsplit("_", 1)[0]]
    return json.dumps({"task": task, "id": entry_id})


def task_for(entry_id: str) -> BfclMultiTurnTask:
    """The task that plays `entry_id`'s category."""
    category = entry_id.rsplit("_", 1)[0]
    return next(t() for t in TASKS if t.category == category)


#: Every task the plugin registers.
TASKS = (BfclMultiTurnTask, BfclLongContextTask, BfclMissParamTask, BfclMissFuncTask)


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
