"""One live connection to an MCP server, owned by a task of its own.

The SDK's client is a stack of anyio context managers that must be entered and left by the
same task; an episode's calls come from other tasks (the loop's per-call timeouts). So a
connection's owner task enters the client, lists the tools, reports ready, and waits to be
told to close; calls go through the client from any task. The owner task leaving the client
is what stops a stdio server's process (the SDK closes its stdin, then kills its tree).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from typing import IO, Any

from agentrft.mcp.servers import HTTPServer, MCPServerSpec, StdioServer
from agentrft.redact import register_secret, scrub_text
from agentrft.tools import ToolError

if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup
else:  # anyio's dependency on 3.10
    from exceptiongroup import BaseExceptionGroup

__all__ = ["MCPConnection", "MCPServerFailed", "require_mcp"]

#: Failure kinds a server's own faults are recorded under (the detail names the server).
SERVER_FAILED = "mcp_server_failed"
TIMEOUT = "mcp_timeout"


class MCPServerFailed(ToolError):
    """The server would not start, or is gone: the episode cannot use it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind=SERVER_FAILED)


def require_mcp() -> Any:
    """The `mcp` package, or an error that says what to install."""
    try:
        import mcp
    except ImportError:
        raise ImportError(
            "MCP tools need the official MCP SDK: pip install 'agentrft[mcp]'"
        ) from None
    return mcp


class MCPConnection:
    """A connected server: its tool listing, `call` and `close`. Make one with `open`."""

    def __init__(self, spec: MCPServerSpec) -> None:
        self.spec = spec
        self.tools: list[Any] = []  # the SDK's `Tool` models, as the server listed them
        self._client: Any = None
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None
        self._stderr: IO[str] | None = None
        self.lost: str | None = None  # why the server is gone, once it is
        #: A call timed out or failed oddly: a pool does not hand this server out again.
        self.faulted = False
        for secret in _secrets(spec):
            register_secret(secret)  # never printed, whatever a server echoes back

    @classmethod
    async def open(cls, spec: MCPServerSpec) -> MCPConnection:
        """Connect (starting a stdio server), initialize and list the tools, within the
        server's `start_timeout_s`; raises `MCPServerFailed` naming the server and why."""
        require_mcp()
        conn = cls(spec)
        conn._owner = asyncio.create_task(conn._own(), name=f"mcp server {spec.name}")
        try:
            await asyncio.wait_for(asyncio.shield(conn._ready), spec.start_timeout_s)
        except asyncio.TimeoutError:
            tail = conn._stderr_tail()  # before close() drops the server's stderr
            await conn.close()
            raise MCPServerFailed(
                f"MCP server {spec.name!r} did not start and list its tools within "
                f"{spec.start_timeout_s:g}s{tail}"
            ) from None
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _own(self) -> None:
        mcp = require_mcp()
        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = await self._transport(mcp, stack)
                client = await stack.enter_async_context(mcp.Client(transport, mode="legacy"))
                self.tools = await _list_tools(client)
                self._client = client
                self._ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:
            why = _describe(exc)
            if not self._ready.done():
                self._ready.set_exception(
                    MCPServerFailed(
                        f"MCP server {self.spec.name!r} failed to start: {why}{self._stderr_tail()}"
                    )
                )
            elif not self._closing.is_set():
                self.lost = why
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._client = None

    async def _transport(self, mcp: Any, stack: contextlib.AsyncExitStack) -> Any:
        """The SDK transport for the spec; what it needs closed is pushed on `stack`."""
        spec = self.spec
        if isinstance(spec, StdioServer):
            from mcp.client.stdio import stdio_client

            # Closed in `close` (it outlives this call: the server writes to it all along).
            self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
                "w+", encoding="utf-8", errors="replace"
            )
            params = mcp.StdioServerParameters(
                command=spec.command, args=list(spec.args), env=_server_env(spec), cwd=spec.cwd
            )
            return stdio_client(params, errlog=self._stderr)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert isinstance(spec, HTTPServer)
        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=spec.headers, timeout=spec.call_timeout_s)
        )
        return streamable_http_client(spec.url, http_client=http)

    @property
    def alive(self) -> bool:
        return self._client is not None and self.lost is None

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The server's `CallToolResult` for one call; `ToolError` (`mcp_timeout`,
        `mcp_server_failed`) when it hangs or is gone. A call that timed out leaves the
        server in use (its next call may well answer)."""
        if not self.alive:
            raise MCPServerFailed(
                f"MCP server {self.spec.name!r} is gone ({self.lost or 'closed'}); "
                f"{tool} cannot run"
            )
        try:
            return await asyncio.wait_for(
                self._client.call_tool(tool, arguments), self.spec.call_timeout_s
            )
        except asyncio.TimeoutError:
            self.faulted = True
            raise ToolError(
                f"Error: {tool} did not answer within {self.spec.call_timeout_s:g}s "
                f"(MCP server {self.spec.name!r}).",
                kind=TIMEOUT,
            ) from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.faulted = True
            why = _describe(exc)
            if self._owner is not None and self._owner.done():
                self.lost = self.lost or why
            if self.lost or _is_connection_loss(exc):
                self.lost = self.lost or why
                raise MCPServerFailed(
                    f"MCP server {self.spec.name!r} is gone ({why}){self._stderr_tail()}"
                ) from None
            raise ToolError(
                f"Error: {tool} failed on MCP server {self.spec.name!r}: {why}",
                kind=SERVER_FAILED,
            ) from None

    async def close(self, timeout_s: float = 8.0) -> None:
        """Leave the client (a stdio server's process ends with it); cancel the owner task
        if it will not leave within `timeout_s`. Safe to call twice."""
        self._closing.set()
        owner = self._owner
        if owner is not None and not owner.done():
            try:
                await asyncio.wait_for(asyncio.shield(owner), timeout_s)
            except (asyncio.TimeoutError, Exception):
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await owner
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _stderr_tail(self, lines: int = 3) -> str:
        """The last lines the server wrote to stderr, as a clause (a failure's likely why)."""
        if self._stderr is None or self._stderr.closed:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read()[-4000:]
        except (OSError, ValueError):
            return ""
        tail = [ln for ln in text.strip().splitlines() if ln.strip()][-lines:]
        if not tail:
            return ""
        return scrub_text("; its stderr ended: " + " | ".join(ln.strip() for ln in tail))


async def _list_tools(client: Any) -> list[Any]:
    """Every page of the server's tool listing."""
    tools: list[Any] = []
    cursor = None
    for _ in range(100):  # a server whose cursor never ends cannot hang the start
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _server_env(spec: StdioServer) -> dict[str, str] | None:
    """The server's environment: `spec.env`, else the SDK's safe default set; a server run
    by this interpreter also gets this process's import path, so a server module that ships
    with a plugin imports where the plugin does (a runtime bundle's folders, a venv)."""
    if spec.env is not None or spec.command != sys.executable:
        return spec.env
    from mcp.client.stdio import get_default_environment

    path = os.pathsep.join(p for p in sys.path if p)
    return {**get_default_environment(), "PYTHONPATH": path}


def _secrets(spec: MCPServerSpec) -> list[str]:
    if isinstance(spec, StdioServer):
        return [v for v in (spec.env or {}).values() if len(v) >= 6]
    return [v for v in spec.headers.values() if len(v) >= 6]


def _describe(exc: BaseException) -> str:
    """One line for an exception (an ExceptionGroup shows its first leaf), scrubbed."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return scrub_text(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def _is_connection_loss(exc: BaseException) -> bool:
    names = {type(e).__name__ for e in _leaves(exc)}
    return (
        bool(
            names
            & {
                "ClosedResourceError",
                "BrokenResourceError",
                "EndOfStream",
                "BrokenPipeError",
                "ConnectionError",
                "ConnectError",
                "RemoteProtocolError",
            }
        )
        or "connection closed" in str(exc).lower()
    )


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for e in exc.exceptions:
            out.extend(_leaves(e))
        return out
    return [exc, *([exc.__cause__] if exc.__cause__ else [])]
