"""`--dry-run` with the network blocked and fake credentials: nothing remote is called, the
provably wrong inputs are refused offline with one line each, the plan names where every
hyperparameter comes from, and the service's sample launcher command lines work as they are
(`agentrft train|eval --task wordle --backend sagemaker` in place of its scripts)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrft.backends.sagemaker.jobs import recipe
from agentrft.backends.sagemaker.jobs.job_document import validate_request
from agentrft.backends.sagemaker.jobs.static_checks import bucket_problem, input_problems
from agentrft.cli.app import create_app
from agentrft.config_model import load_config
from agentrft.plugins import load_plugins, use_plugins

ACCOUNT = "111122223333"
REGION = "us-east-1"
RUNTIME = f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/wordle_agent-AbCdEfGhIj"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/agentrft-job"
MLFLOW = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:mlflow-app/app-ABC123"
PACKAGE = (
    f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package/openai-reasoning-gpt-oss-20b-mtrl-mpg/1"
)
SECRET = "fake-secret-key-that-must-never-be-printed"
runner = CliRunner()


@pytest.fixture
def blocked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Any]:
    """Fake (but complete) credentials and no network: every connection or name lookup is
    refused and recorded, so a test can assert none was attempted."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDAGENTRFTTEST0000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", "fake-session-token")
    for var in ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_EC2_METADATA_DISABLED"):
        monkeypatch.delenv(var, raising=False)  # metadata enabled: any lookup would show
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    attempts: list[Any] = []

    def connect(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError(f"network blocked by the test: {address}")

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(host)
        raise socket.gaierror(f"name lookup blocked by the test: {host}")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


@pytest.fixture
def cli() -> Any:
    pytest.importorskip("agentrft_wordle")
    with use_plugins(load_plugins()):
        yield create_app(plugins=True)


def run(app: Any, *args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "250", "NO_COLOR": "1"})


def printed_request(text: str) -> dict[str, Any]:
    start = text.index("{", text.index("CreateJob request (dry run"))
    return json.loads(text[start : text.index("\n\nJobConfigDocument (decoded)")])


# The launch post's training run, with the sample launcher's flag names
# (run_mtrl_training.py --model ... --agent-runtime-arn ... --train-dataset ... ...).
LAUNCH_TRAIN = [
    "train", "--task", "wordle", "--backend", "sagemaker",
    "--model", "openai-reasoning-gpt-oss-20b",
    "--agent-runtime-arn", RUNTIME,
    "--train-dataset", "s3://my-agentrft-bucket/wordle/train.jsonl",
    "--val-dataset", "s3://my-agentrft-bucket/wordle/validation.jsonl",
    "--s3-output-path", "s3://my-agentrft-bucket/output/",
    "--mlflow-app-arn", MLFLOW,
    "--role-arn", ROLE,
    "--set", "sampling_max_tokens=8192", "--set", "max_epochs=20", "--max-steps", "100",
    "--set", "sagemaker.base_model_version=1.2.0",
]  # fmt: skip


def test_the_launch_run_dry_run_calls_nothing_and_sends_only_what_was_set(
    cli: Any, blocked: list[Any]
) -> None:
    result = run(cli, *LAUNCH_TRAIN, "--dry-run")
    assert result.exit_code == 0, result.output
    assert blocked == []  # no connection, no name lookup: not even the credential chain
    assert SECRET not in result.output
    request = printed_request(result.output)
    validate_request("CreateJob", request)
    doc = json.loads(request["JobConfigDocument"])
    assert doc["TrainingConfig"]["HyperParameters"] == {
        "sampling_max_tokens": "8192", "max_epochs": "20", "max_steps": "100"
    }  # fmt: skip
    assert doc["AgentConfig"]["BedrockAgentCoreConfig"]["AgentRuntimeArn"] == RUNTIME
    assert [c["DataSource"]["S3DataSource"]["S3Uri"] for c in doc["InputDataConfig"]] == [
        "s3://my-agentrft-bucket/wordle/train.jsonl",
        "s3://my-agentrft-bucket/wordle/validation.jsonl",
    ]
    assert doc["OutputDataConfig"] == {"S3OutputPath": "s3://my-agentrft-bucket/output/"}
    assert doc["TrainingConfig"]["MlflowConfig"]["MlflowResourceArn"] == MLFLOW
    # The group ARNs carry the role's account (nothing was looked up).
    assert doc["ModelPackageConfig"]["OutputModelPackageGroupArn"] == (
        f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:model-package-group/"
        "openai-reasoning-gpt-oss-20b-mtrl-mpg"
    )
    lines = {line.split("│")[1].strip(): line for line in result.output.splitlines()
             if line.count("│") >= 3}  # fmt: skip
    assert "8192" in lines["sampling_max_tokens"] and "set by you" in lines["sampling_max_tokens"]
    assert "100" in lines["max_steps"] and "set by you" in lines["max_steps"]
    # gpt-oss-20b's own recipe default, not the generic 4e-5.
    assert "1e-05" in lines["learning_rate"] and "recipe default" in lines["learning_rate"]
    assert "128" in lines["global_batch_size"] and "recipe default" in lines["global_batch_size"]
    assert "not published" in lines["rollout_timeout"]
    assert "3 hyperparameters sent" in result.output
    assert "no AWS call made" in result.output


def test_send_hyperparameters_all_sends_agentrfts_defaults_and_says_so(
    cli: Any, blocked: list[Any]
) -> None:
    result = run(cli, *LAUNCH_TRAIN, "--set", "sagemaker.send_hyperparameters=all", "--dry-run")
    assert result.exit_code == 0, result.output
    hps = json.loads(printed_request(result.output)["JobConfigDocument"])["TrainingConfig"][
        "HyperParameters"
    ]
    assert (
        len(hps) == 23
        and hps["max_steps_off_policy"] == "0"
        and hps["learning_rate"] == "4e-05"
        and hps["max_steps"] == "100"
    )
    assert "agentrft default" in result.output and blocked == []


def test_lookups_needs_dry_run(cli: Any, blocked: list[Any]) -> None:
    result = run(cli, *LAUNCH_TRAIN, "--lookups")
    assert result.exit_code == 1 and "--lookups goes with --dry-run" in result.output


def _replace(args: list[str], flag: str, value: str) -> list[str]:
    out = list(args)
    out[out.index(flag) + 1] = value
    return out


WRONG_INPUTS = [
    ("role-other-partition", "--role-arn", f"arn:aws-cn:iam::{ACCOUNT}:role/agentrft-job",
     "partition aws-cn"),
    ("role-is-a-user", "--role-arn", f"arn:aws:iam::{ACCOUNT}:user/alice", "IAM user, not a role"),
    ("role-not-an-arn", "--role-arn", "agentrft-job", "not an IAM role ARN"),
    ("runtime-other-region", "--agent-runtime-arn",
     f"arn:aws:bedrock-agentcore:us-west-2:{ACCOUNT}:runtime/wordle_agent-AbCdEfGhIj",
     "runtime (--runtime-arn) is in us-west-2"),
    ("runtime-not-a-runtime", "--agent-runtime-arn",
     f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:gateway/g-1", "not an AgentCore runtime ARN"),
    ("bucket-of-another-region", "--s3-output-path",
     f"s3://sagemaker-us-west-2-{ACCOUNT}/output/", "default bucket of us-west-2"),
    ("no-bucket", "--train-dataset", "s3:///x", "no bucket name"),
    ("no-scheme", "--train-dataset", "bucket/x", "must start with s3://"),
    ("empty-uri", "--val-dataset", "s3://", "has no bucket"),
    ("bucket-uppercase", "--s3-output-path", "s3://My_Bucket/out/", "not a valid S3 bucket name"),
    ("bucket-ip", "--train-dataset", "s3://192.168.1.10/train.jsonl", "not an IP address"),
    ("bucket-double-dot", "--train-dataset", "s3://my..bucket/t.jsonl", "adjacent dots"),
    ("mlflow-malformed", "--mlflow-app-arn",
     f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:tracking/app-1", "not a SageMaker MLflow app ARN"),
    ("mlflow-other-region", "--mlflow-app-arn",
     f"arn:aws:sagemaker:eu-west-1:{ACCOUNT}:mlflow-app/app-1", "MLflow app (--mlflow-arn) is in eu-west-1"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [case[1:] for case in WRONG_INPUTS],
    ids=[case[0] for case in WRONG_INPUTS],
)
def test_provably_wrong_inputs_fail_offline_with_one_line(
    cli: Any, blocked: list[Any], flag: str, value: str, message: str
) -> None:
    args = _replace(LAUNCH_TRAIN, flag, value)
    if flag == "--agent-runtime-arn":
        args += ["--region", REGION]  # else the runtime's region would be the job's
    result = run(cli, *args, "--dry-run")
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.output
    assert "Traceback" not in result.output and "CreateJob request" not in result.output
    assert blocked == []


def test_several_wrong_inputs_are_listed_together() -> None:
    cfg = load_config(
        values={
            "sagemaker.role_arn": f"arn:aws:iam::{ACCOUNT}:user/alice",
            "sagemaker.train_s3_uri": "s3://",
            "sagemaker.output_s3_path": "s3://ok-bucket/out/",
        }
    )
    problems = input_problems(cfg, REGION)
    assert len(problems) == 2 and "IAM user" in problems[0] and "no bucket" in problems[1]


def test_a_runtime_in_another_account_than_the_role_is_refused() -> None:
    other = RUNTIME.replace(f":{ACCOUNT}:", ":999999999999:")
    assert other != RUNTIME
    cfg = load_config(values={"sagemaker.role_arn": ROLE, "sagemaker.runtime_arn": other})
    problems = input_problems(cfg, REGION)
    assert len(problems) == 1
    assert f"is in account 999999999999, the job role (--role-arn) in {ACCOUNT}" in problems[0]
    # A Lambda reward function is not an AgentCore runtime: no account rule for it here.
    lam = f"arn:aws:lambda:{REGION}:999999999999:function:reward"
    assert input_problems(load_config(values={"sagemaker.role_arn": ROLE,
                                              "sagemaker.runtime_arn": lam}), REGION) == []  # fmt: skip


def test_valid_inputs_pass_and_bucket_rules() -> None:
    cfg = load_config(
        values={
            "sagemaker.role_arn": ROLE,
            "sagemaker.runtime_arn": RUNTIME,
            "sagemaker.mlflow_resource_arn": MLFLOW,
            "sagemaker.train_s3_uri": "s3://my-agentrft-bucket",  # the whole bucket
            "sagemaker.output_s3_path": f"s3://sagemaker-{REGION}-{ACCOUNT}/out/",
            "sagemaker.kms_key_arn": f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234",
        }
    )
    assert input_problems(cfg, REGION) == []
    assert input_problems(cfg, "us-west-2")  # the same inputs for a job elsewhere
    for good in ("abc", "my.bucket-1", "a" * 63):
        assert bucket_problem(good) is None
    for bad in ("ab", "a" * 64, "-abc", "abc-", "xn--abc", "abc-s3alias", "a_b", "a.-b"):
        assert bucket_problem(bad) is not None, bad


# -- the recipe facts -----------------------------------------------------------------------


def test_recipe_ranges_depend_on_the_model() -> None:
    assert recipe.check({"global_batch_size": "128"}, "openai-reasoning-gpt-oss-20b") == ([], [])
    errors, _ = recipe.check({"global_batch_size": "128"}, "amazon-nova-lite-v2")
    assert "not one of 8, 16, 32, 64" in errors[0] and "mtrl_nova_lite_lora" in errors[0]
    errors, _ = recipe.check({"lora_rank": "64"}, "amazon-nova-lite-v2")
    assert "outside [16, 32]" in errors[0]
    assert recipe.check({"lora_rank": "64"}, "openai-reasoning-gpt-oss-20b") == ([], [])
    errors, _ = recipe.check(
        {"learning_rate": "0", "max_steps": "2.5", "pass_k_values": "[1, 0]",
         "sampling_max_tokens": "16384", "advantage_method": "grpo"},
        "openai-reasoning-gpt-oss-20b",
    )  # fmt: skip
    assert len(errors) == 5
    assert "learning_rate=0 is outside (0, 0.01]" in errors[0]
    assert "not a whole number" in errors[1] and "pass_k_values" in errors[2]
    assert "sampling_max_tokens=16384 is outside [512, 8192]" in errors[3]
    assert "group_based_per_turn" in errors[4]  # the choices are listed


def test_recipe_names_and_characters() -> None:
    errors, warnings = recipe.check(
        {"max_step": "100", "save_every": "5", "lr": "1e+20", "data_path": "s3://x"},
        "openai-reasoning-gpt-oss-20b",
    )
    assert errors == ["lr='1e+20' has characters the service refuses (letters, digits, space "
                      "and / _ . : , - ' \" [ ] only)"]  # fmt: skip
    assert "did you mean 'max_steps'" in warnings[0]
    assert "save_every is not a variable of the mtrl_lora recipe" in warnings[1]
    assert "set by the service itself" in warnings[2]
    assert recipe.check({"save_every": "5"}, "amazon-nova-lite-v2") == ([], [])


def test_plan_defaults_are_model_conditional() -> None:
    def default(model: str, name: str) -> str:
        rows = {r.name: r for r in recipe.plan({}, set(), model)}
        assert rows[name].source == "recipe default" and not rows[name].sent
        return rows[name].value

    assert default("openai-reasoning-gpt-oss-20b", "learning_rate") == "1e-05"
    assert default("huggingface-vlm-gemma-4-31b-it", "learning_rate") == "1e-05"
    assert default("some-other-model", "learning_rate") == "4e-05"
    assert default("amazon-nova-lite-v2", "temperature") == "0.7"
    assert default("openai-reasoning-gpt-oss-20b", "temperature") == "1"
    assert recipe.region_note("huggingface-vlm-gemma-4-31b-it", "us-east-1")
    assert recipe.region_note("openai-reasoning-gpt-oss-20b", "us-east-1") is None


def test_group_based_per_turn_passes_through(cli: Any, blocked: list[Any]) -> None:
    result = run(cli, *LAUNCH_TRAIN, "--set", "advantage_method=group_based_per_turn", "--dry-run")
    assert result.exit_code == 0, result.output
    hps = json.loads(printed_request(result.output)["JobConfigDocument"])["TrainingConfig"][
        "HyperParameters"
    ]
    assert hps["advantage_method"] == "group_based_per_turn"


# -- the sample's evaluation launcher (run_mtrl_eval.py --runs base:1.0 trained:1.0) -------

LAUNCH_EVAL = [
    "eval", "--task", "wordle", "--backend", "sagemaker",
    "--runs", "base:1.0", "trained:1.0",
    "--model-package-arn", PACKAGE,
    "--agent-runtime-arn", RUNTIME,
    "--val-dataset", "s3://my-agentrft-bucket/wordle/validation.jsonl",
    "--s3-output-path", "s3://my-agentrft-bucket/eval/",
    "--mlflow-app-arn", MLFLOW,
    "--role-arn", ROLE,
    "--set", "sagemaker.base_model_version=1.2.0",
]  # fmt: skip


def test_eval_runs_take_several_values_and_the_report_is_written(
    cli: Any, blocked: list[Any], tmp_path: Path
) -> None:
    report = tmp_path / "eval-report.json"
    result = run(cli, *LAUNCH_EVAL, "--dry-run", "--report", str(report))
    assert result.exit_code == 0, result.output
    assert blocked == []
    assert "2 runs queued" in result.output and "1 job at a time" in result.output
    data = json.loads(report.read_text())
    assert data["backend"] == "sagemaker" and data["task"] == "wordle" and data["dry_run"]
    runs = data["runs"]
    assert [(r["run"], r["temperature"], r["status"]) for r in runs] == [
        ("base", 1.0, "dry run"),
        ("trained", 1.0, "dry run"),
    ]
    # Nothing was set: the run's temperature and the three keys AWS's SDK (sagemaker-train
    # 1.27's evaluator) always sends, with its values.
    sdk = {"eval_group_size": "1", "pass_k_values": "[1]", "success_threshold": "1.0"}
    assert [r["hyperparameters"] for r in runs] == [{"temperature": "1.0", **sdk}] * 2
    assert SECRET not in report.read_text()


def test_a_temperature_sweep_queues_and_says_so(cli: Any, blocked: list[Any]) -> None:
    args = [a for a in LAUNCH_EVAL if a not in ("base:1.0", "trained:1.0", "--runs")]
    result = run(cli, *args, "--temperature", "0.3", "--temperature", "1.0", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "4 runs queued" in result.output
    assert result.output.count('"JobCategory": "AgentRFTEvaluation"') == 4
    for shown in ("base at temperature 0.3", "trained at temperature 0.3",
                  "base at temperature 1", "trained at temperature 1"):  # fmt: skip
        assert shown in result.output
    assert '\\"temperature\\":\\"0.3\\"' in result.output


def test_a_stray_argument_without_runs_is_refused(cli: Any, blocked: list[Any]) -> None:
    args = [a for a in LAUNCH_EVAL if a not in ("--runs",)]
    result = run(cli, *args, "--dry-run")
    assert result.exit_code == 1 and "runs go after --runs" in result.output


def test_model_and_base_model_must_agree(cli: Any, blocked: list[Any]) -> None:
    result = run(cli, *LAUNCH_TRAIN, "--base-model", "other-model", "--dry-run")
    assert result.exit_code == 1 and "both name the sagemaker base model" in result.output


def test_the_block_is_real_lookups_would_reach_aws(cli: Any, blocked: list[Any]) -> None:
    """The same command with --lookups tries DescribeHubContent: the block sees it."""
    result = run(cli, *LAUNCH_TRAIN, "--dry-run", "--lookups")
    assert result.exit_code == 1, result.output
    assert any("sagemaker" in str(a) and "amazonaws.com" in str(a) for a in blocked), blocked
    assert SECRET not in result.output


def test_an_unpinned_base_model_says_what_the_real_request_carries(
    cli: Any, blocked: list[Any]
) -> None:
    """Offline, the version is not known: the printed ARN ends in a placeholder, and the
    plan says that the submitted request carries the version looked up at submit time."""
    args = LAUNCH_TRAIN[: LAUNCH_TRAIN.index("sagemaker.base_model_version=1.2.0") - 1]
    result = run(cli, *args, "--dry-run")
    assert result.exit_code == 0, result.output
    arn = json.loads(printed_request(result.output)["JobConfigDocument"])["TrainingConfig"][
        "BaseModelArn"
    ]
    assert arn.endswith("/<latest: set sagemaker.base_model_version>")
    assert "the request a real run submits carries the hub's latest version" in result.output
    pinned = run(cli, *LAUNCH_TRAIN, "--dry-run")
    assert "latest version" not in pinned.output and "1.2.0" in pinned.output
