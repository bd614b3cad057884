"""Server processes kept between episodes (`isolation="pool"`): each serves one episode at a
time and is reset (the server's `reset_tool`) before it is handed out again.

One pool per server spec and event loop (a run's episodes share one loop). A server that
failed or timed out is not handed out again. `close_pools()` stops the idle servers; the
loop's shutdown (asyncio.run cancels what is left) stops them too.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from agentrft.mcp.connection import MCPConnection, MCPServerFailed
from agentrft.mcp.servers import StdioServer

__all__ = ["checkout", "close_pools", "give_back"]

#: loop -> the spec as JSON (a spec with `env` is no dict key) -> its idle servers.
_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, list[Any]]] = (
    weakref.WeakKeyDictionary()
)


def _idle(spec: StdioServer) -> list[MCPConnection]:
    loop = asyncio.get_running_loop()
    return _POOLS.setdefault(loop, {}).setdefault(spec.model_dump_json(), [])


async def checkout(spec: StdioServer) -> MCPConnection:
    """An idle live server of `spec`, reset; else a new one."""
    idle = _idle(spec)
    while idle:
        conn = idle.pop()
        if not conn.alive:
            await conn.close()
            continue
        try:
            await reset(conn)
        except Exception:  # a server that cannot reset is not reused
            await conn.close()
            continue
        return conn
    conn = await MCPConnection.open(spec)
    try:
        await reset(conn)
    except BaseException:
        await conn.close()
        raise
    return conn


async def reset(conn: MCPConnection) -> None:
    """Call the server's `reset_tool`; `MCPServerFailed` when it fails."""
    name = conn.spec.reset_tool
    if not name:
        return
    result = await conn.call(name, {})
    if getattr(result, "is_error", False):
        raise MCPServerFailed(f"MCP server {conn.spec.name!r}: its reset tool {name!r} failed")


async def give_back(conn: MCPConnection, *, healthy: bool) -> None:
    """Return a server after its episode: idle again when it is alive and `healthy`."""
    if healthy and conn.alive and isinstance(conn.spec, StdioServer):
        _idle(conn.spec).append(conn)
    else:
        await conn.close()


async def close_pools() -> None:
    """Stop every idle pooled server of the running loop (end of a run)."""
    pools = _POOLS.pop(asyncio.get_running_loop(), {})
    for idle in pools.values():
        for conn in idle:
            await conn.close()
