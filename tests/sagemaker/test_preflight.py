"""Preflight: every check against stubbed STS, S3, IAM and AgentCore reads; each failure
names the fix, and a failed preflight stops `train` before CreateJob."""

from __future__ import annotations

import io
import json
from typing import Any
from urllib.parse import quote

import pytest
from botocore.response import StreamingBody
from rich.console import Console

from agentrft.backends.sagemaker.backend import SageMakerBackend
from agentrft.backends.sagemaker.jobs import preflight as preflight_mod
from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import SageMakerError
from agentrft.backends.sagemaker.jobs.iam import job_role_trust_policy, trust_problems
from agentrft.backends.sagemaker.jobs.preflight import run_preflight
from agentrft.backends.sagemaker.settings import SageMakerTrainOptions
from agentrft.backends.sagemaker.testing.stubbed import ACCOUNT, stubbed_aws
from agentrft.config_model import load_config
from agentrft.testing import FindNumberTask

REGION = "us-east-1"
RUNTIME = f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/agentrft_find_number-AbCdEfGhIj"
JOB_ROLE = f"arn:aws:iam::{ACCOUNT}:role/agentrft-job"
RUNTIME_ROLE = f"arn:aws:iam::{ACCOUNT}:role/agentrft-runtime"
ROWS = b'{"prompt": "{\\"secret\\": 5, \\"low\\": 1, \\"high\\": 10}"}\n' * 3


def config(**extra: Any) -> Any:
    values = {
        "sagemaker.runtime_arn": RUNTIME,
        "sagemaker.role_arn": JOB_ROLE,
        "sagemaker.train_s3_uri": "s3://agentrft-data/train.jsonl",
        "sagemaker.output_s3_path": "s3://agentrft-out/run/",
        "sagemaker.mlflow_resource_arn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:mlflow-app/app-1",
    }
    values.update(extra)
    return load_config(values=values)


def role(name: str, trust: dict[str, Any]) -> dict[str, Any]:
    return {
        "Role": {
            "Path": "/",
            "RoleName": name,
            "RoleId": "AROAEXAMPLE000000000",
            "Arn": f"arn:aws:iam::{ACCOUNT}:role/{name}",
            "CreateDate": "2026-06-01T00:00:00Z",
            # IAM sends the document URL-encoded; boto3 decodes it (as it would for real).
            "AssumeRolePolicyDocument": quote(json.dumps(trust)),
        }
    }


def attached(*names: str) -> dict[str, Any]:
    return {
        "AttachedPolicies": [
            {"PolicyName": n, "PolicyArn": f"arn:aws:iam::aws:policy/{n}"} for n in names
        ],
        "IsTruncated": False,
    }


RUNTIME_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "bedrock-agentcore.amazonaws.com"},
         "Action": "sts:AssumeRole"}
    ],
}  # fmt: skip


def expect_all(
    s: Any,
    *,
    job_trust: dict[str, Any] | None = None,
    runtime_policies: tuple[str, ...] = (facts.RUNTIME_ROLE_MANAGED_POLICY,),
    data_region: str | None = REGION,
    rows: bytes = ROWS,
    get_role_denied: bool = False,
) -> None:
    s["sts"].add_response(
        "get_caller_identity",
        {"Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/dev", "UserId": "AIDA"},
    )
    s["bedrock-agentcore-control"].add_response(
        "get_agent_runtime",
        {
            "agentRuntimeArn": RUNTIME,
            "agentRuntimeName": "agentrft_find_number",
            "agentRuntimeId": "agentrft_find_number-AbCdEfGhIj",
            "agentRuntimeVersion": "3",
            "createdAt": "2026-06-01T00:00:00Z",
            "lastUpdatedAt": "2026-06-01T00:00:00Z",
            "roleArn": RUNTIME_ROLE,
            "networkConfiguration": {"networkMode": "PUBLIC"},
            "status": "READY",
            "lifecycleConfiguration": {},
        },
        {"agentRuntimeId": "agentrft_find_number-AbCdEfGhIj"},
    )
    location = None if data_region == "us-east-1" else data_region
    s["s3"].add_response(
        "get_bucket_location",
        {"LocationConstraint": location} if location else {},
        {"Bucket": "agentrft-data"},
    )
    s["s3"].add_response("get_bucket_location", {}, {"Bucket": "agentrft-out"})
    if get_role_denied:
        s["iam"].add_client_error(
            "get_role", "AccessDenied", "not authorized to perform iam:GetRole"
        )
        s["iam"].add_client_error("list_attached_role_policies", "AccessDenied", "no")
    else:
        s["iam"].add_response(
            "get_role", role("agentrft-job", job_trust or job_role_trust_policy()),
            {"RoleName": "agentrft-job"},
        )  # fmt: skip
        s["iam"].add_response(
            "list_attached_role_policies",
            attached(facts.JOB_ROLE_MANAGED_POLICY),
            {"RoleName": "agentrft-job"},
        )
    s["iam"].add_response(
        "list_attached_role_policies", attached(*runtime_policies), {"RoleName": "agentrft-runtime"}
    )
    s["iam"].add_response("get_role", role("agentrft-runtime", RUNTIME_TRUST))
    s["s3"].add_response(
        "get_object",
        {"Body": StreamingBody(io.BytesIO(rows), len(rows))},
        {"Bucket": "agentrft-data", "Key": "train.jsonl"},
    )


def render(report: Any) -> str:
    buf = io.StringIO()
    report.render(Console(file=buf, width=250, color_system=None))
    return buf.getvalue()


def by_name(report: Any) -> dict[str, Any]:
    return {c.name: c for c in report.checks}


def test_a_correct_account_passes_every_check() -> None:
    s = stubbed_aws(REGION)
    expect_all(s)
    report = run_preflight(config(), purpose="train", task=FindNumberTask(), aws=s.aws)
    s.assert_done()
    text = render(report)
    assert report.ok, text
    statuses = {c.name: c.status for c in report.checks}
    assert statuses == {
        "botocore has CreateJob": "ok",
        "credentials and region": "ok",
        "runtime ARN in the job's region": "ok",
        "runtime is READY": "ok",
        f"train data bucket in {REGION}": "ok",
        f"output path bucket in {REGION}": "ok",
        "MLflow app in the job's region": "ok",
        f"job role trusts {facts.JOB_ROLE_PRINCIPAL}": "ok",
        f"job role has {facts.JOB_ROLE_MANAGED_POLICY}": "ok",
        f"runtime role has {facts.RUNTIME_ROLE_MANAGED_POLICY}": "ok",
        "train rows parse as find_number": "ok",
    }
    assert "3 rows" in by_name(report)["train rows parse as find_number"].detail


def test_wrong_trust_principal_fails_and_prints_the_exact_policy() -> None:
    wrong = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
                       "Action": "sts:AssumeRole"}],
    }  # fmt: skip
    s = stubbed_aws(REGION)
    expect_all(s, job_trust=wrong)
    report = run_preflight(config(), purpose="train", task=FindNumberTask(), aws=s.aws)
    check = by_name(report)[f"job role trusts {facts.JOB_ROLE_PRINCIPAL}"]
    assert check.status == "fail" and "sagemaker.amazonaws.com instead" in check.detail
    assert "update-assume-role-policy" in check.fix
    text = render(report)
    printed = json.loads(text[text.index("trust.json") :].split(":\n", 1)[1])
    assert printed == job_role_trust_policy()
    assert printed["Statement"][0]["Action"] == ["sts:AssumeRole", "sts:TagSession"]


def test_missing_tag_session_is_named() -> None:
    doc = {"Statement": [{"Effect": "Allow", "Principal": {"Service": facts.JOB_ROLE_PRINCIPAL},
                          "Action": "sts:AssumeRole"}]}  # fmt: skip
    assert trust_problems(doc, facts.JOB_ROLE_PRINCIPAL, facts.JOB_ROLE_TRUST_ACTIONS) == [
        f"{facts.JOB_ROLE_PRINCIPAL} is not allowed sts:TagSession"
    ]


def test_get_role_denied_warns_and_prints_the_trust_policy() -> None:
    s = stubbed_aws(REGION)
    expect_all(s, get_role_denied=True)
    report = run_preflight(config(), purpose="train", task=FindNumberTask(), aws=s.aws)
    check = by_name(report)[f"job role trusts {facts.JOB_ROLE_PRINCIPAL}"]
    assert check.status == "warn" and report.ok
    assert facts.JOB_ROLE_PRINCIPAL in render(report) and "sts:TagSession" in render(report)


def test_cross_region_bucket_runtime_and_bad_rows_each_fail_with_a_fix() -> None:
    s = stubbed_aws(REGION)
    expect_all(
        s,
        data_region="eu-west-1",
        runtime_policies=("AmazonS3ReadOnlyAccess",),
        rows=b'{"prompt": "guess 5"}\n{"prompt": "{\\"secret\\": 5, \\"low\\": 1, \\"high\\": 10}"}\n',
    )
    report = run_preflight(config(), purpose="train", task=FindNumberTask(), aws=s.aws)
    checks = by_name(report)
    assert not report.ok
    bucket = checks[f"train data bucket in {REGION}"]
    assert (
        bucket.status == "fail" and "eu-west-1" in bucket.detail and "dataset upload" in bucket.fix
    )
    runtime_role = checks[f"runtime role has {facts.RUNTIME_ROLE_MANAGED_POLICY}"]
    assert runtime_role.status == "fail" and "attach-role-policy" in runtime_role.fix
    rows = checks["train rows parse as find_number"]
    assert rows.status == "fail" and "1 of 2 rows" in rows.detail and "row 1" in rows.detail


def test_runtime_in_another_region_fails_without_further_runtime_calls() -> None:
    s = stubbed_aws(REGION)
    s["sts"].add_response(
        "get_caller_identity", {"Account": ACCOUNT, "Arn": "arn:aws:iam::1:user/x", "UserId": "A"}
    )
    s["bedrock-agentcore-control"].add_client_error(
        "get_agent_runtime", "AccessDeniedException", "no"
    )
    other = RUNTIME.replace(REGION, "us-west-2")
    report = run_preflight(
        config(**{"sagemaker.runtime_arn": other, "sagemaker.role_arn": None,
                  "sagemaker.train_s3_uri": None, "sagemaker.output_s3_path": None}),
        purpose="doctor", aws=s.aws,
    )  # fmt: skip
    check = by_name(report)["runtime ARN in the job's region"]
    assert (
        check.status == "fail" and "us-west-2" in check.detail and "--region us-west-2" in check.fix
    )
    assert by_name(report)["runtime is READY"].status == "warn"


def test_no_credentials_stops_after_sts() -> None:
    s = stubbed_aws(REGION)
    s["sts"].add_client_error("get_caller_identity", "InvalidClientTokenId", "bad token")
    report = run_preflight(config(), purpose="train", aws=s.aws)
    assert [c.status for c in report.checks] == ["ok", "fail"]
    assert "aws configure" in report.checks[-1].fix
    s.assert_done()


def test_old_botocore_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight_mod, "has_create_job", lambda: (False, "botocore 1.43.11"))
    s = stubbed_aws(REGION)
    s["sts"].add_client_error("get_caller_identity", "ExpiredToken", "expired")
    report = run_preflight(config(), purpose="doctor", aws=s.aws)
    assert report.checks[0].status == "fail" and "pip install -U" in report.checks[0].fix


def test_train_stops_on_a_failed_preflight_before_create_job() -> None:
    s = stubbed_aws(REGION)
    expect_all(s, runtime_policies=())
    buf = io.StringIO()
    with pytest.raises(SageMakerError, match="preflight failed") as err:
        SageMakerBackend(aws=s.aws).train(
            FindNumberTask(),
            config(task="find_number"),
            SageMakerTrainOptions(console=Console(file=buf, width=250, color_system=None)),
        )
    assert facts.RUNTIME_ROLE_MANAGED_POLICY in str(err.value)
    s.assert_done()  # and no DescribeHubContent or CreateJob was expected, so none was made


def test_deploy_purpose_requires_the_runtime_role_only() -> None:
    s = stubbed_aws(REGION)
    s["sts"].add_response(
        "get_caller_identity", {"Account": ACCOUNT, "Arn": "arn:aws:iam::1:user/x", "UserId": "A"}
    )
    s["iam"].add_response(
        "list_attached_role_policies", attached(facts.RUNTIME_ROLE_MANAGED_POLICY)
    )
    s["iam"].add_response("get_role", role("agentrft-runtime", RUNTIME_TRUST))
    cfg = load_config(values={})
    report = run_preflight(cfg, purpose="deploy", aws=s.aws, runtime_role_arn=RUNTIME_ROLE)
    s.assert_done()
    assert report.ok and {c.name for c in report.checks if c.status == "ok"} >= {
        f"runtime role has {facts.RUNTIME_ROLE_MANAGED_POLICY}"
    }


def test_config_can_turn_the_preflight_off() -> None:
    s = stubbed_aws(REGION)
    # No STS/IAM/S3 reads expected: the first call is the base model lookup.
    s["sagemaker"].add_client_error("describe_hub_content", "ResourceNotFound", "no such model")
    cfg = config(task="find_number", **{"sagemaker.preflight": False})
    with pytest.raises(SageMakerError, match="list-hub-contents"):
        SageMakerBackend(aws=s.aws).train(
            FindNumberTask(),
            cfg,
            SageMakerTrainOptions(console=Console(file=io.StringIO())),
        )
    s.assert_done()


def test_eval_purpose_reads_only_the_evaluation_rows() -> None:
    s = stubbed_aws(REGION)
    s["sts"].add_response(
        "get_caller_identity", {"Account": ACCOUNT, "Arn": "arn:aws:iam::1:user/x", "UserId": "A"}
    )
    s["s3"].add_response("get_bucket_location", {}, {"Bucket": "agentrft-data"})
    s["s3"].add_response(
        "get_object",
        {"Body": StreamingBody(io.BytesIO(ROWS), len(ROWS))},
        {"Bucket": "agentrft-data", "Key": "eval.jsonl"},
    )
    cfg = config(**{"sagemaker.runtime_arn": None, "sagemaker.role_arn": None,
                    "sagemaker.output_s3_path": None, "sagemaker.mlflow_resource_arn": None,
                    "sagemaker.evaluation_s3_uri": "s3://agentrft-data/eval.jsonl"})  # fmt: skip
    report = run_preflight(cfg, purpose="eval", task=FindNumberTask(), aws=s.aws)
    s.assert_done()  # the train rows were not read
    checks = by_name(report)
    assert checks["evaluation rows parse as find_number"].status == "ok"
    assert checks[f"evaluation data bucket in {REGION}"].status == "ok"
    assert checks["runtime ARN in the job's region"].status == "fail"  # required for eval
    assert checks[f"output path bucket in {REGION}"].status == "fail"
