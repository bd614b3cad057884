"""Shared pieces of the real-vLLM tests: finding the vLLM interpreter, a tiny model, PEFT
adapters, and reference logprobs computed with transformers (+ PEFT) in this venv.

The real-server tests run only where a Python with vLLM exists: `$AGENTRFT_VLLM_PYTHON`, or
`.venv-vllm/bin/python` at the repository root (`scripts/vllm_cpu_env.sh` builds it), or
this interpreter on a GPU machine with the `vllm` extra.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def vllm_python(device: str = "cpu") -> str | None:
    """The interpreter that can run vLLM's server on `device` here, or None.

    cpu: `$AGENTRFT_VLLM_PYTHON`, else `.venv-vllm/bin/python` (the vllm-cpu build).
    cuda: `$AGENTRFT_VLLM_GPU_PYTHON`, else this interpreter when it imports vllm (the
    `vllm` extra); never the CPU build.
    """
    if device == "cuda":
        env = os.environ.get("AGENTRFT_VLLM_GPU_PYTHON")
        if env:
            return env if Path(env).exists() else None
        import importlib.util
        import sys

        return sys.executable if importlib.util.find_spec("vllm") is not None else None
    env = os.environ.get("AGENTRFT_VLLM_PYTHON")
    if env:
        return env if Path(env).exists() else None
    venv = REPO / ".venv-vllm" / "bin" / "python"
    return str(venv) if venv.exists() else None


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


class Reference:
    """Logprobs of given tokens under the tiny model (+ a PEFT adapter), from transformers."""

    def __init__(self, model_dir: Path, device: str = "cpu") -> None:
        self.model_dir = model_dir
        self.device = device
        self._models: dict[str | None, Any] = {}

    def model(self, adapter: str | None) -> Any:
        import torch
        from transformers import AutoModelForCausalLM

        if adapter not in self._models:
            base = AutoModelForCausalLM.from_pretrained(str(self.model_dir), dtype=torch.float32)
            if adapter is not None:
                from peft import PeftModel

                base = PeftModel.from_pretrained(base, adapter)
            self._models[adapter] = base.to(self.device).eval()
        return self._models[adapter]

    def logprobs(
        self,
        prompt: list[int],
        completion: list[int],
        *,
        adapter: str | None = None,
        temperature: float = 1.0,
    ) -> list[float]:
        """log p(completion[i] | prompt + completion[:i]) at `temperature`."""
        import torch

        ids = torch.tensor([prompt + completion], device=self.device)
        with torch.no_grad():
            logits = self.model(adapter)(input_ids=ids).logits[0].float()
        logits = logits[len(prompt) - 1 : len(prompt) + len(completion) - 1] / temperature
        logp = torch.log_softmax(logits, dim=-1)
        return logp.gather(-1, torch.tensor(completion, device=self.device)[:, None])[:, 0].tolist()


def max_abs_diff(a: list[float], b: list[float]) -> float:
    assert len(a) == len(b), (len(a), len(b))
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


def train_constant_reply_adapter(
    model_dir: Path, out: Path, task: Any, row: str, reply: Any
) -> Path:
    """A LoRA adapter that answers every turn of `task` on `row` with the tool call `reply`.

    A random-init model never writes a tool call by itself; a few SFT steps make it emit
    exactly `reply`, so episodes through vLLM exercise real tool calls. The training
    sequence is one whole scripted episode on `row` (every turn's real context, tool replies
    included; a tiny model memorises, it does not generalise to other rows); training stops once greedy decoding reproduces every reply (teacher-forced
    argmax on the trained ids, which equals greedy generation when all of them match).
    """
    import asyncio

    import torch

    from agentrft.backends.local.algo.sequences import sft_sequence
    from agentrft.backends.local.algo.trainer import LoRATrainer
    from agentrft.backends.local.inference.chat_tokens import ChatTokenizer
    from agentrft.policies.scripted import replay_policy
    from agentrft.rollout import run_episode

    trainer = LoRATrainer(
        str(model_dir), lora_rank=8, lora_alpha=16, learning_rate=2e-2, device="cpu", seed=0
    )
    chat = ChatTokenizer(trainer.tokenizer)
    traj = asyncio.run(run_episode(task, row, replay_policy([reply])))
    seq = sft_sequence(traj, chat)
    assert seq is not None and sum(seq.mask) > 0
    ids = torch.tensor([seq.token_ids])
    targets = [i for i, m in enumerate(seq.mask) if m]
    for step in range(300):
        trainer.sft_step([seq])
        if step % 10 == 9:
            with torch.no_grad():
                logits = trainer.model(input_ids=ids).logits[0]
            argmax = logits[[t - 1 for t in targets]].argmax(-1).tolist()
            if argmax == [seq.token_ids[t] for t in targets]:
                break
    else:
        raise AssertionError("the constant-reply adapter did not converge in 300 SFT steps")
    return trainer.save_adapter(out)


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    from agentrft.backends.local.models.tiny_model import ensure_tiny_model

    return ensure_tiny_model("156k")


@pytest.fixture(scope="session")
def vllm_helpers() -> Any:
    """The helpers above, for test modules (conftest is not importable under importlib mode)."""
    import types

    return types.SimpleNamespace(
        vllm_python=vllm_python,
        cuda_available=cuda_available,
        Reference=Reference,
        max_abs_diff=max_abs_diff,
        train_constant_reply_adapter=train_constant_reply_adapter,
    )
