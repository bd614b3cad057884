"""What the policy update is built from (`TrainerSettings`, made once by the run's spec):
the LoRA, AdamW and loss settings of a run, with the device resolved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentrft.backends.local.algo.loss import LossSettings

if TYPE_CHECKING:
    from agentrft.backends.local.settings import LocalRunConfig

__all__ = ["TrainerSettings"]


@dataclass(frozen=True)
class TrainerSettings:
    """What the policy update is built from: the LoRA, AdamW and loss settings of a run,
    with the device resolved. A run's spec (`run/spec.py`) makes it once, from the config."""

    lora_rank: int
    lora_alpha: int
    target_modules: list[str] | str
    lora_dropout: float
    learning_rate: float
    adam_betas: tuple[float, float]
    weight_decay: float
    max_grad_norm: float
    micro_batch_size: int
    temperature: float
    loss: LossSettings
    device: str
    dtype: str
    seed: int

    @classmethod
    def of(cls, config: LocalRunConfig, *, device: str) -> TrainerSettings:
        """The trainer's part of a run's (resolved) config, on `device` (resolved once by
        the caller, so the sampler and the trainer agree)."""
        return cls(
            lora_rank=config.lora_rank,
            lora_alpha=config.lora_alpha,
            target_modules=config.local.lora_target_modules,
            lora_dropout=config.local.lora_dropout,
            learning_rate=config.learning_rate,
            adam_betas=(config.adam_beta1, config.adam_beta2),
            weight_decay=config.local.weight_decay,
            max_grad_norm=config.local.max_grad_norm,
            micro_batch_size=config.local.micro_batch_size,
            temperature=config.temperature,
            loss=LossSettings(
                loss_fn=config.loss_fn,
                normalization=config.local.loss_normalization,
                clip_low_threshold=config.clip_low_threshold,
                clip_high_threshold=config.clip_high_threshold,
                kl_beta=config.local.kl_beta,
            ),
            device=device,
            dtype=config.local.dtype,
            seed=config.seed,
        )
