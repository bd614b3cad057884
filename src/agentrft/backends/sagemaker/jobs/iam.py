"""IAM for the two roles: the exact policies to create, and reads that check existing roles.

Job role: assumed by `job.sagemaker.amazonaws.com` (NOT `sagemaker.amazonaws.com`) with
sts:AssumeRole and sts:TagSession; managed policy AmazonSageMakerJobFullAccess.
Runtime role: assumed by `bedrock-agentcore.amazonaws.com`; managed policy
AmazonSageMakerJobRuntimeAccess (Sample, CompleteRollout, UpdateReward, CallWithBearerToken).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from agentrft.backends.sagemaker.jobs import service_facts as facts

if TYPE_CHECKING:
    from agentrft.backends.sagemaker.jobs.aws import Aws


def job_role_trust_policy() -> dict[str, Any]:
    """The trust policy the job role needs, verbatim."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": facts.JOB_ROLE_PRINCIPAL},
                "Action": list(facts.JOB_ROLE_TRUST_ACTIONS),
            }
        ],
    }


def runtime_role_trust_policy(account: str | None = None) -> dict[str, Any]:
    """The trust policy of the AgentCore runtime role (scoped to the account when known)."""
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"Service": facts.RUNTIME_ROLE_PRINCIPAL},
        "Action": "sts:AssumeRole",
    }
    if account:
        statement["Condition"] = {"StringEquals": {"aws:SourceAccount": account}}
    return {"Version": "2012-10-17", "Statement": [statement]}


def caller_policy(job_role_arn: str) -> dict[str, Any]:
    """What the person who runs `agentrft train` needs besides read access."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": job_role_arn,
                "Condition": {"StringEquals": {"iam:PassedToService": facts.JOB_ROLE_PRINCIPAL}},
            },
            {
                "Effect": "Allow",
                "Action": [
                    "sagemaker:CreateJob",
                    "sagemaker:DescribeJob",
                    "sagemaker:ListJobs",
                    "sagemaker:StopJob",
                    "sagemaker:DescribeHubContent",
                    "sagemaker:DescribeJobSchemaVersion",
                    "sagemaker:DescribeModelPackageGroup",
                    "sagemaker:CreateModelPackageGroup",
                ],
                "Resource": "*",
            },
        ],
    }


def policy_json(policy: dict[str, Any]) -> str:
    return json.dumps(policy, indent=2)


def _as_document(raw: Any) -> dict[str, Any]:
    """IAM returns policy documents URL-encoded; boto3 usually decodes them already."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            return json.loads(unquote(raw))
        except ValueError:
            return {}
    return {}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def trust_problems(document: Any, principal: str, actions: tuple[str, ...]) -> list[str]:
    """What is missing for `principal` to assume the role with `actions` ([] = fine)."""
    doc = _as_document(document)
    granted: set[str] = set()
    principals_seen: set[str] = set()
    for st in _as_list(doc.get("Statement")):
        if not isinstance(st, dict) or st.get("Effect") != "Allow":
            continue
        services = _as_list((st.get("Principal") or {}).get("Service"))
        principals_seen.update(services)
        if principal in services:
            granted.update(_as_list(st.get("Action")))
    problems = []
    if principal not in principals_seen:
        wrong = (
            f" (it trusts {', '.join(sorted(principals_seen))} instead)" if principals_seen else ""
        )
        problems.append(f"the role does not trust {principal}{wrong}")
    else:
        missing = [a for a in actions if a not in granted and "sts:*" not in granted]
        if missing:
            problems.append(f"{principal} is not allowed {', '.join(missing)}")
    return problems


def role_name(role_arn: str) -> str:
    return role_arn.rsplit("/", 1)[-1]


def get_trust_policy(aws: Aws, role_arn: str) -> dict[str, Any]:
    """IAM GetRole -> the role's trust policy document."""
    role = aws.client("iam").get_role(RoleName=role_name(role_arn))["Role"]
    return _as_document(role.get("AssumeRolePolicyDocument"))


def attached_policy_names(aws: Aws, role_arn: str) -> list[str]:
    """IAM ListAttachedRolePolicies (all pages) -> managed policy names."""
    names: list[str] = []
    paginator = aws.client("iam").get_paginator("list_attached_role_policies")
    for page in paginator.paginate(RoleName=role_name(role_arn)):
        names.extend(p["PolicyName"] for p in page.get("AttachedPolicies", []))
    return names
