"""MCP tools in a task: an episode's tools served by Model Context Protocol servers.

A task's environment names its servers (`StdioServer`: a command the episode starts;
`HTTPServer`: a streamable-HTTP URL with headers) by subclassing `MCPEnvironment`; each
episode connects to them when it starts, offers their tools beside its own `@tool` methods,
and disconnects when it is over. The servers' failures (one that will not start, crashes,
hangs or answers nonsense) end a call or an episode with a failure kind naming the server,
never the run.

Needs the `mcp` extra (`pip install 'agentrft[mcp]'`, the official MCP SDK); importing this
package without it works, connecting says what to install.
"""

from agentrft.mcp.environment import MCPEnvironment
from agentrft.mcp.servers import HTTPServer, MCPServerSpec, StdioServer
from agentrft.mcp.tool import MCPTool

__all__ = ["HTTPServer", "MCPEnvironment", "MCPServerSpec", "MCPTool", "StdioServer"]
