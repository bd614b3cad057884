"""Inputs that are provably wrong, found without any AWS call.

A job role that is a user or lives in another partition, a runtime or MLflow app in another
region than the job, an S3 URI without a bucket or with a name S3 would never accept:
CreateJob refuses each (or the job fails later), and none needs a lookup to see. These
checks run before every submission and every dry run, with no credentials and no network.
Only what follows from the strings themselves is refused; what needs the account (does the
role exist, where is this bucket) is the online preflight's (`preflight.py`).
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Literal

from agentrft.backends.sagemaker.jobs.aws import SageMakerError

if TYPE_CHECKING:
    from agentrft.backends.sagemaker.settings import SageMakerConfig, SageMakerRunConfig

Purpose = Literal["train", "eval"]

# The SageMaker SDK's own patterns (sagemaker-train 1.27, multi_turn_rl_trainer.py).
_RUNTIME_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):bedrock-agentcore:(?P<region>[a-z0-9-]+):[0-9]{12}:"
    r"runtime/[a-zA-Z0-9_-]+$"
)
_LAMBDA_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):lambda:(?P<region>[a-z0-9-]+):[0-9]{12}:function:"
    r"[a-zA-Z0-9-_.]+(:\$LATEST|:[a-zA-Z0-9-_]+)?$"
)
_MLFLOW_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):sagemaker:(?P<region>[a-z0-9-]+):[0-9]{12}:"
    r"(?:mlflow-app|mlflow-tracking-server)/[a-zA-Z0-9-]+$"
)
# botocore's RoleArn pattern for CreateJob: arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+
_ROLE_ARN = re.compile(r"^arn:(?P<partition>aws[a-z-]*):iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$")
_IAM_ARN = re.compile(r"^arn:(?P<partition>aws[a-z-]*):iam::(?P<account>\d{12}):(?P<kind>[a-z-]+)/")
_PACKAGE_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):sagemaker:(?P<region>[a-z0-9-]+):[0-9]{12}:"
    r"model-package/[a-zA-Z0-9][a-zA-Z0-9-/]*$"
)
_GROUP_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):sagemaker:(?P<region>[a-z0-9-]+):[0-9]{12}:"
    r"model-package-group/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
)
_KMS_ARN = re.compile(r"^arn:(?P<partition>aws[a-z-]*):kms:(?P<region>[a-z0-9-]+):[0-9]{12}:")
# S3 bucket naming rules (general purpose buckets).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_BUCKET_RESERVED = (("xn--", "sthree-", "amzn-s3-demo-"), ("-s3alias", "--ol-s3", ".mrap"))
# SageMaker's default bucket names its region: sagemaker-<region>-<account> [sdk].
_DEFAULT_BUCKET = re.compile(r"^sagemaker-(?P<region>[a-z]{2}(?:-[a-z]+)+-\d)-\d{12}$")
_ACCESS_POINT = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):s3:(?P<region>[a-z0-9-]+):\d{12}:accesspoint/"
)


def partition_of(region: str) -> str:
    """The partition a region belongs to (botocore's local endpoint data; no call)."""
    import botocore.session

    try:
        return str(botocore.session.get_session().get_partition_for_region(region))
    except Exception:  # an unknown region: the commercial partition
        return "aws"


def _short(value: str) -> str:
    return repr(value if len(value) <= 120 else value[:120] + "...")


def bucket_problem(bucket: str) -> str | None:
    """Why S3 would never accept `bucket` as a general purpose bucket name, or None."""
    if not _BUCKET.match(bucket):
        return (
            "3-63 lowercase letters, digits, dots and hyphens, starting and ending with a "
            "letter or digit"
        )
    if ".." in bucket or ".-" in bucket or "-." in bucket:
        return "no two adjacent dots, and no dot next to a hyphen"
    try:
        ipaddress.IPv4Address(bucket)
        return "not an IP address"
    except ValueError:
        pass
    prefixes, suffixes = _BUCKET_RESERVED
    if bucket.startswith(prefixes) or bucket.endswith(suffixes):
        return "a prefix or suffix S3 reserves (xn--, sthree-, -s3alias, --ol-s3, ...)"
    return None


def s3_uri_problem(uri: str, region: str, partition: str) -> str | None:
    """Why `uri` cannot be a job's S3 location in `region`, or None."""
    if not uri.startswith("s3://"):
        return "must start with s3:// (s3://bucket/key)"
    rest = uri[len("s3://") :]
    if not rest:
        return "has no bucket (s3://bucket/key)"
    access_point = _ACCESS_POINT.match(rest)
    if access_point:
        if access_point["partition"] != partition or access_point["region"] != region:
            return f"is an access point in {access_point['region']}; the job runs in {region}"
        return None
    bucket = rest.split("/", 1)[0]
    if not bucket:
        return "has no bucket name before its first / (s3://bucket/key)"
    why = bucket_problem(bucket)
    if why:
        return f"bucket {bucket!r} is not a valid S3 bucket name ({why})"
    default = _DEFAULT_BUCKET.match(bucket)
    if default and default["region"] != region:
        return (
            f"is SageMaker's default bucket of {default['region']}; the job runs in {region} "
            "and the bucket must be in the same region"
        )
    return None


def _arn_region(
    problems: list[str],
    what: str,
    flag: str,
    value: str,
    pattern: re.Pattern[str],
    shape: str,
    region: str,
    partition: str,
) -> None:
    m = pattern.match(value)
    if not m:
        problems.append(f"{what} {_short(value)} ({flag}) is not {shape}")
    elif m["partition"] != partition:
        problems.append(
            f"{what} {_short(value)} ({flag}) is in partition {m['partition']}; a job in "
            f"{region} runs in {partition}"
        )
    elif m["region"] != region:
        problems.append(
            f"{what} ({flag}) is in {m['region']}, the job runs in {region}: the job, the "
            f"runtime, the MLflow app and the buckets must share one region (pass "
            f"--region {m['region']}, or use one in {region})"
        )


_ACCOUNT = re.compile(r"^arn:[^:]+:[^:]+:[^:]*:(?P<account>\d{12}):")


def _account(arn: str) -> str | None:
    """The account an ARN names (None when it names none, or is not an ARN)."""
    m = _ACCOUNT.match(arn)
    return m["account"] if m else None


def role_problem(role_arn: str, partition: str) -> str | None:
    """Why `role_arn` cannot be a job role for a job in `partition`, or None."""
    iam = _IAM_ARN.match(role_arn)
    if iam and iam["kind"] != "role":
        return (
            f"job role {_short(role_arn)} (--role-arn) is an IAM {iam['kind']}, not a role: "
            "the job assumes a role trusted by job.sagemaker.amazonaws.com"
        )
    m = _ROLE_ARN.match(role_arn)
    if not m:
        return (
            f"job role {_short(role_arn)} (--role-arn) is not an IAM role ARN "
            "(arn:aws:iam::<account>:role/<name>)"
        )
    if m["partition"] != partition:
        return (
            f"job role {_short(role_arn)} (--role-arn) is in partition {m['partition']}; the "
            f"job's region is in {partition} (arn:{partition}:iam::<account>:role/<name>)"
        )
    return None


def input_problems(
    config: SageMakerRunConfig,
    region: str,
    purpose: Purpose = "train",
    *,
    model_package_arn: str | None = None,
) -> list[str]:
    """Every provably wrong input of a `purpose` job in `region`, one line each.

    `model_package_arn` is the package an evaluation runs (`--model-package-arn`), when it
    is not the config's `sagemaker.input_model_package_arn`.
    """
    sm = config.sagemaker
    partition = partition_of(region)
    problems: list[str] = []
    if sm.role_arn:
        problem = role_problem(sm.role_arn, partition)
        if problem:
            problems.append(problem)
    if sm.runtime_arn:
        pattern = _LAMBDA_ARN if ":lambda:" in sm.runtime_arn else _RUNTIME_ARN
        _arn_region(problems, "runtime", "--runtime-arn", sm.runtime_arn, pattern,
                    "an AgentCore runtime ARN (arn:aws:bedrock-agentcore:<region>:<account>:"
                    "runtime/<id>) or a Lambda function ARN", region, partition)  # fmt: skip
    if sm.runtime_arn and sm.role_arn and ":bedrock-agentcore:" in sm.runtime_arn:
        runtime_account, role_account = _account(sm.runtime_arn), _account(sm.role_arn)
        if runtime_account and role_account and runtime_account != role_account:
            problems.append(
                f"runtime {_short(sm.runtime_arn)} (--runtime-arn) is in account "
                f"{runtime_account}, the job role (--role-arn) in {role_account}: the job "
                "invokes a runtime of its own account only; deploy the runtime in "
                f"{role_account} (agentrft deploy) or run the job there"
            )
    if sm.mlflow_resource_arn:
        _arn_region(problems, "MLflow app", "--mlflow-arn", sm.mlflow_resource_arn, _MLFLOW_ARN,
                    "a SageMaker MLflow app ARN (arn:aws:sagemaker:<region>:<account>:"
                    "mlflow-app/<id>)", region, partition)  # fmt: skip
    if sm.input_model_package_arn:
        _arn_region(problems, "model package", "sagemaker.input_model_package_arn",
                    sm.input_model_package_arn, _PACKAGE_ARN,
                    "a model package ARN (arn:aws:sagemaker:<region>:<account>:"
                    "model-package/<group>/<version>)", region, partition)  # fmt: skip
    if model_package_arn and model_package_arn != sm.input_model_package_arn:
        _arn_region(problems, "model package", "--model-package-arn", model_package_arn,
                    _PACKAGE_ARN, "a model package ARN (arn:aws:sagemaker:<region>:<account>:"
                    "model-package/<group>/<version>)", region, partition)  # fmt: skip
    for key in ("output_model_package_group", "checkpoint_model_package_group"):
        value = getattr(sm, key)
        if value and value.startswith("arn:"):
            _arn_region(problems, "model package group", f"sagemaker.{key}", value, _GROUP_ARN,
                        "a model package group ARN", region, partition)  # fmt: skip
    if sm.kms_key_arn and sm.kms_key_arn.startswith("arn:"):
        _arn_region(problems, "KMS key", "sagemaker.kms_key_arn", sm.kms_key_arn, _KMS_ARN,
                    "a KMS key ARN", region, partition)  # fmt: skip
    uris = {"output path (--output-path)": sm.output_s3_path}
    if purpose == "train":
        uris["train data (--train-uri)"] = sm.train_s3_uri
        uris["validation data (--validation-uri)"] = sm.validation_s3_uri
    else:
        uris["evaluation data (--eval-uri)"] = sm.evaluation_s3_uri or sm.validation_s3_uri
    for label, uri in uris.items():
        if uri is None:
            continue
        problem = s3_uri_problem(uri, region, partition)
        if problem:
            problems.append(f"{label} {_short(uri)} {problem}")
    return problems


def raise_for_inputs(
    config: SageMakerRunConfig,
    region: str,
    purpose: Purpose = "train",
    *,
    model_package_arn: str | None = None,
) -> None:
    """Raise `SageMakerError` naming every provably wrong input (nothing was sent)."""
    problems = input_problems(config, region, purpose, model_package_arn=model_package_arn)
    if len(problems) == 1:
        raise SageMakerError(problems[0])
    if problems:
        raise SageMakerError(
            f"{len(problems)} inputs are wrong (nothing was sent):\n- " + "\n- ".join(problems)
        )


def missing_settings(sm: SageMakerConfig, needed: dict[str, str]) -> list[str]:
    """`needed` (setting -> its flag) that the `sagemaker` section leaves unset, each as
    `--flag (sagemaker.key)` for the error that lists them."""
    return [f"{flag} (sagemaker.{key})" for key, flag in needed.items() if not getattr(sm, key)]
