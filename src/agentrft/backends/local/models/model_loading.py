"""Loading a model and its tokenizer: the one place both the trainer and the transformers
sampler read model files from (a directory, a hub id or a `.gguf` file; see gguf_model.py),
onto a device already resolved (`devices.py`).

torch and transformers are imported inside the functions (they are optional extras).
"""

from __future__ import annotations

from typing import Any


def resolve_dtype(dtype: str, device: str) -> Any:
    """The torch dtype for `local.dtype`: `auto` is bf16 on a GPU, fp32 on CPU."""
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return {
        "float64": torch.float64,
        "float32": torch.float32,
        "bfloat16": torch.bfloat16,
        "float16": torch.float16,
    }[dtype]


def load_model_and_tokenizer(path: str, *, device: str = "cpu", dtype: str = "auto"):
    """Load a causal LM and its tokenizer from a directory, a model id or a `.gguf` file
    (de-quantized by transformers; see gguf_model.py) onto `device`, a resolved one
    (`cpu`, `cuda`, `cuda:1`: see `devices.resolve_device` for `auto`)."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from agentrft.backends.local.models.gguf_model import from_pretrained_args

    hf_logging.disable_progress_bar()
    path = loadable_path(path)
    tokenizer = load_tokenizer(path)
    source, extra = from_pretrained_args(path)
    model = AutoModelForCausalLM.from_pretrained(
        source, dtype=resolve_dtype(dtype, device), **extra
    )
    # transformers types `.to` through a decorator that takes the model for the device.
    return model.to(device), tokenizer  # type: ignore[arg-type]


def loadable_path(path: str) -> str:
    """`path`, or for a `.gguf` file its converted transformers copy (built once, cached:
    see `gguf_model.ensure_converted`)."""
    from agentrft.backends.local.models.gguf_model import ensure_converted, is_gguf_file

    return str(ensure_converted(path)) if is_gguf_file(path) else path


def load_tokenizer(path: str):
    """The tokenizer (with its chat template) of a model directory, id or `.gguf` file."""
    from transformers import AutoTokenizer

    from agentrft.backends.local.models.gguf_model import from_pretrained_args

    source, extra = from_pretrained_args(loadable_path(path))
    return AutoTokenizer.from_pretrained(source, **extra)
