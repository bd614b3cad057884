"""A loopback SageMaker job runtime, for trying a runtime app without AWS.

`LoopbackJobRuntime` listens on 127.0.0.1 and serves what the real job runtime serves a
rollout: the policy at `POST /v1/chat/completions` (answered by a `Policy`, e.g. a task's
scripted expert) and `POST /complete-rollout` / `POST /update-reward` (recorded, answered
like the service). Point a rollout at it with `metadata.endpoint` (or
`RFT_RUNTIME_ENDPOINT`) and the real boto3 `sagemakerjobruntime` client talks to it.

Faults are injected per request with `on_chat` / `on_report` hooks returning
`(status, message)` to answer an error instead, e.g. one 403 then success.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentrft.backends.sagemaker.runtime.payload import POLICY_MODEL
from agentrft.messages import Message
from agentrft.policy import Policy, Sampling
from agentrft.testing.replies import ChatRenderer

#: A fault hook: given the request, return (status, message) to fail it, or None.
FaultHook = Callable[["Recorded"], "tuple[int, str] | None"]

_ERROR_CODES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    409: "ConflictException",
    429: "ThrottlingException",
    500: "InternalServiceError",
}


@dataclass
class Recorded:
    """One request as the loopback saw it (header names lower-case)."""

    path: str
    headers: dict[str, str]
    body: Any
    seq: int
    method: str = "POST"

    @property
    def bearer(self) -> str | None:
        auth = self.headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else None


class LoopbackJobRuntime:
    """The job runtime's three routes on 127.0.0.1, backed by `policy`.

    Use as a context manager; `endpoint` is what a payload's `metadata.endpoint` takes.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        on_chat: FaultHook | None = None,
        on_report: FaultHook | None = None,
        port: int = 0,
    ) -> None:
        self.policy = policy
        self.port = port  # 0: the system picks a free one
        self.on_chat = on_chat
        self.on_report = on_report
        self.requests: list[Recorded] = []
        # The fake server's renderer: the same chat.completion JSON the job runtime sends.
        self._renderer = ChatRenderer(model_name=POLICY_MODEL)
        self._lock = threading.Lock()
        self._seq = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle ---------------------------------------------------------------------------

    def start(self) -> LoopbackJobRuntime:
        handler = _make_handler(self)
        self._server = _Server(("127.0.0.1", self.port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="loopback-job-runtime", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> LoopbackJobRuntime:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "start() the loopback first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # what was seen -----------------------------------------------------------------------

    def of(self, path: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    @property
    def chat(self) -> list[Recorded]:
        return self.of("/v1/chat/completions")

    @property
    def completes(self) -> list[Recorded]:
        return self.of("/complete-rollout")

    @property
    def rewards(self) -> list[Recorded]:
        return self.of("/update-reward")

    def for_trajectory(self, trajectory_id: str) -> list[Recorded]:
        """Requests about one rollout, in arrival order."""
        with self._lock:
            return [r for r in self.requests if _trajectory_of(r) == trajectory_id]

    def _record(
        self, path: str, headers: dict[str, str], body: Any, method: str = "POST"
    ) -> Recorded:
        with self._lock:
            self._seq += 1
            rec = Recorded(path, headers, body, self._seq, method)
            self.requests.append(rec)
            return rec

    # answers -----------------------------------------------------------------------------

    def answer_chat(self, rec: Recorded) -> tuple[int, dict[str, Any]]:
        if self.on_chat is not None and (fault := self.on_chat(rec)) is not None:
            status, message = fault
            return status, {"error": {"message": message, "code": status}}
        body = rec.body if isinstance(rec.body, dict) else {}
        messages = [Message.from_openai(m) for m in body.get("messages", [])]
        completion = asyncio.run(
            self.policy.complete(messages, body.get("tools") or [], Sampling())
        )
        return 200, self._renderer.render(completion, body)

    def answer_report(self, rec: Recorded) -> tuple[int, dict[str, Any]]:
        if self.on_report is not None and (fault := self.on_report(rec)) is not None:
            status, message = fault
            return status, {"Message": message}
        body = rec.body if isinstance(rec.body, dict) else {}
        # botocore's model sends JobArn as a header; the SageMaker SDK's bearer POST puts
        # it in the body. Both reach the same service, so both are accepted here.
        job_arn = rec.headers.get("x-amzn-sagemaker-job-arn") or body.get("JobArn")
        if not job_arn or not body.get("TrajectoryId"):
            return 400, {"Message": "JobArn and TrajectoryId are required"}
        return 200, {}


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) drops connections when 64 rollouts connect at once.
    request_queue_size = 512


def _make_handler(owner: LoopbackJobRuntime) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            route = self.path.split("?", 1)[0]
            rec = owner._record(route, headers, body)
            try:
                if route == "/v1/chat/completions":
                    status, out = owner.answer_chat(rec)
                elif route in ("/complete-rollout", "/update-reward"):
                    status, out = owner.answer_report(rec)
                else:
                    status, out = 404, {"Message": f"no route {route}"}
            except Exception as exc:  # a policy bug shows up as a readable 500
                status, out = 500, {"Message": f"{type(exc).__name__}: {exc}"}
            self._send(status, out)

        def do_GET(self) -> None:  # the job runtime has no GET route: record, refuse
            headers = {k.lower(): v for k, v in self.headers.items()}
            owner._record(self.path.split("?", 1)[0], headers, None, "GET")
            self._send(404, {"Message": f"no route GET {self.path.split('?', 1)[0]}"})

        def _send(self, status: int, out: dict[str, Any]) -> None:
            data = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status >= 400 and status in _ERROR_CODES:
                self.send_header("x-amzn-ErrorType", _ERROR_CODES[status])
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

    return Handler


def _trajectory_of(rec: Recorded) -> str | None:
    if rec.path == "/v1/chat/completions":
        return rec.headers.get("x-amzn-sagemaker-trajectory-id")
    return rec.body.get("TrajectoryId") if isinstance(rec.body, dict) else None
