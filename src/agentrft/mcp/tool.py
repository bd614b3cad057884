"""`MCPTool`: one tool of an MCP server, offered to the policy like an `@tool`."""

from __future__ import annotations

from typing import Any

from agentrft.mcp.connection import MCPConnection
from agentrft.mcp.replies import reply_of
from agentrft.tool_threads import ToolThreads
from agentrft.tools import SchemaTool, ToolError, ToolResult

__all__ = ["MCPTool"]


class MCPTool(SchemaTool):
    """A server's tool: its name (after the server's `prefix`), description and input JSON
    schema as the server lists them; arguments are checked against the schema's top level
    (as a `SchemaTool`'s), then sent through the episode's connection; the result becomes
    the reply (`replies.reply_of`). Its MCP annotations (read-only, destructive, ...) are
    kept on `annotations` for the task's code."""

    def __init__(self, connection: MCPConnection, listed: Any) -> None:
        spec = connection.spec
        self.connection = connection
        self.server_name: str = listed.name
        self.annotations: Any = listed.annotations
        schema = dict(listed.input_schema or {})
        schema.setdefault("type", "object")
        schema.pop("title", None)
        for prop in (schema.get("properties") or {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)

        async def call(**arguments: Any) -> Any:  # SchemaTool's `fn`; invoke() is overridden
            return await connection.call(listed.name, arguments)

        super().__init__(
            call,
            name=f"{spec.prefix}{listed.name}",
            parameters=schema,
            description=(listed.description or listed.name).strip(),
        )

    async def invoke(
        self, arguments: str | dict[str, Any], *, threads: ToolThreads | None = None
    ) -> ToolResult:
        """Validate, call the server, turn its result into the reply. Never raises (a
        cancellation propagates)."""
        spec = self.connection.spec
        try:
            kwargs = self._keyword_arguments(arguments)
            result = await self.connection.call(self.server_name, kwargs)
            return reply_of(
                result, tool=self.name, server=spec.name, max_chars=spec.max_reply_chars
            )
        except ToolError as exc:
            return ToolResult(exc.message, failure=exc.kind)
        except Exception as exc:  # a malformed result: the call fails, the episode goes on
            return ToolResult(
                f"Error: {self.name} failed on MCP server {spec.name!r}: "
                f"{type(exc).__name__}: {exc}",
                failure="mcp_server_failed",
            )
