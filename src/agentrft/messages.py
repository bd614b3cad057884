"""Chat messages and tool calls, in the OpenAI chat-completions shape.

Every policy client speaks this shape, so a trajectory recorded on one backend replays on
another unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One tool call as the model wrote it.

    `arguments` stays the raw JSON string the model produced: malformed JSON is a model
    fault the loop reports back to the model, so it must survive until then.
    """

    id: str
    name: str
    arguments: str = "{}"
    recovered: bool = Field(
        default=False, description="Parsed from plain text by the environment's recovery hook."
    )

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


class Message(BaseModel):
    """A chat message. `tool_call_id` is set on tool replies."""

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = Field(
        default=None, description="Reasoning text returned separately by some servers."
    )

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> Message:
        """A message in the OpenAI chat shape (`to_openai`'s output, or what a client
        sends): tool calls flattened, content parts joined, `reasoning_content` read as
        `reasoning`, fields agentrft does not keep dropped."""
        out = dict(data)
        calls = out.get("tool_calls")
        if calls:
            out["tool_calls"] = [
                {
                    "id": c.get("id") or "",
                    "name": (c.get("function") or {}).get("name", ""),
                    "arguments": (c.get("function") or {}).get("arguments") or "{}",
                }
                for c in calls
            ]
        if isinstance(out.get("content"), list):  # content parts: keep the text
            parts = out["content"]
            out["content"] = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
        if "reasoning_content" in out and "reasoning" not in out:
            out["reasoning"] = out.pop("reasoning_content")
        return cls.model_validate({k: v for k, v in out.items() if k in cls.model_fields})

    def to_openai(self) -> dict[str, Any]:
        """The dict an OpenAI-compatible server accepts (no agentrft-only fields)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            out["name"] = self.name
        return out


def system(content: str) -> Message:
    return Message(role="system", content=content)


def user(content: str) -> Message:
    return Message(role="user", content=content)


def assistant(content: str | None = None, tool_calls: list[ToolCall] | None = None) -> Message:
    return Message(role="assistant", content=content, tool_calls=tool_calls or None)


def tool_reply(call: ToolCall, content: str) -> Message:
    return Message(role="tool", content=content, tool_call_id=call.id, name=call.name)


def to_openai(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.to_openai() for m in messages]
