"""Loopback ports for tests that start a server process (an MCP server, `agentrft mcp
serve`, `agentrft ui`): a free port to give it, and a wait until it accepts connections that
fails clearly when the process exits first or never listens."""

from __future__ import annotations

import socket
import subprocess
import time

__all__ = ["free_port", "wait_for_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_for_port(
    port: int,
    *,
    host: str = "127.0.0.1",
    timeout_s: float = 30.0,
    process: subprocess.Popen[str] | subprocess.Popen[bytes] | None = None,
) -> None:
    """Return once `host:port` accepts a connection. Raises `RuntimeError` when `process`
    (the server, if given) exits first, quoting the end of its stderr when that was piped,
    and `TimeoutError` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            return
        except OSError:
            pass
        if process is not None and process.poll() is not None:
            err = process.stderr.read() if process.stderr is not None else ""
            tail = err.decode("utf-8", "replace") if isinstance(err, bytes) else err
            raise RuntimeError(
                f"the server exited with {process.returncode} before listening on "
                f"{host}:{port}: {tail[-2000:]}"
            )
        if time.monotonic() >= deadline:
            raise TimeoutError(f"nothing listened on {host}:{port} within {timeout_s:g}s")
        time.sleep(0.05)
