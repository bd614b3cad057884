"""The AgentCore runtime app end to end, against a loopback job runtime.

The app runs under uvicorn on 127.0.0.1; the loopback serves the policy at
/v1/chat/completions and records /complete-rollout and /update-reward as the real boto3
`sagemakerjobruntime` client sends them (fake static credentials, no network).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn

from agentrft import Environment, RewardResult, Task, TaskInputError, Tier, TieredReward, tool
from agentrft.backends.sagemaker.runtime import auth
from agentrft.backends.sagemaker.runtime.app import build_app, openai_policy_factory
from agentrft.backends.sagemaker.runtime.auth import TokenProviders
from agentrft.backends.sagemaker.runtime.job_runtime import JobRuntimeReporter
from agentrft.backends.sagemaker.runtime.payload import JOB_ARN_HEADER
from agentrft.backends.sagemaker.testing.loopback import LoopbackJobRuntime, Recorded
from agentrft.policies.scripted import ScriptedPolicy, call
from agentrft.testing import FakeOpenAIServer, rubric_judge
from agentrft.trajectory import Trajectory

JOB_ARN = "arn:aws:sagemaker:us-east-1:111122223333:job/AgentRFT/smoke-test"


# --- a tiny task, so these tests do not depend on any plugin -----------------------------


class DoorEnv(Environment):
    def __init__(self, secret: int) -> None:
        super().__init__()
        self.secret = secret
        self.opened: list[int] = []
        self.found = False

    @tool
    def open_door(self, door: int) -> str:
        """Open one door.

        Args:
            door: the door's number, from 1 to 3.
        """
        self.opened.append(door)
        if door == self.secret:
            self.found = self.done = True
            return "The prize is here!"
        if len(self.opened) >= 3:
            self.done = True
            return "Empty. No tries left."
        return "Empty."


class DoorTask(Task[dict]):
    """Find the prize behind one of three doors; per-turn rewards when `per_turn` is set."""

    name = "doors"
    tiers = TieredReward(
        [
            Tier(name="found", base=1.0, shaping_weight=0.1, solved=True),
            Tier(name="lost", base=-0.5),
            Tier(name="no_play", base=-1.5),
        ]
    )

    def __init__(self, per_turn: bool = False) -> None:
        self.per_turn = per_turn

    def parse(self, prompt: str) -> dict:
        try:
            data = json.loads(prompt)
            return {"id": str(data["id"]), "secret": int(data["secret"])}
        except Exception as exc:
            raise TaskInputError(f"not a doors row: {exc}") from None

    def environment(self, instance: dict) -> DoorEnv:
        return DoorEnv(instance["secret"])

    def user_prompt(self, instance: dict) -> str:
        return "One of doors 1-3 hides a prize. Open doors with open_door."

    def reward(self, env: Environment, trajectory: Trajectory) -> RewardResult:
        assert isinstance(env, DoorEnv)
        per_turn = [0.25] * len(trajectory.turns) if self.per_turn else None
        if env.found:
            return self.tiers.score("found", 1 - len(env.opened) / 3, per_turn=per_turn)
        if env.opened:
            return self.tiers.score("lost", per_turn=per_turn)
        return self.tiers.lowest()


def door_script(messages: list, tools: list) -> Any:
    """Opens doors 1, 2, 3 in order (one per turn)."""
    turn = sum(1 for m in messages if m.role == "assistant")
    return call("open_door", {"door": turn + 1})


def door_row(secret: int = 2, id: str = "d1") -> str:
    return json.dumps({"id": id, "secret": secret})


def payload(prompt: Any, rollout: str = "r1", **extra: Any) -> dict[str, Any]:
    return {"prompt": prompt, "metadata": {"jobArn": JOB_ARN, "rolloutId": rollout}, **extra}


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Static fake credentials, no profile, no metadata service; a fresh process session."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "RFT_RUNTIME_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLEEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-key-for-tests")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/agentrft-test")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/agentrft-test")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    auth.reset_shared_session()
    yield
    auth.reset_shared_session()


class Served:
    """The app under uvicorn on 127.0.0.1, plus what it was built with."""

    def __init__(self, app: Any, tokens: TokenProviders) -> None:
        self.app = app
        self.tokens = tokens
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def invoke(self, body: Any, *, raw: bytes | None = None) -> httpx.Response:
        with httpx.Client(base_url=self.url, timeout=60) as client:
            if raw is not None:
                return client.post("/invocations", content=raw)
            return client.post("/invocations", json=body)


def serve(task: Task, **kwargs: Any) -> Served:
    tokens = TokenProviders()
    # Fast retries: a down endpoint must not cost the suite seconds of backoff.
    factory = functools.partial(openai_policy_factory, max_retries=1, backoff_base_s=0.01)
    reporter = JobRuntimeReporter(
        client_config={"retries": {"mode": "standard", "max_attempts": 1}}
    )
    app = build_app(task, policy_factory=factory, tokens=tokens, reporter=reporter, **kwargs)
    return Served(app, tokens)


def loopback(**kwargs: Any) -> LoopbackJobRuntime:
    return LoopbackJobRuntime(ScriptedPolicy(door_script), **kwargs)


def with_endpoint(body: dict[str, Any], endpoint: str) -> dict[str, Any]:
    body["metadata"]["endpoint"] = endpoint
    return body


# --- the happy path ------------------------------------------------------------------------


def test_rollout_reports_complete_then_reward_with_the_right_headers(aws: None) -> None:
    with loopback() as jr, serve(DoorTask()) as app:
        resp = app.invoke(with_endpoint(payload(door_row(secret=2)), jr.endpoint))

    assert resp.status_code == 200
    answer = resp.json()
    assert set(answer) == {"reward"}
    seq = [r.path for r in jr.requests]
    assert seq == [
        "/v1/chat/completions",
        "/v1/chat/completions",
        "/complete-rollout",
        "/update-reward",
    ]
    for chat in jr.chat:
        assert chat.headers["x-amzn-sagemaker-job-arn"] == JOB_ARN
        assert chat.headers["x-amzn-sagemaker-trajectory-id"] == "r1"
        token = chat.bearer
        assert token and token.startswith("sagemaker-api-key-")
        presigned = base64.b64decode(token.removeprefix("sagemaker-api-key-")).decode()
        assert presigned.startswith("sagemaker.amazonaws.com/?Action=CallWithBearerToken")
        assert presigned.endswith("&Version=1")
        assert "X-Amz-Signature=" in presigned and "us-east-1%2Fsagemaker" in presigned
        assert chat.body["model"] == "default"
        assert chat.body["tools"][0]["function"]["name"] == "open_door"

    (complete,) = jr.completes
    (update,) = jr.rewards
    assert complete.headers["x-amzn-sagemaker-job-arn"] == JOB_ARN
    assert complete.headers["authorization"].startswith("AWS4-HMAC-SHA256")  # SigV4, boto3
    assert complete.body["TrajectoryId"] == "r1" and complete.body["Status"] == "ready"
    assert complete.body["ClientToken"]
    assert update.headers["x-amzn-sagemaker-job-arn"] == JOB_ARN
    assert update.body["TrajectoryId"] == "r1"
    assert update.body["Rewards"] == [answer["reward"]]  # the recorded reward is the answer
    assert update.body["ClientToken"] != complete.body["ClientToken"]
    assert answer["reward"] == pytest.approx(1.0 + 0.1 * (1 - 2 / 3))  # found on door 2


def test_inference_params_reach_the_model(aws: None) -> None:
    body = payload(
        door_row(secret=1), inferenceParams={"temperature": 0.3, "maxTokens": 777, "top_p": 0.9}
    )
    with loopback() as jr, serve(DoorTask()) as app:
        app.invoke(with_endpoint(body, jr.endpoint))
    sent = jr.chat[0].body
    assert (sent["temperature"], sent["max_tokens"], sent["top_p"]) == (0.3, 777, 0.9)


def test_no_inference_params_means_no_sampling_field(aws: None) -> None:
    """The job's own settings decide (its sampling_max_tokens, the recipe): the runtime
    invents none."""
    with loopback() as jr, serve(DoorTask()) as app:
        resp = app.invoke(with_endpoint(payload(door_row(secret=2)), jr.endpoint))
    assert resp.json()["reward"] > 0 and len(jr.chat) == 2
    for chat in jr.chat:
        assert not {"temperature", "top_p", "max_tokens"} & set(chat.body), chat.body
        assert chat.body["model"] == "default" and chat.body["messages"]


@pytest.mark.parametrize(
    ("params", "sent"),
    [
        ({"inferenceParams": {"maxTokens": 8192}}, {"max_tokens": 8192}),
        ({"inference_params": {"top_p": 0.5, "topP": 0.9}}, {"top_p": 0.5}),  # snake first
        ({"inferenceParams": {"temperature": 0, "max_tokens": None}}, {"temperature": 0.0}),
        ({"inferenceParams": {"temperature": "hot", "topP": 0.95}}, {"top_p": 0.95}),
    ],
    ids=["camel-max-tokens-only", "snake-spelling", "temperature-zero", "bad-value-dropped"],
)
def test_exactly_the_inference_params_set_are_sent(
    aws: None, params: dict[str, Any], sent: dict[str, Any]
) -> None:
    with loopback() as jr, serve(DoorTask()) as app:
        app.invoke(with_endpoint(payload(door_row(secret=1), **params), jr.endpoint))
    body = jr.chat[0].body
    assert {k: body[k] for k in ("temperature", "top_p", "max_tokens") if k in body} == sent


def test_the_loops_sampling_never_overrides_the_jobs() -> None:
    from agentrft.backends.sagemaker.runtime.payload import parse_payload

    job = parse_payload(
        {**payload("{}"), "inferenceParams": {"temperature": 0.9}}, {"AWS_REGION": "us-east-1"}
    )
    policy = openai_policy_factory(job, TokenProviders().for_region("us-east-1"))
    from_loop = {"model": "default", "messages": [], "temperature": 0.2, "top_p": 0.5,
                 "max_tokens": 99, "tools": []}  # fmt: skip
    assert policy.job_body(from_loop) == {
        "model": "default", "messages": [], "tools": [], "temperature": 0.9
    }  # fmt: skip


class PerTurnTask(DoorTask):
    """DoorTask whose per-turn list is whatever `make(turns)` returns."""

    def __init__(self, make: Any) -> None:
        super().__init__()
        self.make = make

    def reward(self, env: Environment, trajectory: Trajectory) -> RewardResult:
        result = super().reward(env, trajectory)
        return result.model_copy(update={"per_turn": self.make(len(trajectory.turns))})


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda n: [0.5] * (n + 1), "3 per-turn rewards for 2 policy calls"),
        (lambda n: [0.5, float("nan")][:n], "per-turn reward 1 = nan, not finite"),
        (lambda n: [0.5, float("inf")][:n], "per-turn reward 1 = inf, not finite"),
    ],
    ids=["too-long", "nan", "inf"],
)
def test_per_turn_rewards_that_do_not_fit_become_the_total(
    aws: None, caplog: pytest.LogCaptureFixture, make: Any, why: str
) -> None:
    with (
        caplog.at_level("WARNING", logger="agentrft.runtime"),
        loopback() as jr,
        serve(PerTurnTask(make)) as app,
    ):
        resp = app.invoke(with_endpoint(payload(door_row(secret=2)), jr.endpoint))
    total = resp.json()["reward"]
    assert len(jr.chat) == 2
    assert jr.rewards[0].body["Rewards"] == [total]
    assert any(why in r.getMessage() and "episode total" in r.getMessage() for r in caplog.records)


def test_per_turn_rewards_go_to_update_reward(aws: None) -> None:
    with loopback() as jr, serve(DoorTask(per_turn=True)) as app:
        resp = app.invoke(with_endpoint(payload(door_row(secret=3)), jr.endpoint))
    assert jr.rewards[0].body["Rewards"] == [0.25, 0.25, 0.25]  # one per turn
    assert resp.json()["reward"] == pytest.approx(1.0)  # the answer is the episode total


def test_sdk_metadata_spellings_and_env_endpoint(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with loopback() as jr, serve(DoorTask()) as app:
        monkeypatch.setenv("RFT_RUNTIME_ENDPOINT", jr.endpoint)  # read per invocation
        body = {
            "prompt": door_row(secret=1),
            "metadata": {"job_arn": JOB_ARN, "trajectory_id": "t-7", "region": "us-east-1"},
        }
        resp = app.invoke(body)
    assert resp.status_code == 200
    assert [r.path for r in jr.for_trajectory("t-7")][-2:] == [
        "/complete-rollout",
        "/update-reward",
    ]
    assert jr.rewards[0].body["Rewards"] == [resp.json()["reward"]]


# --- the wordle plugin, when installed ---------------------------------------------------


def test_wordle_smoke_and_training_payloads(aws: None) -> None:
    pytest.importorskip("agentrft_wordle")
    from agentrft.plugins import get_plugins

    task = get_plugins().task("wordle")
    rows = task.make_dataset("train", 3, 0)
    with LoopbackJobRuntime(task.expert()) as jr, serve(task) as app:
        smoke = app.invoke(with_endpoint(payload(rows[0]["prompt"]), jr.endpoint))
        trained = [
            app.invoke(
                with_endpoint(
                    payload(
                        row["prompt"],
                        rollout=f"w{i}",
                        inferenceParams={"temperature": 1.0, "max_tokens": 4096, "top_p": 1.0},
                    ),
                    jr.endpoint,
                )
            )
            for i, row in enumerate(rows[1:], 1)
        ]
    for rollout, row, resp in zip(["r1", "w1", "w2"], rows, [smoke, *trained], strict=True):
        reward = resp.json()["reward"]
        assert reward >= 1.01, "the expert solves every word"
        seen = jr.for_trajectory(rollout)
        assert [r.path for r in seen][-2:] == ["/complete-rollout", "/update-reward"]
        assert seen[-1].body["Rewards"] == [reward]
        answer = json.loads(row["prompt"])["answer"]
        first_chat = next(r for r in seen if r.path == "/v1/chat/completions")
        shown = " ".join(m["content"] or "" for m in first_chat.body["messages"])
        assert answer not in shown.lower()  # the hidden answer never reaches the model


# --- faults: a reward every time, the server stays up ------------------------------------


def test_403_then_success_re_signs_the_token_and_the_rollout_succeeds(aws: None) -> None:
    calls = {"n": 0}

    def deny_first(rec: Recorded) -> tuple[int, str] | None:
        calls["n"] += 1
        return (403, "authentication failed") if calls["n"] == 1 else None

    with loopback(on_chat=deny_first) as jr, serve(DoorTask()) as app:
        resp = app.invoke(with_endpoint(payload(door_row(secret=1)), jr.endpoint))
        mints = app.tokens.mints
    assert resp.json()["reward"] == pytest.approx(1.0 + 0.1 * (1 - 1 / 3))
    assert mints == 2  # the first token, then exactly one re-sign after the 403
    assert len(jr.chat) == 2 and jr.completes[0].body["Status"] == "ready"


def test_endpoint_down_gives_the_lowest_reward(aws: None) -> None:
    with serve(DoorTask()) as app:
        down = "http://127.0.0.1:9"  # discard port: connection refused
        resp = app.invoke(with_endpoint(payload(door_row(), diagnose=True), down))
        assert resp.status_code == 200
        answer = resp.json()
        assert answer["reward"] == -1.5
        diag = answer["diagnostics"]
        assert diag["model_reached"] is False
        assert [r["operation"] for r in diag["reports"]] == ["CompleteRollout"]
        assert diag["reports"][0]["ok"] is False
        assert app.invoke(None, raw=b"").status_code == 200  # still serving


def test_model_never_reached_reports_failed_with_the_lowest_reward(aws: None) -> None:
    with loopback(on_chat=lambda rec: (500, "model crashed")) as jr, serve(DoorTask()) as app:
        resp = app.invoke(with_endpoint(payload(door_row()), jr.endpoint))
    assert resp.json() == {"reward": -1.5}
    assert jr.completes[0].body["Status"] == "failed"
    assert jr.rewards[0].body["Rewards"] == [-1.5]


@pytest.mark.parametrize(
    "raw",
    [
        b"this is not json",
        b"[1, 2, 3]",
        b'"just a string"',
        b"{}",
        b'{"prompt": 42, "metadata": "nope"}',
        b'{"prompt": "{}", "metadata": {"rolloutId": "r1"}}',
    ],
    ids=["not-json", "list", "string", "empty", "wrong-types", "no-job-arn"],
)
def test_malformed_payloads_get_the_lowest_reward(aws: None, raw: bytes) -> None:
    with loopback() as jr, serve(DoorTask()) as app:
        resp = app.invoke(None, raw=raw)
        assert resp.status_code == 200
        assert resp.json() == {"reward": -1.5}
        assert jr.requests == []  # nothing to address: nothing sent
        assert httpx.get(app.url + "/ping").status_code == 200


def test_prompt_that_is_not_the_tasks_json_reports_failed(aws: None) -> None:
    with loopback() as jr, serve(DoorTask()) as app:
        for prompt in ["Guess the 5-letter word", '{"prompt": "no secret here"}']:
            resp = app.invoke(with_endpoint(payload(prompt, diagnose=True), jr.endpoint))
            answer = resp.json()
            assert answer["reward"] == -1.5
            assert "bad_input" in answer["diagnostics"]["failures"][0]
        assert jr.chat == []  # the model is never asked about a row the task cannot read
        assert [r.body["Status"] for r in jr.completes] == ["failed", "failed"]
        assert [r.body["Rewards"] for r in jr.rewards] == [[-1.5], [-1.5]]


def test_could_not_find_job_still_answers_a_reward(aws: None) -> None:
    """What the smoke test sees in a real account: the job does not exist."""

    def no_job(rec: Recorded) -> tuple[int, str]:
        return (400, "Could not find job.")

    with loopback(on_chat=no_job, on_report=no_job) as jr, serve(DoorTask()) as app:
        resp = app.invoke(with_endpoint(payload(door_row(), diagnose=True), jr.endpoint))
    answer = resp.json()
    assert answer["reward"] == -1.5
    (report,) = answer["diagnostics"]["reports"]
    assert (report["status"], report["message"]) == (400, "Could not find job.")
    assert len(jr.rewards) == 0  # UpdateReward is pointless after a 400 on CompleteRollout


def test_a_crashing_policy_factory_still_reports_and_answers(aws: None) -> None:
    def broken(payload: Any, tokens: Any) -> Any:
        raise RuntimeError("boom")

    with loopback() as jr, serve(DoorTask()) as app:
        app.app.runner.policy_factory = broken
        resp = app.invoke(with_endpoint(payload(door_row()), jr.endpoint))
    assert resp.json() == {"reward": -1.5}
    assert [r.body["Status"] for r in jr.completes] == ["failed"]
    assert [r.body["Rewards"] for r in jr.rewards] == [[-1.5]]


def test_ping_says_busy_while_a_rollout_runs(aws: None) -> None:
    started = threading.Event()

    def slow_model(rec: Recorded) -> None:
        started.set()
        time.sleep(0.5)  # the model thinks; /ping must answer meanwhile
        return None

    with loopback(on_chat=slow_model) as jr, serve(DoorTask()) as app:
        assert httpx.get(app.url + "/ping").json()["status"] == "Healthy"
        worker = threading.Thread(
            target=app.invoke, args=(with_endpoint(payload(door_row(secret=1)), jr.endpoint),)
        )
        worker.start()
        assert started.wait(10)
        busy = httpx.get(app.url + "/ping", timeout=5).json()["status"]
        worker.join(30)
        idle = httpx.get(app.url + "/ping").json()["status"]
    assert (busy, idle) == ("HealthyBusy", "Healthy")


# --- concurrency -----------------------------------------------------------------------------


def test_64_concurrent_invocations_share_one_session_and_one_token(aws: None) -> None:
    n = 64

    async def fire(url: str, endpoint: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            return await asyncio.gather(
                *(
                    client.post(
                        "/invocations",
                        json=with_endpoint(
                            payload(door_row(secret=1 + i % 3, id=f"d{i}"), rollout=f"c{i}"),
                            endpoint,
                        ),
                    )
                    for i in range(n)
                )
            )

    with loopback() as jr, serve(DoorTask()) as app:
        responses = asyncio.run(fire(app.url, jr.endpoint))
        mints = app.tokens.mints

    assert all(r.status_code == 200 for r in responses)
    assert auth.sessions_created == 1  # one credential session for the whole process
    assert mints == 1  # one token mint in the cache window, shared by all 64 rollouts
    assert len({r.bearer for r in jr.chat}) == 1
    for i, resp in enumerate(responses):
        seen = jr.for_trajectory(f"c{i}")
        assert [r.path for r in seen][-2:] == ["/complete-rollout", "/update-reward"]
        assert seen[-1].body["Rewards"] == [resp.json()["reward"]]
        assert all(r.headers[JOB_ARN_HEADER.lower()] == JOB_ARN for r in seen)


# --- the smoke test through the whole chain ------------------------------------------------


class AgentCoreProxy:
    """Stands in for AgentCore's data plane: InvokeAgentRuntime -> the app's /invocations."""

    def __init__(self, app_url: str, hang_s: float = 0.0) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self
        self.paths: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.paths.append(self.path)
                if hang_s:
                    time.sleep(hang_s)  # a server that never started answers nothing
                out = httpx.post(app_url + "/invocations", content=body, timeout=60).content
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def agentcore_client(url: str, read_timeout: float = 30) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "bedrock-agentcore",
        region_name="us-east-1",
        endpoint_url=url,
        config=Config(read_timeout=read_timeout, retries={"max_attempts": 1}),
    )


RUNTIME_ARN = "arn:aws:bedrock-agentcore:us-east-1:111122223333:runtime/agentrft_doors-AbCdE12345"


def test_smoke_test_through_the_chain_says_it_works(
    aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentrft.backends.sagemaker.jobs.smoke import run_smoke_test

    def no_job(rec: Recorded) -> tuple[int, str]:
        return (400, "Could not find job.")

    with loopback(on_chat=no_job, on_report=no_job) as jr, serve(DoorTask()) as app:
        monkeypatch.setenv("RFT_RUNTIME_ENDPOINT", jr.endpoint)
        proxy = AgentCoreProxy(app.url)
        try:
            result = run_smoke_test(
                agentcore_client(proxy.url),
                runtime_arn=RUNTIME_ARN,
                prompt=door_row(),
                account="111122223333",
                lowest=-1.5,
            )
        finally:
            proxy.close()
    assert result.ok, "\n".join(result.lines)
    assert result.reward == -1.5
    assert proxy.paths[0].startswith("/runtimes/arn%3Aaws%3Abedrock-agentcore")
    assert (
        jr.chat[0]
        .headers["x-amzn-sagemaker-job-arn"]
        .endswith(":111122223333:job/AgentRFT/smoke-test")
    )


def test_smoke_test_timeout_means_the_server_never_started(aws: None) -> None:
    from agentrft.backends.sagemaker.jobs.smoke import run_smoke_test

    with serve(DoorTask()) as app:
        proxy = AgentCoreProxy(app.url, hang_s=1.5)
        try:
            result = run_smoke_test(
                agentcore_client(proxy.url, read_timeout=0.3),
                runtime_arn=RUNTIME_ARN,
                prompt=door_row(),
                account="111122223333",
                lowest=-1.5,
            )
        finally:
            proxy.close()
    assert not result.ok
    assert "never started" in "\n".join(result.lines)


# --- any installed task -------------------------------------------------------------------------


def _installed_tasks() -> list[str]:
    from agentrft.plugins import get_plugins

    try:
        return list(get_plugins().task_classes())
    except Exception:  # a broken plugin set is other tests' business
        return []


@pytest.fixture
def loopback_judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """A rubric judge on 127.0.0.1 named by the `AGENTRFT_JUDGE_*` variables a judged task
    reads (the runtime scores each rollout alone, so the rubric mode)."""
    with FakeOpenAIServer(rubric_judge(lambda view: 0.5)) as server:
        monkeypatch.setenv("AGENTRFT_JUDGE_MODEL", "judge")
        monkeypatch.setenv("AGENTRFT_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("AGENTRFT_JUDGE_API_KEY", "sk-loopback-judge")
        monkeypatch.setenv("AGENTRFT_JUDGE_MODE", "rubric")
        yield server


@pytest.mark.parametrize("name", _installed_tasks() or ["none-installed"])
def test_any_installed_task_plays_through_the_runtime_with_its_expert(
    aws: None, loopback_judge: FakeOpenAIServer, name: str
) -> None:
    from agentrft.plugins import get_plugins

    if name == "none-installed":
        pytest.skip("no task plugins installed")
    task = get_plugins().task(name)  # a judged task takes its judge from loopback_judge
    expert = task.expert()
    try:
        rows = task.make_dataset("train", 1, 0)
    except Exception:
        rows = []
    if expert is None or not rows:
        pytest.skip(f"task {name!r} has no expert or no dataset")
    with LoopbackJobRuntime(expert) as jr, serve(task) as app:
        answer = app.invoke(with_endpoint(payload(rows[0]["prompt"]), jr.endpoint)).json()
    assert jr.chat, "the model was asked"
    assert [r.path for r in jr.requests][-2:] == ["/complete-rollout", "/update-reward"]
    assert jr.completes[0].body["Status"] == "ready"
    sent = jr.rewards[0].body["Rewards"]
    result_total = answer["reward"]
    assert sent == [result_total] or len(sent) == len(jr.chat)  # the total, or one per turn
    assert result_total > task.lowest_reward().total  # the expert does better than no play
