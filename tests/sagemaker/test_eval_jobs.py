"""Evaluation jobs: one AgentRFTEvaluation job per run, strictly one after another, with the
hyperparameter names the service accepts, and a table of pass@k, reward and billed tokens."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from botocore.stub import ANY
from rich.console import Console

from agentrft.backends.sagemaker.backend import SageMakerBackend
from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import SageMakerError
from agentrft.backends.sagemaker.jobs.evaluations import EvalRun, parse_runs
from agentrft.backends.sagemaker.jobs.job_document import read_evaluation_metrics, validate_request
from agentrft.backends.sagemaker.settings import SageMakerEvalOptions
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
PACKAGE = (
    f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package/openai-reasoning-gpt-oss-20b-mtrl-mpg/3"
)


@pytest.fixture(autouse=True)
def no_real_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def config(**extra: Any) -> Any:
    values = {
        "task": "find_number",
        "pass_k_values": [1, 2, 4, 8, 16],
        "eval.samples_per_row": 8,
        "sagemaker.runtime_arn": RUNTIME,
        "sagemaker.role_arn": f"arn:aws:iam::{ACCOUNT}:role/agentrft-job",
        "sagemaker.evaluation_s3_uri": "s3://agentrft-data/find_number/eval.jsonl",
        "sagemaker.output_s3_path": "s3://agentrft-data/eval/",
        "sagemaker.mlflow_resource_arn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:mlflow-app/app-1",
    }
    values.update(extra)
    return load_config(values=values)


def console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=220, highlight=False, color_system=None), buf


def finished(name: str, metrics: dict[str, Any], prefill: int, sampled: int) -> dict[str, Any]:
    return describe_job_response(
        name,
        category="AgentRFTEvaluation",
        status="Completed",
        secondary="Completed",
        document={
            "ServiceOutput": {
                "EvaluationMetrics": metrics,
                "BillableTokenUsage": {"PrefillTokenCount": prefill, "SampleTokenCount": sampled},
            }
        },
    )


def test_runs_one_job_at_a_time_and_tabulates_pass_at_k(tmp_path: Any) -> None:
    s = stubbed_aws(REGION)
    s["sagemaker"].add_response("describe_hub_content", hub_content_response())
    s["s3"].add_response("get_object", {"Body": _empty_specs()})
    schema = {
        "type": "object",
        "required": ["AgentConfig", "InputDataConfig", "EvaluationConfig"],
        "properties": {"EvaluationConfig": {"required": ["BaseModelArn", "HyperParameters"]}},
    }
    s["sagemaker"].add_response(
        "describe_job_schema_version",
        {
            "JobCategory": "AgentRFTEvaluation",
            "JobConfigSchemaVersion": "1.0.0",
            "JobConfigSchema": json.dumps(schema),
        },
        {"JobCategory": "AgentRFTEvaluation", "JobConfigSchemaVersion": "1.0.0"},
    )
    created: list[dict[str, Any]] = []

    def expect_create() -> None:
        s["sagemaker"].add_response(
            "create_job",
            {"JobArn": job_arn("e", "AgentRFTEvaluation")},
            {
                "JobName": ANY,
                "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/agentrft-job",
                "JobCategory": "AgentRFTEvaluation",
                "JobConfigSchemaVersion": "1.0.0",
                "JobConfigDocument": ANY,
                "Tags": ANY,
            },
        )

    # The Stubber enforces this order: run 2 is only created after run 1 reported Completed.
    expect_create()
    s["sagemaker"].add_response(
        "describe_job",
        describe_job_response("e1", category="AgentRFTEvaluation", secondary="Pending"),
    )
    s["sagemaker"].add_response(
        "describe_job",
        finished("e1", {"pass@1": 0.42, "pass@8": 0.91, "MeanReward": 0.37}, 9_000_000, 3_000_000),
    )
    expect_create()
    s["sagemaker"].add_response(
        "describe_job",
        finished(
            "e2", {"PassAtK": {"1": 0.84, "8": 0.99}, "mean_reward": 1.21}, 8_000_000, 2_000_000
        ),
    )
    out, buf = console()
    real_create = s.aws.sagemaker.create_job

    def spy(**params: Any) -> Any:
        created.append(params)
        return real_create(**params)

    s.aws.sagemaker.create_job = spy  # type: ignore[method-assign]
    result = SageMakerBackend(aws=s.aws, sleep=lambda _: None).evaluate(
        FindNumberTask(),
        config(),
        SageMakerEvalOptions(
            runs=[("base", 1.0), ("trained", 0.7)],
            model_package_arn=PACKAGE,
            console=out,
            skip_preflight=True,
        ),
    )
    outcomes = result.outcomes
    s.assert_done()
    result.write_report(tmp_path / "report.json", {"task": "find_number"})
    report = json.loads((tmp_path / "report.json").read_text())
    assert [(r["run"], r["temperature"], r["status"]) for r in report["runs"]] == [
        ("base", 1.0, "Completed"), ("trained", 0.7, "Completed")
    ]  # fmt: skip
    assert report["runs"][0]["pass_at_k"] == {"1": 0.42, "8": 0.91}
    assert report["runs"][1]["mean_reward"] == 1.21
    assert report["runs"][0]["billed_tokens"] == {"prefill": 9_000_000, "sampling": 3_000_000}
    assert report["runs"][0]["cost"] == pytest.approx(2.10)
    assert [o.status for o in outcomes] == ["Completed", "Completed"]
    docs = [json.loads(c["JobConfigDocument"]) for c in created]
    base, trained = docs
    # What the config set (eval.samples_per_row, pass_k_values), the run's temperature and
    # the success threshold AWS's SDK always sends.
    assert set(base["EvaluationConfig"]["HyperParameters"]) == {
        "eval_group_size", "pass_k_values", "temperature", "success_threshold"
    }  # fmt: skip
    assert base["EvaluationConfig"]["HyperParameters"]["temperature"] == "1.0"
    assert trained["EvaluationConfig"]["HyperParameters"]["temperature"] == "0.7"
    assert base["EvaluationConfig"]["HyperParameters"]["eval_group_size"] == "8"
    assert base["EvaluationConfig"]["HyperParameters"]["pass_k_values"] == "[1, 2, 4, 8]"
    assert "ModelPackageConfig" not in base
    assert trained["ModelPackageConfig"] == {"InputModelPackageArn": PACKAGE}
    assert base["InputDataConfig"][0]["ChannelName"] == "evaluation"
    assert base["StoppingCondition"] == {
        "MaxRuntimeInSeconds": facts.DEFAULT_EVALUATION_MAX_RUNTIME_S
    }
    assert base["OutputDataConfig"]["MlflowConfig"]["MlflowRunName"] == created[0]["JobName"]
    assert "base-t1-" in created[0]["JobName"] and "trained-t0p7-" in created[1]["JobName"]
    table = buf.getvalue()
    # One job at a time: the second run is queued behind the first, and the console says so.
    assert "2 runs queued" in table
    assert (
        f"run 2/2 (trained at temperature 0.7) was queued behind {created[0]['JobName']}" in table
    )
    assert "pass@1" in table and "pass@8" in table
    assert "0.420" in table and "0.910" in table and "0.840" in table and "0.990" in table
    assert "0.370" in table and "1.210" in table
    assert "9.0 M / 3.0 M" in table
    assert "2.10" in table  # 9 M x 0.10 + 3 M x 0.40 per million (the assumed prices)


def _empty_specs() -> Any:
    from botocore.response import StreamingBody

    return StreamingBody(io.BytesIO(b"{}"), 2)


def test_dry_run_prints_every_request_offline_and_they_validate() -> None:
    out, buf = console()
    outcomes = (
        SageMakerBackend()
        .evaluate(
            FindNumberTask(),
            config(**{"sagemaker.base_model_version": "1.2.0"}),
            SageMakerEvalOptions(
                runs=["base:1.0", "trained:1.0"],
                model_package_arn=PACKAGE,
                dry_run=True,
                console=out,
            ),
        )
        .outcomes
    )
    assert len(outcomes) == 2 and all(o.status == "dry run" for o in outcomes)
    for o in outcomes:
        validate_request("CreateJob", o.request)
    assert buf.getvalue().count('"JobCategory": "AgentRFTEvaluation"') == 2


def test_trained_run_needs_a_model_package() -> None:
    with pytest.raises(SageMakerError, match="--model-package-arn"):
        SageMakerBackend().evaluate(
            FindNumberTask(),
            config(),
            SageMakerEvalOptions(runs=["trained:1.0"], dry_run=True, console=console()[0]),
        )


def test_several_runs_need_wait_under_the_one_job_quota() -> None:
    s = stubbed_aws(REGION)
    s["sagemaker"].add_response("describe_hub_content", hub_content_response())
    s["s3"].add_response("get_object", {"Body": _empty_specs()})
    with pytest.raises(SageMakerError, match="1 evaluation job at a time"):
        SageMakerBackend(aws=s.aws).evaluate(
            FindNumberTask(), config(), SageMakerEvalOptions(runs=["base:1.0", "base:0.0"], wait=False, console=console()[0], skip_preflight=True))  # fmt: skip


def test_missing_evaluation_rows_is_named() -> None:
    cfg = config(**{"sagemaker.evaluation_s3_uri": None})
    with pytest.raises(SageMakerError, match="--eval-uri"):
        SageMakerBackend().evaluate(FindNumberTask(), cfg, SageMakerEvalOptions(dry_run=True))


def test_parse_runs() -> None:
    assert parse_runs(["base:1.0", "trained"], 0.6) == [
        EvalRun("base", 1.0),
        EvalRun("trained", 0.6),
    ]
    assert parse_runs([("trained", 0.0)], 1.0) == [EvalRun("trained", 0.0)]
    for bad, msg in (
        ("gpt:1.0", "base, trained"),
        ("base:hot", "not a number"),
        ("base:3", r"\[0, 2\]"),
    ):
        with pytest.raises(SageMakerError, match=msg):
            parse_runs([bad], 1.0)


def test_evaluation_metrics_spellings() -> None:
    m = read_evaluation_metrics({"pass_at_2": 0.5, "PassAt4": {"Value": 0.75}, "SuccessRate": 0.4,
                                 "AverageReward": "0.25"})  # fmt: skip
    assert m.pass_at_k == {2: 0.5, 4: 0.75} and m.mean_reward == 0.25 and m.success_rate == 0.4
    assert read_evaluation_metrics({}).pass_at_k == {}


def test_a_run_the_schema_rejects_stops_all_runs_before_the_first_job() -> None:
    s = stubbed_aws(REGION)
    s["sagemaker"].add_response("describe_hub_content", hub_content_response())
    s["s3"].add_response("get_object", {"Body": _empty_specs()})
    schema = {"type": "object", "properties": {"ModelPackageConfig": {"not": {}}}}
    s["sagemaker"].add_response(
        "describe_job_schema_version",
        {"JobCategory": "AgentRFTEvaluation", "JobConfigSchemaVersion": "1.0.0",
         "JobConfigSchema": json.dumps(schema)},
    )  # fmt: skip
    with pytest.raises(SageMakerError, match="run trained does not match"):
        SageMakerBackend(aws=s.aws, sleep=lambda _: None).evaluate(
            FindNumberTask(), config(), SageMakerEvalOptions(runs=["base:1.0", "trained:1.0"], model_package_arn=PACKAGE, console=console()[0], skip_preflight=True))  # fmt: skip
    s.assert_done()  # no CreateJob at all, not even for the valid base run


def test_a_failed_run_is_reported_and_the_next_run_still_goes() -> None:
    s = stubbed_aws(REGION)
    s["sagemaker"].add_response("describe_hub_content", hub_content_response())
    s["s3"].add_response("get_object", {"Body": _empty_specs()})
    s["sagemaker"].add_client_error("describe_job_schema_version", "AccessDeniedException", "no")
    s["sagemaker"].add_response("create_job", {"JobArn": job_arn("e1", "AgentRFTEvaluation")})
    s["sagemaker"].add_response(
        "describe_job",
        describe_job_response("e1", category="AgentRFTEvaluation", status="Failed",
                              secondary="Failed", failure_reason="MaxRuntimeExceeded"),
    )  # fmt: skip
    s["sagemaker"].add_response("create_job", {"JobArn": job_arn("e2", "AgentRFTEvaluation")})
    s["sagemaker"].add_response("describe_job", finished("e2", {"pass@1": 0.5}, 1_000, 1_000))
    out, buf = console()
    result = SageMakerBackend(aws=s.aws, sleep=lambda _: None).evaluate(
        FindNumberTask(), config(), SageMakerEvalOptions(runs=["base:1.0", "base:0.0"], console=out, skip_preflight=True))  # fmt: skip
    s.assert_done()
    assert [o.status for o in result.outcomes] == ["Failed", "Completed"]
    assert "MaxRuntimeExceeded" in buf.getvalue() and "0.500" in buf.getvalue()
