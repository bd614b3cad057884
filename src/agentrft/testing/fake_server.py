"""`FakeOpenAIServer`: a loopback OpenAI-compatible chat-completions server for tests.

A script `fn(messages, tools) -> reply` decides each reply, exactly like `ScriptedPolicy`
(the same function can drive both), and faults are replies too: `http_error(500)`,
`rate_limited(retry_after=0.01)`, `slow(2.0, reply)`, `malformed_body()`, `disconnect()`.
Tool-call faults need no helper: `call("guess", "{not json")` is a malformed-arguments call,
`call("no_such_tool")` an unknown tool, a plain string a text reply (or a plain-text call),
`""` an empty reply. `sequence(r1, r2, then=script)` answers requests in order (a
client's retries included), e.g. `sequence(rate_limited(0.01), then=expert)`.

The server is a small asyncio HTTP/1.1 server (keep-alive, Content-Length and chunked
request bodies) in a background thread, so it costs the client under test little CPU. Every
request is recorded (method, path, headers, JSON body) for assertions: `server.requests`;
`server.stats()` counts the connections used; `latencies()` keeps each chat request's
delivered latency (`latency_s` is measured from the moment a request has been read to the
moment its reply is handed to the kernel). It listens on 127.0.0.1 only.

`ServerCore` is the server proper; bench/precise_server.py extends it for the benchmarks
(replies on time to the microsecond, the server in a child process).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from agentrft.messages import Message
from agentrft.testing.replies import (
    ChatRenderer,
    Disconnect,
    HTTPFault,
    RawBody,
    ServerScript,
    Slow,
)

# --- recording ---------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """One request as the server saw it. Header names are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "body": self.body,
        }


@dataclass
class DeliveredLatency:
    """One chat-completions request's timing on the server's monotonic clock (seconds).

    `conversation` is a short digest of the first user message's content, so requests of one
    episode (same prompt) can be grouped when prompts differ between episodes.
    """

    conversation: str
    arrived: float
    sent: float

    @property
    def latency_s(self) -> float:
        """From the request fully read to the reply's write (microseconds before the kernel
        has it)."""
        return self.sent - self.arrived


def _conversation_key(messages: Any) -> str:
    for m in messages if isinstance(messages, list) else []:
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
    return ""


# --- the asyncio HTTP server -------------------------------------------------------------

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


@dataclass
class ServerConfig:
    """What a `ServerCore` serves (shared with the handle, so a script can be swapped)."""

    script: ServerScript
    latency_s: float = 0.0
    model_name: str = "fake-model"
    record: bool = True
    parse_messages: bool = True


#: `_deliver`'s "the reply has been written already" (compared by identity).
SENT = b""


class ServerCore:
    """The server proper; lives on one event loop.

    Subclasses change when replies leave (`_deliver`) and may act between one request's
    work and the next (`_between_work`); bench/precise_server.py does both.
    """

    def __init__(self, cfg: ServerConfig) -> None:
        self.cfg = cfg
        self.renderer = ChatRenderer(cfg.model_name)
        self.requests: list[RecordedRequest] = []
        self.latencies: list[DeliveredLatency] = []
        self.server: asyncio.base_events.Server | None = None
        self.port = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        # Connections that carried requests: shows whether a client pools them.
        self.connections = 0

    async def start(self, port: int = 0) -> int:
        self.server = await asyncio.start_server(
            self._connection, "127.0.0.1", port, limit=1 << 20, backlog=1024
        )
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            # Closing idle keep-alive connections lets their handlers end on EOF; any still
            # busy (a slow reply) are cancelled, so no task outlives the loop.
            for w in list(self._writers):
                w.close()
            handlers = [t for t in self._handlers if not t.done()]
            if handlers:
                _, pending = await asyncio.wait(handlers, timeout=0.5)
                for t in pending:
                    t.cancel()
                if pending:
                    await asyncio.wait(pending, timeout=0.5)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 1.0)

    def stats(self) -> dict[str, int]:
        return {"connections": self.connections, "requests": len(self.requests)}

    def clear(self) -> None:
        self.requests.clear()
        self.latencies.clear()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        counted = False
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return
                lines = head[:-4].decode("latin-1").split("\r\n")
                method, path, version = [*lines[0].split(" ", 2), "", ""][:3]
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                if headers.get("expect", "").lower() == "100-continue":  # curl, large bodies
                    writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                if headers.get("transfer-encoding", "").lower() == "chunked":
                    raw = await read_chunked(reader)
                else:
                    raw = await reader.readexactly(int(headers.get("content-length") or 0))
                arrived = time.monotonic()
                await self._request_read()
                keep_alive = version == "HTTP/1.1" and headers.get("connection", "") != "close"
                if not counted:
                    counted = True
                    self.connections += 1
                response, timing = await self._respond(method, path, headers, raw, arrived, writer)
                if response is None:  # Disconnect
                    return
                if response is not SENT:
                    self._send(writer, response, timing)
                await writer.drain()
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:  # server shutdown: end quietly (top-level handler)
            return
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    async def _request_read(self) -> None:
        """Called once a request has been read, before it is handled."""

    def _between_work(self) -> None:
        """Called between pieces of one request's work (parsing, the script, rendering)."""

    def _send(
        self, writer: asyncio.StreamWriter, response: bytes, timing: DeliveredLatency | None
    ) -> None:
        if timing is not None:  # stamped first so a client that saw the reply sees it
            timing.sent = time.monotonic()
            self.latencies.append(timing)
        writer.write(response)  # with an empty buffer: sent to the kernel right here

    async def _respond(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        raw: bytes,
        arrived: float,
        writer: asyncio.StreamWriter,
    ) -> tuple[bytes | None, DeliveredLatency | None]:
        """The response bytes (None: disconnect; `SENT`: already written) and, for a chat
        request, its timing record (`_send` stamps `sent` as it writes the bytes)."""
        self._between_work()
        route = path.split("?", 1)[0]
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return _http(
                400, _error_body("request body is not JSON", "invalid_request_error")
            ), None
        if self.cfg.record:
            self.requests.append(RecordedRequest(method, path, headers, body))
        if method == "GET" and route.endswith("/models"):
            data = {"object": "list", "data": [{"id": self.cfg.model_name, "object": "model"}]}
            return _http(200, json.dumps(data).encode()), None
        if method != "POST" or not route.endswith("/chat/completions"):
            return _http(404, _error_body(f"no route {method} {route}", "not_found")), None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            msg = "body needs a 'messages' list"
            return _http(400, _error_body(msg, "invalid_request_error")), None
        if body.get("stream"):
            msg = "the fake server does not stream"
            return _http(400, _error_body(msg, "invalid_request")), None
        timing = DeliveredLatency(_conversation_key(body["messages"]), arrived, arrived)
        # The reply is computed first and sent `latency_s` after the request arrived, so the
        # latency a client sees is the configured one, not that plus the server's own work.
        self._between_work()
        response = await self._chat(body)
        if self.cfg.latency_s <= 0:
            return response, timing
        return await self._deliver(arrived + self.cfg.latency_s, writer, response, timing)

    async def _deliver(
        self,
        due: float,
        writer: asyncio.StreamWriter,
        response: bytes | None,
        timing: DeliveredLatency,
    ) -> tuple[bytes | None, DeliveredLatency | None]:
        """Hold a reply until `due` (time.monotonic); a plain sleep, up to a millisecond or
        two late (epoll's timeout is in whole milliseconds)."""
        remaining = due - time.monotonic()
        if remaining > 0:
            await asyncio.sleep(remaining)
        return response, timing

    async def _chat(self, body: dict[str, Any]) -> bytes | None:
        try:
            messages: Any = body["messages"]
            if self.cfg.parse_messages:
                messages = [Message.from_openai(m) for m in messages]
            reply = self.cfg.script(messages, body.get("tools") or [])
            if inspect.isawaitable(reply):
                reply = await reply
            while isinstance(reply, Slow):
                await asyncio.sleep(reply.seconds)
                reply = reply.reply
            if isinstance(reply, Disconnect):
                return None
            if isinstance(reply, HTTPFault):
                return _http(
                    reply.status, _error_body(reply.message, "injected"), extra=reply.headers
                )
            if isinstance(reply, RawBody):
                return _http(reply.status, reply.body, content_type=reply.content_type)
            out = self.renderer.render(reply, body)
        except Exception as exc:  # a script bug shows up as a readable 500
            return _http(500, _error_body(f"script raised {type(exc).__name__}: {exc}", "script"))
        return _http(200, json.dumps(out).encode())


async def read_chunked(reader: asyncio.StreamReader) -> bytes:
    """Read a chunked HTTP/1.1 body (request or response), trailers skipped."""
    parts: list[bytes] = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # trailers, if any, end with a blank line
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


def _error_body(message: str, type_: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "code": None}}).encode()


def _http(
    status: int,
    body: bytes,
    *,
    content_type: str = "application/json",
    extra: dict[str, str] | None = None,
) -> bytes:
    head = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        f"content-type: {content_type}",
        f"content-length: {len(body)}",
    ]
    for k, v in (extra or {}).items():
        head.append(f"{k}: {v}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


# --- the public handle -------------------------------------------------------------------


class FakeOpenAIServer:
    """A loopback OpenAI-compatible server driven by `script(messages, tools) -> reply`.

    >>> with FakeOpenAIServer(lambda messages, tools: "hello") as server:
    ...     policy = OpenAIPolicy(model="fake", base_url=server.base_url)

    Args:
        script: called once per chat-completions request with the conversation (as
            `Message`s, or raw dicts with `parse_messages=False`) and the tool schemas;
            returns a reply or a fault (see the module docstring). May be async.
        latency_s: added to every chat-completions reply (a model's think time); requests
            wait concurrently, so 64 requests at 50 ms take 50 ms, not 3.2 s.
        record: keep every request for `requests` (turn off for long runs).
        parse_messages: hand the script `Message` objects (True) or the raw JSON dicts.
        model_name: reported by `/v1/models` and in replies when the request names none.
        port: 0 picks a free port.
    """

    def __init__(
        self,
        script: ServerScript,
        *,
        latency_s: float = 0.0,
        record: bool = True,
        parse_messages: bool = True,
        model_name: str = "fake-model",
        port: int = 0,
    ) -> None:
        self._cfg = ServerConfig(script, latency_s, model_name, record, parse_messages)
        self._want_port = port
        self.port: int | None = None
        self._core: ServerCore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        """Start serving in a background thread; returns once the port is open."""
        if self.port is not None:
            return self
        ready = threading.Event()
        error: list[BaseException] = []
        self._loop = asyncio.new_event_loop()
        self._core = ServerCore(self._cfg)

        def run() -> None:
            assert self._loop is not None and self._core is not None
            asyncio.set_event_loop(self._loop)
            try:
                self.port = self._loop.run_until_complete(self._core.start(self._want_port))
            except BaseException as exc:
                error.append(exc)
                ready.set()
                return
            ready.set()
            self._loop.run_forever()
            self._loop.close()

        self._thread = threading.Thread(target=run, name="FakeOpenAIServer", daemon=True)
        self._thread.start()
        ready.wait(timeout=10.0)
        if error:
            self._thread = None
            raise RuntimeError(f"FakeOpenAIServer could not start: {error[0]}") from error[0]
        return self

    def stop(self) -> None:
        """Stop serving; safe to call twice."""
        if self._thread is not None and self._loop is not None and self._core is not None:
            fut = asyncio.run_coroutine_threadsafe(self._core.close(), self._loop)
            with contextlib.suppress(Exception):
                fut.result(timeout=2.0)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5.0)
            self._thread = None
        self.port = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> FakeOpenAIServer:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        self.stop()

    # the script ------------------------------------------------------------------------

    @property
    def script(self) -> ServerScript:
        return self._cfg.script

    @script.setter
    def script(self, fn: ServerScript) -> None:
        """Swap the script of a running server (one server, many tests)."""
        self._cfg.script = fn

    # addresses and records ---------------------------------------------------------------

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT` (no path)."""
        if self.port is None:
            raise RuntimeError("FakeOpenAIServer is not running; use it as a context manager")
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, `http://127.0.0.1:PORT/v1`."""
        return self.url + "/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order of arrival."""
        return list(self._core.requests) if self._core is not None else []

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The chat-completions requests only."""
        return [r for r in self.requests if r.path.split("?")[0].endswith("/chat/completions")]

    def stats(self) -> dict[str, int]:
        """`{"connections": n, "requests": n}`: TCP connections that carried requests (a
        pooling client opens few) and requests recorded."""
        return self._core.stats() if self._core is not None else {"connections": 0, "requests": 0}

    def latencies(self) -> list[DeliveredLatency]:
        """Each chat-completions request's delivered latency, in order of reply (kept even
        with `record=False`; `clear()` forgets them)."""
        return list(self._core.latencies) if self._core is not None else []

    def clear(self) -> None:
        """Forget the recorded requests and latencies."""
        if self._core is not None:
            self._core.clear()
