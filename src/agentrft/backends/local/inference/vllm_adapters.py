"""LoRA adapter directories for a vLLM server, built with PEFT.

The zero adapter stands in for the base model on a LoRA-enabled server: sending every
request through a named adapter is what keeps base and adapter requests from being batched
together (vLLM then applies an adapter to the base requests). PEFT initialises `lora_B` to
zero, so an untouched LoRA computes exactly the base model.

torch / transformers / peft are imported inside the functions (they are optional extras).
"""

from __future__ import annotations

from pathlib import Path


def make_adapter(
    model_dir: str | Path,
    out_dir: str | Path,
    *,
    rank: int = 8,
    alpha: int | None = None,
    target_modules: list[str] | str = "all-linear",
    random_b_std: float = 0.0,
    seed: int = 0,
) -> Path:
    """Save a PEFT LoRA adapter for the model at `model_dir` into `out_dir`.

    `random_b_std=0` gives the all-zero adapter (output equal to the base model). A positive
    value fills `lora_B` with N(0, std) so the adapter visibly changes the model (tests).
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    out = Path(out_dir)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    config = LoraConfig(
        r=rank,
        lora_alpha=alpha if alpha is not None else rank,
        target_modules=target_modules,
        lora_dropout=0.0,
        task_type="CAUSAL_LM",
    )
    peft_model = get_peft_model(model, config)
    if random_b_std > 0:
        with torch.no_grad():
            for name, param in peft_model.named_parameters():
                if "lora_B" in name:
                    param.normal_(0.0, random_b_std)
    out.mkdir(parents=True, exist_ok=True)
    peft_model.save_pretrained(str(out))
    return out


def make_zero_adapter(
    model_dir: str | Path,
    out_dir: str | Path,
    *,
    rank: int = 8,
    target_modules: list[str] | str = "all-linear",
) -> Path:
    """The all-zero adapter that stands in for the base model (`VLLMSampler.load_base_adapter`)."""
    return make_adapter(model_dir, out_dir, rank=rank, target_modules=target_modules)
