"""`HTTP11Pool`: a minimal HTTP/1.1 keep-alive client on asyncio streams, the "raw"
transport of bench/transports.py (http and https, no proxies, no redirects, no
compression): how fast a rollout can go when the client does almost nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from agentrft.policies.urls import safe_url
from agentrft.testing.fake_server import read_chunked


class HTTP11Pool:
    """Keep-alive HTTP/1.1 connections to one origin, for JSON POSTs (the "raw" transport).

    Deliberately small: Content-Length or chunked responses, TLS for https, no proxies, no
    redirects, no compression (it never asks for any). A connection goes back to the pool
    only after a complete response; a timeout or cancellation mid-exchange closes it.
    """

    def __init__(
        self, base_url: str, max_connections: int = 512, headers: Mapping[str, str] | None = None
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the raw transport needs an http(s) URL, got {safe_url(base_url)}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base_path = parts.path.rstrip("/")
        self._ssl: Any = None
        if parts.scheme == "https":
            import ssl

            self._ssl = ssl.create_default_context()
        host = self.host if self.port in (80, 443) else f"{self.host}:{self.port}"
        fixed = {
            "Host": host,
            "User-Agent": "agentrft",
            "Accept": "application/json",
            "Content-Type": "application/json",
            **dict(headers or {}),
        }
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._slots = asyncio.Semaphore(max(1, max_connections))
        self._closed = False

    async def post(
        self, path: str, body: bytes, extra_headers: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        """POST `body` to base path + `path`; returns (status, lower-case headers, body)."""
        request = b"".join(
            (
                f"POST {self.base_path}{path} HTTP/1.1\r\n".encode("latin-1"),
                self._fixed,
                extra_headers,
                f"Content-Length: {len(body)}\r\n\r\n".encode("latin-1"),
                body,
            )
        )
        async with self._slots:
            conn = await self._checkout()
            try:
                status, headers, data, keep = await self._exchange(conn, request)
            except BaseException:  # cancelled, timed out or broken: the state is unknown
                conn[1].close()
                raise
            if keep and not self._closed:
                self._idle.append(conn)
            else:
                conn[1].close()
            return status, headers, data

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()

    async def _checkout(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while self._idle:
            reader, writer = self._idle.pop()
            if not (reader.at_eof() or writer.is_closing()):  # the server may have hung up
                return reader, writer
            writer.close()
        return await asyncio.open_connection(
            self.host,
            self.port,
            ssl=self._ssl,
            server_hostname=self.host if self._ssl else None,
            limit=1 << 20,
        )

    @staticmethod
    async def _exchange(
        conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], request: bytes
    ) -> tuple[int, dict[str, str], bytes, bool]:
        reader, writer = conn
        writer.write(request)
        if writer.transport.get_write_buffer_size() > 1 << 16:
            await writer.drain()
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head[:-4].decode("latin-1").split("\r\n")
            version, status_text = lines[0].split(" ", 2)[:2]
            status = int(status_text)
            if status >= 200 or status == 101:
                break  # 1xx interim responses (100 Continue) precede the real one
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        if "chunked" in headers.get("transfer-encoding", "").lower():
            data = await read_chunked(reader)
        elif "content-length" in headers:
            data = await reader.readexactly(int(headers["content-length"]))
        elif status in (204, 304):
            data = b""
        else:  # no framing: the body runs to the end of the connection
            data = await reader.read()
            keep = False
        return status, headers, data, keep
