"""`agentrft smoke-test`: one rollout payload through a deployed runtime, explained.

The payload is a real dataset row of the task with a fake job in YOUR account
(`arn:aws:sagemaker:<region>:<your account>:job/AgentRFT/smoke-test`, rollout `r1`). No
job by that name exists, so a healthy chain ends like this (the public sample's lesson):
the runtime parses the row, signs a bearer token, asks the job runtime, gets 400
"Could not find job.", reports it, and still answers the task's lowest reward (-1.5 for
Wordle). That proves parsing, auth and error reporting without a training job.

Other endings and what they mean:
- 403 "not authorized": the job ARN's account is not the caller's (or the runtime role
  lacks `AmazonSageMakerJobRuntimeAccess`);
- a timeout after ~30 s: the runtime's HTTP server never started (import error in the
  bundle, wrong entry point, or an `@app.entrypoint` that is not the outermost decorator);
- no `reward` in the answer: training jobs on this runtime would fail.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from agentrft.backends.sagemaker.jobs.deploy import RUNTIME_ARN_RE
from agentrft.backends.sagemaker.runtime.main import TASK_ENV

SMOKE_JOB_NAME = "smoke-test"
SMOKE_ROLLOUT = "r1"
#: InvokeAgentRuntime wants a session id of at least 33 characters [model].
SESSION_PREFIX = "agentrft-smoke-"
#: AgentCore gives up on an invocation whose server never answers after about 30 s [sample].
SERVER_START_TIMEOUT_S = 30.0
_NO_JOB = re.compile(r"could not find job", re.IGNORECASE)
_DENIED = re.compile(r"not authorized|access ?denied|forbidden|HTTP 403", re.IGNORECASE)


@dataclass
class SmokeResult:
    """The outcome: `ok` when the chain provably works."""

    ok: bool
    reward: float | None
    lines: list[str] = field(default_factory=list)
    answer: Any = None


def smoke_job_arn(region: str, account: str) -> str:
    return f"arn:aws:sagemaker:{region}:{account}:job/AgentRFT/{SMOKE_JOB_NAME}"


def smoke_payload(prompt: str, region: str, account: str) -> dict[str, Any]:
    """The smoke payload (wordle.md), plus `diagnose` so our runtime says what happened."""
    return {
        "prompt": prompt,
        "metadata": {"jobArn": smoke_job_arn(region, account), "rolloutId": SMOKE_ROLLOUT},
        "diagnose": True,
    }


def session_id() -> str:
    return SESSION_PREFIX + uuid.uuid4().hex  # 15 + 32 = 47 chars >= 33


def parse_runtime_arn(arn: str) -> tuple[str, str, str]:
    """(region, account, runtime id) of a runtime ARN, or a ValueError saying what is wrong."""
    m = RUNTIME_ARN_RE.match(arn or "")
    if not m:
        raise ValueError(
            f"--runtime-arn {arn!r} is not an AgentCore runtime ARN like "
            "arn:aws:bedrock-agentcore:us-east-1:111122223333:runtime/agentrft_wordle-AbCdE12345 "
            "(agentrft deploy prints it)"
        )
    return m.group("region"), m.group("account"), m.group("id")


def task_from_runtime(control: Any, runtime_id: str) -> str | None:
    """The task a runtime plays: its AGENTRFT_TASK, else its `agentrft_<task>` name."""
    try:
        env = control.get_agent_runtime(agentRuntimeId=runtime_id).get("environmentVariables")
        if env and env.get(TASK_ENV):
            return str(env[TASK_ENV])
    except Exception:  # no permission to read it: fall back to the name
        pass
    name = runtime_id.rsplit("-", 1)[0]
    return name.removeprefix("agentrft_") if name.startswith("agentrft_") else None


def run_smoke_test(
    agentcore: Any,
    *,
    runtime_arn: str,
    prompt: str,
    account: str,
    lowest: float,
    region: str | None = None,
) -> SmokeResult:
    """Invoke the runtime once and explain what came back. Never raises for AWS errors."""
    from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

    arn_region, arn_account, _ = parse_runtime_arn(runtime_arn)
    region = region or arn_region
    body = smoke_payload(prompt, region, account)
    lines = [
        f"invoking {runtime_arn}",
        f"  fake job {body['metadata']['jobArn']} (rollout {SMOKE_ROLLOUT}); expected: "
        f'400 "Could not find job." inside the runtime and reward {lowest:g}',
    ]
    if arn_account != account:
        lines.append(
            f"  note: the runtime is in account {arn_account}, you are {account}: the fake "
            "job is in yours, so expect a 403 from the job runtime"
        )
    try:
        resp = agentcore.invoke_agent_runtime(
            agentRuntimeArn=runtime_arn,
            runtimeSessionId=session_id(),
            payload=json.dumps(body).encode("utf-8"),
            contentType="application/json",
            accept="application/json",
        )
        raw = resp["response"].read()
    except (ReadTimeoutError, ConnectTimeoutError) as exc:
        lines += [
            f"TIMEOUT: no answer ({exc}).",
            f"  After ~{SERVER_START_TIMEOUT_S:.0f}s this means the runtime's HTTP server never "
            "started: the bundle failed to import (a missing ARM64 wheel), the entry point is "
            "wrong, or @app.entrypoint is not the outermost decorator. Read the runtime's "
            "CloudWatch logs (/aws/bedrock-agentcore/runtimes/<runtime-id>-DEFAULT).",
        ]
        return SmokeResult(False, None, lines)
    except ClientError as exc:
        return SmokeResult(False, None, lines + _explain_client_error(exc))

    try:
        answer = json.loads(raw)
    except ValueError:
        snippet = raw[:200].decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        lines.append(f"FAIL: the runtime answered something that is not JSON: {snippet!r}")
        return SmokeResult(False, None, lines)
    return _explain_answer(answer, lowest, lines)


def _explain_client_error(exc: Any) -> list[str]:
    err = exc.response.get("Error", {})
    code, message = err.get("Code", ""), err.get("Message", "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    out = [f"FAIL: InvokeAgentRuntime answered {status} {code}: {message}"]
    if status == 403 or code == "AccessDeniedException":
        out.append(
            "  403: you may not invoke this runtime (bedrock-agentcore:InvokeAgentRuntime), or "
            "the ARN's account is not yours. Check the ARN and your credentials (aws sts "
            "get-caller-identity)."
        )
    elif status == 404 or code == "ResourceNotFoundException":
        out.append("  404: no such runtime here: check the ARN and its region (--region).")
    elif status == 424 or code == "RuntimeClientError":
        out.append(
            "  424: the runtime itself failed (it crashed or answered an error). Its "
            "CloudWatch logs say why; a 30 s limit means the server never started."
        )
    elif status == 400 and _NO_JOB.search(message):
        out.append("  the job runtime's 400 reached you: the runtime let an error escape.")
    return out


def _explain_answer(answer: Any, lowest: float, lines: list[str]) -> SmokeResult:
    if not isinstance(answer, dict) or "reward" not in answer:
        lines.append(
            f"FAIL: the runtime answered {str(answer)[:200]!r} with no 'reward': a rollout "
            "that does not return a reward can fail a whole training job."
        )
        return SmokeResult(False, None, lines, answer)
    reward = answer["reward"]
    lines.append(f"the runtime answered reward {reward}")
    diag = answer.get("diagnostics") or {}
    reports = diag.get("reports") or []
    texts = [f"{r.get('status')} {r.get('code')}: {r.get('message')}" for r in reports]
    texts += list(diag.get("failures") or [])
    for t in texts:
        lines.append(f"  seen inside the runtime: {t}")
    no_job = any(_NO_JOB.search(t) for t in texts)
    denied = any(_DENIED.search(t) or t.startswith("403") for t in texts)
    if diag.get("problems"):
        lines.append(f"  payload problems: {'; '.join(diag['problems'])}")

    if denied:
        lines.append(
            "FAIL: 403 from the job runtime: the job ARN's account is not the one the "
            "runtime's role belongs to, or the role lacks AmazonSageMakerJobRuntimeAccess "
            "(sagemaker:CallWithBearerToken, CompleteRollout, UpdateReward)."
        )
        return SmokeResult(False, reward, lines, answer)
    if reward != lowest:
        lines.append(
            f"FAIL: expected the lowest reward {lowest:g} for a job that does not exist, got "
            f"{reward}: is a real job called {SMOKE_JOB_NAME!r} running, or is the task's "
            "lowest_reward() different from what the runtime uses?"
        )
        return SmokeResult(False, reward, lines, answer)
    if no_job:
        lines.append(
            'OK: 400 "Could not find job." and the lowest reward: the runtime parsed the '
            "payload, signed a token, reached the job runtime and reported the error. The "
            "chain works."
        )
        return SmokeResult(True, reward, lines, answer)
    if not diag:
        lines.append(
            "PROBABLY OK: the lowest reward came back, but this runtime sends no diagnostics "
            '(not an agentrft runtime?). Look for "Could not find job" in its logs.'
        )
        return SmokeResult(True, reward, lines, answer)
    lines.append(
        "FAIL: the lowest reward came back, but not because the job is unknown; see what the "
        "runtime saw above (endpoint, credentials, payload)."
    )
    return SmokeResult(False, reward, lines, answer)


def smoke_test_command(
    *, runtime_arn: str, task: str | None, region: str | None, timeout: float
) -> None:
    """The `agentrft smoke-test` command body."""
    import boto3
    import typer
    from botocore.config import Config

    from agentrft.plugins import PluginError, get_plugins

    try:
        arn_region, _, runtime_id = parse_runtime_arn(runtime_arn)
    except ValueError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise SystemExit(2) from None
    region = region or arn_region
    session = boto3.Session(region_name=region)
    if task is None:
        task = task_from_runtime(session.client("bedrock-agentcore-control"), runtime_id)
        if task is None:
            typer.secho("error: cannot tell the runtime's task; pass --task", fg="red", err=True)
            raise SystemExit(2)
    try:
        t = get_plugins().task(task)
        prompt = _first_prompt(t)
    except (PluginError, ValueError) as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise SystemExit(2) from None
    account = session.client("sts").get_caller_identity()["Account"]
    agentcore = session.client(
        "bedrock-agentcore",
        config=Config(read_timeout=timeout, connect_timeout=10, retries={"max_attempts": 1}),
    )
    result = run_smoke_test(
        agentcore,
        runtime_arn=runtime_arn,
        prompt=prompt,
        account=account,
        lowest=t.lowest_reward().total,
        region=region,
    )
    for line in result.lines:
        color = (
            "green"
            if line.startswith("OK")
            else "red"
            if line.startswith(("FAIL", "TIMEOUT"))
            else None
        )
        typer.secho(line, fg=color)
    if not result.ok:
        raise SystemExit(1)


def _first_prompt(task: Any) -> str:
    for split in ("train", "validation", "test"):
        try:
            rows = task.make_dataset(split, 1, 0)
        except Exception:
            continue
        if rows and isinstance(rows[0].get("prompt"), str):
            return rows[0]["prompt"]
    raise ValueError(f"task {task.name!r} makes no dataset rows to take a smoke prompt from")
