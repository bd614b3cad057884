"""An MCP `CallToolResult` -> the text reply the model reads, as an `@tool` reply would be."""

from __future__ import annotations

import json
from typing import Any

from agentrft.tools import ToolError, ToolResult

__all__ = ["TRUNCATED", "UNSUPPORTED", "reply_of"]

#: Failure kinds of replies: one cut to `max_reply_chars`; content a text model cannot read.
TRUNCATED = "mcp_reply_truncated"
UNSUPPORTED = "mcp_unsupported_content"


def reply_of(result: Any, *, tool: str, server: str, max_chars: int) -> ToolResult:
    """The reply text: the text blocks joined, else the structured content as JSON. An
    `isError` result is the tool's refusal (`tool_error`, its text shown). An image or
    audio block is refused with a tool error (the policy reads text only); a resource link
    or embedded text resource shows as its URI / text. Longer than `max_chars`: cut, and
    flagged `mcp_reply_truncated`."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            raise ToolError(
                f"Error: {tool} returned {kind} content, which this agent cannot read "
                f"(MCP server {server!r}); only text replies are supported.",
                kind=UNSUPPORTED,
            )
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
        elif kind == "resource":
            res = block.resource
            parts.append(getattr(res, "text", None) or f"[resource {res.uri}]")
        else:
            raise ToolError(
                f"Error: {tool} returned content of type {kind!r} (MCP server {server!r}), "
                "which this agent cannot read.",
                kind=UNSUPPORTED,
            )
    text = "\n".join(parts)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content)
    if result.is_error:
        raise ToolError(text or f"Error: {tool} failed (MCP server {server!r}).")
    if len(text) > max_chars:
        cut = text[:max_chars]
        return ToolResult(
            f"{cut}\n[reply cut at {max_chars:,} of {len(text):,} characters]",
            failure=TRUNCATED,
        )
    return ToolResult(text)
