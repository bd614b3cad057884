"""The hooks the local backend declares for its plugins (added to the plugin manager by
`agentrft_addhooks` in plugin.py): named variants of its algorithm, which fill the
registries in `algo/` (see algo/algorithms.py). Import-light: no torch here."""

from __future__ import annotations

from typing import Any

from agentrft.hookspecs import hookspec


@hookspec
def agentrft_losses() -> dict[str, Any]:
    """Return policy losses, `{name: fn(inputs, settings) -> per-token loss}`, that
    `loss_fn: NAME` selects in the local engine (built in: `ppo`, `importance_sampling`,
    `cispo`; the contract is in `agentrft.backends.local.algo.loss`)."""
    return {}


@hookspec
def agentrft_loss_normalizations() -> dict[str, Any]:
    """Return loss normalizations, `{name: fn(mask, step_scale) -> per-token weights}`,
    that `local.loss_normalization: NAME` selects (built in: `dapo`, `grpo`, `dr_grpo`)."""
    return {}


@hookspec
def agentrft_advantages() -> dict[str, Any]:
    """Return advantage estimators, `{name: fn(rewards, group_size, scale) -> Advantages}`,
    that `advantage_method: NAME` selects in the local engine (built in: `group_based`, and
    `group_based_per_turn`, which credits each turn from `RewardResult.per_turn`)."""
    return {}
