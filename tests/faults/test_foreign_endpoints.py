"""The runtime sends credentials only to the job runtime, the operator's endpoint or loopback.

The bearer token (it carries the access key id and session token) and the SigV4-signed
CompleteRollout / UpdateReward go wherever the endpoint points, so a payload's
`metadata.endpoint` (or its `metadata.region`, which shapes the default endpoint) must not
be able to point them elsewhere.

The end-to-end tests route every outgoing request of the app through a recording forward
proxy on 127.0.0.1 (`HTTP_PROXY` / `HTTPS_PROXY`; httpx and botocore both honour them):
for an allowed non-loopback endpoint the proxy sees the whole rollout (and forwards it to a
loopback job runtime, so it succeeds), for a refused one it sees nothing at all.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient

from agentrft.backends.sagemaker.runtime import auth
from agentrft.backends.sagemaker.runtime.app import build_app, openai_policy_factory
from agentrft.backends.sagemaker.runtime.auth import TokenProviders
from agentrft.backends.sagemaker.runtime.job_runtime import JobRuntimeReporter
from agentrft.backends.sagemaker.runtime.payload import (
    endpoint_allowed,
    parse_payload,
    shown_endpoint,
)
from agentrft.backends.sagemaker.testing.loopback import LoopbackJobRuntime
from agentrft.policies.scripted import ScriptedPolicy
from agentrft.testing import FindNumberTask, find_number_expert

JOB_ARN = "arn:aws:sagemaker:us-east-1:111122223333:job/AgentRFT/foreign-endpoints"
ROW = json.dumps({"secret": 7, "low": 1, "high": 9, "id": "n7"})
ACCESS_KEY = "AKIDEXAMPLEFOREIGN01"
#: An operator's endpoint that is not loopback: reachable only through the proxy.
OPERATOR_ENDPOINT = "http://runtime.invalid:8080"
LOWEST = FindNumberTask().lowest_reward().total

ALLOWED = [
    "https://job-runtime.sagemaker.us-east-1.api.aws",
    "https://job-runtime.sagemaker.us-west-2.api.aws/",
    "https://job-runtime.sagemaker.us-east-1.api.aws:443",
    "https://job-runtime.beta.sagemaker.us-west-2.api.aws",
    "https://job-runtime.gamma.sagemaker.eu-central-1.api.aws",
    "https://job-runtime.sagemaker.us-gov-west-1.api.aws",
    "https://job-runtime.sagemaker.ap-southeast-5.api.aws",
    "http://127.0.0.1:8080",
    "https://127.0.0.1:9443/",
    "http://localhost:8080",
    "http://[::1]:8080",
    "http://127.0.0.1",
]

REFUSED = [
    # other hosts
    "https://evil.invalid",
    "https://job-runtime.sagemaker.us-east-1.api.aws.evil.invalid",
    "https://job-runtime.sagemaker.us-east-1.evil.invalid",
    "https://job-runtime-sagemaker.us-east-1.api.aws",
    "https://xjob-runtime.sagemaker.us-east-1.api.aws",
    "https://job-runtime.sagemaker.us-east-1.api.aws.",
    "https://job-runtime.sagemaker.api.aws",
    "https://job-runtime.sagemaker.us-east.api.aws",
    "https://job-runtime.sagemaker.us_east_1.api.aws",
    "https://job-runtime.be.ta.sagemaker.us-east-1.api.aws",
    "https://job-runtime.sagemaker.us-east-1.amazonaws.com",
    # plain http to the real host
    "http://job-runtime.sagemaker.us-east-1.api.aws",
    "HTTP://JOB-RUNTIME.SAGEMAKER.US-EAST-1.API.AWS",
    # the instance-metadata and container-credential addresses
    "http://169.254.169.254",
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "http://169.254.170.2",
    "http://[fd00:ec2::254]",
    # user info: the host is what follows the @
    "https://job-runtime.sagemaker.us-east-1.api.aws@evil.invalid",
    "https://job-runtime.sagemaker.us-east-1.api.aws:443@evil.invalid",
    "https://user:hunter2-password@job-runtime.sagemaker.us-east-1.api.aws",
    "http://127.0.0.1@evil.invalid",
    "http://localhost:80@evil.invalid",
    # ports, paths, queries, fragments, parser disagreements
    "https://job-runtime.sagemaker.us-east-1.api.aws:8443",
    "https://job-runtime.sagemaker.us-east-1.api.aws:80",
    "https://job-runtime.sagemaker.us-east-1.api.aws/v1",
    "https://job-runtime.sagemaker.us-east-1.api.aws/../../evil",
    "https://job-runtime.sagemaker.us-east-1.api.aws?x=1",
    "https://job-runtime.sagemaker.us-east-1.api.aws#@evil.invalid",
    "https://job-runtime.sagemaker.us-east-1.api.aws\\@evil.invalid",
    "https://job-runtime.sagemaker.us-east-1.api.aws\t@evil.invalid",
    "https://job-runtime.sagemaker.us-east-1.api.aws\n@evil.invalid",
    "https://job-runtime.sagemaker.us-east-1.api.aws\r\nHost: evil.invalid",
    "https://job-runtime.sagemaker.us-east-1.api.aws%2f@evil.invalid",
    # look-alike letters (case folding maps them to ASCII) and IDNA; upper case around them
    "https://job-runtime.\u017fagemaker.us-east-1.api.aws",
    "https://job-runtime.sagemaker.us-east-1.api.aw\u0455",
    "https://job-runtime.sagema\u212aer.us-east-1.api.aws",  # Kelvin sign: lower() gives k
    "HTTPS://JOB-RUNTIME.SAGEMA\u212aER.US-EAST-1.API.AWS",
    "HTTPS://JOB-RUNTIME.\u017fAGEMAKER.US-EAST-1.API.AWS",
    "http://LOCALHOST\u212a:8080",
    "https://xn--job-runtime-xyz.sagemaker.us-east-1.api.aws",
    # loopback look-alikes
    "http://127.0.0.1.evil.invalid",
    "http://localhost.evil.invalid",
    "http://127.1",
    "http://0.0.0.0:8080",
    "http://127.0.0.1:8080/admin",
    # not http at all
    "file:///etc/passwd",
    "ftp://127.0.0.1",
    "job-runtime.sagemaker.us-east-1.api.aws",
]


@pytest.mark.parametrize("endpoint", ALLOWED)
def test_the_job_runtime_and_loopback_are_allowed(endpoint: str) -> None:
    assert endpoint_allowed(endpoint, {})


@pytest.mark.parametrize("endpoint", REFUSED)
def test_every_other_endpoint_is_refused(endpoint: str) -> None:
    assert not endpoint_allowed(endpoint, {})
    p = parse_payload(_payload(endpoint), {"AWS_REGION": "us-east-1"})
    assert p.endpoint is None and not p.can_play and not p.can_report
    assert any("nothing was sent" in problem for problem in p.problems)
    assert "hunter2" not in " ".join(p.problems)


@pytest.mark.parametrize(
    "endpoint",
    [
        "HTTPS://JOB-RUNTIME.SAGEMAKER.US-EAST-1.API.AWS",
        "https://Job-Runtime.SageMaker.us-east-1.api.aws/",
        "https://job-runtime.BETA.sagemaker.us-west-2.API.AWS:443",
        "http://LOCALHOST:8080",
    ],
)
def test_upper_case_hosts_are_allowed_and_used_lower_cased(endpoint: str) -> None:
    # Host names are case-insensitive: the same host, so the same answer; the requests
    # then go to one spelling of it.
    assert endpoint_allowed(endpoint, {})
    p = parse_payload(_payload(endpoint), {"AWS_REGION": "us-east-1"})
    assert p.endpoint == endpoint.lower().rstrip("/") and p.can_play and not p.problems


def test_the_operators_endpoint_is_allowed_exactly() -> None:
    env = {"RFT_RUNTIME_ENDPOINT": OPERATOR_ENDPOINT + "/", "AWS_REGION": "us-east-1"}
    assert endpoint_allowed(OPERATOR_ENDPOINT, env)
    assert parse_payload(_payload(None), env).endpoint == OPERATOR_ENDPOINT
    assert parse_payload(_payload(OPERATOR_ENDPOINT), env).endpoint == OPERATOR_ENDPOINT
    for near in (OPERATOR_ENDPOINT + "1", OPERATOR_ENDPOINT + "/v2", "http://runtime.invalid"):
        assert not endpoint_allowed(near, env), near
        assert parse_payload(_payload(near), env).endpoint is None


def test_a_region_cannot_steer_the_default_endpoint() -> None:
    raw = _payload(None)
    raw["metadata"]["region"] = "evil.invalid#"
    p = parse_payload(raw, {})
    assert p.endpoint is None and not p.can_report
    # shown as the host the request would really reach (the fragment is dropped)
    assert "endpoint 'https://job-runtime.sagemaker.evil.invalid' is not" in p.problems[-1]


def test_shown_endpoint_hides_user_info_and_bounds_the_text() -> None:
    shown = shown_endpoint("https://me:hunter2@evil.invalid/x?X-Amz-Signature=abc")
    assert shown == "'https://evil.invalid/x' (user info not shown)"
    assert len(shown_endpoint("https://evil.invalid/" + "a" * 10_000)) < 130
    assert "\n" not in shown_endpoint("http://evil.invalid/\nforged log line")


# --- end to end: a recording proxy sees every request the app makes ------------------------


class RecordingProxy:
    """A forward proxy on 127.0.0.1: records each request it is asked to make; forwards
    plain-http ones to `upstream` (a loopback job runtime); refuses CONNECT (https)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.seen: list[tuple[str, str, bool]] = []  # (method, target, had Authorization)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _record(self) -> None:
                with proxy._lock:
                    proxy.seen.append((self.command, self.path, "authorization" in self.headers))

            def do_CONNECT(self) -> None:
                self._record()
                self.send_error(403, "this proxy does not tunnel")

            def do_POST(self) -> None:
                self._record()
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                target = urlsplit(self.path)
                up = http.client.HTTPConnection(
                    proxy.upstream.hostname, proxy.upstream.port, timeout=30
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                up.request("POST", target.path or "/", body=body, headers=headers)
                resp = up.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                up.close()

            do_GET = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Static fake credentials, no profile, no metadata service; a fresh process session."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "RFT_RUNTIME_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-key-for-tests")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/agentrft-test")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/agentrft-test")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    auth.reset_shared_session()
    yield
    auth.reset_shared_session()


@pytest.fixture
def routed(aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """(loopback job runtime, proxy): every non-loopback request goes to the proxy."""
    with (
        LoopbackJobRuntime(ScriptedPolicy(find_number_expert)) as jr,
        RecordingProxy(jr.endpoint) as proxy,
    ):
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
            monkeypatch.setenv(name, proxy.url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.setenv(name, "127.0.0.1,localhost,::1")
        yield jr, proxy


def _payload(endpoint: str | None, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"jobArn": JOB_ARN, "rolloutId": "r1"}
    if endpoint is not None:
        metadata["endpoint"] = endpoint
    return {"prompt": ROW, "metadata": metadata, **extra}


def _app() -> tuple[TestClient, TokenProviders]:
    tokens = TokenProviders()
    reporter = JobRuntimeReporter(
        client_config={"retries": {"mode": "standard", "max_attempts": 1}}
    )

    def factory(payload: Any, provider: Any) -> Any:
        return openai_policy_factory(payload, provider, max_retries=1, backoff_base_s=0.01)

    app = build_app(FindNumberTask(), policy_factory=factory, tokens=tokens, reporter=reporter)
    return TestClient(app), tokens


def test_an_allowed_endpoint_through_the_proxy_plays_and_reports(
    routed: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: the proxy does see (and forward) what the app sends."""
    jr, proxy = routed
    monkeypatch.setenv("RFT_RUNTIME_ENDPOINT", OPERATOR_ENDPOINT)
    client, tokens = _app()
    with client:
        answer = client.post("/invocations", json=_payload(None)).json()
    assert answer["reward"] > 0  # found the number
    targets = [t for _, t, _ in proxy.seen]
    assert targets[0] == OPERATOR_ENDPOINT + "/v1/chat/completions"
    assert targets[-2:] == [
        OPERATOR_ENDPOINT + "/complete-rollout",
        OPERATOR_ENDPOINT + "/update-reward",
    ]
    assert all(had_auth for _, _, had_auth in proxy.seen)  # bearer token, then SigV4
    assert [r.path for r in jr.requests][-2:] == ["/complete-rollout", "/update-reward"]
    assert tokens.mints == 1


E2E_REFUSED = [
    "http://169.254.169.254",
    "https://evil.invalid",
    "http://job-runtime.sagemaker.us-east-1.api.aws",
    "https://job-runtime.sagemaker.us-east-1.api.aws@evil.invalid",
    "https://user:hunter2-password@evil.invalid",
    "https://job-runtime.sagemaker.us-east-1.api.aws:8443",
    OPERATOR_ENDPOINT + "/v1",  # near the operator's, not it
]


@pytest.mark.parametrize("endpoint", E2E_REFUSED)
def test_a_refused_endpoint_gets_nothing_and_the_lowest_reward(
    endpoint: str,
    routed: tuple[Any, Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    jr, proxy = routed
    monkeypatch.setenv("RFT_RUNTIME_ENDPOINT", OPERATOR_ENDPOINT)
    client, tokens = _app()
    with caplog.at_level(logging.INFO, logger="agentrft.runtime"), client:
        resp = client.post("/invocations", json=_payload(endpoint, diagnose=True))
    assert resp.status_code == 200
    answer = resp.json()
    assert answer["reward"] == LOWEST
    assert proxy.seen == [] and jr.requests == []  # no policy call, no report, anywhere
    assert tokens.mints == 0  # no token was even signed
    diag = answer["diagnostics"]
    assert diag["endpoint"] is None and diag["reports"] == [] and not diag["model_reached"]
    lines = [r.getMessage() for r in caplog.records if r.name == "agentrft.runtime"]
    assert len(lines) == 1 and "nothing was sent" in lines[0]
    for secret in ("hunter2", ACCESS_KEY, "fake-secret-key", "sagemaker-api-key-"):
        assert secret not in lines[0] and secret not in resp.text


def test_a_region_shaped_endpoint_gets_nothing(routed: tuple[Any, Any]) -> None:
    jr, proxy = routed
    raw = _payload(None)
    raw["metadata"]["region"] = "evil.invalid#"
    client, tokens = _app()
    with client:
        assert client.post("/invocations", json=raw).json() == {"reward": LOWEST}
    assert proxy.seen == [] and jr.requests == [] and tokens.mints == 0


def test_loopback_still_plays_and_reports_directly(routed: tuple[Any, Any]) -> None:
    jr, proxy = routed
    client, _ = _app()
    with client:
        answer = client.post("/invocations", json=_payload(jr.endpoint)).json()
    assert answer["reward"] > 0
    assert proxy.seen == []  # loopback is not proxied
    assert [r.path for r in jr.requests][-2:] == ["/complete-rollout", "/update-reward"]
