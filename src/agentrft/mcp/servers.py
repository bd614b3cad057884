"""What a task declares about an MCP server: how to reach it and how episodes share it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["HTTPServer", "Isolation", "MCPServerSpec", "StdioServer"]

#: How episodes get a fresh tool state:
#: - "process": a server process per episode (stdio; the default: nothing can carry over);
#: - "pool": server processes kept between episodes, each used by one episode at a time and
#:   reset with the server's `reset_tool` before it is handed out (stdio; saves the start-up);
#: - "session": an MCP session per episode on a server that runs anyway (HTTP; the server
#:   must keep its state per session, or the task names a `reset_tool`).
Isolation = Literal["process", "pool", "session"]


class _Server(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Names the server in failure kinds' details, reports and errors (not a secret).
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    #: Put before each tool's name the policy sees (`inventory_` + `check_stock`): two servers
    #: with a tool of the same name can then serve one episode.
    prefix: str = ""
    #: Tools the policy is never offered: the task's own code calls them (`setup` seeds the
    #: row's state, the reward audits it) through `MCPEnvironment.call_server`.
    hidden_tools: tuple[str, ...] = ()
    #: Called (no arguments) before an episode uses a pooled server or a session.
    reset_tool: str | None = None
    #: Seconds to start and list the tools, and per tool call, before the server is
    #: taken for hung (the call gets an `mcp_timeout` error; the episode goes on).
    start_timeout_s: float = Field(default=30.0, gt=0)
    call_timeout_s: float = Field(default=30.0, gt=0)
    #: A reply longer than this is cut (the model sees where), with `mcp_reply_truncated`.
    max_reply_chars: int = Field(default=20_000, ge=100)


class StdioServer(_Server):
    """A server the episode starts as a subprocess and talks to over its stdin/stdout."""

    transport: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    #: The server's environment (the SDK's safe default set when None). Values are never
    #: printed: treat them as secrets.
    env: dict[str, str] | None = None
    cwd: str | None = None
    isolation: Literal["process", "pool"] = "process"

    @model_validator(mode="after")
    def _pool_needs_reset(self) -> StdioServer:
        if self.isolation == "pool" and not self.reset_tool:
            raise ValueError(
                f"MCP server {self.name!r}: isolation='pool' reuses server processes between "
                "episodes, so it needs reset_tool (the tool that clears the server's state); "
                "name one, or use isolation='process'"
            )
        return self


class HTTPServer(_Server):
    """A server that runs already, reached over streamable HTTP at `url`."""

    transport: Literal["http"] = "http"
    url: str = Field(pattern=r"^https?://")
    #: Sent with every request (an Authorization header, say). Values are never printed.
    headers: dict[str, str] = Field(default_factory=dict)
    isolation: Literal["session"] = "session"


MCPServerSpec = StdioServer | HTTPServer
