"""`MCPEnvironment`: an environment whose tools come (also) from MCP servers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from agentrft.environment import Environment
from agentrft.mcp import pool
from agentrft.mcp.connection import MCPConnection
from agentrft.mcp.replies import reply_of
from agentrft.mcp.servers import MCPServerSpec, StdioServer
from agentrft.mcp.tool import MCPTool
from agentrft.messages import ToolCall
from agentrft.tool_threads import ToolThreads
from agentrft.tools import ToolError, ToolResult

__all__ = ["MCPEnvironment"]


class MCPEnvironment(Environment):
    """Subclass it, list the servers in `servers` (or pass `servers=` per instance), and
    add `@tool` methods as usual: each episode connects to the servers when it starts
    (fresh state per `isolation`), offers their tools (less each server's `hidden_tools`)
    after the class's own, runs `setup` (seed the row's state through `call_server`), and
    disconnects when it is over, after the reward (which may `call_server` to audit the
    outcome).

    A server that will not start ends the episode with `mcp_server_failed` and the lowest
    reward; one that crashes or hangs mid-episode fails the calls it cannot answer
    (`mcp_server_failed`, `mcp_timeout`); the run goes on.
    """

    servers: ClassVar[Sequence[MCPServerSpec]] = ()

    def __init__(self, servers: Sequence[MCPServerSpec] | None = None) -> None:
        super().__init__()
        self.mcp_servers: list[MCPServerSpec] = list(
            type(self).servers if servers is None else servers
        )
        names = [s.name for s in self.mcp_servers]
        if len(set(names)) != len(names):
            raise ValueError(f"{type(self).__name__}: two MCP servers share a name in {names}")
        self.connections: dict[str, MCPConnection] = {}

    async def start(self) -> None:
        for spec in self.mcp_servers:
            conn = await _connect(spec)
            self.connections[spec.name] = conn
            hidden = set(spec.hidden_tools) | ({spec.reset_tool} if spec.reset_tool else set())
            self.add_tools(MCPTool(conn, t) for t in conn.tools if t.name not in hidden)
        await self.setup()

    async def setup(self) -> None:
        """Seed the servers' state for this episode's row (`call_server` a hidden tool);
        runs after the connections open, before the first policy call. Default: nothing."""

    async def call_server(
        self, server: str, tool: str, arguments: dict[str, Any] | None = None
    ) -> Any:
        """Call `tool` on `server` from the task's own code (setup, reward), hidden tools
        included: the structured content when the server sends one (a non-object value
        unwrapped from the SDK's {"result": value}), else the reply text.
        Raises `ToolError` when the tool fails or the server is gone."""
        conn = self.connections.get(server)
        if conn is None:
            raise ToolError(
                f"no MCP server {server!r} in this episode ({', '.join(self.connections) or 'none'})"
            )
        result = await conn.call(tool, dict(arguments or {}))
        structured = result.structured_content
        if structured is not None and not result.is_error:
            # The SDK sends a tool's non-object return value as {"result": value}.
            if isinstance(structured, dict) and list(structured) == ["result"]:
                return structured["result"]
            return structured
        return reply_of(result, tool=tool, server=server, max_chars=10**9).content

    async def call_tool(self, call: ToolCall, *, threads: ToolThreads | None = None) -> ToolResult:
        result = await super().call_tool(call, threads=threads)
        if isinstance(self._added().get(call.name), MCPTool):  # binds no class tool
            self.on_tool_result(call, result)
        return result

    def on_tool_result(self, call: ToolCall, result: ToolResult) -> None:
        """Called after each call of a server's tool with its reply: set `done` when the
        call ended the workflow (an order placed), `note` a task-level failure. Default:
        nothing."""

    async def close(self) -> None:
        for conn in list(self.connections.values()):
            if isinstance(conn.spec, StdioServer) and conn.spec.isolation == "pool":
                await pool.give_back(conn, healthy=not conn.faulted)
            else:
                await conn.close()
        self.connections.clear()


async def _connect(spec: MCPServerSpec) -> MCPConnection:
    if isinstance(spec, StdioServer) and spec.isolation == "pool":
        return await pool.checkout(spec)
    conn = await MCPConnection.open(spec)
    if spec.reset_tool:
        try:
            await pool.reset(conn)
        except BaseException:
            await conn.close()
            raise
    return conn
