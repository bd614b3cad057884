"""Loss, normalization and advantage names are checked against the local engine's
registries (not a fixed list), and plugins add to them through hooks the local backend
declares."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from agentrft import hookimpl
from agentrft.backends.local import plugin as local_plugin
from agentrft.backends.local.algo import advantages, loss
from agentrft.backends.local.algo.algorithms import (
    check_algorithms,
    install_algorithms,
    reset_algorithms,
)
from agentrft.cli.app import create_app
from agentrft.config import ConfigError
from agentrft.config_model import load_config
from agentrft.plugins import PluginError, load_plugins, use_plugins
from agentrft.testing import FindNumberTask


@pytest.fixture(autouse=True)
def registries() -> Iterator[None]:
    """Installed plugins stay in the module registries: reset them after each test."""
    yield
    reset_algorithms()


def with_local(*extra: Any) -> Any:
    """Plugins with the local backend's (which declares the algorithm hooks)."""
    return load_plugins(extra=[local_plugin, *extra], entry_points=False)


def reinforce(x: Any, s: Any) -> Any:
    """A plugin's loss: plain REINFORCE, `-A * logp`."""
    return -loss.token_advantages(x) * x.logprobs


class LossPlugin:
    @hookimpl
    def agentrft_losses(self) -> dict[str, Any]:
        return {"reinforce": reinforce}

    @hookimpl
    def agentrft_advantages(self) -> dict[str, Any]:
        return {
            "mean_only": lambda rewards, group_size, scale: advantages.group_based(
                rewards, group_size, False
            )
        }


class ShadowingPlugin:
    @hookimpl
    def agentrft_losses(self) -> dict[str, Any]:
        return {"ppo": reinforce}


class OtherReinforcePlugin:
    @hookimpl
    def agentrft_losses(self) -> dict[str, Any]:
        return {"reinforce": lambda x, s: reinforce(x, s)}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "loss_fn=adam",
            "loss_fn 'adam' is not one the local backend knows; registered: cispo, importance_sampling, ppo",
        ),
        ("local.loss_normalization=mean", "local.loss_normalization 'mean' is not one"),
        (
            "advantage_method=rloo",
            "advantage_method 'rloo' is not one the local backend knows; registered: group_based, group_based_per_turn",
        ),
    ],
)
def test_an_unregistered_name_is_refused_with_the_registered_ones(
    override: str, message: str
) -> None:
    config = load_config(overrides=[override])
    install_algorithms(with_local())
    with pytest.raises(ConfigError, match=message) as info:
        check_algorithms(config)
    assert "hook)" in str(info.value) and "@register_" in str(info.value)


def test_a_plugin_adds_a_loss_and_an_advantage_through_hooks() -> None:
    config = load_config(overrides=["loss_fn=reinforce", "advantage_method=mean_only"])
    with pytest.raises(ConfigError, match="loss_fn 'reinforce' is not one"):
        check_algorithms(config)  # checking installs nothing
    install_algorithms(with_local(LossPlugin()))
    check_algorithms(config)
    assert loss.POLICY_LOSSES["reinforce"] is reinforce
    assert "reinforce" in loss.POLICY_LOSSES.names()
    assert advantages.compute_advantages([1.0, 3.0], 2, method="mean_only").values == [-1.0, 1.0]
    reset_algorithms()
    assert "reinforce" not in loss.POLICY_LOSSES and "ppo" in loss.POLICY_LOSSES


def test_without_the_local_backend_its_hooks_are_unknown() -> None:
    """The algorithm hooks are the local backend's: with it not installed, a plugin that
    implements one is broken, named, like any plugin implementing a hook nobody declares."""
    plugins = load_plugins(extra=[LossPlugin()], entry_points=False)
    [broken] = plugins.broken
    assert broken.entry_point == "LossPlugin"
    assert "'agentrft_advantages', 'agentrft_losses', which is not an agentrft hook" in broken.error


def test_a_plugin_may_not_replace_a_built_in() -> None:
    with pytest.raises(PluginError, match="registers loss_fn 'ppo', which is already built in"):
        install_algorithms(with_local(ShadowingPlugin()))
    assert loss.POLICY_LOSSES["ppo"] is not reinforce


def test_two_plugins_with_one_name_are_named_both() -> None:
    plugins = with_local(LossPlugin(), OtherReinforcePlugin())
    with pytest.raises(
        PluginError,
        match="'reinforce' is provided twice, by plugin 'LossPlugin' and by plugin 'OtherReinforcePlugin'",
    ):
        install_algorithms(plugins)
    assert any("'reinforce' is provided twice" in c for c in plugins.conflicts())


class TaskPlugin:
    @hookimpl
    def agentrft_tasks(self) -> list[type]:
        return [FindNumberTask]


def test_train_refuses_the_name_before_anything_runs(tmp_path: Any) -> None:
    plugins = load_plugins(extra=[TaskPlugin(), local_plugin], entry_points=False)
    with use_plugins(plugins):
        result = CliRunner().invoke(
            create_app(plugins=False),
            [
                "train",
                "--task",
                "find_number",
                "--set",
                "loss_fn=adam",
                "--set",
                f"local.run_dir={tmp_path}",
            ],
        )
    assert result.exit_code == 1, result.output
    assert "loss_fn 'adam' is not one the local backend knows" in result.output
    assert list(tmp_path.iterdir()) == []  # no run directory was made
