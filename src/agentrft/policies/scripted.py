"""Deterministic policies: a function of the conversation so far, no model involved.

Tasks ship scripted experts this way (`Task.expert()`), tests inject faults with them, and
the local backend uses expert games for its SFT warm-up.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agentrft.messages import Message, ToolCall
from agentrft.policy import Completion, Policy, Sampling

Reply = Completion | Message | str | ToolCall | list[ToolCall] | Exception
ScriptFn = Callable[[list[Message], list[dict[str, Any]]], Reply | Awaitable[Reply]]


def call(
    name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None
) -> ToolCall:
    """A tool call for scripts: `call("guess_word", {"guess": "crane"})`."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ToolCall(id=id or "", name=name, arguments=args)


class ScriptedPolicy(Policy):
    """Wraps `fn(messages, tools) -> reply`.

    A reply may be a `Completion`, a `Message`, plain text, one `ToolCall` or a list of them,
    or an exception instance to raise (fault injection). Tool-call ids are filled in.
    """

    def __init__(self, fn: ScriptFn, name: str = "scripted") -> None:
        self.fn = fn
        self.name = name
        self._counter = 0

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], sampling: Sampling
    ) -> Completion:
        out = self.fn(messages, tools)
        if inspect.isawaitable(out):
            out = await out
        return self._to_completion(out)

    def _to_completion(self, out: Reply) -> Completion:
        if isinstance(out, Exception):
            raise out
        if isinstance(out, Completion):
            return out
        if isinstance(out, Message):
            return Completion(message=out, finish_reason="stop")
        if isinstance(out, str):
            return Completion(message=Message(role="assistant", content=out), finish_reason="stop")
        calls = [out] if isinstance(out, ToolCall) else list(out)
        for c in calls:
            if not c.id:
                self._counter += 1
                c.id = f"call_{self._counter}"
        return Completion(
            message=Message(role="assistant", content=None, tool_calls=calls),
            finish_reason="tool_calls",
        )


def replay_policy(replies: Sequence[Reply], name: str = "replay") -> ScriptedPolicy:
    """Plays `replies` in order, one per turn, then repeats the last one.

    Each episode should get its own `replay_policy`: it counts turns by the number of
    assistant messages already in the conversation.
    """
    replies = list(replies)

    def fn(messages: list[Message], tools: list[dict[str, Any]]) -> Reply:
        turn = sum(1 for m in messages if m.role == "assistant")
        reply = replies[min(turn, len(replies) - 1)]
        if isinstance(reply, ToolCall):
            return reply.model_copy()
        if isinstance(reply, list):
            return [c.model_copy() for c in reply]
        return reply

    return ScriptedPolicy(fn, name=name)
