"""How much arithmetic a training step does, and how fast this machine multiplies matrices.

The trainer reports its achieved FLOP/s next to a matmul peak measured on the same machine,
in the same dtype and thread count, so a step line says how far the engine is from what the
hardware can do (docs/local-backend.md, "Step time").

Counting (a decoder-only transformer with frozen weights and a LoRA, per token):
- forward: 2 x (the body's linear weights) + 4 x layers x heads x head_dim x context (QK^T
  and attention-weighted values), plus 2 x hidden x vocab where a token is trained (logits
  are projected only there);
- backward: the gradient with respect to the activations, about the forward's cost again
  (the frozen weights need no gradient; the LoRA's own are a rounding error), so a trained
  token costs 2 x its forward. Padding counts: it is work the step did.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class ModelShape:
    """What the FLOP count needs of a model."""

    body_weights: int  # linear weights of the decoder layers (no embeddings, no head)
    layers: int
    attention_width: int  # heads x head_dim
    hidden: int
    vocab: int

    @classmethod
    def of(cls, model: Any) -> ModelShape:
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        cfg = base.config
        hidden = int(cfg.hidden_size)
        heads = int(cfg.num_attention_heads)
        head_dim = int(getattr(cfg, "head_dim", None) or hidden // heads)
        body = 0
        for name, p in base.named_parameters():
            if (
                p.dim() == 2
                and "lora_" not in name
                and "embed" not in name
                and "lm_head" not in name
            ):
                body += p.numel()
        return cls(body, int(cfg.num_hidden_layers), heads * head_dim, hidden,
                   int(cfg.vocab_size))  # fmt: skip

    def forward(self, tokens: int, context: int, trained: int) -> float:
        """FLOPs of a forward over `tokens` positions whose attention spans `context`
        positions in all, `trained` of them projected to the vocabulary."""
        linear = 2.0 * self.body_weights * tokens
        attention = 4.0 * self.layers * self.attention_width * context
        return linear + attention + 2.0 * self.hidden * self.vocab * trained


def segment_context(start: int, length: int) -> int:
    """Sum of the attention spans of `length` positions after `start` cached ones."""
    return length * start + length * (length + 1) // 2


@lru_cache(maxsize=8)
def matmul_peak(dtype: str, threads: int, m: int = 2048, k: int = 576, n: int = 1536) -> float:
    """FLOP/s of one large matrix product in `dtype` on this machine with `threads` torch
    threads (the best of a few timed runs after a warm-up; ~0.5 s). The default shape is
    SmolLM2-135M's MLP at 2048 tokens."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        kind = getattr(torch, dtype)
        a, b = torch.randn(m, k, dtype=kind), torch.randn(k, n, dtype=kind)
        for _ in range(3):
            a @ b
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(4):
                a @ b
            best = min(best, (time.perf_counter() - t0) / 4)
        return 2.0 * m * k * n / best
    finally:
        torch.set_num_threads(previous)
