"""`HTTP11Pool` (bench/http11.py), the benchmarks' "raw" HTTP/1.1 client: response
framings, keep-alive reuse, a server that hangs up, interim responses. (Faults through whole
episodes, for every benchmark transport: test_transports.py.)"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from http11 import HTTP11Pool
from transports import RawPolicy

from agentrft import Message, PolicyError, Sampling
from agentrft.policies.openai_client import OpenAIPolicy

OK_BODY = json.dumps(
    {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
).encode()

Responder = Callable[[int], bytes]  # request number -> raw response bytes ("" = hang up)


class CannedServer:
    """Answers each request with `respond(n)`; counts connections and requests."""

    def __init__(self, respond: Responder, close_after_each: bool = False) -> None:
        self.respond = respond
        self.close_after_each = close_after_each
        self.requests: list[bytes] = []
        self.connections = 0
        self.server: asyncio.base_events.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode("latin-1").split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                self.requests.append(head + await reader.readexactly(length))
                out = self.respond(len(self.requests) - 1)
                if not out:
                    break
                writer.write(out)
                await writer.drain()
                lower = out.lower()
                framed = b"content-length" in lower or b"chunked" in lower
                if self.close_after_each or b"connection: close" in lower or not framed:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"


Canned = Callable[..., Awaitable[CannedServer]]


@pytest.fixture
async def canned() -> AsyncIterator[Canned]:
    servers: list[CannedServer] = []

    async def start(respond: Responder, close_after_each: bool = False) -> CannedServer:
        srv = CannedServer(respond, close_after_each)
        srv.server = await asyncio.start_server(srv.handle, "127.0.0.1", 0)
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        assert srv.server is not None
        srv.server.close()


def response(body: bytes = OK_BODY, status: str = "200 OK", extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


def chunked(body: bytes = OK_BODY) -> bytes:
    pieces = [body[i : i + 10] for i in range(0, len(body), 10)]
    chunks = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces)
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"


async def test_keep_alive_reuses_one_connection(canned: Canned) -> None:
    srv = await canned(lambda n: response())
    pool = HTTP11Pool(srv.url, headers={"X-Custom": "1"})
    for _ in range(3):
        status, headers, body = await pool.post("/chat/completions", b'{"a": 1}', b"X-Extra: 2\r\n")
        assert status == 200 and json.loads(body) == json.loads(OK_BODY)
        assert headers["content-type"] == "application/json"
    await pool.close()
    assert srv.connections == 1 and len(srv.requests) == 3
    first = srv.requests[0].decode()
    assert first.startswith("POST /v1/chat/completions HTTP/1.1\r\n")
    assert "X-Custom: 1\r\n" in first and "X-Extra: 2\r\n" in first
    assert first.endswith('Content-Length: 8\r\n\r\n{"a": 1}')


async def test_chunked_response(canned: Canned) -> None:
    srv = await canned(lambda n: chunked())
    pool = HTTP11Pool(srv.url)
    assert (await pool.post("/chat/completions", b"{}"))[2] == OK_BODY
    assert (await pool.post("/chat/completions", b"{}"))[2] == OK_BODY
    await pool.close()
    assert srv.connections == 1


async def test_connection_close_and_unframed_bodies_open_new_connections(canned: Canned) -> None:
    unframed = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + OK_BODY
    replies = [response(extra="Connection: close\r\n"), unframed, response()]
    srv = await canned(lambda n: replies[n])
    pool = HTTP11Pool(srv.url)
    for _ in range(3):
        assert (await pool.post("/chat/completions", b"{}"))[2] == OK_BODY
    await pool.close()
    assert srv.connections == 3


async def test_interim_100_continue_is_skipped(canned: Canned) -> None:
    srv = await canned(lambda n: b"HTTP/1.1 100 Continue\r\n\r\n" + response())
    pool = HTTP11Pool(srv.url)
    assert (await pool.post("/chat/completions", b"{}"))[0] == 200
    await pool.close()


async def test_idle_connection_closed_by_the_server_is_not_reused(canned: Canned) -> None:
    # The server closes after each reply (like an idle keep-alive timeout), without saying so.
    srv = await canned(lambda n: response(), close_after_each=True)
    pool = HTTP11Pool(srv.url)
    for _ in range(3):
        assert (await pool.post("/chat/completions", b"{}"))[0] == 200
        await asyncio.sleep(0.02)  # let the FIN arrive, as it would during idle time
    await pool.close()
    assert srv.connections == 3


async def test_error_status_and_retry_after_through_the_policy(canned: Canned) -> None:
    busy = response(
        b'{"error": {"message": "busy"}}', "429 Too Many Requests", "Retry-After: 0\r\n"
    )
    srv = await canned(lambda n: busy if n == 0 else response())
    policy = RawPolicy("m", srv.url, backoff_base_s=5.0)
    completion = await policy.complete([Message(role="user", content="x")], [], Sampling())
    await policy.aclose()
    assert completion.message.content == "hi"
    assert len(srv.requests) == 2  # Retry-After: 0 replaced the 5 s backoff


async def test_server_hangs_up_mid_request(canned: Canned) -> None:
    srv = await canned(lambda n: b"")
    policy = RawPolicy("m", srv.url, max_retries=1, backoff_base_s=0.001)
    with pytest.raises(PolicyError) as info:
        await policy.complete([Message(role="user", content="x")], [], Sampling())
    await policy.aclose()
    assert info.value.kind == "policy_error" and "IncompleteReadError" in str(info.value)
    assert len(srv.requests) == 2


def test_bad_urls_and_headers_are_refused() -> None:
    with pytest.raises(ValueError, match="http"):
        HTTP11Pool("ftp://example.com/v1")
    with pytest.raises(ValueError, match="CR, LF"):
        OpenAIPolicy("m", "http://127.0.0.1:1/v1", headers={"X-A": "1\r\nX-Injected: 2"})
