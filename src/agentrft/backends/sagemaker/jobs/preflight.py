"""Preflight: catch, before any GPU time is paid for, the mistakes that failed real jobs.

Wrong trust principal, cross-region ARNs and buckets, a runtime role without the job
runtime policy, rows the task cannot parse, a botocore without CreateJob. Each check reads
only (STS, S3 GetBucketLocation/GetObject, IAM GetRole/ListAttachedRolePolicies,
AgentCore GetAgentRuntime) and each failure says the fix. `run_preflight` is what
`agentrft doctor --backend sagemaker`, `train`, `eval` and `deploy` call.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import (
    SageMakerError,
    error_code,
    error_message,
    has_create_job,
    is_access_denied,
    make_aws,
    parse_arn,
)
from agentrft.backends.sagemaker.jobs.preflight_report import (
    Check,
    PreflightReport,
    Purpose,
    Status,
)
from agentrft.backends.sagemaker.jobs.preflight_roles import check_job_role, check_runtime_role
from agentrft.backends.sagemaker.jobs.s3 import bucket_region, parse_s3_uri, read_text

__all__ = ["Check", "PreflightReport", "Purpose", "Status", "run_preflight"]

if TYPE_CHECKING:
    from agentrft.backends.sagemaker.jobs.aws import Aws
    from agentrft.backends.sagemaker.settings import SageMakerRunConfig
    from agentrft.task import Task


def _guard(report: PreflightReport, name: str, fn: Callable[[], None]) -> None:
    """Run one check; an unexpected error becomes a failed row, never a crash."""
    try:
        fn()
    except SageMakerError as exc:
        report.add(name, "fail", str(exc))
    except Exception as exc:
        report.add(name, "fail", f"{error_code(exc) or type(exc).__name__}: {error_message(exc)}")


def run_preflight(
    config: SageMakerRunConfig,
    *,
    purpose: Purpose = "doctor",
    task: Task[Any] | None = None,
    aws: Aws | None = None,
    runtime_role_arn: str | None = None,
    dataset_uris: dict[str, str] | None = None,
    max_rows: int = 10_000,
) -> PreflightReport:
    """Run the checks that apply to `purpose`; never raises for a failed check.

    `dataset_uris` maps a label ("train", "validation", "evaluation") to an S3 URI or a
    local file; by default the config's train/validation S3 URIs are used.
    """
    sm = config.sagemaker
    report = PreflightReport()

    ok, version = has_create_job()
    if ok:
        report.add("botocore has CreateJob", "ok", version)
    else:
        report.add(
            "botocore has CreateJob",
            "fail",
            f"{version} lacks CreateJob / sagemakerjobruntime",
            f"pip install -U 'boto3>={facts.MIN_BOTOCORE}' 'botocore>={facts.MIN_BOTOCORE}'",
        )

    # Credentials and region: everything below needs them.
    if aws is None:
        try:
            aws = make_aws(sm)
        except SageMakerError as exc:
            report.add("credentials and region", "fail", str(exc), "export AWS_REGION=...")
            return report
    report.aws = aws
    try:
        ident = aws.client("sts").get_caller_identity()
        aws._account = ident["Account"]
        report.add(
            "credentials and region",
            "ok",
            f"{ident['Arn']} in account {ident['Account']}, region {aws.region}",
        )
    except Exception as exc:
        report.add(
            "credentials and region",
            "fail",
            f"STS GetCallerIdentity failed ({error_code(exc) or type(exc).__name__}: "
            f"{error_message(exc)})",
            "configure credentials: `aws configure`, `aws sso login`, or AWS_PROFILE",
        )
        return report
    account = ident["Account"]

    needs_job = purpose in ("train", "eval", "doctor")
    _check_runtime(report, aws, config, account, required=purpose in ("train", "eval"))
    if needs_job:
        _check_s3_regions(report, aws, config, purpose)
        _check_mlflow(report, aws, config, required=purpose == "train")
        check_job_role(report, aws, config, required=purpose in ("train", "eval"))
    role = runtime_role_arn or sm.runtime_role_arn or report.runtime_role_arn
    check_runtime_role(report, aws, role, account, required=purpose == "deploy")

    if needs_job and task is not None:
        uris = dataset_uris
        if uris is None:
            if purpose == "eval":
                pairs = [("evaluation", sm.evaluation_s3_uri or sm.validation_s3_uri)]
            else:
                pairs = [("train", sm.train_s3_uri), ("validation", sm.validation_s3_uri)]
                if purpose == "doctor":
                    pairs.append(("evaluation", sm.evaluation_s3_uri))
            uris = {k: v for k, v in pairs if v}
        for label, uri in uris.items():
            _guard(
                report,
                f"{label} rows parse as {task.name}",
                functools.partial(_check_rows, report, aws, task, label, uri, max_rows),
            )
    return report


# -- individual checks ------------------------------------------------------------------


def _check_runtime(
    report: PreflightReport, aws: Aws, config: SageMakerRunConfig, account: str, *, required: bool
) -> None:
    arn = config.sagemaker.runtime_arn
    name = "runtime ARN in the job's region"
    if not arn:
        if required:
            report.add(
                name,
                "fail",
                "no runtime ARN",
                "deploy one (`agentrft deploy --task T --role-arn ...`), then pass --runtime-arn "
                "or set sagemaker.runtime_arn",
            )
        else:
            report.add(name, "skip", "sagemaker.runtime_arn not set")
        return
    try:
        parsed = parse_arn(arn, what="runtime ARN")
    except SageMakerError as exc:
        report.add(name, "fail", str(exc), "copy the ARN `agentrft deploy` printed")
        return
    if parsed.region != aws.region:
        report.add(
            name,
            "fail",
            f"runtime is in {parsed.region}, the job would run in {aws.region}",
            f"run in {parsed.region} (--region {parsed.region}) or deploy the runtime in "
            f"{aws.region}; CreateJob rejects a runtime from another region",
        )
    elif parsed.account != account:
        report.add(
            name,
            "warn",
            f"runtime account {parsed.account} is not the caller's {account}",
            "use a runtime in your own account",
        )
    else:
        report.add(name, "ok", arn)
    if parsed.service != "bedrock-agentcore":
        return
    try:
        rt = aws.client("bedrock-agentcore-control").get_agent_runtime(
            agentRuntimeId=parsed.resource_name
        )
    except Exception as exc:
        if is_access_denied(exc):
            report.add(
                "runtime is READY", "warn", "not permitted to read the runtime (GetAgentRuntime)"
            )
        else:
            report.add(
                "runtime is READY",
                "fail",
                f"GetAgentRuntime failed ({error_code(exc)}: {error_message(exc)})",
                "check the ARN, or deploy with `agentrft deploy`",
            )
        return
    report.runtime_role_arn = rt.get("roleArn")
    status = rt.get("status", "")
    if status == "READY":
        report.add(
            "runtime is READY",
            "ok",
            f"{rt.get('agentRuntimeName')} v{rt.get('agentRuntimeVersion')}",
        )
    else:
        report.add(
            "runtime is READY",
            "fail",
            f"status {status}: {rt.get('failureReason') or ''}".strip(),
            "wait for READY, or redeploy with `agentrft deploy` (never while a job runs)",
        )


def _check_s3_regions(
    report: PreflightReport, aws: Aws, config: SageMakerRunConfig, purpose: str
) -> None:
    sm = config.sagemaker
    uris = {
        "train data": sm.train_s3_uri if purpose != "eval" else None,
        "validation data": sm.validation_s3_uri if purpose != "eval" else None,
        "evaluation data": (sm.evaluation_s3_uri or sm.validation_s3_uri)
        if purpose == "eval"
        else None,
        "output path": sm.output_s3_path,
    }
    required = {"train data": purpose == "train", "evaluation data": purpose == "eval",
                "output path": purpose in ("train", "eval")}  # fmt: skip
    seen: dict[str, str] = {}
    for label, uri in uris.items():
        name = f"{label} bucket in {aws.region}"
        if not uri:
            if required.get(label):
                flag = {"train data": "--train-uri", "evaluation data": "--eval-uri",
                        "output path": "--output-path"}[label]  # fmt: skip
                report.add(name, "fail", f"no {label} S3 URI", f"pass {flag} s3://...")
            continue
        try:
            bucket = parse_s3_uri(uri, what=label).bucket
            region = seen.get(bucket) or bucket_region(aws, bucket)
            seen[bucket] = region
        except SageMakerError as exc:
            report.add(name, "fail", str(exc), "use an s3://bucket/key URI in the job's region")
            continue
        if region == aws.region:
            report.add(name, "ok", uri)
        else:
            report.add(
                name,
                "fail",
                f"{uri} is in {region}",
                f"use a bucket in {aws.region} (agentrft dataset upload FILE s3://<bucket in "
                f"{aws.region}>/...) or run in {region}",
            )


def _check_mlflow(
    report: PreflightReport, aws: Aws, config: SageMakerRunConfig, *, required: bool
) -> None:
    arn = config.sagemaker.mlflow_resource_arn
    name = "MLflow app in the job's region"
    if not arn:
        if required and facts.MLFLOW_REQUIRED:
            report.add(
                name,
                "fail",
                "no MLflow app ARN (CreateJob requires MlflowConfig, per the sample)",
                "create a SageMaker MLflow app and pass --mlflow-arn or set "
                "sagemaker.mlflow_resource_arn",
            )
        else:
            report.add(name, "skip", "sagemaker.mlflow_resource_arn not set")
        return
    try:
        parsed = parse_arn(arn, what="MLflow app ARN")
    except SageMakerError as exc:
        report.add(name, "fail", str(exc), "arn:aws:sagemaker:<region>:<account>:mlflow-app/<id>")
        return
    if parsed.region != aws.region:
        report.add(name, "fail", f"MLflow app is in {parsed.region}", f"use one in {aws.region}")
    else:
        report.add(name, "ok", arn)


def _check_rows(
    report: PreflightReport, aws: Aws, task: Task[Any], label: str, uri: str, max_rows: int
) -> None:
    from agentrft.datasets import DatasetError, prompts_from_rows, read_rows
    from agentrft.task import TaskInputError

    name = f"{label} rows parse as {task.name}"
    try:
        if uri.startswith("s3://"):
            text = read_text(aws, uri)
            suffix = Path(parse_s3_uri(uri).key).suffix or ".jsonl"
            with tempfile.TemporaryDirectory() as tmp:
                local = Path(tmp) / f"rows{suffix}"
                local.write_text(text, encoding="utf-8")
                prompts = prompts_from_rows(read_rows(local), source=uri)
        else:
            prompts = prompts_from_rows(read_rows(uri), source=uri)
    except DatasetError as exc:
        report.add(name, "fail", str(exc), "rebuild it with `agentrft dataset make`")
        return
    bad: list[str] = []
    checked = prompts[:max_rows]
    for i, prompt in enumerate(checked, start=1):
        try:
            task.parse(prompt)
        except TaskInputError as exc:
            bad.append(f"row {i}: {exc}")
        except Exception as exc:  # a parse that crashes is as bad as a refusal
            bad.append(f"row {i}: {type(exc).__name__}: {exc}")
    if bad:
        report.add(
            name,
            "fail",
            f"{len(bad)} of {len(checked)} rows do not parse; first: {'; '.join(bad[:3])}",
            f"regenerate with `agentrft dataset make --task {task.name}` and upload again; a "
            "row the runtime cannot parse earns the lowest reward every time",
        )
    else:
        more = f" (first {max_rows} of {len(prompts)})" if len(prompts) > max_rows else ""
        report.add(name, "ok", f"{len(checked)} rows{more} from {uri}")
