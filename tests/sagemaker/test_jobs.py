"""Training jobs: the CreateJob request, dry runs, --wait, and the jobs verbs, all through real
boto3 clients under botocore's Stubber (requests validated against the service model)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY
from rich.console import Console

from agentrft.backends.sagemaker.backend import SageMakerBackend
from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import SageMakerError
from agentrft.backends.sagemaker.jobs.job_document import (
    hp_value,
    make_job_name,
    read_job,
    training_hyperparameters,
    validate_job_name,
    validate_request,
)
from agentrft.backends.sagemaker.jobs.lifecycle import (
    describe_job,
    list_jobs,
    split_job_ref,
    stop_job,
)
from agentrft.backends.sagemaker.settings import SageMakerTrainOptions
from agentrft.backends.sagemaker.testing.stubbed import (
    ACCOUNT,
    describe_job_response,
    hub_content_response,
    job_arn,
    stubbed_aws,
)
from agentrft.config_model import load_config
from agentrft.testing import FindNumberTask

REGION = "us-east-1"
RUNTIME = f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/agentrft_find_number-AbCdEfGhIj"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/agentrft-job"
MLFLOW = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:mlflow-app/app-ABC123"
OUT_GROUP = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package-group/openai-reasoning-gpt-oss-20b-mtrl-mpg"
CKPT_GROUP = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package-group/openai-reasoning-gpt-oss-20b-mtrl-checkpoint-mpg"
BASE_ARN = f"arn:aws:sagemaker:{REGION}:aws:hub-content/SageMakerPublicHub/Model/openai-reasoning-gpt-oss-20b/1.2.0"


@pytest.fixture(autouse=True)
def no_real_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Fake static credentials, no config files, no instance metadata: nothing real leaks in."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDAGENTRFTTEST0000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def config(**sagemaker: Any) -> Any:
    values = {
        "task": "find_number",
        "sagemaker.runtime_arn": RUNTIME,
        "sagemaker.role_arn": ROLE,
        "sagemaker.train_s3_uri": "s3://agentrft-data/find_number/train.jsonl",
        "sagemaker.validation_s3_uri": "s3://agentrft-data/find_number/validation.jsonl",
        "sagemaker.output_s3_path": "s3://agentrft-data/output/",
        "sagemaker.mlflow_resource_arn": MLFLOW,
        "sagemaker.job_name": "agentrft-find-number-1",
    }
    values.update({f"sagemaker.{k}": v for k, v in sagemaker.items()})
    return load_config(values=values)


def console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=200, highlight=False, color_system=None), buf


def body(data: bytes) -> StreamingBody:
    return StreamingBody(io.BytesIO(data), len(data))


SPECS = {
    "learning_rate": {"type": "float", "default": 1e-5, "min": 1e-7, "max": 1e-2},
    "max_steps": {"type": "integer", "default": 100, "min": 1, "max": 1000},
    "global_batch_size": {"type": "integer", "default": 128, "enum": [32, 64, 128]},
}


TRAINING_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["AgentConfig", "InputDataConfig", "OutputDataConfig", "ModelPackageConfig",
                 "TrainingConfig"],
    "properties": {
        "InputDataConfig": {"type": "array", "minItems": 1},
        "TrainingConfig": {
            "type": "object",
            "required": ["BaseModelArn"],
            "properties": {"HyperParameters": {"type": "object",
                                               "additionalProperties": {"type": "string"}}},
        },
    },
}  # fmt: skip


def expect_schema(s: Any, schema: dict[str, Any], category: str = "AgentRFT") -> None:
    s["sagemaker"].add_response(
        "describe_job_schema_version",
        {"JobCategory": category, "JobConfigSchemaVersion": "1.0.0",
         "JobConfigSchema": json.dumps(schema)},
        {"JobCategory": category, "JobConfigSchemaVersion": "1.0.0"},
    )  # fmt: skip


def expect_resolution(s: Any, *, checkpoint_exists: bool = True, create: bool = True) -> None:
    """DescribeHubContent, the recipe's specs on S3, then the two model package groups."""
    s["sagemaker"].add_response(
        "describe_hub_content",
        hub_content_response(),
        {"HubName": "SageMakerPublicHub", "HubContentType": "Model",
         "HubContentName": "openai-reasoning-gpt-oss-20b"},
    )  # fmt: skip
    s["s3"].add_response(
        "get_object",
        {"Body": body(json.dumps(SPECS).encode())},
        {"Bucket": f"jumpstart-cache-prod-{REGION}", "Key": "recipes/mtrl-params.json"},
    )
    s["sagemaker"].add_response(
        "describe_model_package_group",
        {
            "ModelPackageGroupName": "openai-reasoning-gpt-oss-20b-mtrl-mpg",
            "ModelPackageGroupArn": OUT_GROUP,
            "CreationTime": "2026-06-01T00:00:00Z",
            "CreatedBy": {},
            "ModelPackageGroupStatus": "Completed",
        },
        {"ModelPackageGroupName": "openai-reasoning-gpt-oss-20b-mtrl-mpg"},
    )
    if checkpoint_exists:
        s["sagemaker"].add_response(
            "describe_model_package_group",
            {
                "ModelPackageGroupName": "openai-reasoning-gpt-oss-20b-mtrl-checkpoint-mpg",
                "ModelPackageGroupArn": CKPT_GROUP,
                "CreationTime": "2026-06-01T00:00:00Z",
                "CreatedBy": {},
                "ModelPackageGroupStatus": "Completed",
            },
            {"ModelPackageGroupName": "openai-reasoning-gpt-oss-20b-mtrl-checkpoint-mpg"},
        )
        return
    s["sagemaker"].add_client_error(
        "describe_model_package_group",
        "ValidationException",
        "ModelPackageGroup openai-reasoning-gpt-oss-20b-mtrl-checkpoint-mpg does not exist.",
    )
    if create:
        s["sagemaker"].add_response(
            "create_model_package_group",
            {"ModelPackageGroupArn": CKPT_GROUP},
            {"ModelPackageGroupName": "openai-reasoning-gpt-oss-20b-mtrl-checkpoint-mpg",
             "ModelPackageGroupDescription": "agentrft"},
        )  # fmt: skip
    else:
        s["sts"].add_response(
            "get_caller_identity",
            {"Account": ACCOUNT, "Arn": "arn:aws:iam::1:user/x", "UserId": "X"},
        )


# -- the request ----------------------------------------------------------------------


def test_train_submits_the_contract_request_through_the_stubbed_client() -> None:
    s = stubbed_aws(REGION)
    expect_resolution(s, checkpoint_exists=False)
    expect_schema(s, TRAINING_SCHEMA)
    s["sagemaker"].add_response(
        "create_job",
        {"JobArn": job_arn("agentrft-find-number-1")},
        {
            "JobName": "agentrft-find-number-1",
            "RoleArn": ROLE,
            "JobCategory": "AgentRFT",
            "JobConfigSchemaVersion": "1.0.0",
            "JobConfigDocument": ANY,
            "Tags": [{"Key": "agentrft:task", "Value": "find_number"}],
        },
    )
    out, buf = console()
    result = SageMakerBackend(aws=s.aws).train(
        FindNumberTask(),
        config(send_hyperparameters="all"),
        SageMakerTrainOptions(console=out, skip_preflight=True),
    )
    s.assert_done()
    assert result.job_arn == job_arn("agentrft-find-number-1")
    doc = json.loads(result.request["JobConfigDocument"])
    assert doc["AgentConfig"] == {
        "BedrockAgentCoreConfig": {"AgentRuntimeArn": RUNTIME, "Qualifier": "DEFAULT"}
    }
    assert doc["InputDataConfig"] == [
        {"ChannelName": "train", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
         "S3Uri": "s3://agentrft-data/find_number/train.jsonl"}}},
        {"ChannelName": "validation", "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
         "S3Uri": "s3://agentrft-data/find_number/validation.jsonl"}}},
    ]  # fmt: skip
    assert doc["OutputDataConfig"] == {"S3OutputPath": "s3://agentrft-data/output/"}
    assert doc["ModelPackageConfig"] == {
        "OutputModelPackageGroupArn": OUT_GROUP,
        "IntermediateCheckpointModelPackageGroupArn": CKPT_GROUP,
    }
    training = doc["TrainingConfig"]
    assert training["BaseModelArn"] == BASE_ARN
    assert training["AcceptEula"] is True
    assert training["MlflowConfig"] == {
        "MlflowResourceArn": MLFLOW,
        "MlflowExperimentName": "agentrft-find_number",
        "MlflowRunName": "agentrft-find-number-1",
    }
    hps = training["HyperParameters"]  # send_hyperparameters=all: agentrft's 23 defaults
    assert len(hps) == 23 and all(isinstance(v, str) for v in hps.values())
    assert hps["global_batch_size"] == "128" and hps["group_size"] == "8"
    assert hps["learning_rate"] == "4e-05" and hps["loss_fn"] == "ppo"
    assert hps["pass_k_values"] == "[1, 2, 4, 8, 16, 32]"
    assert (
        "model package group openai-reasoning-gpt-oss-20b-mtrl-checkpoint-mpg: created"
        in buf.getvalue()
    )


def test_dry_run_with_lookups_prints_a_request_botocore_accepts_and_creates_nothing() -> None:
    s = stubbed_aws(REGION)
    expect_resolution(s, checkpoint_exists=False, create=False)
    out, buf = console()
    result = SageMakerBackend(aws=s.aws).train(
        FindNumberTask(),
        config(extra_hyperparameters={"max_steps_off_policy": "3"}),
        SageMakerTrainOptions(dry_run=True, lookups=True, console=out),
    )
    s.assert_done()  # no CreateJob, no CreateModelPackageGroup were expected or made
    assert result.dry_run and result.job_arn is None
    text = buf.getvalue()
    printed = json.loads(text[text.index("{") : text.index("\n\nJobConfigDocument (decoded)")])
    assert printed == result.request
    validate_request("CreateJob", printed)
    # And a real client under the Stubber accepts exactly this request.
    s2 = stubbed_aws(REGION, services=["sagemaker"])
    s2["sagemaker"].add_response("create_job", {"JobArn": job_arn("x")}, printed)
    s2.aws.sagemaker.create_job(**printed)
    s2.assert_done()
    doc = json.loads(printed["JobConfigDocument"])
    assert doc["ModelPackageConfig"]["IntermediateCheckpointModelPackageGroupArn"] == CKPT_GROUP
    assert doc["TrainingConfig"]["HyperParameters"]["max_steps_off_policy"] == "3"
    assert "would create" in text


def test_offline_dry_run_needs_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    out, buf = console()
    result = SageMakerBackend().train(
        FindNumberTask(),
        config(base_model_version="1.2.0"),
        SageMakerTrainOptions(dry_run=True, console=out),
    )
    validate_request("CreateJob", result.request)
    doc = json.loads(result.request["JobConfigDocument"])
    assert doc["TrainingConfig"]["BaseModelArn"] == BASE_ARN  # region taken from the runtime ARN
    assert doc["ModelPackageConfig"]["OutputModelPackageGroupArn"] == OUT_GROUP  # role's account
    assert "offline" in buf.getvalue()


def test_send_only_set_hyperparameters_leaves_the_rest_to_the_recipe() -> None:
    cfg = load_config(values={"max_steps": 100})
    assert cfg.sagemaker.send_hyperparameters == "set"  # the default
    assert training_hyperparameters(cfg) == {"max_steps": "100"}
    assert len(training_hyperparameters(cfg, only_set=False)) == 23


def test_missing_inputs_name_every_flag() -> None:
    cfg = load_config(values={"task": "find_number"})
    with pytest.raises(SageMakerError) as err:
        SageMakerBackend().train(FindNumberTask(), cfg, SageMakerTrainOptions(dry_run=True))
    for flag in ("--runtime-arn", "--role-arn", "--train-uri", "--output-path", "--mlflow-arn"):
        assert flag in str(err.value)


def test_out_of_range_hyperparameters_fail_before_any_call() -> None:
    cfg = config()
    cfg.global_batch_size = 100
    cfg.sampling_max_tokens = 64
    with pytest.raises(SageMakerError) as err:
        SageMakerBackend(aws=stubbed_aws().aws).train(
            FindNumberTask(), cfg, SageMakerTrainOptions(dry_run=True)
        )
    assert "global_batch_size=100" in str(err.value) and "32, 64, 128" in str(err.value)
    assert "sampling_max_tokens=64" in str(err.value)


def test_recipe_specs_reject_a_value_the_table_allows() -> None:
    s = stubbed_aws(REGION)
    s["sagemaker"].add_response("describe_hub_content", hub_content_response())
    s["s3"].add_response(
        "get_object", {"Body": body(json.dumps({"learning_rate": {"max": 1e-4}}).encode())}
    )
    cfg = config()
    cfg.learning_rate = 5e-3
    with pytest.raises(SageMakerError, match=r"learning_rate=0\.005 is above the recipe's maximum"):
        SageMakerBackend(aws=s.aws).train(
            FindNumberTask(), cfg, SageMakerTrainOptions(dry_run=True, lookups=True)
        )


def test_base_model_without_an_mtrl_recipe_is_refused() -> None:
    s = stubbed_aws(REGION)
    s["sagemaker"].add_response(
        "describe_hub_content",
        hub_content_response(recipes=[{"CustomizationTechnique": "SFT",
                                       "SmtjRecipeTemplateS3Uri": "s3://x/y"}]),
    )  # fmt: skip
    with pytest.raises(SageMakerError, match="no multi-turn RL"):
        SageMakerBackend(aws=s.aws).train(
            FindNumberTask(), config(), SageMakerTrainOptions(dry_run=True, lookups=True)
        )


def test_unknown_base_model_says_how_to_list_models() -> None:
    s = stubbed_aws(REGION)
    s["sagemaker"].add_client_error("describe_hub_content", "ResourceNotFound", "not found")
    with pytest.raises(SageMakerError, match="list-hub-contents"):
        SageMakerBackend(aws=s.aws).train(
            FindNumberTask(),
            config(base_model="nope"),
            SageMakerTrainOptions(dry_run=True, lookups=True),
        )


def test_create_job_assume_role_error_names_the_right_principal() -> None:
    s = stubbed_aws(REGION)
    expect_resolution(s)
    s["sagemaker"].add_client_error(
        "create_job", "ValidationException", "Could not assume role arn:aws:iam::1:role/x"
    )
    with pytest.raises(SageMakerError) as err:
        SageMakerBackend(aws=s.aws).train(
            FindNumberTask(),
            config(),
            SageMakerTrainOptions(console=console()[0], skip_preflight=True),
        )
    assert facts.JOB_ROLE_PRINCIPAL in str(err.value)


# -- --wait ----------------------------------------------------------------------------


def test_wait_polls_describe_job_and_ends_with_the_package_and_billed_tokens() -> None:
    s = stubbed_aws(REGION)
    expect_resolution(s)
    name = "agentrft-find-number-1"
    s["sagemaker"].add_response("create_job", {"JobArn": job_arn(name)})
    progress = {"ServiceOutput": {"ProgressInfo": {"MaxSteps": 100, "CurrentStep": 37},
                                  "RolloutInfo": {"Completed": 120, "Total": 1024}}}  # fmt: skip
    final = {
        "ServiceOutput": {
            "OutputModelPackageArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package/grp/1",
            "BillableTokenUsage": {"PrefillTokenCount": 491_600_000,
                                   "SampleTokenCount": 159_700_000,
                                   "TrainTokenCount": 643_300_000},
            "ProgressInfo": {"MaxSteps": 100, "CurrentStep": 100},
        }
    }  # fmt: skip
    for resp in (
        describe_job_response(name, secondary="Starting"),
        describe_job_response(name, secondary="Training", document=progress),
        describe_job_response(name, status="Completed", secondary="Completed", document=final),
    ):
        s["sagemaker"].add_response(
            "describe_job", resp, {"JobName": name, "JobCategory": "AgentRFT"}
        )
    sleeps: list[float] = []
    out, buf = console()
    result = SageMakerBackend(aws=s.aws, sleep=sleeps.append).train(
        FindNumberTask(),
        config(poll_s=5),
        SageMakerTrainOptions(wait=True, console=out, skip_preflight=True),
    )
    s.assert_done()
    assert sleeps == [5, 5]
    text = buf.getvalue()
    assert "Starting" in text and "step 37/100" in text and "rollouts 120/1024" in text
    assert f"output model package: arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package/grp/1" in text
    assert "prefill 491.6 M" in text and "training 643.3 M" in text
    assert "338" in text  # 491.6 M x 0.10 + 159.7 M x 0.40 + 643.3 M x 0.35 per million
    assert result.view is not None and result.view.billed_tokens["sampling"] == 159_700_000


def test_wait_on_a_failed_job_raises_with_the_reason() -> None:
    s = stubbed_aws(REGION)
    expect_resolution(s)
    name = "agentrft-find-number-1"
    s["sagemaker"].add_response("create_job", {"JobArn": job_arn(name)})
    s["sagemaker"].add_response(
        "describe_job",
        describe_job_response(name, status="Failed", secondary="Failed",
                              failure_reason="No sampling requests were received"),
    )  # fmt: skip
    with pytest.raises(SageMakerError, match="No sampling requests were received"):
        SageMakerBackend(aws=s.aws, sleep=lambda _: None).train(
            FindNumberTask(), config(), SageMakerTrainOptions(wait=True, console=console()[0], skip_preflight=True))  # fmt: skip


# -- jobs verbs ------------------------------------------------------------------------


def test_list_jobs_follows_pages_newest_first() -> None:
    s = stubbed_aws(REGION, services=["sagemaker"])
    summary = {
        "JobArn": job_arn("a"), "JobName": "a", "JobCategory": "AgentRFT",
        "JobStatus": "Completed", "JobSecondaryStatus": "Completed",
        "CreationTime": "2026-06-03T10:00:00Z", "LastModifiedTime": "2026-06-03T10:00:00Z",
    }  # fmt: skip
    params = {"JobCategory": "AgentRFT", "SortBy": "CreationTime", "SortOrder": "Descending",
              "StatusEquals": "Completed"}  # fmt: skip
    s["sagemaker"].add_response("list_jobs", {"JobSummaries": [summary], "NextToken": "t1"}, params)
    s["sagemaker"].add_response(
        "list_jobs",
        {"JobSummaries": [{**summary, "JobName": "b", "JobArn": job_arn("b")}]},
        {**params, "NextToken": "t1"},
    )
    jobs = list_jobs(s.aws, "AgentRFT", status="Completed")
    s.assert_done()
    assert [j["JobName"] for j in jobs] == ["a", "b"]


def test_describe_by_arn_uses_its_category_and_by_name_tries_both() -> None:
    s = stubbed_aws(REGION, services=["sagemaker"])
    s["sagemaker"].add_response(
        "describe_job",
        describe_job_response("ev1", category="AgentRFTEvaluation"),
        {"JobName": "ev1", "JobCategory": "AgentRFTEvaluation"},
    )
    view = describe_job(s.aws, job_arn("ev1", "AgentRFTEvaluation"))
    assert view.category == "AgentRFTEvaluation"
    s["sagemaker"].add_client_error("describe_job", "ResourceNotFound", "no such job")
    s["sagemaker"].add_response(
        "describe_job",
        describe_job_response("ev1", category="AgentRFTEvaluation"),
        {"JobName": "ev1", "JobCategory": "AgentRFTEvaluation"},
    )
    assert describe_job(s.aws, "ev1").name == "ev1"
    s["sagemaker"].add_client_error("describe_job", "ResourceNotFound", "no")
    s["sagemaker"].add_client_error("describe_job", "ResourceNotFound", "no")
    with pytest.raises(SageMakerError, match="agentrft jobs list"):
        describe_job(s.aws, "ghost")
    s.assert_done()


def test_stop_job_stops_a_running_job_and_refuses_a_finished_one() -> None:
    s = stubbed_aws(REGION, services=["sagemaker"])
    s["sagemaker"].add_response("describe_job", describe_job_response("run1"))
    s["sagemaker"].add_response("stop_job", {}, {"JobName": "run1", "JobCategory": "AgentRFT"})
    assert stop_job(s.aws, "run1", "AgentRFT").name == "run1"
    s["sagemaker"].add_response(
        "describe_job", describe_job_response("run1", status="Completed", secondary="Completed")
    )
    with pytest.raises(SageMakerError, match="already Completed"):
        stop_job(s.aws, "run1", "AgentRFT")
    s.assert_done()


def test_progress_reads_the_epoch_form_and_a_bad_document_reads_empty() -> None:
    resp = describe_job_response(
        "x",
        document={"ServiceOutput": {"ProgressInfo": {"MaxEpoch": 2, "StepsPerEpoch": 10,
                                                     "CurrentEpoch": 2, "CurrentStep": 3}}},
    )  # fmt: skip
    assert read_job(resp).progress == (13, 20)
    resp["JobConfigDocument"] = "not json"
    view = read_job(resp)
    assert (
        view.progress is None and view.billed_tokens == {} and view.output_model_package_arn is None
    )


def test_job_names_and_refs() -> None:
    import datetime as dt

    name = make_job_name("agentrft-expense_report" * 5, dt.datetime(2026, 6, 3, 10, 0))
    assert len(name) <= 63 and name.endswith("20260603-100000") and "_" not in name
    with pytest.raises(SageMakerError, match="1-63"):
        validate_job_name("bad_name")
    assert split_job_ref(job_arn("n1", "AgentRFTEvaluation")) == ("n1", "AgentRFTEvaluation")
    assert split_job_ref("n1") == ("n1", None)
    assert hp_value([1, 2]) == "[1, 2]" and hp_value(True) == "true" and hp_value(1e-5) == "1e-05"


def test_watch_tolerates_a_few_failed_polls_then_gives_up() -> None:
    from agentrft.backends.sagemaker.jobs.lifecycle import MAX_POLL_FAILURES, watch_job

    s = stubbed_aws(REGION, services=["sagemaker"])
    s["sagemaker"].add_client_error("describe_job", "ThrottlingException", "Rate exceeded")
    s["sagemaker"].add_response(
        "describe_job", describe_job_response("w1", status="Completed", secondary="Completed")
    )
    out, buf = console()
    assert watch_job(s.aws, "w1", "AgentRFT", console=out, sleep=lambda _: None).done
    assert "poll failed (1/5)" in buf.getvalue()
    for _ in range(MAX_POLL_FAILURES):
        s["sagemaker"].add_client_error("describe_job", "ThrottlingException", "Rate exceeded")
    with pytest.raises(SageMakerError, match="keeps running"):
        watch_job(s.aws, "w1", "AgentRFT", console=out, sleep=lambda _: None)
    s.assert_done()


def test_a_document_the_service_schema_rejects_is_not_submitted() -> None:
    s = stubbed_aws(REGION)
    expect_resolution(s)
    expect_schema(s, {**TRAINING_SCHEMA, "required": ["StoppingCondition"]})
    with pytest.raises(SageMakerError) as err:
        SageMakerBackend(aws=s.aws).train(
            FindNumberTask(),
            config(),
            SageMakerTrainOptions(console=console()[0], skip_preflight=True),
        )
    assert "does not match the service's schema" in str(err.value)
    assert "'StoppingCondition' is a required property" in str(err.value)
    s.assert_done()  # no CreateJob was queued, and none was attempted


def test_an_unreadable_schema_is_a_note_not_a_failure() -> None:
    s = stubbed_aws(REGION)
    expect_resolution(s)
    s["sagemaker"].add_client_error("describe_job_schema_version", "AccessDeniedException", "no")
    s["sagemaker"].add_response("create_job", {"JobArn": job_arn("agentrft-find-number-1")})
    out, buf = console()
    SageMakerBackend(aws=s.aws).train(
        FindNumberTask(),
        config(),
        SageMakerTrainOptions(console=out, skip_preflight=True),
    )
    s.assert_done()
    assert "document schema not checked" in buf.getvalue()


def test_nova_groups_are_created_restricted_as_the_sdk_does() -> None:
    from agentrft.backends.sagemaker.jobs.hub import ensure_model_package_group

    s = stubbed_aws(REGION, services=["sagemaker"])
    s["sagemaker"].add_client_error(
        "describe_model_package_group", "ValidationException", "ModelPackageGroup x does not exist."
    )
    s["sagemaker"].add_response(
        "create_model_package_group",
        {"ModelPackageGroupArn": OUT_GROUP},
        {"ModelPackageGroupName": "amazon-nova-lite-v2-mtrl-mpg",
         "ManagedConfiguration": {"ManagedStorageType": "Restricted"}},
    )  # fmt: skip
    found = ensure_model_package_group(s.aws, "amazon-nova-lite-v2-mtrl-mpg", restricted=True)
    assert found.action == "created"
    s.assert_done()


def test_no_hyperparameters_set_sends_none_and_the_recipe_decides(tmp_path: Any) -> None:
    out, buf = console()
    result = SageMakerBackend().train(
        FindNumberTask(),
        config(base_model_version="1.2.0"),
        SageMakerTrainOptions(dry_run=True, console=out),
    )
    doc = json.loads(result.request["JobConfigDocument"])
    assert "HyperParameters" not in doc["TrainingConfig"]  # as the SDK: nothing changed
    assert "0 hyperparameters sent" in buf.getvalue()
    assert all(not row.sent for row in result.plan or [])


@pytest.mark.parametrize(
    "model",
    ["openai-reasoning-gpt-oss-20b", "Qwen/Qwen3-4B", "org/" + "x" * 80, "a.b_c d", "///"],
)
def test_default_group_names_fit_the_service_model(model: str) -> None:
    import re

    import botocore.session

    from agentrft.backends.sagemaker.jobs import service_facts as facts
    from agentrft.backends.sagemaker.jobs.hub import group_name

    shape = (
        botocore.session.get_session()
        .get_service_model("sagemaker")
        .operation_model("CreateModelPackageGroup")
        .input_shape.members["ModelPackageGroupName"]
    )
    pattern, most = shape.metadata["pattern"], shape.metadata["max"]
    out, ckpt = (
        group_name(model, s) for s in (facts.OUTPUT_GROUP_SUFFIX, facts.CHECKPOINT_GROUP_SUFFIX)
    )
    for name in (out, ckpt):
        assert re.fullmatch(pattern, name) and len(name) <= most, name
    assert out != ckpt
    if model == "openai-reasoning-gpt-oss-20b":
        assert out == model + facts.OUTPUT_GROUP_SUFFIX  # the SDK's default, unchanged
    if model == "Qwen/Qwen3-4B":
        assert out == "Qwen-Qwen3-4B-mtrl-mpg"
