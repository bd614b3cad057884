"""One runtime serving several tasks: rows routed by the task named inside the prompt string
(the loopback job runtime records what the real boto3 client sends), the training dry run of
a two-task config (one runtime, rows of both tasks) and `deploy --task a,b` (every task's
plugin in one bundle)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrft import RewardResult, Trajectory
from agentrft.backends.sagemaker.jobs.bundle import entry_script, plan_bundle
from agentrft.backends.sagemaker.jobs.deploy import DeploySpec, validate_request
from agentrft.backends.sagemaker.jobs.job_document import validate_request as validate_job
from agentrft.mixture import MixtureTask, TaskMixture, route_prompt, wrap_prompt

from .test_deploy import cli as deploy_cli
from .test_offline_dry_run import ACCOUNT, MLFLOW, REGION, ROLE, blocked, printed_request, run
from .test_offline_dry_run import cli as train_cli
from .test_runtime_app import (
    DoorEnv,
    DoorTask,
    aws,
    door_row,
    loopback,
    payload,
    serve,
    with_endpoint,
)

__all__ = ["aws", "blocked", "train_cli"]  # fixtures used by name below


class PrizeTask(DoorTask):
    """The same doors on another reward scale, so a reward shows which task scored it."""

    name = "prize"

    def reward(self, env: Any, trajectory: Trajectory) -> RewardResult:
        assert isinstance(env, DoorEnv)
        return RewardResult(total=7.0 if env.found else 3.0, solved=env.found)


def two_tasks() -> MixtureTask:
    mixture = TaskMixture.of({"doors": 0.5, "prize": 0.5})
    return MixtureTask({"doors": DoorTask(), "prize": PrizeTask()}, mixture)


def test_one_runtime_routes_each_rollout_to_the_task_its_prompt_names(aws: None) -> None:
    rows = [
        ("r1", wrap_prompt("doors", door_row(secret=2))),
        ("r2", wrap_prompt("prize", door_row(secret=1))),
        ("r3", wrap_prompt("wordle", door_row(secret=1))),  # a task this runtime lacks
        ("r4", door_row(secret=1)),  # a single-task row: no task named
    ]
    with loopback() as jr, serve(two_tasks()) as app:
        answers = {rid: app.invoke(with_endpoint(payload(p, rollout=rid), jr.endpoint))
                   for rid, p in rows}  # fmt: skip

    assert all(a.status_code == 200 for a in answers.values())
    rewards = {rid: a.json()["reward"] for rid, a in answers.items()}
    assert rewards["r1"] == pytest.approx(1.0 + 0.1 * (1 - 2 / 3))  # doors' own reward
    assert rewards["r2"] == 7.0  # prize's reward, found on door 1
    assert rewards["r3"] == rewards["r4"] == -1.5  # the lowest tier, never a crash
    reported = {u.body["TrajectoryId"]: u.body["Rewards"] for u in jr.rewards}
    assert reported == {rid: [r] for rid, r in rewards.items()}
    # The two bad rows never reached the model: only r1 (2 turns) and r2 (1 turn) did.
    assert [c.headers["x-amzn-sagemaker-trajectory-id"] for c in jr.chat] == ["r1", "r1", "r2"]


def test_the_dry_run_of_a_two_task_config_shows_one_runtime_and_rows_of_both(
    train_cli: Any, blocked: list[Any], tmp_path: Path
) -> None:
    runtime = f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/agentrft_two-AbCdEfGhIj"
    config = tmp_path / "mix.yaml"
    config.write_text("tasks: {wordle: 0.75, expense_report: 0.25}\n")
    pytest.importorskip("agentrft_expense_report")
    rows = tmp_path / "train.jsonl"
    made = run(train_cli, "dataset", "make", "--task", "wordle=0.75,expense_report=0.25",
               "--n", "16", "-o", str(rows))  # fmt: skip
    assert made.exit_code == 0, made.output
    result = run(
        train_cli, "train", "-c", str(config), "--backend", "sagemaker",
        "--model", "openai-reasoning-gpt-oss-20b", "--agent-runtime-arn", runtime,
        "--data", str(rows), "--train-dataset", "s3://my-agentrft-bucket/mix/train.jsonl",
        "--s3-output-path", "s3://my-agentrft-bucket/output/", "--mlflow-app-arn", MLFLOW,
        "--role-arn", ROLE, "--region", REGION, "--dry-run",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert blocked == []
    out = " ".join(result.output.split())  # rich wraps long lines
    assert f"one runtime serves tasks wordle, expense_report: {runtime}" in out
    assert "deploy it with `agentrft deploy --task wordle,expense_report`" in out
    assert (
        f"train rows, {rows}, for s3://my-agentrft-bucket/mix/train.jsonl: wordle 12, "
        "expense_report 4" in out
    )
    request = printed_request(result.output)
    validate_job("CreateJob", request)  # botocore's own model, as Stubber checks it
    doc = json.loads(request["JobConfigDocument"])
    assert doc["AgentConfig"]["BedrockAgentCoreConfig"]["AgentRuntimeArn"] == runtime
    assert request["Tags"] == [{"Key": "agentrft:task", "Value": "wordle+expense_report"}]
    names = [route_prompt(json.loads(x)["prompt"])[0] for x in rows.read_text().splitlines()]
    assert sorted(set(names)) == ["expense_report", "wordle"]


def test_deploy_of_two_tasks_bundles_both_plugins_into_one_runtime(tmp_path: Path) -> None:
    pytest.importorskip("agentrft_wordle")
    pytest.importorskip("agentrft_expense_report")
    result = CliRunner().invoke(deploy_cli(), [
        "deploy", "--task", "wordle,expense_report", "--role-arn", ROLE, "--region", REGION,
        "--s3", "s3://my-bucket/code", "--workdir", str(tmp_path), "--dry-run",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.output
    assert "copy agentrft-wordle" in out and "copy agentrft-expense-report" in out
    assert '"AGENTRFT_TASK": "wordle,expense_report"' in out
    assert out.count("CreateAgentRuntime {") == 1
    assert '"agentRuntimeName": "agentrft_wordle_expense_report"' in out
    plan = plan_bundle("wordle,expense_report", ["agentrft-wordle", "agentrft-expense-report"],
                       tmp_path)  # fmt: skip
    assert [d.name for d in plan.local] == [
        "agentrft",
        "agentrft-wordle",
        "agentrft-expense-report",
    ]
    assert "os.environ.setdefault('AGENTRFT_TASK', 'wordle,expense_report')" in entry_script(
        "wordle,expense_report"
    )
    spec = DeploySpec(task="wordle,expense_report", name="agentrft_wordle_expense_report",
                      role_arn=ROLE, region=REGION, bucket="my-bucket", key="code/x.zip")  # fmt: skip
    validate_request("CreateAgentRuntime", spec.create_request())
    refused = CliRunner().invoke(deploy_cli(), ["deploy", "--task", "wordle,wordel", "--dry-run"])
    assert refused.exit_code == 2 and "task 'wordel' not found" in refused.output


def test_the_runtime_process_serves_every_task_in_agentrft_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("agentrft_wordle")
    pytest.importorskip("agentrft_expense_report")
    from agentrft.backends.sagemaker.runtime import app as runtime_app
    from agentrft.backends.sagemaker.runtime import main as runtime_main
    from agentrft.plugins import PluginError

    built: list[Any] = []
    monkeypatch.setattr(runtime_app, "build_app", lambda task, **kw: built.append(task) or task)
    runtime_main.load_app("wordle,expense_report")
    (task,) = built
    assert isinstance(task, MixtureTask) and list(task.tasks) == ["wordle", "expense_report"]
    with pytest.raises(SystemExit, match="serves wordle\\+expense_report; deploy without --reward"):
        runtime_main.load_app("wordle,expense_report", reward="anything")
    with pytest.raises(PluginError, match="task 'nope' not found"):
        runtime_main.load_app("wordle,nope")
