"""Replies a fake OpenAI-compatible server sends: faults, scripted orders, and the
chat.completion JSON a script's reply becomes (`ChatRenderer`).

A reply is what a `ScriptedPolicy` script returns (a str, a `ToolCall` or a list of them, a
`Message`, a `Completion`, a raw dict) or a fault: `http_error(500)`,
`rate_limited(retry_after=0.01)`, `slow(2.0, reply)`, `malformed_body()`, `disconnect()`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentrft.messages import Message, ToolCall
from agentrft.policy import Completion

ServerReply = Any  # Completion | Message | str | ToolCall | list[ToolCall] | dict | a fault
ServerScript = Callable[[list[Message], list[dict[str, Any]]], Any]


# --- faults ------------------------------------------------------------------------------


@dataclass
class HTTPFault:
    """Answer with an HTTP error status (and optional headers and body)."""

    status: int = 500
    message: str = "injected server error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Slow:
    """Wait `seconds` before sending `reply` (a slow model; a client timeout when long)."""

    seconds: float
    reply: ServerReply = "ok"


@dataclass
class RawBody:
    """Send `body` verbatim with `status` (e.g. a 200 whose body is not JSON)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass
class Disconnect:
    """Close the connection without answering (a dropped connection)."""


def http_error(status: int = 500, message: str = "injected server error") -> HTTPFault:
    """An HTTP error reply: `http_error(500)`, `http_error(503)`, `http_error(400, "bad")`."""
    return HTTPFault(status=status, message=message)


def rate_limited(retry_after: float | None = None) -> HTTPFault:
    """A 429, with a `Retry-After` header (seconds, may be fractional) when given."""
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return HTTPFault(status=429, message="rate limited (injected)", headers=headers)


def slow(seconds: float, reply: ServerReply = "ok") -> Slow:
    return Slow(seconds=seconds, reply=reply)


def malformed_body(text: bytes = b'{"choices": [') -> RawBody:
    """A 200 whose body is not valid JSON."""
    return RawBody(body=text)


def disconnect() -> Disconnect:
    return Disconnect()


class ReplySequence:
    """The script `sequence()` returns; `count` is the number of requests answered."""

    def __init__(self, *replies: ServerReply, then: ServerScript | None = None) -> None:
        if not replies and then is None:
            raise ValueError("sequence() needs at least one reply or a `then` script")
        self.replies = list(replies)
        self.then = then
        self.count = 0

    def __call__(self, messages: Any, tools: list[dict[str, Any]]) -> ServerReply:
        i = self.count
        self.count += 1
        if i < len(self.replies):
            return self.replies[i]
        if self.then is not None:
            return self.then(messages, tools)
        return self.replies[-1]


def sequence(*replies: ServerReply, then: ServerScript | None = None) -> ReplySequence:
    """A script that answers request i with `replies[i]`; after the last one it delegates
    to `then` (a script) or repeats the last reply. It counts requests, not conversations,
    so a client's retries consume replies: `sequence(http_error(500), then=expert)` fails
    once, then plays `expert`. Picklable when `then` is.
    """
    return ReplySequence(*replies, then=then)


# --- rendering ---------------------------------------------------------------------------


def _approx_tokens(text: str | None) -> int:
    return max(1, len(text) // 4) if text else 0


class ChatRenderer:
    """Turns a script reply into an OpenAI chat.completion JSON object (ids count up)."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self.counter = 0

    def render(self, reply: ServerReply, body: dict[str, Any]) -> dict[str, Any]:
        if isinstance(reply, dict):
            return reply  # a raw response body, sent as is
        self.counter += 1
        completion = self._completion(reply)
        msg = completion.message
        message: dict[str, Any] = {"role": "assistant", "content": msg.content}
        if msg.tool_calls:
            calls = []
            for i, c in enumerate(msg.tool_calls):
                call_id = c.id or f"call_{self.counter}_{i}"
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                )
            message["tool_calls"] = calls
        if msg.reasoning is not None:
            message["reasoning_content"] = msg.reasoning
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": completion.finish_reason
            or ("tool_calls" if msg.tool_calls else "stop"),
        }
        prompt_tokens = completion.prompt_tokens or sum(
            _approx_tokens(m.get("content") if isinstance(m, dict) else None)
            for m in body.get("messages", [])
        )
        completion_tokens = completion.completion_tokens or _approx_tokens(
            (msg.content or "") + "".join(c.arguments for c in msg.tool_calls or [])
        )
        out: dict[str, Any] = {
            "id": f"chatcmpl-fake-{self.counter}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model_name),
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        # vLLM's shapes: `return_token_ids` puts ids at the top level and on the choice;
        # `logprobs` gives one entry per sampled token.
        if completion.prompt_token_ids is not None:
            out["prompt_token_ids"] = completion.prompt_token_ids
        if completion.completion_token_ids is not None:
            choice["token_ids"] = completion.completion_token_ids
        if completion.logprobs is not None:
            ids = completion.completion_token_ids or [0] * len(completion.logprobs)
            choice["logprobs"] = {
                "content": [
                    {"token": f"token_id:{t}", "logprob": lp, "bytes": None, "top_logprobs": []}
                    for t, lp in zip(ids, completion.logprobs, strict=False)
                ]
            }
        return out

    @staticmethod
    def _completion(reply: ServerReply) -> Completion:
        if isinstance(reply, Completion):
            return reply
        if isinstance(reply, Message):
            return Completion(message=reply)
        if reply is None:
            return Completion(message=Message(role="assistant", content=None))
        if isinstance(reply, str):
            return Completion(message=Message(role="assistant", content=reply))
        if isinstance(reply, ToolCall):
            reply = [reply]
        if isinstance(reply, list | tuple) and all(isinstance(c, ToolCall) for c in reply):
            return Completion(message=Message(role="assistant", tool_calls=list(reply) or None))
        raise TypeError(
            f"the fake server's script returned {type(reply).__name__}; expected a str, "
            "ToolCall, list of ToolCall, Message, Completion, dict, or a fault"
        )
