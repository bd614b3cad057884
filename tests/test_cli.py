"""The `agentrft` CLI through typer's CliRunner, on the tiny tasks of `tiny_plugins`:
clear errors with non-zero exits, files written only when everything worked."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
import typer
from typer.testing import CliRunner

from agentrft import Backend, hookimpl
from agentrft.backend import EvalResult, TrainResult
from agentrft.cli.app import app, create_app, get_group
from agentrft.datasets import read_prompts, read_rows
from agentrft.plugins import load_plugins, use_plugins
from agentrft.testing import FakeOpenAIServer, FindNumberTask, find_number_expert
from agentrft.trajectory import read_trajectories

runner = CliRunner()


def run(*args: str, cli: typer.Typer = app) -> Any:
    return runner.invoke(cli, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})


# --- startup -------------------------------------------------------------------------------

HELP_PROBE = textwrap.dedent(
    """
    import sys, time
    t0 = time.perf_counter()
    sys.argv = ["agentrft", "--help"]
    from agentrft.cli import main
    try:
        main()
    except SystemExit:
        pass
    elapsed = time.perf_counter() - t0
    heavy = ("torch", "litellm", "boto3", "botocore", "transformers", "peft", "vllm", "mlflow")
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(heavy))
    print("PROBE", elapsed, ",".join(loaded))
    """
)


def test_help_imports_nothing_heavy() -> None:
    """`agentrft --help` with every installed plugin: no torch, litellm, boto3, transformers."""
    out = subprocess.run(
        [sys.executable, "-c", HELP_PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    line = next(x for x in out.stdout.splitlines() if x.startswith("PROBE"))
    _, elapsed, loaded = line.split(" ", 2)
    print(f"agentrft --help: {float(elapsed):.3f}s in-process")  # a figure, not an assertion
    assert loaded.strip() == "", f"--help imported heavy modules: {loaded}"
    assert "tasks" in out.stdout and "eval" in out.stdout


# --- tasks ---------------------------------------------------------------------------------


def test_tasks_lists_tasks_and_rewards(tiny_plugins) -> None:
    result = run("tasks")
    assert result.exit_code == 0, result.output
    for name in ("find_number", "counter", "inverted_number", "fewest_guesses"):
        assert name in result.output
    assert "Guess a hidden integer" in result.output


def test_tasks_unknown_name_suggests(tiny_plugins) -> None:
    result = run("tasks", "find_numbr")
    assert result.exit_code == 1
    assert "task 'find_numbr' not found" in result.output
    assert "Did you mean 'find_number'?" in result.output
    assert "Traceback" not in result.output


def test_tasks_shows_a_broken_plugin_and_still_succeeds(tmp_path: Path, monkeypatch) -> None:
    info = tmp_path / "agentrft_cli_broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: agentrft_cli_broken\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text("[agentrft]\ncli_broken = agentrft_cli_broken_mod\n")
    (tmp_path / "agentrft_cli_broken_mod.py").write_text("raise RuntimeError('kaput')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with use_plugins(load_plugins()):
        result = run("tasks")
    sys.modules.pop("agentrft_cli_broken_mod", None)
    assert result.exit_code == 0, result.output
    assert "plugins that failed to load" in result.output
    assert "agentrft_cli_broken" in result.output and "RuntimeError: kaput" in result.output


# --- play / replay -------------------------------------------------------------------------


def test_play_expert_prints_turns_and_reward(tiny_plugins, tmp_path: Path) -> None:
    save = tmp_path / "played.jsonl"
    result = run("play", "--task", "find_number", "--row", "2", "--trajectories", str(save))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Find the hidden integer between" in out  # the user prompt
    assert "turn 1" in out and '→ guess({"number":' in out  # a tool call with its arguments
    assert "tool · guess" in out and "correct:" in out  # the tool's reply
    assert "outcome tier" in out and "solved" in out and "total" in out
    (traj,) = read_trajectories(save)
    assert traj.solved and traj.metadata["row"] == 2


def test_play_with_a_swapped_reward(tiny_plugins) -> None:
    result = run("play", "--task", "find_number", "--reward", "fewest_guesses")
    assert result.exit_code == 0, result.output
    assert "+2.0000" in result.output  # the plugin reward's solved base


def test_play_errors(tiny_plugins) -> None:
    result = run("play", "--task", "counter")  # counter has no expert
    assert result.exit_code == 1
    assert "task 'counter' has no expert policy" in result.output
    result = run("play", "--task", "find_number", "--row", "5000")
    assert result.exit_code == 1 and "--row 5000 is out of range" in result.output
    result = run("play", "--task", "find_number", "--policy", "gpt-5")
    assert result.exit_code == 1 and "unknown policy 'gpt-5'" in result.output
    result = run("play", "--task", "find_number", "--reward", "nope")
    assert result.exit_code == 1 and "reward 'nope' not found" in result.output


def test_debug_shows_the_exception(tiny_plugins) -> None:
    result = run("--debug", "play", "--task", "nope")
    assert result.exit_code != 0
    assert type(result.exception).__name__ == "PluginError"


def test_replay(tiny_plugins, tmp_path: Path) -> None:
    save = tmp_path / "t.jsonl"
    for row in ("0", "1"):
        assert (
            run("play", "--task", "find_number", "--row", row, "--save", str(save)).exit_code == 0
        )
    result = run("replay", str(save))
    assert result.exit_code == 0, result.output
    assert "episode 0 of 2" in result.output and "episode 1 of 2" in result.output
    assert result.output.count("outcome tier") == 2
    result = run("replay", str(save), "--index", "1")
    assert result.exit_code == 0 and result.output.count("outcome tier") == 1
    # Replay shows the same panels play showed live.
    played = run("play", "--task", "find_number", "--row", "1").output
    body = [ln for ln in played.splitlines() if "│" in ln and "·" not in ln]
    assert body and body == [ln for ln in result.output.splitlines() if ln in body]
    assert run("replay", str(save), "--index", "2").exit_code == 1
    result = run("replay", str(save), "--summary")
    assert result.exit_code == 0 and "100.0%" in result.output


def test_replay_bad_files(tmp_path: Path) -> None:
    result = run("replay", str(tmp_path / "missing.jsonl"))
    assert result.exit_code == 1 and "does not exist" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "task": "t", "prompt": "p"}\nnot json\n')
    result = run("replay", str(bad))
    assert result.exit_code == 1 and "line 2 is not a trajectory" in result.output


# --- dataset make --------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "csv", "json"])
def test_dataset_make_all_formats(tiny_plugins, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"train.{fmt}"
    result = run(
        "dataset", "make", "--task", "find_number", "--n", "12", "--seed", "3", "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    expected = FindNumberTask().make_dataset("train", 12, 3)
    assert read_rows(out) == expected
    assert run("dataset", "check", str(out), "--task", "find_number").exit_code == 0


def test_dataset_make_refuses_to_overwrite(tiny_plugins, tmp_path: Path) -> None:
    out = tmp_path / "rows.data"
    args = ["dataset", "make", "--task", "find_number", "--n", "4", "-o", str(out), "-f", "json"]
    assert run(*args).exit_code == 0
    first = out.read_bytes()
    result = run(*[a if a != "4" else "5" for a in args])
    assert result.exit_code == 1 and "already exists; pass --force" in result.output
    assert out.read_bytes() == first
    assert run(*[a if a != "4" else "5" for a in args], "--force").exit_code == 0
    assert len(read_prompts(out, "json")) == 5


def test_dataset_make_bad_inputs_write_nothing(tiny_plugins, tmp_path: Path) -> None:
    result = run("dataset", "make", "--task", "find_number", "-o", str(tmp_path / "x.txt"))
    assert result.exit_code == 1 and "cannot tell the format" in result.output
    result = run(
        "dataset",
        "make",
        "--task",
        "find_number",
        "--split",
        "dev",
        "-o",
        str(tmp_path / "x.jsonl"),
    )
    assert result.exit_code == 1 and "unknown split 'dev'" in result.output
    assert list(tmp_path.iterdir()) == []


def test_dataset_check_names_the_bad_row(tiny_plugins, tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"prompt": "{\\"secret\\": 3, \\"low\\": 1, \\"high\\": 9}"}\n{"prompt": "hello"}\n'
    )
    result = run("dataset", "check", str(path), "--task", "find_number")
    assert result.exit_code == 1 and "rows.jsonl: row 2:" in result.output


# --- reward check --------------------------------------------------------------------------


def test_reward_check_passes_a_good_reward(tiny_plugins) -> None:
    result = run("reward", "check", "--task", "find_number")
    assert result.exit_code == 0, result.output
    assert "ok: reward order holds" in result.output
    assert "no_guess" in result.output and "+1.2500" in result.output  # tier table


def test_reward_check_fails_an_inverted_reward(tiny_plugins) -> None:
    result = run("reward", "check", "--task", "inverted_number")
    assert result.exit_code == 1
    assert "FAILED" in result.output and "counterexample: tier 'unsolved'" in result.output


def test_reward_check_of_a_plugin_reward(tiny_plugins) -> None:
    result = run("reward", "check", "--task", "find_number", "--reward", "fewest_guesses")
    assert result.exit_code == 0 and "+2.5000" in result.output
    result = run("reward", "check", "--task", "find_number", "--reward", "untiered")
    assert result.exit_code == 1 and "declares no tiers" in result.output


# --- config show ---------------------------------------------------------------------------


def test_config_show_formats_and_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("group_size: 4\nlocal:\n  model: tiny\n")
    result = run("config", "show", "-c", str(cfg), "--set", "max_steps=3", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["group_size"], data["max_steps"], data["local"]["model"]) == (4, 3, "tiny")
    result = run("config", "show", "--format", "toml", "--set", "sagemaker.region=eu-west-1")
    assert result.exit_code == 0 and 'region = "eu-west-1"' in result.output
    assert "group_size: 8" in run("config", "show").output


def test_config_show_unknown_key(tmp_path: Path) -> None:
    result = run("config", "show", "--set", "local.modle=x")
    assert result.exit_code == 1
    assert "unknown key 'local.modle'; did you mean 'local.model'?" in result.output
    assert "Traceback" not in result.output
    result = run("config", "show", "-c", str(tmp_path / "none.yaml"))
    assert result.exit_code == 1 and "does not exist" in result.output


# --- eval ----------------------------------------------------------------------------------


def test_eval_policy_expert_writes_report_and_trajectories(tiny_plugins, tmp_path: Path) -> None:
    report, trajs = tmp_path / "out" / "report.json", tmp_path / "out" / "t.jsonl"
    result = run(
        "eval", "--task", "find_number", "--policy", "expert", "--n", "4", "--samples", "3",
        "--temperature", "0.7", "--temperature", "1.0",
        "--report", str(report), "--trajectories", str(trajs),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "pass@3" in result.output and "solve rate" in result.output
    data = json.loads(report.read_text())
    assert (data["task"], data["policy"], data["split"], data["n"]) == (
        "find_number", "expert", "validation", 4
    )  # fmt: skip
    assert [r["temperature"] for r in data["reports"]] == [0.7, 1.0]
    first = data["reports"][0]
    assert (first["rows"], first["samples_per_row"], first["episodes"]) == (4, 3, 12)
    assert set(first["pass_at_k"]) == {"1", "2", "3"}
    assert first["solve_rate"] == 1.0 and first["policy"] == "find_number_expert"
    assert len(list(read_trajectories(trajs))) == 24


def test_eval_policy_on_a_data_file(tiny_plugins, tmp_path: Path) -> None:
    data = tmp_path / "rows.csv"
    assert (
        run("dataset", "make", "--task", "find_number", "--n", "3", "-o", str(data)).exit_code == 0
    )
    report = tmp_path / "r.json"
    result = run(
        "eval",
        "--task",
        "find_number",
        "--policy",
        "expert",
        "--data",
        str(data),
        "--report",
        str(report),
    )
    assert result.exit_code == 0, result.output
    assert json.loads(report.read_text())["reports"][0]["rows"] == 3


def test_eval_warns_about_rows_that_do_not_parse(tiny_plugins, tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    good = FindNumberTask().make_dataset("validation", 1, 0)[0]["prompt"]
    data.write_text(json.dumps({"prompt": good}) + "\n" + json.dumps({"prompt": "junk"}) + "\n")
    result = run("eval", "--task", "find_number", "--policy", "expert", "--data", str(data))
    assert result.exit_code == 0, result.output
    assert "1 row(s) did not parse" in result.output and "(rows 2)" in result.output
    assert "bad_input: 1" in result.output


def test_eval_against_an_openai_compatible_url(tiny_plugins, tmp_path: Path) -> None:
    """The served model name comes from /v1/models; episodes go over loopback HTTP."""
    report = tmp_path / "r.json"
    with FakeOpenAIServer(find_number_expert, model_name="served-model") as server:
        result = run(
            "eval", "--task", "find_number", "--policy", server.base_url, "--n", "2",
            "--report", str(report),
        )  # fmt: skip
        models = {r.body.get("model") for r in server.requests if isinstance(r.body, dict)}
    assert result.exit_code == 0, result.output
    assert models == {"served-model"}
    (r,) = json.loads(report.read_text())["reports"]
    assert r["solve_rate"] == 1.0 and r["policy"] == "served-model"


def test_eval_needs_exactly_one_of_policy_and_backend(tiny_plugins) -> None:
    for args in ([], ["--policy", "expert", "--backend", "local"]):
        result = run("eval", "--task", "find_number", *args)
        assert result.exit_code == 1 and "exactly one of --policy" in result.output


def test_eval_unknown_task_suggests(tiny_plugins) -> None:
    result = run("eval", "--task", "find_nmber", "--policy", "expert")
    assert result.exit_code == 1 and "Did you mean 'find_number'?" in result.output


# --- train / eval through backends ---------------------------------------------------------


def test_train_with_a_missing_backend_names_the_extra(tiny_plugins) -> None:
    result = run("train", "--task", "find_number", "--backend", "local")
    assert result.exit_code == 2
    assert "backend 'local' not found" in result.output
    assert "pip install 'agentrft[local]'" in result.output


def test_train_with_missing_dependencies_names_the_extra(backend_plugins) -> None:
    result = run("train", "--task", "find_number", "--backend", "sagemaker")
    assert result.exit_code == 2
    assert "agentrft_test_module_that_is_not_installed" in result.output
    assert "pip install 'agentrft[sagemaker]'" in result.output
    assert backend_plugins == []


def test_train_maps_flags_into_the_config(backend_plugins, tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('task = "find_number"\nmax_steps = 100\n[local]\nmodel = "from-file"\n')
    result = run(
        "train", "-c", str(cfg), "--model", "from-flag", "--max-steps", "5",
        "--set", "group_size=4", "--reward", "fewest_guesses", "--note", "hello",
        "--resume", "runs/old", "--data", "rows.jsonl", "--dry-run", cli=create_app(),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "run: runs/recorded" in result.output  # the result's summary
    ((verb, task, config, options),) = backend_plugins
    assert verb == "train" and task.name == "find_number"
    # --model is the backend's model key; its own flag sets its own section's key
    assert (config.local.model, config.local.note) == ("from-flag", "hello")
    assert (config.max_steps, config.group_size, config.train_dataset) == (5, 4, "rows.jsonl")
    assert config.reward == "fewest_guesses"
    # typed options: the core fields and the backend's own (--resume fills `resume`)
    assert type(options).__name__ == "RecordingTrainOptions"
    assert options.reward_fn.__name__ == "fewest_guesses"
    assert options.dry_run is True and options.resume == "runs/old"


def test_train_bad_inputs(backend_plugins, tmp_path: Path) -> None:
    result = run("train", "--backend", "local")
    assert result.exit_code == 1 and "pass --task NAME" in result.output
    result = run("train", "--task", "find_number", "--set", "group_sise=4")
    assert result.exit_code == 1 and "did you mean 'group_size'?" in result.output
    result = run("train", "--task", "find_number", "--set", "local.nite=x")
    assert result.exit_code == 1 and "did you mean 'local.note'?" in result.output
    result = run("train", "--task", "find_number", "stray")
    assert result.exit_code == 1 and "unexpected argument 'stray'" in result.output
    assert backend_plugins == []


class QuietBackend(Backend):
    """A backend with no flags of its own."""

    name: ClassVar[str] = "quiet"

    def train(self, task: Any, config: Any, options: Any = None) -> TrainResult:
        raise AssertionError("not reached")

    def evaluate(self, task: Any, config: Any, options: Any = None) -> EvalResult:
        raise AssertionError("not reached")


class QuietPlugin:
    @hookimpl
    def agentrft_backends(self) -> list[type]:
        return [QuietBackend]


def test_a_flag_of_another_backend_is_refused_by_name(more_backends) -> None:
    """`--note` belongs to the recording `local` backend: with `--backend quiet` it is
    refused by name, not dropped."""
    with more_backends(QuietPlugin()):
        cli = create_app()
        result = run("train", "--task", "find_number", "--backend", "quiet", "--note", "x", cli=cli)
        assert result.exit_code == 1
        assert (
            "--note is an option of the local and sagemaker backends, not of 'quiet'; pass "
            "--backend local" in result.output
        )
        result = run(
            "train", "--task", "find_number", "--backend", "quiet", "--model", "m", cli=cli
        )
        assert (
            result.exit_code == 1 and "--model: the quiet backend takes no model" in result.output
        )


def test_eval_through_a_backend(backend_plugins, tmp_path: Path) -> None:
    result = run(
        "eval", "--task", "find_number", "--backend", "local", "--note", "n1",
        "--samples", "4", "--data", "val.jsonl", "--report", str(tmp_path / "r.json"), cli=create_app(),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    ((verb, _, config, options),) = backend_plugins
    assert verb == "evaluate" and type(options).__name__ == "EvalOptions"
    assert config.local.note == "n1" and config.eval.samples_per_row == 4
    assert config.validation_dataset == "val.jsonl"
    report = json.loads((tmp_path / "r.json").read_text())
    assert report == {"backend": "local", "task": "find_number", "reports": []}
    result = run(
        "eval", "--task", "find_number", "--backend", "local", "--resume", "x", cli=create_app()
    )
    assert result.exit_code == 2 and "No such option: --resume" in result.output  # train's only


# --- plugin commands -----------------------------------------------------------------------


class UploadPlugin:
    @hookimpl
    def agentrft_cli(self, app: typer.Typer) -> None:
        def upload(file: str) -> None:
            """Upload FILE."""
            typer.echo(f"uploading {file}")

        get_group(app, "dataset").command("upload")(upload)


class BrokenCliPlugin:
    @hookimpl
    def agentrft_cli(self, app: typer.Typer) -> None:
        raise RuntimeError("cannot add commands")


def test_plugins_extend_groups_and_a_failing_hook_is_reported(capsys) -> None:
    with use_plugins(load_plugins(extra=[UploadPlugin(), BrokenCliPlugin()], entry_points=False)):
        cli = create_app()
        assert "failed to add its commands: RuntimeError" in capsys.readouterr().err
        result = run("dataset", "upload", "rows.jsonl", cli=cli)
        assert result.exit_code == 0, result.output
        assert "uploading rows.jsonl" in result.output
        assert run("dataset", "--help", cli=cli).output.count("upload") >= 1
    with pytest.raises(KeyError, match="groups: dataset, reward, config"):
        get_group(app, "nope")


def test_no_help_page_shows_a_type_for_a_flag() -> None:
    """A flag takes no value: `--dry-run <bool>` would read as if it took one."""

    def pages(cmd: Any, path: list[str]) -> Any:
        yield path
        if hasattr(cmd, "commands"):  # a group (typer carries its own click)
            for name, sub in cmd.commands.items():
                yield from pages(sub, [*path, name])

    root = typer.main.get_command(app)
    seen = 0
    for path in pages(root, []):
        result = run(*path, "--help")
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, path
        seen += "--help" in result.output
    assert seen >= 10, seen
    assert "--dry-run " in run("train", "--help").output


def test_play_against_a_policy_that_never_answers_exits_1(tiny_plugins) -> None:
    """As eval: an episode in which the policy never answered is not a result."""
    from agentrft.testing import http_error

    with FakeOpenAIServer(lambda messages, tools: http_error(401)) as server:
        result = run("play", "--task", "find_number", "--policy", server.base_url)
    assert result.exit_code == 1, result.output
    assert "the policy never answered (http_error), so nothing was played" in result.output


def test_replay_filters_pick_episodes_by_outcome_failure_task_step_and_worst(
    tmp_path: Path,
) -> None:
    """A run file of solved games (the expert) and games that never guess (a policy that
    only talks): each filter shows exactly its episodes, titles keep the file's numbering,
    and a filter that matches nothing lists what the file holds."""
    import asyncio

    from agentrft import ScriptedPolicy, run_episodes
    from agentrft.trajectory import append_trajectories

    task = FindNumberTask()
    rows = [r["prompt"] for r in task.make_dataset("validation", 4, 0)]
    solved = asyncio.run(run_episodes(task, rows, ScriptedPolicy(find_number_expert)))
    talker = ScriptedPolicy(lambda messages, tools: "I think it is a number.")
    talked = asyncio.run(run_episodes(task, rows, talker))
    path = tmp_path / "trajectories.jsonl"
    for step, batch in ((1, solved), (2, talked)):
        for t in batch:
            t.metadata["step"] = step
        append_trajectories(batch, path)

    def episodes(*args: str) -> list[str]:
        result = run("replay", str(path), *args)
        assert result.exit_code == 0, result.output
        return [ln.split("episode ")[1].split(" of")[0] for ln in result.output.splitlines()
                if " episode " in ln and " of 8" in ln]  # fmt: skip

    assert episodes("--outcome", "solved") == ["0", "1", "2", "3"]
    assert episodes("--step", "2") == ["4", "5", "6", "7"]
    kinds = talked[0].failure_kinds
    assert kinds and episodes("--failure", kinds[0]) == ["4", "5", "6", "7"]
    assert len(episodes("--worst", "2")) == 2
    assert set(episodes("--worst", "2")) <= {"4", "5", "6", "7"}
    assert episodes("--task", "find_number", "--outcome", "unsolved") == ["4", "5", "6", "7"]
    summary = run("replay", str(path), "--outcome", "solved", "--summary")
    assert summary.exit_code == 0 and "4 of 8 episodes match --outcome solved" in summary.output
    none = run("replay", str(path), "--failure", kinds[0], "--step", "1")
    assert none.exit_code == 1, none.output
    assert f"no episode of {path} matches --failure {kinds[0]} --step 1" in none.output
    assert "steps: 1, 2" in none.output and kinds[0] in none.output
