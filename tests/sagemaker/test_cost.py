"""Cost: the estimate and the billed-token price, checked against the launch post's run."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrft.backends.sagemaker.jobs import service_facts as facts
from agentrft.backends.sagemaker.jobs.aws import SageMakerError
from agentrft.backends.sagemaker.jobs.cost import (
    PriceTable,
    estimate,
    job_cost,
    launch_run_profile,
    load_prices,
    profile_from_files,
    profile_from_trajectories,
)
from agentrft.messages import Message
from agentrft.trajectory import Trajectory, Turn, write_trajectories

LAUNCH = facts.LAUNCH_RUN


def trajectory(i: int, turns: list[tuple[int, int]]) -> Trajectory:
    return Trajectory(
        id=f"t{i}",
        task="wordle",
        prompt="{}",
        turns=[
            Turn(index=n, assistant=Message(role="assistant", content="x"),
                 prompt_tokens=p, completion_tokens=c)
            for n, (p, c) in enumerate(turns)
        ],
    )  # fmt: skip


def test_launch_run_billed_tokens_price_to_the_published_total() -> None:
    billed = {
        "prefill": LAUNCH["prefill_tokens"],
        "sampling": LAUNCH["sampling_tokens"],
        "training": LAUNCH["training_tokens"],
    }
    cost = job_cost(billed)
    assert cost == pytest.approx(LAUNCH["cost_usd"], rel=0.01)  # $338.2 vs "about $339"


def test_estimate_from_the_launch_profile_reproduces_the_launch_run() -> None:
    # 100 steps x 128 prompts x 8 rollouts = 102,400; validation every 10 steps on 309 rows
    # brings it to the post's 105,486 rollouts (within 4).
    est = estimate(
        max_steps=100,
        global_batch_size=128,
        group_size=8,
        profile=launch_run_profile(),
        val_every=10,
        validation_rows=309,
    )
    assert est.training_rollouts == 102_400 and est.rollouts == 105_490
    assert est.rollouts == pytest.approx(LAUNCH["rollouts"], abs=10)
    assert est.tokens["prefill"] == pytest.approx(LAUNCH["prefill_tokens"], rel=0.001)
    assert est.tokens["sampling"] == pytest.approx(LAUNCH["sampling_tokens"], rel=0.001)
    assert est.tokens["training"] == pytest.approx(LAUNCH["training_tokens"])
    assert est.cost == pytest.approx(LAUNCH["cost_usd"], rel=0.01)


def test_training_tokens_follow_prefill_plus_sampled_as_in_the_launch_numbers() -> None:
    per_trained = LAUNCH["training_tokens"] / 102_400
    per_rollout = (LAUNCH["prefill_tokens"] + LAUNCH["sampling_tokens"]) / LAUNCH["rollouts"]
    assert per_trained == pytest.approx(per_rollout, rel=0.02)


def test_profile_from_recorded_trajectories(tmp_path: Path) -> None:
    trajs = [trajectory(0, [(100, 20), (150, 30)]), trajectory(1, [(100, 10)])]
    profile = profile_from_trajectories(trajs)
    assert profile.prefill == 175 and profile.sampling == 30 and profile.training == 205
    path = tmp_path / "t.jsonl"
    write_trajectories(trajs, path)
    from_file = profile_from_files([path])
    assert from_file.as_tokens() == profile.as_tokens() and from_file.rollouts_measured == 2
    est = estimate(max_steps=2, global_batch_size=4, group_size=2, profile=profile,
                   prices=PriceTable(prefill=1.0, sampling=2.0, training=3.0))  # fmt: skip
    assert est.rollouts == 16
    assert est.cost == pytest.approx(16 * (175 * 1 + 30 * 2 + 205 * 3) / 1e6)


def test_trajectories_without_token_counts_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SageMakerError, match="no token counts"):
        profile_from_trajectories([trajectory(0, [(0, 0)])])
    with pytest.raises(SageMakerError, match="no trajectories"):
        profile_from_trajectories([])
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json}\n")
    with pytest.raises(SageMakerError, match="line 1"):
        profile_from_files([bad])


def test_price_files(tmp_path: Path) -> None:
    flat = tmp_path / "prices.yaml"
    flat.write_text("prefill: 0.2\nsampling: 0.8\ntraining: 0.5\ncurrency: USD\n")
    table = load_prices(flat)
    assert (table.prefill, table.sampling, table.training) == (0.2, 0.8, 0.5)
    assert "prices.yaml" in table.source
    per_model = tmp_path / "models.json"
    per_model.write_text(
        '{"default": {"prefill": 1}, "models": {"qwen3-32b": {"prefill": 3, "sampling": 4}}}'
    )
    assert load_prices(per_model, "qwen3-32b").prefill == 3
    assert load_prices(per_model, "other").prefill == 1
    typo = tmp_path / "typo.yaml"
    typo.write_text("prefil: 1\n")
    with pytest.raises(SageMakerError, match="unknown keys"):
        load_prices(typo)
    with pytest.raises(SageMakerError, match="does not exist"):
        load_prices(tmp_path / "none.yaml")
    assert "assumed" in load_prices(None).source
