"""The local engine's algorithm names, checked against its registries before a run.

`loss_fn`, `local.loss_normalization` and `advantage_method` are names, not a fixed list:
each selects a function in a registry (`register_policy_loss`, `register_normalization` in
loss.py; `register_advantage` in advantages.py, SkyRL's pattern). Plugins add to them
through the `agentrft_losses`, `agentrft_loss_normalizations` and `agentrft_advantages`
hooks, and a name nobody registered is refused with the registered ones listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentrft.backends.local.algo import advantages, loss
from agentrft.backends.local.settings import LocalRunConfig
from agentrft.config import ConfigError

if TYPE_CHECKING:
    from agentrft.plugins import Plugins

#: hook -> (registry, the config key that selects from it, how to add one in code)
REGISTRIES: dict[str, tuple[dict[str, Any], str, str]] = {
    "agentrft_losses": (loss.POLICY_LOSSES, "loss_fn", "@register_policy_loss"),
    "agentrft_loss_normalizations": (
        loss.NORMALIZATIONS,
        "local.loss_normalization",
        "@register_normalization",
    ),
    "agentrft_advantages": (advantages.ADVANTAGES, "advantage_method", "@register_advantage"),
}


def install_plugin_algorithms(plugins: Plugins | None = None) -> None:
    """Add what plugins register through the algorithm hooks to the registries.

    A plugin may not replace a built-in variant under its name (the built-in's results
    would silently change): that is an error naming the plugin.
    """
    from agentrft.plugins import PluginError, get_plugins

    plugins = plugins or get_plugins()
    for hook, (registry, key, _) in REGISTRIES.items():
        for name, provided in plugins.algorithms(hook).items():
            current = registry.get(name)
            if current is not None and current is not provided.obj:
                raise PluginError(
                    f"{provided.source} registers {key} {name!r}, which is already built in; "
                    "give it another name"
                )
            registry[name] = provided.obj


def check_algorithms(config: LocalRunConfig, plugins: Plugins | None = None) -> None:
    """Refuse a `loss_fn`, `local.loss_normalization` or `advantage_method` that no
    registry holds (`ConfigError` naming the registered ones and how to add one)."""
    install_plugin_algorithms(plugins)
    chosen = {
        "loss_fn": config.loss_fn,
        "local.loss_normalization": config.local.loss_normalization,
        "advantage_method": config.advantage_method,
    }
    for hook, (registry, key, decorator) in REGISTRIES.items():
        if chosen[key] not in registry:
            raise ConfigError(
                f"{key} {chosen[key]!r} is not one the local backend knows; registered: "
                f"{', '.join(sorted(registry))} (add one with {decorator} or a plugin's "
                f"{hook} hook)"
            )
