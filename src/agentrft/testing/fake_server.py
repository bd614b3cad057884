"""`FakeOpenAIServer`: a loopback OpenAI-compatible chat-completions server for tests and
benchmarks.

A script `fn(messages, tools) -> reply` decides each reply, exactly like `ScriptedPolicy`
(the same function can drive both), and faults are replies too: `http_error(500)`,
`rate_limited(retry_after=0.01)`, `slow(2.0, reply)`, `malformed_body()`, `disconnect()`.
Tool-call faults need no helper: `call("guess", "{not json")` is a malformed-arguments call,
`call("no_such_tool")` an unknown tool, a plain string a text reply (or a plain-text call),
`""` an empty reply. `sequence(r1, r2, then=script)` answers requests in order (a
client's retries included), e.g. `sequence(rate_limited(0.01), then=expert)`.

The server is a few hundred lines of raw asyncio HTTP/1.1 (keep-alive, Content-Length and
chunked request bodies) so that it costs the client under test as little CPU as possible.
It runs in a background thread (`FakeOpenAIServer(fn)`, the default, fine for tests) or in
a child process (`process=True`, what the benchmark uses so the server does not share the
client's core; the script must then be picklable, i.e. a module-level function).

Every request is recorded (method, path, headers, JSON body) for assertions, in both modes:
`server.requests`; `server.stats()` counts the connections used. It listens on 127.0.0.1
only.

`latency_s` is measured from the moment a request has been read to the moment its reply is
handed to the kernel, and every chat request's delivered latency is kept (`latencies()`,
always, even with `record=False`: a few numbers per request). A plain `asyncio.sleep`
overshoots by up to a millisecond or two (epoll's timeout is in whole milliseconds, then
the process must be woken); `precise_latency=True` has one task sleep until `_SPIN_S`
before the earliest due time and then poll the loop (`await asyncio.sleep(0)`) until it,
writing each reply as it falls due, so a lone reply leaves within microseconds of its due
time, at the price of spinning a core for those last milliseconds: meant for benchmarks
with the server in its own process. Replies that fall due together still leave one write
apart (a loopback send costs some 15-20 us on a small VM), which `latencies()` shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import heapq
import inspect
import itertools
import json
import multiprocessing
import os
import pickle
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentrft.messages import Message, ToolCall
from agentrft.policies.http11 import read_chunked
from agentrft.policy import Completion

ServerReply = Any  # Completion | Message | str | ToolCall | list[ToolCall] | dict | a fault
ServerScript = Callable[[list[Message], list[dict[str, Any]]], Any]


# --- faults ------------------------------------------------------------------------------


@dataclass
class HTTPFault:
    """Answer with an HTTP error status (and optional headers and body)."""

    status: int = 500
    message: str = "injected server error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Slow:
    """Wait `seconds` before sending `reply` (a slow model; a client timeout when long)."""

    seconds: float
    reply: ServerReply = "ok"


@dataclass
class RawBody:
    """Send `body` verbatim with `status` (e.g. a 200 whose body is not JSON)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass
class Disconnect:
    """Close the connection without answering (a dropped connection)."""


def http_error(status: int = 500, message: str = "injected server error") -> HTTPFault:
    """An HTTP error reply: `http_error(500)`, `http_error(503)`, `http_error(400, "bad")`."""
    return HTTPFault(status=status, message=message)


def rate_limited(retry_after: float | None = None) -> HTTPFault:
    """A 429, with a `Retry-After` header (seconds, may be fractional) when given."""
    headers = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
    return HTTPFault(status=429, message="rate limited (injected)", headers=headers)


def slow(seconds: float, reply: ServerReply = "ok") -> Slow:
    return Slow(seconds=seconds, reply=reply)


def malformed_body(text: bytes = b'{"choices": [') -> RawBody:
    """A 200 whose body is not valid JSON."""
    return RawBody(body=text)


def disconnect() -> Disconnect:
    return Disconnect()


class ReplySequence:
    """The script `sequence()` returns; `count` is the number of requests answered."""

    def __init__(self, *replies: ServerReply, then: ServerScript | None = None) -> None:
        if not replies and then is None:
            raise ValueError("sequence() needs at least one reply or a `then` script")
        self.replies = list(replies)
        self.then = then
        self.count = 0

    def __call__(self, messages: Any, tools: list[dict[str, Any]]) -> ServerReply:
        i = self.count
        self.count += 1
        if i < len(self.replies):
            return self.replies[i]
        if self.then is not None:
            return self.then(messages, tools)
        return self.replies[-1]


def sequence(*replies: ServerReply, then: ServerScript | None = None) -> ReplySequence:
    """A script that answers request i with `replies[i]`; after the last one it delegates
    to `then` (a script) or repeats the last reply. It counts requests, not conversations,
    so a client's retries consume replies: `sequence(http_error(500), then=expert)` fails
    once, then plays `expert`. Picklable when `then` is.
    """
    return ReplySequence(*replies, then=then)


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


# Precise latency: sleep until this long before the due time, then poll the loop until it.
# Covers epoll's millisecond rounding plus a wake-up delay on a busy machine.
_SPIN_S = 0.002


# --- rendering ---------------------------------------------------------------------------


def _approx_tokens(text: str | None) -> int:
    return max(1, len(text) // 4) if text else 0


class _Renderer:
    """Turns a script reply into an OpenAI chat.completion JSON object."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self.counter = 0

    def render(self, reply: ServerReply, body: dict[str, Any]) -> dict[str, Any]:
        if isinstance(reply, dict):
            return reply  # a raw response body, sent as is
        self.counter += 1
        completion = self._completion(reply)
        msg = completion.message
        message: dict[str, Any] = {"role": "assistant", "content": msg.content}
        if msg.tool_calls:
            calls = []
            for i, c in enumerate(msg.tool_calls):
                call_id = c.id or f"call_{self.counter}_{i}"
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                )
            message["tool_calls"] = calls
        if msg.reasoning is not None:
            message["reasoning_content"] = msg.reasoning
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": completion.finish_reason
            or ("tool_calls" if msg.tool_calls else "stop"),
        }
        prompt_tokens = completion.prompt_tokens or sum(
            _approx_tokens(m.get("content") if isinstance(m, dict) else None)
            for m in body.get("messages", [])
        )
        completion_tokens = completion.completion_tokens or _approx_tokens(
            (msg.content or "") + "".join(c.arguments for c in msg.tool_calls or [])
        )
        out: dict[str, Any] = {
            "id": f"chatcmpl-fake-{self.counter}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model_name),
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        # vLLM's shapes: `return_token_ids` puts ids at the top level and on the choice;
        # `logprobs` gives one entry per sampled token.
        if completion.prompt_token_ids is not None:
            out["prompt_token_ids"] = completion.prompt_token_ids
        if completion.completion_token_ids is not None:
            choice["token_ids"] = completion.completion_token_ids
        if completion.logprobs is not None:
            ids = completion.completion_token_ids or [0] * len(completion.logprobs)
            choice["logprobs"] = {
                "content": [
                    {"token": f"token_id:{t}", "logprob": lp, "bytes": None, "top_logprobs": []}
                    for t, lp in zip(ids, completion.logprobs, strict=False)
                ]
            }
        return out

    @staticmethod
    def _completion(reply: ServerReply) -> Completion:
        if isinstance(reply, Completion):
            return reply
        if isinstance(reply, Message):
            return Completion(message=reply)
        if reply is None:
            return Completion(message=Message(role="assistant", content=None))
        if isinstance(reply, str):
            return Completion(message=Message(role="assistant", content=reply))
        if isinstance(reply, ToolCall):
            reply = [reply]
        if isinstance(reply, list | tuple) and all(isinstance(c, ToolCall) for c in reply):
            return Completion(message=Message(role="assistant", tool_calls=list(reply) or None))
        raise TypeError(
            f"the fake server's script returned {type(reply).__name__}; expected a str, "
            "ToolCall, list of ToolCall, Message, Completion, dict, or a fault"
        )


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
class _Config:
    script: ServerScript
    latency_s: float
    model_name: str
    record: bool
    parse_messages: bool
    precise_latency: bool = False


class _Core:
    """The server proper; lives on one event loop (a thread's or a child process's)."""

    def __init__(self, cfg: _Config) -> None:
        self.cfg = cfg
        self.renderer = _Renderer(cfg.model_name)
        self.requests: list[RecordedRequest] = []
        self.latencies: list[DeliveredLatency] = []
        self.server: asyncio.base_events.Server | None = None
        self.port = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        # precise_latency: replies waiting for their due time, and the one task that spins
        # for all of them (64 spinning handlers would each poll the clock every turn of the
        # loop, making every turn 64 times longer).
        self._due: list[tuple[float, int, _Due]] = []
        self._seq = itertools.count()
        self._spinner: asyncio.Task[None] | None = None
        self._wake: asyncio.Future[None] | None = None
        # Connections that carried API requests (control requests aside): shows pooling.
        self.connections = 0

    async def start(self, port: int = 0) -> int:
        self.server = await asyncio.start_server(
            self._connection, "127.0.0.1", port, limit=1 << 20, backlog=1024
        )
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._spinner is not None:
            self._spinner.cancel()
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
                if self.cfg.precise_latency and self.cfg.latency_s > 0:
                    # Let every request read in this turn of the loop be stamped before any
                    # is parsed and rendered (tens of us each), so a burst's last request
                    # is not stamped, and answered, late by the work on the others.
                    self._release_due()
                    await asyncio.sleep(0)
                keep_alive = version == "HTTP/1.1" and headers.get("connection", "") != "close"
                if not counted and not path.startswith("/_fake/"):
                    counted = True
                    self.connections += 1
                response, timing = await self._respond(method, path, headers, raw, arrived, writer)
                if response is None:  # Disconnect
                    return
                if response is not _SENT:  # (precise latency: sent at its due time already)
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
        """The response bytes (None: disconnect; `_SENT`: already written) and, for a chat
        request, its timing record (`_send` stamps `sent` as it writes the bytes)."""
        if self.cfg.precise_latency:
            self._release_due()  # replies due now go before this request's work
        route = path.split("?", 1)[0]
        if route.startswith("/_fake/"):
            return self._control(method, route), None
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
        if self.cfg.precise_latency:
            self._release_due()
        response = await self._chat(body)
        due = arrived + self.cfg.latency_s
        if self.cfg.latency_s <= 0:
            return response, timing
        if not self.cfg.precise_latency:
            remaining = due - time.monotonic()
            if remaining > 0:
                await asyncio.sleep(remaining)
            return response, timing
        self._release_due()
        await self._send_at(due, _Due(writer, response, timing))
        return (_SENT if response is not None else None), None

    async def _send_at(self, due: float, item: _Due) -> None:
        """Write `item` at `due` (time.monotonic), to within microseconds: asyncio.sleep
        alone returns up to a millisecond or two late. One spinner task serves all waiting
        replies; `_release_due` also runs between requests' work."""
        loop = asyncio.get_running_loop()
        heapq.heappush(self._due, (due, next(self._seq), item))
        if self._spinner is None or self._spinner.done():
            self._spinner = loop.create_task(self._spin())
        elif self._due[0][2] is item and self._wake is not None and not self._wake.done():
            self._wake.set_result(None)  # due before what the spinner sleeps for
        await item.done

    def _release_due(self) -> None:
        """Send every reply whose time has come (a no-op, bar a clock read, when none)."""
        now = time.monotonic()
        while self._due and self._due[0][0] <= now:
            item = heapq.heappop(self._due)[2]
            if item.done.done():  # its handler was cancelled (server shutdown)
                continue
            if item.response is not None:  # None: a Disconnect, due now
                with contextlib.suppress(Exception):  # the client may have gone
                    self._send(item.writer, item.response, item.timing)
            item.done.set_result(None)

    async def _spin(self) -> None:
        """Release each waiting reply at its due time: sleep until `_SPIN_S` before the
        earliest, then poll the clock once per turn of the loop (other connections' I/O
        runs in between)."""
        loop = asyncio.get_running_loop()
        while self._due:
            self._release_due()
            now = time.monotonic()
            if not self._due:
                return
            remaining = self._due[0][0] - now - _SPIN_S
            if remaining > 0:
                self._wake = loop.create_future()
                timer = loop.call_later(remaining, _set_if_pending, self._wake)
                await self._wake
                timer.cancel()
            else:
                await asyncio.sleep(0)

    async def _chat(self, body: dict[str, Any]) -> bytes | None:
        try:
            messages: Any = body["messages"]
            if self.cfg.parse_messages:
                messages = [Message.model_validate(_from_openai(m)) for m in messages]
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

    def _latencies(self) -> list[list[Any]]:
        return [[t.conversation, t.arrived, t.sent] for t in self.latencies]

    def _stats(self) -> dict[str, int]:
        return {"connections": self.connections, "requests": len(self.requests)}

    def _control(self, method: str, route: str) -> bytes:
        if route == "/_fake/requests":
            data = json.dumps([r.to_json() for r in self.requests]).encode()
            return _http(200, data)
        if route == "/_fake/stats":
            return _http(200, json.dumps(self._stats()).encode())
        if route == "/_fake/latencies":
            return _http(200, json.dumps(self._latencies()).encode())
        if route == "/_fake/clear" and method == "POST":
            self.requests.clear()
            self.latencies.clear()
            return _http(200, b"{}")
        return _http(404, _error_body(f"no control route {route}", "not_found"))


def _from_openai(m: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI message dict in `Message` field names (tool calls flattened)."""
    out = dict(m)
    calls = out.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            {
                "id": c.get("id", ""),
                "name": c.get("function", {}).get("name", ""),
                "arguments": c.get("function", {}).get("arguments", "{}"),
            }
            for c in calls
        ]
    if isinstance(out.get("content"), list):  # content parts: keep the text
        out["content"] = "".join(p.get("text", "") for p in out["content"] if isinstance(p, dict))
    if "reasoning_content" in out and "reasoning" not in out:
        out["reasoning"] = out.pop("reasoning_content")
    return {k: v for k, v in out.items() if k in Message.model_fields}


_SENT = b""  # _respond's "the reply has been written already" (compared by identity)


class _Due:
    """A reply waiting for its due time (precise latency)."""

    __slots__ = ("done", "response", "timing", "writer")

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        response: bytes | None,
        timing: DeliveredLatency | None,
    ) -> None:
        self.writer = writer
        self.response = response
        self.timing = timing
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()


def _set_if_pending(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


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
        precise_latency: deliver `latency_s` to within a few tenths of a millisecond by
            spinning the server's loop for its last `_SPIN_S` (burns CPU; for benchmarks
            with `process=True`). Off: a plain sleep, up to a millisecond or two late.
        process: run in a child process (the script must be picklable).
        record: keep every request for `requests` (turn off for long benchmarks).
        parse_messages: hand the script `Message` objects (True) or the raw JSON dicts.
        model_name: reported by `/v1/models` and in replies when the request names none.
        port: 0 picks a free port.
    """

    def __init__(
        self,
        script: ServerScript,
        *,
        latency_s: float = 0.0,
        process: bool = False,
        record: bool = True,
        parse_messages: bool = True,
        model_name: str = "fake-model",
        port: int = 0,
        precise_latency: bool = False,
    ) -> None:
        self._cfg = _Config(script, latency_s, model_name, record, parse_messages, precise_latency)
        self.process = process
        self._want_port = port
        self.port: int | None = None
        self._core: _Core | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._proc: Any = None
        self._parent_conn: Any = None

    # lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        """Start serving; returns once the port is open."""
        if self.port is not None:
            return self
        if self.process:
            self._start_process()
        else:
            self._start_thread()
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
        if self._proc is not None:
            with contextlib.suppress(Exception):
                self._parent_conn.send("stop")
            self._proc.join(timeout=5.0)
            if self._proc.is_alive():
                self._proc.terminate()
                self._proc.join(timeout=5.0)
            self._proc = None
        self.port = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> FakeOpenAIServer:
        return self.start()

    async def __aexit__(self, *exc: object) -> None:
        self.stop()

    def _start_thread(self) -> None:
        ready = threading.Event()
        error: list[BaseException] = []
        self._loop = asyncio.new_event_loop()
        self._core = _Core(self._cfg)

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

    def _start_process(self) -> None:
        try:
            pickle.dumps(self._cfg.script)
        except Exception as exc:
            raise TypeError(
                "FakeOpenAIServer(process=True) needs a picklable script (a module-level "
                f"function or callable object); got {self._cfg.script!r}: {exc}"
            ) from None
        ctx = multiprocessing.get_context("spawn")  # fork is unsafe once threads exist
        self._parent_conn, child_conn = ctx.Pipe()
        self._proc = ctx.Process(
            target=_serve_in_process,
            args=(self._cfg, self._want_port, child_conn),
            name="FakeOpenAIServer",
            daemon=True,
        )
        self._proc.start()
        if not self._parent_conn.poll(30.0):
            self.stop()
            raise RuntimeError("FakeOpenAIServer child process did not start within 30 s")
        msg = self._parent_conn.recv()
        if isinstance(msg, str):
            self.stop()
            raise RuntimeError(f"FakeOpenAIServer child process failed: {msg}")
        self.port = int(msg)

    # the script ------------------------------------------------------------------------

    @property
    def script(self) -> ServerScript:
        return self._cfg.script

    @script.setter
    def script(self, fn: ServerScript) -> None:
        """Swap the script of a running thread-mode server (one server, many tests)."""
        if self.process and self._proc is not None:
            raise RuntimeError("the script of a running process-mode server cannot change")
        self._cfg.script = fn

    @property
    def pid(self) -> int | None:
        """The serving process: the child's in process mode, this one's in thread mode
        (None before start). Lets a benchmark account for the server's CPU time."""
        if self.port is None:
            return None
        return self._proc.pid if self._proc is not None else os.getpid()

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
        if self._core is not None and not self.process:
            return list(self._core.requests)
        with urllib.request.urlopen(self.url + "/_fake/requests", timeout=10) as resp:
            return [RecordedRequest(**r) for r in json.loads(resp.read())]

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The chat-completions requests only."""
        return [r for r in self.requests if r.path.split("?")[0].endswith("/chat/completions")]

    def stats(self) -> dict[str, int]:
        """`{"connections": n, "requests": n}`: TCP connections that carried API requests
        (a pooling client opens few) and requests recorded."""
        if self._core is not None and not self.process:
            return self._core._stats()
        with urllib.request.urlopen(self.url + "/_fake/stats", timeout=10) as resp:
            return json.loads(resp.read())

    def latencies(self) -> list[DeliveredLatency]:
        """Each chat-completions request's delivered latency, in order of reply (kept even
        with `record=False`; `clear()` forgets them)."""
        if self._core is not None and not self.process:
            return list(self._core.latencies)
        with urllib.request.urlopen(self.url + "/_fake/latencies", timeout=10) as resp:
            return [DeliveredLatency(*t) for t in json.loads(resp.read())]

    def clear(self) -> None:
        """Forget the recorded requests and latencies."""
        if self._core is not None and not self.process:
            self._core.requests.clear()
            self._core.latencies.clear()
            return
        req = urllib.request.Request(self.url + "/_fake/clear", data=b"", method="POST")
        with urllib.request.urlopen(req, timeout=10):
            pass


def _serve_in_process(cfg: _Config, port: int, conn: Any) -> None:
    """Child-process entry: serve until the parent says stop (or goes away)."""

    async def main() -> None:
        core = _Core(cfg)
        try:
            bound = await core.start(port)
        except BaseException as exc:
            conn.send(f"{type(exc).__name__}: {exc}")
            return
        conn.send(bound)
        # The child serves and does nothing else: move everything alive now (imports, the
        # script) out of the collector's view, so a full collection does not stall replies.
        gc.freeze()
        loop = asyncio.get_running_loop()
        # Block on the pipe in a worker thread: EOF (parent died) or "stop" ends the server.
        with contextlib.suppress(Exception):
            await loop.run_in_executor(None, conn.recv)
        await core.close()

    asyncio.run(main())
