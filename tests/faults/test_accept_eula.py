"""AcceptEula: every job accepts the base model's license on the user's behalf, so the plan
names it and nothing is submitted until the user accepted it once (--accept-eula or
sagemaker.accept_eula), per model and license URL (stubbed boto3 clients, botocore's models).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import ANY

from agentrft.backends.sagemaker.backend import SageMakerBackend
from agentrft.backends.sagemaker.jobs.aws import SageMakerError
from agentrft.backends.sagemaker.jobs.eula import Eula, eula_url
from agentrft.backends.sagemaker.settings import SageMakerTrainOptions
from agentrft.backends.sagemaker.testing.stubbed import hub_content_response, job_arn, stubbed_aws
from agentrft.testing import FindNumberTask

from ..sagemaker.test_jobs import CKPT_GROUP, OUT_GROUP, REGION, ROLE, config, console, no_real_aws  # noqa: F401

pytest.importorskip("boto3")


@pytest.fixture
def license_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own record of accepted licenses (never the user's ~/.config), empty."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    return tmp_path / "xdg-config" / "agentrft" / "accepted-eulas.json"


@pytest.fixture(autouse=True)
def _isolated(license_record: Path) -> None:
    """Every test here starts with no license accepted."""


EULA_S3 = f"s3://jumpstart-cache-prod-{REGION}/fmv2/openai/gpt-oss/Eula.txt"
EULA_HTTPS = (
    f"https://jumpstart-cache-prod-{REGION}.s3.{REGION}.amazonaws.com/fmv2/openai/gpt-oss/Eula.txt"
)
MODEL = "openai-reasoning-gpt-oss-20b"


def expect_lookups(s: Any, eula: str | None = EULA_S3, *, submit: bool) -> None:
    """The hub lookup; when the license is accepted, the two groups and CreateJob too."""
    s["sagemaker"].add_response(
        "describe_hub_content",
        hub_content_response(eula_uri=eula, recipes=[
            {"CustomizationTechnique": "MTRL", "Peft": "LORA",
             "SmtjRecipeTemplateS3Uri": f"s3://jumpstart-cache-prod-{REGION}/recipes/mtrl.yaml"}
        ]),
        {"HubName": "SageMakerPublicHub", "HubContentType": "Model", "HubContentName": MODEL},
    )  # fmt: skip
    if not submit:
        return
    for name, arn in (
        (f"{MODEL}-mtrl-mpg", OUT_GROUP),
        (f"{MODEL}-mtrl-checkpoint-mpg", CKPT_GROUP),
    ):
        s["sagemaker"].add_response(
            "describe_model_package_group",
            {"ModelPackageGroupName": name, "ModelPackageGroupArn": arn,
             "CreationTime": "2026-06-01T00:00:00Z", "CreatedBy": {},
             "ModelPackageGroupStatus": "Completed"},
            {"ModelPackageGroupName": name},
        )  # fmt: skip
    s["sagemaker"].add_response(
        "create_job",
        {"JobArn": job_arn("agentrft-find-number-1")},
        {"JobName": "agentrft-find-number-1", "RoleArn": ROLE, "JobCategory": "AgentRFT",
         "JobConfigSchemaVersion": "1.0.0", "JobConfigDocument": ANY, "Tags": ANY},
    )  # fmt: skip


def submit(s: Any, **sagemaker: Any) -> tuple[Any, str]:
    out, buf = console()
    cfg = config(preflight=False, **sagemaker)
    result = SageMakerBackend(aws=s.aws).train(
        FindNumberTask(), cfg, SageMakerTrainOptions(console=out, skip_preflight=True)
    )
    return result, buf.getvalue()


def test_the_hub_document_names_the_license_as_the_sdk_reads_it() -> None:
    assert eula_url({"HostingEulaUri": EULA_S3}, REGION) == EULA_HTTPS
    assert eula_url({}, REGION) is None
    assert eula_url({"HostingEulaUri": "s3://b/k.txt"}, "cn-north-1") == (
        "https://b.s3.cn-north-1.amazonaws.com.cn/k.txt"
    )


def test_a_first_submission_is_refused_until_the_license_is_accepted(
    license_record: Path,
) -> None:
    s = stubbed_aws(REGION)
    expect_lookups(s, submit=False)
    with pytest.raises(SageMakerError) as err:
        submit(s)
    text = str(err.value)
    assert EULA_HTTPS in text and "--accept-eula" in text and "Nothing was submitted" in text
    s.assert_done()  # no model package group looked up or created, no CreateJob
    assert not license_record.exists()


def test_accepting_submits_remembers_and_a_later_run_needs_no_flag(
    license_record: Path,
) -> None:
    s = stubbed_aws(REGION)
    expect_lookups(s, submit=True)
    result, printed = submit(s, accept_eula=True)
    s.assert_done()
    assert result.job_arn == job_arn("agentrft-find-number-1")
    assert f"AcceptEula: true in every job accepts the end-user license of {MODEL}: " in printed
    assert EULA_HTTPS in printed and "remembered in" in printed
    doc = json.loads(result.request["JobConfigDocument"])
    assert doc["TrainingConfig"]["AcceptEula"] is True
    record = json.loads(license_record.read_text())
    assert [(v["model"], v["url"]) for v in record.values()] == [(MODEL, EULA_HTTPS)]

    again = stubbed_aws(REGION)
    expect_lookups(again, submit=True)
    _, printed = submit(again)
    again.assert_done()
    assert "license accepted before" in printed


def test_a_changed_license_asks_again(license_record: Path) -> None:
    Eula(MODEL, EULA_HTTPS.replace("Eula.txt", "Eula-v1.txt"), looked_up=True).remember()
    s = stubbed_aws(REGION)
    expect_lookups(s, submit=False)
    with pytest.raises(SageMakerError, match="--accept-eula"):
        submit(s)


def test_an_offline_dry_run_names_the_license_and_what_a_real_run_will_ask() -> None:
    out, buf = console()
    result = SageMakerBackend().train(
        FindNumberTask(),
        config(base_model_version="1.2.0"),
        SageMakerTrainOptions(console=out, dry_run=True),
    )
    assert result.dry_run
    printed = buf.getvalue()
    assert "HostingEulaUri" in printed and f"--hub-content-name {MODEL}" in printed
    assert "a real run will ask you to accept it first" in printed


def test_an_unreadable_record_is_a_clear_error(license_record: Path) -> None:
    license_record.parent.mkdir(parents=True)
    license_record.write_text("{not json")
    s = stubbed_aws(REGION)
    expect_lookups(s, submit=False)
    with pytest.raises(SageMakerError, match="cannot read the accepted-license record"):
        submit(s)


def test_the_cli_flag_reaches_train_and_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--accept-eula` is a flag of both commands; an eval plan names the license too."""
    from ..sagemaker.test_offline_dry_run import LAUNCH_EVAL, cli, run  # noqa: F401

    pytest.importorskip("agentrft_wordle")
    from agentrft.cli.app import create_app
    from agentrft.plugins import load_plugins, use_plugins

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDAGENTRFTTEST0000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake")
    with use_plugins(load_plugins()):
        app = create_app(plugins=True)
        result = run(app, *LAUNCH_EVAL, "--dry-run")
        assert result.exit_code == 0, result.output
        assert "AcceptEula: true in every job accepts" in result.output
        assert "a real run will ask you to accept it first" in result.output
        for command in ("train", "eval"):
            shown = run(app, command, "--backend", "sagemaker", "--help")
            assert "--accept-eula" in shown.output, command
