"""The managed-jobs commands through the real `agentrft` app: help makes no AWS import, jobs
verbs, doctor, dataset upload, cost, and `train`/`eval --backend sagemaker --dry-run`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrft import hookimpl
from agentrft.backends.sagemaker import plugin as sagemaker_plugin
from agentrft.backends.sagemaker.cli import jobs as jobs_cli
from agentrft.backends.sagemaker.jobs.job_document import validate_request
from agentrft.backends.sagemaker.testing.stubbed import (
    ACCOUNT,
    describe_job_response,
    job_arn,
    stubbed_aws,
)
from agentrft.cli.app import create_app
from agentrft.plugins import load_plugins, use_plugins
from agentrft.testing import FindNumberTask

REGION = "us-east-1"
RUNTIME = f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/agentrft_find_number-AbCdEfGhIj"
runner = CliRunner()


class Tasks:
    @hookimpl
    def agentrft_tasks(self) -> list[type]:
        return [FindNumberTask]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_REGION",
                "AWS_DEFAULT_REGION"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with use_plugins(load_plugins(extra=[Tasks(), sagemaker_plugin], entry_points=False)):
        yield create_app(plugins=True)


def run(app: Any, *args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "250", "NO_COLOR": "1"})


def use_stubs(monkeypatch: pytest.MonkeyPatch, services: list[str]) -> Any:
    s = stubbed_aws(REGION, services=services)
    monkeypatch.setattr(jobs_cli, "_aws", lambda config: s.aws)
    return s


HELP_PROBE = textwrap.dedent(
    """
    import sys
    from agentrft.cli.app import create_app
    from typer.testing import CliRunner
    app = create_app(plugins=True)
    for args in (["--help"], ["jobs", "--help"], ["cost", "--help"], ["doctor", "--help"],
                 ["dataset", "upload", "--help"], ["jobs", "describe", "--help"]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, (args, r.output)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("boto3", "botocore"))
    print("LOADED", loaded)
    """
)


def test_help_registers_the_commands_and_imports_no_aws_sdk() -> None:
    out = subprocess.run(
        [sys.executable, "-c", HELP_PROBE], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "LOADED []" in out.stdout


def test_jobs_list_describe_stop(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    s = use_stubs(monkeypatch, ["sagemaker"])
    summary = {
        "JobArn": job_arn("run-a"), "JobName": "run-a", "JobCategory": "AgentRFT",
        "JobStatus": "InProgress", "JobSecondaryStatus": "Training",
        "CreationTime": "2026-06-03T10:00:00Z", "LastModifiedTime": "2026-06-03T10:00:00Z",
    }  # fmt: skip
    s["sagemaker"].add_response("list_jobs", {"JobSummaries": [summary]})
    s["sagemaker"].add_response("list_jobs", {"JobSummaries": []})
    result = run(cli, "jobs", "list")
    assert result.exit_code == 0, result.output
    assert "run-a" in result.output and "Training" in result.output

    doc = {"ServiceOutput": {"ProgressInfo": {"MaxSteps": 50, "CurrentStep": 12},
                             "BillableTokenUsage": {"PrefillTokenCount": 10_000_000,
                                                    "SampleTokenCount": 2_000_000,
                                                    "TrainTokenCount": 12_000_000}}}  # fmt: skip
    s["sagemaker"].add_response(
        "describe_job", describe_job_response("run-a", document=doc),
        {"JobName": "run-a", "JobCategory": "AgentRFT"},
    )  # fmt: skip
    result = run(cli, "jobs", "describe", job_arn("run-a"))
    assert result.exit_code == 0, result.output
    assert "step 12/50" in result.output and "prefill 10.0 M" in result.output
    assert "6.00 USD" in result.output  # 1.0 + 0.8 + 4.2 at the assumed prices

    s["sagemaker"].add_response("describe_job", describe_job_response("run-a"))
    s["sagemaker"].add_response("stop_job", {}, {"JobName": "run-a", "JobCategory": "AgentRFT"})
    result = run(cli, "jobs", "stop", "run-a", "--category", "training", "--yes")
    assert result.exit_code == 0, result.output
    assert "stopping AgentRFT job run-a" in result.output

    s["sagemaker"].add_client_error("describe_job", "ResourceNotFound", "no")
    result = run(cli, "jobs", "describe", "ghost", "--category", "evaluation")
    assert result.exit_code == 1 and "no AgentRFTEvaluation job named 'ghost'" in result.output
    s.assert_done()


def test_dataset_upload_checks_rows_then_uploads(
    cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = use_stubs(monkeypatch, ["s3"])
    good = tmp_path / "train.jsonl"
    good.write_text('{"prompt": "{\\"secret\\": 5, \\"low\\": 1, \\"high\\": 10}"}\n')
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "guess"}\n')
    result = run(cli, "dataset", "upload", str(bad), "s3://data/", "--task", "find_number")
    assert result.exit_code == 1 and "row 1 does not parse" in result.output
    s["s3"].add_response("get_bucket_location", {}, {"Bucket": "data"})
    s["s3"].add_response("put_object", {"ETag": '"e"'})
    result = run(cli, "dataset", "upload", str(good), "s3://data/fn/", "--task", "find_number")
    assert result.exit_code == 0, result.output
    assert "s3://data/fn/train.jsonl" in result.output
    s.assert_done()


def test_doctor_exits_non_zero_on_a_failed_check(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    s = stubbed_aws(REGION)
    monkeypatch.setattr("agentrft.backends.sagemaker.backend.make_aws", lambda *a, **k: s.aws)
    s["sts"].add_response(
        "get_caller_identity", {"Account": ACCOUNT, "Arn": "arn:aws:iam::1:user/x", "UserId": "A"}
    )
    result = run(cli, "doctor", "--for", "train", "--region", REGION)
    assert result.exit_code == 1, result.output
    assert "no runtime ARN" in result.output and "--runtime-arn" in result.output
    assert "job.sagemaker.amazonaws.com" in result.output  # the trust policy to create
    s.assert_done()


def test_cost_estimate_json_from_the_launch_profile(cli: Any) -> None:
    result = run(cli, "cost", "estimate", "--steps", "100", "--batch-size", "128",
                 "--group-size", "8", "--launch-profile", "--validation-rows", "309", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["rollouts"] == 105_490 and data["cost"] == pytest.approx(338.2, abs=0.5)
    result = run(cli, "cost", "estimate", "--launch-profile", "--prefill", "10", "--sampled", "1")
    assert result.exit_code == 1 and "exactly one token profile" in result.output


def test_cost_estimate_table_from_flags(cli: Any) -> None:
    result = run(cli, "cost", "estimate", "--steps", "10", "--batch-size", "32", "--group-size",
                 "4", "--prefill", "1000", "--sampled", "500")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "1,280 training rollouts" in result.output and "total" in result.output


TRAIN_FLAGS = [
    "--task", "find_number", "--backend", "sagemaker",
    "--runtime-arn", RUNTIME,
    "--role-arn", f"arn:aws:iam::{ACCOUNT}:role/agentrft-job",
    "--output-path", "s3://data/out/",
    "--set", "sagemaker.base_model_version=1.2.0",
]  # fmt: skip


def test_core_train_dry_run_prints_a_valid_create_job(cli: Any) -> None:
    result = run(cli, "train", *TRAIN_FLAGS, "--train-uri", "s3://data/train.jsonl",
                 "--mlflow-arn", f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:mlflow-app/app-1",
                 "--max-steps", "100", "--dry-run")  # fmt: skip
    assert result.exit_code == 0, result.output
    text = result.output
    request = json.loads(text[text.index("{") : text.index("\n\nJobConfigDocument (decoded)")])
    validate_request("CreateJob", request)
    doc = json.loads(request["JobConfigDocument"])
    assert doc["TrainingConfig"]["HyperParameters"]["max_steps"] == "100"


def test_core_train_without_required_flags_names_them(cli: Any) -> None:
    result = run(cli, "train", *TRAIN_FLAGS, "--dry-run")
    assert result.exit_code == 1
    assert "--train-uri" in result.output and "--mlflow-arn" in result.output
    assert "Traceback" not in result.output


def test_core_eval_dry_run_prints_one_request_per_run(cli: Any) -> None:
    result = run(cli, "eval", "--task", "find_number", "--backend", "sagemaker",
                 "--runtime-arn", RUNTIME, "--role-arn", f"arn:aws:iam::{ACCOUNT}:role/j",
                 "--validation-uri", "s3://data/val.jsonl", "--output-path", "s3://data/ev/",
                 "--set", "sagemaker.base_model_version=1.2.0",
                 "--runs", "base:1.0", "--runs", "trained:0.7",
                 "--model-package-arn", f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package/g/1",
                 "--dry-run")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output.count('"JobCategory": "AgentRFTEvaluation"') == 2
    assert '\\"temperature\\":\\"0.7\\"' in result.output
    assert "EvalOutcome(" not in result.output  # no repr dump after the requests


def test_cost_job_prices_the_billed_tokens(
    cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = use_stubs(monkeypatch, ["sagemaker"])
    doc = {"ServiceOutput": {"BillableTokenUsage": {"PrefillTokenCount": 491_600_000,
                                                    "SampleTokenCount": 159_700_000,
                                                    "TrainTokenCount": 643_300_000}}}  # fmt: skip
    s["sagemaker"].add_response(
        "describe_job", describe_job_response("w", status="Completed", secondary="Completed",
                                              document=doc),
    )  # fmt: skip
    result = run(cli, "cost", "job", "w")
    assert result.exit_code == 0, result.output
    assert "338.19 USD" in result.output
    prices = tmp_path / "p.yaml"
    prices.write_text("prefill: 0\nsampling: 0\ntraining: 1\n")
    s["sagemaker"].add_response("describe_job", describe_job_response("w", document=doc))
    result = run(cli, "cost", "job", "w", "--prices", str(prices))
    assert "643.30 USD" in result.output
    s["sagemaker"].add_response("describe_job", describe_job_response("w"))
    result = run(cli, "cost", "job", "w")
    assert result.exit_code == 1 and "no billed tokens yet" in result.output
    s.assert_done()


def test_doctor_policies_prints_the_three_policies_without_aws(cli: Any) -> None:
    result = run(
        cli, "doctor", "--policies", "--role-arn", f"arn:aws:iam::{ACCOUNT}:role/agentrft-job"
    )
    assert result.exit_code == 0, result.output
    blocks = [b.split("\n", 1)[1] for b in result.output.strip().split("\n\n")]
    job_trust, runtime_trust, caller = (json.loads(b) for b in blocks)
    assert job_trust["Statement"][0]["Principal"] == {"Service": "job.sagemaker.amazonaws.com"}
    assert (
        runtime_trust["Statement"][0]["Condition"]["StringEquals"]["aws:SourceAccount"] == ACCOUNT
    )
    assert caller["Statement"][0]["Condition"] == {
        "StringEquals": {"iam:PassedToService": "job.sagemaker.amazonaws.com"}
    }


def test_doctor_takes_the_flags_train_and_eval_take(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample launcher's names (`--agent-runtime-arn`, `--train-dataset`, ...) reach the
    same config keys in doctor as in train and eval."""
    from agentrft.backends.sagemaker.backend import SageMakerBackend

    seen: dict[str, Any] = {}

    class Report:
        ok, failures = True, []

    def doctor(self: Any, task: Any, config: Any, **kw: Any) -> Any:
        seen.update(config.sagemaker.model_dump())
        return Report()

    monkeypatch.setattr(SageMakerBackend, "doctor", doctor)
    result = run(
        cli, "doctor", "--region", REGION,
        "--agent-runtime-arn", RUNTIME,
        "--train-dataset", "s3://b/train.jsonl",
        "--val-dataset", "s3://b/val.jsonl",
        "--s3-output-path", "s3://b/out/",
        "--mlflow-app-arn", f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:mlflow-app/app-ABC123",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert seen["runtime_arn"] == RUNTIME and seen["train_s3_uri"] == "s3://b/train.jsonl"
    assert seen["validation_s3_uri"] == "s3://b/val.jsonl"
    assert seen["output_s3_path"] == "s3://b/out/"
    assert seen["mlflow_resource_arn"].endswith("app-ABC123")
