"""`agentrft deploy`: bundle a task, upload it, create or update its AgentCore runtime.

Steps (each shown by `--dry-run`, which calls no AWS API):
1. build the code bundle (bundle.py) for Linux ARM64 / CPython 3.11;
2. check the code bucket is in the runtime's region, then PutObject the zip;
3. find the runtime by name (ListAgentRuntimes); CreateAgentRuntime, or UpdateAgentRuntime
   after checking that no SageMaker AI job is running (a redeploy drops in-flight rollouts'
   sampling requests and the service fails the job);
4. poll GetAgentRuntime until READY and print the ARN.

Request shapes are botocore's `bedrock-agentcore-control` 2023-06-05 model; facts the model
does not pin down are marked [?] here and nowhere else.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrft.backends.sagemaker.jobs.bundle import (
    ENTRY_FILE,
    RUNTIME_PYTHON,
    BundlePlan,
)
from agentrft.backends.sagemaker.jobs.s3 import location_region
from agentrft.backends.sagemaker.runtime.main import BIND_ALL_ENV, REWARD_ENV, TASK_ENV

RUNTIME_NAME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]{0,47}$")
ROLE_ARN_RE = re.compile(r"^arn:aws(-[^:]+)?:iam::([0-9]{12})?:role/.+$")
RUNTIME_ARN_RE = re.compile(
    r"^arn:aws(-[^:]+)?:bedrock-agentcore:(?P<region>[a-z0-9-]+):(?P<account>[0-9]{12}):"
    r"runtime/(?P<id>[a-zA-Z][a-zA-Z0-9_]{0,47}-[a-zA-Z0-9]{10})$"
)
#: The code location: `prefix` holds the zip's full object key [?].
CODE_PREFIX = "agentrft/runtime-code"
#: Where AgentCore starts the bundle [?]: the bundle's generated main.py.
ENTRY_POINT = [ENTRY_FILE]
READY, FAILED_STATES = "READY", {"CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED", "DELETING"}
WAIT_TIMEOUT_S = 1200.0
WAIT_INTERVAL_S = 5.0
#: Job categories whose running jobs a redeploy would break.
JOB_CATEGORIES = ("AgentRFT", "AgentRFTEvaluation")
REDEPLOY_WARNING = (
    "Never redeploy a runtime while a SageMaker AI job uses it: in-flight rollouts lose "
    "their sampling requests and the service fails the job."
)


class DeployError(RuntimeError):
    """Deploying cannot go on; the message says what to fix."""


@dataclass
class DeploySpec:
    """What to deploy where."""

    task: str
    name: str
    role_arn: str
    region: str
    bucket: str
    key: str
    reward: str | None = None
    description: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        env = {TASK_ENV: self.task, BIND_ALL_ENV: "1"}
        if self.reward:
            env[REWARD_ENV] = self.reward
        env.update(self.extra_env)
        return env

    def artifact(self) -> dict[str, Any]:
        return {
            "codeConfiguration": {
                "code": {"s3": {"bucket": self.bucket, "prefix": self.key}},
                "runtime": RUNTIME_PYTHON,
                "entryPoint": list(ENTRY_POINT),
            }
        }

    def create_request(self) -> dict[str, Any]:
        return {
            "agentRuntimeName": self.name,
            "description": self.description or f"agentrft rollouts for {_tasks_phrase(self.task)}",
            "agentRuntimeArtifact": self.artifact(),
            "roleArn": self.role_arn,
            "networkConfiguration": {"networkMode": "PUBLIC"},
            "protocolConfiguration": {"serverProtocol": "HTTP"},
            "environmentVariables": self.environment(),
            "clientToken": _client_token(),
        }

    def update_request(self, runtime_id: str) -> dict[str, Any]:
        req = self.create_request()
        req.pop("agentRuntimeName")
        return {"agentRuntimeId": runtime_id, **req}


_OWN_ENV = (TASK_ENV, REWARD_ENV, BIND_ALL_ENV)


def parse_env(pairs: list[str]) -> dict[str, str]:
    """`--env KEY=VALUE` settings for the runtime (e.g. a task's simulated-user model)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise DeployError(f"--env {pair!r}: write KEY=VALUE, KEY a variable name")
        if key in _OWN_ENV:
            raise DeployError(
                f"--env {key}: deploy sets it itself (from --task and --reward); drop it"
            )
        out[key] = value
    return out


def file_label(task: str) -> str:
    """`task` (one name, or `a,b` for several) as a file-name part: `a-b`."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", task)


def default_runtime_name(task: str) -> str:
    """`agentrft_<task>` made to fit `[a-zA-Z][a-zA-Z0-9_]{0,47}`."""
    return ("agentrft_" + re.sub(r"[^a-zA-Z0-9_]", "_", task))[:48]


def check_name(name: str) -> str:
    if not RUNTIME_NAME_RE.match(name):
        raise DeployError(
            f"runtime name {name!r} is invalid: AgentCore wants a letter then up to 47 "
            "letters, digits or underscores (no hyphens), e.g. agentrft_wordle"
        )
    return name


def check_role_arn(role_arn: str | None) -> str:
    if not role_arn:
        raise DeployError(
            "--role-arn is required: the runtime's execution role, trusted by "
            "bedrock-agentcore.amazonaws.com, with the managed policy "
            "AmazonSageMakerJobRuntimeAccess (see docs/sagemaker-runtime.md)"
        )
    if not ROLE_ARN_RE.match(role_arn):
        raise DeployError(
            f"--role-arn {role_arn!r} is not an IAM role ARN (arn:aws:iam::<acct>:role/<name>)"
        )
    return role_arn


def parse_s3_uri(uri: str) -> tuple[str, str]:
    m = re.match(r"^s3://([a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(.*))?$", uri or "")
    if not m:
        raise DeployError(f"--s3 {uri!r} is not an S3 URI like s3://my-bucket/agentrft")
    return m.group(1), (m.group(2) or "").strip("/")


def code_key(prefix: str, task: str, digest: str) -> str:
    name = f"agentrft-runtime-{file_label(task)}-{digest[:12]}.zip"
    return f"{prefix}/{name}" if prefix else name


def validate_request(operation: str, params: dict[str, Any]) -> None:
    """Check a request against botocore's model offline (what Stubber checks in tests)."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("bedrock-agentcore-control")
    report = ParamValidator().validate(params, model.operation_model(operation).input_shape)
    if report.has_errors():
        raise DeployError(f"{operation} request is invalid:\n{report.generate_report()}")


def bucket_region(s3: Any, bucket: str) -> str:
    """The bucket's region, from a bare S3 client (`deploy` takes bare clients)."""
    return location_region(s3.get_bucket_location(Bucket=bucket).get("LocationConstraint"))


def upload_bundle(s3: Any, zip_path: Path, bucket: str, key: str) -> None:
    with zip_path.open("rb") as body:
        s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/zip")


def find_runtime(control: Any, name: str) -> dict[str, Any] | None:
    """The runtime named `name`, from ListAgentRuntimes (there is no get-by-name)."""
    token: str | None = None
    while True:
        page = control.list_agent_runtimes(**({"nextToken": token} if token else {}))
        for rt in page.get("agentRuntimes", []):
            if rt.get("agentRuntimeName") == name:
                return rt
        token = page.get("nextToken")
        if not token:
            return None


def running_jobs(sagemaker: Any) -> list[str]:
    """Names of AgentRFT / AgentRFTEvaluation jobs in progress in this region."""
    names = []
    for category in JOB_CATEGORIES:
        page = sagemaker.list_jobs(JobCategory=category, StatusEquals="InProgress")
        names += [f"{category}/{j['JobName']}" for j in page.get("JobSummaries", [])]
    return names


def create_or_update(
    control: Any, spec: DeploySpec, existing: dict[str, Any] | None
) -> dict[str, Any]:
    """CreateAgentRuntime or UpdateAgentRuntime; returns the response."""
    if existing is None:
        return control.create_agent_runtime(**spec.create_request())
    return control.update_agent_runtime(**spec.update_request(existing["agentRuntimeId"]))


def wait_ready(
    control: Any,
    runtime_id: str,
    *,
    timeout_s: float = WAIT_TIMEOUT_S,
    interval_s: float = WAIT_INTERVAL_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    echo: Callable[[str], None] = lambda _msg: None,
) -> dict[str, Any]:
    """Poll GetAgentRuntime until READY; raise with the service's reason on failure."""
    deadline = clock() + timeout_s
    last = ""
    while True:
        rt = control.get_agent_runtime(agentRuntimeId=runtime_id)
        status = rt.get("status", "")
        if status != last:
            echo(f"runtime {runtime_id}: {status}")
            last = status
        if status == READY:
            return rt
        if status in FAILED_STATES:
            reason = rt.get("failureReason") or "no reason given"
            raise DeployError(
                f"runtime {runtime_id} is {status}: {reason}. Check the role's trust "
                "(bedrock-agentcore.amazonaws.com) and the bundle (agentrft deploy --dry-run)."
            )
        if clock() >= deadline:
            raise DeployError(
                f"runtime {runtime_id} still {status} after {timeout_s:.0f}s; check it with "
                "`aws bedrock-agentcore-control get-agent-runtime --agent-runtime-id "
                f"{runtime_id}`"
            )
        sleep(interval_s)


@dataclass
class DeployResult:
    arn: str
    runtime_id: str
    action: str  # "created" | "updated"
    version: str | None = None


def deploy(
    spec: DeploySpec,
    zip_path: Path,
    *,
    control: Any,
    s3: Any,
    sagemaker: Any | None = None,
    force: bool = False,
    wait: bool = True,
    echo: Callable[[str], None] = print,
    sleep: Callable[[float], None] = time.sleep,
) -> DeployResult:
    """Upload `zip_path` and create or update the runtime (steps 2-4)."""
    region = bucket_region(s3, spec.bucket)
    if region != spec.region:
        raise DeployError(
            f"bucket {spec.bucket!r} is in {region}, the runtime goes to {spec.region}: the "
            "job, the runtime and the bucket must share one region. Use a bucket in "
            f"{spec.region} (--s3) or deploy to {region} (--region)."
        )
    existing = find_runtime(control, spec.name)
    if existing is not None:
        if sagemaker is not None and not force:
            try:
                busy = running_jobs(sagemaker)
            except Exception as exc:  # no ListJobs permission: say so, don't block
                echo(f"warning: could not list running jobs ({exc}). {REDEPLOY_WARNING}")
                busy = []
            if busy:
                raise DeployError(
                    f"jobs are running: {', '.join(busy)}. {REDEPLOY_WARNING} Wait for them "
                    "(agentrft jobs list) or pass --force if they use another runtime."
                )
        echo(f"updating runtime {existing['agentRuntimeId']}. {REDEPLOY_WARNING}")
    echo(
        f"uploading {zip_path.name} ({zip_path.stat().st_size / 1e6:.1f} MB) to s3://{spec.bucket}/{spec.key}"
    )
    upload_bundle(s3, zip_path, spec.bucket, spec.key)
    response = create_or_update(control, spec, existing)
    result = DeployResult(
        arn=response["agentRuntimeArn"],
        runtime_id=response["agentRuntimeId"],
        action="created" if existing is None else "updated",
        version=response.get("agentRuntimeVersion"),
    )
    echo(
        f"{result.action} {result.arn} (version {result.version}); status {response.get('status')}"
    )
    if wait:
        wait_ready(control, result.runtime_id, echo=echo, sleep=sleep)
    return result


def dry_run_report(plan: BundlePlan, spec: DeploySpec) -> list[str]:
    """Every step and request, validated offline against botocore's model."""
    from agentrft.redact import scrub

    create = spec.create_request()
    update = spec.update_request("<agentRuntimeId of the existing runtime>")
    validate_request("CreateAgentRuntime", create)
    validate_request("UpdateAgentRuntime", {**update, "agentRuntimeId": "agentrft_x-0123456789"})
    # --env may carry a key (a user model's): the printout shows *** in its place.
    create, update = scrub(create), scrub(update)
    lines = [
        "Preflight (skipped by --dry-run): credentials and region (STS GetCallerIdentity), "
        "the runtime role's AmazonSageMakerJobRuntimeAccess and trust (IAM reads).",
        "Build the code bundle:",
    ]
    lines += [f"  {i}. {s}" for i, s in enumerate(plan.describe(), 1)]
    lines += [
        "AWS requests (none sent: --dry-run):",
        f"  s3 GetBucketLocation(Bucket={spec.bucket!r}) -> must be {spec.region}",
        f"  s3 PutObject(Bucket={spec.bucket!r}, Key={spec.key!r}, Body=<the zip>)",
        f"  bedrock-agentcore-control ListAgentRuntimes -> is {spec.name!r} there?",
        "  if not: CreateAgentRuntime " + json.dumps(create, indent=2).replace("\n", "\n  "),
        "  if so: sagemaker ListJobs(StatusEquals=InProgress) for "
        f"{', '.join(JOB_CATEGORIES)} -> refuse while any runs ({REDEPLOY_WARNING})",
        "  then: UpdateAgentRuntime " + json.dumps(update, indent=2).replace("\n", "\n  "),
        "  poll GetAgentRuntime(agentRuntimeId) every "
        f"{WAIT_INTERVAL_S:.0f}s until READY (at most {WAIT_TIMEOUT_S:.0f}s)",
        "Requests validated against botocore's bedrock-agentcore-control model.",
    ]
    return lines


def _tasks_phrase(task: str) -> str:
    names = task.split(",")
    return f"task {task}" if len(names) == 1 else f"tasks {', '.join(names)}"


def _client_token() -> str:
    # 33..256 chars of [a-zA-Z0-9-]: a fresh one per request (a retry of the same call
    # reuses the dict, hence the token).
    return f"agentrft-{uuid.uuid4().hex}"
