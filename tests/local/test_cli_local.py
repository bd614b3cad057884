"""The CLI with the real local backend, as a new user meets it: where training rows come
from, what a run will really use, evaluation trajectories, playing a trained adapter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentrft import hookimpl
from agentrft.backends.local import plugin as local_plugin
from agentrft.cli.app import create_app
from agentrft.plugins import load_plugins, use_plugins
from agentrft.trajectory import read_trajectories

from .conftest import TORCH_THREADS, CountA, FruitGuess

TINY = ["--set", "local.tiny_model=156k", "--set", f"local.cpu_threads={TORCH_THREADS}"]


class BadRow(FruitGuess):
    """fruit_guess whose second made row holds a number where the prompt string goes."""

    name = "bad_row"

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        rows = super().make_dataset(split, n, seed)
        rows[1]["prompt"] = 7
        return rows


class LocalTasks:
    @hookimpl
    def agentrft_tasks(self) -> list[type]:
        return [CountA, FruitGuess, BadRow]


@pytest.fixture
def cli() -> Iterator[Any]:
    with use_plugins(load_plugins(extra=[LocalTasks(), local_plugin], entry_points=False)):
        app = create_app()

        def run(*args: str) -> Any:
            return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})

        yield run


def test_train_data_names_the_rows_and_the_dry_run_shows_them(cli: Any, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"prompt": "Write text 1"}\n')
    result = cli("train", "--task", "count_a", "--data", str(rows), "--dry-run", *TINY)
    assert result.exit_code == 0, result.output
    assert f"train_rows: {rows} (1 row)" in result.output
    assert "validation_rows: made by task count_a (split validation)" in result.output
    made = cli("train", "--task", "count_a", "--dry-run", *TINY)
    assert "train_rows: made by task count_a (split train)" in made.output
    missing = cli("train", "--task", "count_a", "--data", str(tmp_path / "none.jsonl"), *TINY,
                  "--set", f"local.run_dir={tmp_path / 'runs'}")  # fmt: skip
    assert missing.exit_code == 1 and "none.jsonl" in missing.output
    assert not (tmp_path / "runs").exists()


def test_train_refuses_data_of_which_no_row_parses_before_loading_anything(
    cli: Any, tmp_path: Path
) -> None:
    """Rows that are valid JSON but none a task instance: `train` and `train --dry-run` exit 1
    naming the file, the first parse error and the fix, and nothing is written; a file where
    only some rows fail trains with a warning naming them."""
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("".join(json.dumps({"prompt": f"row {i}"}) + "\n" for i in range(500)))
    runs = tmp_path / "runs"
    for extra in (["--dry-run"], []):
        result = cli("train", "--task", "fruit_guess", "--data", str(garbage), *TINY,
                     "--set", f"local.run_dir={runs}", *extra)  # fmt: skip
        assert result.exit_code == 1, result.output
        lines = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and "Traceback" not in result.output
        assert f"{garbage}: none of its 500 rows parses as a fruit_guess instance" in lines[0]
        assert "unknown fruit row 'row 0'" in lines[0] and "agentrft dataset make" in lines[0]
    assert not runs.exists()

    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        json.dumps({"prompt": "row x"}) + "\n" + json.dumps({"prompt": "apple"}) + "\n"
    )
    plan = cli("train", "--task", "fruit_guess", "--data", str(mixed), "--dry-run", *TINY)
    assert plan.exit_code == 0, plan.output


def test_the_core_and_the_local_backend_refuse_a_bad_row_alike(cli: Any, tmp_path: Path) -> None:
    """One row loader: `eval --policy` (the core's own loop) and `eval --backend local` refuse
    the same made row with the same message; `train` refuses its train split's copy of it
    before a run directory or a model exists."""
    bad = "task 'bad_row' split '{}': row 2: the 'prompt' value must be a string, got int (7)"
    core = cli("eval", "--task", "bad_row", "--policy", "expert")
    local = cli("eval", "--task", "bad_row", "--backend", "local", *TINY)
    train = cli("train", "--task", "bad_row", "--backend", "local", *TINY,
                "--set", f"local.run_dir={tmp_path / 'runs'}")  # fmt: skip
    assert [r.exit_code for r in (core, local, train)] == [1, 1, 1]
    assert bad.format("validation") in core.output
    assert local.output == core.output
    assert bad.format("train") in train.output
    assert not (tmp_path / "runs").exists()


def test_config_show_with_a_backend_shows_what_a_run_uses(cli: Any) -> None:
    plain = yaml.safe_load(cli("config", "show").stdout)
    assert (plain["global_batch_size"], plain["limits"]["max_turns"]) == (128, None)

    result = cli("config", "show", "--task", "fruit_guess", "--backend", "local", *TINY)
    assert result.exit_code == 0, result.output
    shown = yaml.safe_load(result.stdout)
    # The CPU preset (the built-in tiny model on a CPU machine), and the task's limits.
    assert (shown["global_batch_size"], shown["max_steps"], shown["sampling_max_tokens"]) == (
        4,
        20,
        40,
    )
    assert shown["limits"]["max_turns"] == 6 and shown["limits"]["max_tool_calls"] == 6
    assert shown["local"]["sft_warmup_steps"] == 40  # fruit_guess has an expert
    assert "the local backend changes, for its runs:" in result.stderr
    assert "global_batch_size: 128 -> 4" in result.stderr
    assert "limits.max_turns: 4 -> 6" in result.stderr  # the task's own turn limit, raised

    own = yaml.safe_load(cli("config", "show", "--task", "fruit_guess").stdout)
    assert own["limits"] == {"max_turns": 4, "max_tool_calls": 6, "timeout_s": 600.0}
    needs = cli("config", "show", "--backend", "local")
    assert needs.exit_code == 1 and "needs a task" in needs.output


def test_config_show_spec_prints_what_train_dry_run_prints(cli: Any) -> None:
    """`config show --spec` is the dry run's spec: each part's settings, resolved once."""
    args = ("--task", "fruit_guess", "--backend", "local", *TINY)
    result = cli("config", "show", "--spec", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    spec = json.loads(result.stdout)
    dry = cli("train", "--dry-run", *args)
    assert dry.exit_code == 0, dry.output
    for part in ("sampler", "trainer", "loop", "evals", "warmup", "tracking"):
        assert part in spec and f"{part}:" in dry.stdout
    # One device for both sides, the preset's values in every part that reads them.
    assert spec["sampler"]["device"] == spec["trainer"]["device"] == spec["device"] == "cpu"
    assert spec["warmup"]["steps"] == 40 and spec["warmup"]["batch_size"] == 4
    assert spec["evals"]["temperatures"] == [1.0] and spec["evals"]["seed"] == 42 + 7
    assert spec["tracking"] == {
        "enabled": True,
        "tracking_uri": None,
        "experiment": "agentrft",
        "trace_evals": True,
        "trace_per_step": 2,
    }

    assert yaml.safe_load(cli("config", "show", "--spec", *args).stdout) == spec  # YAML too
    alone = cli("config", "show", "--spec", "--task", "fruit_guess")
    assert alone.exit_code == 1 and "needs --backend" in alone.output


def test_a_cli_train_checks_its_config_and_resolves_its_device_once(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentrft.backends.local import backend as local_backend
    from agentrft.backends.local.run import spec as run_spec

    calls: dict[str, int] = {"check": 0, "device": 0}
    check, resolve = local_backend.LocalBackend.check_config, run_spec.resolve_device

    def counted_check(self: Any, config: Any) -> None:
        calls["check"] += 1
        check(self, config)

    def counted_device(device: str) -> str:
        calls["device"] += 1
        return resolve(device)

    monkeypatch.setattr(local_backend.LocalBackend, "check_config", counted_check)
    monkeypatch.setattr(run_spec, "resolve_device", counted_device)
    result = cli("train", "--task", "fruit_guess", "--dry-run", *TINY)
    assert result.exit_code == 0, result.output
    assert calls == {"check": 1, "device": 1}
    bad = cli("train", "--task", "fruit_guess", "--dry-run", "--set", "loss_fn=nope", *TINY)
    assert bad.exit_code != 0 and "loss_fn" in bad.output  # still checked, by the backend


def test_eval_through_the_local_backend_writes_trajectories(cli: Any, tmp_path: Path) -> None:
    trajs, report = tmp_path / "t.jsonl", tmp_path / "r.json"
    result = cli(
        "eval", "--task", "fruit_guess", "--backend", "local", "--n", "2", "--samples", "2",
        "--trajectories", str(trajs), "--report", str(report), *TINY,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    saved = list(read_trajectories(trajs))
    assert len(saved) == 4 and all(t.task == "fruit_guess" for t in saved)
    assert f"trajectories: {trajs} (4)" in result.output
    (only,) = json.loads(report.read_text())["reports"]
    assert only["episodes"] == 4
    replayed = cli("replay", str(trajs), "--summary")
    assert replayed.exit_code == 0, replayed.output


def test_play_with_a_trained_adapter(cli: Any, tmp_path: Path, tiny_156k: str) -> None:
    from agentrft.backends.local.inference.vllm_adapters import make_adapter

    adapter = make_adapter(tiny_156k, tmp_path / "adapter", rank=4, alpha=8, random_b_std=0.05)
    saved = tmp_path / "played.jsonl"
    result = cli("play", "--task", "fruit_guess", "--backend", "local", "--adapter", str(adapter),
                 "--max-tokens", "16", "--save", str(saved), *TINY)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "row 0 · adapter" in result.output  # the policy is the adapter
    (played,) = read_trajectories(saved)
    assert played.turns and played.turns[0].completion_token_ids  # the engine's own tokens
    assert played.reward is not None

    not_one = cli(
        "play", "--task", "fruit_guess", "--backend", "local", "--adapter", str(tmp_path), *TINY
    )
    assert not_one.exit_code == 1 and "not a PEFT adapter directory" in not_one.output
    stray = cli("play", "--task", "fruit_guess", "--adapter", str(adapter))
    assert stray.exit_code == 1
    assert "--adapter is an option of the local backend, which was not chosen" in stray.output


def test_the_cpu_preset_says_when_it_shortens_a_tasks_episodes(tmp_path: Path) -> None:
    """The tiny model's preset plays at most 6 turns; a task that asks for 8 hears it in the
    run's first lines, and a limit the user set is never touched."""
    from rich.console import Console

    from agentrft import EpisodeLimits
    from agentrft.backends.local.run.spec import resolve_run

    from .conftest import tiny_config

    class LongFruit(FruitGuess):
        name = "long_fruit"
        limits = EpisodeLimits(max_turns=8, max_tool_calls=10)

    out = Console(record=True, width=200)
    inputs = resolve_run(LongFruit(), tiny_config(tmp_path), resume=None, console=out)
    assert inputs.config.limits.max_turns == 6
    said = out.export_text()
    assert "CPU preset: limits.max_turns 8 → 6 (task long_fruit's own is 8; " in said
    assert "--set limits.max_turns=8 keeps it" in said

    out = Console(record=True, width=200)
    mine = tiny_config(tmp_path, **{"limits.max_turns": 7})
    assert resolve_run(LongFruit(), mine, resume=None, console=out).config.limits.max_turns == 7
    assert "CPU preset: limits" not in out.export_text()


def test_a_run_says_first_what_will_run_and_every_value_the_preset_filled(
    tmp_path: Path,
) -> None:
    from rich.console import Console

    from agentrft.backends.local.run.spec import resolve_run

    from .conftest import tiny_config

    out = Console(record=True, width=400)
    config = tiny_config(tmp_path, **{"group_size": 4})
    inputs = resolve_run(FruitGuess(), config, resume=None, console=out)
    first, second = out.export_text().splitlines()[:2]
    resolved = inputs.config
    assert first.startswith("training fruit_guess on the built-in tiny model (1m, random init): ")
    assert (
        f"{resolved.max_steps} GRPO steps of {resolved.global_batch_size} prompts x 4 rollouts"
        in first
    )
    assert f"run directory under {tmp_path / 'runs'}/, its page report.html" in first
    assert second.startswith("the tiny-model CPU preset filled ")
    # Every value it names is the resolved one, and what the user set is not among them.
    filled = dict(
        item.split("=", 1) for item in second.split(": ", 1)[1].split(" (set")[0].split(", ")
    )
    assert "group_size" not in filled and "sampling_max_tokens" not in filled
    assert filled["max_steps"] == str(resolved.max_steps)
    assert filled["learning_rate"] == str(resolved.learning_rate)


@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("./no/such/model", "local.model './no/such/model' does not exist on this machine"),
        ("pkg:agentrft_no_such_pkg", "no installed package 'agentrft_no_such_pkg'"),
    ],
)
def test_train_and_its_dry_run_refuse_a_model_path_that_is_not_there(
    cli: Any, tmp_path: Path, model: str, said: str
) -> None:
    runs = tmp_path / "runs"
    for extra in (["--dry-run"], []):
        result = cli("train", "--task", "fruit_guess", "--model", model, *TINY,
                     "--set", f"local.run_dir={runs}", *extra)  # fmt: skip
        assert result.exit_code == 1, result.output
        errors = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and said in errors[0] and "This is a bug" not in errors[0]
    assert not runs.exists()
