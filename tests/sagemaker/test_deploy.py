"""`agentrft deploy`: the offline bundle builder, and every AWS request through Stubber."""

from __future__ import annotations

import datetime as dt
import importlib.metadata as md
import zipfile
from pathlib import Path
from typing import Any

import boto3
import pytest
import typer
from botocore.stub import ANY, Stubber
from typer.testing import CliRunner

from agentrft.backends.sagemaker.cli import runtime as runtime_cli
from agentrft.backends.sagemaker.jobs.bundle import (
    BundleError,
    build_bundle,
    entry_script,
    plan_bundle,
    runtime_requirements,
    sha256_file,
)
from agentrft.backends.sagemaker.jobs.deploy import (
    DeployError,
    DeploySpec,
    check_name,
    default_runtime_name,
    deploy,
    validate_request,
    wait_ready,
)

REGION = "us-east-1"
ROLE = "arn:aws:iam::111122223333:role/agentrft-runtime"
RUNTIME_ID = "agentrft_doors-AbCdE12345"
RUNTIME_ARN = f"arn:aws:bedrock-agentcore:{REGION}:111122223333:runtime/{RUNTIME_ID}"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def client(service: str) -> Any:
    return boto3.client(
        service, region_name=REGION, aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="x"
    )


# --- the bundle ------------------------------------------------------------------------------


def test_offline_bundle_has_agentrft_its_entry_points_and_main(tmp_path: Path) -> None:
    plan = plan_bundle("doors", "agentrft", tmp_path / "w", no_deps=True, reward="fast")
    zip_path = build_bundle(plan)
    names = zipfile.ZipFile(zip_path).namelist()
    assert "main.py" in names
    assert "agentrft/backends/sagemaker/runtime/main.py" in names
    assert "agentrft-0.1.0.dist-info/entry_points.txt" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.endswith(("RECORD", "direct_url.json"))]

    main = zipfile.ZipFile(zip_path).read("main.py").decode()
    assert main == entry_script("doors", "fast")
    compile(main, "main.py", "exec")
    assert "os.environ.setdefault('AGENTRFT_TASK', 'doors')" in main

    # Entry-point discovery works from the unpacked bundle alone (what the runtime does).
    dists = {d.metadata["Name"]: d for d in md.distributions(path=[str(plan.stage)])}
    eps = {ep.name: ep.value for ep in dists["agentrft"].entry_points if ep.group == "agentrft"}
    assert eps["sagemaker"] == "agentrft.backends.sagemaker.plugin"


def test_bundle_is_reproducible(tmp_path: Path) -> None:
    a = build_bundle(plan_bundle("doors", "agentrft", tmp_path / "a", no_deps=True))
    b = build_bundle(plan_bundle("doors", "agentrft", tmp_path / "b", no_deps=True))
    assert sha256_file(a) == sha256_file(b)


def test_plugin_distribution_is_bundled_too(tmp_path: Path) -> None:
    pytest.importorskip("agentrft_wordle")
    plan = plan_bundle("wordle", "agentrft-wordle", tmp_path, no_deps=True)
    names = zipfile.ZipFile(build_bundle(plan)).namelist()
    assert any(n.startswith("agentrft_wordle/") for n in names)
    assert any(n.startswith("agentrft_wordle-") and n.endswith("entry_points.txt") for n in names)
    assert "agentrft-wordle" not in " ".join(plan.requirements)  # bundled, not downloaded


def test_dependencies_come_from_pip_for_linux_arm64(tmp_path: Path) -> None:
    plan = plan_bundle("doors", "agentrft", tmp_path)
    calls: list[list[str]] = []

    class Done:
        returncode = 0
        stdout = stderr = ""

    def fake_pip(cmd: list[str], **kwargs: Any) -> Done:
        calls.append(cmd)
        target = Path(cmd[cmd.index("--target") + 1])
        (target / "pydantic").mkdir(parents=True)
        (target / "pydantic" / "__init__.py").write_text("# arm64 wheel\n")
        (target / "agentrft").mkdir()  # a stale copy from an index: ours must win
        (target / "agentrft" / "stale.py").write_text("")
        return Done()

    names = zipfile.ZipFile(build_bundle(plan, run=fake_pip)).namelist()
    (cmd,) = calls
    flags = " ".join(cmd)
    assert "--platform manylinux2014_aarch64" in flags
    assert "--python-version 3.11" in flags and "--only-binary=:all:" in flags
    assert "--implementation cp" in flags
    reqs = cmd[cmd.index("--disable-pip-version-check") + 1 :]
    lowered = [r.lower() for r in reqs]
    assert any(r.startswith("bedrock-agentcore") for r in lowered)  # the sagemaker extra
    assert any(r.startswith("boto3") for r in lowered)
    assert not any(
        r.startswith(("torch", "transformers", "peft", "agentrft", "tomli")) for r in lowered
    )
    assert "pydantic/__init__.py" in names
    assert "agentrft/stale.py" not in names


def test_pip_failure_explains_the_arm64_constraint(tmp_path: Path) -> None:
    class Failed:
        returncode = 1
        stdout = ""
        stderr = "ERROR: No matching distribution found for somepkg"

    with pytest.raises(BundleError, match="manylinux2014_aarch64"):
        build_bundle(plan_bundle("doors", "agentrft", tmp_path), run=lambda *a, **k: Failed())


def test_requirement_markers_are_evaluated_for_the_runtime() -> None:
    reqs = runtime_requirements(
        [
            'tomli>=2; python_version < "3.11"',
            'torch>=2.4; extra == "local"',
            'bedrock-agentcore>=1.0; extra == "sagemaker"',
            'uvloop; sys_platform == "win32"',
            'numpy; platform_machine == "aarch64"',
            "pydantic<3,>=2.6",
        ],
        extras=("sagemaker",),
    )
    assert reqs == ["bedrock-agentcore>=1.0", "numpy", "pydantic<3,>=2.6"]


def test_unknown_distribution_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="not installed"):
        plan_bundle("x", "agentrft-no-such-plugin", tmp_path)


def test_runtime_names() -> None:
    assert default_runtime_name("expense-report") == "agentrft_expense_report"
    assert check_name("agentrft_wordle") == "agentrft_wordle"
    with pytest.raises(DeployError, match="no hyphens"):
        check_name("agentrft-wordle")


# --- the AWS requests -------------------------------------------------------------------------


def spec(tmp_path: Path | None = None) -> DeploySpec:
    return DeploySpec(
        task="doors",
        name="agentrft_doors",
        role_arn=ROLE,
        region=REGION,
        bucket="my-bucket",
        key="agentrft/runtime-code/agentrft-runtime-doors-0123456789ab.zip",
    )


def runtime(status: str, **extra: Any) -> dict[str, Any]:
    return {
        "agentRuntimeArn": RUNTIME_ARN,
        "agentRuntimeName": "agentrft_doors",
        "agentRuntimeId": RUNTIME_ID,
        "agentRuntimeVersion": "2",
        "createdAt": NOW,
        "lastUpdatedAt": NOW,
        "roleArn": ROLE,
        "status": status,
        "lifecycleConfiguration": {},
        **extra,
    }


def summary() -> dict[str, Any]:
    return {
        "agentRuntimeArn": RUNTIME_ARN,
        "agentRuntimeId": RUNTIME_ID,
        "agentRuntimeVersion": "1",
        "agentRuntimeName": "agentrft_doors",
        "description": "d",
        "lastUpdatedAt": NOW,
        "status": "READY",
    }


def a_zip(tmp_path: Path) -> Path:
    path = tmp_path / "bundle.zip"
    path.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    return path


def no_token(request: dict[str, Any]) -> dict[str, Any]:
    return {**request, "clientToken": ANY}


def test_create_uploads_then_creates_and_waits_for_ready(tmp_path: Path) -> None:
    s = spec()
    control, s3, sm = client("bedrock-agentcore-control"), client("s3"), client("sagemaker")
    with Stubber(control) as c, Stubber(s3) as b, Stubber(sm) as j:
        b.add_response("get_bucket_location", {}, {"Bucket": "my-bucket"})  # us-east-1
        c.add_response("list_agent_runtimes", {"agentRuntimes": []}, {})
        b.add_response(
            "put_object",
            {"ETag": '"abc"'},
            {"Bucket": "my-bucket", "Key": s.key, "Body": ANY, "ContentType": "application/zip"},
        )
        c.add_response(
            "create_agent_runtime",
            {
                "agentRuntimeArn": RUNTIME_ARN,
                "agentRuntimeId": RUNTIME_ID,
                "agentRuntimeVersion": "1",
                "createdAt": NOW,
                "status": "CREATING",
            },
            no_token(s.create_request()),
        )
        c.add_response("get_agent_runtime", runtime("CREATING"), {"agentRuntimeId": RUNTIME_ID})
        c.add_response("get_agent_runtime", runtime("READY"), {"agentRuntimeId": RUNTIME_ID})
        result = deploy(
            s,
            a_zip(tmp_path),
            control=control,
            s3=s3,
            sagemaker=sm,
            echo=lambda m: None,
            sleep=lambda s: None,
        )
        for stub in (c, b, j):
            stub.assert_no_pending_responses()
    assert (result.arn, result.action) == (RUNTIME_ARN, "created")
    req = s.create_request()
    code = req["agentRuntimeArtifact"]["codeConfiguration"]
    assert code["runtime"] == "PYTHON_3_11" and code["entryPoint"] == ["main.py"]
    assert code["code"] == {"s3": {"bucket": "my-bucket", "prefix": s.key}}
    assert req["environmentVariables"] == {"AGENTRFT_TASK": "doors", "AGENTRFT_BIND_ALL": "1"}
    assert req["protocolConfiguration"] == {"serverProtocol": "HTTP"}


def test_update_checks_for_running_jobs_first(tmp_path: Path) -> None:
    s = spec()
    control, s3, sm = client("bedrock-agentcore-control"), client("s3"), client("sagemaker")
    with Stubber(control) as c, Stubber(s3) as b, Stubber(sm) as j:
        b.add_response(
            "get_bucket_location", {"LocationConstraint": "us-east-1"}, {"Bucket": "my-bucket"}
        )
        c.add_response("list_agent_runtimes", {"agentRuntimes": [summary()]}, {})
        for category in ("AgentRFT", "AgentRFTEvaluation"):
            j.add_response(
                "list_jobs",
                {"JobSummaries": []},
                {"JobCategory": category, "StatusEquals": "InProgress"},
            )
        b.add_response(
            "put_object",
            {},
            {"Bucket": "my-bucket", "Key": s.key, "Body": ANY, "ContentType": "application/zip"},
        )
        c.add_response(
            "update_agent_runtime",
            {
                "agentRuntimeArn": RUNTIME_ARN,
                "agentRuntimeId": RUNTIME_ID,
                "agentRuntimeVersion": "2",
                "createdAt": NOW,
                "lastUpdatedAt": NOW,
                "status": "UPDATING",
            },
            no_token(s.update_request(RUNTIME_ID)),
        )
        c.add_response("get_agent_runtime", runtime("READY"), {"agentRuntimeId": RUNTIME_ID})
        said: list[str] = []
        result = deploy(
            s,
            a_zip(tmp_path),
            control=control,
            s3=s3,
            sagemaker=sm,
            echo=said.append,
            sleep=lambda s: None,
        )
        for stub in (c, b, j):
            stub.assert_no_pending_responses()
    assert result.action == "updated" and result.version == "2"
    assert any("Never redeploy" in m for m in said)


def test_update_is_refused_while_a_job_runs(tmp_path: Path) -> None:
    control, s3, sm = client("bedrock-agentcore-control"), client("s3"), client("sagemaker")
    job = {
        "JobArn": "arn:aws:sagemaker:us-east-1:111122223333:job/AgentRFT/wordle-run",
        "JobName": "wordle-run",
        "JobCategory": "AgentRFT",
        "JobStatus": "InProgress",
        "JobSecondaryStatus": "Training",
        "CreationTime": NOW,
        "LastModifiedTime": NOW,
    }
    with Stubber(control) as c, Stubber(s3) as b, Stubber(sm) as j:
        b.add_response("get_bucket_location", {}, {"Bucket": "my-bucket"})
        c.add_response("list_agent_runtimes", {"agentRuntimes": [summary()]}, {})
        j.add_response(
            "list_jobs",
            {"JobSummaries": [job]},
            {"JobCategory": "AgentRFT", "StatusEquals": "InProgress"},
        )
        j.add_response(
            "list_jobs",
            {"JobSummaries": []},
            {"JobCategory": "AgentRFTEvaluation", "StatusEquals": "InProgress"},
        )
        with pytest.raises(DeployError, match="AgentRFT/wordle-run"):
            deploy(
                spec(), a_zip(tmp_path), control=control, s3=s3, sagemaker=sm, echo=lambda m: None
            )
        for stub in (c, b, j):
            stub.assert_no_pending_responses()  # and nothing was uploaded or updated


def test_a_bucket_in_another_region_stops_before_upload(tmp_path: Path) -> None:
    control, s3 = client("bedrock-agentcore-control"), client("s3")
    with Stubber(s3) as b:
        b.add_response(
            "get_bucket_location", {"LocationConstraint": "eu-west-1"}, {"Bucket": "my-bucket"}
        )
        with pytest.raises(DeployError, match="share one region"):
            deploy(spec(), a_zip(tmp_path), control=control, s3=s3, echo=lambda m: None)


def test_wait_reports_the_failure_reason_and_times_out() -> None:
    control = client("bedrock-agentcore-control")
    with Stubber(control) as c:
        c.add_response(
            "get_agent_runtime",
            runtime("UPDATE_FAILED", failureReason="entry point main.py not found"),
            {"agentRuntimeId": RUNTIME_ID},
        )
        with pytest.raises(DeployError, match=r"main\.py not found"):
            wait_ready(control, RUNTIME_ID, sleep=lambda s: None)

        ticks = iter([0.0, 5.0, 11.0])
        c.add_response("get_agent_runtime", runtime("CREATING"), {"agentRuntimeId": RUNTIME_ID})
        c.add_response("get_agent_runtime", runtime("CREATING"), {"agentRuntimeId": RUNTIME_ID})
        with pytest.raises(DeployError, match="still CREATING"):
            wait_ready(
                control, RUNTIME_ID, timeout_s=10, sleep=lambda s: None, clock=lambda: next(ticks)
            )


def test_requests_validate_against_botocore() -> None:
    validate_request("CreateAgentRuntime", spec().create_request())
    with pytest.raises(DeployError, match="agentRuntimeArtifact"):
        validate_request(
            "CreateAgentRuntime", {**spec().create_request(), "agentRuntimeArtifact": "zip"}
        )


# --- the CLI ------------------------------------------------------------------------------------


def cli() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root() -> None:
        """agentrft (test)."""

    runtime_cli.register(app)
    return app


def test_dry_run_shows_every_step_and_request_without_aws(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("agentrft_wordle")
    import boto3 as boto3_module

    def no_aws(*a: Any, **k: Any) -> Any:
        raise AssertionError("--dry-run must not create an AWS session")

    monkeypatch.setattr(boto3_module, "Session", no_aws)
    result = CliRunner().invoke(
        cli(),
        [
            "deploy",
            "--task",
            "wordle",
            "--role-arn",
            ROLE,
            "--region",
            REGION,
            "--s3",
            "s3://my-bucket/code",
            "--workdir",
            str(tmp_path),
            "--dry-run",
        ],
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "--platform manylinux2014_aarch64" in out and "--only-binary=:all:" in out
    assert "copy agentrft_wordle" in out or "copy agentrft-wordle" in out
    assert '"AGENTRFT_TASK": "wordle"' in out and '"runtime": "PYTHON_3_11"' in out
    assert "CreateAgentRuntime" in out and "UpdateAgentRuntime" in out and "PutObject" in out
    assert "Never redeploy" in out
    assert not list(tmp_path.glob("*.zip"))  # nothing built


def test_deploy_without_a_role_says_what_to_pass() -> None:
    pytest.importorskip("agentrft_wordle")
    result = CliRunner().invoke(cli(), ["deploy", "--task", "wordle"])
    assert result.exit_code == 2
    assert "--role-arn is required" in result.output
    assert "AmazonSageMakerJobRuntimeAccess" in result.output


def test_unknown_task_is_named() -> None:
    result = CliRunner().invoke(cli(), ["deploy", "--task", "wordel", "--dry-run"])
    assert result.exit_code == 2
    assert "wordel" in result.output


def test_deploy_command_end_to_end_with_stubbed_aws(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("agentrft_wordle")
    control, s3, sm, sts = (
        client(s) for s in ("bedrock-agentcore-control", "s3", "sagemaker", "sts")
    )
    arn = f"arn:aws:bedrock-agentcore:{REGION}:111122223333:runtime/agentrft_wordle-AbCdE12345"

    class Session:
        region_name = REGION

        def __init__(self, *a: Any, **k: Any) -> None:
            pass

        def client(self, service: str, **kwargs: Any) -> Any:
            return {"bedrock-agentcore-control": control, "s3": s3, "sagemaker": sm, "sts": sts}[
                service
            ]

    monkeypatch.setattr(boto3, "Session", Session)
    with Stubber(control) as c, Stubber(s3) as b, Stubber(sts) as t:
        t.add_response(
            "get_caller_identity",
            {
                "Account": "111122223333",
                "Arn": "arn:aws:iam::111122223333:user/me",
                "UserId": "AIDA",
            },
        )
        b.add_response("get_bucket_location", {}, {"Bucket": "sagemaker-us-east-1-111122223333"})
        c.add_response("list_agent_runtimes", {"agentRuntimes": []}, {})
        b.add_response(
            "put_object",
            {},
            {
                "Bucket": "sagemaker-us-east-1-111122223333",
                "Key": ANY,
                "Body": ANY,
                "ContentType": "application/zip",
            },
        )
        c.add_response(
            "create_agent_runtime",
            {
                "agentRuntimeArn": arn,
                "agentRuntimeId": "agentrft_wordle-AbCdE12345",
                "agentRuntimeVersion": "1",
                "createdAt": NOW,
                "status": "CREATING",
            },
            ANY_CREATE,
        )
        c.add_response(
            "get_agent_runtime",
            {
                **runtime("READY"),
                "agentRuntimeArn": arn,
                "agentRuntimeId": "agentrft_wordle-AbCdE12345",
                "agentRuntimeName": "agentrft_wordle",
            },
            {"agentRuntimeId": "agentrft_wordle-AbCdE12345"},
        )
        result = CliRunner().invoke(
            cli(),
            [
                "deploy",
                "--task",
                "wordle",
                "--role-arn",
                ROLE,
                "--no-deps",
                "--skip-preflight",
                "--workdir",
                str(tmp_path),
            ],
        )
        for stub in (c, b, t):
            stub.assert_no_pending_responses()
    assert result.exit_code == 0, result.output
    assert arn in result.output and f"agentrft smoke-test --runtime-arn {arn}" in result.output
    assert "will not start without its dependencies" in result.output  # --no-deps warned
    assert (tmp_path / "agentrft-runtime-wordle.zip").exists()


ANY_CREATE = {
    "agentRuntimeName": "agentrft_wordle",
    "description": ANY,
    "agentRuntimeArtifact": ANY,
    "roleArn": ROLE,
    "networkConfiguration": {"networkMode": "PUBLIC"},
    "protocolConfiguration": {"serverProtocol": "HTTP"},
    "environmentVariables": {"AGENTRFT_TASK": "wordle", "AGENTRFT_BIND_ALL": "1"},
    "clientToken": ANY,
}


def test_env_settings_reach_the_runtime_and_dry_run_hides_their_keys(tmp_path: Path) -> None:
    pytest.importorskip("agentrft_wordle")
    secret = "sk-test-0123456789abcdef"
    args = ["deploy", "--task", "wordle", "--workdir", str(tmp_path), "--dry-run"]
    result = CliRunner().invoke(
        cli(),
        [
            *args,
            "--env",
            "AGENTRFT_TAU2_USER_MODEL=openai/gpt-4.1",
            "--env",
            f'AGENTRFT_TAU2_USER_ARGS={{"api_key": "{secret}"}}',
        ],
    )
    assert result.exit_code == 0, result.output
    assert '"AGENTRFT_TAU2_USER_MODEL": "openai/gpt-4.1"' in result.output
    assert "AGENTRFT_TAU2_USER_ARGS" in result.output and secret not in result.output
    spec = DeploySpec(
        task="wordle", name="agentrft_wordle", role_arn=ROLE, region=REGION, bucket="b",
        key="k.zip", extra_env={"AGENTRFT_TAU2_USER_ARGS": secret},
    )  # fmt: skip
    assert spec.create_request()["environmentVariables"]["AGENTRFT_TAU2_USER_ARGS"] == secret
    for bad, why in [("NOEQUALS", "write KEY=VALUE"), ("AGENTRFT_TASK=x", "sets it itself")]:
        refused = CliRunner().invoke(cli(), [*args, "--env", bad])
        assert refused.exit_code == 2 and why in refused.output, refused.output
