"""Time one GRPO step of agentrft's local engine against TRL's `GRPOTrainer`.

Same tiny model (built offline), same batch (8 prompts x 8 completions of up to 32 tokens,
reward = count of 'a'), same LoRA (r16, alpha 32, all linear layers), same optimizer
settings, CPU, one torch thread for both. A step = generation + rewards + loss + update
(+ weight sync for agentrft: save the adapter and load it into the sampler).

    .venv/bin/pip install -e '.[local,bench]'
    .venv/bin/python bench/grpo_step.py [--steps 5] [--size 1m] [--device cuda] [--no-trl]

Prints seconds per step for each (the first step of each is a warm-up and not counted)
and the ratio agentrft / TRL (goal: <= 0.8).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

PROMPTS = [f"Write text {k}" for k in range(8)]
GROUP = 8
MAX_TOKENS = 32
LR = 5e-3


def count_a_reward(text: str) -> float:
    return float(text.count("a"))


async def time_agentrft(
    model_dir: str, steps: int, run_dir: Path, device: str = "cpu"
) -> list[float]:
    from agentrft import Environment, EpisodeLimits, RewardResult, Task
    from agentrft.backends.local.algo.trainer import make_trainer
    from agentrft.backends.local.algo.trainer_settings import TrainerSettings
    from agentrft.backends.local.run.engine import SamplerSettings, make_engine
    from agentrft.backends.local.run.grpo import GRPOLoop
    from agentrft.backends.local.run.loop_settings import LoopSettings
    from agentrft.backends.local.run.run_dir import RunDir
    from agentrft.backends.local.run.spec import train_sampling
    from agentrft.config_model import load_config

    class TextEnv(Environment):
        def on_text_reply(self, text: str) -> None:
            self.done = True

    class CountA(Task[str]):
        name = "count_a"
        limits = EpisodeLimits(max_turns=1)

        def parse(self, prompt: str) -> str:
            return prompt

        def environment(self, instance: str) -> Environment:
            return TextEnv()

        def reward(self, env: Any, trajectory: Any) -> RewardResult:
            turns = trajectory.turns
            return RewardResult(
                total=count_a_reward(turns[-1].assistant.content or "") if turns else 0.0
            )

        def user_prompt(self, instance: str) -> str:
            return instance

    # load_config: the backends' sections (local.*) exist only on the plugin-built model.
    config = load_config(
        values={
            "global_batch_size": len(PROMPTS), "group_size": GROUP,
            "sampling_max_tokens": MAX_TOKENS, "learning_rate": LR, "lora_rank": 16,
            "lora_alpha": 32, "max_epochs": 1000, "local.model": model_dir,
            "local.device": device, "local.micro_batch_size": 16, "local.cpu_threads": 1,
            "local.tracking": "none", "local.run_dir": str(run_dir),
        }
    )  # fmt: skip
    engine = make_engine(SamplerSettings.of(config))
    trainer = make_trainer(
        TrainerSettings.of(config, device=engine.device),
        engine.model_path,
        max_completion_length=MAX_TOKENS,
    )
    task = CountA()
    loop = GRPOLoop(
        task, LoopSettings.of(config), engine, trainer, RunDir.create(config, "bench"),
        train_prompts=PROMPTS,
        limits=task.limits, sampling=train_sampling(config),
    )  # fmt: skip
    await loop.sync(0)
    times = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        await loop.train_step()
        times.append(time.perf_counter() - t0)
    await engine.aclose()
    return times[1:]


def time_trl(model_dir: str, steps: int, out_dir: Path) -> list[float]:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(1)

    def reward(completions: list[Any], **kwargs: Any) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [count_a_reward(t) for t in texts]

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self._t0 = 0.0

        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self._t0 = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            self.times.append(time.perf_counter() - self._t0)

    rows = [{"prompt": [{"role": "user", "content": p}]} for p in PROMPTS] * (steps + 2)
    args = GRPOConfig(
        output_dir=str(out_dir),
        per_device_train_batch_size=16,
        gradient_accumulation_steps=len(PROMPTS) * GROUP // 16,
        num_generations=GROUP,
        max_completion_length=MAX_TOKENS,
        learning_rate=LR,
        beta=0.0,
        loss_type="dapo",
        temperature=1.0,
        max_steps=steps + 1,
        logging_steps=10_000,
        disable_tqdm=True,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        shuffle_dataset=False,
        disable_dropout=True,
    )
    timer = StepTimer()
    trainer = GRPOTrainer(
        model=model_dir,
        reward_funcs=reward,
        args=args,
        train_dataset=Dataset.from_list(rows),
        peft_config=LoraConfig(
            r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"
        ),
        callbacks=[timer],
    )
    trainer.train()
    return timer.times[1:]


def main() -> None:
    import torch

    from agentrft.backends.local.models.tiny_model import ensure_tiny_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps (after one warm-up)")
    parser.add_argument("--size", default="1m", choices=["156k", "1m", "5m"])
    parser.add_argument(
        "--device", default="cpu", help="agentrft's device (cuda: bf16 base, fp32 LoRA)"
    )
    parser.add_argument(
        "--no-trl", action="store_true", help="time agentrft only (TRL stays on the CPU)"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    model_dir = str(ensure_tiny_model(args.size))
    with tempfile.TemporaryDirectory() as tmp:
        ours = asyncio.run(time_agentrft(model_dir, args.steps, Path(tmp) / "ours", args.device))
        trl = None if args.no_trl else time_trl(model_dir, args.steps, Path(tmp) / "trl")
    a = statistics.median(ours)
    print(f"model: tiny {args.size} ({model_dir}); agentrft on {args.device}")
    print(f"batch: {len(PROMPTS)} prompts x {GROUP} completions, <= {MAX_TOKENS} tokens, LoRA r16")
    print(
        f"agentrft: {a:.3f} s/step (median of {len(ours)}: {', '.join(f'{t:.2f}' for t in ours)})"
    )
    if trl is not None:
        b = statistics.median(trl)
        print(
            f"TRL:      {b:.3f} s/step (median of {len(trl)}: {', '.join(f'{t:.2f}' for t in trl)})"
        )
        print(f"ratio agentrft/TRL: {a / b:.2f} (goal <= 0.8)")


if __name__ == "__main__":
    main()
