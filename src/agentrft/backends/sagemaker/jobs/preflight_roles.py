"""The preflight's IAM checks: the job role SageMaker assumes (trust, managed policy) and
the AgentCore runtime's execution role (the job runtime policy, trust). Each reads only
(GetRole, ListAttachedRolePolicies) and each failure says the command that fixes it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentrft.backends.sagemaker.jobs import iam
from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import (
    SageMakerError,
    error_code,
    error_message,
    is_access_denied,
    parse_arn,
)

if TYPE_CHECKING:
    from agentrft.backends.sagemaker.jobs.aws import Aws
    from agentrft.backends.sagemaker.jobs.preflight_report import PreflightReport
    from agentrft.backends.sagemaker.settings import SageMakerRunConfig

__all__ = ["check_job_role", "check_runtime_role"]


def check_job_role(
    report: PreflightReport, aws: Aws, config: SageMakerRunConfig, *, required: bool
) -> None:
    arn = config.sagemaker.role_arn
    name = f"job role trusts {facts.JOB_ROLE_PRINCIPAL}"
    trust = iam.policy_json(iam.job_role_trust_policy())
    if not arn:
        if required:
            report.add(name, "fail", "no job role ARN", "pass --role-arn or set sagemaker.role_arn")
            report.appendix.append(f"Trust policy for the job role:\n{trust}")
        else:
            report.add(name, "skip", "sagemaker.role_arn not set")
        return
    try:
        parse_arn(arn, what="job role ARN")
        document = iam.get_trust_policy(aws, arn)
    except SageMakerError as exc:
        report.add(name, "fail", str(exc), "arn:aws:iam::<account>:role/<name>")
        return
    except Exception as exc:
        if is_access_denied(exc):
            report.add(
                name,
                "warn",
                "not permitted to read the role (iam:GetRole); cannot verify",
                "make sure its trust policy is exactly the one printed below",
            )
            report.appendix.append(f"Trust policy the job role must have ({arn}):\n{trust}")
        elif error_code(exc) == "NoSuchEntity":
            report.add(name, "fail", f"role {arn} does not exist", "create it (docs/sagemaker.md)")
            report.appendix.append(f"Trust policy for the job role:\n{trust}")
        else:
            report.add(name, "fail", f"{error_code(exc)}: {error_message(exc)}")
        return
    problems = iam.trust_problems(document, facts.JOB_ROLE_PRINCIPAL, facts.JOB_ROLE_TRUST_ACTIONS)
    if problems:
        report.add(
            name,
            "fail",
            "; ".join(problems),
            f"replace the trust policy: aws iam update-assume-role-policy --role-name "
            f"{iam.role_name(arn)} --policy-document file://trust.json (below); the wrong "
            f"principal fails jobs with 'Could not assume role'",
        )
        report.appendix.append(f"trust.json for {arn}:\n{trust}")
    else:
        report.add(name, "ok", arn)
    try:
        names = iam.attached_policy_names(aws, arn)
    except Exception as exc:
        if is_access_denied(exc):
            return  # already warned or verified trust; permissions are checked by the service
        report.add(f"job role has {facts.JOB_ROLE_MANAGED_POLICY}", "warn", error_message(exc))
        return
    if facts.JOB_ROLE_MANAGED_POLICY in names:
        report.add(f"job role has {facts.JOB_ROLE_MANAGED_POLICY}", "ok")
    else:
        report.add(
            f"job role has {facts.JOB_ROLE_MANAGED_POLICY}",
            "warn",
            f"attached: {', '.join(names) or 'none'} (inline policies not inspected)",
            f"aws iam attach-role-policy --role-name {iam.role_name(arn)} --policy-arn "
            f"arn:aws:iam::aws:policy/{facts.JOB_ROLE_MANAGED_POLICY}",
        )


def check_runtime_role(
    report: PreflightReport, aws: Aws, arn: str | None, account: str, *, required: bool
) -> None:
    name = f"runtime role has {facts.RUNTIME_ROLE_MANAGED_POLICY}"
    if not arn:
        report.add(
            name,
            "fail" if required else "skip",
            "runtime role unknown (set sagemaker.runtime_role_arn, or a readable runtime ARN)",
            "pass --role-arn to deploy" if required else "",
        )
        return
    try:
        names = iam.attached_policy_names(aws, arn)
    except Exception as exc:
        if is_access_denied(exc):
            report.add(
                name,
                "warn",
                "not permitted to list the role's policies (iam:ListAttachedRolePolicies)",
                f"make sure {arn} has {facts.RUNTIME_ROLE_MANAGED_POLICY} attached",
            )
        elif error_code(exc) == "NoSuchEntity":
            report.add(name, "fail", f"role {arn} does not exist", "create it (docs/sagemaker.md)")
        else:
            report.add(name, "fail", f"{error_code(exc)}: {error_message(exc)}")
        return
    if facts.RUNTIME_ROLE_MANAGED_POLICY in names:
        report.add(name, "ok", arn)
    else:
        report.add(
            name,
            "fail",
            f"{arn} has {', '.join(names) or 'no managed policies'}; without it every "
            "rollout fails to report its reward",
            f"aws iam attach-role-policy --role-name {iam.role_name(arn)} --policy-arn "
            f"arn:aws:iam::aws:policy/{facts.RUNTIME_ROLE_MANAGED_POLICY}",
        )
    try:
        document = iam.get_trust_policy(aws, arn)
    except Exception:
        return  # trust of the runtime role is verified by AgentCore at deploy time
    problems = iam.trust_problems(document, facts.RUNTIME_ROLE_PRINCIPAL, ("sts:AssumeRole",))
    if problems:
        report.add(
            f"runtime role trusts {facts.RUNTIME_ROLE_PRINCIPAL}",
            "fail",
            "; ".join(problems),
            "update its trust policy to the one printed below",
        )
        report.appendix.append(
            f"Trust policy for the runtime role {arn}:\n"
            + iam.policy_json(iam.runtime_role_trust_policy(account))
        )
