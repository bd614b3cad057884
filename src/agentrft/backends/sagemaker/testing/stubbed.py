"""Test support: an `Aws` whose clients are real boto3 clients wrapped in `Stubber`s.

The Stubber checks every request against botocore's service model and refuses any call it
was not told to expect, so nothing reaches the network. Credentials are fake and static.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentrft.backends.sagemaker.jobs.aws import Aws

#: Fake, static credentials (never valid anywhere).
FAKE_KEY = "AKIDAGENTRFTTEST0000"
FAKE_SECRET = "agentrft-test-secret-not-a-real-key-000000"
ACCOUNT = "111122223333"

SERVICES = ("sagemaker", "s3", "iam", "sts", "bedrock-agentcore-control")


@dataclass
class StubbedAws:
    aws: Aws
    stubs: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, service: str) -> Any:
        return self.stubs[service]

    def assert_done(self) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()

    def close(self) -> None:
        for stub in self.stubs.values():
            stub.deactivate()


def stubbed_aws(region: str = "us-east-1", services: Iterable[str] = SERVICES) -> StubbedAws:
    """An `Aws` in `region` with a stubbed client per service (activated)."""
    import boto3
    from botocore.stub import Stubber

    session = boto3.session.Session(
        aws_access_key_id=FAKE_KEY, aws_secret_access_key=FAKE_SECRET, region_name=region
    )
    aws = Aws(session=session, region=region)
    out = StubbedAws(aws)
    for service in services:
        client = session.client(service, region_name=region)
        aws.clients[service] = client
        stub = Stubber(client)
        stub.activate()
        out.stubs[service] = stub
    return out


# -- canned responses (shapes valid against the model; the Stubber checks them too) -------

_T0 = "2026-06-03T10:00:00Z"


def job_arn(name: str, category: str = "AgentRFT", region: str = "us-east-1") -> str:
    return f"arn:aws:sagemaker:{region}:{ACCOUNT}:job/{category}/{name}"


def describe_job_response(
    name: str,
    *,
    category: str = "AgentRFT",
    status: str = "InProgress",
    secondary: str = "Training",
    document: dict[str, Any] | None = None,
    failure_reason: str | None = None,
    region: str = "us-east-1",
    eula_uri: str | None = None,
) -> dict[str, Any]:
    """DescribeHubContent's answer for `name`; `eula_uri` is the document's HostingEulaUri
    (the s3:// license file of a gated model)."""
    import datetime as dt
    import json

    t0 = dt.datetime(2026, 6, 3, 10, 0, tzinfo=dt.timezone.utc)
    resp: dict[str, Any] = {
        "JobName": name,
        "JobArn": job_arn(name, category, region),
        "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/agentrft-job",
        "JobCategory": category,
        "JobConfigSchemaVersion": "1.0.0",
        "JobConfigDocument": json.dumps(document or {}),
        "CreationTime": t0,
        "LastModifiedTime": t0,
        "JobStatus": status,
        "SecondaryStatus": secondary,
        "SecondaryStatusTransitions": [{"Status": secondary, "StartTime": t0}],
    }
    if status in ("Completed", "Failed", "Stopped"):
        resp["EndTime"] = t0 + dt.timedelta(hours=12, minutes=40)
    if failure_reason:
        resp["FailureReason"] = failure_reason
    return resp


def hub_content_response(
    name: str = "openai-reasoning-gpt-oss-20b",
    version: str = "1.2.0",
    *,
    recipes: list[dict[str, Any]] | None = None,
    region: str = "us-east-1",
    eula_uri: str | None = None,
) -> dict[str, Any]:
    """DescribeHubContent's answer for `name`; `eula_uri` is the document's HostingEulaUri
    (the s3:// license file of a gated model)."""
    import datetime as dt
    import json

    if recipes is None:
        recipes = [
            {
                "CustomizationTechnique": "MTRL",
                "Peft": "LORA",
                "SmtjRecipeTemplateS3Uri": f"s3://jumpstart-cache-prod-{region}/recipes/mtrl.yaml",
                "SmtjOverrideParamsS3Uri": f"s3://jumpstart-cache-prod-{region}/recipes/mtrl-params.json",
            },
            {"CustomizationTechnique": "SFT", "SmtjRecipeTemplateS3Uri": "s3://x/sft.yaml"},
        ]
    return {
        "HubContentName": name,
        "HubContentArn": f"arn:aws:sagemaker:{region}:aws:hub-content/SageMakerPublicHub/Model/{name}/{version}",
        "HubContentVersion": version,
        "HubContentType": "Model",
        "DocumentSchemaVersion": "2.0.0",
        "HubName": "SageMakerPublicHub",
        "HubArn": f"arn:aws:sagemaker:{region}:aws:hub/SageMakerPublicHub",
        "HubContentDocument": json.dumps(
            {"RecipeCollection": recipes, **({"HostingEulaUri": eula_uri} if eula_uri else {})}
        ),
        "HubContentStatus": "Available",
        "CreationTime": dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc),
    }
