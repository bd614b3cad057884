"""`LocalBackend` through its public face: plugin registration, train with MLflow and the
before/after table, evaluate with an adapter at several temperatures."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest
from rich.console import Console

from agentrft.backends.local.backend import LocalBackend
from agentrft.backends.local.settings import LocalEvalOptions, LocalTrainOptions
from agentrft.plugins import load_plugins

from .conftest import CountA, FruitGuess, tiny_config


def test_registered_as_the_local_backend_plugin():
    backend = load_plugins().backend("local")
    assert isinstance(backend, LocalBackend)
    assert (backend.name, backend.extra) == ("local", "local")
    backend.check_available()


def test_train_logs_to_mlflow_and_prints_before_after(tmp_path):
    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=True)  # the rich Live view
    config = tiny_config(
        tmp_path,
        global_batch_size=2,
        group_size=4,
        max_steps=2,
        val_every=2,
        sampling_max_tokens=12,
        **{
            "local.tracking": "mlflow",
            "local.eval_before": True,
            "local.eval_after": True,
            "local.run_name": "ml",
            "local.save_prompt_token_ids": False,
            "local.tiny_model": "156k",
            "eval.n": 3,
            "eval.temperatures": [1.0],
        },
    )
    result = LocalBackend().train(CountA(), config, LocalTrainOptions(console=console))
    text = out.getvalue()
    assert "before" in text and "after" in text and "solve rate" in text
    assert "validation after step 2" in text and "GRPO · count_a · step 2/2" in text
    assert "val_solve_rate" in result.history[1] and "val_solve_rate" not in result.history[0]
    run = result.run_dir
    assert (run / "config.yaml").is_file() and (
        run / "final_adapter" / "adapter_config.json"
    ).is_file()
    assert (run / "checkpoints" / "step_000002" / "state.json").is_file()
    assert json.loads((run / "eval" / "after.json").read_text())[0]["episodes"] == 3
    from agentrft.trajectory import read_trajectories

    stored = list(read_trajectories(run / "trajectories.jsonl"))
    assert len(stored) == 2 * 2 * 4
    assert all(t.turns[0].prompt_token_ids is None for t in stored)  # not kept by default
    assert all(t.turns[0].completion_token_ids and t.turns[0].logprobs for t in stored)
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "finished" and info["steps"] == 2

    from mlflow.tracking import MlflowClient

    client = MlflowClient(info["mlflow_tracking_uri"])
    history = client.get_metric_history(info["mlflow_run_id"], "reward_mean")
    assert [m.step for m in history] == [1, 2]
    assert len(client.get_metric_history(info["mlflow_run_id"], "val_reward_mean")) == 1
    assert history[0].value == pytest.approx(result.history[0]["reward_mean"])
    params = client.get_run(info["mlflow_run_id"]).data.params
    assert params["group_size"] == "4" and params["local.tiny_model"] == "156k"

    # Every evaluation episode and the first 2 of each step's are traces of the run.
    experiment = client.get_run(info["mlflow_run_id"]).info.experiment_id
    traces = client.search_traces(locations=[experiment])
    splits = Counter(t.info.tags["agentrft.split"] for t in traces)
    assert splits == {"before": 3, "after": 3, "train": 2 * 2}
    steps = Counter(
        t.info.tags.get("agentrft.step") for t in traces if t.info.tags["agentrft.split"] == "train"
    )
    assert steps == {"1": 2, "2": 2}
    after = {
        t.info.tags["agentrft.episode"]: t
        for t in traces
        if t.info.tags["agentrft.split"] == "after"
    }
    for episode in read_trajectories(run / "eval" / "after_trajectories.jsonl"):
        trace = after[episode.id]
        assert trace.info.tags["mlflow.sourceRun"] == info["mlflow_run_id"]
        (reward,) = [a for a in trace.info.assessments if a.name == "reward"]
        assert reward.value == pytest.approx(episode.reward.total)
        names = [s.name for s in trace.data.spans]
        assert names[0] == "episode count_a"
        assert (
            names.count("policy turn 1") == 1
            and len(names) == 1 + len(episode.turns) + episode.tool_calls
        )


def test_evaluate_with_an_adapter_at_two_temperatures(tmp_path, tiny_156k):
    from agentrft.backends.local.inference.vllm_adapters import make_adapter

    adapter = make_adapter(tiny_156k, tmp_path / "adapter", rank=4, random_b_std=0.1)
    config = tiny_config(
        tmp_path,
        sampling_max_tokens=8,
        pass_k_values=[1, 2],
        **{
            "local.tiny_model": "156k",
            "eval.temperatures": [0.0, 1.0],
            "eval.samples_per_row": 2,
            "eval.n": 2,
        },
    )
    config.local.adapter = str(adapter)
    result = LocalBackend().evaluate(
        FruitGuess(), config, LocalEvalOptions(output_dir=str(tmp_path / "ev"))
    )
    reports = result.reports
    assert len(result.trajectories) == sum(r.episodes for r in reports)  # kept for --trajectories
    assert [r.temperature for r in reports] == [0.0, 1.0]
    assert all(r.episodes == 4 and set(r.pass_at_k) == {1, 2} for r in reports)
    assert reports[0].turn_histogram and reports[0].failure_kinds  # a random model fails
    assert (tmp_path / "ev" / "eval.json").is_file()


def test_evaluate_rejects_a_directory_that_is_not_an_adapter(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a PEFT adapter directory"):
        LocalBackend().evaluate(
            FruitGuess(), tiny_config(tmp_path, **{"local.adapter": str(tmp_path)})
        )


def test_a_task_without_rows_fails_before_writing_anything(tmp_path):
    from agentrft import TaskInputError

    class NoRows(CountA):
        def make_dataset(self, split, n, seed):
            raise TaskInputError("task 'count_a' does not generate datasets")

    with pytest.raises(TaskInputError, match="--set train_dataset=FILE"):
        LocalBackend().train(NoRows(), tiny_config(tmp_path))
    assert not (tmp_path / "runs").exists()


def test_dry_run_resolves_device_and_sampler_without_writing(tmp_path):
    import torch

    plan = (
        LocalBackend()
        .train(FruitGuess(), tiny_config(tmp_path, max_steps=3), LocalTrainOptions(dry_run=True))
        .summary()
    )
    assert plan["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    assert plan["inference"] in ("transformers", "vllm")
    assert plan["max_steps"] == 3 and plan["task"] == "fruit_guess"
    assert not (tmp_path / "runs").exists()


def test_explicit_sft_warmup_needs_an_expert(tmp_path):
    config = tiny_config(tmp_path, max_steps=1, **{"local.sft_warmup_steps": 2})
    with pytest.raises(ValueError, match="has no scripted expert"):
        LocalBackend().train(CountA(), config)
    assert not (tmp_path / "runs").exists()


def test_train_continues_from_a_given_adapter(tmp_path, tiny_156k):
    import torch
    from safetensors.torch import load_file

    from agentrft.backends.local.inference.vllm_adapters import make_adapter

    start = make_adapter(tiny_156k, tmp_path / "start", rank=4, alpha=8, random_b_std=0.05)
    config = tiny_config(
        tmp_path,
        max_steps=1,
        group_size=2,
        global_batch_size=1,
        sampling_max_tokens=4,
        lora_rank=4,
        lora_alpha=8,
        **{"local.tiny_model": "156k", "local.adapter": str(start)},
    )
    result = LocalBackend().train(CountA(), config)
    first = load_file(str(result.run_dir / "adapters" / "v000001" / "adapter_model.safetensors"))
    given = load_file(str(start / "adapter_model.safetensors"))
    assert first.keys() == given.keys()
    # One step from the given adapter: close to it, not to a fresh (B = 0) LoRA.
    b = next(k for k in given if "lora_B" in k)
    assert torch.allclose(first[b], given[b], atol=0.05)
    assert given[b].abs().sum() > 0 and not torch.equal(first[b], torch.zeros_like(first[b]))
