"""Rewards that return NaN, inf or a wrong type, or raise: every one is a `reward_error` that
names the reward and the row; `eval` exits 1 when most episodes' reward failed, `play` exits 1
when its episode's did; a single failing episode in an eval is a warning, not a stop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrft import NamedReward, RewardResult, hookimpl
from agentrft.cli.app import create_app
from agentrft.plugins import load_plugins, use_plugins
from tests.conftest import TinyPlugin


def nan_reward(env: Any, traj: Any) -> RewardResult:
    return RewardResult(total=float("nan"))


def inf_reward(env: Any, traj: Any) -> RewardResult:
    return RewardResult(total=float("inf"), outcome="win")


def text_reward(env: Any, traj: Any) -> Any:
    return "great"


def raising_reward(env: Any, traj: Any) -> RewardResult:
    raise ZeroDivisionError("division by zero")


def first_row_fails(env: Any, traj: Any) -> RewardResult:
    if traj.metadata.get("row") == 0:
        return RewardResult(total=float("nan"))
    return RewardResult(total=1.0, outcome="ok", solved=True)


class BadRewards:
    @hookimpl
    def agentrft_rewards(self) -> dict[str, NamedReward]:
        fns = [nan_reward, inf_reward, text_reward, raising_reward, first_row_fails]
        return {fn.__name__: NamedReward(fn) for fn in fns}


@pytest.fixture
def bad_rewards() -> Any:
    with use_plugins(load_plugins(extra=[TinyPlugin(), BadRewards()], entry_points=False)) as p:
        yield p


def invoke(*argv: str) -> Any:
    return CliRunner().invoke(create_app(), list(argv), env={"COLUMNS": "200", "NO_COLOR": "1"})


@pytest.mark.parametrize(
    ("reward", "said"),
    [
        ("nan_reward", "returned total = nan"),
        ("inf_reward", "returned total = inf"),
        ("text_reward", "returned str 'great', not a RewardResult"),
        ("raising_reward", "raised ZeroDivisionError: division by zero"),
    ],
)
def test_eval_with_a_reward_that_always_fails_exits_1_naming_it(
    reward: str, said: str, bad_rewards: Any, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    result = invoke(
        "eval", "--task", "find_number", "--policy", "expert", "--n", "4",
        "--reward", reward, "--report", str(report),
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "This is a bug" not in result.output
    error = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1, result.output
    assert "the reward failed on 4 of 4 episodes" in error[0]
    assert said in error[0] and f"reward {reward} on row" in error[0]
    # The report was written before the exit, and it shows the failures.
    written = json.loads(report.read_text())
    assert "nan" not in report.read_text().lower()
    assert written["reports"][0]["failure_kinds"]["reward_error"] == 4


def test_eval_with_one_failing_row_warns_and_exits_0(bad_rewards: Any) -> None:
    result = invoke(
        "eval", "--task", "find_number", "--policy", "expert", "--n", "4",
        "--reward", "first_row_fails",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning: the reward failed on 1 of 4 episodes (25%" in result.output
    assert "total = nan" in result.output


@pytest.mark.parametrize("reward", ["nan_reward", "text_reward"])
def test_play_with_a_failing_reward_exits_1(reward: str, bad_rewards: Any) -> None:
    result = invoke("play", "--task", "find_number", "--policy", "expert", "--reward", reward)
    assert result.exit_code == 1, result.output
    assert "+nan" not in result.output
    assert "error: the reward failed, so the episode scored the lowest tier" in result.output


# -- rows that are no task instance, and flags that a rows file makes meaningless ----------


def test_play_on_a_row_that_is_no_instance_exits_1(bad_rewards: Any, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "not a find_number row"}) + "\n")
    result = invoke("play", "--task", "find_number", "--policy", "expert", "--data", str(rows))
    assert result.exit_code == 1, result.output
    assert "error: row 0 is not a find_number instance" in result.output


def test_eval_refuses_split_or_seed_with_a_rows_file(bad_rewards: Any, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": json.dumps({"secret": 3, "low": 1, "high": 9})}) + "\n")
    for flag, value in (("--split", "test"), ("--seed", "4")):
        result = invoke(
            "eval", "--task", "find_number", "--policy", "expert", "--data", str(rows), flag, value
        )
        assert result.exit_code == 1, result.output
        assert f"error: {flag} picks rows the task makes, but --data {rows} gives the rows" in (
            result.output.replace("\n", "")
        )


# -- usage errors through the console script: one line, like every other bad input -------------


@pytest.mark.parametrize(
    ("argv", "line", "code"),
    [
        (["play", "--task", "wordle", "--max-turns", "0"],
         "error: Invalid value for '--max-turns': Input should be greater than or equal to 1 "
         "(see: agentrft play --help)", 2),
        (["play", "--task", "wordle", "--bogus"],
         "error: No such option: --bogus (see: agentrft play --help)", 2),
        (["eval", "--task", "wordle", "--policy", "expert", "--max-turns", "0"],
         "error: config: limits.max_turns: Input should be greater than or equal to 1 (got 0)", 1),
    ],
)  # fmt: skip
def test_usage_errors_are_one_line_from_the_console_script(
    argv: list[str], line: str, code: int
) -> None:
    import subprocess
    import sys

    pytest.importorskip("agentrft_wordle")
    cmd = [sys.executable, "-c", "from agentrft.cli import main; main()", *argv]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={
        **__import__("os").environ, "COLUMNS": "200"})  # fmt: skip
    assert out.returncode == code, out.stderr
    assert out.stderr.strip().splitlines() == [line], out.stderr
    assert "╭" not in out.stderr and "Traceback" not in out.stderr
