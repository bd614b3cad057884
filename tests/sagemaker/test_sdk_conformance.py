"""agentrft against AWS's own SageMaker SDK (`sagemaker-train` 1.27, `sagemaker-core` 2.27).

The SDK lives in its own venv (scripts/sagemaker_sdk_env.sh builds .venv-sagemaker-sdk; it
is no dependency of agentrft), so `sdk_driver.py` runs it in a subprocess and prints what it
did as JSON; these tests diff that against agentrft driven through the same fakes:

- rollouts: the SDK's `sagemaker_rft_handler` + `RolloutFeedbackClient` + `wrap_model`'s
  header and inference-param injection + `generate_token`, and agentrft's runtime, against
  one `LoopbackJobRuntime` recorder: paths, methods, headers, the bearer token's shape,
  bodies and order, for a success, inferenceParams, a per-turn list reward, a failing
  policy and CompleteRollout answering 404, "not in valid status", 403 and 500;
- training: the launch post's run through `MultiTurnRLTrainer` (every AWS call answered
  from canned responses after botocore's model validated it) and through
  `agentrft train --dry-run`, request against request.

What differs on purpose is asserted as such here and listed with its reason in
docs/sagemaker-runtime.md ("Measured against AWS's SDK").
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

from agentrft import Environment, RewardResult, Task, TaskInputError, Tier, TieredReward, tool
from agentrft.backends.sagemaker.jobs import recipe
from agentrft.backends.sagemaker.runtime import auth
from agentrft.backends.sagemaker.runtime.app import RolloutRunner, openai_policy_factory
from agentrft.backends.sagemaker.runtime.auth import TokenProviders
from agentrft.backends.sagemaker.runtime.job_runtime import JobRuntimeReporter
from agentrft.backends.sagemaker.testing.loopback import LoopbackJobRuntime, Recorded
from agentrft.backends.sagemaker.testing.stubbed import describe_job_response, hub_content_response
from agentrft.messages import Message
from agentrft.policies.scripted import ScriptedPolicy, call
from agentrft.trajectory import Trajectory

pytestmark = pytest.mark.sdk

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("sdk_driver.py")
SDK_PYTHON = os.environ.get("AGENTRFT_SAGEMAKER_SDK_PYTHON") or str(
    REPO / ".venv-sagemaker-sdk" / "bin" / "python"
)
if not Path(SDK_PYTHON).exists():
    if os.environ.get("AGENTRFT_REQUIRE_SAGEMAKER_SDK") == "1":  # CI built it: must run
        raise RuntimeError(f"AGENTRFT_REQUIRE_SAGEMAKER_SDK=1 but {SDK_PYTHON} does not exist")
    pytest.skip(
        f"AWS's SageMaker SDK venv is absent ({SDK_PYTHON}): build it with "
        "`bash scripts/sagemaker_sdk_env.sh` (CI does, then runs these)",
        allow_module_level=True,
    )

ACCOUNT = "111122223333"
REGION = "us-east-1"
JOB_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:job/AgentRFT/conformance"
KEY_ID = "AKIDAGENTRFTSDKTEST0"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": KEY_ID,
    "AWS_SECRET_ACCESS_KEY": "fake-secret-for-the-conformance-tests",
    "AWS_SESSION_TOKEN": "fake-session-token",
    "AWS_REGION": REGION,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/nonexistent/agentrft-sdk-test",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/agentrft-sdk-test",
}
SAMPLING = ("temperature", "top_p", "max_tokens")


# -- the task agentrft plays (the SDK side plays the same number of policy calls) -----------


class DoorEnv(Environment):
    def __init__(self, secret: int) -> None:
        super().__init__()
        self.secret = secret
        self.opened: list[int] = []

    @tool
    def open_door(self, door: int) -> str:
        """Open one door.

        Args:
            door: the door's number, from 1 to 3.
        """
        self.opened.append(door)
        self.done = door == self.secret or len(self.opened) >= 3
        return "The prize is here!" if door == self.secret else "Empty."


class DoorTask(Task[int]):
    name = "doors"
    tiers = TieredReward(
        [
            Tier(name="found", base=1.0, solved=True),
            Tier(name="lost", base=-0.5),
            Tier(name="no_play", base=-1.5),
        ]
    )

    def __init__(self, per_turn: float | None = None) -> None:
        self.per_turn = per_turn

    def parse(self, prompt: str) -> int:
        try:
            return int(json.loads(prompt)["secret"])
        except Exception as exc:
            raise TaskInputError(f"not a doors row: {exc}") from None

    def environment(self, instance: int) -> DoorEnv:
        return DoorEnv(instance)

    def user_prompt(self, instance: int) -> str:
        return "One of doors 1-3 hides a prize. Open doors with open_door."

    def reward(self, env: Environment, trajectory: Trajectory) -> RewardResult:
        assert isinstance(env, DoorEnv)
        turns = len(trajectory.turns)
        per_turn = [self.per_turn] * turns if self.per_turn is not None else None
        tier = "found" if env.secret in env.opened else "lost"
        return self.tiers.score(tier, per_turn=per_turn)


def door_script(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
    """Opens doors 1, 2, 3 in order: the prize behind door 2 takes two policy calls."""
    return call("open_door", {"door": sum(m.role == "assistant" for m in messages) + 1})


def body(endpoint: str, rollout: str, **extra: Any) -> dict[str, Any]:
    return {
        "prompt": json.dumps({"secret": 2}),
        "metadata": {"jobArn": JOB_ARN, "rolloutId": rollout, "endpoint": endpoint,
                     "region": REGION},
        **extra,
    }  # fmt: skip


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> Any:
    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "RFT_RUNTIME_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    auth.reset_shared_session()
    yield
    auth.reset_shared_session()


def drive(command: str, scenario: dict[str, Any], tmp: Path) -> dict[str, Any]:
    """Run the SDK driver in the SDK's venv; its JSON answer."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp), **AWS_ENV}
    proc = subprocess.run(
        [SDK_PYTHON, str(DRIVER), command],
        input=json.dumps(scenario),
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["blocked"] == [], f"the SDK tried the network (telemetry?): {out['blocked']}"
    return out


def play_agentrft(
    task: Task[Any], payload: dict[str, Any], *, report_retries: int = 0
) -> dict[str, Any]:
    runner = RolloutRunner(
        task,
        policy_factory=functools.partial(openai_policy_factory, max_retries=1, backoff_base_s=0.01),
        tokens=TokenProviders(),
        reporter=JobRuntimeReporter(
            # botocore's max_attempts counts retries after the first try.
            client_config={"retries": {"mode": "standard", "max_attempts": report_retries}}
        ),
    )
    return asyncio.run(runner.handle(payload))


def trace(recorder: LoopbackJobRuntime, rollout: str) -> list[Recorded]:
    return recorder.for_trajectory(rollout) or [
        r for r in recorder.requests if r.body and (r.body or {}).get("TrajectoryId") == rollout
    ]


def token_shape(token: str) -> dict[str, Any]:
    """The parts of a bearer token that must agree: all but the signature and timestamps."""
    assert token.startswith("sagemaker-api-key-")
    presigned = base64.b64decode(token.removeprefix("sagemaker-api-key-")).decode()
    where, _, query = presigned.partition("?")
    assert query.endswith("&Version=1")
    params = parse_qsl(query.removesuffix("&Version=1"), keep_blank_values=True)
    values = dict(params)
    key_id, _date, region, service, terminal = values["X-Amz-Credential"].split("/")
    return {
        "where": where,
        "order": [k for k, _ in params],
        "action": values["Action"],
        "algorithm": values["X-Amz-Algorithm"],
        "credential": (key_id, region, service, terminal),
        "signed_headers": values["X-Amz-SignedHeaders"],
        "session_token": values.get("X-Amz-Security-Token"),
        "expires": int(values["X-Amz-Expires"]),
    }


def chat_view(rec: Recorded) -> dict[str, Any]:
    return {
        "method": rec.method,
        "job_arn": rec.headers.get("x-amzn-sagemaker-job-arn"),
        "trajectory": rec.headers.get("x-amzn-sagemaker-trajectory-id"),
        "auth_scheme": rec.headers.get("authorization", "").split(" ")[0],
        "model": rec.body["model"],
        "sampling": {k: rec.body[k] for k in SAMPLING if k in rec.body},
    }


def report_view(rec: Recorded) -> dict[str, Any]:
    """A report, with JobArn wherever it was sent (header or body)."""
    b = dict(rec.body)
    return {
        "method": rec.method,
        "path": rec.path,
        "job_arn": rec.headers.get("x-amzn-sagemaker-job-arn") or b.get("JobArn"),
        **{k: b[k] for k in ("TrajectoryId", "Status", "Rewards") if k in b},
    }


def both(
    tmp: Path,
    *,
    task: Task[Any] | None = None,
    sdk_reward: Any,
    policy_calls: int = 2,
    extra: dict[str, Any] | None = None,
    on_chat: Any = None,
    on_report: Any = None,
    report_retries: int = 0,
    port_with_404: bool = False,
) -> tuple[dict[str, Any], list[Recorded], dict[str, Any], list[Recorded]]:
    """One rollout by agentrft (rollout "ours") and one by the SDK ("sdk"), one recorder.

    The SDK reads any report error whose text holds "404" as a 404, and its text holds the URL:
    a loopback port such as 40412 turns a 500 into "not found" (then it sends UpdateReward).
    So the recorder listens on a port without "404", unless `port_with_404` asks for one.
    """
    with started_loopback(
        LoopbackJobRuntime(ScriptedPolicy(door_script), on_chat=on_chat, on_report=on_report),
        want_404=port_with_404,
    ) as jr:
        ours = play_agentrft(
            task or DoorTask(), body(jr.endpoint, "ours", **(extra or {})),
            report_retries=report_retries,
        )  # fmt: skip
        scenario = {
            "payload": body(jr.endpoint, "sdk", **(extra or {})),
            "policy_calls": policy_calls,
            "reward": sdk_reward,
        }
        sdk = drive("rollout", scenario, tmp)
        return ours, trace(jr, "ours"), sdk, trace(jr, "sdk")


@contextlib.contextmanager
def started_loopback(jr: LoopbackJobRuntime, *, want_404: bool) -> Iterator[LoopbackJobRuntime]:
    """`jr` started on a free port that holds "404" exactly when `want_404` says so."""
    # Ports to try when "404" is wanted; otherwise the system picks (and rarely, retries).
    candidates = iter([40400 + i for i in range(100)] + [14040 + i for i in range(10)])
    for _ in range(110):
        jr.port = next(candidates) if want_404 else 0
        try:
            jr.start()
        except OSError:  # that port is taken: the next one
            continue
        if ("404" in jr.endpoint) == want_404:
            break
        jr.stop()
    else:
        pytest.fail(f"no free loopback port (wanted one with '404': {want_404})")
    try:
        yield jr
    finally:
        jr.stop()


def paths(trace: list[Recorded]) -> list[str]:
    return [r.path for r in trace]


CHAT = "/v1/chat/completions"
REPORTS = ["/complete-rollout", "/update-reward"]


# -- rollouts ----------------------------------------------------------------------------


def test_a_successful_rollout_agrees_with_the_sdk(aws_env: None, tmp_path: Path) -> None:
    ours, ours_t, sdk, sdk_t = both(tmp_path, sdk_reward=1.0)
    assert ours == {"reward": 1.0} and sdk["answer"] == {"reward": 1.0}
    assert paths(ours_t) == paths(sdk_t) == [CHAT, CHAT, *REPORTS]  # order
    for mine, theirs in zip(ours_t[:2], sdk_t[:2], strict=True):
        a, b = chat_view(mine), chat_view(theirs)
        assert a["trajectory"] == "ours" and b["trajectory"] == "sdk"
        a.pop("trajectory"), b.pop("trajectory")
        assert a == b == {"method": "POST", "job_arn": JOB_ARN, "auth_scheme": "Bearer",
                          "model": "default", "sampling": {}}  # fmt: skip
        shape_a = token_shape(mine.bearer or "")
        shape_b = token_shape(theirs.bearer or "")
        # Kept: agentrft signs for 1 h (re-signed every 5 min), the SDK for 12 h.
        assert (shape_a.pop("expires"), shape_b.pop("expires")) == (3600, 43200)
        assert shape_a == shape_b
        assert shape_a["credential"] == (KEY_ID, REGION, "sagemaker", "aws4_request")
        assert shape_a["where"] == "sagemaker.amazonaws.com/"
        assert shape_a["session_token"] == "fake-session-token"
    complete_a, reward_a = (report_view(r) for r in ours_t[2:])
    complete_b, reward_b = (report_view(r) for r in sdk_t[2:])
    assert {**complete_a, "TrajectoryId": "sdk"} == complete_b == {
        "method": "POST", "path": "/complete-rollout", "job_arn": JOB_ARN,
        "TrajectoryId": "sdk", "Status": "ready",
    }  # fmt: skip
    assert {**reward_a, "TrajectoryId": "sdk"} == reward_b
    assert reward_b["Rewards"] == [1.0]
    # Kept: botocore's model signs reports with SigV4, JobArn in its header, a ClientToken
    # per call; the SDK sends a bearer POST with JobArn in the body and no ClientToken.
    for r in ours_t[2:]:
        assert r.headers["authorization"].startswith("AWS4-HMAC-SHA256")
        assert r.headers["x-amzn-sagemaker-job-arn"] == JOB_ARN and "JobArn" not in r.body
        assert r.body["ClientToken"]
    for r in sdk_t[2:]:
        assert r.headers["authorization"].startswith("Bearer sagemaker-api-key-")
        assert "x-amzn-sagemaker-job-arn" not in r.headers and r.body["JobArn"] == JOB_ARN
        assert "ClientToken" not in r.body


def test_inference_params_reach_the_model_the_same_way(aws_env: None, tmp_path: Path) -> None:
    params = {"inferenceParams": {"temperature": 0.3, "maxTokens": 777, "topP": 0.9}}
    _, ours_t, _, sdk_t = both(tmp_path, sdk_reward=1.0, extra=params)
    for mine, theirs in zip(ours_t[:2], sdk_t[:2], strict=True):
        assert chat_view(mine)["sampling"] == chat_view(theirs)["sampling"] == {
            "temperature": 0.3, "max_tokens": 777, "top_p": 0.9
        }  # fmt: skip


def test_a_per_turn_list_reward_agrees(aws_env: None, tmp_path: Path) -> None:
    ours, ours_t, sdk, sdk_t = both(tmp_path, task=DoorTask(per_turn=0.25), sdk_reward=[0.25, 0.25])
    assert paths(ours_t) == paths(sdk_t) == [CHAT, CHAT, *REPORTS]
    assert ours_t[-1].body["Rewards"] == sdk_t[-1].body["Rewards"] == [0.25, 0.25]
    assert ours_t[-2].body["Status"] == sdk_t[-2].body["Status"] == "ready"
    # Both answer the invocation with what the handler returned: agentrft the total.
    assert ours == {"reward": 1.0} and sdk["answer"] == {"reward": [0.25, 0.25]}


def test_a_failing_policy_reports_failed_on_both(aws_env: None, tmp_path: Path) -> None:
    def down(rec: Recorded) -> tuple[int, str]:
        return (500, "model crashed")

    ours, ours_t, sdk, sdk_t = both(tmp_path, sdk_reward=1.0, on_chat=down)
    assert paths(ours_t)[-2:] == paths(sdk_t)[-2:] == REPORTS
    assert ours_t[-2].body["Status"] == sdk_t[-2].body["Status"] == "failed"
    # Kept: agentrft retries the policy (here once), the SDK's handler does not.
    assert paths(ours_t).count(CHAT) == 2 and paths(sdk_t).count(CHAT) == 1
    # Kept: agentrft reports the task's floor and answers it; the SDK reports 0.0 (the
    # floor of nothing: a failed rollout would outscore a played losing one) and raises.
    assert ours_t[-1].body["Rewards"] == [-1.5] and ours == {"reward": -1.5}
    assert sdk_t[-1].body["Rewards"] == [0.0] and "HTTPError" in sdk["raised"]


def fail_complete(status: int, message: str) -> Any:
    def hook(rec: Recorded) -> tuple[int, str] | None:
        return (status, message) if rec.path == "/complete-rollout" else None

    return hook


@pytest.mark.parametrize(
    ("status", "message"),
    [(404, "Trajectory not found"), (403, "User is not authorized")],
    ids=["404", "403"],
)
def test_report_errors_the_sdk_and_agentrft_handle_alike(
    aws_env: None, tmp_path: Path, status: int, message: str
) -> None:
    ours, ours_t, sdk, sdk_t = both(
        tmp_path, sdk_reward=1.0, on_report=fail_complete(status, message)
    )
    # 404: the trajectory is unknown, UpdateReward still goes; 403: it would be refused too.
    expected = [CHAT, CHAT, *REPORTS] if status == 404 else [CHAT, CHAT, REPORTS[0]]
    assert paths(ours_t) == paths(sdk_t) == expected
    assert ours == {"reward": 1.0} and sdk["answer"] == {"reward": 1.0}


def test_not_in_valid_status_agentrft_follows_the_sdks_intent(
    aws_env: None, tmp_path: Path
) -> None:
    """A retried invocation: the trajectory already moved on. The SDK means to go on to
    UpdateReward (its markers list "not in valid status"), but it looks for the marker in
    requests' HTTPError text, which never carries the response body, so it stops instead.
    agentrft reads the service's message and sends UpdateReward (kept on purpose)."""
    ours, ours_t, sdk, sdk_t = both(
        tmp_path,
        sdk_reward=1.0,
        on_report=fail_complete(400, "Trajectory sdk is not in valid status for completion"),
    )
    assert paths(ours_t) == [CHAT, CHAT, *REPORTS]
    assert paths(sdk_t) == [CHAT, CHAT, REPORTS[0]]
    assert ours == sdk["answer"] == {"reward": 1.0}  # a reporting error never fails the answer


def test_409_cannot_transition_counts_as_completed_for_agentrft_only(
    aws_env: None, tmp_path: Path
) -> None:
    ours, ours_t, sdk, sdk_t = both(
        tmp_path,
        sdk_reward=1.0,
        on_report=fail_complete(409, "Cannot transition trajectory sdk from READY to READY"),
    )
    assert paths(ours_t) == [CHAT, CHAT, *REPORTS]  # the trajectory moved on: reward it
    assert paths(sdk_t) == [CHAT, CHAT, REPORTS[0]]
    assert ours == sdk["answer"] == {"reward": 1.0}


def test_a_500_agentrft_retries_with_the_same_client_token(aws_env: None, tmp_path: Path) -> None:
    ours, ours_t, sdk, sdk_t = both(
        tmp_path, sdk_reward=1.0, on_report=fail_complete(500, "internal"), report_retries=1
    )
    # Kept: botocore retries a 5xx with the same ClientToken; the SDK tries once. Neither
    # sends UpdateReward after CompleteRollout failed for good.
    assert paths(ours_t) == [CHAT, CHAT, REPORTS[0], REPORTS[0]]
    assert ours_t[2].body["ClientToken"] == ours_t[3].body["ClientToken"]
    assert paths(sdk_t) == [CHAT, CHAT, REPORTS[0]]
    assert ours == sdk["answer"] == {"reward": 1.0}


def test_the_sdk_reads_a_500_as_a_404_when_its_url_holds_404(aws_env: None, tmp_path: Path) -> None:
    """Found when CI drew port 404xx: the SDK matches "404" anywhere in the error's text, URL
    included, so a 500 from such an endpoint is taken for "not found" and UpdateReward follows.
    agentrft reads the status code, so the port changes nothing for it."""
    ours, ours_t, sdk, sdk_t = both(
        tmp_path,
        sdk_reward=1.0,
        on_report=fail_complete(500, "internal"),
        report_retries=1,
        port_with_404=True,
    )
    assert paths(ours_t) == [CHAT, CHAT, REPORTS[0], REPORTS[0]]
    assert paths(sdk_t) == [CHAT, CHAT, *REPORTS]
    assert ours == sdk["answer"] == {"reward": 1.0}


# -- training: the launch post's run ------------------------------------------------------

BASE = "openai-reasoning-gpt-oss-20b"
RUNTIME = f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/wordle_agent-AbCdEfGhIj"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/agentrft-job"
MLFLOW = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:mlflow-app/app-ABC123"
DATA = "s3://my-agentrft-bucket/wordle/"
LAUNCH_HPS = {"sampling_max_tokens": 8192, "max_epochs": 20, "max_steps": 100}


def hub_specs() -> dict[str, Any]:
    """The recipe's override params as the hub serves them, made from recipe.py's template
    (so the SDK's "changed from default" and agentrft's recipe defaults are one table)."""
    template, _ = recipe.template_for(BASE)
    kinds = {"int": "integer", "float": "float", "str": "string", "int_list": "string"}
    specs: dict[str, Any] = {}
    for name, p in template.params.items():
        spec: dict[str, Any] = {"type": kinds[p.kind], "default": p.default_for(BASE)}
        if p.kind == "int_list" and spec["default"] is not None:
            spec["default"] = json.dumps(spec["default"])
        if p.minimum is not None and p.kind != "int_list" and not p.exclusive_minimum:
            spec["min"] = p.minimum
        if p.maximum is not None:
            spec["max"] = p.maximum
        if p.choices is not None:
            spec["enum"] = list(p.choices)
        specs[name] = spec
    return specs


def group(name: str) -> dict[str, Any]:
    return {
        "ModelPackageGroupName": name,
        "ModelPackageGroupArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package-group/{name}",
        "CreationTime": "2026-06-01T00:00:00Z",
        "CreatedBy": {},
        "ModelPackageGroupStatus": "Completed",
    }


def trainer_scenario(hyperparameters: dict[str, Any]) -> dict[str, Any]:
    hub = json.loads(json.dumps(hub_content_response(BASE, "1.2.0"), default=str))
    job = json.loads(json.dumps(describe_job_response("x"), default=str))
    return {
        "trainer": {
            "model": BASE,
            "agent_env": RUNTIME,
            "training_dataset": DATA + "train.jsonl",
            "validation_dataset": DATA + "validation.jsonl",
            "s3_output_path": "s3://my-agentrft-bucket/output/",
            "mlflow_app_arn": MLFLOW,
            "role": ROLE,
        },
        "hyperparameters": hyperparameters,
        "responses": {
            "sts.GetCallerIdentity": {"Account": ACCOUNT, "UserId": "AIDA",
                                      "Arn": f"arn:aws:iam::{ACCOUNT}:user/me"},
            "s3.HeadBucket": {},
            "s3.ListObjectsV2": {"KeyCount": 1, "Contents": [{"Key": "output/x"}]},
            "sagemaker.DescribeHubContent": hub,
            "s3.GetObject": {"__body__": json.dumps(hub_specs())},
            "sagemaker.DescribeModelPackageGroup": [group(f"{BASE}-mtrl-mpg"),
                                                    group(f"{BASE}-mtrl-checkpoint-mpg")],
            "sagemaker.CreateJob": {"JobArn": JOB_ARN},
            "sagemaker.DescribeJob": job,
        },
    }  # fmt: skip


def sdk_create_job(hyperparameters: dict[str, Any], tmp: Path) -> tuple[dict[str, Any], Any]:
    """MultiTurnRLTrainer(...).train(wait=False) with `hyperparameters` set: its CreateJob
    parameters, and every call it made."""
    sdk = drive("train", trainer_scenario(hyperparameters), tmp)
    assert "raised" not in sdk, sdk.get("raised")
    assert all(c["valid"] for c in sdk["calls"])  # botocore's model accepted every request
    (theirs,) = [c["params"] for c in sdk["calls"] if c["call"] == "sagemaker.CreateJob"]
    return theirs, sdk["calls"]


def test_a_value_set_to_todays_default_is_sent_by_agentrft_only(tmp_path: Path) -> None:
    from agentrft.backends.sagemaker.jobs.job_document import training_hyperparameters
    from agentrft.config_model import load_config

    theirs, _ = sdk_create_job({"max_steps": 50, "group_size": 16}, tmp_path)
    doc = json.loads(theirs["JobConfigDocument"])
    assert doc["TrainingConfig"]["HyperParameters"] == {"group_size": "16"}
    ours = training_hyperparameters(load_config(values={"max_steps": 50, "group_size": 16}))
    assert ours == {"max_steps": "50", "group_size": "16"}


def test_the_launch_run_requests_agree_with_multi_turn_rl_trainer(
    aws_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("agentrft_wordle")
    theirs, calls = sdk_create_job(LAUNCH_HPS, tmp_path)

    # agentrft, offline, with the sample launcher's flags, and the network blocked.
    import socket

    from typer.testing import CliRunner

    from agentrft.backends.sagemaker.jobs.job_document import validate_request
    from agentrft.cli.app import create_app
    from agentrft.plugins import load_plugins, use_plugins

    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("blocked")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    args = [
        "train", "--task", "wordle", "--backend", "sagemaker", "--model", BASE,
        "--agent-runtime-arn", RUNTIME, "--train-dataset", DATA + "train.jsonl",
        "--val-dataset", DATA + "validation.jsonl",
        "--s3-output-path", "s3://my-agentrft-bucket/output/", "--mlflow-app-arn", MLFLOW,
        "--role-arn", ROLE, "--set", "sagemaker.base_model_version=1.2.0", "--dry-run",
        *(x for k, v in LAUNCH_HPS.items() for x in ("--set", f"{k}={v}")),
    ]  # fmt: skip
    with use_plugins(load_plugins()):
        result = CliRunner().invoke(create_app(plugins=True), args, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert attempts == []
    text = result.output
    start = text.index("{", text.index("CreateJob request (dry run"))
    ours = json.loads(text[start : text.index("\n\nJobConfigDocument (decoded)")])
    validate_request("CreateJob", ours)

    for key in ("RoleArn", "JobCategory", "JobConfigSchemaVersion"):
        assert ours[key] == theirs[key]
    doc_a, doc_b = (json.loads(r["JobConfigDocument"]) for r in (ours, theirs))
    for section in ("AgentConfig", "InputDataConfig", "OutputDataConfig", "ModelPackageConfig"):
        assert doc_a[section] == doc_b[section], section
    train_a, train_b = doc_a["TrainingConfig"], doc_b["TrainingConfig"]
    for key in ("BaseModelArn", "AcceptEula", "HyperParameters"):
        assert train_a[key] == train_b[key], key
    assert train_b["HyperParameters"] == {k: str(v) for k, v in LAUNCH_HPS.items()}
    assert set(doc_a) == set(doc_b)
    # Kept: agentrft names the job, the MLflow experiment and run, and tags the task; the
    # SDK names the job after the model and tags the hub model.
    assert train_a["MlflowConfig"] == {**train_b["MlflowConfig"],
                                       "MlflowExperimentName": "agentrft-wordle",
                                       "MlflowRunName": ours["JobName"]}  # fmt: skip
    assert ours["JobName"].startswith("agentrft-wordle-")
    assert theirs["JobName"].startswith(f"{BASE}-mtrl-")
    assert ours["Tags"] == [{"Key": "agentrft:task", "Value": "wordle"}]
    assert {t["Key"] for t in theirs["Tags"]} == {
        "sagemaker-sdk:jumpstart-model-id", "sagemaker-sdk:jumpstart-hub-name"
    }  # fmt: skip
    # What the SDK looked up, and agentrft's dry run did not (`--lookups` does the reads).
    looked_up = [c["call"] for c in calls]
    assert "sagemaker.DescribeHubContent" in looked_up and "s3.GetObject" in looked_up
    assert looked_up.count("sagemaker.DescribeModelPackageGroup") == 2
