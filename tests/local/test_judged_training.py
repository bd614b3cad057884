"""A judged task trains locally on CPU end to end against a loopback fake judge server: the
group-relative judge scores each prompt's rollouts together during training and in the
before/after evaluations, the step metrics (metrics.jsonl and MLflow) carry the judge's
tokens and cost, and the eval reports show them."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import pytest
from rich.console import Console

from agentrft import (
    Environment,
    EpisodeLimits,
    GroupEpisode,
    GroupJudge,
    RewardResult,
    RubricJudge,
    Task,
    Tier,
    TieredReward,
)
from agentrft.backends.local.backend import LocalBackend
from agentrft.backends.local.settings import LocalTrainOptions
from agentrft.judges import JUDGE_METRICS
from agentrft.testing import FakeOpenAIServer, group_judge, rubric_judge

from .conftest import tiny_config

TIERS = TieredReward(
    [
        Tier(name="answered", base=1.0, shaping_weight=0.5, solved=True),
        Tier(name="silent", base=-1.0),
    ]
)
PROMPT_TOKENS, COMPLETION_TOKENS = 100, 10  # what the fake judge reports per request


class _TextEnv(Environment):
    reply = ""

    def on_text_reply(self, text: str) -> str | None:
        self.reply, self.done = text, True
        return None


class JudgedReply(Task[str]):
    """One text reply, judged: a group-relative judge in a group, a rubric judge alone."""

    name = "judged_reply"
    limits = EpisodeLimits(max_turns=1)

    def __init__(self, base_url: str) -> None:
        options: dict[str, Any] = {
            "model": "judge-model",
            "base_url": base_url,
            "max_retries": 0,
            "fallback": 0.5,
            "input_usd_per_1m": 1.0,
            "output_usd_per_1m": 4.0,
        }
        self.rubric = RubricJudge("Many letters 'a'.", self.view, **options)
        self.group = GroupJudge("Many letters 'a'.", self.view, **options)

    @staticmethod
    def view(env: _TextEnv, trajectory: Any) -> str:
        return env.reply or "(nothing)"

    def parse(self, prompt: str) -> str:
        return prompt

    def environment(self, instance: str) -> _TextEnv:
        return _TextEnv()

    def user_prompt(self, instance: str) -> str:
        return instance

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        return [{"prompt": f"Write text {k}"} for k in range(n or 4)]

    async def reward(self, env: _TextEnv, trajectory: Any) -> RewardResult:
        if not env.reply:
            return TIERS.score("silent")
        verdict = await self.rubric(env, trajectory)
        return TIERS.score("answered", verdict.shaping, components=verdict.components())

    async def score_group(self, group: Sequence[GroupEpisode]) -> list[RewardResult]:
        verdicts = await self.group([(m.env, m.trajectory) for m in group])
        return [
            TIERS.score("answered", v.shaping, components=v.components())
            if m.env.reply
            else TIERS.score("silent")
            for m, v in zip(group, verdicts, strict=True)
        ]


def test_judged_task_trains_on_cpu_with_a_fake_judge_server(tmp_path):
    kinds: list[str] = []
    group_script = group_judge(lambda v: v.count("a") / 3, PROMPT_TOKENS, COMPLETION_TOKENS)
    rubric_script = rubric_judge(lambda v: 0.5, PROMPT_TOKENS, COMPLETION_TOKENS)

    def judge(messages, tools):
        grouped = "attempts to compare" in (messages[-1].content or "")
        kinds.append("group" if grouped else "rubric")
        return (group_script if grouped else rubric_script)(messages, tools)

    out = io.StringIO()
    config = tiny_config(
        tmp_path,
        global_batch_size=2,
        group_size=4,
        max_steps=2,
        sampling_max_tokens=12,
        **{
            "local.tracking": "mlflow",
            "local.eval_before": True,
            "local.eval_after": True,
            "local.tiny_model": "156k",
            "local.sft_warmup_steps": 0,
            "eval.n": 2,
            "eval.samples_per_row": 2,
            "eval.temperatures": [1.0],
        },
    )
    with FakeOpenAIServer(judge) as server:
        task = JudgedReply(server.base_url)
        result = LocalBackend().train(
            task, config, LocalTrainOptions(console=Console(file=out, width=160))
        )
        served = len(server.chat_requests)
    run = result.run_dir
    assert json.loads((run / "run.json").read_text())["status"] == "finished"
    # Every group of every step and evaluation went to the group judge, once each (a
    # repeated group would be a cache hit); nothing was judged alone.
    assert served > 0 and set(kinds) == {"group"}, kinds

    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert len(steps) == 2
    for step in steps:
        metrics = step
        assert set(JUDGE_METRICS) <= set(metrics), sorted(metrics)
        assert metrics["judge/episodes"] == 8.0  # 2 prompts x 4 rollouts
        asked = metrics["judge/prompt_tokens"] / PROMPT_TOKENS  # requests this step
        assert asked + metrics["judge/cache_hits"] / 4 == 2.0  # one per prompt group
        assert metrics["judge/tokens"] == asked * (PROMPT_TOKENS + COMPLETION_TOKENS)
        assert metrics["judge/cost_usd"] == pytest.approx(asked * (100 * 1.0 + 10 * 4.0) / 1e6)
        assert metrics["judge/failures"] == 0.0

    reports = {
        label: json.loads((run / "eval" / f"{label}.json").read_text())[0]
        for label in ("before", "after")
    }
    for report in reports.values():
        judged = report["judge"]
        assert judged["episodes"] == 4 and judged["failed"] == 0
        assert judged["cost_usd"] == pytest.approx(
            judged["prompt_tokens"] * 1.0 / 1e6 + judged["completion_tokens"] * 4.0 / 1e6
        )
    # Every request the server answered is counted once: in a step or in a report.
    counted = sum(s["judge/prompt_tokens"] for s in steps) + sum(
        r["judge"]["prompt_tokens"] for r in reports.values()
    )
    assert counted == served * PROMPT_TOKENS

    from mlflow.tracking import MlflowClient

    info = json.loads((run / "run.json").read_text())
    client = MlflowClient(info["mlflow_tracking_uri"])
    logged = client.get_metric_history(info["mlflow_run_id"], "judge/cost_usd")
    assert [m.step for m in logged] == [1, 2]
    assert logged[0].value == pytest.approx(steps[0]["judge/cost_usd"])
