"""The local engine's algorithm names, checked against its registries before a run.

`loss_fn`, `local.loss_normalization` and `advantage_method` are names, not a fixed list:
each selects a function in a `Registry` (`register_policy_loss`, `register_normalization` in
loss.py; `register_advantage` in advantages.py). Plugins add to them through the
`agentrft_losses`, `agentrft_loss_normalizations` and `agentrft_advantages` hooks, which the
local backend declares (`agentrft.backends.local.hookspecs`); `install_algorithms` installs
what they provide, explicitly, and `check_algorithms` refuses a name nobody registered, with
the registered ones listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentrft.backends.local.algo import advantages, loss
from agentrft.backends.local.algo.registry import Registry
from agentrft.backends.local.settings import LocalRunConfig
from agentrft.config import ConfigError

if TYPE_CHECKING:
    from agentrft.plugins import Plugins

#: The local engine's registries, in the order their keys are checked.
REGISTRIES: tuple[Registry[Any], ...] = (
    loss.POLICY_LOSSES,
    loss.NORMALIZATIONS,
    advantages.ADVANTAGES,
)


def install_algorithms(plugins: Plugins) -> None:
    """Install into every registry what `plugins` provide through its hook (a plugin that
    would replace a built-in is a `PluginError` naming it)."""
    for registry in REGISTRIES:
        registry.install(plugins)


def reset_algorithms() -> None:
    """Every registry back to what code registered."""
    for registry in REGISTRIES:
        registry.reset()


def check_algorithms(config: LocalRunConfig) -> None:
    """Refuse a `loss_fn`, `local.loss_normalization` or `advantage_method` that no
    registry holds (`ConfigError` naming the registered ones and how to add one)."""
    chosen = {
        "loss_fn": config.loss_fn,
        "local.loss_normalization": config.local.loss_normalization,
        "advantage_method": config.advantage_method,
    }
    for registry in REGISTRIES:
        name = chosen[registry.key]
        if name not in registry:
            raise ConfigError(
                f"{registry.key} {name!r} is not one the local backend knows; registered: "
                f"{', '.join(registry.names())} (add one with {registry.decorator} or a "
                f"plugin's {registry.hook} hook)"
            )
