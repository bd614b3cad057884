"""What hardware a local run has: a CUDA device, a CPU that multiplies bf16 natively, and
`local.device: auto` resolved to one of them.

A run resolves its device once, in its spec (`run/spec.py`), and hands the result to the
sampler and the trainer; the parts that load models (`models/model_loading.py`) take a
resolved device and never ask the hardware again. torch is imported inside the functions
(it is an optional extra).
"""

from __future__ import annotations

__all__ = ["cpu_has_fast_bf16", "cuda_available", "resolve_device"]


def cuda_available() -> bool:
    """Whether torch sees a CUDA device (False without torch)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_device(device: str = "auto") -> str:
    """`auto` -> `cuda` when torch sees a GPU, else `cpu`; anything else as given."""
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    return device


def cpu_has_fast_bf16() -> bool:
    """Whether this CPU multiplies bf16 matrices natively (AMX or AVX512-BF16): there bf16
    runs a real model's matmuls ~7x faster than fp32 (measured on 2 Sapphire Rapids cores:
    2.4 vs 0.35 TFLOP/s)."""
    try:
        import torch

        return bool(torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported())
    except (ImportError, AttributeError):
        return False
