"""The GRPO policy loss: small pure functions over typed tensors (TRL 1.16 semantics).

`policy_loss` = per-token loss (`loss_fn` registry) x per-token weight (normalisation
registry), summed. The weights are computed against the WHOLE optimizer step (`StepScale`),
so the losses of a step's micro-batches add up to the step's loss however it is split.

Names follow the managed service: `clip_low_threshold` = 1 - eps_low (0.8),
`clip_high_threshold` = 1 + eps_high (1.2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentrft.backends.local.algo.registry import Registry

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class LossInputs:
    """One micro-batch, shapes (B, T) except `advantages`: (B,) for one advantage per
    sequence, or (B, T) for one per token (per-turn credit). All on one device."""

    logprobs: Tensor  # current policy, with grad
    old_logprobs: Tensor  # behaviour policy, detached (== logprobs.detach() on-policy)
    advantages: Tensor
    mask: Tensor  # 1 where the token is trained (sampled by the policy), else 0
    ref_logprobs: Tensor | None = None  # reference policy, for the KL term


@dataclass(frozen=True)
class StepScale:
    """Normalisers of the whole optimizer step."""

    tokens: int  # trained tokens in the step (dapo)
    sequences: int  # sequences in the step (grpo, dr_grpo)
    max_completion_length: int  # dr_grpo's constant length


@dataclass(frozen=True)
class LossSettings:
    loss_fn: str = "ppo"
    normalization: str = "dapo"
    clip_low_threshold: float = 0.8
    clip_high_threshold: float = 1.2
    kl_beta: float = 0.0


@dataclass
class LossOutput:
    loss: Tensor
    #: Step-level token means, additive over micro-batches (already divided by step tokens).
    metrics: dict[str, float] = field(default_factory=dict)


PerTokenLoss = Callable[["LossInputs", "LossSettings"], "Tensor"]
Normalization = Callable[["Tensor", "StepScale"], "Tensor"]
POLICY_LOSSES: Registry[PerTokenLoss] = Registry(
    "loss_fn", "agentrft_losses", "@register_policy_loss"
)
NORMALIZATIONS: Registry[Normalization] = Registry(
    "local.loss_normalization", "agentrft_loss_normalizations", "@register_normalization"
)


def register_policy_loss(name: str) -> Callable[[PerTokenLoss], PerTokenLoss]:
    """Decorator: a policy loss `loss_fn: NAME` selects."""
    return POLICY_LOSSES.register(name)


def register_normalization(name: str) -> Callable[[Normalization], Normalization]:
    """Decorator: a loss normalization `local.loss_normalization: NAME` selects."""
    return NORMALIZATIONS.register(name)


def token_advantages(x: LossInputs) -> Tensor:
    """The advantages as (B, T): a per-sequence (B,) tensor broadcast over its tokens."""
    adv = x.advantages
    return adv.unsqueeze(-1).expand_as(x.logprobs) if adv.dim() == 1 else adv


@register_policy_loss("ppo")
def ppo_loss(x: LossInputs, s: LossSettings) -> Tensor:
    """Clipped surrogate: `-min(r*A, clamp(r, clip_low, clip_high)*A)`."""
    import torch

    ratio = torch.exp(x.logprobs - x.old_logprobs)
    clipped = torch.clamp(ratio, s.clip_low_threshold, s.clip_high_threshold)
    adv = token_advantages(x)
    return -torch.min(ratio * adv, clipped * adv)


@register_policy_loss("importance_sampling")
def importance_sampling_loss(x: LossInputs, s: LossSettings) -> Tensor:
    """Unclipped importance-weighted policy gradient: `-r*A`."""
    import torch

    return -torch.exp(x.logprobs - x.old_logprobs) * token_advantages(x)


@register_policy_loss("cispo")
def cispo_loss(x: LossInputs, s: LossSettings) -> Tensor:
    """CISPO (MiniMax-M1): `-clamp(r, max=clip_high).detach() * A * logp`."""
    import torch

    ratio = torch.exp(x.logprobs - x.old_logprobs)
    weight = torch.clamp(ratio, max=s.clip_high_threshold).detach()
    return -weight * token_advantages(x) * x.logprobs


@register_normalization("dapo")
def dapo_weights(mask: Tensor, scale: StepScale) -> Tensor:
    """Token mean over the whole step (TRL's default; invariant to micro-batching)."""
    return mask / max(scale.tokens, 1)


@register_normalization("grpo")
def grpo_weights(mask: Tensor, scale: StepScale) -> Tensor:
    """Mean over sequences of each sequence's token mean."""
    lengths = mask.sum(-1, keepdim=True).clamp(min=1)
    return mask / lengths / max(scale.sequences, 1)


@register_normalization("dr_grpo")
def dr_grpo_weights(mask: Tensor, scale: StepScale) -> Tensor:
    """Sum / (sequences x max_completion_length): no length bias (Dr.GRPO)."""
    return mask / (max(scale.sequences, 1) * max(scale.max_completion_length, 1))


def k3_kl(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """Schulman's k3 estimator of KL(policy || reference), per token, always >= 0."""
    import torch

    delta = ref_logprobs - logprobs
    return torch.exp(delta) - delta - 1


def policy_loss(x: LossInputs, settings: LossSettings, scale: StepScale) -> LossOutput:
    """The micro-batch's share of the step loss, plus additive step-mean metrics."""
    import torch

    try:
        per_token = POLICY_LOSSES[settings.loss_fn](x, settings)
    except KeyError:
        raise ValueError(
            f"loss_fn {settings.loss_fn!r} is unknown; available: {', '.join(POLICY_LOSSES)}"
        ) from None
    try:
        weights = NORMALIZATIONS[settings.normalization](x.mask.to(per_token.dtype), scale)
    except KeyError:
        raise ValueError(
            f"loss normalization {settings.normalization!r} is unknown; "
            f"available: {', '.join(NORMALIZATIONS)}"
        ) from None
    metrics: dict[str, float] = {}
    if settings.kl_beta > 0:
        if x.ref_logprobs is None:
            raise ValueError("kl_beta > 0 needs ref_logprobs")
        kl = k3_kl(x.logprobs, x.ref_logprobs)
        per_token = per_token + settings.kl_beta * kl
        metrics["kl"] = _step_mean(kl, x.mask, scale)
    loss = (per_token * weights).sum()

    with torch.no_grad():
        ratio = torch.exp(x.logprobs - x.old_logprobs)
        adv = token_advantages(x)
        low = ((ratio < settings.clip_low_threshold) & (adv < 0)).to(ratio.dtype)
        high = ((ratio > settings.clip_high_threshold) & (adv > 0)).to(ratio.dtype)
        metrics["clip_low_frac"] = _step_mean(low, x.mask, scale)
        metrics["clip_high_frac"] = _step_mean(high, x.mask, scale)
        metrics["ratio_mean"] = _step_mean(ratio, x.mask, scale)
    return LossOutput(loss=loss, metrics=metrics)


def _step_mean(values: Tensor, mask: Tensor, scale: StepScale) -> float:
    return float((values.detach() * mask).sum()) / max(scale.tokens, 1)
